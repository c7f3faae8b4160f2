/* The host side of conv_gather.h: the CPU plan's gather and residual. */
#include "conv/conv_gather.h"

#include <string.h>

void conv_gather_host(const conv_gather *g, const void *in, void *cols, size_t elem)
{
    const unsigned char *src = in;
    unsigned char *dst = cols;
    const int64_t count = conv_gather_count(g);
    for (int64_t t = 0; t < count; t++) {
        int64_t kk, j;
        conv_gather_split(g, t, &kk, &j);
        const int64_t from = conv_gather_from(g, kk, j);
        if (from < 0)
            memset(dst + t * (int64_t)elem, 0, elem);
        else
            memcpy(dst + t * (int64_t)elem, src + from * (int64_t)elem, elem);
    }
}

void conv_residual_host(float *out, const float *residual, int64_t count, int relu)
{
    for (int64_t i = 0; i < count; i++) {
        const float v = out[i] + residual[i];
        out[i] = relu && v < 0.0f ? 0.0f : v;
    }
}
