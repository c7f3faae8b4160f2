/* What the tensor-core conv kernel's two tests share (unit/test_conv_tc.c
 * replays its arithmetic on the CPU, gpu/test_conv_tc.c runs it): shapes
 * whose channels it takes (C a multiple of 8) with position counts of 1,
 * 3, 49 and 127 and output channels past a block's 64, the configs to run
 * for a shape, and a case's format. */
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
};
#define CONV_TC_DIMS ((int)(sizeof conv_tc_dims / sizeof conv_tc_dims[0]))

/* The configs a test runs for d: each block width with one slice, two,
 * three and slices of 16 columns meeting in the workspace, two, three,
 * eight and sixteen meeting in a cluster, and what conv_tc_configs lists for a
 * device of 132 SMs with clusters (duplicates and configs the geometry
 * refuses are harmless); their count. */
enum { CONV_TC_TEST_CONFIGS = 3 * 8 + CONV_TC_MAX_CONFIGS };
static inline int conv_tc_test_configs(const conv_dims *d, conv_tc_config *out)
{
    static const int widths[] = {16, 32, 64};
    const conv_gather g = conv_dims_gather(d);
    const int most = (int)((d->c * d->r * d->s + 15) / 16);
    int n = 0;
    for (int i = 0; i < 3; i++) {
        const conv_tc_config tries[] = {{widths[i], 1, 0}, {widths[i], 2, 0}, {widths[i], 3, 0},
                                        {widths[i], most, 0}, {widths[i], 2, 1},
                                        {widths[i], 3, 1}, {widths[i], 8, 1},
                                        {widths[i], 16, 1}};
        for (int j = 0; j < 8; j++)
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
