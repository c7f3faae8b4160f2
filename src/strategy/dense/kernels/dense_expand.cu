/* The dense strategy's kernels (dense_kernels.h): the scatter of A's CSR
 * into its dense copy, and the bias / ReLU pass after the cuBLASLt matmul
 * where the epilogue cannot do it (C n_last: bias runs along D's columns,
 * which no cuBLASLt epilogue takes; f16 / bf16: the epilogue's bias has D's
 * type, spforge's is float32). Both loop grid-stride in int64, so any
 * M·K and M·N fit one launch of a bounded grid. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "gpu/cuda_check.h"
#include "strategy/dense/dense_kernels.h"

namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 1 << 16;

template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_float<__half>(float v)
{
    return __float2half_rn(v);
}
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v)
{
    return __float2bfloat16_rn(v);
}

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

/* One warp per row of A: its lanes walk the row's nonzeros (contiguous
 * reads of col_idx and values; the writes land in one row of out). */
template <typename T>
__global__ void expand_kernel(int64_t m, int64_t k, const int64_t *__restrict__ row_ptr,
                              const int32_t *__restrict__ col_idx,
                              const float *__restrict__ values, T *__restrict__ out)
{
    const int lane = threadIdx.x % 32;
    const int64_t warps = (int64_t)gridDim.x * blockDim.x / 32;
    for (int64_t r = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; r < m; r += warps) {
        T *row = out + r * k;
        for (int64_t j = row_ptr[r] + lane; j < row_ptr[r + 1]; j += 32)
            row[col_idx[j]] = from_float<T>(values[j]);
    }
}

template <typename T>
__global__ void bias_relu_kernel(T *__restrict__ c, int64_t m, int64_t n, int n_first,
                                 const float *__restrict__ bias, int relu)
{
    const int64_t total = m * n, stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        float v = to_float(c[i]);
        if (bias)
            v += bias[n_first ? i % m : i / n]; /* C's row of A: n × m, or m × n */
        c[i] = from_float<T>(relu ? fmaxf(v, 0.0f) : v);
    }
}

int blocks_for(int64_t threads)
{
    int64_t blocks = (threads + kThreads - 1) / kThreads;
    return blocks < 1 ? 1 : blocks > kMaxBlocks ? kMaxBlocks : (int)blocks;
}

template <typename T>
spf_status expand_typed(int64_t m, int64_t k, const int64_t *row_ptr, const int32_t *col_idx,
                        const float *values, void *out, cudaStream_t stream)
{
    spf_status st = CUDA_CHECK(cudaMemsetAsync(out, 0, (size_t)(m * k) * sizeof(T), stream));
    if (st != SPF_OK || m == 0)
        return st;
    expand_kernel<T><<<blocks_for(m * 32), kThreads, 0, stream>>>(m, k, row_ptr, col_idx, values,
                                                                    static_cast<T *>(out));
    return CUDA_CHECK(cudaGetLastError());
}

template <typename T>
spf_status bias_relu_typed(void *c, int64_t m, int64_t n, spf_layout c_layout, const float *bias,
                           int relu, cudaStream_t stream)
{
    if (m * n == 0)
        return SPF_OK;
    bias_relu_kernel<T><<<blocks_for(m * n), kThreads, 0, stream>>>(
        static_cast<T *>(c), m, n, c_layout == SPF_LAYOUT_N_FIRST, bias, relu);
    return CUDA_CHECK(cudaGetLastError());
}

} // namespace

extern "C" spf_status dense_expand(int64_t m, int64_t k, const int64_t *row_ptr,
                                   const int32_t *col_idx, const float *values, spf_dtype dtype,
                                   void *out, void *stream)
{
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    switch (dtype) {
    case SPF_DTYPE_F32: return expand_typed<float>(m, k, row_ptr, col_idx, values, out, s);
    case SPF_DTYPE_F16: return expand_typed<__half>(m, k, row_ptr, col_idx, values, out, s);
    case SPF_DTYPE_BF16:
        return expand_typed<__nv_bfloat16>(m, k, row_ptr, col_idx, values, out, s);
    }
    return FAIL(SPF_ERR_INTERNAL, "unknown dtype %d", (int)dtype);
}

extern "C" spf_status dense_bias_relu(void *c, spf_dtype dtype, int64_t m, int64_t n,
                                      spf_layout c_layout, const float *bias, int relu,
                                      void *stream)
{
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    switch (dtype) {
    case SPF_DTYPE_F32: return bias_relu_typed<float>(c, m, n, c_layout, bias, relu, s);
    case SPF_DTYPE_F16: return bias_relu_typed<__half>(c, m, n, c_layout, bias, relu, s);
    case SPF_DTYPE_BF16: return bias_relu_typed<__nv_bfloat16>(c, m, n, c_layout, bias, relu, s);
    }
    return FAIL(SPF_ERR_INTERNAL, "unknown dtype %d", (int)dtype);
}
