/* The facts of spf_dtype and spf_math in one place: element sizes, names
 * (the public spf_*_name / from_name lists), PTX types, the self-check's
 * tolerance, and whole-array conversion from and to float32 (elements
 * through core/half.h), for the self-check, the strategies and the tests
 * staging B and reading C. */
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

/* "f32", "f16", "bf16" (spf_dtype_name). */
const char *dtype_name(spf_dtype dtype);

/* The PTX storage type: "f32", "f16", "bf16". */
const char *dtype_ptx_type(spf_dtype dtype);

/* 1 for a defined enum value. */
int dtype_valid(spf_dtype dtype);
int math_valid(spf_math math);

/* Whether math applies to dtype: DEFAULT to all, TF32 to F32, F16X2 to F16;
 * else 0 with why in reason. */
int math_fits(spf_math math, spf_dtype dtype, char *reason, size_t cap);

/* The relative Frobenius error a result is allowed against the double
 * reference (BENCHMARKS.md): 1e-5 for exact fp32, 5e-3 for TF32, 1e-2 for
 * fp16 / bf16 storage with fp32 accumulation, 5e-2 for f16x2 accumulation
 * (it rounds every partial sum to 11 bits; the GPU tests measure it). */
double dtype_tolerance(spf_dtype dtype, spf_math math);

/* count floats → count elements of dtype at dst, rounding to nearest even
 * (as the GPU's cvt.rn does); NaN stays NaN, overflow becomes infinity. */
void dtype_from_float(spf_dtype dtype, const float *src, void *dst, int64_t count);

/* count elements of dtype → floats (exact: every f16 and bf16 is a float). */
void dtype_to_float(spf_dtype dtype, const void *src, float *dst, int64_t count);

/* dst (cols × rows) = the transpose of src (rows × cols), elements of
 * elem bytes, both row-major: B and C between the layouts of spf_layout. */
void array_transpose(const void *src, void *dst, int64_t rows, int64_t cols, size_t elem);

/* count floats rounded to dtype and back in place (what a kernel reads of
 * them, for a reference that is to see the same). */
void dtype_round(spf_dtype dtype, float *x, int64_t count);

/* An operand of rows × cols floats (row-major: N last) as a plan takes it:
 * dtype elements in dst, cols × rows for N_FIRST. scratch holds rows · cols
 * dtype elements and is used for N_FIRST only (NULL otherwise). */
void operand_pack(spf_dtype dtype, spf_layout layout, const float *src, int64_t rows, int64_t cols,
                  void *dst, void *scratch);

/* The inverse, for C as a plan writes it: dtype elements in layout to
 * rows × cols floats. scratch holds rows · cols floats, for N_FIRST only. */
void operand_unpack(spf_dtype dtype, spf_layout layout, const void *src, int64_t rows,
                    int64_t cols, float *dst, float *scratch);

#ifdef __cplusplus
}
#endif

#endif
