/* The window kernel (kernels/conv_window.cu): a direct sparse convolution
 * of an NHWC batch, the IMPLICIT path's kernel where it applies (issue 14
 * item 2). No im2col exists, in memory or per element: a block copies the
 * input window under a tile of output positions into shared memory once
 * (as fp32, channel-major), and every nonzero of its output channels is
 * then multiplied into the tile's positions from there, the nonzero's
 * filter tap (r, s, c) turned by the host into one offset inside the
 * window (SparseRT, paper 004 §4.3, bakes the same offsets into its code
 * as immediates; here they sit beside the values). The generic kernel's
 * implicit gather (generic.h) reads the input once per nonzero and
 * position from global memory; here a position's inputs are read once per
 * block.
 *
 * Work split: a block takes one image, a tile of pt = 32·j consecutive
 * output positions (p·Q + q) and kb = 8·rw output channels; each of its 8
 * warps takes rw channels, each lane j positions (lane, lane + 32, ...).
 * Where the window of all C channels passes the shared-memory budget the
 * channels go in chunks of cc, the window copied again for each chunk,
 * and each row's nonzeros are grouped by chunk (ptr[row·chunks + chunk]).
 * The sums are then written through shared memory so that a block's
 * stores are runs of kb channels; bias, the residual (fused here: one
 * launch for a bottleneck's last convolution) and ReLU are applied there.
 *
 * The geometry functions below are shared by the kernel and the host (the
 * format's offsets, and the unit test that replays the kernel's
 * arithmetic on the CPU), so that the two cannot disagree. */
#ifndef SPF_CONV_CONV_WINDOW_H
#define SPF_CONV_CONV_WINDOW_H

#include "conv/conv_gather.h"
#include "spforge.h"

#include <stddef.h>
#include <stdint.h>

enum {
    CONV_WINDOW_WARPS = 8,            /* warps a block                        */
    CONV_WINDOW_SMEM = 96 * 1024,     /* the window's shared-memory budget:
                                         two blocks an SM                     */
    CONV_WINDOW_SMEM_LIMIT = CONV_WINDOW_SMEM + 1024, /* the kernels' limit: the
                                         budget, or an output tile (≤ 33 KB)  */
    CONV_WINDOW_MAX_CONFIGS = 12
};

/* A kernel configuration (template parameters of the kernel). */
typedef struct conv_window_config {
    int rw; /* output channels a warp: 1, 2, 4 or 8    */
    int j;  /* output positions a lane: 1, 2 or 4       */
} conv_window_config;

/* Everything the kernel's index arithmetic needs. */
typedef struct conv_window_geom {
    int32_t c, h, w, r, s, stride, pad, p, q, k; /* the convolution                      */
    int32_t images;                              /* of the launch                         */
    int32_t rw, j;                               /* the config                            */
    int32_t pt;                                  /* positions a tile: 32·j                */
    int32_t tiles;                               /* tiles an image: ceil(P·Q / pt)        */
    int32_t wr, ww;                              /* window rows (the most a tile needs)
                                                    and columns (the padded input's)      */
    int32_t cc, chunks;                          /* channels a chunk, and chunks          */
} conv_window_geom;
/* (conv_window_geometry checks that every offset below fits 32 bits) */

/* The first output row of tile t of an image. */
CONV_HD int32_t conv_window_first_row(const conv_window_geom *g, int32_t t)
{
    return t * g->pt / g->q;
}

/* The window rows tile t reads: those under its output rows. */
CONV_HD int32_t conv_window_rows(const conv_window_geom *g, int32_t t)
{
    const int32_t end = (t + 1) * g->pt < g->p * g->q ? (t + 1) * g->pt : g->p * g->q;
    return ((end - 1) / g->q - conv_window_first_row(g, t)) * g->stride + g->r;
}

/* Where output position pos (p·Q + q of the image) of a tile whose first
 * output row is `first` reads the window, tap (0, 0) of channel 0. */
CONV_HD int32_t conv_window_position(const conv_window_geom *g, int32_t first, int32_t pos)
{
    const int32_t p = pos / g->q;
    return (p - first) * g->stride * g->ww + (pos - p * g->q) * g->stride;
}

/* The input element of channel 0 under window row y, column 0 of a
 * tile of `image` whose first output row is `first` (the padded row's
 * first real column), or -1 when the row is padding. */
CONV_HD int64_t conv_window_row(const conv_window_geom *g, int32_t image, int32_t first, int32_t y)
{
    const int32_t iy = first * g->stride - g->pad + y;
    return iy < 0 || iy >= g->h ? -1 : ((int64_t)image * g->h + iy) * g->w * g->c;
}

/* The input column under window column x, or -1 in the padding. */
CONV_HD int32_t conv_window_column(const conv_window_geom *g, int32_t x)
{
    const int32_t ix = x - g->pad;
    return ix < 0 || ix >= g->w ? -1 : ix;
}

/* The input element (channel 0 of its run) under window row y, column x,
 * or -1 in the padding: the two above together. */
CONV_HD int64_t conv_window_source(const conv_window_geom *g, int32_t image, int32_t first,
                                   int32_t y, int32_t x)
{
    const int64_t row = conv_window_row(g, image, first, y);
    const int32_t ix = conv_window_column(g, x);
    return row < 0 || ix < 0 ? -1 : row + (int64_t)ix * g->c;
}

/* A nonzero's place: the window offset of filter column kk (in (r, s, c)
 * order, conv_gather.h) within its channel chunk, and the chunk. */
CONV_HD int32_t conv_window_tap(const conv_window_geom *g, int32_t kk, int32_t *chunk)
{
    const int32_t tap = kk / g->c, ch = kk - tap * g->c;
    *chunk = ch / g->cc;
    return (ch - *chunk * g->cc) * g->wr * g->ww + tap / g->s * g->ww + tap % g->s;
}

#ifdef __cplusplus
extern "C" {
#endif

/* The kernel's arrays, on the host: ptr (k·chunks + 1: row k's nonzeros of
 * chunk ch are entries ptr[k·chunks + ch] .. ptr[k·chunks + ch + 1] - 1)
 * and entry (2 words an entry: the value's float bits, its window offset). */
typedef struct conv_window_format {
    conv_window_geom geom;
    int32_t *ptr;
    uint32_t *entry;
    int64_t nnz;
} conv_window_format;

/* The geometry of config cfg for a convolution g (NHWC, one launch of the
 * batch) with k output channels, its window under smem_cap bytes. 0 with
 * a reason when the config cannot take it. */
int conv_window_geometry(const conv_gather *g, int32_t k, conv_window_config cfg, size_t smem_cap,
                         conv_window_geom *out, char *reason, size_t cap);

/* The configs worth timing for g (at most CONV_WINDOW_MAX_CONFIGS, those
 * whose blocks are not mostly idle); their count, 0 with a reason when the
 * kernel cannot take g at all. */
int conv_window_configs(const conv_gather *g, int32_t k, conv_window_config *out, char *reason,
                        size_t cap);

/* Bytes of dynamic shared memory of a block: the window or the output
 * tile, whichever is larger. */
size_t conv_window_smem(const conv_window_geom *g);

/* The format of w (K × R·S·C, columns in (r, s, c) order) for geometry g;
 * free with conv_window_format_free. */
spf_status conv_window_format_make(const spf_matrix *w, const conv_window_geom *g,
                                   conv_window_format *out);
void conv_window_format_free(conv_window_format *f); /* accepts a zeroed one */

/* "window_f16_rw4_j2_cc64" */
void conv_window_name(const conv_window_geom *g, spf_dtype dtype, char *buf, size_t size);

/* The format on the current device, for one dtype and epilogue. */
typedef struct conv_window {
    conv_window_geom geom;
    spf_dtype dtype;
    int relu;          /* after the residual */
    int32_t *ptr;      /* device, owned      */
    uint32_t *entry;   /* device, owned      */
    int64_t bytes;     /* device bytes held  */
} conv_window;

/* Upload f for dtype (f32, f16, bf16); *out NULL on failure. */
spf_status conv_window_create(const conv_window_format *f, spf_dtype dtype, int relu,
                              conv_window **out);
void conv_window_free(conv_window *x); /* accepts NULL */

/* Raise the kernel's shared-memory limit (once a plan, on the current
 * device). CUDA builds only. */
spf_status conv_window_allow(const conv_window *x);

/* out = W ⊛ in (+ bias[k]) (+ residual) (ReLU), NHWC tensors of the dtype
 * (bias float32 or NULL, residual NULL or output-shaped), on stream. CUDA
 * builds only (kernels/conv_window.cu). */
spf_status conv_window_launch(const conv_window *x, const void *in, void *out, const float *bias,
                              const void *residual, void *stream);

#ifdef __cplusplus
}
#endif

#endif
