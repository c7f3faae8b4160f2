/* Host-side conversion between float32 and the storage types of B and C
 * (spf_dtype): the self-check, the tests and the benchmark fill device
 * buffers of fp16 / bf16 from float data and read results back. */
#ifndef SPF_GPU_DTYPE_H
#define SPF_GPU_DTYPE_H

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
