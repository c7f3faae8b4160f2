/* The window kernel (conv/conv_window.h says how the work is cut).
 * Instantiated for fp32, fp16 and bf16 × rw (1, 2, 4, 8) × j (1, 2, 4).
 *
 * Per nonzero a warp spends two shuffles (its value and window offset,
 * loaded 32 at a time by the lanes) and per position one shared load and
 * one FMA: the window, stored as fp32, costs no conversion in the loop.
 * The copy into the window reads 16-byte channel runs where C allows; its
 * threads walk the window's positions fastest, so that their fp32 stores
 * fall on consecutive banks. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdint.h>

#include "conv/conv_window.h"
#include "gpu/cuda_check.h"
#include "gpu/mma_ptx.cuh"
#include "gpu/smem_limit.cuh"

namespace {

constexpr int kThreads = CONV_WINDOW_WARPS * 32;

struct args {
    conv_window_geom g;
    const int32_t *ptr;
    const uint2 *entry;
    const void *in;
    void *out;
    const float *bias;
    const void *residual;
    int relu;
    int vector; /* the input's channel runs are read 16 bytes at a time */
};

/* Element u of a 16-byte run of T as a float (u a constant: the words
 * stay in registers). */
template <typename T> __device__ __forceinline__ float run_value(const uint32_t (&w)[4], int u);
template <> __device__ __forceinline__ float run_value<float>(const uint32_t (&w)[4], int u)
{
    return __uint_as_float(w[u]);
}
template <> __device__ __forceinline__ float run_value<__half>(const uint32_t (&w)[4], int u)
{
    return __half2float(__ushort_as_half(static_cast<unsigned short>(w[u / 2] >> (16 * (u & 1)))));
}
template <> __device__ __forceinline__ float run_value<__nv_bfloat16>(const uint32_t (&w)[4], int u)
{
    return __uint_as_float(u & 1 ? w[u / 2] & 0xffff0000u : w[u / 2] << 16);
}

/* Channels c0 .. c0 + cc - 1 of the window's first `rows` rows, from the
 * input of `image`, into win (channel-major, plane wr·ww), zeros in the
 * padding. A warp takes a row of one run of channels (V channels where
 * they are read 16 bytes at a time, else one) at a time, its lanes along
 * the row, so that their stores fall on consecutive banks and the row's
 * place is worked out once; a lane issues kLoads loads before it stores
 * any (one at a time, the copy was a chain of memory latencies). */
constexpr int kLoads = 2;

template <typename T>
__device__ __forceinline__ void stage(const args &a, int image, int first, int rows, int c0,
                                      int cc, float *win)
{
    const conv_window_geom &g = a.g;
    const T *in = static_cast<const T *>(a.in);
    const int we = g.wr * g.ww, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    constexpr int V = 16 / sizeof(T);
    const int per = a.vector ? V : 1, lines = cc / per * rows;
    for (int line = warp; line < lines; line += CONV_WINDOW_WARPS) {
        const int run = line / rows, y = line - run * rows;
        const int64_t row = conv_window_row(&g, image, first, y);
        const T *src = in + (row >= 0 ? row : 0) + c0 + run * per;
        float *dst = win + run * per * we + y * g.ww;
        for (int x0 = lane; x0 < g.ww; x0 += 32 * kLoads) {
            uint4 v[kLoads];
#pragma unroll
            for (int u = 0; u < kLoads; u++) {
                const int x = x0 + 32 * u, ix = x < g.ww ? conv_window_column(&g, x) : -1;
                v[u] = make_uint4(0u, 0u, 0u, 0u);
                if (row >= 0 && ix >= 0) {
                    const T *at = src + static_cast<int64_t>(ix) * g.c;
                    if (a.vector)
                        v[u] = __ldg(reinterpret_cast<const uint4 *>(at));
                    else
                        v[u].x = __float_as_uint(elem<T>::to_float(*at));
                }
            }
#pragma unroll
            for (int u = 0; u < kLoads; u++) {
                const int x = x0 + 32 * u;
                const uint32_t words[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
                if (x < g.ww && !a.vector)
                    dst[x] = __uint_as_float(words[0]);
                if (x < g.ww && a.vector) {
#pragma unroll
                    for (int e = 0; e < V; e++)
                        dst[x + e * we] = run_value<T>(words, e);
                }
            }
        }
    }
}

template <typename T, int RW, int J>
__global__ void __launch_bounds__(kThreads) window_kernel(const args a)
{
    extern __shared__ float smem[];
    constexpr int KB = CONV_WINDOW_WARPS * RW, KP = KB + 1; /* KP odd: no bank conflicts */
    const conv_window_geom &g = a.g;
    const int image = blockIdx.x / g.tiles, tile = blockIdx.x - image * g.tiles;
    const int k0 = blockIdx.y * KB, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int pq = g.p * g.q, pos0 = tile * g.pt;
    const int first = conv_window_first_row(&g, tile), rows = conv_window_rows(&g, tile);
    /* a position past the image reads tap offsets alone: inside the
     * staged rows, its sums never stored */
    int at[J];
#pragma unroll
    for (int j = 0; j < J; j++) {
        const int pos = pos0 + lane + 32 * j;
        at[j] = pos < pq ? conv_window_position(&g, first, pos) : 0;
    }
    float acc[RW][J];
#pragma unroll
    for (int rr = 0; rr < RW; rr++)
#pragma unroll
        for (int j = 0; j < J; j++)
            acc[rr][j] = 0.0f;

    for (int ch = 0; ch < g.chunks; ch++) {
        const int c0 = ch * g.cc;
        if (ch > 0)
            __syncthreads(); /* every warp is done with the last chunk */
        /* lane rr holds row rr's range of the chunk, loaded before the copy */
        int my_beg = 0, my_end = 0;
        if (lane < RW && k0 + warp * RW + lane < g.k) {
            const int at_ptr = (k0 + warp * RW + lane) * g.chunks + ch;
            my_beg = __ldg(a.ptr + at_ptr);
            my_end = __ldg(a.ptr + at_ptr + 1);
        }
        stage<T>(a, image, first, rows, c0, min(g.cc, g.c - c0), smem);
        __syncthreads();
#pragma unroll
        for (int rr = 0; rr < RW; rr++) {
            const int beg = __shfl_sync(0xffffffffu, my_beg, rr);
            const int end = __shfl_sync(0xffffffffu, my_end, rr); /* 0 .. 0 past K */
            for (int e = beg; e < end; e += 32) {
                const uint2 mine = e + lane < end ? __ldg(a.entry + e + lane) : make_uint2(0u, 0u);
                const int n = min(32, end - e);
#pragma unroll 4
                for (int t = 0; t < n; t++) {
                    const float v = __uint_as_float(__shfl_sync(0xffffffffu, mine.x, t));
                    const float *w = smem + __shfl_sync(0xffffffffu, mine.y, t);
#pragma unroll
                    for (int j = 0; j < J; j++)
                        acc[rr][j] = fmaf(v, w[at[j]], acc[rr][j]);
                }
            }
        }
    }

    /* the sums through shared memory, so that the stores are runs of the
     * block's KB channels of one position */
    __syncthreads();
#pragma unroll
    for (int rr = 0; rr < RW; rr++)
#pragma unroll
        for (int j = 0; j < J; j++)
            smem[(lane + 32 * j) * KP + warp * RW + rr] = acc[rr][j];
    __syncthreads();
    const int npos = min(g.pt, pq - pos0), nk = min(KB, g.k - k0);
    T *out = static_cast<T *>(a.out);
    const T *res = static_cast<const T *>(a.residual);
    const int64_t base = (static_cast<int64_t>(image) * pq + pos0) * g.k + k0;
    for (int i = threadIdx.x; i < npos * KB; i += kThreads) {
        const int pl = i / KB, kl = i - pl * KB;
        if (kl >= nk)
            continue;
        float y = smem[pl * KP + kl];
        if (a.bias)
            y += a.bias[k0 + kl];
        const int64_t at_out = base + static_cast<int64_t>(pl) * g.k + kl;
        if (res)
            y += elem<T>::to_float(res[at_out]);
        if (a.relu)
            y = fmaxf(y, 0.0f);
        out[at_out] = elem<T>::from_float(y);
    }
}

template <typename T, int RW> const void *kernel_j(int j)
{
    switch (j) {
    case 1: return reinterpret_cast<const void *>(window_kernel<T, RW, 1>);
    case 2: return reinterpret_cast<const void *>(window_kernel<T, RW, 2>);
    case 4: return reinterpret_cast<const void *>(window_kernel<T, RW, 4>);
    }
    return nullptr;
}

template <typename T> const void *kernel_rw(int rw, int j)
{
    switch (rw) {
    case 1: return kernel_j<T, 1>(j);
    case 2: return kernel_j<T, 2>(j);
    case 4: return kernel_j<T, 4>(j);
    case 8: return kernel_j<T, 8>(j);
    }
    return nullptr;
}

const void *kernel_of(const conv_window *x)
{
    const conv_window_geom &g = x->geom;
    return x->dtype == SPF_DTYPE_F16    ? kernel_rw<__half>(g.rw, g.j)
           : x->dtype == SPF_DTYPE_BF16 ? kernel_rw<__nv_bfloat16>(g.rw, g.j)
                                        : kernel_rw<float>(g.rw, g.j);
}

} // namespace

/* Every plan of a kernel raises its limit to the same budget, which no
 * config passes (conv_window_geometry), so no plan lowers it under
 * another's feet (gpu/smem_limit.cuh) and a launch needs no call but
 * itself. */
extern "C" spf_status conv_window_allow(const conv_window *x)
{
    const void *k = kernel_of(x);
    if (!k)
        return FAIL(SPF_ERR_INTERNAL, "conv window: no kernel of rw %d, j %d", x->geom.rw,
                    x->geom.j);
    return smem_allow(k, CONV_WINDOW_SMEM_LIMIT);
}

extern "C" spf_status conv_window_launch(const conv_window *x, const void *in, void *out,
                                         const float *bias, const void *residual, void *stream)
{
    const conv_window_geom &g = x->geom;
    const void *k = kernel_of(x);
    if (!k)
        return FAIL(SPF_ERR_INTERNAL, "conv window: no kernel of rw %d, j %d", g.rw, g.j);
    const int es = x->dtype == SPF_DTYPE_F32 ? 4 : 2;
    args a = {g, x->ptr, reinterpret_cast<const uint2 *>(x->entry), in, out, bias, residual,
              x->relu, 0};
    /* chunks start at multiples of cc, so whole runs need C and cc alike */
    a.vector = (g.c * es) % 16 == 0 && (g.cc * es) % 16 == 0 &&
               reinterpret_cast<uintptr_t>(in) % 16 == 0;
    const dim3 grid(static_cast<unsigned>(g.images) * static_cast<unsigned>(g.tiles),
                    static_cast<unsigned>((g.k + CONV_WINDOW_WARPS * g.rw - 1) /
                                          (CONV_WINDOW_WARPS * g.rw)));
    void *params[] = {&a};
    return CUDA_CHECK(cudaLaunchKernel(k, grid, dim3(kThreads), params, conv_window_smem(&g),
                                       static_cast<cudaStream_t>(stream)));
}
