/* gpu/elementwise.h's pass. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "gpu/cuda_check.h"
#include "gpu/elementwise.h"
#include "gpu/mma_ptx.cuh"

namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 1 << 16; /* the loop strides past them */

template <typename T>
__global__ void __launch_bounds__(kThreads)
    epilogue_kernel(T *out, const float *__restrict__ bias, int64_t channels, int64_t inner,
                    const T *__restrict__ addend, int64_t count, int relu)
{
    for (int64_t i = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x; i < count;
         i += static_cast<int64_t>(gridDim.x) * kThreads) {
        float v = elem<T>::to_float(out[i]);
        if (bias)
            v += bias[i / inner % channels];
        if (addend)
            v += elem<T>::to_float(addend[i]);
        out[i] = elem<T>::from_float(relu && v < 0.0f ? 0.0f : v);
    }
}

template <typename T>
spf_status launch(void *out, const float *bias, int64_t channels, int64_t inner,
                  const void *addend, int64_t count, int relu, cudaStream_t s)
{
    int64_t blocks = (count + kThreads - 1) / kThreads;
    blocks = blocks > kMaxBlocks ? kMaxBlocks : blocks;
    epilogue_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(
        static_cast<T *>(out), bias, channels, inner, static_cast<const T *>(addend), count, relu);
    return CUDA_CHECK(cudaGetLastError());
}

} // namespace

extern "C" spf_status elementwise_epilogue(spf_dtype dtype, void *out, const float *bias,
                                           int64_t channels, int64_t inner, const void *addend,
                                           int64_t count, int relu, void *stream)
{
    if (count <= 0)
        return SPF_OK;
    if (channels < 1 || inner < 1)
        return FAIL(SPF_ERR_INTERNAL, "elementwise epilogue: %lld channels, %lld apart",
                    (long long)channels, (long long)inner);
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    switch (dtype) {
    case SPF_DTYPE_F32: return launch<float>(out, bias, channels, inner, addend, count, relu, s);
    case SPF_DTYPE_F16: return launch<__half>(out, bias, channels, inner, addend, count, relu, s);
    case SPF_DTYPE_BF16:
        return launch<__nv_bfloat16>(out, bias, channels, inner, addend, count, relu, s);
    }
    return FAIL(SPF_ERR_INTERNAL, "unknown dtype %d", (int)dtype);
}
