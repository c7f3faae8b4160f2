/* Host conversions between float and the 16-bit storage types (IEEE fp16
 * and bfloat16), round to nearest even, as the GPU's cvt.rn does: tests and
 * spforge-bench use them to stage B and read C of fp16 / bf16 plans. */
#ifndef SPF_CORE_HALF_H
#define SPF_CORE_HALF_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t half_float_bits(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    return x;
}

static inline float half_bits_float(uint32_t x)
{
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

static inline uint16_t f16_from_float(float f)
{
    uint32_t x = half_float_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u)
        return sign | 0x7e00u; /* NaN stays NaN (quiet) */
    if (ax >= 0x477ff000u)
        return sign | 0x7c00u; /* 65520 and up round to infinity */
    if (ax < 0x38800000u)      /* below 2^-14: a subnormal half (or zero) */
        return sign | (uint16_t)lrintf(half_bits_float(ax) * 16777216.0f); /* units of 2^-24 */
    /* Normal: drop 13 mantissa bits with round-to-nearest-even, rebias 127 → 15. */
    uint32_t r = ax + 0xfffu + ((ax >> 13) & 1u);
    return sign | (uint16_t)((r >> 13) - (112u << 10));
}

static inline float f16_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0) {
        float f = ldexpf((float)man, -24);
        return sign ? -f : f;
    }
    if (exp == 31)
        return half_bits_float(sign | 0x7f800000u | (man << 13));
    return half_bits_float(sign | ((exp + 112u) << 23) | (man << 13));
}

static inline uint16_t bf16_from_float(float f)
{
    uint32_t x = half_float_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u); /* NaN stays NaN (quiet) */
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

static inline float bf16_to_float(uint16_t h)
{
    return half_bits_float((uint32_t)h << 16);
}

#endif
