/* The strategy table (strategy.h) and the public name list it serves. */
#include "strategy/strategy.h"

#include "core/error.h"

#include <stdio.h>
#include <string.h>

extern const strategy strategy_unrolled, strategy_generic, strategy_cpu;
extern const strategy strategy_dense, strategy_tc, strategy_tcfrag, strategy_panel;
extern const strategy strategy_structured;

/* The planner lists candidates in this order; AUTO considers the rows that
 * run on a device. */
const strategy *const strategy_table[] = {
    &strategy_unrolled,
    &strategy_generic,
    &strategy_tc,
    &strategy_tcfrag,
    &strategy_panel,
    &strategy_structured,
    &strategy_dense,
    &strategy_cpu,
};
const int strategy_count = (int)(sizeof strategy_table / sizeof strategy_table[0]);

spf_status strategy_build_without_cuda(const problem *p, const strategy_env *env, void **state,
                                       spf_plan_info *info)
{
    (void)p, (void)env, (void)info;
    *state = NULL;
    return FAIL(SPF_ERR_NO_DEVICE, "built without CUDA");
}

spf_status strategy_launch_without_cuda(const void *state, const void *b, void *c,
                                        const float *bias, void *stream)
{
    (void)state, (void)b, (void)c, (void)bias, (void)stream;
    return FAIL(SPF_ERR_NO_DEVICE, "built without CUDA");
}

void strategy_release_nothing(void *state) { (void)state; }

const strategy *strategy_find(spf_strategy id)
{
    for (int i = 0; i < strategy_count; i++)
        if (strategy_table[i]->id == id)
            return strategy_table[i];
    return NULL;
}

const char *spf_strategy_name(spf_strategy id)
{
    if (id == SPF_STRATEGY_AUTO)
        return "auto";
    const strategy *s = strategy_find(id);
    return s ? s->name : "?";
}

spf_status spf_strategy_from_name(const char *name, spf_strategy *out)
{
    error_clear();
    CHECK_ARG(out != NULL);
    if (name && strcmp(name, "auto") == 0) {
        *out = SPF_STRATEGY_AUTO;
        return SPF_OK;
    }
    for (int i = 0; name && i < strategy_count; i++)
        if (strcmp(name, strategy_table[i]->name) == 0) {
            *out = strategy_table[i]->id;
            return SPF_OK;
        }
    char list[160] = "auto";
    for (int i = 0; i < strategy_count; i++) {
        size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, ", %s", strategy_table[i]->name);
    }
    return FAIL(SPF_ERR_INVALID_ARGUMENT, "unknown strategy \"%s\": expected one of %s",
                name ? name : "(null)", list);
}
