/* The dense strategy's own kernel (kernels/dense_expand.cu), C-callable:
 * the expansion of A into the dense copy cuBLASLt multiplies; it only
 * enqueues on stream. (The bias and ReLU pass for the cases cuBLASLt's
 * epilogue cannot take is gpu/elementwise.h's; dense.c says which.) */
#ifndef SPF_STRATEGY_DENSE_DENSE_KERNELS_H
#define SPF_STRATEGY_DENSE_DENSE_KERNELS_H

#include "spforge.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* out (device, m × k row-major of dtype, caller-owned) = A, zero where A
 * has no entry; values rounded to nearest even into f16 / bf16. row_ptr
 * (m + 1), col_idx and values (nnz each) are A's CSR arrays on the device. */
spf_status dense_expand(int64_t m, int64_t k, const int64_t *row_ptr, const int32_t *col_idx,
                        const float *values, spf_dtype dtype, void *out, void *stream);

#ifdef __cplusplus
}
#endif

#endif
