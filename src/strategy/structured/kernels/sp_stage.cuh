/* What the staged structured kernels (sp_tile.cu on mma.sp, sp_wgmma.sm90a.cu
 * on wgmma.sp) share: their arguments (the stream kernel's too,
 * sp_spmm.cu), the copies into a shared-memory stage and the launch; and
 * the warps' rings and sums of the stream and column-vector kernels
 * (sp_spmm.cu, sp_colvec.cu). A
 * stage (sp_kernel.h) holds SP_TILE_A_BYTES of values and
 * SP_TILE_META_BYTES of metadata a row tile, then the pair's rows of B in
 * the kernel's own arrangement. */
#ifndef SPF_STRATEGY_STRUCTURED_SP_STAGE_CUH
#define SPF_STRATEGY_STRUCTURED_SP_STAGE_CUH

#include <stdint.h>

#include "core/error.h"
#include "gpu/epilogue.cuh"
#include "gpu/mma_ptx.cuh"
#include "gpu/smem_limit.cuh"
#include "strategy/structured/sp_kernel.h"

struct sp_stage_args {
    const uint4 *values;
    const uint32_t *meta;
    const int32_t *gather; /* V:2:M: [block of v rows][kc]; NULL for 2:4 */
    int32_t m, k, n, tiles, pairs, v, kc;
    const void *b;
    int64_t b_row, b_col; /* element (kk, j) at b[kk·b_row + j·b_col] */
    void *c;
    int64_t c_row, c_col;
    const float *bias;
    int relu;
    const int32_t *row_map; /* always NULL: the epilogue's argument */
    int vector_b;           /* B's rows allow 16-byte copies (take_operands) */
    int stages;
};

/* A thread's 16-byte pieces of every stage, worked out once before the K
 * loop: the index arithmetic of a piece (divisions by the pieces of a row,
 * the clamp of the last tile, 64-bit products) took most of the issue
 * slots when it ran for every step pair (Nsight Compute on the H100:
 * 0.33-0.47 instructions issued a cycle a scheduler, the tensor cores
 * mostly idle). */

/* A: TILES row tiles from tile0, 64 pieces of values and 8 of metadata a
 * tile, shared by THREADS threads. Tiles past the last copy the last one
 * (valid metadata; their rows are not stored). */
template <int TILES, int THREADS> struct a_plan {
    static constexpr int count = (TILES * 72 + THREADS - 1) / THREADS;
    int src[count]; /* the piece at pair 0, in 16-byte units of values or metadata */
    int dst[count]; /* its byte in the stage (metadata from TILES · SP_TILE_A_BYTES); -1: none */

    __device__ __forceinline__ a_plan(const sp_stage_args &a, int tile0)
    {
#pragma unroll
        for (int c = 0; c < count; c++) {
            const int i = threadIdx.x + c * THREADS, r = i / 72, piece = i % 72;
            const int tile = min(tile0 + r, a.tiles - 1);
            dst[c] = i >= TILES * 72 ? -1
                     : piece < 64    ? r * SP_TILE_A_BYTES + 16 * piece
                                     : TILES * SP_TILE_A_BYTES + r * SP_TILE_META_BYTES +
                                        16 * (piece - 64);
            src[c] = piece < 64 ? tile * a.pairs * 64 + piece : tile * a.pairs * 8 + piece - 64;
        }
    }
    /* step pair p into stage st */
    __device__ __forceinline__ void issue(const sp_stage_args &a, int p, unsigned char *st) const
    {
        const uint4 *meta = reinterpret_cast<const uint4 *>(a.meta);
#pragma unroll
        for (int c = 0; c < count; c++) {
            if (dst[c] < 0)
                continue;
            if (dst[c] < TILES * SP_TILE_A_BYTES)
                copy16(st + dst[c], a.values + src[c] + 64 * p, 16);
            else
                copy16(st + dst[c], meta + src[c] + 8 * p, 16);
        }
    }
};

/* B: PIECES pieces of 8 elements a stage, shared by THREADS threads; the
 * kernel fills each piece's row of the pair (k), column of B (j) and place
 * in the stage (dst, -1: none). KN: B is K×N and a piece is 8 columns of
 * one row (gathered for V:2:M); else B is N×K and a piece is 8 rows of
 * one column. */
template <int PIECES, int THREADS> struct b_plan {
    static constexpr int count = (PIECES + THREADS - 1) / THREADS;
    int k[count], j[count], dst[count];

    template <typename T, bool KN, bool GATHER>
    __device__ __forceinline__ void issue(const sp_stage_args &a, const int32_t *gather, int p,
                                          unsigned char *st) const
    {
        const T *b = static_cast<const T *>(a.b);
#pragma unroll
        for (int c = 0; c < count; c++) {
            if (dst[c] < 0)
                continue;
            int kk = 64 * p + k[c], bytes;
            if constexpr (KN) {
                if constexpr (GATHER)
                    kk = __ldg(gather + kk);
                bytes = GATHER || kk < a.k ? min(max(a.n - j[c], 0) * 2, 16) : 0;
            } else {
                bytes = j[c] < a.n ? min(max(a.k - kk, 0) * 2, 16) : 0;
            }
            copy16(st + dst[c], bytes ? b + kk * a.b_row + j[c] * a.b_col : b, bytes);
        }
    }
};

/* A warp's ring (the stream and column-vector kernels): its steps first,
 * first + warps, ... below count pass through `stages` stages of `bytes`
 * bytes from ring, stages - 1 in flight. issue(q, stage) starts step q's
 * copies into a stage, prefetch(q) loads a step ahead what step q's
 * copies need (a copy waits on the load of its address), multiply(stage)
 * takes a stage that has landed. No block barrier: each warp has its own
 * ring. */
template <class Issue, class Prefetch, class Multiply>
__device__ __forceinline__ void warp_ring(unsigned char *ring, int bytes, int stages, int first,
                                          int count, int warps, Issue issue, Prefetch prefetch,
                                          Multiply multiply)
{
    /* the ring's stage s holds the warp's steps s, s + stages, ... */
    int q = first;
    prefetch(q);
    for (int s = 0; s < stages - 1; s++, q += warps) {
        if (q < count) {
            issue(q, ring + s * bytes);
            prefetch(q + warps);
        }
        copy_commit();
    }
    int rs = 0, ws = stages - 1;
    for (int p = first; p < count; p += warps, q += warps) {
        copy_wait_dynamic(stages - 2); /* step p has landed */
        __syncwarp();                  /* and every lane is done with the stage written next */
        if (q < count) {
            issue(q, ring + ws * bytes);
            prefetch(q + warps);
        }
        copy_commit();
        multiply(ring + rs * bytes);
        rs = rs + 1 == stages ? 0 : rs + 1;
        ws = ws + 1 == stages ? 0 : ws + 1;
    }
}

/* The warps' sums of E accumulators a lane (acc(e)) meet where the rings
 * were (after warp_ring: no copy is in flight) and go out by store(e,
 * lane, sum), added in a fixed order so that every run gives the same
 * sums. */
template <int E, class Acc, class Store>
__device__ __forceinline__ void warp_sums(unsigned char *smem, Acc acc, Store store)
{
    const int warps = blockDim.x >> 5, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (warps == 1) {
#pragma unroll
        for (int e = 0; e < E; e++)
            store(e, lane, acc(e));
        return;
    }
    copy_wait<0>();
    __syncthreads();
    float *sums = reinterpret_cast<float *>(smem); /* [warp][E][32 lanes] */
#pragma unroll
    for (int e = 0; e < E; e++)
        sums[(warp * E + e) * 32 + lane] = acc(e);
    __syncthreads();
    for (int i = threadIdx.x; i < E * 32; i += blockDim.x) {
        float s = 0.f;
        for (int w = 0; w < warps; w++)
            s += sums[w * E * 32 + i];
        store(i / 32, i % 32, s);
    }
}

/* The arguments of a launch of config c over format d. Host code. */
inline sp_stage_args stage_args(const sp_device *d, const sp_config *c, const spmm_operands *op)
{
    sp_stage_args a = {};
    take_operands(a, op, 2);
    a.values = reinterpret_cast<const uint4 *>(d->values);
    a.meta = d->meta;
    a.gather = d->gather;
    a.m = static_cast<int32_t>(d->rows);
    a.k = static_cast<int32_t>(d->cols);
    a.n = static_cast<int32_t>(op->n);
    a.tiles = static_cast<int32_t>(d->tiles);
    a.pairs = static_cast<int32_t>(d->pairs);
    a.v = d->pattern.v;
    a.kc = static_cast<int32_t>(d->pairs * 64);
    a.stages = c->stages;
    return a;
}

/* Launch kernel k of config c over format d at N = n, bm rows (grid.x) ×
 * bn columns (grid.y) a block (× the split of K, grid.z, in clusters),
 * its one parameter the struct a. Host code. */
template <class Args>
inline spf_status block_launch(const void *k, const sp_device *d, const sp_config *c, int64_t n,
                               Args &a, void *stream)
{
    const int64_t col_blocks = (n + c->bn - 1) / c->bn;
    const int64_t row_blocks = (d->tiles * 16 + c->bm - 1) / c->bm;
    if (row_blocks == 0 || col_blocks == 0)
        return SPF_OK;
    if (col_blocks > 65535 || row_blocks > INT32_MAX)
        return FAIL(SPF_ERR_UNSUPPORTED, "structured: %lld × %lld blocks exceed the grid",
                    (long long)row_blocks, (long long)col_blocks);
    const int split = c->split_k > 1 ? c->split_k : 1;
    dim3 grid(static_cast<unsigned>(row_blocks), static_cast<unsigned>(col_blocks),
              static_cast<unsigned>(split));
    return smem_launch_ex(k, grid, sp_config_threads(c), sp_config_smem(c), &a, split, 0, stream);
}

/* Launch k, the kernel of config c (NULL when there is none), over format
 * d with arguments a. Host code. */
inline spf_status stage_launch(const void *k, const sp_device *d, const sp_config *c,
                               const spmm_operands *op, sp_stage_args &a, void *stream)
{
    if (!k)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "structured: no kernel for config m%d n%d s%d "
                    "(kind %d) on a format of V = %d", c->bm, c->bn, c->stages, (int)c->kind,
                    d->pattern.v);
    return block_launch(k, d, c, op->n, a, stream);
}

#endif
