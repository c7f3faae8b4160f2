/* The warpgroup conv kernel's geometry (conv_wg.h); the kernel, and the
 * weights on the device, are in kernels/conv_wg.sm90a.cu. */
#include "conv/conv_wg.h"

#include "core/dtype.h"
#include "core/error.h"

#include <stdio.h>

int conv_wg_geometry(const conv_gather *g, int32_t k, int32_t bn, int resident,
                     conv_wg_geom *out, char *reason, size_t cap)
{
    if (!g->nhwc || g->stride != 1) {
        snprintf(reason, cap, "the warpgroup kernel takes NHWC at stride 1 (here %s, stride %d)",
                 g->nhwc ? "NHWC" : "NCHW", g->stride);
        return 0;
    }
    if (g->c % CONV_WG_CHUNK != 0 || k % CONV_WG_BM != 0) {
        snprintf(reason, cap, "the warpgroup kernel takes C and K multiples of 64 (C = %d, K = %d)",
                 g->c, k);
        return 0;
    }
    if (bn != 64 && bn != 128 && bn != 256) {
        snprintf(reason, cap, "the warpgroup kernel's positions a block are 64, 128 or 256 (%d)",
                 bn);
        return 0;
    }
    const int32_t wp = g->w + 2 * g->pad;
    if (wp > bn || wp > 256) {
        snprintf(reason, cap, "a padded input row of %d pixels is wider than a block's %d "
                 "positions (or the copy engine's 256)", wp, bn);
        return 0;
    }
    conv_wg_geom x = {.n = g->cols / (g->p * g->q), .c = g->c, .h = g->h, .w = g->w, .r = g->r,
                      .s = g->s, .pad = g->pad, .p = g->p, .q = g->q, .k = k, .bn = bn, .wp = wp};
    x.rows = bn / wp < g->p ? bn / wp : g->p;
    x.halo = x.rows + g->r - 1;
    if (x.halo > 256) {
        snprintf(reason, cap, "a box of %d input rows: the copy engine takes 256", x.halo);
        return 0;
    }
    /* the last tap of the last position reaches (R−1)·wp + S−1 rows past
     * bn; the box fills halo·wp ≤ that */
    x.stage_rows = (bn + (g->r - 1) * wp + g->s - 1 + 7) / 8 * 8;
    x.chunks = g->c / CONV_WG_CHUNK;
    x.row_tiles = (g->p + x.rows - 1) / x.rows;
    /* whole images where one leaves room: the weights' boxes, which every
     * block loads, then serve more positions (ResNet-50's 7×7: 3 images
     * at 256 positions) */
    x.images = 1;
    if (x.rows == g->p) {
        x.images += (bn - x.rows * wp) / (x.halo * wp);
        x.images = x.images < x.n ? x.images : x.n;
        x.images = x.images < 256 ? x.images : 256;
    }
    const int64_t tiles = (int64_t)(x.n + x.images - 1) / x.images * x.row_tiles;
    if (tiles > INT32_MAX || k / CONV_WG_BM > 65535) {
        snprintf(reason, cap, "%lld blocks along the positions, %d along the channels: past the "
                 "grid", (long long)tiles, k / CONV_WG_BM);
        return 0;
    }
    x.tiles = (int32_t)tiles;
    x.resident = resident != 0;
    if (x.resident) {
        x.stages = 2;
        if (conv_wg_smem(&x) > CONV_WG_SMEM) {
            snprintf(reason, cap, "the weights of every chunk (%zu bytes), two input stages and "
                     "the sums are past shared memory",
                     (size_t)x.chunks * conv_wg_chunk_weights(&x));
            return 0;
        }
        *out = x;
        return 1;
    }
    x.stages = x.chunks > 1 ? 2 : 1;
    if (x.stages == 2 && conv_wg_smem(&x) > CONV_WG_SMEM)
        x.stages = 1;
    if (conv_wg_smem(&x) > CONV_WG_SMEM) {
        snprintf(reason, cap, "a stage of %zu bytes (%d taps of weights and %d input rows) is past "
                 "shared memory", conv_wg_stage_bytes(&x), g->r * g->s, x.stage_rows);
        return 0;
    }
    *out = x;
    return 1;
}

void conv_wg_config_name(const conv_wg_geom *g, char *buf, size_t size)
{
    snprintf(buf, size, "bn%d_r%d_i%d_s%d%s", g->bn, g->rows, g->images, g->stages,
             g->resident ? "_w" : "");
}

void conv_wg_name(const conv_wg_geom *g, spf_dtype dtype, char *buf, size_t size)
{
    char config[32];
    conv_wg_config_name(g, config, sizeof config);
    snprintf(buf, size, "convwg_%s_%s", dtype_name(dtype), config);
}

#ifndef SPF_HAVE_CUDA

spf_status conv_wg_create(const spf_matrix *w, const conv_wg_geom *g, spf_dtype dtype, int relu,
                          conv_wg **out)
{
    (void)w, (void)g, (void)dtype, (void)relu;
    *out = NULL;
    return FAIL(SPF_ERR_NO_DEVICE, "conv: built without CUDA");
}

void conv_wg_free(conv_wg *x)
{
    (void)x;
}

int64_t conv_wg_bytes(const conv_wg *x)
{
    (void)x;
    return 0;
}

const conv_wg_geom *conv_wg_geometry_of(const conv_wg *x)
{
    (void)x;
    return NULL;
}

spf_status conv_wg_launch(const conv_wg *x, const void *in, void *out, const float *bias,
                          const void *residual, void *stream)
{
    (void)x, (void)in, (void)out, (void)bias, (void)residual, (void)stream;
    return FAIL(SPF_ERR_NO_DEVICE, "conv: built without CUDA");
}

#endif
