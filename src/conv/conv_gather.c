/* The host side of conv_gather.h: the CPU plan's gather and residual. */
#include "conv/conv_gather.h"

#include <string.h>

void conv_gather_host(const conv_gather *g, const void *in, void *cols, size_t elem)
{
    const unsigned char *src = in;
    unsigned char *dst = cols;
    const int32_t outer = conv_gather_outer(g), inner = conv_gather_inner(g);
    for (int32_t o = 0; o < outer; o++)
        for (int32_t i = 0; i < inner; i++, dst += elem) {
            const int64_t from = conv_gather_at(g, o, i);
            if (from < 0)
                memset(dst, 0, elem);
            else
                memcpy(dst, src + from * (int64_t)elem, elem);
        }
}

void conv_residual_host(float *out, const float *residual, int64_t count, int relu)
{
    for (int64_t i = 0; i < count; i++) {
        const float v = out[i] + residual[i];
        out[i] = relu && v < 0.0f ? 0.0f : v;
    }
}
