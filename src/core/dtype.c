/* Array conversions over the element conversions of core/half.h. */
#include "core/dtype.h"

#include "core/half.h"

#include <string.h>

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
