/* The distributed plan's own kernel (src/dist/kernels/dist_rows.cu): the
 * rows of B a rank sends packed into one buffer. C-callable; a launch only
 * (no allocation, no synchronization). */
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

#ifdef __cplusplus
}
#endif

#endif
