/* The tensor-core convolution kernel (conv/conv_tc.h says how the work is
 * cut). Instantiated for fp16 and bf16 × the three block widths.
 *
 * A block's loads all go out before it waits on any: the gather's
 * cp.async copies and the weights' entries' (into a stage, from which they
 * are stored into the zeroed A tile); the tensor cores start once both
 * tiles are in. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdint.h>

#include "conv/conv_tc.h"
#include "gpu/cuda_check.h"
#include "gpu/mma_ptx.cuh"
#include "gpu/smem_limit.cuh"

namespace {

constexpr int BM = CONV_TC_BM, kThreads = 256;
constexpr uint32_t kNoTap = 0xffffffffu; /* a column past C·R·S */

struct args {
    conv_tc_geom g;
    const int32_t *ptr;
    const uint32_t *entry;
    const void *in;
    void *out;
    const float *bias;
    const void *residual;
    float *workspace;
    int32_t *counter;
    int relu;
    int aligned; /* the input is 16-byte aligned: its runs go by cp.async */
};

/* The counter of a tile's finished slices: +1, acquire and release at GPU
 * scope (the block's partial sums, added before its barrier, are released
 * with it; the last block acquires everyone's). Its old value. */
__device__ __forceinline__ int arrive(int32_t *counter)
{
    int old;
    asm volatile("atom.add.acq_rel.gpu.s32 %0, [%1], 1;\n" : "=r"(old) : "l"(counter) : "memory");
    return old;
}

/* Warps: 4 along the channels (wm) × WN along the positions (wn) × KW
 * along the slice (wk), 8 in all. */
template <typename T, int NT, int WN, int KW>
__global__ void __launch_bounds__(kThreads, 2) conv_tc_kernel(const args a)
{
    static_assert(4 * WN * KW * 32 == kThreads, "8 warps a block");
    constexpr int BN = 8 * NT * WN, TP = BM + 1;
    extern __shared__ __align__(16) unsigned char smem[];
    __shared__ int last;
    const conv_tc_geom &g = a.g;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int n0 = blockIdx.x * BN, k0 = blockIdx.y * BM, kk0 = blockIdx.z * g.ks;
    const int pitch = g.ks + CONV_TC_PAD, runs = g.ks / 8;
    T *as = reinterpret_cast<T *>(smem);
    T *bs = as + BM * pitch;
    int4 *places = reinterpret_cast<int4 *>(smem + conv_tc_tile_bytes(&g)); /* corner, y0, x0 */
    int2 *taps = reinterpret_cast<int2 *>(places + BN);                     /* offset, dydx   */
    uint32_t *stage = reinterpret_cast<uint32_t *>(taps + runs);

    for (int i = tid; i < BN; i += kThreads) {
        int4 pl = make_int4(0, -(1 << 28), 0, 0); /* past the positions: all padding */
        if (n0 + i < g.cols)
            conv_tc_place(&g, n0 + i, &pl.x, &pl.y, &pl.z);
        places[i] = pl;
    }
    for (int i = tid; i < runs; i += kThreads) {
        int2 t = make_int2(0, static_cast<int>(kNoTap));
        if (kk0 + 8 * i < g.kred)
            conv_tc_tap(&g, kk0 + 8 * i, &t.x, reinterpret_cast<uint32_t *>(&t.y));
        taps[i] = t;
    }
    __syncthreads();

    /* B: run j of position n, threads along the runs (a tap's channels
     * are consecutive in memory); (n, j) stepped without a division; a
     * run in the padding is a zero-filling copy from the input's start */
    const T *in = static_cast<const T *>(a.in);
    const int dn = kThreads / runs, dj = kThreads - dn * runs;
    for (int n = tid / runs, j = tid - n * runs; n < BN;) {
        const int2 t = taps[j];
        const int4 pl = places[n];
        const bool inside = static_cast<uint32_t>(t.y) != kNoTap &&
                            conv_tc_inside(&g, pl.y, pl.z, static_cast<uint32_t>(t.y));
        const T *src = in + (inside ? pl.x + t.x : 0);
        T *dst = bs + n * pitch + 8 * j;
        if (a.aligned)
            copy16_or_zero(dst, src, inside ? 16 : 0);
        else
            copy16_plain(dst, src, inside ? 16 : 0);
        n += dn, j += dj;
        if (j >= runs)
            j -= runs, n++;
    }
    /* the entries' first stage, in flight with B */
    const int slot = blockIdx.y * g.splits + blockIdx.z;
    const int e0 = __ldg(a.ptr + slot), e1 = __ldg(a.ptr + slot + 1);
    for (int e = e0 + tid; e < min(e1, e0 + CONV_TC_STAGE); e += kThreads)
        copy4(stage + (e - e0), a.entry + e);
    copy_commit();

    /* A: zeroed, then the entries stored into it, a stage at a time */
    uint4 *a4 = reinterpret_cast<uint4 *>(as);
    for (int i = tid; i < BM * pitch / 8; i += kThreads)
        a4[i] = make_uint4(0u, 0u, 0u, 0u);
    uint16_t *ah = reinterpret_cast<uint16_t *>(as);
    for (int s0 = e0; s0 < e1; s0 += CONV_TC_STAGE) {
        const int count = min(CONV_TC_STAGE, e1 - s0);
        if (s0 > e0) {
            __syncthreads(); /* the last stage stored */
            for (int e = tid; e < count; e += kThreads)
                copy4(stage + e, a.entry + s0 + e);
            copy_commit();
        }
        copy_wait<0>();
        __syncthreads();
#pragma unroll 4
        for (int e = tid; e < count; e += kThreads) {
            const uint32_t v = stage[e];
            ah[(v >> 26) * pitch + (v >> 16 & 0x3ff)] = static_cast<uint16_t>(v);
        }
    }
    copy_wait<0>(); /* B, where the block has no entries */
    __syncthreads();

    /* warp (wm, wn, wk): channels 16·wm.., positions 8·NT·wn.., k16 steps
     * wk, wk + KW, ...; two sets of sums, alternate steps: twice the
     * independent mma chains */
    const int wm = warp & 3, wn = (warp >> 2) % WN, wk = (warp >> 2) / WN;
    float acc[2][NT][4];
#pragma unroll
    for (int u = 0; u < 2; u++)
#pragma unroll
        for (int j = 0; j < NT; j++)
            acc[u][j][0] = acc[u][j][1] = acc[u][j][2] = acc[u][j][3] = 0.0f;
    if (k0 + 16 * wm < g.k && n0 + 8 * NT * wn < g.cols) {
        const T *arow = as + (16 * wm + (lane & 15)) * pitch + (lane >> 4) * 8;
        const T *brow = bs + (8 * NT * wn + (lane & 7) + ((lane >> 4) << 3)) * pitch +
                        ((lane >> 3) & 1) * 8;
        for (int kc = 16 * wk; kc < g.ks; kc += 32 * KW) {
#pragma unroll
            for (int u = 0; u < 2; u++) {
                const int at = kc + 16 * KW * u;
                if (u == 1 && at >= g.ks)
                    break;
                uint32_t af[4];
                ldsm_x4<false>(arow + at, af);
#pragma unroll
                for (int jj = 0; jj < NT / 2; jj++) {
                    uint32_t bf[4];
                    ldsm_x4<false>(brow + jj * 16 * pitch + at, bf);
                    mma_16816(acc[u][2 * jj], af, bf[0], bf[1], T());
                    mma_16816(acc[u][2 * jj + 1], af, bf[2], bf[3], T());
                }
            }
        }
    }

    /* the sums through shared memory as [position][channel], the KW
     * warps' added in turn, so that the stores are runs of the block's
     * channels of one position */
    float *sums = reinterpret_cast<float *>(smem);
#pragma unroll
    for (int w = 0; w < KW; w++) {
        __syncthreads();
        if (wk != w)
            continue;
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int h = 0; h < 2; h++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    float &to = sums[(8 * NT * wn + 8 * j + 2 * (lane & 3) + e) * TP + 16 * wm +
                                     (lane >> 2) + 8 * h];
                    const float v = acc[0][j][2 * h + e] + acc[1][j][2 * h + e];
                    to = w == 0 ? v : to + v;
                }
    }
    __syncthreads();
    /* the epilogue: thread tid takes channel tid % BM of positions
     * tid / BM + 4u (kThreads = 4·BM), E of them, its loads issued
     * together; offsets in 32 bits (conv_tc_geometry) */
    constexpr int E = BN * BM / kThreads;
    static_assert(kThreads == 4 * BM, "a thread's channel fixed");
    const int kl = tid % BM, p0 = tid / BM, npos = min(BN, g.cols - n0);
    const bool channel = kl < min(BM, g.k - k0);
    float y[E];
    int at[E];
#pragma unroll
    for (int u = 0; u < E; u++) {
        y[u] = sums[(p0 + 4 * u) * TP + kl];
        at[u] = (n0 + p0 + 4 * u) * g.k + k0 + kl;
    }
    if (g.splits > 1) {
        /* the partial sums into the workspace; the tile's last block to
         * finish reads them back and leaves workspace and counter zeroed */
#pragma unroll
        for (int u = 0; u < E; u++)
            if (channel && p0 + 4 * u < npos)
                atomicAdd(a.workspace + at[u], y[u]);
        __syncthreads();
        const int tile = blockIdx.y * gridDim.x + blockIdx.x;
        if (tid == 0)
            last = arrive(a.counter + tile) == g.splits - 1;
        __syncthreads();
        if (!last)
            return;
#pragma unroll
        for (int u = 0; u < E; u++)
            if (channel && p0 + 4 * u < npos) {
                y[u] = __ldcg(a.workspace + at[u]);
                __stcg(a.workspace + at[u], 0.0f);
            }
        if (tid == 0)
            a.counter[tile] = 0;
    }
    if (!channel)
        return;
    const float bias = a.bias ? a.bias[k0 + kl] : 0.0f;
    float res[E];
#pragma unroll
    for (int u = 0; u < E; u++)
        res[u] = a.residual && p0 + 4 * u < npos
                     ? elem<T>::to_float(static_cast<const T *>(a.residual)[at[u]])
                     : 0.0f;
#pragma unroll
    for (int u = 0; u < E; u++) {
        float v = y[u] + bias + res[u];
        if (a.relu)
            v = fmaxf(v, 0.0f);
        if (p0 + 4 * u < npos)
            static_cast<T *>(a.out)[at[u]] = elem<T>::from_float(v);
    }
}

template <typename T> const void *kernel_bn(int bn)
{
    switch (bn) {
    case 16: return reinterpret_cast<const void *>(conv_tc_kernel<T, 2, 1, 2>);
    case 32: return reinterpret_cast<const void *>(conv_tc_kernel<T, 4, 1, 2>);
    case 64: return reinterpret_cast<const void *>(conv_tc_kernel<T, 4, 2, 1>);
    }
    return nullptr;
}

} // namespace

extern "C" spf_status conv_tc_launch(const conv_tc *x, const void *in, void *out,
                                     const float *bias, const void *residual, void *stream)
{
    const conv_tc_geom &g = x->geom;
    const void *k = x->dtype == SPF_DTYPE_F16    ? kernel_bn<__half>(g.bn)
                    : x->dtype == SPF_DTYPE_BF16 ? kernel_bn<__nv_bfloat16>(g.bn)
                                                 : nullptr;
    if (!k)
        return FAIL(SPF_ERR_INTERNAL, "conv tc: no kernel of dtype %d, bn %d", (int)x->dtype,
                    g.bn);
    args a = {g, x->ptr, x->entry, in, out, bias, residual, x->workspace, x->counter, x->relu,
              reinterpret_cast<uintptr_t>(in) % 16 == 0};
    const dim3 grid(static_cast<unsigned>(g.ntiles), static_cast<unsigned>(g.mtiles),
                    static_cast<unsigned>(g.splits));
    return smem_launch(k, grid, kThreads, conv_tc_smem(&g), &a, stream);
}
