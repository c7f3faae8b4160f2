/* Bit-level float32 ↔ binary16 / bfloat16, round to nearest even. */
#include "gpu/dtype.h"

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

static uint32_t bits_of(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    return x;
}

static float float_of(uint32_t x)
{
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

/* Keep the top bits of m, dropping `shift` low bits with round to nearest
 * even. */
static uint32_t round_shift(uint32_t m, int shift)
{
    uint32_t kept = m >> shift, rest = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    return kept + (rest > half || (rest == half && (kept & 1)));
}

static uint16_t f16_of(float f)
{
    uint32_t x = bits_of(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    int e = (int)((x >> 23) & 0xff);
    uint32_t mant = x & 0x7fffff;
    if (e == 0xff)
        return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 : 0));
    int exp = e - 127 + 15;
    if (exp >= 31)
        return (uint16_t)(sign | 0x7c00);
    if (exp <= 0) {
        /* A binary16 subnormal counts units of 2^-24: the 24-bit significand
         * shifted right by 14 - exp; below half the smallest it rounds to 0. */
        if (exp < -10)
            return sign;
        return (uint16_t)(sign | round_shift(mant | 0x800000, 14 - exp));
    }
    /* A carry out of the mantissa bumps the exponent, up to infinity: the
     * encoding's order makes this right. */
    return (uint16_t)(sign | round_shift(((uint32_t)exp << 23) | mant, 13));
}

static float float_of_f16(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    if (exp == 0x1f)
        return float_of(sign | 0x7f800000 | (mant << 13));
    if (exp == 0) /* zero or subnormal: mant · 2^-24, exact in float */
        return (sign ? -1.0f : 1.0f) * (float)mant * (1.0f / 16777216.0f);
    return float_of(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

static uint16_t bf16_of(float f)
{
    uint32_t x = bits_of(f);
    if ((x & 0x7fffffff) > 0x7f800000)
        return (uint16_t)((x >> 16) | 0x40); /* keep NaN a NaN */
    return (uint16_t)(round_shift(x, 16) & 0xffff);
}

void dtype_from_float(spf_dtype dtype, const float *src, void *dst, int64_t count)
{
    if (dtype == SPF_DTYPE_F32) {
        memcpy(dst, src, (size_t)count * sizeof(float));
        return;
    }
    uint16_t *out = dst;
    for (int64_t i = 0; i < count; i++)
        out[i] = dtype == SPF_DTYPE_F16 ? f16_of(src[i]) : bf16_of(src[i]);
}

void dtype_to_float(spf_dtype dtype, const void *src, float *dst, int64_t count)
{
    if (dtype == SPF_DTYPE_F32) {
        memcpy(dst, src, (size_t)count * sizeof(float));
        return;
    }
    const uint16_t *in = src;
    for (int64_t i = 0; i < count; i++)
        dst[i] = dtype == SPF_DTYPE_F16 ? float_of_f16(in[i]) : float_of((uint32_t)in[i] << 16);
}
