/* The tensor-core convolution kernel (kernels/conv_tc.cu): an implicit
 * GEMM over sparse weights, the IMPLICIT path's tensor-core kernel (issue
 * 14 item 2: the tensor-core strategies gather B into the shared-memory
 * stage). In GEMM terms out[pos][k] = Σ_kk W[k][kk] · B[kk][pos], with kk
 * in (r, s, c) order (conv_gather.h, NHWC) and B the implicit im2col.
 *
 * A block takes CONV_TC_BM output channels × bn output positions × one
 * slice of ks filter columns (grid z: the reduction split into `splits`
 * slices). It
 *   1. gathers B's slice from the input into shared memory, [pos][kk],
 *      8 channels (16 bytes) a cp.async, zeros where a tap falls in the
 *      padding: a tap's C channels are contiguous in NHWC, so C must be a
 *      multiple of 8. Each run's source is a position's corner plus a
 *      column's offset, both from tables the block fills first (32-bit:
 *      the input holds fewer than 2^31 elements);
 *   2. expands its weights into a dense CONV_TC_BM × ks tile in shared
 *      memory. The slice's nonzeros are stored as 32-bit entries (the
 *      element's offset in the tile, row · pitch + column, and the 16-bit
 *      value): 4 bytes a nonzero, against dense fp16's 2 bytes a weight
 *      (5× fewer at 0.9 sparsity). Each warp zeroes its own 16-byte units
 *      of the tile (unit u is warp u / 32 mod 8's) and stores the entries
 *      that fall in them, so a warp needs no other warp's steps before
 *      its stores (a __syncwarp, not a block barrier: the expansion runs
 *      while thread 0 waits for the stream's previous kernel, at 834f671
 *      0.7 µs of layer1's 4.9). Each thread loads its entries itself, 16
 *      bytes at a time: the block's entries are pieces of 4, piece p of
 *      thread t at p · CONV_TC_THREADS + t (conv_tc_slot), coalesced.
 *      Every block holds the same number (`cap`: the fullest warp's,
 *      over 32 lanes, in whole pieces, for every warp and block), so
 *      that a block finds its entries without reading a pointer first;
 *      the rest are zeros aimed at the thread's own slot past the tile
 *      (conv_tc_dump). (Weights spread unevenly over the blocks cost
 *      every block the fullest one's count: at most a dense tile's.)
 *      Flash-LLM's "load as sparse, compute as dense" (ANCHORS.md's
 *      peers): at 0.9 unstructured a 16×16 tile of weights is hardly ever
 *      empty (0.9^256), so skipping tiles would save nothing;
 *   3. runs mma.sync m16n8k16 over the tiles, fp32 accumulation, each warp
 *      16 channels × 8·nt positions × every kw-th k16 step of the slice;
 *      the kw warps' sums are added in shared memory. A block has 256
 *      threads whatever its width (kw = 2 at 16 and 32 positions, 1 at
 *      64): the copies, the expansion and the epilogue are shared by all,
 *      and at batch 1 the few blocks need warps to hide latency with.
 * On sm_90, where C is a multiple of 64, step 1 may go by the copy engine
 * instead (config `tma`): thread 0 issues one im2col box a tap and 64
 * channels (cp.async.bulk.tensor's im2col mode: the hardware walks the
 * block's positions through the input, steps by the stride, and fills the
 * padding with zeros), into [chunk][pos][64 channels] rows of 128 bytes
 * with the 128-byte swizzle, completing on an mbarrier. The gather's
 * tables and its index arithmetic (half of a block's instructions at
 * batch 1: bench/results/conv/ncu-tc-b1-h200-89c4034.txt) are gone; a
 * slice is then whole chunks (ks a multiple of 64). An input not 16-byte
 * aligned, which the copy engine cannot take, goes by the gather.
 * At batch 1 the work is small and latency bound (a ResNet-50 3×3 layer
 * is 12 M multiply-adds at 0.9): what wins is filling the GPU, and a short
 * chain of dependent steps in each block. The split of the reduction
 * fills it where positions are few (layer4: 49 positions × 512 channels
 * are 8 blocks of 64 × 64, 16 slices make 128). The slices' partial sums
 * meet one of two ways:
 *   - in a thread-block cluster (sm_90, at most CONV_TC_MAX_CLUSTER
 *     slices: a tile's slices are one cluster): each block leaves its sums
 *     in its shared memory, the cluster passes a barrier, and each block
 *     adds every block's sums of its share of the tile's positions through
 *     distributed shared memory, in rank order, and applies the epilogue
 *     (bias, the residual, ReLU) to them. No global round trip, and the
 *     same sums every run;
 *   - otherwise in an fp32 workspace: the last block of a tile to finish
 *     (a counter per tile) applies the epilogue and leaves workspace and
 *     counter zeroed for the next launch, so launches of one kernel object
 *     must not overlap (a plan's launches are ordered on one stream).
 * With one slice the epilogue is the block's own.
 *
 * The geometry functions below are shared by the kernel and the host (the
 * unit test replays the gather's arithmetic against conv_gather_from). */
#ifndef SPF_CONV_CONV_TC_H
#define SPF_CONV_CONV_TC_H

#include "conv/conv_gather.h"
#include "spforge.h"

#include <stddef.h>
#include <stdint.h>

enum {
    CONV_TC_BM = 64,               /* output channels a block: 4 warps of 16     */
    CONV_TC_PAD = 8,               /* elements past ks a shared row: its pitch,
                                      2·ks + 16 bytes, an odd multiple of 16,
                                      keeps ldmatrix's 8 rows on distinct banks */
    CONV_TC_MAX_KS = 1008,         /* a slice's columns: an entry's 16-bit offset
                                      holds CONV_TC_BM rows of ks + CONV_TC_PAD
                                      and CONV_TC_THREADS slots past them    */
    CONV_TC_MAX_CLUSTER = 16,      /* slices a cluster reduces: past 8, a size
                                      the H100 and H200 take but CUDA does not
                                      promise (conv_tc_create asks)          */
    CONV_TC_THREADS = 256,         /* a block's threads: 8 warps                 */
    CONV_TC_CHUNK = 64,            /* channels of a copy-engine box: 128 bytes,
                                      the 128-byte swizzle's row             */
    CONV_TC_ALIGN = 1024,          /* the swizzle's alignment of the boxes       */
    CONV_TC_SMEM = 110 * 1024,     /* shared memory a block: two an SM           */
    CONV_TC_MAX_CONFIGS = 24,
    CONV_TC_WORKSPACE_CAP = 64 << 20 /* bytes of fp32 partial sums a split may use */
};

/* A configuration: positions a block (16, 32 or 64), the reduction's
 * slices (grid z), whether they meet in a cluster (1) or in the
 * workspace (0), and whether B's slice comes by the copy engine (1) or by
 * the gather (0). */
typedef struct conv_tc_config {
    int bn;
    int splits;
    int cluster;
    int tma;
} conv_tc_config;

/* x / d for 0 ≤ x < 2^31 by a multiply and a shift (the kernel divides by
 * run-time sizes: a hardware-less integer division is some 30
 * instructions on the block's critical path). d ≥ 1; conv_fastdiv_make. */
typedef struct conv_fastdiv {
    uint32_t d, m, s;
} conv_fastdiv;

CONV_HD uint32_t conv_div(uint32_t x, conv_fastdiv f)
{
    return f.d == 1 ? x : (uint32_t)(((uint64_t)x * f.m) >> 32) >> f.s;
}

/* Everything the kernel's index arithmetic needs. */
typedef struct conv_tc_geom {
    int32_t c, h, w, r, s, stride, pad, p, q, k; /* the convolution                     */
    int32_t cols;                                /* output positions of the launch      */
    int32_t kred;                                /* filter columns: C·R·S               */
    int32_t bn;                                  /* positions a block (the kernel's
                                                    warps follow from it: conv_tc.cu)  */
    int32_t ks, splits;                          /* a slice's columns (a multiple of
                                                    16) and the slices                 */
    int32_t cluster;                             /* 1: the slices meet in a cluster     */
    int32_t tma;                                 /* 1: B by the copy engine (sm_90)     */
    int32_t ntiles, mtiles;                      /* blocks along positions, channels    */
    int32_t cap;                                 /* entries a block (set by the format:
                                                    a multiple of 4 · CONV_TC_THREADS) */
    conv_fastdiv by_pq, by_q, by_c, by_s;        /* divisions of conv_tc_place, _tap    */
    conv_fastdiv by_runs;                        /* by ks / 8: the gather's runs        */
} conv_tc_geom;

/* Where output position pos of the launch reads: its window's corner
 * (y0, x0) in input rows and columns, padding included (negative at the
 * edge), and the element offset of channel 0 there (*corner; outside the
 * input where the corner is padding, within int32: conv_tc_geometry). */
CONV_HD void conv_tc_place(const conv_tc_geom *g, int32_t pos, int32_t *corner, int32_t *y0,
                           int32_t *x0)
{
    const int32_t pq = g->p * g->q, image = (int32_t)conv_div((uint32_t)pos, g->by_pq);
    const int32_t at = pos - image * pq, p = (int32_t)conv_div((uint32_t)at, g->by_q);
    *y0 = p * g->stride - g->pad;
    *x0 = (at - p * g->q) * g->stride - g->pad;
    *corner = (int32_t)((((int64_t)image * g->h + *y0) * g->w + *x0) * g->c);
}

/* Filter column kk's tap (dy, dx) packed as dy << 16 | dx, and the element
 * offset of its channel from a window's corner. */
CONV_HD void conv_tc_tap(const conv_tc_geom *g, int32_t kk, int32_t *offset, uint32_t *dydx)
{
    const int32_t tap = (int32_t)conv_div((uint32_t)kk, g->by_c), c = kk - tap * g->c;
    const int32_t dy = (int32_t)conv_div((uint32_t)tap, g->by_s), dx = tap - dy * g->s;
    *offset = (dy * g->w + dx) * g->c + c;
    *dydx = (uint32_t)dy << 16 | (uint32_t)dx;
}

/* Whether a tap from a corner falls inside the input (else padding: a
 * zero). */
CONV_HD int conv_tc_inside(const conv_tc_geom *g, int32_t y0, int32_t x0, uint32_t dydx)
{
    return (uint32_t)(y0 + (int32_t)(dydx >> 16)) < (uint32_t)g->h &&
           (uint32_t)(x0 + (int32_t)(dydx & 0xffff)) < (uint32_t)g->w;
}

/* The im2col box's bounds (cuTensorMapEncodeIm2col's pixel box corners,
 * W first): the window corners (y0, x0) of the output positions, from
 * (-pad, -pad) to ((p - 1)·stride - pad, (q - 1)·stride - pad), as
 * offsets from the input's (0, 0) and (h - 1, w - 1). The copy engine
 * walks a box's pixels from the first position's corner by the stride
 * along W, then H, then to the next image, inside these bounds: output
 * positions n0, n0 + 1, ... in order. */
CONV_HD void conv_tc_box(const conv_tc_geom *g, int32_t lower[2], int32_t upper[2])
{
    lower[0] = lower[1] = -g->pad;
    upper[0] = (g->q - 1) * g->stride - g->pad - (g->w - 1);
    upper[1] = (g->p - 1) * g->stride - g->pad - (g->h - 1);
}

/* Element j (0 ≤ j < ks) of position n's row of B's slice in the copy
 * engine's layout: chunk j / 64 holds bn rows of 64 elements (128 bytes);
 * in row n the 16-byte pieces are swizzled, piece u at u ^ (n mod 8): the
 * 128-byte swizzle of the boxes (each at a multiple of 1024 bytes), which
 * also keeps ldmatrix's 8 rows of one piece on distinct banks. */
CONV_HD uint32_t conv_tc_swizzled(uint32_t bn, uint32_t n, uint32_t j)
{
    return (j / CONV_TC_CHUNK * bn + n) * CONV_TC_CHUNK + ((j % CONV_TC_CHUNK / 8) ^ (n % 8)) * 8 +
           j % 8;
}

/* Bytes of a block's tiles: A (CONV_TC_BM rows) and B (bn rows) of
 * ks + CONV_TC_PAD elements and the padding entries' slots past A
 * (conv_tc_dump), or the epilogue's fp32 bn × (CONV_TC_BM + 1) sums that
 * reuse them, whichever is larger (a multiple of 16). The tables of
 * places (16 bytes a position) and taps (8 bytes a run of 8 columns)
 * follow. */
CONV_HD size_t conv_tc_tile_bytes(const conv_tc_geom *g)
{
    const size_t ab = ((size_t)(CONV_TC_BM + g->bn) * (size_t)(g->ks + CONV_TC_PAD) +
                       CONV_TC_THREADS) * 2;
    const size_t sums = (size_t)g->bn * (CONV_TC_BM + 1) * 4;
    return ab > sums ? ab : sums;
}

/* A weight entry: the element's offset in the block's A tile (row in the
 * tile, column in the slice, CONV_TC_PAD columns past ks a row), value
 * bits. */
CONV_HD uint32_t conv_tc_entry(const conv_tc_geom *g, int32_t row, int32_t col, uint16_t bits)
{
    return (uint32_t)(row * (g->ks + CONV_TC_PAD) + col) << 16 | bits;
}

/* The warp that zeroes the 16-byte unit of A's element `at` and stores the
 * entries that fall in it: units go 32 to a warp in turn (the zeroing's
 * unit u is thread u mod CONV_TC_THREADS's). */
CONV_HD int32_t conv_tc_owner(uint32_t at)
{
    return (int32_t)(at / 8 / 32 % (CONV_TC_THREADS / 32));
}

/* Where thread t's padding entries store their zeros: its own element
 * past the A tile, which nothing reads (offsets stay within 16 bits:
 * CONV_TC_MAX_KS). */
CONV_HD uint32_t conv_tc_dump(const conv_tc_geom *g, int32_t t)
{
    return (uint32_t)(CONV_TC_BM * (g->ks + CONV_TC_PAD) + t) << 16;
}

/* The index in a block's entries of thread t's j-th entry: in piece j / 4
 * of the thread's, pieces of all threads in turn. */
CONV_HD int64_t conv_tc_slot(int32_t t, int64_t j)
{
    return (j / 4 * CONV_TC_THREADS + t) * 4 + j % 4;
}

#ifdef __cplusplus
extern "C" {
#endif

/* The divisor d (≥ 1) of conv_div. */
conv_fastdiv conv_fastdiv_make(uint32_t d);

/* The geometry of config cfg for a convolution g (NHWC, one launch of the
 * batch) with k output channels. 0 with a reason when the kernel cannot
 * take it; splits is rounded so that no slice is empty (a cluster config
 * whose rounded splits pass CONV_TC_MAX_CLUSTER is refused). */
int conv_tc_geometry(const conv_gather *g, int32_t k, conv_tc_config cfg, conv_tc_geom *out,
                     char *reason, size_t cap);

/* The configs worth timing for g on a device of `sms` multiprocessors (at
 * most CONV_TC_MAX_CONFIGS): per block width, the fewest slices that fit
 * shared memory, and the fewest that give every SM one block, and two; on
 * sm_90 (`sm90`: thread-block clusters and the copy engine), those of at
 * most CONV_TC_MAX_CLUSTER slices meet in one, the most slices a cluster
 * takes is tried too where two blocks an SM need more, and where C is a
 * multiple of 64 each is tried with B by the copy engine too. Their count,
 * 0 with a reason when the kernel cannot take g. */
int conv_tc_configs(const conv_gather *g, int32_t k, int sms, int sm90, conv_tc_config *out,
                    char *reason, size_t cap);

/* Bytes of dynamic shared memory of a block. */
size_t conv_tc_smem(const conv_tc_geom *g);

/* Bytes of fp32 workspace (0 with one slice or a cluster). */
size_t conv_tc_workspace(const conv_tc_geom *g);

/* The format: geom.cap entries a block, block (mt, z)'s from entry
 * (mt·splits + z)·cap, thread t's j-th at conv_tc_slot(t, j): the entries
 * of warp w's units (conv_tc_owner) dealt over its lanes in turn; nnz of
 * them are weights, the rest conv_tc_dump's. */
typedef struct conv_tc_format {
    conv_tc_geom geom;
    uint32_t *entry;
    int64_t nnz;
} conv_tc_format;

/* The format of w (k × C·R·S, columns in (r, s, c) order) for geometry g,
 * values rounded to dtype (f16 or bf16), geom.cap set; free with
 * conv_tc_format_free. */
spf_status conv_tc_format_make(const spf_matrix *w, const conv_tc_geom *g, spf_dtype dtype,
                               conv_tc_format *out);
void conv_tc_format_free(conv_tc_format *f); /* accepts a zeroed one */

/* The config: "bn32_ks576_z1", "bn16_ks288_z2c" (c: a cluster),
 * "bn16_ks576_z1t" (t: B by the copy engine). */
void conv_tc_config_name(const conv_tc_geom *g, char *buf, size_t size);

/* The kernel: "convtc_f16_" and the config's name. */
void conv_tc_name(const conv_tc_geom *g, spf_dtype dtype, char *buf, size_t size);

/* The format on the current device, with its workspace. */
typedef struct conv_tc {
    conv_tc_geom geom;
    spf_dtype dtype;
    int relu;          /* after the residual                         */
    int early;         /* launched to start before the stream's previous
                          kernel ends (sm_90, SPFORGE_PDL not 0)     */
    uint32_t *entry;   /* device, owned                              */
    float *workspace;  /* device, owned, zeroed: splits > 1 without a
                          cluster only                               */
    int32_t *counter;  /* device, owned, zeroed: a tile's finished slices */
    int64_t bytes;     /* device bytes held                          */
} conv_tc;

/* Upload f (made for dtype); *out NULL on failure (a cluster config the
 * device cannot place, and the copy engine on a device older than 9.0,
 * are refused: SPF_ERR_UNSUPPORTED). */
spf_status conv_tc_create(const conv_tc_format *f, spf_dtype dtype, int relu, conv_tc **out);
void conv_tc_free(conv_tc *x); /* accepts NULL */

/* Whether the device can place a cluster of g's slices, blocks of
 * dtype's kernel (SPF_OK, else SPF_ERR_UNSUPPORTED with the reason).
 * CUDA builds only. */
spf_status conv_tc_cluster_check(const conv_tc_geom *g, spf_dtype dtype);

/* out = W ⊛ in (+ bias[k]) (+ residual) (ReLU), NHWC tensors of the dtype
 * (bias float32 or NULL, residual NULL or output-shaped), on stream. CUDA
 * builds only. */
spf_status conv_tc_launch(const conv_tc *x, const void *in, void *out, const float *bias,
                          const void *residual, void *stream);

#ifdef __cplusplus
}
#endif

#endif
