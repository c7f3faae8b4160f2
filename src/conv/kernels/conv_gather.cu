/* The device side of conv/conv_gather.h: the explicit im2col gather and
 * the residual add of a conv plan. Memory-bound copies: one thread an
 * element of B in B's order, so the stores are coalesced and the loads
 * follow the filter's taps. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "conv/conv_gather.h"
#include "gpu/cuda_check.h"

namespace {

constexpr int kThreads = 128;

/* the residual add: enough blocks for every SM several times over; the
 * loop strides the rest */
unsigned blocks_for(int64_t count)
{
    const int64_t b = (count + kThreads - 1) / kThreads;
    return static_cast<unsigned>(b < 65536 ? (b > 0 ? b : 1) : 65536);
}

/* a block a row of B (grid-stride), its threads along the row: the
 * stores are coalesced, and so are the loads of NHWC's channels. A thread
 * copies a word W of one or several elements: 16 bytes where an NHWC
 * plan's runs of C channels are whole words (conv_gather.h: a word then
 * never straddles two taps), one element otherwise. */
template <typename E, typename W>
__global__ void __launch_bounds__(kThreads) gather_kernel(conv_gather g, const E *__restrict__ in,
                                                          E *__restrict__ cols)
{
    constexpr int32_t kPer = sizeof(W) / sizeof(E);
    const int32_t outer = conv_gather_outer(&g), inner = conv_gather_inner(&g);
    for (int32_t o = blockIdx.x; o < outer; o += gridDim.x)
        for (int32_t i = threadIdx.x * kPer; i < inner; i += kThreads * kPer) {
            const int64_t from = conv_gather_at(&g, o, i);
            W v{};
            if (from >= 0)
                v = __ldg(reinterpret_cast<const W *>(in + from));
            *reinterpret_cast<W *>(cols + static_cast<int64_t>(o) * inner + i) = v;
        }
}

template <typename E>
void gather_typed(const conv_gather *g, const void *in, void *cols, unsigned blocks, cudaStream_t s)
{
    const bool wide = g->nhwc && g->c * sizeof(E) % sizeof(uint4) == 0 &&
                      reinterpret_cast<uintptr_t>(in) % sizeof(uint4) == 0 &&
                      reinterpret_cast<uintptr_t>(cols) % sizeof(uint4) == 0;
    auto kernel = wide ? gather_kernel<E, uint4> : gather_kernel<E, E>;
    kernel<<<blocks, kThreads, 0, s>>>(*g, static_cast<const E *>(in), static_cast<E *>(cols));
}

template <typename T> __device__ __forceinline__ float to_float(T v) { return static_cast<float>(v); }
template <> __device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T from_float(float v) { return v; }
template <> __device__ __forceinline__ __half from_float(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float(float v)
{
    return __float2bfloat16_rn(v);
}

/* out + bias[channel] + residual, then ReLU; element i's channel is
 * (i / inner) mod channels. */
template <typename T>
__global__ void __launch_bounds__(kThreads)
    epilogue_kernel(T *out, const float *__restrict__ bias, int64_t channels, int64_t inner,
                    const T *__restrict__ residual, int64_t count, int relu)
{
    for (int64_t i = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x; i < count;
         i += static_cast<int64_t>(gridDim.x) * kThreads) {
        float v = to_float(out[i]);
        if (bias)
            v += bias[i / inner % channels];
        if (residual)
            v += to_float(residual[i]);
        out[i] = from_float<T>(relu && v < 0.0f ? 0.0f : v);
    }
}

template <typename T>
void epilogue_typed(void *out, const float *bias, int64_t channels, int64_t inner,
                    const void *residual, int64_t count, int relu, unsigned blocks, cudaStream_t s)
{
    epilogue_kernel<T><<<blocks, kThreads, 0, s>>>(static_cast<T *>(out), bias, channels, inner,
                                                   static_cast<const T *>(residual), count, relu);
}

} // namespace

extern "C" spf_status conv_gather_launch(const conv_gather *g, const void *in, void *cols,
                                         size_t elem, void *stream)
{
    const int32_t rows = conv_gather_outer(g);
    const unsigned blocks = static_cast<unsigned>(rows < (1 << 20) ? (rows > 0 ? rows : 1) : 1 << 20);
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    if (elem == 4)
        gather_typed<uint32_t>(g, in, cols, blocks, s);
    else
        gather_typed<uint16_t>(g, in, cols, blocks, s);
    return CUDA_CHECK(cudaGetLastError());
}

extern "C" spf_status conv_epilogue_launch(spf_dtype dtype, void *out, const float *bias,
                                           int64_t channels, int64_t inner, const void *residual,
                                           int64_t count, int relu, void *stream)
{
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    const unsigned blocks = blocks_for(count);
    if (channels < 1 || inner < 1)
        return FAIL(SPF_ERR_INTERNAL, "conv epilogue: %lld channels, %lld apart",
                    (long long)channels, (long long)inner);
    if (dtype == SPF_DTYPE_F16)
        epilogue_typed<__half>(out, bias, channels, inner, residual, count, relu, blocks, s);
    else if (dtype == SPF_DTYPE_BF16)
        epilogue_typed<__nv_bfloat16>(out, bias, channels, inner, residual, count, relu, blocks,
                                      s);
    else
        epilogue_typed<float>(out, bias, channels, inner, residual, count, relu, blocks, s);
    return CUDA_CHECK(cudaGetLastError());
}
