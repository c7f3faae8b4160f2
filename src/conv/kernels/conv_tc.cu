/* The tensor-core convolution kernel (conv/conv_tc.h says how the work is
 * cut). Instantiated for fp16 and bf16 × the three block widths × the
 * slices' two ways to meet (a cluster, the workspace) × B's two ways in
 * (the gather, the copy engine).
 *
 * A block's loads all go out before it waits on any: first its entries'
 * (at a fixed place: nothing to read before), then B's (the copy engine's
 * boxes, or the gather's copies: the tables the gather needs are computed
 * while the entries are in flight); the A tile is zeroed and the entries
 * stored into it, each by the warp that zeroed their units, while B's
 * copies are in flight (or the previous kernel still runs), and the
 * tensor cores start once both tiles are in. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdint.h>

#include "conv/conv_tc.h"
#include "gpu/bulk_copy.cuh"
#include "gpu/cluster.cuh"
#include "gpu/cuda_check.h"
#include "gpu/grid_dependency.cuh"
#include "gpu/mma_ptx.cuh"
#include "gpu/smem_limit.cuh"
#include "gpu/tensor_map.h"

namespace {

constexpr int BM = CONV_TC_BM, kThreads = 256;
constexpr uint32_t kNoTap = 0xffffffffu; /* a column past C·R·S */

struct args {
    CUtensorMap map; /* B's boxes (TM); first: 64-byte aligned in the parameters */
    conv_tc_geom g;
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

/* B's slice by the copy engine (TM), thread 0's: one im2col box a chunk
 * of 64 filter columns (one tap's 64 channels) over the block's BN
 * positions, into chunk after chunk of BN rows of 128 bytes; the boxes
 * past the filter's columns (the last slice's) are left to the caller to
 * zero. The boxes complete on *full. One thread sets up the mbarrier and
 * issues them all: at 834f671 warp 0 issued a box a lane, and ptxas ran
 * lane 0's init on the warp's uniform path, which racecheck counted as
 * every lane's write against lane 0's arrival (76 hazards). */
template <int BN>
__device__ __forceinline__ void boxes(const args &a, void *bs, int n0, int kk0, uint64_t *full)
{
    const conv_tc_geom &g = a.g;
    bar_init(full, 1);
    bar_init_fence();
    const int chunks = min(g.ks, g.kred - kk0) / CONV_TC_CHUNK;
    bar_arrive_expect(full, static_cast<uint32_t>(chunks * BN * CONV_TC_CHUNK * 2));
    int corner, y0, x0;
    conv_tc_place(&g, n0, &corner, &y0, &x0);
    const int image = static_cast<int>(conv_div(static_cast<uint32_t>(n0), g.by_pq));
    /* the first chunk's tap (dy, dx) and channel c, then stepped */
    const int tap = static_cast<int>(conv_div(static_cast<uint32_t>(kk0), g.by_c));
    int dy = static_cast<int>(conv_div(static_cast<uint32_t>(tap), g.by_s)), dx = tap - dy * g.s;
    int c = kk0 - tap * g.c;
    for (int q = 0; q < chunks; q++) {
        tma_load_im2col(static_cast<unsigned char *>(bs) + q * BN * CONV_TC_CHUNK * 2, &a.map, c,
                        x0, y0, image, dx, dy, full);
        if ((c += CONV_TC_CHUNK) == g.c) {
            c = 0;
            if (++dx == g.s)
                dx = 0, dy++;
        }
    }
}

/* Warps: 4 along the channels (wm) × WN along the positions (wn) × KW
 * along the slice (wk), 8 in all. CL: the slices meet in a cluster. TM:
 * B by the copy engine (sm_90; the host launches it only there). */
template <typename T, int NT, int WN, int KW, bool CL, bool TM>
__global__ void __launch_bounds__(kThreads, 2) conv_tc_kernel(const __grid_constant__ args a)
{
    static_assert(4 * WN * KW * 32 == kThreads, "8 warps a block");
    constexpr int BN = 8 * NT * WN, TP = BM + 1;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    __shared__ int last;
    __shared__ uint64_t full; /* TM: B's boxes in */
    const conv_tc_geom &g = a.g;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int n0 = blockIdx.x * BN, k0 = blockIdx.y * BM, kk0 = blockIdx.z * g.ks;
    const int pitch = g.ks + CONV_TC_PAD, runs = g.ks / 8;
    /* TM: the boxes first, at the swizzle's alignment, then the A tile;
     * else the A tile, then B, then the gather's tables */
    unsigned char *smem =
        TM ? smem_raw + ((CONV_TC_ALIGN - smem_addr(smem_raw) % CONV_TC_ALIGN) % CONV_TC_ALIGN)
           : smem_raw;
    /* A's tile: BM rows of pitch elements, then a slot a thread for its
     * padding entries (conv_tc_dump) */
    T *bs = TM ? reinterpret_cast<T *>(smem)
               : reinterpret_cast<T *>(smem) + BM * pitch + CONV_TC_THREADS;
    T *as = TM ? bs + BN * g.ks : reinterpret_cast<T *>(smem);
    int4 *places = reinterpret_cast<int4 *>(smem + conv_tc_tile_bytes(&g)); /* corner, y0, x0 */
    int2 *taps = reinterpret_cast<int2 *>(places + BN);                     /* offset, dydx   */

    /* this thread's entries (conv_tc_slot): the first kHead pieces loaded
     * now, in flight while the tile is zeroed */
    static_assert(kThreads == CONV_TC_THREADS, "the format's threads");
    constexpr int kHead = 4;
    const uint4 *entry = reinterpret_cast<const uint4 *>(a.entry) +
                         static_cast<size_t>(blockIdx.y * g.splits + blockIdx.z) * g.cap / 4 + tid;
    const int pieces = g.cap / (4 * kThreads);
    uint4 head[kHead];
#pragma unroll
    for (int p = 0; p < kHead; p++)
        if (p < pieces)
            head[p] = __ldg(entry + p * kThreads);
    /* the stream's next kernel may start its preamble once every block
     * of this one has begun; this one waits for the previous kernel
     * (which may write the input) only where it first reads the input:
     * thread 0 before B's boxes, while the others expand the weights
     * (gpu/grid_dependency.cuh) */
    grid_dependents_launch();
    if (TM && tid == 0) {
        grid_dependency_wait();
        boxes<BN>(a, bs, n0, kk0, &full);
    }

    /* a thread a position and a run (BN and ks / 8 < kThreads) */
    static_assert(BN <= kThreads && CONV_TC_MAX_KS / 8 <= kThreads, "a table entry a thread");
    if (!TM && tid < BN) {
        int4 pl = make_int4(0, -(1 << 28), 0, 0); /* past the positions: all padding */
        if (n0 + tid < g.cols)
            conv_tc_place(&g, n0 + tid, &pl.x, &pl.y, &pl.z);
        places[tid] = pl;
    }
    if (!TM && tid < runs) {
        int2 t = make_int2(0, static_cast<int>(kNoTap));
        if (kk0 + 8 * tid < g.kred)
            conv_tc_tap(&g, kk0 + 8 * tid, &t.x, reinterpret_cast<uint32_t *>(&t.y));
        taps[tid] = t;
    }
    /* the A tile zeroed, unit u by thread u mod kThreads: warp w's units
     * are the ones its entries fall in (conv_tc_owner) */
    uint4 *a4 = reinterpret_cast<uint4 *>(as);
#pragma unroll 4
    for (int i = tid; i < BM * pitch / 8; i += kThreads)
        a4[i] = make_uint4(0u, 0u, 0u, 0u);
    if (TM) {
        /* the last slice's boxes past the filter: zeros (A's columns there
         * are zeros too, but uninitialised memory may hold NaN) */
        const int valid = max(min(g.ks, g.kred - kk0), 0);
        uint4 *b4 = reinterpret_cast<uint4 *>(bs);
        for (int i = BN * valid / 8 + tid; i < BN * g.ks / 8; i += kThreads)
            b4[i] = make_uint4(0u, 0u, 0u, 0u);
    }

    /* A: this thread's entries stored into its warp's zeroed units (with
     * the copy engine at once, its warp's zeroing being all they wait
     * for; with the gather after its copies are issued) */
    uint16_t *ah = reinterpret_cast<uint16_t *>(as);
    auto store = [&](const uint4 v) {
        ah[v.x >> 16] = static_cast<uint16_t>(v.x);
        ah[v.y >> 16] = static_cast<uint16_t>(v.y);
        ah[v.z >> 16] = static_cast<uint16_t>(v.z);
        ah[v.w >> 16] = static_cast<uint16_t>(v.w);
    };
    auto expand = [&] {
#pragma unroll
        for (int p = 0; p < kHead; p++)
            if (p < pieces)
                store(head[p]);
#pragma unroll 4
        for (int p = kHead; p < pieces; p++)
            store(__ldg(entry + p * kThreads));
    };
    if (TM) {
        __syncwarp();
        expand();
    } else {
        __syncthreads(); /* the tables */
        /* B: run j of position n, threads along the runs (a tap's channels
         * are consecutive in memory); (n, j) stepped without a division;
         * a run in the padding is a zero-filling copy from the input's
         * start */
        grid_dependency_wait();
        const T *in = static_cast<const T *>(a.in);
        const int dn = static_cast<int>(conv_div(kThreads, g.by_runs)), dj = kThreads - dn * runs;
        int n = static_cast<int>(conv_div(static_cast<uint32_t>(tid), g.by_runs));
        for (int j = tid - n * runs; n < BN;) {
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
        copy_commit();
        expand();
    }

    /* the epilogue's positions of this block: those of every u < E but in
     * a cluster, where block r finishes u ≡ r (mod slices); its bias and
     * residual loaded now (after the previous kernel, which may write
     * them), but where a split's last block is not known yet */
    if (TM)
        grid_dependency_wait();
    constexpr int E = BN * BM / kThreads;
    static_assert(kThreads == 4 * BM, "a thread's channel fixed");
    const int kl = tid % BM, p0 = tid / BM, npos = min(BN, g.cols - n0);
    const bool channel = kl < min(BM, g.k - k0), workspace = !CL && g.splits > 1;
    const int rank = CL ? cluster_rank() : 0;
    auto mine = [&](int u) { return p0 + 4 * u < npos && (!CL || u % g.splits == rank); };
    auto residual = [&](int u) {
        return elem<T>::to_float(
            static_cast<const T *>(a.residual)[(n0 + p0 + 4 * u) * g.k + k0 + kl]);
    };
    const float bias = a.bias && channel ? a.bias[k0 + kl] : 0.0f;
    float res[E];
#pragma unroll
    for (int u = 0; u < E; u++)
        res[u] = a.residual && channel && !workspace && mine(u) ? residual(u) : 0.0f;

    copy_wait<0>(); /* B's gather */
    __syncthreads();
    if (TM)
        bar_wait(&full, 0); /* after the barrier: thread 0 has set it up */
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
        /* ldmatrix's rows of B: lane's position in each pair jj of n8
         * tiles (16 positions apart), its 8 columns from a step's */
        const int bpos = 8 * NT * wn + (lane & 7) + ((lane >> 4) << 3), bhalf = (lane >> 3) & 1;
        /* the k16 step at column `at` into sums u, B's rows of pair jj
         * at brow + jj · rows */
        auto step = [&](int u, int at, const T *brow, int rows) {
            uint32_t af[4];
            ldsm_x4<false>(arow + at, af);
#pragma unroll
            for (int jj = 0; jj < NT / 2; jj++) {
                uint32_t bf[4];
                ldsm_x4<false>(brow + jj * rows, bf);
                mma_16816(acc[u][2 * jj], af, bf[0], bf[1], T());
                mma_16816(acc[u][2 * jj + 1], af, bf[2], bf[3], T());
            }
        };
        if (TM) {
            /* chunk by chunk: its 4 steps' swizzled pieces are the same in
             * every chunk (conv_tc_swizzled), so the offsets are fixed */
            const T *brow = bs + bpos * CONV_TC_CHUNK;
            for (int q = 0; q < g.ks / CONV_TC_CHUNK; q++, brow += BN * CONV_TC_CHUNK)
#pragma unroll
                for (int i = 0; i < 4 / KW; i++) {
                    const int st = wk + KW * i; /* sums i mod 2: compile-time */
                    step(i & 1, q * CONV_TC_CHUNK + 16 * st,
                         brow + ((2 * st + bhalf) ^ (lane & 7)) * 8, 16 * CONV_TC_CHUNK);
                }
        } else {
            const T *brow = bs + bpos * pitch + bhalf * 8;
            for (int kc = 16 * wk; kc < g.ks; kc += 32 * KW)
#pragma unroll
                for (int u = 0; u < 2; u++) {
                    const int at = kc + 16 * KW * u;
                    if (u == 1 && at >= g.ks)
                        break;
                    step(u, at, brow + at, 16 * pitch);
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
     * tid / BM + 4u (kThreads = 4·BM); offsets in 32 bits
     * (conv_tc_geometry) */
    float y[E];
    int at[E];
#pragma unroll
    for (int u = 0; u < E; u++) {
        y[u] = sums[(p0 + 4 * u) * TP + kl];
        at[u] = (n0 + p0 + 4 * u) * g.k + k0 + kl;
    }
    if (CL) {
        /* every block's sums in place: this block's positions added from
         * each, in rank order; its arrival says it has read them, and it
         * leaves only once all have */
        cluster_arrive();
        cluster_wait();
#pragma unroll
        for (int u = 0; u < E; u++)
            if (u % g.splits == rank) {
                const float *mine_at = sums + (p0 + 4 * u) * TP + kl;
                float v = 0.0f;
#pragma unroll 4
                for (int r = 0; r < g.splits; r++)
                    v += *cluster_peer(mine_at, r);
                y[u] = v;
            }
        cluster_arrive();
    } else if (workspace) {
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
                res[u] = a.residual ? residual(u) : 0.0f;
            }
        if (tid == 0)
            a.counter[tile] = 0;
    }
    if (channel) {
#pragma unroll
        for (int u = 0; u < E; u++) {
            float v = y[u] + bias + res[u];
            if (a.relu)
                v = fmaxf(v, 0.0f);
            if (mine(u))
                static_cast<T *>(a.out)[at[u]] = elem<T>::from_float(v);
        }
    }
    if (CL)
        cluster_wait();
}

template <typename T, bool CL, bool TM> const void *kernel_bn(int bn)
{
    switch (bn) {
    case 16: return reinterpret_cast<const void *>(conv_tc_kernel<T, 2, 1, 2, CL, TM>);
    case 32: return reinterpret_cast<const void *>(conv_tc_kernel<T, 4, 1, 2, CL, TM>);
    case 64: return reinterpret_cast<const void *>(conv_tc_kernel<T, 4, 2, 1, CL, TM>);
    }
    return nullptr;
}

template <typename T> const void *kernel_of(const conv_tc_geom &g, bool tma)
{
    if (tma)
        return g.cluster ? kernel_bn<T, true, true>(g.bn) : kernel_bn<T, false, true>(g.bn);
    return g.cluster ? kernel_bn<T, true, false>(g.bn) : kernel_bn<T, false, false>(g.bn);
}

/* blocks along positions × channels × slices */
dim3 grid_of(const conv_tc_geom &g)
{
    return dim3(static_cast<unsigned>(g.ntiles), static_cast<unsigned>(g.mtiles),
                static_cast<unsigned>(g.splits));
}

/* the kernel of g's config, B by the copy engine or not (tma) */
const void *kernel_for(spf_dtype dtype, const conv_tc_geom &g, bool tma)
{
    return dtype == SPF_DTYPE_F16    ? kernel_of<__half>(g, tma)
           : dtype == SPF_DTYPE_BF16 ? kernel_of<__nv_bfloat16>(g, tma)
                                     : nullptr;
}

} // namespace

extern "C" spf_status conv_tc_cluster_check(const conv_tc_geom *g, spf_dtype dtype)
{
    int clusters = 0;
    spf_status status = cluster_launch_supported(&clusters);
    if (status != SPF_OK)
        return status;
    const void *k = kernel_for(dtype, *g, g->tma != 0);
    if (!clusters || !k)
        return FAIL(SPF_ERR_UNSUPPORTED, "conv tc: %d slices in a cluster on a device without "
                    "thread-block clusters (compute capability 9.0 or newer)", g->splits);
    /* past 8 blocks a cluster only where the kernel allows it (both
     * kernels of a copy-engine config: the gather's takes an input the
     * engine cannot), and where the device can place one (the blocks of a
     * cluster share a GPC) */
    for (int tma = 0; tma <= g->tma && g->splits > 8 && status == SPF_OK; tma++)
        status = CUDA_CHECK(cudaFuncSetAttribute(
            kernel_for(dtype, *g, tma != 0), cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    const size_t smem = conv_tc_smem(g);
    int fit = 0;
    if (status == SPF_OK)
        status = cluster_fit(k, grid_of(*g), kThreads, smem, g->splits, &fit);
    if (status == SPF_OK && fit < 1)
        status = FAIL(SPF_ERR_UNSUPPORTED, "conv tc: the device places no cluster of %d blocks "
                      "of %zu bytes of shared memory", g->splits, smem);
    return status;
}

extern "C" spf_status conv_tc_launch(const conv_tc *x, const void *in, void *out,
                                     const float *bias, const void *residual, void *stream)
{
    const conv_tc_geom &g = x->geom;
    const bool aligned = reinterpret_cast<uintptr_t>(in) % 16 == 0, tma = g.tma && aligned;
    const void *k = kernel_for(x->dtype, g, tma);
    if (!k)
        return FAIL(SPF_ERR_INTERNAL, "conv tc: no kernel of dtype %d, bn %d", (int)x->dtype,
                    g.bn);
    args a = {};
    a.g = g;
    a.entry = x->entry;
    a.in = in;
    a.out = out;
    a.bias = bias;
    a.residual = residual;
    a.workspace = x->workspace;
    a.counter = x->counter;
    a.relu = x->relu;
    a.aligned = aligned;
    if (tma) {
        /* the map holds the input's address: encoded each launch (a CUDA
         * graph keeps the parameters it captured) */
        const int64_t nhwc[4] = {g.cols / (g.p * g.q), g.h, g.w, g.c};
        int32_t lower[2], upper[2];
        conv_tc_box(&g, lower, upper);
        spf_status status = tensor_map_im2col(&a.map, x->dtype, in, nhwc, lower, upper, g.stride,
                                              g.bn, CONV_TC_CHUNK);
        if (status != SPF_OK)
            return status;
    }
    return smem_launch_ex(k, grid_of(g), kThreads, conv_tc_smem(&g), &a, g.cluster ? g.splits : 1,
                          x->early, stream);
}
