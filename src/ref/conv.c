/* The CPU reference convolution and the explicit im2col (ref/conv.h). */
#include "ref/conv.h"

#include "core/error.h"

#include <stdint.h>

int64_t conv_out_h(const conv_shape *s)
{
    return (s->h + 2 * s->pad - s->r) / s->stride + 1;
}

int64_t conv_out_w(const conv_shape *s)
{
    return (s->w + 2 * s->pad - s->s) / s->stride + 1;
}

/* a · b · c · d, or -1 past int64 */
static int64_t product4(int64_t a, int64_t b, int64_t c, int64_t d)
{
    int64_t f[4] = {a, b, c, d}, p = 1;
    for (int i = 0; i < 4; i++) {
        if (f[i] != 0 && p > INT64_MAX / f[i])
            return -1;
        p *= f[i];
    }
    return p;
}

int64_t conv_input_count(const conv_shape *s)
{
    return product4(s->n, s->c, s->h, s->w);
}

int64_t conv_output_count(const conv_shape *s)
{
    return product4(s->n, s->k, conv_out_h(s), conv_out_w(s));
}

spf_status conv_shape_check(const conv_shape *s, const spf_matrix *w)
{
    CHECK_ARG(s != NULL);
    const struct {
        const char *name;
        int64_t value;
    } sizes[] = {{"batch n", s->n}, {"channels c", s->c}, {"height h", s->h},
                 {"width w", s->w}, {"output channels k", s->k}, {"filter height r", s->r},
                 {"filter width s", s->s}, {"stride", s->stride}};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        if (sizes[i].value < 1)
            return FAIL(SPF_ERR_INVALID_ARGUMENT, "conv: %s = %lld: expected at least 1",
                        sizes[i].name, (long long)sizes[i].value);
    if (s->pad < 0 || s->pad > INT32_MAX)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "conv: padding %lld: expected 0 to %d",
                    (long long)s->pad, INT32_MAX);
    if (s->layout != CONV_NCHW && s->layout != CONV_NHWC)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "conv: layout %d: expected NCHW or NHWC",
                    (int)s->layout);
    if (s->h + 2 * s->pad < s->r || s->w + 2 * s->pad < s->s)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "conv: a %lldx%lld filter does not fit a %lldx%lld "
                    "input padded by %lld", (long long)s->r, (long long)s->s, (long long)s->h,
                    (long long)s->w, (long long)s->pad);
    if (conv_input_count(s) < 0 || conv_output_count(s) < 0 ||
        product4(s->c, s->r, s->s, 1) < 0 ||
        product4(s->c * s->r * s->s, s->n, conv_out_h(s), conv_out_w(s)) < 0)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "conv: the element counts pass 64 bits");
    if (w && (spf_matrix_rows(w) != s->k || spf_matrix_cols(w) != s->c * s->r * s->s))
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "conv: the weights are %lld × %lld: expected k × "
                    "c·r·s = %lld × %lld", (long long)spf_matrix_rows(w),
                    (long long)spf_matrix_cols(w), (long long)s->k,
                    (long long)(s->c * s->r * s->s));
    return SPF_OK;
}

int64_t conv_input_at(const conv_shape *s, int64_t n, int64_t c, int64_t y, int64_t x)
{
    if (s->layout == CONV_NHWC)
        return ((n * s->h + y) * s->w + x) * s->c + c;
    return ((n * s->c + c) * s->h + y) * s->w + x;
}

int64_t conv_output_at(const conv_shape *s, int64_t n, int64_t k, int64_t p, int64_t q)
{
    const int64_t ph = conv_out_h(s), qw = conv_out_w(s);
    if (s->layout == CONV_NHWC)
        return ((n * ph + p) * qw + q) * s->k + k;
    return ((n * s->k + k) * ph + p) * qw + q;
}

/* The input element under filter tap (r, t) of output (p, q) in channel c
 * of image n, 0 in the padding. */
static double tap(const conv_shape *s, const float *in, int64_t n, int64_t c, int64_t r,
                  int64_t t, int64_t p, int64_t q)
{
    const int64_t y = p * s->stride - s->pad + r, x = q * s->stride - s->pad + t;
    if (y < 0 || y >= s->h || x < 0 || x >= s->w)
        return 0.0;
    return in[conv_input_at(s, n, c, y, x)];
}

spf_status reference_conv2d(const spf_matrix *w, const conv_shape *s, const float *in,
                            const float *bias, const float *residual, int relu, float *out)
{
    CHECK_ARG(w != NULL && in != NULL && out != NULL);
    spf_status status = conv_shape_check(s, w);
    if (status != SPF_OK)
        return status;
    const int64_t ph = conv_out_h(s), qw = conv_out_w(s), rs = s->r * s->s;
    const int64_t *row_ptr = spf_matrix_row_ptr(w);
    const int32_t *col = spf_matrix_col_idx(w);
    const float *val = spf_matrix_values(w);
    for (int64_t n = 0; n < s->n; n++)
        for (int64_t k = 0; k < s->k; k++)
            for (int64_t p = 0; p < ph; p++)
                for (int64_t q = 0; q < qw; q++) {
                    double sum = 0.0;
                    for (int64_t i = row_ptr[k]; i < row_ptr[k + 1]; i++) {
                        const int64_t j = col[i];
                        sum += (double)(val ? val[i] : 1.0f) *
                               tap(s, in, n, j / rs, j % rs / s->s, j % s->s, p, q);
                    }
                    const int64_t at = conv_output_at(s, n, k, p, q);
                    if (bias)
                        sum += bias[k];
                    if (residual)
                        sum += residual[at];
                    out[at] = (float)(relu && sum < 0 ? 0.0 : sum);
                }
    return SPF_OK;
}

spf_status conv_im2col(const conv_shape *s, const float *in, float *cols)
{
    CHECK_ARG(in != NULL && cols != NULL);
    spf_status status = conv_shape_check(s, NULL);
    if (status != SPF_OK)
        return status;
    const int64_t ph = conv_out_h(s), qw = conv_out_w(s), npq = s->n * ph * qw;
    for (int64_t c = 0; c < s->c; c++)
        for (int64_t r = 0; r < s->r; r++)
            for (int64_t t = 0; t < s->s; t++) {
                float *row = cols + ((c * s->r + r) * s->s + t) * npq;
                for (int64_t n = 0; n < s->n; n++)
                    for (int64_t p = 0; p < ph; p++)
                        for (int64_t q = 0; q < qw; q++)
                            row[(n * ph + p) * qw + q] = (float)tap(s, in, n, c, r, t, p, q);
            }
    return SPF_OK;
}
