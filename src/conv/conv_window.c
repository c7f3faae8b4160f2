/* The host side of conv_window.h: the geometry of a config, the configs
 * worth timing, the format (each nonzero's window offset, rows grouped by
 * channel chunk) and its upload. */
#include "conv/conv_window.h"

#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/matrix.h"

#include <stdio.h>
#include <string.h>

#ifdef SPF_HAVE_CUDA
#include "gpu/device_upload.h"

#include <cuda_runtime_api.h>
#endif

int conv_window_geometry(const conv_gather *g, int32_t k, conv_window_config cfg, size_t smem_cap,
                         conv_window_geom *out, char *reason, size_t cap)
{
    if (!g->nhwc) {
        snprintf(reason, cap, "NCHW: the window kernel reads NHWC channel runs");
        return 0;
    }
    const int64_t pq = (int64_t)g->p * g->q, pt = 32LL * cfg.j;
    const int64_t images = g->cols / (pq > 0 ? pq : 1);
    const int64_t tiles = (pq + pt - 1) / pt, kb = (int64_t)CONV_WINDOW_WARPS * cfg.rw;
    if (pq + pt > INT32_MAX || images * tiles > INT32_MAX || (k + kb - 1) / kb > 65535) {
        snprintf(reason, cap, "%lld images of %lld positions and %d output channels: past the "
                 "grid (2^31 - 1 tiles, 65535 channel blocks)", (long long)images, (long long)pq,
                 k);
        return 0;
    }
    /* a tile of pt positions spans at most (pt - 1) / Q + 2 output rows */
    const int64_t span = (pt - 1) / g->q + 2 < g->p ? (pt - 1) / g->q + 2 : g->p;
    const int64_t wr = (span - 1) * g->stride + g->r, ww = (int64_t)(g->q - 1) * g->stride + g->s;
    const int64_t plane = wr * ww, fit = (int64_t)(smem_cap / sizeof(float)) / plane;
    if (fit < 1) {
        snprintf(reason, cap, "a window of %lld×%lld positions a channel passes %zu bytes of "
                 "shared memory", (long long)wr, (long long)ww, smem_cap);
        return 0;
    }
    /* chunks of whole 16-byte runs where the channels do not fit at once */
    int64_t cc = fit >= g->c ? g->c : fit >= 8 ? fit / 8 * 8 : fit;
    const int64_t chunks = (g->c + cc - 1) / cc;
    if ((int64_t)k * chunks >= INT32_MAX) {
        snprintf(reason, cap, "%d output channels × %lld channel chunks: past the format's "
                 "int32 offsets", k, (long long)chunks);
        return 0;
    }
    *out = (conv_window_geom){.c = g->c, .h = g->h, .w = g->w, .r = g->r, .s = g->s,
                              .stride = g->stride, .pad = g->pad, .p = g->p, .q = g->q, .k = k,
                              .images = (int32_t)images, .rw = cfg.rw, .j = cfg.j,
                              .pt = (int32_t)pt, .tiles = (int32_t)tiles, .wr = (int32_t)wr,
                              .ww = (int32_t)ww, .cc = (int32_t)cc, .chunks = (int32_t)chunks};
    return 1;
}

int conv_window_configs(const conv_gather *g, int32_t k, conv_window_config *out, char *reason,
                        size_t cap)
{
    static const int rws[] = {1, 2, 4, 8}, js[] = {1, 2, 4};
    const int64_t pq = (int64_t)g->p * g->q;
    int n = 0;
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 3; b++) {
            /* a wider block only where the narrower one leaves no channels
             * or positions of an image for it to take */
            if ((a > 0 && CONV_WINDOW_WARPS * rws[a - 1] >= k) || (b > 0 && 32 * js[b - 1] >= pq))
                continue;
            conv_window_config c = {.rw = rws[a], .j = js[b]};
            conv_window_geom geom;
            if (conv_window_geometry(g, k, c, CONV_WINDOW_SMEM, &geom, reason, cap))
                out[n++] = c;
        }
    return n;
}

size_t conv_window_smem(const conv_window_geom *g)
{
    const size_t window = (size_t)g->cc * g->wr * g->ww;
    const size_t tile = (size_t)g->pt * (CONV_WINDOW_WARPS * g->rw + 1);
    return (window > tile ? window : tile) * sizeof(float);
}

spf_status conv_window_format_make(const spf_matrix *w, const conv_window_geom *g,
                                   conv_window_format *out)
{
    memset(out, 0, sizeof *out);
    out->geom = *g;
    if (w->nnz > INT32_MAX || w->rows != g->k)
        return FAIL(SPF_ERR_UNSUPPORTED, "conv window: %lld nonzeros in %lld rows (at most 2^31 - "
                    "1 in %d)", (long long)w->nnz, (long long)w->rows, g->k);
    const int64_t slots = (int64_t)g->k * g->chunks;
    out->ptr = mem_calloc((size_t)slots + 1, sizeof *out->ptr);
    out->entry = mem_alloc_array((size_t)(w->nnz > 0 ? w->nnz : 1) * 2, sizeof *out->entry);
    if (!out->ptr || !out->entry) {
        conv_window_format_free(out);
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "conv window: the format of %lld nonzeros",
                    (long long)w->nnz);
    }
    int32_t chunk;
    /* counts by (row, chunk), then their starts: rows are sorted by column,
     * and so by chunk within a tap only, hence the counting sort */
    for (int64_t row = 0; row < g->k; row++)
        for (int64_t q = w->row_ptr[row]; q < w->row_ptr[row + 1]; q++) {
            (void)conv_window_tap(g, w->col_idx[q], &chunk);
            out->ptr[row * g->chunks + chunk + 1]++;
        }
    for (int64_t i = 0; i < slots; i++)
        out->ptr[i + 1] += out->ptr[i];
    int32_t *fill = mem_alloc_array((size_t)(slots > 0 ? slots : 1), sizeof *fill);
    if (!fill) {
        conv_window_format_free(out);
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "conv window: %lld row chunks", (long long)slots);
    }
    memcpy(fill, out->ptr, (size_t)slots * sizeof *fill);
    for (int64_t row = 0; row < g->k; row++)
        for (int64_t q = w->row_ptr[row]; q < w->row_ptr[row + 1]; q++) {
            const int32_t at = conv_window_tap(g, w->col_idx[q], &chunk);
            const int32_t e = fill[row * g->chunks + chunk]++;
            memcpy(&out->entry[2 * (int64_t)e], &w->values[q], sizeof(float));
            out->entry[2 * (int64_t)e + 1] = (uint32_t)at;
        }
    mem_free(fill);
    out->nnz = w->nnz;
    return SPF_OK;
}

void conv_window_format_free(conv_window_format *f)
{
    mem_free(f->ptr);
    mem_free(f->entry);
    f->ptr = NULL;
    f->entry = NULL;
}

void conv_window_name(const conv_window_geom *g, spf_dtype dtype, char *buf, size_t size)
{
    snprintf(buf, size, "window_%s_rw%d_j%d_cc%d", dtype_name(dtype), g->rw, g->j, g->cc);
}

#ifdef SPF_HAVE_CUDA

spf_status conv_window_create(const conv_window_format *f, spf_dtype dtype, int relu,
                              conv_window **out)
{
    *out = NULL;
    conv_window *x = mem_calloc(1, sizeof *x);
    if (!x)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "conv: a window kernel");
    x->geom = f->geom;
    x->dtype = dtype;
    x->relu = relu;
    spf_status status = SPF_OK;
    TRY(device_upload((void **)&x->ptr, f->ptr, (int64_t)f->geom.k * f->geom.chunks + 1,
                      sizeof *x->ptr, &x->bytes));
    TRY(device_upload((void **)&x->entry, f->entry, f->nnz * 2, sizeof *x->entry, &x->bytes));
    *out = x;
    return SPF_OK;
fail:
    conv_window_free(x);
    return status;
}

void conv_window_free(conv_window *x)
{
    if (!x)
        return;
    (void)cudaFree(x->ptr);
    (void)cudaFree(x->entry);
    mem_free(x);
}

#else

spf_status conv_window_create(const conv_window_format *f, spf_dtype dtype, int relu,
                              conv_window **out)
{
    (void)f, (void)dtype, (void)relu;
    *out = NULL;
    return FAIL(SPF_ERR_NO_DEVICE, "conv: built without CUDA");
}

void conv_window_free(conv_window *x)
{
    (void)x;
}

spf_status conv_window_launch(const conv_window *x, const void *in, void *out, const float *bias,
                              const void *residual, void *stream)
{
    (void)x, (void)in, (void)out, (void)bias, (void)residual, (void)stream;
    return FAIL(SPF_ERR_NO_DEVICE, "conv: built without CUDA");
}

#endif
