/* dtype and math facts, the public name lists, and array conversions over
 * the element conversions of core/half.h. */
#include "core/dtype.h"

#include "core/error.h"
#include "core/half.h"

#include <stdio.h>
#include <string.h>

int dtype_valid(spf_dtype dtype)
{
    return dtype == SPF_DTYPE_F32 || dtype == SPF_DTYPE_F16 || dtype == SPF_DTYPE_BF16;
}

int math_valid(spf_math math)
{
    return math == SPF_MATH_DEFAULT || math == SPF_MATH_TF32 || math == SPF_MATH_F16X2;
}

size_t dtype_size(spf_dtype dtype) { return dtype == SPF_DTYPE_F32 ? 4 : 2; }

const char *dtype_name(spf_dtype dtype)
{
    switch (dtype) {
    case SPF_DTYPE_F32: return "f32";
    case SPF_DTYPE_F16: return "f16";
    case SPF_DTYPE_BF16: return "bf16";
    }
    return "?";
}

const char *dtype_ptx_type(spf_dtype dtype) { return dtype_name(dtype); }

int math_fits(spf_math math, spf_dtype dtype, char *reason, size_t cap)
{
    if (math == SPF_MATH_TF32 && dtype != SPF_DTYPE_F32) {
        snprintf(reason, cap, "math TF32 applies to f32 data, not %s", dtype_name(dtype));
        return 0;
    }
    if (math == SPF_MATH_F16X2 && dtype != SPF_DTYPE_F16) {
        snprintf(reason, cap, "math F16X2 (fp16 accumulation) needs f16 data, not %s",
                 dtype_name(dtype));
        return 0;
    }
    return 1;
}

double dtype_tolerance(spf_dtype dtype, spf_math math)
{
    if (dtype == SPF_DTYPE_F32)
        return math == SPF_MATH_TF32 ? 5e-3 : 1e-5;
    return math == SPF_MATH_F16X2 ? 5e-2 : 1e-2;
}

void dtype_from_float(spf_dtype dtype, const float *src, void *dst, int64_t count)
{
    if (dtype == SPF_DTYPE_F32) {
        memcpy(dst, src, (size_t)count * sizeof(float));
        return;
    }
    uint16_t *out = dst;
    for (int64_t i = 0; i < count; i++)
        out[i] = dtype == SPF_DTYPE_F16 ? f16_from_float(src[i]) : bf16_from_float(src[i]);
}

void dtype_to_float(spf_dtype dtype, const void *src, float *dst, int64_t count)
{
    if (dtype == SPF_DTYPE_F32) {
        memcpy(dst, src, (size_t)count * sizeof(float));
        return;
    }
    const uint16_t *in = src;
    for (int64_t i = 0; i < count; i++)
        dst[i] = dtype == SPF_DTYPE_F16 ? f16_to_float(in[i]) : bf16_to_float(in[i]);
}

void array_transpose(const void *src, void *dst, int64_t rows, int64_t cols, size_t elem)
{
    const unsigned char *in = src;
    unsigned char *out = dst;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            memcpy(out + (size_t)(j * rows + i) * elem, in + (size_t)(i * cols + j) * elem, elem);
}

void dtype_round(spf_dtype dtype, float *x, int64_t count)
{
    for (int64_t i = 0; dtype != SPF_DTYPE_F32 && i < count; i++)
        x[i] = dtype == SPF_DTYPE_F16 ? f16_to_float(f16_from_float(x[i]))
                                      : bf16_to_float(bf16_from_float(x[i]));
}

void operand_pack(spf_dtype dtype, spf_layout layout, const float *src, int64_t rows, int64_t cols,
                  void *dst, void *scratch)
{
    if (layout == SPF_LAYOUT_N_LAST) {
        dtype_from_float(dtype, src, dst, rows * cols);
        return;
    }
    dtype_from_float(dtype, src, scratch, rows * cols);
    array_transpose(scratch, dst, rows, cols, dtype_size(dtype));
}

void operand_unpack(spf_dtype dtype, spf_layout layout, const void *src, int64_t rows,
                    int64_t cols, float *dst, float *scratch)
{
    if (layout == SPF_LAYOUT_N_LAST) {
        dtype_to_float(dtype, src, dst, rows * cols);
        return;
    }
    dtype_to_float(dtype, src, scratch, rows * cols);
    array_transpose(scratch, dst, cols, rows, sizeof *dst);
}

/* ------------------------------------------------ the public name lists */

/* The index of name in names[count] (any of its aliases), or -1. */
static int name_index(const char *name, const char *const (*names)[3], int count)
{
    for (int i = 0; name && i < count; i++)
        for (int j = 0; j < 3 && names[i][j]; j++)
            if (strcmp(name, names[i][j]) == 0)
                return i;
    return -1;
}

static const char *const dtype_names[][3] = {
    {"f32", "float32", NULL}, {"f16", "float16", "half"}, {"bf16", "bfloat16", NULL}};
static const char *const math_names[][3] = {{"default", "exact", NULL}, {"tf32", NULL, NULL},
                                            {"f16x2", NULL, NULL}};
static const char *const layout_names[][3] = {{"n_last", "kn", "mn"}, {"n_first", "nk", "nm"}};

#define COUNT(x) ((int)(sizeof x / sizeof x[0]))

static spf_status from_name(const char *what, const char *name, const char *const (*names)[3],
                            int count, int *out)
{
    int i = name_index(name, names, count);
    if (i < 0) {
        char list[128] = "";
        for (int j = 0; j < count; j++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", j ? ", " : "",
                     names[j][0]);
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "unknown %s \"%s\": expected one of %s", what,
                    name ? name : "(null)", list);
    }
    *out = i;
    return SPF_OK;
}

const char *spf_dtype_name(spf_dtype dtype) { return dtype_name(dtype); }

spf_status spf_dtype_from_name(const char *name, spf_dtype *out)
{
    error_clear();
    CHECK_ARG(out != NULL);
    int i = 0;
    spf_status st = from_name("dtype", name, dtype_names, COUNT(dtype_names), &i);
    if (st == SPF_OK)
        *out = (spf_dtype)i;
    return st;
}

const char *spf_math_name(spf_math math)
{
    return math_valid(math) ? math_names[math][0] : "?";
}

spf_status spf_math_from_name(const char *name, spf_math *out)
{
    error_clear();
    CHECK_ARG(out != NULL);
    int i = 0;
    spf_status st = from_name("math mode", name, math_names, COUNT(math_names), &i);
    if (st == SPF_OK)
        *out = (spf_math)i;
    return st;
}

const char *spf_layout_name(spf_layout layout)
{
    return layout == SPF_LAYOUT_N_LAST || layout == SPF_LAYOUT_N_FIRST ? layout_names[layout][0]
                                                                       : "?";
}

spf_status spf_layout_from_name(const char *name, spf_layout *out)
{
    error_clear();
    CHECK_ARG(out != NULL);
    int i = 0;
    spf_status st = from_name("layout", name, layout_names, COUNT(layout_names), &i);
    if (st == SPF_OK)
        *out = (spf_layout)i;
    return st;
}
