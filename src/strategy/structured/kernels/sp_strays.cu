/* The strays' kernel (sp_strays.h): a block a row holding strays, its
 * threads across the columns of C; each thread adds the row's few
 * products for its columns to what the structured kernel wrote. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdint.h>

#include "gpu/cuda_check.h"
#include "gpu/mma_ptx.cuh"
#include "strategy/structured/sp_strays.h"

namespace {

struct strays_args {
    const int32_t *row, *ptr, *col;
    const float *val;
    const void *b;
    int64_t b_row, b_col; /* element (k, j) at b[k·b_row + j·b_col] */
    void *c;
    int64_t c_row, c_col;
    int32_t n;
};

constexpr int threads = 128;

template <typename T> __global__ void __launch_bounds__(threads) sp_strays_kernel(strays_args a)
{
    const int64_t r = a.row[blockIdx.x];
    const int s0 = a.ptr[blockIdx.x], s1 = a.ptr[blockIdx.x + 1];
    const T *b = static_cast<const T *>(a.b);
    T *c = static_cast<T *>(a.c);
    for (int j = threadIdx.x; j < a.n; j += threads) {
        float sum = 0.f;
        for (int s = s0; s < s1; s++)
            sum += a.val[s] * elem<T>::to_float(b[a.col[s] * a.b_row + j * a.b_col]);
        T *out = c + r * a.c_row + j * a.c_col;
        *out = elem<T>::from_float(elem<T>::to_float(*out) + sum);
    }
}

} // namespace

extern "C" spf_status sp_strays_launch(const sp_strays *d, spf_dtype dtype,
                                       const spmm_operands *op, void *stream)
{
    if (d->rows == 0 || op->n == 0)
        return SPF_OK;
    if (op->n > INT32_MAX)
        return FAIL(SPF_ERR_UNSUPPORTED, "structured strays: N = %lld passes 32 bits",
                    (long long)op->n);
    strays_args a = {d->row, d->ptr, d->col, d->val, op->b, op->b_row, op->b_col,
                     op->c, op->c_row, op->c_col, static_cast<int32_t>(op->n)};
    const void *k = dtype == SPF_DTYPE_F16    ? (const void *)sp_strays_kernel<__half>
                    : dtype == SPF_DTYPE_BF16 ? (const void *)sp_strays_kernel<__nv_bfloat16>
                                              : nullptr;
    if (!k)
        return FAIL(SPF_ERR_UNSUPPORTED, "structured strays: %s", spf_dtype_name(dtype));
    void *params[] = {&a};
    return CUDA_CHECK(cudaLaunchKernel(k, dim3(static_cast<unsigned>(d->rows)), dim3(threads),
                                       params, 0, static_cast<cudaStream_t>(stream)));
}
