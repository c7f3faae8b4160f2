/* The gather of a convolution's explicit im2col (issue 14's fallback and
 * baseline path): B's element (kk, j) of one SpMM launch is the input
 * element under filter tap kk = (c·R + r)·S + t of output position j,
 * zero where the tap falls in the padding. One index function serves the
 * host gather (conv_gather.c) and the device one (kernels/conv_gather.cu),
 * so the two cannot disagree; the CPU reference (ref/conv.c) keeps its own
 * loop, as an oracle should. */
#ifndef SPF_CONV_GATHER_H
#define SPF_CONV_GATHER_H

#include "spforge.h"

#include <stdint.h>

#ifdef __CUDACC__
#define CONV_HD static __host__ __device__ __forceinline__
#else
#define CONV_HD static inline
#endif

typedef struct conv_gather {
    int64_t c, h, w;      /* input channels, height, width                   */
    int64_t r, s;         /* filter height and width                         */
    int64_t stride, pad;
    int64_t p, q;         /* output height and width                         */
    int64_t cols;         /* B's columns in one launch: images × P·Q          */
    int nhwc;             /* NHWC: B is cols × C·R·S (n_first), one launch for
                             the batch; NCHW: B is C·R·S × cols (n_last), one
                             launch per image                                 */
} conv_gather;

/* The input element (from the launch's first image) under B's element
 * (kk, j), or -1 in the padding. */
CONV_HD int64_t conv_gather_from(const conv_gather *g, int64_t kk, int64_t j)
{
    const int64_t pq = g->p * g->q, image = j / pq, at = j % pq, rs = g->r * g->s;
    const int64_t c = kk / rs, tap = kk % rs;
    const int64_t y = at / g->q * g->stride - g->pad + tap / g->s;
    const int64_t x = at % g->q * g->stride - g->pad + tap % g->s;
    if (y < 0 || y >= g->h || x < 0 || x >= g->w)
        return -1;
    return g->nhwc ? ((image * g->h + y) * g->w + x) * g->c + c
                   : ((image * g->c + c) * g->h + y) * g->w + x;
}

/* B's element at offset t of its buffer, as (kk, j) of conv_gather_from. */
CONV_HD void conv_gather_split(const conv_gather *g, int64_t t, int64_t *kk, int64_t *j)
{
    const int64_t rows = g->c * g->r * g->s;
    if (g->nhwc)
        *kk = t % rows, *j = t / rows;
    else
        *kk = t / g->cols, *j = t % g->cols;
}

/* Elements of B in one launch. */
CONV_HD int64_t conv_gather_count(const conv_gather *g)
{
    return g->c * g->r * g->s * g->cols;
}

#ifdef __cplusplus
extern "C" {
#endif

/* Host: B of one launch from in (elements of elem bytes) into cols. */
void conv_gather_host(const conv_gather *g, const void *in, void *cols, size_t elem);

/* Host: out[i] = out[i] + residual[i], then max(·, 0) when relu; float32. */
void conv_residual_host(float *out, const float *residual, int64_t count, int relu);

/* Device, on `stream`: the same two over device buffers of dtype's
 * elements (the residual's sum in fp32, rounded once). CUDA builds only. */
spf_status conv_gather_launch(const conv_gather *g, const void *in, void *cols, size_t elem,
                              void *stream);
spf_status conv_residual_launch(spf_dtype dtype, void *out, const void *residual, int64_t count,
                                int relu, void *stream);

#ifdef __cplusplus
}
#endif

#endif
