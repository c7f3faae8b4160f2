/* The structured kernels, precompiled by nvcc for sm_80 and sm_90, over the
 * structured format (sp_format.h). C-callable. Two kernels, one config type:
 *
 * The stream kernel (kernels/sp_spmm.cu), for small N. A block takes rt
 * row tiles of 16 rows (grid.x) and 8·nb columns of B and C (grid.y); its
 * warps split the step pairs of K (warp w takes pairs w, w + warps, ...).
 * Each warp copies its pairs' A fragments and metadata (as the format
 * stores them) and 64 rows of B (gathered for V:2:M) into a ring of
 * `stages` shared-memory stages of its own by cp.async, stages - 1 pairs
 * in flight, and issues mma.sp m16n8k32 per tile and 8 columns from the
 * ring (B by ldmatrix). The warps' sums meet in shared memory.
 *
 * The tile kernel (kernels/sp_tile.cu), for larger N. A block takes bm rows
 * (grid.x) and bn columns (grid.y) and walks K a step pair at a time; the
 * pair's A fragments and 64 rows of B go to a shared-memory stage by
 * cp.async, `stages` pairs in flight, and each warp multiplies 32 of the
 * rows by its share of the columns (sp_tile.cu lists the warp layouts).
 *
 * The wgmma kernel (kernels/sp_wgmma.sm90a.cu), Hopper only: the tile
 * kernel's plan with warpgroups issuing wgmma.mma_async.sp m64nNk32 on the
 * same format, B read by the tensor cores from the stage.
 *
 * The TMA kernel (kernels/sp_tma.sm90a.cu), Hopper only, 2:4: a producer
 * thread has the copy engine stage B, two consumer warpgroups load A into
 * registers and issue wgmma.mma_async.sp, one group in flight; operands
 * the copy engine cannot take run the wgmma kernel of the same shape. Where
 * the row and column blocks are too few for the SMs, a cluster of 2 or 4
 * blocks splits K and adds its sums in the first block's shared memory.
 *
 * The column-vector kernel (kernels/sp_colvec.cu), the one for column
 * vectors (sp_colvec.h) at every N: the stream kernel's plan (a tile of 16
 * rows and 8·nb columns a block, the warps splitting its windows of 16 / l
 * steps, a ring of stages a warp) issuing dense mma.m16n8k16 on the
 * gathered rows of B.
 *
 * Both apply the epilogue (+ bias[row], ReLU, the dtype, C's layout by its
 * strides). No workspace and no atomics: every row's sums are added in
 * one block, in a fixed order, so results do not change from run to run
 * and launches of one plan may run on several streams at once. */
#ifndef SPF_STRATEGY_STRUCTURED_SP_KERNEL_H
#define SPF_STRATEGY_STRUCTURED_SP_KERNEL_H

#include "plan/problem.h"
#include "spforge.h"
#include "strategy/structured/sp_format.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sp_kernel_kind {
    SP_STREAM = 0,
    SP_TILE = 1,
    SP_WGMMA = 2,
    SP_COLVEC = 3, /* column vectors only; the others take 2:4 and V:2:M */
    SP_TMA = 4     /* 2:4 only */
} sp_kernel_kind;

/* A kernel configuration; nb, rt, bm and bn are template parameters. */
typedef struct sp_config {
    sp_kernel_kind kind;
    /* SP_STREAM and SP_COLVEC */
    int nb;    /* 8-column blocks of B and C per block: 1, 2, 4 or 8      */
    int rt;    /* row tiles of 16 per block: 1, 2 or 4 (4: nb ≤ 4; ≤ V / 16
                  for V:2:M); SP_COLVEC 1                                 */
    int warps; /* warps per block, splitting K: 1 to 16 (8 for nb ≥ 4)    */
    /* all */
    int stages; /* step pairs in flight + 1: stream 2 to 5 (a ring a warp),
                   tile and wgmma 2 to 4 (a ring a block); TMA: the ring's
                   stages, 2 to SP_TMA_STAGES_MAX                            */
    /* SP_TILE, SP_WGMMA and SP_TMA */
    int bm;     /* rows per block: tile 32, 64 or 128; wgmma 64, 128 or 256
                   (dividing V for V:2:M); TMA 128 or 256                   */
    int bn;     /* columns per block: tile 64 or 128; wgmma 64, 128 or 256;
                   TMA 64 (at bm 128), 128 or 256                           */
    /* SP_TMA */
    int a_staged; /* A by the copy engine through the stage (1), or loaded
                     by each warp straight into registers (0)               */
    int split_k;  /* K split over a cluster of 2 or 4 blocks, their sums
                     added in the first block's shared memory; 0: not split */
} sp_config;

/* A tile- or wgmma-kernel stage: per row tile the A fragments and the
 * metadata of a step pair, then 64 rows of B of bn columns (the tile
 * kernel's [k][bn + 8] or [bn][72] elements of 2 bytes, at most bn · 144
 * bytes; the wgmma kernel's core matrices, bn · 128). */
#define SP_TILE_A_BYTES 1024
#define SP_TILE_META_BYTES 128
#define SP_TILE_STAGE_BYTES(bm, bn) \
    ((bm) / 16 * (SP_TILE_A_BYTES + SP_TILE_META_BYTES) + (bn) * 144)
/* A stream-kernel stage: the rt tiles' A and metadata, 64 rows of 8·nb
 * columns of B. */
#define SP_STREAM_STAGE_BYTES(nb, rt) ((rt) * (SP_TILE_A_BYTES + SP_TILE_META_BYTES) + 1024 * (nb))
/* A column-vector stage: a window's values (512 bytes), its 256 / l rows
 * (at most 64) of 8·nb columns of B. */
#define SP_COLVEC_STAGE_BYTES(nb) (512 + 1024 * (nb))
/* A TMA-kernel stage: SP_TMA_PAIRS(bm) step pairs of B, 64 rows of bn
 * columns each, and with A staged the pairs' fragments and metadata of
 * the block's row tiles; the epilogue's tile of C, bm rows of bn + 8
 * elements of 2 bytes, reuses the ring. The ring is aligned to 1024 bytes
 * (the swizzle's atoms), which may take up to 1024 more. */
#define SP_TMA_PAIRS(bm) ((bm) == 128 ? 2 : 1)
#define SP_TMA_STAGE_BYTES(bm, bn, a_staged)                                                    \
    (SP_TMA_PAIRS(bm) * ((bn) * 128 +                                                          \
                         ((a_staged) ? (bm) / 16 * (SP_TILE_A_BYTES + SP_TILE_META_BYTES) : 0)))
#define SP_TMA_EPILOGUE_BYTES(bm, bn) ((bm) * ((bn) + 8) * 2)
/* Split K: the first block of a cluster receives the other blocks' fp32
 * sums, bm × bn each, past its ring and tile of C. */
#define SP_TMA_SPLIT_BYTES(bm, bn, split_k) ((split_k) > 1 ? ((split_k) - 1) * (bm) * (bn) * 4 : 0)
#define SP_TMA_STAGES_MAX 8
/* Dynamic shared memory a block may have on Hopper (227 KB). */
#define SP_MAX_SMEM 232448

/* The format on the device. */
typedef struct sp_device {
    int64_t rows, cols, tiles, pairs;
    spf_dtype dtype;
    sp_pattern pattern;
    uint32_t *values, *meta;
    int32_t *gather;   /* NULL for 2:4 */
    int32_t *step_ptr; /* column vectors (sp_format.h) */
    int32_t *row_map;  /* column vectors permuted; NULL otherwise */
    int64_t bytes;     /* device bytes held */
} sp_device;

spf_status sp_device_upload(const sp_format *f, sp_device *out);
void sp_device_release(sp_device *d);

/* The narrowest nb whose 8·nb columns hold min(n, 64). */
int sp_nb_for(int64_t n);
/* The narrowest nb of the tuning space at N = n: sp_nb_for(n), past N = 32
 * half of it. */
int sp_stream_nb_min(int64_t n);

/* The block shapes {bm, bn} of the tile and wgmma kernels, the likeliest
 * first (the kernels instantiate exactly these). */
#define SP_TILE_SHAPES 3
#define SP_WGMMA_SHAPES 4
#define SP_TMA_SHAPES 4
extern const int sp_tile_shapes[SP_TILE_SHAPES][2];
extern const int sp_wgmma_shapes[SP_WGMMA_SHAPES][2];
extern const int sp_tma_shapes[SP_TMA_SHAPES][2];

/* The tuning space at N = n on pattern p (STuning-DL §IV-B: each
 * kernel's template parameters, pruned by what the pattern, the registers
 * and the shared memory allow): the stream kernel at n ≤ 128 (nb from
 * sp_stream_nb_min(n) to 8 × rt 1, 2, 4 × warps 2 to 16 × stages 2 to 5),
 * from n = 16 the tile kernel's shapes × stages 2 to 4, and on Hopper
 * (hopper: compute capability 9.0) the wgmma kernel's and, from n = 64 on
 * 2:4, the TMA kernel's shapes × stages 3, 4 and 6 × A staged or not × K
 * split over 1, 2 or 4 blocks (m128 n64 and n128, as the shared memory
 * allows); for column vectors
 * the column-vector kernel's nb from sp_stream_nb_min(n) to sp_nb_for(n) ×
 * warps 2 to 16 × stages 2 to 5, at every n. Returns how many;
 * at most cap are written (SP_SPACE_MAX holds any). The strategy times
 * the predictor's first few of them (sp_predict.h). */
#define SP_SPACE_MAX 192
int sp_tuning_space(int64_t n, const sp_pattern *p, int hopper, sp_config *out, int cap);
/* Whether config c is in that space (a cached plan's config). */
int sp_config_in_space(const sp_config *c, int64_t n, const sp_pattern *p, int hopper);

/* Why config c cannot run on pattern p (NULL when it can). */
const char *sp_config_refusal(const sp_config *c, const sp_pattern *p);

/* Dynamic shared memory of a block of c, bytes: the stages (the stream
 * kernel's warps' sums reuse them). */
size_t sp_config_smem(const sp_config *c);

/* Threads of a block of c. */
int sp_config_threads(const sp_config *c);

/* "nb2_rt2_w8_s3" (stream), "m64n64s3" (tile), "wm128n256s3" (wgmma),
 * "tm128n256s3", "tm128n128s4a" or "tm128n64s4k4" (TMA; a: A staged, k2 / k4: K
 * split) or "cv_nb2_w8_s3"
 * (column vectors), for plan info, logs and the cache. */
void sp_config_name(const sp_config *c, char *buf, size_t size);
/* The config a name names, one this build runs (sp_config_refusal). */
spf_status sp_config_from_name(const char *name, sp_config *out);
/* The config a name names, by its grammar alone: tuning logs hold configs
 * of shapes no longer built (bench/results/kernel-budget/). */
spf_status sp_config_parse(const char *name, sp_config *out);

/* Blocks of c an SM holds (registers, shared memory), 0 when it cannot
 * launch; needs a device. */
spf_status sp_config_occupancy(const sp_config *c, const sp_device *d, int *blocks);

/* C = A·B (+ bias[row]) (ReLU) with op's B and C (plan/problem.h) in the
 * format's dtype. No allocation, no synchronization. */
spf_status sp_launch(const sp_device *d, const sp_config *c, const spmm_operands *op,
                     void *stream);

/* The kernels' own occupancy queries and launches (sp_launch's). */
spf_status sp_stream_occupancy(const sp_config *c, const sp_device *d, int *blocks);
spf_status sp_stream_launch(const sp_device *d, const sp_config *c, const spmm_operands *op,
                            void *stream);
spf_status sp_tile_occupancy(const sp_config *c, const sp_device *d, int *blocks);
spf_status sp_tile_launch(const sp_device *d, const sp_config *c, const spmm_operands *op,
                          void *stream);
spf_status sp_wgmma_occupancy(const sp_config *c, const sp_device *d, int *blocks);
spf_status sp_wgmma_launch(const sp_device *d, const sp_config *c, const spmm_operands *op,
                           void *stream);
spf_status sp_tma_occupancy(const sp_config *c, const sp_device *d, int *blocks);
spf_status sp_tma_launch(const sp_device *d, const sp_config *c, const spmm_operands *op,
                         void *stream);
spf_status sp_colvec_occupancy(const sp_config *c, const sp_device *d, int *blocks);
spf_status sp_colvec_launch(const sp_device *d, const sp_config *c, const spmm_operands *op,
                            void *stream);

#ifdef __cplusplus
}
#endif

#endif
