/* The stray nonzeros of a 2:4 or V:2:M matrix (sp_pattern_strays) on the
 * device, and the kernel that adds their products to C once the
 * structured kernel has written it: C[r, j] += Σ a[r, k] · B[k, j] over
 * the strays of row r, for the rows that hold strays. The structured
 * kernel has added the bias; ReLU does not add, so the strategy takes
 * this path only without it (sp_pattern.h, "Strays").
 *
 * Why: multiplying the rows outside the pattern whole by the CSR kernel
 * cost 7-30 µs on the LLM shapes (bench/results/structured/README.md,
 * "Strays"), these being the longest rows of the matrix, when the
 * strays themselves are one or a few nonzeros a row. */
#ifndef SPF_STRATEGY_STRUCTURED_SP_STRAYS_H
#define SPF_STRATEGY_STRUCTURED_SP_STRAYS_H

#include "plan/problem.h"
#include "spforge.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sp_strays {
    int32_t rows; /* rows holding strays; 0: none                   */
    int32_t *row; /* their rows of A and C                          */
    int32_t *ptr; /* rows + 1: row i's strays from ptr[i]            */
    int32_t *col; /* a stray's column of A (row of B)               */
    float *val;
    int64_t bytes; /* device bytes held */
} sp_strays;

/* Upload the strays, a matrix in A's shape holding only them (values
 * set), by its nonempty rows. SPF_ERR_OVERFLOW past 2^31 - 1 strays or rows. out is
 * zeroed first. */
spf_status sp_strays_upload(const spf_matrix *strays, sp_strays *out);
void sp_strays_release(sp_strays *d); /* accepts a zeroed one */

/* C += the strays' products, with op's B and C (plan/problem.h) in dtype
 * (F16 or BF16); op's bias and ReLU are not applied. No allocation, no
 * synchronization. */
spf_status sp_strays_launch(const sp_strays *d, spf_dtype dtype, const spmm_operands *op,
                            void *stream);

#ifdef __cplusplus
}
#endif

#endif
