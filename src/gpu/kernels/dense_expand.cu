/* The scatter of A's CSR into its dense copy (dense_copy.h), grid-stride
 * in int64, so any M·K fits one launch of a bounded grid. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "gpu/cuda_check.h"
#include "gpu/dense_copy.h"

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
