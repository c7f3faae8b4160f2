/* The strategy table (strategy.h) and the public name list it serves. */
#include "strategy/strategy.h"

#include "core/error.h"

#include <stdio.h>
#include <string.h>

extern const strategy strategy_unrolled, strategy_generic, strategy_cpu;
extern const strategy strategy_dense, strategy_tc, strategy_tcfrag, strategy_panel;
extern const strategy strategy_structured, strategy_cusparselt;

/* The planner lists candidates in this order; AUTO considers the rows that
 * run on a device. */
const strategy *const strategy_table[] = {
    &strategy_unrolled,
    &strategy_generic,
    &strategy_tc,
    &strategy_tcfrag,
    &strategy_panel,
    &strategy_structured,
    &strategy_cusparselt,
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

/* A device plans can run on: one, available, of compute capability 8.0 or
 * later ("<needs> needs ..."); else 0 with the reason. */
static int device_ready(const spf_device_info *dev, const char *needs, char *reason, size_t cap)
{
    if (!dev || !dev->available) {
        snprintf(reason, cap, "no device: %s", dev ? dev->reason : "none");
        return 0;
    }
    if (dev->cc_major < 8) {
        snprintf(reason, cap, "%s needs compute capability 8.0 or later; the device is %d.%d",
                 needs, dev->cc_major, dev->cc_minor);
        return 0;
    }
    return 1;
}

int strategy_available(const strategy *s, const spf_device_info *dev, char *reason, size_t cap)
{
    if (s->on_device && !device_ready(dev, s->name, reason, cap))
        return 0;
    return s->available ? s->available(reason, cap) : 1;
}

int strategy_supports_16bit(const problem *p, const spf_device_info *dev, const char *needs,
                            const char *why_16, char *reason, size_t cap)
{
#ifndef SPF_HAVE_CUDA
    (void)p, (void)dev, (void)needs, (void)why_16, (void)device_ready;
    snprintf(reason, cap, "built without CUDA");
    return 0;
#else
    if (!device_ready(dev, needs, reason, cap))
        return 0;
    if (p->dtype != SPF_DTYPE_F16 && p->dtype != SPF_DTYPE_BF16) {
        snprintf(reason, cap, "f16 and bf16 only (%s)", why_16);
        return 0;
    }
    if (p->math != SPF_MATH_DEFAULT) {
        snprintf(reason, cap, "accumulates in fp32 (math %s asked)", spf_math_name(p->math));
        return 0;
    }
    return 1;
#endif
}

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
