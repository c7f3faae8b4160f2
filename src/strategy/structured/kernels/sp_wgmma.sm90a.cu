/* The structured wgmma kernel, Hopper only (sm_90a): the tile kernel's
 * plan (sp_tile.cu: a block walks K a step pair at a time, `stages` pairs
 * in flight by cp.async) with the warpgroup MMA, wgmma.mma_async.sp
 * m64nNk32, in place of mma.sp: on Hopper mma.sp takes the older, slower
 * path of the tensor cores (HOPPER.md: a matrix kernel whose SASS shows
 * only HMMA). As it stands it is no faster than the tile kernel, and both
 * lose to dense fp16 (bench/results/structured/README.md, N = 256: the
 * copies and one barrier a step pair, not the instruction, are the limit).
 *
 * A warpgroup (4 warps) multiplies 64 rows per instruction: warp w of the
 * group takes row tile w, and its A operand, from registers, is exactly
 * the mma.sp m16n8k32 fragment the format stores, with its metadata word
 * and sparsity selector (checked on the H100: the format serves both
 * kernels unchanged). B comes from the shared-memory stage through a
 * matrix descriptor, without swizzling: 8 × 16-byte core matrices, K-major
 * ([n/8][k/8] cores, B N×K staged by cp.async or any B by plain loads) or
 * MN-major ([k/8][n/8] cores, B K×N rows by cp.async, the descriptor's
 * transpose bit set). The descriptor's leading offset is the distance
 * between cores along K and its stride offset the distance along N, in
 * either arrangement (PTX ISA "Matrix Descriptor Format"; both checked on
 * the H100).
 *
 * Block shapes: bm 64 (one warpgroup, one m64 instruction), 128 (two
 * warpgroups) or 256 (two, two instructions each) by bn 64, 128 or 256
 * (the instruction's N). */
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "sp_wgmma.sm90a.cu is built for sm_90a only (CMakeLists.txt)"
#endif

#include <cuda_runtime.h>

#include <stdint.h>

#include "gpu/cuda_check.h"
#include "gpu/epilogue.cuh"
#include "gpu/mma_ptx.cuh"
#include "gpu/smem_limit.cuh"
#include "strategy/structured/kernels/sp_stage.cuh"
#include "strategy/structured/kernels/sp_wgmma.cuh"
#include "strategy/structured/sp_kernel.h"

namespace {

using args = sp_stage_args;

/* WG warpgroups, MI instructions of 64 rows each, BN columns; MN: B staged
 * MN-major. */
template <int WG, int MI, int BN, bool MN> struct shape {
    static constexpr int tiles = 4 * WG * MI;
    static constexpr int threads = 128 * WG;
    static constexpr int a_bytes = tiles * SP_TILE_A_BYTES;
    static constexpr int b_at = tiles * (SP_TILE_A_BYTES + SP_TILE_META_BYTES);
    static constexpr int stage_bytes = SP_TILE_STAGE_BYTES(16 * tiles, BN);
    static constexpr int along_k = MN ? BN * 16 : 128; /* bytes between cores */
    static constexpr int along_n = MN ? 128 : 1024;
    static_assert(BN * 128 <= stage_bytes - b_at, "B's 64 rows fit the stage");
    /* the byte of B element (k, n) of the stage's 64 × BN */
    static __device__ __forceinline__ int at(int k, int n)
    {
        return k / 8 * along_k + n / 8 * along_n +
               (MN ? k % 8 * 16 + n % 8 * 2 : n % 8 * 16 + k % 8 * 2);
    }
};

/* The block's B pieces (sp_stage.cuh): MN-major, a piece 8 columns of one
 * row of B K×N; K-major, 8 k of one column of B N×K. */
template <class S, int BN, bool MN>
__device__ __forceinline__ b_plan<8 * BN, S::threads> plan_b(int n0)
{
    b_plan<8 * BN, S::threads> bp;
    constexpr int per_row = MN ? BN / 8 : 8;
#pragma unroll
    for (int c = 0; c < bp.count; c++) {
        const int i = threadIdx.x + c * S::threads, r = i / per_row, piece = i % per_row;
        bp.k[c] = MN ? r : 8 * piece;
        bp.j[c] = n0 + (MN ? 8 * piece : r);
        bp.dst[c] = i < 8 * BN ? S::b_at + (MN ? S::at(r, 8 * piece) : S::at(8 * piece, r)) : -1;
    }
    return bp;
}

/* Fill stage st's K-major B of step pair p by plain loads and stores: B's
 * rows not 16-byte aligned, or B N×K and gathered. */
template <typename T, class S, int BN, bool GATHER>
__device__ __forceinline__ void fill_b(const args &a, int n0, const int32_t *gather, int p,
                                       unsigned char *st)
{
    const T *b = static_cast<const T *>(a.b);
    for (int i = threadIdx.x; i < 64 * BN; i += S::threads) {
        const int r = i / BN, jj = i % BN, j = n0 + jj;
        const int kk = GATHER ? __ldg(gather + 64 * p + r) : 64 * p + r;
        *reinterpret_cast<T *>(st + S::b_at + S::at(r, jj)) =
            (GATHER || kk < a.k) && j < a.n ? b[kk * a.b_row + j * a.b_col]
                                            : elem<T>::from_float(0.f);
    }
}

template <typename T, int WG, int MI, int BN, bool GATHER, bool MN>
__global__ void __launch_bounds__(128 * WG) sp_wgmma_kernel(const args a)
{
    using S = shape<WG, MI, BN, MN>;
    extern __shared__ __align__(128) unsigned char smem[];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int wg = warp / 4, wi = warp % 4;
    const int tile0 = blockIdx.x * S::tiles, n0 = blockIdx.y * BN, stages = a.stages;
    const int32_t *gather = nullptr;
    if constexpr (GATHER) /* the block's rows lie in one block of V rows (bm divides V) */
        gather = a.gather + static_cast<int64_t>(tile0 * 16 / a.v) * a.kc;

    float acc[MI][BN / 2];
#pragma unroll
    for (int mi = 0; mi < MI; mi++)
#pragma unroll
        for (int j = 0; j < BN / 2; j++)
            acc[mi][j] = 0.f;

    const a_plan<S::tiles, S::threads> ap(a, tile0);
    const auto bp = plan_b<S, BN, MN>(n0);
    auto issue = [&](int p, unsigned char *st) {
        ap.issue(a, p, st);
        if (MN || a.vector_b)
            bp.template issue<T, MN, GATHER>(a, gather, p, st);
        else
            fill_b<T, S, BN, GATHER>(a, n0, gather, p, st);
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
        /* its bytes, written by this thread through the generic proxy, are
         * read by the tensor cores through the async one */
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads(); /* for every thread, and pair p - 1's stage is free */
        const int q = p + stages - 1;
        if (q < a.pairs)
            issue(q, smem + ws * S::stage_bytes);
        copy_commit();

        const unsigned char *st = smem + rs * S::stage_bytes;
        rs = rs + 1 == stages ? 0 : rs + 1;
        ws = ws + 1 == stages ? 0 : ws + 1;
        const uint4 *av = reinterpret_cast<const uint4 *>(st);
        const uint32_t *am = reinterpret_cast<const uint32_t *>(st + S::a_bytes);
        uint4 af[MI][2];
        uint32_t e[MI];
#pragma unroll
        for (int mi = 0; mi < MI; mi++) {
            const int t = (wg * MI + mi) * 4 + wi;
            e[mi] = am[t * 32 + lane];
            af[mi][0] = av[(t * 2) * 32 + lane];
            af[mi][1] = av[(t * 2 + 1) * 32 + lane];
        }
        wgmma_fence();
        const uint64_t d0 = descriptor(st + S::b_at, S::along_k, S::along_n);
        const uint64_t d1 = descriptor(st + S::b_at + 4 * S::along_k, S::along_k, S::along_n);
#pragma unroll
        for (int mi = 0; mi < MI; mi++)
            wgmma_sp<BN, 0, MN>(acc[mi], af[mi][0], d0, e[mi], 1, T());
#pragma unroll
        for (int mi = 0; mi < MI; mi++)
            wgmma_sp<BN, 1, MN>(acc[mi], af[mi][1], d1, e[mi], 1, T());
        wgmma_commit();
        /* done with the stage before the next pair's copies may overwrite it */
        wgmma_wait<0>();
    }

#pragma unroll
    for (int mi = 0; mi < MI; mi++)
#pragma unroll
        for (int j = 0; j < BN / 2; j++) {
            const int row = (tile0 + (wg * MI + mi) * 4 + wi) * 16 + (lane >> 2) + 8 * (j % 4 / 2);
            const int col = n0 + 8 * (j / 4) + 2 * (lane & 3) + (j & 1);
            if (row < a.m && col < a.n)
                store<T>(a, row, col, acc[mi][j]);
        }
}

template <typename T, int WG, int MI, int BN> void *kernel_layout(bool gather, bool mn)
{
    if (mn)
        return gather ? (void *)sp_wgmma_kernel<T, WG, MI, BN, true, true>
                      : (void *)sp_wgmma_kernel<T, WG, MI, BN, false, true>;
    return gather ? (void *)sp_wgmma_kernel<T, WG, MI, BN, true, false>
                  : (void *)sp_wgmma_kernel<T, WG, MI, BN, false, false>;
}

/* The warpgroups of each shape sp_config_refusal allows. */
template <typename T> void *kernel_shape(const sp_config *c, bool gather, bool mn)
{
    switch (c->bm * 1000 + c->bn) {
    case 64064: return kernel_layout<T, 1, 1, 64>(gather, mn);
    case 128128: return kernel_layout<T, 2, 1, 128>(gather, mn);
    case 128256: return kernel_layout<T, 2, 1, 256>(gather, mn);
    case 256128: return kernel_layout<T, 2, 2, 128>(gather, mn);
    default: return nullptr;
    }
}

void *kernel_for(const sp_config *c, const sp_device *d, bool mn)
{
    const bool gather = d->pattern.v != 0;
    if (c->kind != SP_WGMMA || sp_config_refusal(c, &d->pattern))
        return nullptr;
    if (d->dtype == SPF_DTYPE_F16)
        return kernel_shape<__half>(c, gather, mn);
    if (d->dtype == SPF_DTYPE_BF16)
        return kernel_shape<__nv_bfloat16>(c, gather, mn);
    return nullptr;
}

} // namespace

extern "C" spf_status sp_wgmma_occupancy(const sp_config *c, const sp_device *d, int *blocks)
{
    const void *k = kernel_for(c, d, true);
    if (!k)
        return FAIL(SPF_ERR_UNSUPPORTED, "structured: no wgmma kernel for m%d n%d, %s", c->bm,
                    c->bn, spf_dtype_name(d->dtype));
    return smem_occupancy(k, sp_config_threads(c), sp_config_smem(c), blocks);
}

extern "C" spf_status sp_wgmma_launch(const sp_device *d, const sp_config *c,
                                      const spmm_operands *op, void *stream)
{
    args a = stage_args(d, c, op);
    /* MN-major by cp.async for aligned K×N rows; else K-major, by cp.async
     * for aligned N×K columns that are not gathered, by plain loads
     * otherwise */
    const bool mn = op->b_layout == SPF_LAYOUT_N_LAST && a.vector_b;
    if (op->b_layout == SPF_LAYOUT_N_LAST || d->pattern.v)
        a.vector_b = a.vector_b && mn;
    return stage_launch(kernel_for(c, d, mn), d, c, op, a, stream);
}
