/* The tensor-core kernels' configurations (names, what each refuses) and
 * the load-balancing cost model that cuts windows into units: host code,
 * no device needed. */
#include "strategy/tc/tc_kernel.h"

#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fewest tiles of a split unit: below this the pipeline's prologue and the
 * workspace round trip cost more than the balance gains. */
enum { MIN_UNIT_TILES = 8 };

const char *tc_config_refusal(const tc_config *c, spf_dtype dtype, spf_layout b_layout,
                              tc_format_mode mode)
{
    if (c->nt != 1 && c->nt != 2 && c->nt != 4 && c->nt != 8)
        return "nt must be 1, 2, 4 or 8";
    if (c->stages < 2 || c->stages > TC_MAX_STAGES)
        return "stages must be 2, 3 or 4";
    if (c->warps != 2 && c->warps != 4 && c->warps != 8)
        return "warps must be 2, 4 or 8";
    if (c->split != 0 && c->split != 1)
        return "split must be 0 or 1";
    if (c->group != 0 && c->group != 1)
        return "group must be 0 or 1";
    if (dtype != SPF_DTYPE_F16 && dtype != SPF_DTYPE_BF16 && dtype != SPF_DTYPE_F32)
        return "no kernel for the dtype";
    if (b_layout == SPF_LAYOUT_N_FIRST && mode == TC_FORMAT_CONDENSED)
        return "a condensed format gathers rows of B: B must be K×N (n_last)";
    if (c->group && mode == TC_FORMAT_CONDENSED)
        return "the group kernel shares B's rows between windows: blocked formats only";
    return NULL;
}

size_t tc_config_smem(const tc_config *c, spf_dtype dtype, spf_layout b_layout)
{
    int es = (int)dtype_size(dtype), bnk = b_layout == SPF_LAYOUT_N_FIRST;
    if (c->group)
        return (size_t)TC_GROUP_STAGE_BYTES(es, 8 * c->nt, bnk, c->warps) * (size_t)c->stages;
    return (size_t)TC_STAGE_BYTES(es, 8 * c->nt, bnk) * (size_t)c->stages * (size_t)c->warps;
}

void tc_config_name(const tc_config *c, char *buf, size_t size)
{
    snprintf(buf, size, "nt%d_s%d_w%d%s%s", c->nt, c->stages, c->warps, c->split ? "_split" : "",
             c->group ? "_group" : "");
}

spf_status tc_config_from_name(const char *name, tc_config *out)
{
    CHECK_ARG(name != NULL && out != NULL);
    tc_config c = {0};
    int used = 0;
    if (sscanf(name, "nt%d_s%d_w%d%n", &c.nt, &c.stages, &c.warps, &used) != 3)
        return FAIL(SPF_ERR_PARSE, "tc config \"%s\": expected nt<N>_s<S>_w<W>[_split][_group]",
                    name);
    const char *rest = name + used;
    if (strncmp(rest, "_split", 6) == 0)
        c.split = 1, rest += 6;
    if (strcmp(rest, "_group") == 0)
        c.group = 1, rest += 6;
    if (*rest != '\0')
        return FAIL(SPF_ERR_PARSE, "tc config \"%s\": unexpected \"%s\"", name, rest);
    const char *why = tc_config_refusal(&c, SPF_DTYPE_F16, SPF_LAYOUT_N_LAST, TC_FORMAT_BLOCKED);
    if (why)
        return FAIL(SPF_ERR_PARSE, "tc config \"%s\": %s", name, why);
    *out = c;
    return SPF_OK;
}

/* A unit's time is its tiles; the slots are the warps the device holds at
 * once; a window longer than the fair share of a slot is cut into parts
 * of equal tiles. */
int64_t tc_unit_chunk(int64_t tiles, int sms, int resident_warps)
{
    int64_t slots = (int64_t)(sms > 0 ? sms : 1) * (resident_warps > 0 ? resident_warps : 1);
    int64_t chunk = (tiles + slots - 1) / slots;
    return chunk < MIN_UNIT_TILES ? MIN_UNIT_TILES : chunk;
}

int32_t tc_group_parts(int64_t windows, int64_t cols, int64_t col_blocks, int warps, int sms,
                       int resident_warps)
{
    int64_t groups = (windows + warps - 1) / warps, kblocks = (cols + 15) / 16;
    int64_t resident = resident_warps / warps > 0 ? resident_warps / warps : 1;
    int64_t want = (int64_t)(sms > 0 ? sms : 1) * resident, most = kblocks / MIN_UNIT_TILES;
    int64_t parts = groups * col_blocks > 0 ? (want + groups * col_blocks - 1) / (groups * col_blocks)
                                            : 1;
    if (parts > most)
        parts = most;
    return parts > 1 ? (int32_t)parts : 1;
}

static int heavier_first(const void *x, const void *y)
{
    const tc_unit *a = x, *b = y;
    int32_t la = a->tile_end - a->tile_begin, lb = b->tile_end - b->tile_begin;
    if (la != lb)
        return la > lb ? -1 : 1;
    return a->window != b->window ? (a->window < b->window ? -1 : 1)
                                  : (a->tile_begin < b->tile_begin ? -1 : 1);
}

spf_status tc_units_build(const tc_format *f, int split, int sms, int resident_warps,
                          tc_unit **units, int32_t *count, int32_t *max_parts)
{
    CHECK_ARG(f != NULL && units != NULL && count != NULL && max_parts != NULL);
    *units = NULL;
    *count = 0;
    *max_parts = 1;
    if (f->tiles > INT32_MAX || f->windows > INT32_MAX)
        return FAIL(SPF_ERR_UNSUPPORTED, "tc: %lld tiles in %lld windows: the units' int32 "
                    "offsets need fewer than 2^31", (long long)f->tiles, (long long)f->windows);
    int64_t chunk = split ? tc_unit_chunk(f->tiles, sms, resident_warps) : INT64_MAX;
    int64_t n = 0;
    for (int64_t w = 0; w < f->windows; w++) {
        int64_t tiles = f->window_tile[w + 1] - f->window_tile[w];
        n += tiles > chunk ? (tiles + chunk - 1) / chunk : 1;
    }
    if (n > INT32_MAX)
        return FAIL(SPF_ERR_UNSUPPORTED, "tc: %lld units: more than 2^31", (long long)n);
    tc_unit *u = mem_alloc_array((size_t)(n ? n : 1), sizeof *u);
    if (!u)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "tc: %lld units", (long long)n);
    int64_t at = 0;
    for (int64_t w = 0; w < f->windows; w++) {
        int64_t first = f->window_tile[w], tiles = f->window_tile[w + 1] - first;
        int64_t parts = tiles > chunk ? (tiles + chunk - 1) / chunk : 1;
        if (parts > *max_parts)
            *max_parts = (int32_t)parts;
        for (int64_t i = 0; i < parts; i++)
            u[at++] = (tc_unit){.window = (int32_t)w,
                                .parts = (int32_t)parts,
                                .tile_begin = (int32_t)(first + tiles * i / parts),
                                .tile_end = (int32_t)(first + tiles * (i + 1) / parts)};
    }
    if (split)
        qsort(u, (size_t)n, sizeof *u, heavier_first);
    *units = u;
    *count = (int32_t)n;
    return SPF_OK;
}
