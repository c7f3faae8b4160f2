/* The structured tile kernel (sp_kernel.h says how the work is cut): a
 * block multiplies bm rows of A by bn columns of B, step pair by step
 * pair, with the next stages' A fragments and B rows in flight (cp.async)
 * while its warps multiply the current one. For N beyond the stream
 * kernel's: there each warp read its own B from L2, and at N ≥ 32 those
 * reads passed the bytes of A; here a block reads a step pair's B once
 * and its warps share it from shared memory (STuning-DL §II's template,
 * the block and warp tiles and the stages its tuning space spans, §IV).
 *
 * A stage holds, for the block's bm / 16 row tiles, the step pair's A
 * fragments (1 KB a tile) and metadata (128 bytes a tile) as the format
 * stores them, then the pair's 64 rows of B (gathered for V:2:M): B K×N
 * as [k][n] (pitch bn + 8), read by ldmatrix.trans; B N×K as [n][k]
 * (pitch 72), read by ldmatrix. Both pitches are odd multiples of 16
 * bytes, so the eight rows of an ldmatrix hit distinct banks. When B's
 * rows are not 16-byte aligned, or B is N×K and gathered, the [k][n]
 * stage is filled by plain loads and stores (slower, same result). */
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

using args = sp_stage_args;

/* A block of WM × WN warps, each 2 row tiles (32 rows) × NBW blocks of 8
 * columns; BNK: B staged as [n][k]. */
template <int WM, int WN, int NBW, bool BNK> struct shape {
    static constexpr int tiles = 2 * WM;
    static constexpr int bn = 8 * NBW * WN;
    static constexpr int threads = 32 * WM * WN;
    static constexpr int a_bytes = tiles * SP_TILE_A_BYTES;
    static constexpr int meta_bytes = tiles * SP_TILE_META_BYTES;
    static constexpr int pitch = BNK ? 72 : bn + 8; /* elements */
    static constexpr int stage_bytes = SP_TILE_STAGE_BYTES(16 * tiles, bn);
};

/* The block's B pieces (sp_stage.cuh): [n][k] staging, a piece 8 k of one
 * column (BNK), or [k][n], a piece 8 columns of one row. */
template <class S, bool BNK>
__device__ __forceinline__ b_plan<8 * S::bn, S::threads> plan_b(int n0)
{
    b_plan<8 * S::bn, S::threads> bp;
    constexpr int per_row = BNK ? 8 : S::bn / 8;
#pragma unroll
    for (int c = 0; c < bp.count; c++) {
        const int i = threadIdx.x + c * S::threads, r = i / per_row, piece = i % per_row;
        bp.k[c] = BNK ? 8 * piece : r;
        bp.j[c] = n0 + (BNK ? r : 8 * piece);
        bp.dst[c] =
            i < 8 * S::bn ? S::a_bytes + S::meta_bytes + 2 * (r * S::pitch + 8 * piece) : -1;
    }
    return bp;
}

/* Fill stage st's [k][n] B of step pair p by plain loads and stores: B's
 * rows not 16-byte aligned, or B N×K and gathered. */
template <typename T, class S, bool GATHER>
__device__ __forceinline__ void fill_b(const args &a, int n0, const int32_t *gather, int p,
                                       unsigned char *st)
{
    T *bs = reinterpret_cast<T *>(st + S::a_bytes + S::meta_bytes);
    const T *b = static_cast<const T *>(a.b);
    for (int i = threadIdx.x; i < 64 * S::bn; i += S::threads) {
        const int r = i / S::bn, jj = i % S::bn, j = n0 + jj;
        const int kk = GATHER ? __ldg(gather + 64 * p + r) : 64 * p + r;
        bs[r * S::pitch + jj] = (GATHER || kk < a.k) && j < a.n ? b[kk * a.b_row + j * a.b_col]
                                                                : elem<T>::from_float(0.f);
    }
}

/* The warp's products of the step pair in stage st. */
template <typename T, class S, int NBW, bool BNK>
__device__ __forceinline__ void multiply(const unsigned char *st, int wm, int wn, int lane,
                                         float (&acc)[2][NBW][4])
{
    const uint4 *av = reinterpret_cast<const uint4 *>(st);
    const uint32_t *am = reinterpret_cast<const uint32_t *>(st + S::a_bytes);
    const T *bs = reinterpret_cast<const T *>(st + S::a_bytes + S::meta_bytes);
    uint32_t e[2];
#pragma unroll
    for (int r = 0; r < 2; r++)
        e[r] = am[(2 * wm + r) * 32 + lane];
#pragma unroll
    for (int h = 0; h < 2; h++) {
        uint4 af[2];
#pragma unroll
        for (int r = 0; r < 2; r++)
            af[r] = av[((2 * wm + r) * 2 + h) * 32 + lane];
#pragma unroll
        for (int nb = 0; nb < NBW; nb++) {
            const int col = (wn * NBW + nb) * 8;
            uint32_t bf[4];
            if constexpr (BNK) /* matrix i: rows col.., k 32h + 8i .. */
                ldsm_x4<false>(bs + (col + (lane & 7)) * S::pitch + 32 * h + 8 * (lane >> 3), bf);
            else /* matrix i: k 32h + 8i .. (lane's row 32h + lane), columns col.. */
                ldsm_x4<true>(bs + (32 * h + lane) * S::pitch + col, bf);
#pragma unroll
            for (int r = 0; r < 2; r++) {
                if (h == 0)
                    mma_sp<0>(acc[r][nb], af[r], bf, e[r], T());
                else
                    mma_sp<1>(acc[r][nb], af[r], bf, e[r], T());
            }
        }
    }
}

template <typename T, int WM, int WN, int NBW, bool GATHER, bool BNK>
__global__ void __launch_bounds__(32 * WM * WN) sp_tile_kernel(const args a)
{
    using S = shape<WM, WN, NBW, BNK>;
    extern __shared__ __align__(16) unsigned char smem[];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int wm = warp % WM, wn = warp / WM;
    const int tile0 = blockIdx.x * S::tiles, n0 = blockIdx.y * S::bn, stages = a.stages;
    const int32_t *gather = nullptr;
    if constexpr (GATHER) /* the block's rows lie in one block of V rows (bm divides V) */
        gather = a.gather + static_cast<int64_t>(tile0 * 16 / a.v) * a.kc;

    float acc[2][NBW][4];
#pragma unroll
    for (int r = 0; r < 2; r++)
#pragma unroll
        for (int nb = 0; nb < NBW; nb++)
#pragma unroll
            for (int j = 0; j < 4; j++)
                acc[r][nb][j] = 0.f;

    const a_plan<S::tiles, S::threads> ap(a, tile0);
    const auto bp = plan_b<S, BNK>(n0);
    auto issue = [&](int p, unsigned char *st) {
        ap.issue(a, p, st);
        if (BNK || a.vector_b)
            bp.template issue<T, !BNK, GATHER>(a, gather, p, st);
        else
            fill_b<T, S, GATHER>(a, n0, gather, p, st);
    };
    for (int s = 0; s < stages - 1; s++) {
        if (s < a.pairs)
            issue(s, smem + s * S::stage_bytes);
        copy_commit();
    }
    /* the stages read and written this step, stepped without a division */
    int rs = 0, ws = stages - 1;
    for (int p = 0; p < a.pairs; p++) {
        copy_wait_dynamic(stages - 2); /* pair p's group has landed */
        __syncthreads();               /* for every thread, and pair p - 1's stage is free */
        const int q = p + stages - 1;
        if (q < a.pairs)
            issue(q, smem + ws * S::stage_bytes);
        copy_commit();
        multiply<T, S, NBW, BNK>(smem + rs * S::stage_bytes, wm, wn, lane, acc);
        rs = rs + 1 == stages ? 0 : rs + 1;
        ws = ws + 1 == stages ? 0 : ws + 1;
    }

#pragma unroll
    for (int r = 0; r < 2; r++)
#pragma unroll
        for (int nb = 0; nb < NBW; nb++)
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const int row = (tile0 + 2 * wm + r) * 16 + (lane >> 2) + 8 * (j >> 1);
                const int col = n0 + (wn * NBW + nb) * 8 + 2 * (lane & 3) + (j & 1);
                if (row < a.m && col < a.n)
                    store<T>(a, row, col, acc[r][nb][j]);
            }
}

template <typename T, int WM, int WN, int NBW> void *kernel_layout(bool gather, bool bnk)
{
    if (bnk)
        return gather ? nullptr : (void *)sp_tile_kernel<T, WM, WN, NBW, false, true>;
    return gather ? (void *)sp_tile_kernel<T, WM, WN, NBW, true, false>
                  : (void *)sp_tile_kernel<T, WM, WN, NBW, false, false>;
}

/* The warp layout of each shape sp_config_refusal allows. */
template <typename T> void *kernel_shape(const sp_config *c, bool gather, bool bnk)
{
    switch (c->bm * 1000 + c->bn) {
    case 32064: return kernel_layout<T, 1, 2, 4>(gather, bnk);
    case 64064: return kernel_layout<T, 2, 2, 4>(gather, bnk);
    case 128064: return kernel_layout<T, 4, 2, 4>(gather, bnk);
    default: return nullptr;
    }
}

void *kernel_for(const sp_config *c, const sp_device *d, bool bnk)
{
    const bool gather = d->pattern.v != 0;
    if (c->kind != SP_TILE || sp_config_refusal(c, &d->pattern))
        return nullptr;
    if (d->dtype == SPF_DTYPE_F16)
        return kernel_shape<__half>(c, gather, bnk);
    if (d->dtype == SPF_DTYPE_BF16)
        return kernel_shape<__nv_bfloat16>(c, gather, bnk);
    return nullptr;
}

} // namespace

extern "C" spf_status sp_tile_occupancy(const sp_config *c, const sp_device *d, int *blocks)
{
    const void *k = kernel_for(c, d, false);
    if (!k)
        return FAIL(SPF_ERR_UNSUPPORTED, "structured: no tile kernel for m%d n%d, %s", c->bm,
                    c->bn, spf_dtype_name(d->dtype));
    return smem_occupancy(k, sp_config_threads(c), sp_config_smem(c), blocks);
}

extern "C" spf_status sp_tile_launch(const sp_device *d, const sp_config *c,
                                     const spmm_operands *op, void *stream)
{
    args a = stage_args(d, c, op);
    /* [n][k] staging by cp.async: B N×K, aligned, not gathered; else [k][n],
     * by cp.async for aligned K×N rows, by plain loads otherwise */
    const bool bnk = op->b_layout == SPF_LAYOUT_N_FIRST && a.vector_b && !d->pattern.v;
    if (op->b_layout == SPF_LAYOUT_N_FIRST && !bnk)
        a.vector_b = 0;
    return stage_launch(kernel_for(c, d, bnk), d, c, op, a, stream);
}
