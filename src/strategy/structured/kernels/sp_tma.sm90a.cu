/* The structured TMA kernel, Hopper only (sm_90a), for 2:4 at large N: the
 * shape of a Hopper GEMM (warp specialisation, the copy engine, wgmma with
 * a group in flight) on the structured format, where the staged wgmma
 * kernel (sp_wgmma.sm90a.cu) spent its time in per-thread copies
 * (bench/results/structured/README.md, "N ≥ 256").
 *
 * A block of 384 threads takes bm = 128 · MI rows and BN columns of C:
 *
 * - Warpgroup 2, the producer: one thread walks K a step pair (64 rows of
 *   B) at a time and has the copy engine bring the pair's B into a ring of
 *   `stages` shared-memory stages (cp.async.bulk.tensor with the 128-byte
 *   swizzle, completing on the stage's `full` mbarrier); it waits on the
 *   stage's `empty` mbarrier before it reuses it. It gives its registers
 *   to the consumers (setmaxnreg).
 * - Warpgroups 0 and 1, the consumers: each multiplies MI × 64 rows by BN
 *   columns with wgmma.mma_async.sp m64nBNk32, B from the stage through a
 *   swizzled descriptor, A from registers. A is read by one warp only, so
 *   it does not pass through shared memory: each warp loads its fragments
 *   and metadata (the format's order, one coalesced 16-byte load a lane)
 *   straight into a ring of three register sets, two step pairs ahead of
 *   the multiply. A consumer keeps one pair's wgmma in flight while it
 *   issues the next; once a pair's group is done its stage goes back to
 *   the producer.
 *
 * B K×N (rows of N contiguous) is staged MN-major: per 64 columns a box of
 * 64 k × 128 bytes, the boxes 8192 bytes apart (the descriptor's leading
 * offset), 8 k rows of a box 1024 apart (stride offset), as the PTX ISA's
 * canonical 128-byte swizzled MN-major layout has it. B N×K (torch's X,
 * rows of K contiguous) is staged K-major: one box of BN rows × 64 k, 8
 * rows 1024 bytes apart; the pair's second step starts 64 bytes on.
 *
 * The copy engine needs B's base and pitch 16-byte aligned, and 2:4 (V:2:M
 * gathers B's rows, which a tensor copy cannot): otherwise sp_tma_launch
 * runs the staged wgmma kernel of the same shape. */
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "sp_tma.sm90a.cu is built for sm_90a only (CMakeLists.txt)"
#endif

#include <cuda.h>
#include <cuda_runtime.h>

#include <stdint.h>

#include "gpu/cuda_check.h"
#include "gpu/epilogue.cuh"
#include "gpu/mma_ptx.cuh"
#include "gpu/smem_limit.cuh"
#include "gpu/tensor_map.h"
#include "strategy/structured/kernels/sp_wgmma.cuh"
#include "strategy/structured/sp_kernel.h"

namespace {

struct tma_args {
    CUtensorMap b_map; /* first: 64-byte aligned in the parameter space */
    const uint4 *values;
    const uint32_t *meta;
    int32_t m, n, tiles, pairs, stages;
    void *c;
    int64_t c_row, c_col;
    const float *bias;
    int relu;
    const int32_t *row_map; /* always NULL: the epilogue's argument */
};

/* B's copy into shared memory: box at (c0, c1) of the map (c0 the
 * contiguous dimension), completing on bar. */
__device__ __forceinline__ void tma_load(void *dst, const CUtensorMap *map, int c0, int c1,
                                         uint64_t *bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(smem_addr(dst)),
                 "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(smem_addr(bar))
                 : "memory");
}

/* v0, v1: C elements (row, col) and (row, col + 1), bias, ReLU, T; as one
 * 4-byte store where C's rows are contiguous and the pair aligned. */
template <typename T>
__device__ __forceinline__ void store_pair(const tma_args &a, int row, int col, float v0, float v1)
{
    if (row >= a.m || col >= a.n)
        return;
    const int64_t at = row * a.c_row + col * a.c_col;
    if (col + 1 < a.n && a.c_col == 1 && at % 2 == 0) {
        if (a.bias)
            v0 += a.bias[row], v1 += a.bias[row];
        if (a.relu)
            v0 = fmaxf(v0, 0.f), v1 = fmaxf(v1, 0.f);
        T pair[2] = {elem<T>::from_float(v0), elem<T>::from_float(v1)};
        *reinterpret_cast<uint32_t *>(static_cast<T *>(a.c) + at) =
            *reinterpret_cast<const uint32_t *>(pair);
        return;
    }
    store<T>(a, row, col, v0);
    if (col + 1 < a.n)
        store<T>(a, row, col + 1, v1);
}

constexpr int RING = 3; /* register sets of A: two pairs ahead of the multiply */

template <typename T, int MI, int BN, bool MN>
__global__ void __launch_bounds__(384, 1) sp_tma_kernel(const __grid_constant__ tma_args a)
{
    constexpr int stage_bytes = BN * 128;     /* 64 k × BN × 2 bytes */
    constexpr int leading = MN ? 8192 : 16;   /* between boxes of 64 n; unused K-major */
    constexpr int k32 = MN ? 32 * 128 : 64;   /* the pair's second step */
    extern __shared__ __align__(1024) unsigned char dynamic[];
    unsigned char *smem = dynamic + (-smem_addr(dynamic) & 1023); /* the swizzle's atoms */
    __shared__ uint64_t full[SP_TMA_STAGES_MAX], empty[SP_TMA_STAGES_MAX];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int wg = warp / 4, wi = warp % 4;
    const int tile0 = blockIdx.x * 8 * MI, n0 = blockIdx.y * BN, stages = a.stages;
    if (threadIdx.x == 0) {
        for (int s = 0; s < stages; s++) {
            bar_init(&full[s], 1);
            bar_init(&empty[s], 8); /* lane 0 of each consumer warp */
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    /* 384 threads start at 168 registers (launch bounds); the consumers'
     * 128 accumulators and three sets of A need more: the producer keeps
     * 40 and each consumer takes 232 (40 + 2 · 232 = 3 · 168). */
    if (wg == 2) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
        if (threadIdx.x == 256) {
            asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&a.b_map))
                         : "memory");
            for (int p = 0, s = 0, round = 0; p < a.pairs; p++) {
                if (round > 0)
                    bar_wait(&empty[s], (round - 1) & 1);
                unsigned char *st = smem + s * stage_bytes;
                bar_arrive_expect(&full[s], stage_bytes);
                if constexpr (MN) {
#pragma unroll
                    for (int j = 0; j < BN / 64; j++)
                        tma_load(st + j * 8192, &a.b_map, n0 + 64 * j, 64 * p, &full[s]);
                } else {
                    tma_load(st, &a.b_map, 64 * p, n0, &full[s]);
                }
                if (++s == stages)
                    s = 0, round++;
            }
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");

    /* The warp's A: row tile (wg · MI + mi) · 4 + wi of the block (the last
     * tile again past the end: valid metadata, rows not stored). */
    const uint4 *av[MI];
    const uint32_t *am[MI];
#pragma unroll
    for (int mi = 0; mi < MI; mi++) {
        const int64_t t = min(tile0 + (wg * MI + mi) * 4 + wi, a.tiles - 1);
        av[mi] = a.values + t * a.pairs * 64 + lane;
        am[mi] = a.meta + t * a.pairs * 32 + lane;
    }
    uint4 af[RING][MI][2];
    uint32_t e[RING][MI];
    auto load = [&](uint4 (&f)[MI][2], uint32_t (&m)[MI], int p) {
        if (p >= a.pairs)
            return;
#pragma unroll
        for (int mi = 0; mi < MI; mi++) {
            f[mi][0] = __ldg(av[mi] + 64 * p);
            f[mi][1] = __ldg(av[mi] + 64 * p + 32);
            m[mi] = __ldg(am[mi] + 32 * p);
        }
    };
#pragma unroll
    for (int r = 0; r < RING - 1; r++)
        load(af[r], e[r], r);

    /* set by the first pair's wgmma (scale-d 0), not by stores: ptxas
     * serialises wgmma whose accumulators other instructions write while
     * a group is in flight (warning C7515) */
    float acc[MI][BN / 2];
    int s = 0, round = 0, last = -1;
    for (int p0 = 0; p0 < a.pairs; p0 += RING) {
#pragma unroll
        for (int r = 0; r < RING; r++) {
            const int p = p0 + r;
            if (p >= a.pairs)
                break;
            bar_wait(&full[s], round & 1);
            const unsigned char *st = smem + s * stage_bytes;
            const uint64_t d0 = descriptor(st, leading, 1024, true);
            const uint64_t d1 = descriptor(st + k32, leading, 1024, true);
            wgmma_fence();
#pragma unroll
            for (int mi = 0; mi < MI; mi++)
                wgmma_sp<BN, 0, MN>(acc[mi], af[r][mi][0], d0, e[r][mi], p > 0, T());
#pragma unroll
            for (int mi = 0; mi < MI; mi++)
                wgmma_sp<BN, 1, MN>(acc[mi], af[r][mi][1], d1, e[r][mi], 1, T());
            wgmma_commit();
            /* pair p − 1's group is done: its stage goes back, and its A
             * registers take pair p + 2 */
            wgmma_wait<1>();
            __syncwarp();
            if (last >= 0 && lane == 0)
                bar_arrive(&empty[last]);
            last = s;
            if (++s == stages)
                s = 0, round++;
            load(af[(r + RING - 1) % RING], e[(r + RING - 1) % RING], p + RING - 1);
        }
    }
    wgmma_wait<0>();

#pragma unroll
    for (int mi = 0; mi < MI; mi++) {
        const int row0 = (tile0 + (wg * MI + mi) * 4 + wi) * 16 + (lane >> 2);
#pragma unroll
        for (int j = 0; j < BN / 2; j += 2) {
            const int row = row0 + 8 * (j % 4 / 2);
            const int col = n0 + 8 * (j / 4) + 2 * (lane & 3);
            /* no pair of K: every sum is 0 (acc was never set) */
            const float v0 = a.pairs > 0 ? acc[mi][j] : 0.f, v1 = a.pairs > 0 ? acc[mi][j + 1] : 0.f;
            store_pair<T>(a, row, col, v0, v1);
        }
    }
}

template <typename T, int MI, int BN> void *kernel_layout(bool mn)
{
    return mn ? (void *)sp_tma_kernel<T, MI, BN, true> : (void *)sp_tma_kernel<T, MI, BN, false>;
}

/* The shapes sp_config_refusal allows. */
template <typename T> void *kernel_shape(const sp_config *c, bool mn)
{
    switch (c->bm * 1000 + c->bn) {
    case 128128: return kernel_layout<T, 1, 128>(mn);
    case 128256: return kernel_layout<T, 1, 256>(mn);
    case 256128: return kernel_layout<T, 2, 128>(mn);
    default: return nullptr;
    }
}

void *kernel_for(const sp_config *c, const sp_device *d, bool mn)
{
    if (c->kind != SP_TMA || sp_config_refusal(c, &d->pattern))
        return nullptr;
    if (d->dtype == SPF_DTYPE_F16)
        return kernel_shape<__half>(c, mn);
    if (d->dtype == SPF_DTYPE_BF16)
        return kernel_shape<__nv_bfloat16>(c, mn);
    return nullptr;
}

/* The staged wgmma kernel of c's shape, for operands the copy engine
 * cannot take. */
sp_config staged(const sp_config *c)
{
    return sp_config{SP_WGMMA, 0, 0, 0, c->stages < 4 ? c->stages : 4, c->bm, c->bn};
}

} // namespace

extern "C" spf_status sp_tma_occupancy(const sp_config *c, const sp_device *d, int *blocks)
{
    const void *k = kernel_for(c, d, true);
    if (!k)
        return FAIL(SPF_ERR_UNSUPPORTED, "structured: no TMA kernel for m%d n%d s%d, %s", c->bm,
                    c->bn, c->stages, spf_dtype_name(d->dtype));
    return smem_occupancy(k, sp_config_threads(c), sp_config_smem(c), blocks);
}

extern "C" spf_status sp_tma_launch(const sp_device *d, const sp_config *c,
                                    const spmm_operands *op, void *stream)
{
    const bool mn = op->b_layout == SPF_LAYOUT_N_LAST;
    const int64_t pitch = mn ? op->b_row : op->b_col;
    const int64_t rows = mn ? d->cols : op->n, cols = mn ? op->n : d->cols;
    const bool unit = mn ? op->b_col == 1 : op->b_row == 1;
    if (!unit || !tensor_map_fits(op->b, rows, cols, pitch)) {
        const sp_config w = staged(c);
        return sp_wgmma_launch(d, &w, op, stream);
    }
    const void *k = kernel_for(c, d, mn);
    if (!k)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "structured: no TMA kernel for m%d n%d s%d on a "
                    "format of V = %d", c->bm, c->bn, c->stages, d->pattern.v);
    tma_args a = {};
    spf_status status = tensor_map_2d(&a.b_map, d->dtype, op->b, rows, cols, pitch,
                                      mn ? 64 : c->bn, 64);
    if (status != SPF_OK)
        return status;
    a.values = reinterpret_cast<const uint4 *>(d->values);
    a.meta = d->meta;
    a.m = static_cast<int32_t>(d->rows);
    a.n = static_cast<int32_t>(op->n);
    a.tiles = static_cast<int32_t>(d->tiles);
    a.pairs = static_cast<int32_t>(d->pairs);
    a.stages = c->stages;
    a.c = op->c;
    a.c_row = op->c_row;
    a.c_col = op->c_col;
    a.bias = op->bias;
    a.relu = op->relu;
    const int64_t row_blocks = (d->tiles * 16 + c->bm - 1) / c->bm;
    const int64_t col_blocks = (op->n + c->bn - 1) / c->bn;
    if (row_blocks == 0 || col_blocks == 0)
        return SPF_OK;
    if (col_blocks > 65535 || row_blocks > INT32_MAX)
        return FAIL(SPF_ERR_UNSUPPORTED, "structured: %lld × %lld blocks exceed the grid",
                    (long long)row_blocks, (long long)col_blocks);
    dim3 grid(static_cast<unsigned>(row_blocks), static_cast<unsigned>(col_blocks));
    return smem_launch(k, grid, sp_config_threads(c), sp_config_smem(c), &a, stream);
}
