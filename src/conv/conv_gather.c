/* The host side of conv_gather.h: the CPU plan's gather and residual. */
#include "conv/conv_gather.h"

#include "core/error.h"
#include "core/matrix.h"

#include <string.h>

spf_status conv_weights_tap_major(const spf_matrix *w, int32_t c, int32_t rs, spf_matrix **out)
{
    spf_matrix *t = NULL;
    spf_status status = matrix_alloc(w->rows, w->cols, w->nnz, &t);
    if (status != SPF_OK)
        return status;
    /* A row's columns are sorted by (c, tap): taken a tap at a time, those
     * of one tap come out sorted by c, so the new row is sorted too. */
    int64_t at = 0;
    t->row_ptr[0] = 0;
    for (int64_t row = 0; row < w->rows; row++) {
        for (int32_t tap = 0; tap < rs; tap++)
            for (int64_t q = w->row_ptr[row]; q < w->row_ptr[row + 1]; q++)
                if (w->col_idx[q] % rs == tap) {
                    t->col_idx[at] = tap * c + w->col_idx[q] / rs;
                    t->values[at++] = w->values[q];
                }
        t->row_ptr[row + 1] = at;
    }
    *out = t;
    return SPF_OK;
}

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
