/* The structured kernel's configurations (names, refusals, shared memory):
 * host code, no device needed. */
#include "strategy/structured/sp_kernel.h"

#include "core/error.h"

#include <stdio.h>
#include <string.h>

int sp_nb_for(int64_t n)
{
    return n <= 8 ? 1 : n <= 16 ? 2 : n <= 32 ? 4 : 8;
}

const char *sp_config_refusal(const sp_config *c, const sp_pattern *p)
{
    if (c->nb != 1 && c->nb != 2 && c->nb != 4 && c->nb != 8)
        return "nb must be 1, 2, 4 or 8";
    if (c->rt != 1 && c->rt != 2)
        return "rt must be 1 or 2";
    if (c->warps < 1 || c->warps > (c->nb >= 4 ? 8 : 16))
        return "warps must be 1 to 16 (to 8 for nb 4 and 8: the register budget)";
    if (p && p->v && 16 * c->rt > p->v)
        return "a block's row tiles must share one block of V rows";
    return NULL;
}

size_t sp_config_smem(const sp_config *c)
{
    /* per warp: rt tiles × nb blocks × 4 sums a lane × 32 lanes, fp32 */
    return c->warps > 1 ? (size_t)c->warps * (size_t)(c->rt * c->nb) * 128 * 4 : 0;
}

void sp_config_name(const sp_config *c, char *buf, size_t size)
{
    snprintf(buf, size, "nb%d_rt%d_w%d", c->nb, c->rt, c->warps);
}

spf_status sp_config_from_name(const char *name, sp_config *out)
{
    CHECK_ARG(name != NULL && out != NULL);
    sp_config c = {0};
    int used = 0;
    if (sscanf(name, "nb%d_rt%d_w%d%n", &c.nb, &c.rt, &c.warps, &used) != 3 ||
        name[used] != '\0')
        return FAIL(SPF_ERR_PARSE, "structured config \"%s\": expected nb<B>_rt<R>_w<W>", name);
    const char *why = sp_config_refusal(&c, NULL);
    if (why)
        return FAIL(SPF_ERR_PARSE, "structured config \"%s\": %s", name, why);
    *out = c;
    return SPF_OK;
}
