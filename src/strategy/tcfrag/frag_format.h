/* The fragment-stream format of the tcfrag strategy: pruned weights for
 * tensor cores at small N, laid out so that a warp decodes a 16×16 tile
 * into its mma.m16n8k16 A fragments with a handful of instructions.
 *
 * Why another format than tc's (src/strategy/tc/tc_format.h). At small N
 * a sparse tensor-core kernel is bound by the instructions that decode A,
 * not by bytes: tc's quadrant bitmaps cost about 430 warp instructions a
 * tile (Nsight Compute on the H100, bench/results/tc/README.md), while
 * cuBLAS streams a dense fp16 tile in about 150 SM cycles. SpInfer /
 * Flash-LLM decode 8×8 bitmaps with shared-memory popcounts and reach only
 * 0.4–1.4× of cuBLAS on Hopper (docs/ANCHORS.md). Here the host does the
 * work once instead:
 *   - the mask is in fragment order: byte L of a tile's 32-byte mask is
 *     lane L's eight slots (its four half2 registers a0..a3 of the PTX ISA
 *     "Matrix fragments for mma.m16n8k16", low half first), so a lane reads
 *     its own byte;
 *   - the values are in the same order, so a lane's values are one
 *     contiguous run, and the place of a slot in the run is the popcount of
 *     the lane's lower slots — computed for all eight slots at once by one
 *     multiply (frag_spmm.cu);
 *   - the run's start is a prefix count over the lanes below, stored per
 *     group of four lanes (8 bytes), so a lane adds one popcount of its
 *     own mask word.
 * Bytes per weight: 2·density + 40/256 (+ record padding), 0.77 at 70 %
 * sparsity against dense fp16's 2.
 *
 * The stream. Rows are cut into windows of 16, windows into groups of
 * `group` (a warp multiplies a group's tiles of one k-step with the same B
 * fragments), K into k-steps of 16 columns. A record is one group's tiles
 * of one k-step:
 *     header of each window (FRAG_HEADER = 40 bytes):
 *         mask[32]   byte L: lane L's slots s = 0..7, bit s set when A
 *                    holds a nonzero at row quad + 8·(s>>1 & 1), column
 *                    2·t + (s & 1) + 8·(s >> 2) of the tile (quad = L>>2,
 *                    t = L&3);
 *         pre[8]     pre[q], q = 1..7: the set bits of mask bytes 0..4q-1;
 *                    pre[0]: the set bits of bytes 28..31 (so the tile's
 *                    count is pre[7] + pre[0]);
 *     the values of each window in turn, in slot order (lane 0's set
 *     slots, then lane 1's, ...), in the dtype;
 *     zeros up to a multiple of 16 bytes.
 * Windows past the last row (the last group) have empty headers. K-steps
 * are grouped into chunks: a chunk is at most FRAG_CHUNK_STEPS k-steps,
 * and no group's records of one chunk take more than frag_capacity(group)
 * bytes (the kernel stages a chunk per warp in shared memory with
 * cp.async, 16 bytes a piece). Chunk boundaries are the same for every
 * group; the data is group-major: group g's records of chunk c start at
 * offset[g·chunks + c]. */
#ifndef SPF_STRATEGY_TCFRAG_FRAG_FORMAT_H
#define SPF_STRATEGY_TCFRAG_FRAG_FORMAT_H

#include "spforge.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { FRAG_TILE = 16, FRAG_HEADER = 40, FRAG_CHUNK_STEPS = 8, FRAG_MAX_GROUP = 4 };

typedef struct frag_format {
    int64_t rows, cols, nnz;
    spf_dtype dtype;     /* F16 or BF16                                     */
    int group;           /* windows per group: 1, 2 or 4                    */
    int64_t windows;     /* ceil(rows / 16)                                 */
    int64_t groups;      /* ceil(windows / group)                           */
    int64_t steps;       /* ceil(cols / 16)                                 */
    int32_t chunks;
    int32_t *chunk_step; /* chunks + 1: the first k-step of each chunk      */
    int64_t *offset;     /* groups · chunks + 1 byte offsets into data      */
    unsigned char *data; /* offset[groups · chunks] bytes                   */
    int64_t largest;     /* the most bytes of one group's chunk             */
    int64_t bytes;       /* what a kernel reads: data, offsets, chunk steps */
    double build_s;      /* wall time of frag_format_build                  */
} frag_format;

/* Shared-memory bytes a warp stages one chunk in: the most a group of
 * `group` windows may take in one chunk (at least one k-step of dense
 * tiles: group · (40 + 512) + 15; 1024 · group + 512). */
int64_t frag_capacity(int group);

/* Build the format of a (CSR, float values) with values rounded to dtype
 * (F16 or BF16, to nearest even) in groups of `group` windows (1, 2, 4),
 * on threads host threads (0 = all cores). out is zeroed first and owns its
 * arrays (frag_format_free). SPF_ERR_INVALID_ARGUMENT for another dtype or
 * group; SPF_ERR_OVERFLOW when M or K reach 2^31 - 16. */
spf_status frag_format_build(const spf_matrix *a, spf_dtype dtype, int group, int threads,
                             frag_format *out);

void frag_format_free(frag_format *f); /* accepts a zeroed format */

/* Bytes per weight: bytes / (rows · cols), 0 for an empty shape. */
double frag_format_bytes_per_weight(const frag_format *f);

/* The bytes the format would take for an M × K matrix of nnz nonzeros
 * placed at random (the planner's estimate, before building). */
double frag_format_bytes_estimate(int64_t m, int64_t k, int64_t nnz, int group);

/* The format decoded back to a dense rows × cols float matrix (row-major)
 * the way the kernel reads it — records walked by their counts, each
 * lane's run found from pre[] and its mask word — for tests and checks.
 * SPF_ERR_PARSE, naming the group, chunk and k-step, when a header
 * disagrees with its mask or a record overruns its chunk. */
spf_status frag_format_to_dense(const frag_format *f, float *dense);

#ifdef __cplusplus
}
#endif

#endif
