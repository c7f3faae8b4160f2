#include "core/overlap.h"

#include "core/error.h"

/* 1 if the byte ranges [x, x + nx) and [y, y + ny) share a byte; written
 * without x + nx, which a wild pointer could wrap. */
static int ranges_overlap(const void *x, uint64_t nx, const void *y, uint64_t ny)
{
    uintptr_t a = (uintptr_t)x, b = (uintptr_t)y;
    return nx && ny && (a >= b ? a - b < ny : b - a < nx);
}

spf_status output_disjoint(const char *func, const void *c, uint64_t c_bytes, const void *b,
                           uint64_t b_bytes, const void *bias, uint64_t bias_bytes)
{
    const void *input = ranges_overlap(c, c_bytes, b, b_bytes) ? b
                        : bias && ranges_overlap(c, c_bytes, bias, bias_bytes) ? bias : NULL;
    if (!input)
        return SPF_OK;
    return error_set(SPF_ERR_INVALID_ARGUMENT, func, "c (%p, %llu bytes) overlaps %s (%p, %llu "
                     "bytes): C must not share memory with its inputs", c,
                     (unsigned long long)c_bytes, input == b ? "b" : "bias", input,
                     (unsigned long long)(input == b ? b_bytes : bias_bytes));
}
