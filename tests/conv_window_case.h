/* What the window kernel's two tests share (unit/test_conv_window.c
 * replays its arithmetic on the CPU, gpu/test_conv_window.c runs it):
 * every config, the shapes past conv_case.h's (several tiles an image,
 * C past one chunk), a case's NHWC gather and its format. */
#ifndef SPF_TESTS_CONV_WINDOW_CASE_H
#define SPF_TESTS_CONV_WINDOW_CASE_H

#include "conv_case.h"

#include "conv/conv_gather.h"
#include "conv/conv_window.h"

static const conv_window_config conv_window_all[] = {{1, 1}, {1, 2}, {1, 4}, {2, 1},
                                                     {2, 2}, {2, 4}, {4, 1}, {4, 2},
                                                     {4, 4}, {8, 1}, {8, 2}, {8, 4}};
#define CONV_WINDOW_ALL ((int)(sizeof conv_window_all / sizeof conv_window_all[0]))

/* wider than a tile, several tiles an image, C past one chunk */
static const conv_dims conv_window_dims[] = {
    {"3x3 on 56-wide rows", 1, 16, 5, 56, 20, 3, 3, 1, 1},
    {"3x3 stride 2, C = 20", 2, 20, 13, 17, 9, 3, 3, 2, 1},
    {"1x1 on 40 positions, K = 70", 1, 24, 5, 8, 70, 1, 1, 1, 0},
};
#define CONV_WINDOW_DIMS ((int)(sizeof conv_window_dims / sizeof conv_window_dims[0]))

/* Shape i of conv_case.h's and the ones above. */
static inline const conv_dims *conv_window_dim(int i)
{
    return i < CONV_TEST_DIMS ? &conv_test_dims[i] : &conv_window_dims[i - CONV_TEST_DIMS];
}

/* The budget that puts about 8 channels' windows in one chunk. */
static inline size_t conv_window_chunking_cap(const conv_window_geom *g)
{
    return (size_t)g->wr * g->ww * sizeof(float) * 9;
}

/* Case t's format for config cfg under a window budget of smem_cap bytes:
 * 0 (nothing made) when the geometry refuses. */
static inline int conv_window_case_format(const conv_case *t, const conv_dims *d,
                                          conv_window_config cfg, size_t smem_cap,
                                          conv_window_format *f)
{
    const conv_gather g = conv_dims_gather(d);
    conv_window_geom geom;
    char reason[160];
    if (!conv_window_geometry(&g, (int32_t)d->k, cfg, smem_cap, &geom, reason, sizeof reason))
        return 0;
    spf_matrix *tap_major = NULL;
    CHECK_OK(conv_weights_tap_major(t->w, (int32_t)d->c, (int32_t)(d->r * d->s), &tap_major));
    CHECK_OK(conv_window_format_make(tap_major, &geom, f));
    spf_matrix_free(tap_major);
    return 1;
}

#endif
