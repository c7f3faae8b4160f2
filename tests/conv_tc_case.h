/* What the tensor-core conv kernel's two tests share (unit/test_conv_tc.c
 * replays its arithmetic on the CPU, gpu/test_conv_tc.c runs it): shapes
 * whose channels it takes (C a multiple of 8) with position counts of 1,
 * 3, 49 and 127 and output channels past a block's 64, those whose B the
 * copy engine takes (C a multiple of 64: padding 0 to 2, stride 2, H ≠ W,
 * batch 3), the configs to run for a shape, and a case's format. */
#ifndef SPF_TESTS_CONV_TC_CASE_H
#define SPF_TESTS_CONV_TC_CASE_H

#include "conv_case.h"

#include "conv/conv_tc.h"

static const conv_dims conv_tc_dims[] = {
    {"3x3 on one position, K = 20", 1, 16, 1, 1, 20, 3, 3, 1, 1},
    {"3x3 on 3 positions", 1, 24, 1, 3, 9, 3, 3, 1, 1},
    {"3x3 on 7x7 (49 positions), K = 70", 1, 32, 7, 7, 70, 3, 3, 1, 1},
    {"3x3 on a 1x127 strip, C = 8", 1, 8, 1, 127, 33, 3, 3, 1, 1},
    {"3x3 stride 2, padding 0, batch 3", 3, 40, 11, 9, 67, 3, 3, 2, 0},
    {"5x5 padding 2, C = 64 (1600 columns)", 2, 64, 6, 5, 130, 5, 5, 1, 2},
    {"7x7 stride 2 padding 3, C = 16", 2, 16, 13, 11, 24, 7, 7, 2, 3},
    {"1x1 on 40 positions, K = 70", 1, 24, 5, 8, 70, 1, 1, 1, 0},
    {"3x3, C = 16 (conv_case.h's)", 2, 16, 6, 5, 11, 3, 3, 1, 1},
    {"3x3 on one position, C = 64", 1, 64, 1, 1, 17, 3, 3, 1, 1},
    {"3x3 on 7x7, C = 64, K = 70", 1, 64, 7, 7, 70, 3, 3, 1, 1},
    {"3x3 stride 2 on 10x13, C = 128, batch 2", 2, 128, 10, 13, 20, 3, 3, 2, 1},
    {"3x3 padding 0 on 6x5, C = 64, batch 3", 3, 64, 6, 5, 64, 3, 3, 1, 0},
};
#define CONV_TC_DIMS ((int)(sizeof conv_tc_dims / sizeof conv_tc_dims[0]))

/* The configs a test runs for d: each block width with one slice, two,
 * three and slices of 16 columns meeting in the workspace, two, three,
 * eight and sixteen meeting in a cluster; one, three and the most slices
 * in the workspace and two and sixteen in a cluster with B by the copy
 * engine; and what conv_tc_configs lists for a device of 132 SMs with
 * clusters and the copy engine (duplicates and configs the geometry
 * refuses are harmless); their count. */
enum {
    CONV_TC_TEST_TRIES = 13,
    CONV_TC_TEST_CONFIGS = 3 * CONV_TC_TEST_TRIES + CONV_TC_MAX_CONFIGS
};
static inline int conv_tc_test_configs(const conv_dims *d, conv_tc_config *out)
{
    static const int widths[] = {16, 32, 64};
    const conv_gather g = conv_dims_gather(d);
    const int most = (int)((d->c * d->r * d->s + 15) / 16), chunks = most / 4;
    int n = 0;
    for (int i = 0; i < 3; i++) {
        const int w = widths[i];
        const conv_tc_config tries[CONV_TC_TEST_TRIES] = {
            {w, 1, 0, 0}, {w, 2, 0, 0},  {w, 3, 0, 0}, {w, most, 0, 0},   {w, 2, 1, 0},
            {w, 3, 1, 0}, {w, 8, 1, 0},  {w, 16, 1, 0}, {w, 1, 0, 1},     {w, 3, 0, 1},
            {w, 2, 1, 1}, {w, 16, 1, 1}, {w, chunks > 1 ? chunks : 1, 0, 1}};
        for (int j = 0; j < CONV_TC_TEST_TRIES; j++)
            out[n++] = tries[j];
    }
    char reason[200];
    return n + conv_tc_configs(&g, (int32_t)d->k, 132, 1, out + n, reason, sizeof reason);
}

/* Case t's format for cfg in dtype: 0 (nothing made) when the geometry
 * refuses. */
static inline int conv_tc_case_format(const conv_case *t, const conv_dims *d, conv_tc_config cfg,
                                      spf_dtype dtype, conv_tc_format *f)
{
    const conv_gather g = conv_dims_gather(d);
    conv_tc_geom geom;
    char reason[200];
    if (!conv_tc_geometry(&g, (int32_t)d->k, cfg, &geom, reason, sizeof reason))
        return 0;
    spf_matrix *tap_major = NULL;
    CHECK_OK(conv_weights_tap_major(t->w, (int32_t)d->c, (int32_t)(d->r * d->s), &tap_major));
    CHECK_OK(conv_tc_format_make(tap_major, &geom, dtype, f));
    spf_matrix_free(tap_major);
    return 1;
}

#endif
