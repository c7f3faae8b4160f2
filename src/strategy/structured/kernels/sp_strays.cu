/* The strays' kernel (sp_strays.h): a block for each row holding strays
 * and 128 columns of C (grid.y), a thread a column; each thread adds the
 * row's few products for its column to what the structured kernel wrote.
 * One block a row, its threads looping over the columns, added 16-17 µs
 * at N = 2048 and 4096 (H200: a few rows, one SM each). */
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
    const int64_t j = static_cast<int64_t>(blockIdx.y) * threads + threadIdx.x;
    if (j >= a.n)
        return;
    float sum = 0.f;
    for (int s = s0; s < s1; s++)
        sum += a.val[s] * elem<T>::to_float(b[a.col[s] * a.b_row + j * a.b_col]);
    T *out = c + r * a.c_row + j * a.c_col;
    *out = elem<T>::from_float(elem<T>::to_float(*out) + sum);
}

} // namespace

extern "C" spf_status sp_strays_launch(const sp_strays *d, spf_dtype dtype,
                                       const spmm_operands *op, void *stream)
{
    if (d->rows == 0 || op->n == 0)
        return SPF_OK;
    const int64_t col_blocks = (op->n + threads - 1) / threads;
    if (col_blocks > 65535)
        return FAIL(SPF_ERR_UNSUPPORTED, "structured strays: N = %lld passes the grid's %d "
                    "columns", (long long)op->n, 65535 * threads);
    strays_args a = {d->row, d->ptr, d->col, d->val, op->b, op->b_row, op->b_col,
                     op->c, op->c_row, op->c_col, static_cast<int32_t>(op->n)};
    const void *k = dtype == SPF_DTYPE_F16    ? (const void *)sp_strays_kernel<__half>
                    : dtype == SPF_DTYPE_BF16 ? (const void *)sp_strays_kernel<__nv_bfloat16>
                                              : nullptr;
    if (!k)
        return FAIL(SPF_ERR_UNSUPPORTED, "structured strays: %s", spf_dtype_name(dtype));
    void *params[] = {&a};
    const dim3 grid(static_cast<unsigned>(d->rows), static_cast<unsigned>(col_blocks));
    return CUDA_CHECK(cudaLaunchKernel(k, grid, dim3(threads), params, 0,
                                       static_cast<cudaStream_t>(stream)));
}
