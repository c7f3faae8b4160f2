/* The warpgroup conv kernel (conv/conv_wg.h) on the GPU: every shape of
 * conv_wg_case.h × 32, 64, 128 and 256 positions a block (where the box's
 * row fits; wgmma's N the tile's positions to a multiple of 8, so many of
 * each kind's kernels) × the weights brought dense with each stage (and
 * with one stage where that fits two blocks an SM; and the chunks split
 * over a cluster of 2, 4 or 8 where they divide), resident (where they
 * fit) or sparse, 2:4 and strays (conv_case.h's weights: density 0.4, so
 * 18 % of the runs of four hold three or four, many strays) × f16 and
 * bf16, bias, residual and ReLU varied per case, the output poisoned with
 * NaN first and each kernel run twice, against the CPU reference within
 * the dtype's tolerance; a wrong launch names its config and where the
 * output first differs. Needs a device of compute capability 9.0: skips
 * visibly (exit 77) without one. */
#include "conv_wg_case.h"
#include "conv_kernel_test.h"

#include <math.h>

static int runs;

#ifdef SPF_HAVE_CUDA
/* Where a wrong launch first differs, for a first look at what broke: the
 * first element past the tolerance (image, row, column, channel of the
 * NHWC output), and how many are. */
static void first_wrong(const conv_case *t, const conv_dims *d, double tol)
{
    const int64_t p = (d->h + 2 * d->pad - d->r) / d->stride + 1;
    const int64_t q = (d->w + 2 * d->pad - d->s) / d->stride + 1;
    int64_t bad = 0, first = -1;
    for (int64_t e = 0; e < t->out_count; e++) {
        const double want = t->want[e], diff = fabs((double)t->out[e] - want);
        if (!(diff <= tol * (1.0 + fabs(want)))) {
            bad++;
            first = first < 0 ? e : first;
        }
    }
    if (first < 0)
        return;
    const int64_t k = first % d->k, pos = first / d->k;
    printf("    %lld of %lld outputs off; the first: image %lld, row %lld, column %lld, channel "
           "%lld: %g, want %g\n",
           (long long)bad, (long long)t->out_count, (long long)(pos / (p * q)),
           (long long)(pos % (p * q) / q), (long long)(pos % q), (long long)k,
           (double)t->out[first], t->want[first]);
}

static void run_one(const conv_dims *d, int bn, conv_wg_weights weights, int splits,
                    int one_stage, spf_dtype dtype, int variant, uint64_t seed)
{
    const int bias = variant & 1, residual = (variant >> 1) & 1, relu = (variant >> 2) & 1;
    const conv_gather g = conv_dims_gather(d);
    conv_wg_geom geom;
    char reason[200];
    if (!conv_wg_geometry(&g, (int32_t)d->k, bn, weights, &geom, reason, sizeof reason) ||
        (splits > 1 && !conv_wg_split(&geom, splits, &geom)) ||
        (one_stage && !conv_wg_one_stage(&geom, &geom)))
        return;
    conv_case t;
    conv_case_make(&t, d, SPF_CONV_NHWC, bias, residual, relu, dtype, seed);
    spf_matrix *tap_major = NULL;
    CHECK_OK(conv_weights_tap_major(t.w, (int32_t)d->c, (int32_t)(d->r * d->s), &tap_major));
    conv_wg *x = NULL;
    CHECK_OK(conv_wg_create(tap_major, &geom, dtype, relu, &x));
    conv_io io;
    conv_io_stage(&t, dtype, bias, 0, &io);
    for (int launch = 0; launch < 2 && x; launch++) {
        conv_io_poison(&io);
        CHECK_OK(conv_wg_launch(x, io.input, io.out, io.bias, io.residual, NULL));
        conv_io_read(&io, dtype, &t);
        const double err = spf_relative_error(t.out, t.want, t.out_count);
        char name[64];
        conv_wg_name(&geom, dtype, name, sizeof name);
        CHECK_MSG(err <= dtype_tolerance(dtype, SPF_MATH_DEFAULT),
                  "%s, %s, variant %d launch %d: relative error %.3g", d->label, name, variant,
                  launch, err);
        if (!(err <= dtype_tolerance(dtype, SPF_MATH_DEFAULT)))
            first_wrong(&t, d, dtype_tolerance(dtype, SPF_MATH_DEFAULT));
        runs++;
    }
    conv_io_free(&io);
    conv_wg_free(x);
    spf_matrix_free(tap_major);
    conv_case_free(&t);
}

static void run_all(int quick)
{
    spf_device_info info;
    CHECK_OK(spf_device_query(0, &info));
    if (info.cc_major < 9)
        SKIP("compute capability %d.%d: the warpgroup kernel needs 9.0, not run", info.cc_major,
             info.cc_minor);
    const spf_dtype dtypes[2] = {SPF_DTYPE_F16, SPF_DTYPE_BF16};
    /* unsplit and the splits conv_wg_split takes */
    const int splits[] = {1, 2, 4, 8};
    const int split_count = (int)(sizeof splits / sizeof splits[0]);
    for (int i = 0; i < CONV_WG_DIMS; i++)
        for (int b = 0; b < CONV_WG_WIDTHS; b++)
            for (int weights = CONV_WG_STAGED; weights <= CONV_WG_SPARSE; weights++)
                for (int z = 0; z < (weights == CONV_WG_STAGED ? split_count : 1); z++)
                    for (int one = 0; one < (weights == CONV_WG_STAGED ? 2 : 1); one++)
                        for (int t = 0; t < (quick ? 1 : 2); t++)
                            run_one(&conv_wg_dims[i], conv_wg_widths[b],
                                    (conv_wg_weights)weights, splits[z], one, dtypes[t],
                                    (i + b + t + weights + one + z) % 8,
                                    900 + (uint64_t)(i * 64 + b * 16 + weights * 4 + one * 2 + t) +
                                        (uint64_t)z * 4096);
}
#else
static void run_all(int quick)
{
    (void)quick;
}
#endif

int main(int argc, char **argv)
{
    return conv_kernel_main(argc, argv, "warpgroup conv launches", run_all, &runs);
}
