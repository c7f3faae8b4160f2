/* The structured stream kernel (sp_kernel.h says how the work is cut,
 * sp_format.h what the format holds). Instantiated for fp16 and bf16 × nb
 * ∈ {1, 2, 4, 8} × rt ∈ {1, 2, 4 (nb ≤ 4)} × B staged [k][n] (gathered for V:2:M or
 * not) or [n][k].
 *
 * At the small N this is for, the bytes of A bound the time: 2:4 moves
 * 1.125 bytes a weight against dense fp16's 2 (PTX ISA "Sparse matrix
 * storage"). Each warp keeps stages - 1 step pairs of A and B in flight in
 * a shared-memory ring of its own (cp.async; no block barrier until the
 * warps' sums meet). The kernel before this one held one pair of A ahead
 * in registers and built B's fragments from L2 by loads and shuffles: on
 * the H100 (Nsight Compute, 11008×4096 2:4 at N = 16) it issued about 770
 * instructions a warp a pair, 0.44 a cycle a scheduler, stalled on its
 * loads first, and moved 1.2 TB/s. From the ring a pair is a few cp.async
 * a lane, one ldmatrix a step and column block, and the mma.sp. */
#include <cuda_runtime.h>

#include <stdint.h>

#include "gpu/cuda_check.h"
#include "gpu/epilogue.cuh"
#include "gpu/mma_ptx.cuh"
#include "gpu/smem_limit.cuh"
#include "strategy/structured/kernels/sp_mma.cuh"
#include "strategy/structured/kernels/sp_stage.cuh"
#include "strategy/structured/sp_kernel.h"

namespace {

/* the staged kernels' arguments (sp_stage.cuh): the same fields */
using args = sp_stage_args;

/* A warp's stage (SP_STREAM_STAGE_BYTES): per row tile the pair's A
 * fragments and metadata as the format stores them, then B's 64 rows ×
 * 8·NB columns in 16-byte pieces, swizzled so that the eight rows an
 * ldmatrix reads lie in distinct banks:
 *   [k][n] (B K×N; and any B that is gathered N×K or not aligned): row r's
 *          piece c (columns 8c ..) at 16·(NB·r + (c ^ ((r / (8 / NB)) & (NB - 1))));
 *   [n][k] (B N×K, aligned, not gathered): column j's piece c (k 8c ..)
 *          at 16·(8·j + (c ^ (j & 7))). */
template <int NB, int RT> struct stage {
    static constexpr int meta = RT * SP_TILE_A_BYTES;
    static constexpr int b = RT * (SP_TILE_A_BYTES + SP_TILE_META_BYTES);
    static constexpr int bytes = SP_STREAM_STAGE_BYTES(NB, RT);
    __device__ static int kn(int r, int c) { return b + 16 * (NB * r + (c ^ ((r / (8 / NB)) & (NB - 1)))); }
    __device__ static int nk(int j, int c) { return b + 16 * (8 * j + (c ^ (j & 7))); }
};

/* A lane's copies of a step pair into a stage, with what does not change
 * from pair to pair worked out once: 2·RT pieces of values, one of
 * metadata (lanes below 8·RT), 2·NB of B. */
template <typename T, int NB, int RT, bool GATHER, bool BNK> struct copies {
    using S = stage<NB, RT>;
    const uint4 *a_src[RT]; /* the lane's first piece of values of each tile, pair 0 */
    const uint4 *m_src;     /* its piece of metadata, pair 0 */
    const T *b_src[2 * NB]; /* B: the piece's column ([k][n]), its column at k = 8c ([n][k]) */
    int b_dst[2 * NB];      /* the piece's byte in the stage */
    int b_bytes[2 * NB];    /* bytes within N ([k][n]); 0 past N, else 16 ([n][k]) */
    int b_at[2 * NB];       /* the piece's row of the pair ([k][n]) or first k ([n][k]) */
    int rows[2 * NB];       /* V:2:M: the B rows of the pair issued next */
    int fill_rows[2];       /* V:2:M, by plain loads: its rows lane and lane + 32 */

    __device__ copies(const args &a, int tile0, int n0, int lane)
    {
        const uint4 *meta = reinterpret_cast<const uint4 *>(a.meta);
        const T *b = static_cast<const T *>(a.b);
#pragma unroll
        for (int r = 0; r < RT; r++) /* past the last tile: the last (its rows are not stored) */
            a_src[r] = a.values + static_cast<int64_t>(min(tile0 + r, a.tiles - 1)) * a.pairs * 64 + lane;
        m_src = meta + static_cast<int64_t>(min(tile0 + lane / 8, a.tiles - 1)) * a.pairs * 8 + lane % 8;
#pragma unroll
        for (int c = 0; c < 2 * NB; c++) {
            const int i = lane + 32 * c;
            if constexpr (BNK) { /* piece i: column i / 8, k 8·(i % 8) .. */
                const int j = n0 + i / 8;
                b_at[c] = 8 * (i % 8);
                b_dst[c] = S::nk(i / 8, i % 8);
                b_bytes[c] = j < a.n ? 16 : 0;
                b_src[c] = b + static_cast<int64_t>(min(j, a.n - 1)) * a.b_col;
            } else { /* piece i: row i / NB, columns 8·(i % NB) .. */
                const int j = n0 + 8 * (i % NB);
                b_at[c] = i / NB;
                b_dst[c] = S::kn(i / NB, i % NB);
                b_bytes[c] = min(max(a.n - j, 0) * 2, 16);
                b_src[c] = b + static_cast<int64_t>(min(j, a.n - 1)) * a.b_col;
            }
        }
    }

    /* V:2:M: the B rows pair p gathers, loaded a pair before their copies
     * (a copy waits on the load of its address). */
    __device__ void gather_rows(const args &a, const int32_t *gather, int p, int lane)
    {
        if constexpr (GATHER) {
            if (p >= a.pairs)
                return;
            if (!a.vector_b) {
                fill_rows[0] = __ldg(gather + 64 * p + lane);
                fill_rows[1] = __ldg(gather + 64 * p + lane + 32);
                return;
            }
#pragma unroll
            for (int c = 0; c < 2 * NB; c++)
                rows[c] = __ldg(gather + 64 * p + b_at[c]);
        }
    }

    /* Pair p into stage st: A and metadata, then B by cp.async when its
     * pieces are aligned (a.vector_b), else by plain loads and stores. */
    __device__ void issue(const args &a, int n0, int p, unsigned char *st, int lane) const
    {
#pragma unroll
        for (int r = 0; r < RT; r++) {
            copy16(st + r * SP_TILE_A_BYTES + 16 * lane, a_src[r] + 64 * p, 16);
            copy16(st + r * SP_TILE_A_BYTES + 16 * (lane + 32), a_src[r] + 64 * p + 32, 16);
        }
        if (lane < 8 * RT)
            copy16(st + S::meta + 16 * lane, m_src + 8 * p, 16);
        if (!BNK && !a.vector_b) {
            fill(a, n0, p, st, lane);
            return;
        }
#pragma unroll
        for (int c = 0; c < 2 * NB; c++) {
            if constexpr (BNK) {
                const int k = 64 * p + b_at[c];
                const int bytes = b_bytes[c] ? min(max(a.k - k, 0) * 2, 16) : 0;
                copy16(st + b_dst[c], b_src[c] + (bytes ? k : 0), bytes);
            } else {
                const int kk = GATHER ? rows[c] : 64 * p + b_at[c];
                const int bytes = GATHER || kk < a.k ? b_bytes[c] : 0;
                copy16(st + b_dst[c], b_src[c] + (bytes ? static_cast<int64_t>(kk) * a.b_row : 0),
                       bytes);
            }
        }
    }

    /* B's [k][n] stage of pair p by plain loads and stores: B's rows not
     * 16-byte aligned (N not a multiple of 8), or B N×K and gathered. The
     * lane fills rows lane and lane + 32 of the columns within N (the
     * others are never stored), up to 16 columns' loads in flight before
     * their stores: each batch waits out one L2 latency, and with four
     * columns a batch B N×K gathered (V:2:M) ran 1.5-4.9× slower than B
     * K×N from N = 16 (H200, predictor/heldout-sweeps-bf16-nk-*). */
    __device__ void fill(const args &a, int n0, int p, unsigned char *st, int lane) const
    {
        const T *b = static_cast<const T *>(a.b);
        const int cols = min(8 * NB, a.n - n0);
        int64_t at[2];
        bool in[2];
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int kk = GATHER ? fill_rows[h] : 64 * p + lane + 32 * h;
            in[h] = GATHER || kk < a.k;
            at[h] = static_cast<int64_t>(kk) * a.b_row + static_cast<int64_t>(n0) * a.b_col;
        }
        constexpr int kBatch = 8 * NB < 16 ? 8 * NB : 16;
        for (int j0 = 0; j0 < cols; j0 += kBatch) {
            T v[kBatch][2];
#pragma unroll
            for (int j = 0; j < kBatch; j++)
#pragma unroll
                for (int h = 0; h < 2; h++)
                    v[j][h] = in[h] && j0 + j < cols ? __ldg(b + at[h] + (j0 + j) * a.b_col)
                                                     : elem<T>::from_float(0.f);
#pragma unroll
            for (int j = 0; j < kBatch; j++)
#pragma unroll
                for (int h = 0; h < 2; h++)
                    if (j0 + j < cols)
                        *reinterpret_cast<T *>(st + S::kn(lane + 32 * h, (j0 + j) / 8) +
                                               2 * ((j0 + j) % 8)) = v[j][h];
        }
    }
};

/* The warp's products of the pair in stage st. */
template <typename T, int NB, int RT, bool BNK>
__device__ __forceinline__ void multiply(const unsigned char *st, int lane, float (&acc)[RT][NB][4])
{
    using S = stage<NB, RT>;
    const uint4 *av = reinterpret_cast<const uint4 *>(st);
    const uint32_t *am = reinterpret_cast<const uint32_t *>(st + S::meta);
    uint32_t e[RT];
#pragma unroll
    for (int r = 0; r < RT; r++)
        e[r] = am[r * 32 + lane];
#pragma unroll
    for (int h = 0; h < 2; h++) {
        uint4 af[RT];
#pragma unroll
        for (int r = 0; r < RT; r++)
            af[r] = av[(r * 2 + h) * 32 + lane];
#pragma unroll
        for (int nb = 0; nb < NB; nb++) {
            uint32_t bf[4];
            if constexpr (BNK) /* matrix i: columns 8nb .., k 32h + 8i .. */
                ldsm_x4<false>(st + S::nk(8 * nb + (lane & 7), 4 * h + (lane >> 3)), bf);
            else /* matrix i: k 32h + 8i .. (the lane's row 32h + lane), columns 8nb .. */
                ldsm_x4<true>(st + S::kn(32 * h + lane, nb), bf);
#pragma unroll
            for (int r = 0; r < RT; r++) {
                if (h == 0)
                    mma_sp<0>(acc[r][nb], af[r], bf, e[r], T());
                else
                    mma_sp<1>(acc[r][nb], af[r], bf, e[r], T());
            }
        }
    }
}

/* Sum e of the block (tile r, column block nb, accumulator j, packed as
 * (r·NB + nb)·4 + j) of lane to C. */
template <typename T, int NB>
__device__ __forceinline__ void store_sum(const args &a, int tile0, int n0, int e, int lane,
                                          float v)
{
    const int r = e / (NB * 4), nb = e / 4 % NB, j = e % 4;
    const int row = (tile0 + r) * 16 + (lane >> 2) + 8 * (j >> 1);
    const int col = n0 + 8 * nb + 2 * (lane & 3) + (j & 1);
    if (row < a.m && col < a.n)
        store<T>(a, row, col, v);
}

template <typename T, int NB, int RT, bool GATHER, bool BNK>
__global__ void __launch_bounds__(NB >= 4 ? 256 : 512) sp_spmm_kernel(const args a)
{
    using S = stage<NB, RT>;
    extern __shared__ __align__(16) unsigned char smem[];
    constexpr int E = RT * NB * 4;
    const int warps = blockDim.x >> 5, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int tile0 = blockIdx.x * RT, n0 = blockIdx.y * 8 * NB, stages = a.stages;
    unsigned char *ring = smem + warp * stages * S::bytes;
    const int32_t *gather = nullptr;
    if constexpr (GATHER) /* the block's row tiles lie in one block of V rows */
        gather = a.gather + static_cast<int64_t>(tile0 * 16 / a.v) * a.kc;

    float acc[RT][NB][4];
#pragma unroll
    for (int r = 0; r < RT; r++)
#pragma unroll
        for (int nb = 0; nb < NB; nb++)
#pragma unroll
            for (int j = 0; j < 4; j++)
                acc[r][nb][j] = 0.f;

    /* warp w takes pairs w, w + warps, ... */
    copies<T, NB, RT, GATHER, BNK> cp(a, tile0, n0, lane);
    warp_ring(
        ring, S::bytes, stages, warp, a.pairs, warps,
        [&](int q, unsigned char *st) { cp.issue(a, n0, q, st, lane); },
        [&](int q) { cp.gather_rows(a, gather, q, lane); },
        [&](const unsigned char *st) { multiply<T, NB, RT, BNK>(st, lane, acc); });
    warp_sums<E>(
        smem, [&](int e) { return acc[e / (NB * 4)][e / 4 % NB][e % 4]; },
        [&](int e, int l, float v) { store_sum<T, NB>(a, tile0, n0, e, l, v); });
}

template <typename T, int NB, int RT> void *kernel_layout(bool gather, bool bnk)
{
    if (bnk)
        return gather ? nullptr : (void *)sp_spmm_kernel<T, NB, RT, false, true>;
    return gather ? (void *)sp_spmm_kernel<T, NB, RT, true, false>
                  : (void *)sp_spmm_kernel<T, NB, RT, false, false>;
}

template <typename T, int NB> void *kernel_rt(const sp_config *c, bool gather, bool bnk)
{
    if (c->rt == 1)
        return kernel_layout<T, NB, 1>(gather, bnk);
    if constexpr (NB <= 4) {
        if (c->rt == 2)
            return kernel_layout<T, NB, 2>(gather, bnk);
        if (c->rt == 4)
            return kernel_layout<T, NB, 4>(gather, bnk);
    }
    return nullptr;
}

template <typename T> void *kernel_nb(const sp_config *c, bool gather, bool bnk)
{
    switch (c->nb) {
    case 1: return kernel_rt<T, 1>(c, gather, bnk);
    case 2: return kernel_rt<T, 2>(c, gather, bnk);
    case 4: return kernel_rt<T, 4>(c, gather, bnk);
    case 8: return kernel_rt<T, 8>(c, gather, bnk);
    default: return nullptr;
    }
}

void *kernel_for(const sp_config *c, const sp_device *d, bool bnk)
{
    const bool gather = d->pattern.v != 0;
    if (c->kind != SP_STREAM || sp_config_refusal(c, &d->pattern))
        return nullptr;
    if (d->dtype == SPF_DTYPE_F16)
        return kernel_nb<__half>(c, gather, bnk);
    if (d->dtype == SPF_DTYPE_BF16)
        return kernel_nb<__nv_bfloat16>(c, gather, bnk);
    return nullptr;
}

} // namespace

extern "C" spf_status sp_stream_occupancy(const sp_config *c, const sp_device *d, int *blocks)
{
    const void *k = kernel_for(c, d, false);
    if (!k)
        return FAIL(SPF_ERR_UNSUPPORTED, "structured: no kernel for nb %d, rt %d, %d warps, %s",
                    c->nb, c->rt, c->warps, spf_dtype_name(d->dtype));
    return smem_occupancy(k, sp_config_threads(c), sp_config_smem(c), blocks);
}

extern "C" spf_status sp_stream_launch(const sp_device *d, const sp_config *c,
                                       const spmm_operands *op, void *stream)
{
    int64_t col_blocks = (op->n + 8 * c->nb - 1) / (8 * c->nb);
    int64_t row_blocks = (d->tiles + c->rt - 1) / c->rt;
    if (row_blocks == 0 || col_blocks == 0)
        return SPF_OK;
    if (col_blocks > 65535 || row_blocks > INT32_MAX)
        return FAIL(SPF_ERR_UNSUPPORTED, "structured: %lld × %lld blocks exceed the grid",
                    (long long)row_blocks, (long long)col_blocks);
    args a = stage_args(d, c, op);
    /* [n][k] staging by cp.async: B's k contiguous and aligned (N×K, or
     * K×1: at N = 1 a K×N row of 2 bytes allows no 16-byte copy), not
     * gathered; else [k][n], by cp.async for aligned K×N rows, by plain
     * loads otherwise */
    const bool k_pieces =
        op->b_row == 1 && (op->b_layout == SPF_LAYOUT_N_FIRST
                               ? a.vector_b
                               : op->n == 1 && reinterpret_cast<uintptr_t>(op->b) % 16 == 0);
    const bool bnk = k_pieces && !d->pattern.v;
    if (op->b_layout == SPF_LAYOUT_N_FIRST)
        a.vector_b = 0; /* gathered or not aligned: [k][n] by plain loads */
    const void *k = kernel_for(c, d, bnk);
    if (!k)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "structured: config nb %d, rt %d, %d warps, %d "
                    "stages for a format of V = %d", c->nb, c->rt, c->warps, c->stages,
                    d->pattern.v);
    dim3 grid(static_cast<unsigned>(row_blocks), static_cast<unsigned>(col_blocks));
    return smem_launch(k, grid, sp_config_threads(c), sp_config_smem(c), &a, stream);
}
