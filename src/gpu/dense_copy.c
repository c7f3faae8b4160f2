/* A's dense copy on the device (dense_copy.h). */
#include "gpu/dense_copy.h"

#ifdef SPF_HAVE_CUDA

#include "core/dtype.h"
#include "core/error.h"
#include "core/matrix.h"
#include "gpu/cuda_check.h"

#include <cuda_runtime.h>
#include <stddef.h>

static spf_status upload(void **dst, const void *src, size_t bytes)
{
    /* One byte at least, so an empty array still gets a valid pointer. */
    spf_status st = CUDA_CHECK(cudaMalloc(dst, bytes ? bytes : 1));
    if (st == SPF_OK && bytes)
        st = CUDA_CHECK(cudaMemcpy(*dst, src, bytes, cudaMemcpyHostToDevice));
    return st;
}

spf_status dense_copy_make(const spf_matrix *a, spf_dtype dtype, const char *who, void **out)
{
    spf_status status = SPF_OK;
    void *row_ptr = NULL, *col_idx = NULL, *values = NULL;
    size_t nnz = (size_t)a->nnz;
    size_t bytes = (size_t)(a->rows * a->cols) * dtype_size(dtype);
    *out = NULL;
    cudaError_t err = cudaMalloc(out, bytes ? bytes : 1);
    if (err == cudaErrorMemoryAllocation) { /* not this candidate, not a failed plan */
        (void)cudaGetLastError();
        *out = NULL;
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "%s: %zu MiB for the dense copy of A: %s", who,
                  bytes >> 20, cudaGetErrorString(err));
    }
    TRY(CUDA_CHECK(err));
    TRY(upload(&row_ptr, a->row_ptr, ((size_t)a->rows + 1) * sizeof *a->row_ptr));
    TRY(upload(&col_idx, a->col_idx, nnz * sizeof *a->col_idx));
    TRY(upload(&values, a->values, nnz * sizeof *a->values));
    TRY(dense_expand(a->rows, a->cols, row_ptr, col_idx, values, dtype, *out, NULL));
    TRY(CUDA_CHECK(cudaStreamSynchronize(NULL)));
fail:
    cuda_free_quiet(row_ptr);
    cuda_free_quiet(col_idx);
    cuda_free_quiet(values);
    if (status != SPF_OK) {
        cuda_free_quiet(*out);
        *out = NULL;
    }
    return status;
}

#endif /* SPF_HAVE_CUDA */
