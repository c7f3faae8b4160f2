/* The CPU reference convolution (src/ref/conv.h) against a dense direct
 * loop in double written here, on tiny shapes: 3×3 with padding 1, stride
 * 2 without padding, the 7×7 stem's stride 2 and padding 3 on C = 3, 1×1
 * at strides 1 and 2, H and W odd and unequal; weights with an empty row;
 * both layouts (the same bits, the sums being in one order), bias,
 * residual and ReLU. The explicit im2col times the weights (the reference
 * SpMM) against the reference. Shape errors name the field. */
#include "test_util.h"

#include "plan/problem.h"
#include "ref/conv.h"
#include "ref/spmm.h"

#include <math.h>
#include <stdlib.h>

/* Every output of W ⊛ in (+ bias) (+ residual) (ReLU) by the definition:
 * for each tap, the input row y = p·stride − pad + r if inside. */
static double *direct_conv(const spf_matrix *w, const conv_shape *s, const float *in,
                           const float *bias, const float *residual, int relu)
{
    const int64_t ph = conv_out_h(s), qw = conv_out_w(s), kk = s->c * s->r * s->s;
    double *dense = calloc((size_t)(s->k * kk), sizeof *dense);
    for (int64_t i = 0; i < s->k; i++)
        for (int64_t j = spf_matrix_row_ptr(w)[i]; j < spf_matrix_row_ptr(w)[i + 1]; j++)
            dense[i * kk + spf_matrix_col_idx(w)[j]] = spf_matrix_values(w)[j];
    double *out = calloc((size_t)conv_output_count(s), sizeof *out);
    for (int64_t n = 0; n < s->n; n++)
        for (int64_t k = 0; k < s->k; k++)
            for (int64_t p = 0; p < ph; p++)
                for (int64_t q = 0; q < qw; q++) {
                    double sum = bias ? bias[k] : 0.0;
                    for (int64_t c = 0; c < s->c; c++)
                        for (int64_t r = 0; r < s->r; r++)
                            for (int64_t t = 0; t < s->s; t++) {
                                int64_t y = p * s->stride - s->pad + r;
                                int64_t x = q * s->stride - s->pad + t;
                                if (y >= 0 && y < s->h && x >= 0 && x < s->w)
                                    sum += dense[k * kk + (c * s->r + r) * s->s + t] *
                                           in[conv_input_at(s, n, c, y, x)];
                            }
                    int64_t at = conv_output_at(s, n, k, p, q);
                    sum += residual ? residual[at] : 0.0;
                    out[at] = relu && sum < 0 ? 0.0 : sum;
                }
    free(dense);
    return out;
}

static double rel_diff(const float *x, const double *ref, int64_t count)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < count; i++) {
        num += ((double)x[i] - ref[i]) * ((double)x[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* in, given in NCHW, in the shape's layout */
static float *in_layout(const conv_shape *s, const float *nchw)
{
    float *out = malloc((size_t)conv_input_count(s) * sizeof *out);
    conv_shape plain = *s;
    plain.layout = CONV_NCHW;
    for (int64_t n = 0; n < s->n; n++)
        for (int64_t c = 0; c < s->c; c++)
            for (int64_t y = 0; y < s->h; y++)
                for (int64_t x = 0; x < s->w; x++)
                    out[conv_input_at(s, n, c, y, x)] = nchw[conv_input_at(&plain, n, c, y, x)];
    return out;
}

static void check_shape(const char *label, conv_shape s, uint64_t seed)
{
    const int64_t kk = s.c * s.r * s.s;
    double *density = malloc((size_t)s.k * sizeof *density);
    for (int64_t i = 0; i < s.k; i++)
        density[i] = i == 1 ? 0.0 : 0.4; /* row 1 empty: bias (and residual) alone */
    spf_matrix *w = random_csr(s.k, kk, density, seed);
    free(density);
    s.layout = CONV_NCHW;
    const int64_t in_count = conv_input_count(&s), out_count = conv_output_count(&s);
    float *in_nchw = malloc((size_t)in_count * sizeof(float));
    float *bias = malloc((size_t)s.k * sizeof(float));
    float *residual = malloc((size_t)out_count * sizeof(float));
    float *out = malloc((size_t)out_count * sizeof(float));
    float *first = malloc((size_t)out_count * sizeof(float));
    spf_fill_uniform(in_nchw, in_count, seed + 1);
    spf_fill_uniform(bias, s.k, seed + 2);
    spf_fill_uniform(residual, out_count, seed + 3);
    for (int variant = 0; variant < 4; variant++) {
        const int with_bias = variant & 1, with_res = variant >> 1, relu = variant == 3;
        for (int layout = CONV_NCHW; layout <= CONV_NHWC; layout++) {
            s.layout = (conv_layout)layout;
            float *in = in_layout(&s, in_nchw);
            /* the residual is an output tensor: the same values per (n, k, p, q) */
            float *res = NULL;
            if (with_res) {
                res = malloc((size_t)out_count * sizeof(float));
                conv_shape plain = s;
                plain.layout = CONV_NCHW;
                for (int64_t n = 0; n < s.n; n++)
                    for (int64_t k = 0; k < s.k; k++)
                        for (int64_t p = 0; p < conv_out_h(&s); p++)
                            for (int64_t q = 0; q < conv_out_w(&s); q++)
                                res[conv_output_at(&s, n, k, p, q)] =
                                    residual[conv_output_at(&plain, n, k, p, q)];
            }
            for (int64_t i = 0; i < out_count; i++)
                out[i] = NAN;
            CHECK_OK(reference_conv2d(w, &s, in, with_bias ? bias : NULL, res, relu, out));
            double *want = direct_conv(w, &s, in, with_bias ? bias : NULL, res, relu);
            double err = rel_diff(out, want, out_count);
            CHECK_MSG(err < 1e-6, "%s %s variant %d: relative error %.3g", label,
                      layout ? "NHWC" : "NCHW", variant, err);
            /* the same sums in the same order in either layout */
            if (layout == CONV_NCHW) {
                memcpy(first, out, (size_t)out_count * sizeof(float));
            } else {
                conv_shape plain = s;
                plain.layout = CONV_NCHW;
                int same = 1;
                for (int64_t n = 0; n < s.n; n++)
                    for (int64_t k = 0; k < s.k; k++)
                        for (int64_t p = 0; p < conv_out_h(&s); p++)
                            for (int64_t q = 0; q < conv_out_w(&s); q++)
                                same &= out[conv_output_at(&s, n, k, p, q)] ==
                                        first[conv_output_at(&plain, n, k, p, q)];
                CHECK_MSG(same, "%s variant %d: NHWC differs from NCHW", label, variant);
            }
            free(want);
            free(res);
            free(in);
        }
    }

    /* im2col then the reference SpMM (bias and ReLU by the SpMM): the
     * same outputs as K_out × n·P·Q */
    s.layout = CONV_NCHW;
    const int64_t npq = s.n * conv_out_h(&s) * conv_out_w(&s);
    float *cols = malloc((size_t)(kk * npq) * sizeof(float));
    float *c = malloc((size_t)(s.k * npq) * sizeof(float));
    CHECK_OK(conv_im2col(&s, in_nchw, cols));
    CHECK_OK(reference_spmm_strided(w, npq, cols, (operand_strides){npq, 1}, c,
                                    (operand_strides){npq, 1}, bias, 1, SPF_ACCUMULATE_F64, 1));
    CHECK_OK(reference_conv2d(w, &s, in_nchw, bias, NULL, 1, out));
    double worst = 0;
    for (int64_t n = 0; n < s.n; n++)
        for (int64_t k = 0; k < s.k; k++)
            for (int64_t p = 0; p < conv_out_h(&s); p++)
                for (int64_t q = 0; q < conv_out_w(&s); q++) {
                    double got = c[k * npq + (n * conv_out_h(&s) + p) * conv_out_w(&s) + q];
                    double want = out[conv_output_at(&s, n, k, p, q)];
                    worst = fmax(worst, fabs(got - want) / fmax(1.0, fabs(want)));
                }
    CHECK_MSG(worst < 1e-5, "%s: im2col · W differs from the reference by %.3g", label, worst);
    printf("%s: %lld outputs, %lld nonzeros, im2col %lld × %lld\n", label, (long long)out_count,
           (long long)spf_matrix_nnz(w), (long long)kk, (long long)npq);
    free(cols);
    free(c);
    free(in_nchw);
    free(bias);
    free(residual);
    free(out);
    free(first);
    spf_matrix_free(w);
}

static void check_errors(void)
{
    conv_shape ok = {.n = 1, .c = 3, .h = 5, .w = 5, .k = 2, .r = 3, .s = 3, .stride = 1,
                     .pad = 1};
    CHECK_OK(conv_shape_check(&ok, NULL));
    CHECK(conv_out_h(&ok) == 5 && conv_out_w(&ok) == 5);
    conv_shape bad = ok;
    bad.stride = 0;
    CHECK_STATUS(conv_shape_check(&bad, NULL), SPF_ERR_INVALID_ARGUMENT);
    CHECK(strstr(spf_last_error(), "stride") != NULL);
    bad = ok;
    bad.pad = -1;
    CHECK_STATUS(conv_shape_check(&bad, NULL), SPF_ERR_INVALID_ARGUMENT);
    CHECK(strstr(spf_last_error(), "padding") != NULL);
    bad = ok;
    bad.pad = 0, bad.h = 2; /* a 3×3 filter over 2 rows, no padding */
    CHECK_STATUS(conv_shape_check(&bad, NULL), SPF_ERR_INVALID_ARGUMENT);
    CHECK(strstr(spf_last_error(), "does not fit") != NULL);
    bad = ok;
    bad.n = INT64_MAX / 2; /* the input's element count passes 64 bits */
    CHECK_STATUS(conv_shape_check(&bad, NULL), SPF_ERR_INVALID_ARGUMENT);
    bad = ok;
    bad.layout = (conv_layout)7;
    CHECK_STATUS(conv_shape_check(&bad, NULL), SPF_ERR_INVALID_ARGUMENT);
    const double density[2] = {0.5, 0.5};
    spf_matrix *w = random_csr(2, 26, density, 9); /* 26 columns, not 3·3·3 */
    CHECK_STATUS(conv_shape_check(&ok, w), SPF_ERR_INVALID_ARGUMENT);
    CHECK(strstr(spf_last_error(), "c·r·s") != NULL);
    float in[75] = {0}, out[50];
    CHECK_STATUS(reference_conv2d(w, &ok, in, NULL, NULL, 0, out), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(conv_im2col(&ok, NULL, out), SPF_ERR_INVALID_ARGUMENT);
    spf_matrix_free(w);
}

int main(int argc, char **argv)
{
    check_shape("3x3 pad 1, 7x5", (conv_shape){.n = 2, .c = 3, .h = 7, .w = 5, .k = 4, .r = 3,
                                               .s = 3, .stride = 1, .pad = 1}, 11);
    check_shape("3x3 stride 2 pad 0, 9x11", (conv_shape){.n = 1, .c = 5, .h = 9, .w = 11, .k = 6,
                                                         .r = 3, .s = 3, .stride = 2, .pad = 0},
                21);
    check_shape("7x7 stem stride 2 pad 3, C 3", (conv_shape){.n = 2, .c = 3, .h = 13, .w = 12,
                                                             .k = 5, .r = 7, .s = 7, .stride = 2,
                                                             .pad = 3},
                31);
    check_shape("1x1", (conv_shape){.n = 2, .c = 8, .h = 4, .w = 6, .k = 7, .r = 1, .s = 1,
                                    .stride = 1, .pad = 0}, 41);
    check_shape("1x1 stride 2, 5x7", (conv_shape){.n = 1, .c = 6, .h = 5, .w = 7, .k = 3, .r = 1,
                                                  .s = 1, .stride = 2, .pad = 0}, 51);
    check_errors();
    return check_report();
}
