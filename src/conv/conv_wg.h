/* The warpgroup conv kernel (kernels/conv_wg_*.sm90a.cu, Hopper only): an
 * implicit GEMM over the weights expanded dense, for batches where the
 * tensor cores' throughput, not the chain of one block's steps, sets the
 * time (bench/results/conv/README.md: at batch 32 the IMPLICIT path's TC
 * kernel, which expands the weights again for every few positions and
 * issues mma.sync, runs at about 75 TFLOPS; cuDNN at 310-460).
 *
 * The input is read once, not once a tap. A block takes CONV_WG_BM output
 * channels and `rows` output rows of one image, or, where a whole image
 * leaves room, `images` whole images. For each 64 input channels (a
 * chunk), the copy engine brings
 *   - B (stride 1): the input rows under those output rows with their
 *     halo, the whole padded width (`wp` = W + 2·pad pixels, outside read
 *     as zeros), as one box: image m's halo row y, pixel x at stage row
 *     (m·halo + y)·wp + x, 64 channels (128 bytes) a row, 128-byte
 *     swizzled;
 *   - A: the weights of each tap (r, s) for these channels, a 64 × 64 box
 *     of the dense weights (K × R·S·C, columns in (r, s, c) order), also
 *     128-byte swizzled.
 * Positions are counted over the padded width (and height, between
 * images): position (m·halo + i)·wp + j is output row i of the block's
 * image m, column j, and only i < rows, j < Q are stored. Then tap (r, s)
 * of it reads stage row (m·halo + i + r)·wp + j + s: the same stage, rows
 * r·wp + s later. So each tap is one wgmma operand B
 * over the stage from a later start (bn positions, K-major, the
 * 128-byte swizzle), and the 9 taps of a 3×3 convolution share one copy
 * of the input. Columns j ≥ Q read past their row or past the box into
 * slack rows: their sums are never stored (2 of every wp at a 3×3
 * convolution: 3 % on layer1, 22 % on layer4).
 *
 * One warpgroup of 128 threads: thread 0 issues the copies (`stages`
 * chunks in flight, each completing on its mbarrier), all four warps
 * issue wgmma.mma_async m64nBNk16 (fp32 accumulators in registers) over
 * every tap and 16 channels of a chunk, and the epilogue goes through
 * shared memory: sums plus bias, then the residual, ReLU and 16-byte
 * stores of the valid positions.
 *
 * Every block loads its channels' weights for all taps: at batch 32 that
 * is most of the bytes a block reads (ResNet-50's layer1 at 256 positions
 * a block: 33 MB of weights against 20 MB of input). Where the weights of
 * every chunk fit beside two input stages (`resident`: layer1 at 128
 * positions, 72 KB), a block loads them once and walks position tiles
 * (grid.x at most the blocks the GPU holds at once), the next tile's input
 * coming while this one's is multiplied and stored.
 *
 * Split (conv_wg_split, batch 1): a tile's chunks over the blocks of a
 * cluster, their sums added through distributed shared memory.
 *
 * Sparse (CONV_WG_SPARSE): the weights' 2:4 part multiplied by the sparse
 * tensor cores (wgmma.mma_async.sp m64nBNk32: half the instructions' work
 * and 0.56 of the dense weights' bytes, the metadata included), the rest,
 * the strays, on the CUDA cores. Each stage brings the chunk's 2:4 part
 * in the register order of the sparse operand (strategy/structured/
 * sp_format.h, one 16-byte load a lane a k32 step), rearranged so that a
 * chunk's taps are one contiguous block of one bulk copy:
 *   block (mb, ch) = K-rows 64·mb.., channels 64·ch.. of every tap:
 *     values: tap t, warp w (rows 16·w..), step h (channels 32·h..),
 *             lane: 16 bytes at ((t·4 + w)·2 + h)·512 + 16·lane;
 *     meta:   tap t, warp w, lane: 4 bytes at taps·4096 + (t·4 + w)·128
 *             + 4·lane.
 * A stray of output channel 64·mb + m, tap t, channel 64·ch + c adds
 * v · B[position + shift(t)][c] to the block's sums for every position,
 * read from the same stage by two more warpgroups (CONV_WG_SP_THREADS)
 * while the first issues the chunk's wgmma and waits for them (each
 * thread its own positions, so no two write one sum), into the epilogue's sums
 * buffer, which the epilogue then adds to. At 0.9 the strays of
 * ResNet-50's 3×3 weights are 1.3 % of the nonzeros
 * (bench/results/conv/rn50-24-strays-cpu.txt): about 47 a chunk of a
 * block.
 *
 * Stride 1 (as above) or 2 (a box of each of the input's parity planes,
 * conv_wg_row), C and K multiples of 64, NHWC, fp16 or bf16; everything else
 * is refused with a reason. The functions below are shared by the kernel
 * and the host (tests/unit/test_conv_wg.c replays the stage's rows). */
#ifndef SPF_CONV_CONV_WG_H
#define SPF_CONV_CONV_WG_H

#include "conv/conv_gather.h"
#include "spforge.h"

#include <stddef.h>
#include <stdint.h>

enum {
    CONV_WG_BM = 64,         /* output channels a block: one m64 wgmma          */
    CONV_WG_CHUNK = 64,      /* input channels a stage: 128-byte rows           */
    CONV_WG_THREADS = 128,   /* one warpgroup                                    */
    CONV_WG_SP_THREADS = 384, /* sparse: two more warpgroups for the strays       */
    CONV_WG_STRAY_THREADS = CONV_WG_SP_THREADS - CONV_WG_THREADS,
    CONV_WG_ALIGN = 1024,    /* the 128-byte swizzle's atom: 8 rows              */
    CONV_WG_ROW = 128,       /* bytes of a stage row: 64 two-byte elements        */
    CONV_WG_A_TAP = CONV_WG_BM * CONV_WG_ROW, /* bytes of a tap's weights box    */
    CONV_WG_SP_VALUES = 4 * 2 * 32 * 16, /* sparse: a tap's values, 4 warps     */
    CONV_WG_SP_META = 4 * 32 * 4,        /* sparse: a tap's metadata words      */
    CONV_WG_SMEM = 227 * 1024, /* a block's shared memory at most (sm_90)         */
    CONV_WG_SM_SMEM = 228 * 1024 /* an SM's, 1 KB of it reserved a block          */
};

/* How a block has the weights. */
typedef enum conv_wg_weights {
    CONV_WG_STAGED = 0,   /* dense, each chunk's with its input stage           */
    CONV_WG_RESIDENT = 1, /* dense, every chunk's in shared memory at once       */
    CONV_WG_SPARSE = 2    /* 2:4 with each input stage (wgmma.sp), strays apart  */
} conv_wg_weights;

/* Everything the kernel's index arithmetic needs. */
typedef struct conv_wg_geom {
    int32_t n, c, h, w, r, s, pad, p, q, k; /* the convolution                          */
    int32_t stride;             /* 1 or 2: at 2 the stage holds the input's parity
                                   planes (conv_wg_planes)                          */
    int32_t bn;                 /* wgmma's N: the tile's positions, to a multiple
                                   of 8 (at most the 32 to 256 asked for)          */
    int32_t wp;                 /* a box's width: Q + (S − 1) / stride, at stride 1
                                   the padded width W + 2·pad                       */
    int32_t rows;               /* output rows of an image a block                  */
    int32_t halo;               /* a box's rows an image: rows + (R − 1) / stride   */
    int32_t images;             /* images a block: 1, or more where rows = P and
                                   ((images − 1)·halo + rows)·wp ≤ bn, evened
                                   over the batch                                  */
    int32_t stage_rows;         /* B rows a stage: conv_wg_planes planes, each the
                                   last tap's reach past bn in whole 8-row atoms    */
    int32_t stages;             /* chunks in flight: 1 or 2 (resident: 2; 1 also
                                   where it fits two blocks an SM,
                                   conv_wg_one_stage)                               */
    int32_t chunks;             /* C / 64                                            */
    int32_t row_tiles;          /* ⌈P / rows⌉: tiles along an image (1 where
                                   images > 1)                                     */
    int32_t tiles;              /* position tiles: ⌈n / images⌉ · row_tiles          */
    int32_t weights;            /* conv_wg_weights; RESIDENT: a block walks
                                   position tiles                                  */
    int32_t splits;             /* blocks a tile's chunks are split over, a
                                   cluster (conv_wg_split): 1 (none), 2, 4 or 8    */
} conv_wg_geom;

/* Stride 2: output pixel (i, j)'s tap (r, s) reads input pixel (2i + r −
 * pad, 2j + s − pad), which is pixel (i + r / 2, j + s / 2) of the parity
 * plane (r mod 2, s mod 2): the input's pixels (2y + r mod 2 − pad,
 * 2x + s mod 2 − pad). So the stage holds a box of each plane the taps
 * read, each brought by the copy engine stepping 2 pixels and 2 rows
 * (cuTensorMapEncodeTiled's elementStrides; conv_wg_launch), and each tap
 * is again one operand from a later start, in its plane. Planes along a
 * row: min(S, stride); in all: that times min(R, stride) (a 1×1 reads
 * one, a 3×3 four). At stride 1, one plane: the input. Shifts, not
 * divisions, for the stride (the kernel computes a tap's row between its
 * wgmma). */
CONV_HD int32_t conv_wg_stride_shift(const conv_wg_geom *g)
{
    return g->stride >> 1;
}
CONV_HD int32_t conv_wg_planes_w(const conv_wg_geom *g)
{
    return g->s < g->stride ? g->s : g->stride;
}
CONV_HD int32_t conv_wg_planes(const conv_wg_geom *g)
{
    return (g->r < g->stride ? g->r : g->stride) * conv_wg_planes_w(g);
}
/* B rows of one plane in a stage: stage_rows / planes (1, 2 or 4). */
CONV_HD int32_t conv_wg_plane_rows(const conv_wg_geom *g)
{
    const int32_t planes = conv_wg_planes(g);
    return g->stage_rows >> ((planes > 1) + (planes > 2));
}

/* The stage row tap (r, s) of position 0 reads, given plane_rows
 * (conv_wg_plane_rows): its plane's first row plus the tap's rows and
 * pixels into the plane. The kernel takes plane_rows before its wgmma:
 * computed between them, ptxas serialized them (C7520). */
CONV_HD int32_t conv_wg_tap_row(const conv_wg_geom *g, int32_t plane_rows, int32_t r, int32_t s)
{
    const int32_t sh = conv_wg_stride_shift(g);
    const int32_t plane = (r & sh) * conv_wg_planes_w(g) + (s & sh);
    return plane * plane_rows + (r >> sh) * g->wp + (s >> sh);
}

/* The stage row tap (r, s) of position `pos` (counted over the box's
 * width and height) reads. */
CONV_HD int32_t conv_wg_row(const conv_wg_geom *g, int32_t pos, int32_t r, int32_t s)
{
    return pos + conv_wg_tap_row(g, conv_wg_plane_rows(g), r, s);
}

/* The wgmma N the warpgroup kernels are built for, X(n) each, the kernel
 * budget (bench/results/kernel-budget/): every N that ResNet-50's tilings
 * give at batch 1 to 64 (32, 56, 64, 104-120, 144, 200-248), the narrow 8
 * and 24, and a grid (48, 96, 128, 160, 192, 256) that other tiles round up
 * to, instead of every multiple of 8 (186 kernels, a third of the
 * library's build). Not 16: ptxas (CUDA 13.0) serializes the wgmma of the
 * staged kernel at N = 16, and of no other N (info C7520: "compiler-
 * inserted WG.AR in divergent path"). */
#define CONV_WG_MMA_NS(X) \
    X(8) X(24) X(32) X(48) X(56) X(64) X(96) X(104) X(112) X(120) X(128) X(144) X(160) X(192) \
    X(200) X(208) X(216) X(224) X(232) X(248) X(256)
#define CONV_WG_N_SERIALIZED 16

/* wgmma's N for a tile of `positions` (at most 256): the narrowest built. */
CONV_HD int32_t conv_wg_mma_n(int32_t positions)
{
#define CONV_WG_N_UP(n) \
    if (positions <= n) \
        return n;
    CONV_WG_MMA_NS(CONV_WG_N_UP)
#undef CONV_WG_N_UP
    return 0;
}

/* Bytes of one chunk's weights (all taps) as a stage holds them: dense
 * boxes, or the sparse block (values, then metadata; a whole number of
 * swizzle atoms, so that the next stage's input rows start on one). */
CONV_HD size_t conv_wg_chunk_weights(const conv_wg_geom *g)
{
    const size_t taps = (size_t)g->r * g->s;
    if (g->weights == CONV_WG_SPARSE)
        return (taps * (CONV_WG_SP_VALUES + CONV_WG_SP_META) + CONV_WG_ALIGN - 1) /
               CONV_WG_ALIGN * CONV_WG_ALIGN;
    return taps * CONV_WG_A_TAP;
}

/* Bytes of a sparse block's data (its bulk copy). */
CONV_HD size_t conv_wg_sparse_block(const conv_wg_geom *g)
{
    return (size_t)g->r * g->s * (CONV_WG_SP_VALUES + CONV_WG_SP_META);
}

/* Bytes of one stage: B's rows, and the chunk's weights unless they are
 * resident; each part a whole number of swizzle atoms. */
CONV_HD size_t conv_wg_stage_bytes(const conv_wg_geom *g)
{
    return (size_t)g->stage_rows * CONV_WG_ROW +
           (g->weights == CONV_WG_RESIDENT ? 0 : conv_wg_chunk_weights(g));
}

/* Floats of one position's row of the epilogue's sums: the BM channels
 * and a pad. Sparse, one more: the strays' threads each read and write
 * their own position's row, and the pad keeps a warp's 32 rows on
 * distinct banks. Dense, four more: the store reads a row's channels 16
 * bytes at a time (8 scalar loads an output each took a fifth of the
 * dense kernel's samples, ncu at 98023aa), and the accumulators' writes,
 * rows 2·(lane mod 4) apart and channels lane / 4, still fall on 32
 * distinct banks. */
enum { CONV_WG_SUMS_ROW = CONV_WG_BM + 4, CONV_WG_SP_SUMS_ROW = CONV_WG_BM + 1 };
CONV_HD int32_t conv_wg_sums_row(const conv_wg_geom *g)
{
    return g->weights == CONV_WG_SPARSE ? CONV_WG_SP_SUMS_ROW : CONV_WG_SUMS_ROW;
}

/* Split over a cluster (conv_wg_split), the positions a block stores:
 * runs of CONV_WG_PASS (the positions the store takes at once), run u
 * block u mod splits's; and the rows its sums hold for them from each
 * block of the cluster (a slot a block): its share of the runs. */
enum { CONV_WG_PASS = CONV_WG_THREADS / 8 };

/* log2 of g's splits (a power of two to 8), without dividing: a division
 * by a run-time value is some twenty instructions, and the kernel's
 * setup took three before (ptxas at ee81568), one its own. */
CONV_HD int32_t conv_wg_split_shift(const conv_wg_geom *g)
{
    return (g->splits > 1) + (g->splits > 2) + (g->splits > 4);
}
CONV_HD int32_t conv_wg_share_rows(const conv_wg_geom *g)
{
    const int32_t runs = (g->bn + CONV_WG_PASS - 1) / CONV_WG_PASS;
    return ((runs + g->splits - 1) >> conv_wg_split_shift(g)) * CONV_WG_PASS;
}

/* Split, floats of one slot: its share's rows. */
CONV_HD int32_t conv_wg_slot_floats(const conv_wg_geom *g)
{
    return conv_wg_share_rows(g) * conv_wg_sums_row(g);
}

/* Bytes of the epilogue's sums: bn positions' rows; split, a slot for each
 * block of the cluster twice: the slots it receives (by sender), then
 * those it sends (by receiver; wg_split_send). */
CONV_HD size_t conv_wg_sums_bytes(const conv_wg_geom *g)
{
    if (g->splits > 1)
        return 2 * (size_t)g->splits * conv_wg_slot_floats(g) * 4;
    return (size_t)g->bn * conv_wg_sums_row(g) * 4;
}

/* Where the sparse kernel's wgmma warpgroup writes its sums (plus bias)
 * apart from the strays' sums, while the strays finish the last chunk:
 * the stage of chunk chunks − 2, free once the strays are past it (no
 * copy refills it), where there are two stages and one holds the sums.
 * Adding its sums to the strays' after they were done instead kept every
 * thread waiting on a pass through shared memory (ncu at 4bb890f: the
 * wgmma warps waited half their time for the strays, then the strays'
 * warps for that pass, about a tenth of the kernel). */
CONV_HD int conv_wg_sums_in_stage(const conv_wg_geom *g)
{
    return g->weights == CONV_WG_SPARSE && g->stages == 2 && g->chunks >= 2 &&
           conv_wg_stage_bytes(g) >= conv_wg_sums_bytes(g);
}

/* Bytes before the mbarriers: the stages, which the sums reuse; resident,
 * every chunk's weights, then the stages, then the sums (the next tile's
 * input arrives while they are stored); sparse, the stages, then the sums
 * (the strays add to them while the stages turn); split, the same (the
 * other blocks write theirs while the stages may still be read). */
CONV_HD size_t conv_wg_body_bytes(const conv_wg_geom *g)
{
    const size_t stages = (size_t)g->stages * conv_wg_stage_bytes(g), sums = conv_wg_sums_bytes(g);
    if (g->weights == CONV_WG_RESIDENT)
        return (size_t)g->chunks * conv_wg_chunk_weights(g) + stages + sums;
    if (g->weights == CONV_WG_SPARSE || g->splits > 1)
        return stages + sums;
    return stages > sums ? stages : sums;
}

/* Bytes of dynamic shared memory of a block: the alignment slack, the
 * body and three mbarriers (two stages', and the resident weights' or,
 * split, the received sums'). */
CONV_HD size_t conv_wg_smem(const conv_wg_geom *g)
{
    return CONV_WG_ALIGN + conv_wg_body_bytes(g) + 3 * 8;
}

#ifdef __cplusplus
extern "C" {
#endif

/* The positions a block the planner asks for: 32 (more blocks at batch 1:
 * layer2 and layer3 of ResNet-50 fill 28 SMs at 64), 64, 128 and 256. */
enum { CONV_WG_WIDTHS = 4 };
static const int32_t conv_wg_widths[CONV_WG_WIDTHS] = {32, 64, 128, 256};

/* The geometry of a convolution g (NHWC, stride 1) with k output channels
 * at most `bn` positions a block (32, 64, 128 or 256), the weights as
 * `weights` (conv_wg_weights) says: the fewest tiles along an image, their
 * rows evened out, and the most whole images where one fits, evened over
 * the batch; wgmma's N the tile's positions to a multiple of 8; two stages
 * where shared memory holds them. 0 with a reason when the kernel cannot
 * take it. */
int conv_wg_geometry(const conv_gather *g, int32_t k, int32_t bn, conv_wg_weights weights,
                     conv_wg_geom *out, char *reason, size_t cap);

/* g (staged dense, two stages) with one stage where that lets an SM hold
 * two blocks and two stages let it hold one: *out and 1, else 0 (the
 * registers never stop it: 128 threads of at most 255 are 32 K, half an
 * SM's). One
 * block's epilogue, setup and first wait then run beside the other's
 * wgmma (layer1 at batch 32, one chunk so one stage, was the first layer
 * our kernel won: 22.2 µs against cuDNN's 23.9, c94e5cf). */
int conv_wg_one_stage(const conv_wg_geom *g, conv_wg_geom *out);

/* g (staged dense) with its chunks split over `splits` blocks (2, 4 or
 * CONV_WG_MAX_SPLITS, dividing the chunks), a thread-block cluster along
 * grid z: *out and 1, else 0 (also where shared memory cannot hold it).
 * For grids that leave SMs idle (batch 1): a block brings every tap's
 * weights of its 64 output channels for each chunk, 72 KB at a 3×3, and
 * on one SM that load is the tile's time (layer3 at batch 1: 4 chunks,
 * 290 KB a block on 28 blocks, 6.1 µs in graphs at fbb3b99). Split, each
 * block multiplies chunks/splits of them and sends its sums (rank 0's
 * with the bias) to the block that stores each position
 * (conv_wg_share_rows): a bulk copy into each other block's shared
 * memory, completing on its mbarrier (kernels/conv_wg_device.cuh,
 * wg_split_send). Each block then adds its slots in rank order (the same
 * sums every run) and stores its share. Stages: at most the block's
 * chunks. */
enum { CONV_WG_MAX_SPLITS = 8 }; /* a cluster's portable size */
int conv_wg_split(const conv_wg_geom *g, int32_t splits, conv_wg_geom *out);

/* Whether g's weights and chunks take `splits` (the kernel's rules, which
 * conv_wg_split and conv_wg_create both check): staged dense, a power of
 * two from 2 to CONV_WG_MAX_SPLITS, dividing the chunks. */
CONV_HD int conv_wg_splits_ok(const conv_wg_geom *g, int32_t splits)
{
    return g->weights == CONV_WG_STAGED && splits >= 2 && splits <= CONV_WG_MAX_SPLITS &&
           (splits & (splits - 1)) == 0 && g->chunks % splits == 0;
}

/* The splits the planner times, where the grid unsplit leaves SMs idle
 * (conv_implicit.c). */
enum { CONV_WG_SPLIT_CHOICES = 3 };
static const int32_t conv_wg_splits[CONV_WG_SPLIT_CHOICES] = {2, 4, 8};

/* The config: "bn256_r7_i3_s2" (positions, output rows, images and stages
 * of a block; "_w" where the weights are resident, "_sp" sparse; "_z4"
 * split over 4 blocks); the kernel: "convwg_f16_" and the config's name. */
void conv_wg_config_name(const conv_wg_geom *g, char *buf, size_t size);
void conv_wg_name(const conv_wg_geom *g, spf_dtype dtype, char *buf, size_t size);

/* Taps the sparse kernel takes: a chunk's A fragments of every tap are in
 * registers at once (3×3 at most). */
enum { CONV_WG_SP_MAX_TAPS = 9 };

/* A stray of the sparse weights (CONV_WG_SPARSE): its place in its block
 * as the kernel uses it, and its value's float bits. The key: bits 0-18
 * (CONV_WG_STRAY_AT) the stray's byte in an unswizzled stage as position
 * 0 reads it, shift · 128 + 2c for channel c < 64 and its tap's stage row
 * shift conv_wg_row(g, 0, r, s) (below 2^12: at most 9 taps and 256
 * pixels a padded row); bits 19-24 the output channel m < 64; bit 31
 * CONV_WG_STRAY_MORE (below). So a thread's byte is its own row's start
 * plus the key's low bits, then the 128-byte swizzle: four instructions
 * from key to load. The fields apart (m, c, shift, 4bb890f) took ten, and
 * the tap's division by S before (fd19ffa, f29113b) made a stray about
 * 600 cycles with one warp a scheduler. */
#define CONV_WG_STRAY_AT 0x7ffffu
CONV_HD uint32_t conv_wg_stray_key(int32_t m, int32_t c, int32_t shift)
{
    return (uint32_t)(shift * CONV_WG_ROW + 2 * c) | (uint32_t)m << 19;
}
CONV_HD int32_t conv_wg_stray_m(uint32_t key)
{
    return (int32_t)(key >> 19 & 63);
}

/* The 128-byte swizzle of byte `at` from a 1024-byte aligned start: its
 * 16-byte piece of a row XOR the row mod 8 (the copy engine's and
 * wgmma's CU_TENSOR_MAP_SWIZZLE_128B). */
CONV_HD uint32_t conv_wg_swizzle(uint32_t at)
{
    return at ^ (at >> 3 & 0x70);
}

/* A block's strays come by output channel in groups of this many entries,
 * zero-valued ones filling its last group out: a thread reads a group's
 * inputs and its channels' sums (each once more for each repeat), then
 * writes each channel's sum once, at the last entry of the channel's run
 * in the group, the entries before it marked CONV_WG_STRAY_MORE. So a
 * group's reads are independent of its writes: summed one by one, each
 * stray's read of its sum waited for the write of the one before (shared
 * memory the compiler could not tell apart from the input's), ~260 cycles
 * a stray with one warp a scheduler (612ba93). Groups of distinct output
 * channels instead (47494d1-4060fd5) needed as many groups as a block's
 * busiest channel has strays: 5-30 % fill on ResNet-50 at 0.9. */
enum { CONV_WG_STRAY_GROUP = 8 };
#define CONV_WG_STRAY_MORE 0x80000000u /* key: the next entry adds to the same sum */

/* The sparse weights as the kernel reads them, built on the host:
 * blocks[b · conv_wg_sparse_block] the block (mb, ch) of b = mb · chunks +
 * ch (the layout above), and its strays' groups strays[2i] (key) and
 * strays[2i + 1] (value's bits) for i from stray_ptr[b] to
 * stray_ptr[b + 1] (a multiple of CONV_WG_STRAY_GROUP). */
typedef struct conv_wg_sparse {
    uint8_t *blocks;
    int64_t block_count;
    int32_t *stray_ptr;    /* block_count + 1 */
    uint32_t *strays;      /* 2 · stray_entries */
    int64_t stray_count;   /* the strays */
    int64_t stray_entries; /* with the groups' fill */
} conv_wg_sparse;

/* w (k × C·R·S, columns in (r, s, c) order) as g's sparse blocks and
 * strays, the values rounded to dtype (f16 or bf16): in each run of four
 * columns the two largest in magnitude to the 2:4 part, the rest strays
 * (sp_pattern_strays). *out zeroed first, owns its arrays.
 * SPF_ERR_UNSUPPORTED past 2^31 stray entries. */
spf_status conv_wg_sparse_pack(const spf_matrix *w, const conv_wg_geom *g, spf_dtype dtype,
                               conv_wg_sparse *out);
void conv_wg_sparse_free(conv_wg_sparse *s); /* accepts a zeroed one */

/* On the device the sparse weights are one buffer, so that the kernel's
 * arguments gain one pointer, not three: past 128 bytes of them ptxas
 * serializes the staged dense kernel's wgmma (C7520; its single fence
 * alone did not, at 79548a6), which took layer3 at batch 32 from 20.0 µs
 * to 27.6 (fd19ffa). The blocks, then stray_ptr (block count + 1 int32),
 * then the strays (8 bytes each) from a 16-byte boundary (a thread loads
 * half a group at once). */
CONV_HD int64_t conv_wg_sparse_blocks(const conv_wg_geom *g)
{
    return (int64_t)(g->k / CONV_WG_BM) * g->chunks;
}
CONV_HD size_t conv_wg_stray_ptr_at(const conv_wg_geom *g)
{
    return (size_t)conv_wg_sparse_blocks(g) * conv_wg_sparse_block(g);
}
CONV_HD size_t conv_wg_strays_at(const conv_wg_geom *g)
{
    return (conv_wg_stray_ptr_at(g) + 4 * ((size_t)conv_wg_sparse_blocks(g) + 1) + 15) / 16 * 16;
}

/* sp as that one buffer (*out, mem_free; *bytes long). */
spf_status conv_wg_sparse_flatten(const conv_wg_sparse *sp, const conv_wg_geom *g, uint8_t **out,
                                  size_t *bytes);

/* The weights on the current device (dense in (r, s, c) column order and
 * their tensor map, or the sparse blocks and strays). */
typedef struct conv_wg conv_wg;

/* w: k × C·R·S, columns in (r, s, c) order, values rounded to dtype (f16
 * or bf16). SPF_ERR_UNSUPPORTED on a device older than 9.0 or where the
 * copy engine cannot take the weights; *out NULL on failure. */
spf_status conv_wg_create(const spf_matrix *w, const conv_wg_geom *g, spf_dtype dtype, int relu,
                          conv_wg **out);
void conv_wg_free(conv_wg *x); /* accepts NULL */

/* Bytes of device memory x holds, and its geometry. */
int64_t conv_wg_bytes(const conv_wg *x);
const conv_wg_geom *conv_wg_geometry_of(const conv_wg *x);

/* out = W ⊛ in (+ bias[k]) (+ residual) (ReLU), NHWC tensors of the dtype
 * (bias float32 or NULL, residual NULL or output-shaped), on stream.
 * A tap's B descriptor starts inside a swizzle atom with the matrix base
 * offset field 0: the PTX ISA ("Matrix Descriptor Format") asks for one
 * only where the swizzle's pattern does not start on a 1024-byte boundary,
 * and the copy engine wrote it from the stage's aligned start (on the H200
 * at 79548a6 the field set from the start's row was wrong on 172 of 440
 * launches, 0 left it right on all). */
spf_status conv_wg_launch(const conv_wg *x, const void *in, void *out, const float *bias,
                          const void *residual, void *stream);

#ifdef __cplusplus
}
#endif

#endif
