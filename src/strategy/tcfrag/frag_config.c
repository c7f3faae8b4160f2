/* The tcfrag kernel's configurations (names, refusals, shared memory) and
 * its cut of K: host code, no device needed. */
#include "strategy/tcfrag/frag_kernel.h"

#include "core/error.h"

#include <stdio.h>
#include <string.h>

const char *frag_config_refusal(const frag_config *c, int group)
{
    if (c->group != 1 && c->group != 2 && c->group != 4)
        return "group must be 1, 2 or 4";
    if (c->nt != 2 && c->nt != 4 && c->nt != 8)
        return "nt must be 2, 4 or 8";
    if (c->group * c->nt > 16)
        return "group · nt must be at most 16 (the accumulators' registers)";
    if (c->warps != 4 && c->warps != 8)
        return "warps must be 4 or 8";
    if (c->stages != 2 && c->stages != 3)
        return "stages must be 2 or 3";
    if (c->group != group)
        return "the format was built for another group";
    return NULL;
}

size_t frag_config_smem(const frag_config *c, spf_layout b_layout)
{
    int nb = 8 * c->nt;
    size_t b = b_layout == SPF_LAYOUT_N_FIRST ? (size_t)nb * FRAG_PITCH_NK
                                              : (size_t)FRAG_CHUNK_STEPS * 16 * FRAG_PITCH_KN(nb);
    size_t stage = (size_t)c->warps * (size_t)frag_capacity(c->group) + 2 * b;
    return stage * (size_t)c->stages;
}

void frag_config_name(const frag_config *c, char *buf, size_t size)
{
    snprintf(buf, size, "g%d_nt%d_w%d_s%d", c->group, c->nt, c->warps, c->stages);
}

spf_status frag_config_from_name(const char *name, frag_config *out)
{
    CHECK_ARG(name != NULL && out != NULL);
    frag_config c = {0};
    int used = 0;
    if (sscanf(name, "g%d_nt%d_w%d_s%d%n", &c.group, &c.nt, &c.warps, &c.stages, &used) != 4 ||
        name[used] != '\0')
        return FAIL(SPF_ERR_PARSE, "tcfrag config \"%s\": expected g<G>_nt<N>_w<W>_s<S>", name);
    const char *why = frag_config_refusal(&c, c.group);
    if (why)
        return FAIL(SPF_ERR_PARSE, "tcfrag config \"%s\": %s", name, why);
    *out = c;
    return SPF_OK;
}

int32_t frag_parts(int64_t groups, int32_t chunks, int64_t n, const frag_config *c, int sms,
                   int blocks_per_sm)
{
    int64_t row_blocks = (groups + c->warps - 1) / c->warps;
    int64_t col_blocks = (n + 8 * c->nt - 1) / (8 * c->nt);
    int64_t blocks = row_blocks * col_blocks;
    if (blocks <= 0 || chunks <= 1)
        return 1;
    /* one wave at most: a second, partial one would double the time */
    int64_t want = (int64_t)(sms > 0 ? sms : 1) * (blocks_per_sm > 0 ? blocks_per_sm : 1);
    int64_t parts = want / blocks;
    return (int32_t)(parts < 1 ? 1 : parts > chunks ? chunks : parts);
}
