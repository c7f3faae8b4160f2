/* The gather of a convolution's explicit im2col (issue 14's fallback and
 * baseline path): B's element (kk, j) of one SpMM launch is the input
 * element under filter column kk of output position j, zero where the tap
 * falls in the padding. NCHW plans keep the weights' (c, r, s) column
 * order, kk = c·R·S + r·S + t; NHWC plans reorder the weights' columns to
 * (r, s, c), kk = (r·S + t)·C + c (conv_weights_tap_major), so that a row
 * of B is R·S runs of C channels each contiguous in the input: the gather
 * copies whole vectors, and the lanes of an implicit gather over a row's
 * nonzeros read neighbouring channels. One index function serves the
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
    int32_t c, h, w;      /* input channels, height, width                   */
    int32_t r, s;         /* filter height and width                         */
    int32_t stride, pad;
    int32_t p, q;         /* output height and width                         */
    int32_t cols;         /* B's columns in one launch: images × P·Q          */
    int nhwc;             /* NHWC: B is cols × C·R·S (n_first), one launch for
                             the batch; NCHW: B is C·R·S × cols (n_last), one
                             launch per image                                 */
} conv_gather;
/* (every size, C·R·S and cols below 2^31: the plan checks; the divisions
 * stay in 32 bits, the offsets are 64) */

/* The input element (from the launch's first image) under B's element
 * (kk, j), or -1 in the padding. */
CONV_HD int64_t conv_gather_from(const conv_gather *g, int32_t kk, int32_t j)
{
    const int32_t pq = g->p * g->q, image = j / pq, at = j - image * pq, rs = g->r * g->s;
    const int32_t c = g->nhwc ? kk % g->c : kk / rs;
    const int32_t tap = g->nhwc ? kk / g->c : kk - c * rs, p = at / g->q, q = at - p * g->q;
    const int64_t y = (int64_t)p * g->stride - g->pad + tap / g->s;
    const int64_t x = (int64_t)q * g->stride - g->pad + tap % g->s;
    if (y < 0 || y >= g->h || x < 0 || x >= g->w)
        return -1;
    return g->nhwc ? (((int64_t)image * g->h + y) * g->w + x) * g->c + c
                   : (((int64_t)image * g->c + c) * g->h + y) * g->w + x;
}

/* The same element split in two, for kernels that add a per-column base
 * to a per-row offset (the unrolled kernel's implicit gather: SparseRT,
 * paper 004 §4.3, bakes the row's offset into each load as an immediate):
 * conv_gather_base(j) is the element of output position j's window corner
 * (y0, x0) = (p·stride, q·stride), in the launch's first image onwards,
 * and conv_gather_offset(kk) that of filter column kk's tap (dy, dx) =
 * (r − pad, s − pad) and channel from there (negative where the tap lies
 * above or left of the corner). Their sum is conv_gather_from's element
 * wherever that is not padding, which is where 0 ≤ y0 + dy < H and
 * 0 ≤ x0 + dx < W. */
CONV_HD int64_t conv_gather_base(const conv_gather *g, int32_t j)
{
    const int32_t pq = g->p * g->q, image = j / pq, at = j - image * pq, p = at / g->q;
    const int64_t y0 = (int64_t)p * g->stride, x0 = (int64_t)(at - p * g->q) * g->stride;
    return g->nhwc ? (((int64_t)image * g->h + y0) * g->w + x0) * g->c
                   : ((int64_t)image * g->c * g->h + y0) * g->w + x0;
}
CONV_HD int32_t conv_gather_tap(const conv_gather *g, int32_t kk) /* r·S + s */
{
    return g->nhwc ? kk / g->c : kk % (g->r * g->s);
}
CONV_HD int64_t conv_gather_offset(const conv_gather *g, int32_t kk)
{
    const int32_t tap = conv_gather_tap(g, kk), c = g->nhwc ? kk % g->c : kk / (g->r * g->s);
    const int64_t dy = tap / g->s - g->pad, dx = tap % g->s - g->pad;
    return g->nhwc ? (dy * g->w + dx) * g->c + c : ((int64_t)c * g->h + dy) * g->w + dx;
}

/* B of one launch is outer × inner, row-major: NHWC cols × C·R·S (row j),
 * NCHW C·R·S × cols (row kk); its element (o, i) as (kk, j). */
CONV_HD int32_t conv_gather_outer(const conv_gather *g)
{
    return g->nhwc ? g->cols : g->c * g->r * g->s;
}
CONV_HD int32_t conv_gather_inner(const conv_gather *g)
{
    return g->nhwc ? g->c * g->r * g->s : g->cols;
}
CONV_HD int64_t conv_gather_at(const conv_gather *g, int32_t o, int32_t i)
{
    return g->nhwc ? conv_gather_from(g, i, o) : conv_gather_from(g, o, i);
}

#ifdef __cplusplus
extern "C" {
#endif

/* Host: *out = w with its columns moved from (c, r, s) order to (r, s, c)
 * (c channels, rs = R·S taps): an NHWC plan's weights. */
spf_status conv_weights_tap_major(const spf_matrix *w, int32_t c, int32_t rs, spf_matrix **out);

/* Host: B of one launch from in (elements of elem bytes) into cols. */
void conv_gather_host(const conv_gather *g, const void *in, void *cols, size_t elem);

/* Host: out[i] = out[i] + residual[i], then max(·, 0) when relu; float32. */
void conv_residual_host(float *out, const float *residual, int64_t count, int relu);

/* Device, on `stream`: the gather over device buffers of elements of
 * elem bytes. CUDA builds only. */
spf_status conv_gather_launch(const conv_gather *g, const void *in, void *cols, size_t elem,
                              void *stream);

#ifdef __cplusplus
}
#endif

#endif
