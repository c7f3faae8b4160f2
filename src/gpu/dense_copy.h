/* A sparse matrix's dense copy on the device, for the strategies that hand
 * A to a vendor library as a dense array: cuBLASLt multiplies it (dense),
 * cuSPARSELt compresses it (cusparselt). C-callable. */
#ifndef SPF_GPU_DENSE_COPY_H
#define SPF_GPU_DENSE_COPY_H

#include "spforge.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* out (device, m × k row-major of dtype, caller-owned) = A, zero where A
 * has no entry; values rounded to nearest even into f16 / bf16. row_ptr
 * (m + 1), col_idx and values (nnz each) are A's CSR arrays on the device.
 * It only enqueues on stream (kernels/dense_expand.cu). */
spf_status dense_expand(int64_t m, int64_t k, const int64_t *row_ptr, const int32_t *col_idx,
                        const float *values, spf_dtype dtype, void *out, void *stream);

/* *out = a fresh device allocation holding a's dense copy in dtype (free it
 * with cudaFree), made and finished before it returns (a build-time call:
 * it synchronizes). A's CSR goes to the device for the scatter only. No
 * memory for the copy: SPF_ERR_OUT_OF_MEMORY naming who and the size, so a
 * planner passes to its next candidate. *out is NULL on failure. */
spf_status dense_copy_make(const spf_matrix *a, spf_dtype dtype, const char *who, void **out);

#ifdef __cplusplus
}
#endif

#endif
