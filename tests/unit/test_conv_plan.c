/* Conv plans (spf_conv_plan_*, src/conv/) on CPU plans: every shape of
 * conv_case.h (1×1 direct and strided, padding on 1×1, 3×3 with padding
 * and with stride 2, the 7×7 stem on C = 3; H and W odd and unequal; a
 * batch of 2) in both layouts, with and without bias, residual and ReLU,
 * against the CPU reference; which path each takes and its workspace; the
 * gather of the host against the reference's explicit im2col; and the
 * errors: each bad field named, the residual asked and not given, an
 * output over the input. */
#include "conv_case.h"

#include "conv/conv_gather.h"
#include "ref/conv.h"

#include <math.h>

static spf_plan_options cpu_options(int bias, int relu)
{
    spf_plan_options o;
    spf_plan_options_init(&o);
    o.strategy = SPF_STRATEGY_CPU;
    o.cache = 0;
    o.bias = bias;
    o.relu = relu;
    return o;
}

static void check_case(const conv_dims *d, spf_conv_layout layout, int variant, uint64_t seed)
{
    const int bias = variant & 1, residual = (variant >> 1) & 1, relu = (variant >> 2) & 1;
    conv_case t;
    conv_case_make(&t, d, layout, bias, residual, relu, SPF_DTYPE_F32, seed);
    spf_plan_options o = cpu_options(bias, relu);
    spf_conv_plan *plan = NULL;
    CHECK_OK(spf_conv_plan_create(t.w, &t.desc, &o, &plan));
    if (!plan) {
        conv_case_free(&t);
        return;
    }
    spf_conv_info info = {.size = sizeof info};
    CHECK_OK(spf_conv_plan_get_info(plan, &info));
    const int direct = d->r == 1 && d->s == 1 && d->stride == 1 && d->pad == 0;
    CHECK(info.host == 1 && info.spmm.strategy == SPF_STRATEGY_CPU);
    CHECK(info.path == (direct ? SPF_CONV_DIRECT : SPF_CONV_IM2COL));
    const int64_t pq = info.out_h * info.out_w;
    CHECK(info.launches == (layout == SPF_CONV_NHWC ? 1 : d->n));
    CHECK(info.spmm_n == (layout == SPF_CONV_NHWC ? d->n * pq : pq));
    CHECK(info.workspace_bytes ==
          (direct ? 0 : d->c * d->r * d->s * info.spmm_n * (int64_t)sizeof(float)));
    for (int64_t i = 0; i < t.out_count; i++)
        t.out[i] = NAN;
    CHECK_OK(spf_conv_plan_execute(plan, t.in, t.out, bias ? t.bias : NULL, t.residual, NULL));
    double err = spf_relative_error(t.out, t.want, t.out_count);
    CHECK_MSG(err < 1e-6, "%s %s variant %d: relative error %.3g", d->label,
              layout == SPF_CONV_NHWC ? "NHWC" : "NCHW", variant, err);
    spf_conv_plan_free(plan);
    conv_case_free(&t);
}

/* The host gather of each launch against the reference's im2col of the
 * whole batch, (c·r·s) × (n·P·Q), whose columns a launch takes a slice of. */
static void check_gather(const conv_dims *d)
{
    conv_case t;
    conv_case_make(&t, d, SPF_CONV_NCHW, 1, 0, 0, SPF_DTYPE_F32, 77);
    conv_shape s = {.n = d->n, .c = d->c, .h = d->h, .w = d->w, .k = d->k, .r = d->r,
                    .s = d->s, .stride = d->stride, .pad = d->pad, .layout = CONV_NCHW};
    const int64_t rows = d->c * d->r * d->s, pq = conv_out_h(&s) * conv_out_w(&s);
    const int64_t npq = d->n * pq;
    float *want = malloc((size_t)(rows * npq) * sizeof(float));
    float *got = malloc((size_t)(rows * npq) * sizeof(float));
    CHECK_OK(conv_im2col(&s, t.in, want));
    conv_gather g = {.c = d->c, .h = d->h, .w = d->w, .r = d->r, .s = d->s, .stride = d->stride,
                     .pad = d->pad, .p = conv_out_h(&s), .q = conv_out_w(&s), .cols = pq};
    int same = 1;
    for (int64_t image = 0; image < d->n; image++) { /* NCHW: a launch an image, n_last */
        conv_gather_host(&g, t.in + image * d->c * d->h * d->w, got, sizeof(float));
        for (int64_t kk = 0; kk < rows; kk++)
            for (int64_t j = 0; j < pq; j++)
                same &= got[kk * pq + j] == want[kk * npq + image * pq + j];
    }
    /* NHWC: the batch at once, n_first, from the input in NHWC */
    float *nhwc = malloc((size_t)t.in_count * sizeof(float));
    conv_shape sh = s;
    sh.layout = CONV_NHWC;
    for (int64_t n = 0; n < d->n; n++)
        for (int64_t c = 0; c < d->c; c++)
            for (int64_t y = 0; y < d->h; y++)
                for (int64_t x = 0; x < d->w; x++)
                    nhwc[conv_input_at(&sh, n, c, y, x)] = t.in[conv_input_at(&s, n, c, y, x)];
    /* ... its columns (r, s, c): the reference's (c, r, s) row kk is
     * column (kk mod R·S)·C + kk / R·S */
    g.nhwc = 1, g.cols = npq;
    conv_gather_host(&g, nhwc, got, sizeof(float));
    const int64_t rs = d->r * d->s;
    for (int64_t kk = 0; kk < rows; kk++)
        for (int64_t j = 0; j < npq; j++)
            same &= got[j * rows + kk % rs * d->c + kk / rs] == want[kk * npq + j];
    CHECK_MSG(same, "%s: the gather differs from the reference's im2col", d->label);
    /* the split of each element into a column's base and a row's offset
     * (the unrolled kernel's implicit gather), in both layouts */
    int split = 1;
    for (int layout = 0; layout < 2; layout++) {
        g.nhwc = layout, g.cols = layout ? npq : pq;
        for (int32_t kk = 0; kk < rows; kk++)
            for (int32_t j = 0; j < g.cols; j++) {
                const int32_t tap = conv_gather_tap(&g, kk);
                const int64_t y = (int64_t)(j % pq / g.q) * d->stride + tap / d->s - d->pad;
                const int64_t x = (int64_t)(j % g.q) * d->stride + tap % d->s - d->pad;
                const int64_t from = conv_gather_from(&g, kk, j);
                split &= (y < 0 || y >= d->h || x < 0 || x >= d->w)
                             ? from == -1
                             : from == conv_gather_base(&g, j) + conv_gather_offset(&g, kk);
            }
    }
    CHECK_MSG(split, "%s: base + offset differs from the gather's element", d->label);
    free(nhwc);
    free(want);
    free(got);
    conv_case_free(&t);
}

static void check_errors(void)
{
    conv_case t;
    conv_case_make(&t, &conv_test_dims[3], SPF_CONV_NCHW, 1, 0, 0, SPF_DTYPE_F32, 5);
    spf_plan_options o = cpu_options(0, 0);
    spf_conv_plan *plan = NULL;
    spf_conv_desc d = t.desc;
    CHECK_STATUS(spf_conv_plan_create(NULL, &d, &o, &plan), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(spf_conv_plan_create(t.w, NULL, &o, &plan), SPF_ERR_INVALID_ARGUMENT);
    d.size = 0; /* not from spf_conv_desc_init */
    CHECK_STATUS(spf_conv_plan_create(t.w, &d, &o, &plan), SPF_ERR_INVALID_ARGUMENT);
    CHECK(strstr(spf_last_error(), "spf_conv_desc_init") != NULL);
    d = t.desc, d.channels = 0;
    CHECK_STATUS(spf_conv_plan_create(t.w, &d, &o, &plan), SPF_ERR_INVALID_ARGUMENT);
    CHECK(strstr(spf_last_error(), "channels") != NULL);
    d = t.desc, d.channels = 3; /* 3·3·3 = 27 columns, the weights have 36 */
    CHECK_STATUS(spf_conv_plan_create(t.w, &d, &o, &plan), SPF_ERR_INVALID_ARGUMENT);
    CHECK(strstr(spf_last_error(), "c·r·s") != NULL);
    d = t.desc, d.stride = 0;
    CHECK_STATUS(spf_conv_plan_create(t.w, &d, &o, &plan), SPF_ERR_INVALID_ARGUMENT);
    CHECK(strstr(spf_last_error(), "stride") != NULL);
    d = t.desc, d.layout = (spf_conv_layout)5;
    CHECK_STATUS(spf_conv_plan_create(t.w, &d, &o, &plan), SPF_ERR_INVALID_ARGUMENT);
    CHECK(strstr(spf_last_error(), "layout") != NULL);
    spf_plan_options half = o;
    half.dtype = SPF_DTYPE_F16; /* the CPU plan takes float32 only */
    CHECK(spf_conv_plan_create(t.w, &t.desc, &half, &plan) != SPF_OK && plan == NULL);
    spf_plan_options bad = o;
    bad.size = 3;
    CHECK_STATUS(spf_conv_plan_create(t.w, &t.desc, &bad, &plan), SPF_ERR_INVALID_ARGUMENT);
    CHECK(strstr(spf_last_error(), "options.size") != NULL);

    CHECK_OK(spf_conv_plan_create(t.w, &t.desc, &o, &plan));
    float *res = malloc((size_t)t.out_count * sizeof(float));
    CHECK_STATUS(spf_conv_plan_execute(plan, t.in, t.out, NULL, res, NULL),
                 SPF_ERR_INVALID_ARGUMENT); /* made without a residual */
    CHECK(strstr(spf_last_error(), "residual") != NULL);
    CHECK_STATUS(spf_conv_plan_execute(plan, t.in, t.in, NULL, NULL, NULL),
                 SPF_ERR_INVALID_ARGUMENT); /* the output over the input */
    CHECK_STATUS(spf_conv_plan_execute(plan, NULL, t.out, NULL, NULL, NULL),
                 SPF_ERR_INVALID_ARGUMENT);
    spf_conv_info small = {.size = 8};
    CHECK_STATUS(spf_conv_plan_get_info(plan, &small), SPF_ERR_INVALID_ARGUMENT);
    spf_conv_plan_free(plan);
    spf_conv_plan_free(NULL);

    d = t.desc, d.residual = 1;
    CHECK_OK(spf_conv_plan_create(t.w, &d, &o, &plan));
    CHECK_STATUS(spf_conv_plan_execute(plan, t.in, t.out, NULL, NULL, NULL),
                 SPF_ERR_INVALID_ARGUMENT); /* made with one, given none */
    CHECK_STATUS(spf_conv_plan_execute(plan, t.in, res, NULL, res, NULL),
                 SPF_ERR_INVALID_ARGUMENT); /* the output over the residual */
    spf_conv_plan_free(plan);
    free(res);
    /* NCHW images of 5·6·7 floats (840 bytes) are not 16-byte aligned: no
     * dense plan (refused before any device is asked) */
    conv_case a;
    conv_case_make(&a, &conv_test_dims[0], SPF_CONV_NCHW, 1, 0, 0, SPF_DTYPE_F32, 6);
    spf_plan_options dense = o;
    dense.strategy = SPF_STRATEGY_DENSE;
    CHECK_STATUS(spf_conv_plan_create(a.w, &a.desc, &dense, &plan), SPF_ERR_UNSUPPORTED);
    CHECK(strstr(spf_last_error(), "16 bytes") != NULL);
    conv_case_free(&a);
    CHECK(strcmp(spf_conv_path_name(SPF_CONV_DIRECT), "direct") == 0);
    CHECK(strcmp(spf_conv_path_name(SPF_CONV_IM2COL), "im2col") == 0);
    CHECK(strcmp(spf_conv_path_name((spf_conv_path)9), "?") == 0);
    conv_case_free(&t);
}

int main(int argc, char **argv)
{
    uint64_t seed = 0xc0000;
    for (int i = 0; i < CONV_TEST_DIMS; i++) {
        for (int layout = SPF_CONV_NCHW; layout <= SPF_CONV_NHWC; layout++)
            for (int variant = 0; variant < 8; variant++)
                check_case(&conv_test_dims[i], (spf_conv_layout)layout, variant, seed += 8);
        check_gather(&conv_test_dims[i]);
        printf("%s: both layouts, bias / residual / ReLU, and the gather checked\n",
               conv_test_dims[i].label);
    }
    check_errors();
    return check_report();
}
