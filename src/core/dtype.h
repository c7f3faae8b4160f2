/* spf_dtype on the host: element sizes, names, and whole-array conversion
 * from and to float32 (elements through core/half.h), for the self-check
 * and the GPU tests staging B and reading C. */
#ifndef SPF_CORE_DTYPE_H
#define SPF_CORE_DTYPE_H

#include "spforge.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes per element: 4 for F32, 2 for F16 and BF16. */
size_t dtype_size(spf_dtype dtype);

/* "f32", "f16", "bf16". */
const char *dtype_name(spf_dtype dtype);

/* count floats → count elements of dtype at dst, rounding to nearest even
 * (as the GPU's cvt.rn does); NaN stays NaN, overflow becomes infinity. */
void dtype_from_float(spf_dtype dtype, const float *src, void *dst, int64_t count);

/* count elements of dtype → floats (exact: every f16 and bf16 is a float). */
void dtype_to_float(spf_dtype dtype, const void *src, float *dst, int64_t count);

#ifdef __cplusplus
}
#endif

#endif
