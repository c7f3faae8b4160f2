/* One convolution case for the conv plan tests (unit/test_conv_plan.c on
 * CPU plans, gpu/test_conv.c on every strategy): weights of density 0.4
 * with row 1 empty (bias and residual alone there), input and residual
 * uniform in [-1, 1] rounded to the dtype, a bias (given to the plan or
 * not), and the expected output of the CPU reference
 * (spf_reference_conv2d, sums in double). */
#ifndef SPF_TESTS_CONV_CASE_H
#define SPF_TESTS_CONV_CASE_H

#include "test_util.h"

#include "conv/conv_gather.h"
#include "core/dtype.h"

#include <stdlib.h>

typedef struct conv_case {
    const char *label;
    spf_conv_desc desc;
    spf_matrix *w;
    int64_t in_count, out_count, k;
    float *in, *bias, *residual, *out;
    double *want;
} conv_case;

/* label n c h w k r s stride pad: the shapes both tests run */
typedef struct conv_dims {
    const char *label;
    int64_t n, c, h, w, k, r, s, stride, pad;
} conv_dims;

static const conv_dims conv_test_dims[] = {
    {"1x1 (direct)", 2, 5, 6, 7, 9, 1, 1, 1, 0},
    {"1x1 stride 2", 2, 5, 7, 6, 9, 1, 1, 2, 0},
    {"1x1 padding 1", 1, 3, 4, 5, 2, 1, 1, 1, 1},
    {"3x3 padding 1", 2, 4, 7, 5, 6, 3, 3, 1, 1},
    {"3x3 stride 2", 1, 3, 9, 8, 5, 3, 3, 2, 0},
    {"7x7 stem, C = 3", 2, 3, 11, 13, 4, 7, 7, 2, 3},
    {"3x3, C = 16 (16-byte channel runs)", 2, 16, 6, 5, 11, 3, 3, 1, 1},
};
#define CONV_TEST_DIMS ((int)(sizeof conv_test_dims / sizeof conv_test_dims[0]))

/* d's gather in NHWC: the whole batch one launch. */
static inline conv_gather conv_dims_gather(const conv_dims *d)
{
    const int32_t p = (int32_t)((d->h + 2 * d->pad - d->r) / d->stride + 1);
    const int32_t q = (int32_t)((d->w + 2 * d->pad - d->s) / d->stride + 1);
    return (conv_gather){.c = (int32_t)d->c, .h = (int32_t)d->h, .w = (int32_t)d->w,
                         .r = (int32_t)d->r, .s = (int32_t)d->s, .stride = (int32_t)d->stride,
                         .pad = (int32_t)d->pad, .p = p, .q = q,
                         .cols = (int32_t)(d->n * p * q), .nhwc = 1};
}

/* The case of d in layout, with a bias, a residual and ReLU or not, its
 * tensors rounded to dtype; the expected output from the reference. */
static inline void conv_case_make(conv_case *t, const conv_dims *d, spf_conv_layout layout,
                                  int bias, int residual, int relu, spf_dtype dtype,
                                  uint64_t seed)
{
    memset(t, 0, sizeof *t);
    t->label = d->label;
    spf_conv_desc_init(&t->desc);
    t->desc.batch = d->n, t->desc.channels = d->c, t->desc.height = d->h, t->desc.width = d->w;
    t->desc.kernel_h = d->r, t->desc.kernel_w = d->s;
    t->desc.stride = d->stride, t->desc.padding = d->pad;
    t->desc.layout = layout;
    t->desc.residual = residual;
    t->k = d->k;
    double *density = malloc((size_t)d->k * sizeof *density);
    for (int64_t i = 0; i < d->k; i++)
        density[i] = i == 1 ? 0.0 : 0.4;
    t->w = random_csr(d->k, d->c * d->r * d->s, density, seed);
    free(density);
    const int64_t p = (d->h + 2 * d->pad - d->r) / d->stride + 1;
    const int64_t q = (d->w + 2 * d->pad - d->s) / d->stride + 1;
    t->in_count = d->n * d->c * d->h * d->w;
    t->out_count = d->n * d->k * p * q;
    t->in = malloc((size_t)t->in_count * sizeof(float));
    t->bias = malloc((size_t)d->k * sizeof(float));
    t->residual = residual ? malloc((size_t)t->out_count * sizeof(float)) : NULL;
    t->out = malloc((size_t)t->out_count * sizeof(float));
    t->want = malloc((size_t)t->out_count * sizeof(double));
    spf_fill_uniform(t->in, t->in_count, seed + 1);
    dtype_round(dtype, t->in, t->in_count);
    spf_fill_uniform(t->bias, d->k, seed + 2);
    if (residual) {
        spf_fill_uniform(t->residual, t->out_count, seed + 3);
        dtype_round(dtype, t->residual, t->out_count);
    }
    CHECK_OK(spf_reference_conv2d(t->w, &t->desc, t->in, bias ? t->bias : NULL, t->residual, relu,
                                  t->out));
    for (int64_t i = 0; i < t->out_count; i++)
        t->want[i] = t->out[i];
}

static inline void conv_case_free(conv_case *t)
{
    spf_matrix_free(t->w);
    free(t->in);
    free(t->bias);
    free(t->residual);
    free(t->out);
    free(t->want);
}

#endif
