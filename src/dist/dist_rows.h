/* The distributed plan's own kernels (src/dist/kernels/dist_rows.cu): the
 * rows of B a rank sends packed into one buffer, and the product on the
 * received rows added into C. C-callable; launches only (no allocation,
 * no synchronization). */
#ifndef SPF_DIST_DIST_ROWS_H
#define SPF_DIST_DIST_ROWS_H

#include "spforge.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Row i of out = row index[i] of b, for i < count; rows of row_bytes bytes. */
spf_status dist_pack_rows(const void *b, const int32_t *index, int64_t count, int64_t row_bytes,
                          void *out, void *stream);

/* c = c + partial (+ bias[row]), then max(., 0) when relu: rows × n of
 * dtype (row-major), the sum in fp32. */
spf_status dist_add_rows(void *c, const void *partial, const float *bias, int relu, int64_t rows,
                         int64_t n, spf_dtype dtype, void *stream);

#ifdef __cplusplus
}
#endif

#endif
