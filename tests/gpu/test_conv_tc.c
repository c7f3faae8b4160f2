/* The tensor-core conv kernel (conv/conv_tc.h) on the GPU, config by
 * config: every shape of conv_tc_case.h (1, 3, 49 and 127 positions,
 * channels past a block, 1×1 to 7×7, stride 2, padding 0 to 3) × every
 * config a test runs (one slice to slices of 16 columns; the slices
 * meeting in the workspace, or in a cluster of up to 16) × f16 and bf16,
 * bias, residual and ReLU varied per case, the input also passed one
 * element off 16 bytes (the copy's element path), the output poisoned with
 * NaN first, against the CPU reference within the dtype's tolerance. Each
 * kernel object runs twice, poisoned again between: a split's workspace
 * and counters must come back zeroed for the next launch. (test_conv
 * checks the conv plans that time these configs and keep one.) Skips
 * visibly (exit 77) without a device.
 *
 * `test_conv_tc --quick`: f16 only, clusters of 2 and 3 (the
 * compute-sanitizer run). */
#include "conv_tc_case.h"
#include "conv_kernel_test.h"

static int runs;

#ifdef SPF_HAVE_CUDA
static int refused; /* cluster configs the device cannot place */

static void run_one(const conv_dims *d, conv_tc_config cfg, spf_dtype dtype, int misaligned,
                    int variant, uint64_t seed)
{
    const int bias = variant & 1, residual = (variant >> 1) & 1, relu = (variant >> 2) & 1;
    conv_case t;
    conv_case_make(&t, d, SPF_CONV_NHWC, bias, residual, relu, dtype, seed);
    conv_tc_format f;
    if (!conv_tc_case_format(&t, d, cfg, dtype, &f)) {
        conv_case_free(&t);
        return;
    }
    conv_tc *x = NULL;
    const spf_status made = conv_tc_create(&f, dtype, relu, &x);
    if (made == SPF_ERR_UNSUPPORTED && f.geom.cluster) {
        /* a cluster size this device cannot place: said, not run; the
         * portable sizes (up to 8) always place */
        printf("  %s bn%d z%dc: %s\n", d->label, f.geom.bn, f.geom.splits, spf_last_error());
        CHECK(f.geom.splits > 8);
        refused++;
    } else {
        CHECK_OK(made);
    }
    conv_io io;
    conv_io_stage(&t, dtype, bias, misaligned, &io);
    for (int launch = 0; launch < 2 && x && io.input && io.out; launch++) {
        conv_io_poison(&io);
        CHECK_OK(conv_tc_launch(x, io.input, io.out, io.bias, io.residual, NULL));
        conv_io_read(&io, dtype, &t);
        const double err = spf_relative_error(t.out, t.want, t.out_count);
        const double tol = dtype_tolerance(dtype, SPF_MATH_DEFAULT);
        CHECK_MSG(err <= tol, "%s bn%d ks%d z%d %s%s variant %d launch %d: relative error %.3g "
                  "over %g", d->label, f.geom.bn, f.geom.ks, f.geom.splits,
                  spf_dtype_name(dtype), misaligned ? " misaligned" : "", variant, launch, err,
                  tol);
        runs++;
    }
    conv_io_free(&io);
    conv_tc_free(x);
    conv_tc_format_free(&f);
    conv_case_free(&t);
}

static void run_all(int quick)
{
    static const spf_dtype dtypes[] = {SPF_DTYPE_F16, SPF_DTYPE_BF16};
    uint64_t seed = 0xc3000;
    for (int i = 0; i < CONV_TC_DIMS; i++) {
        conv_tc_config cfg[CONV_TC_TEST_CONFIGS];
        const int n = conv_tc_test_configs(&conv_tc_dims[i], cfg);
        for (int c = 0; c < n; c++)
            for (int di = 0; di < (quick ? 1 : 2); di++) {
                /* --quick (the sanitizers') leaves clusters past 3 blocks
                 * out: the same code as 2 and 3, and under racecheck
                 * minutes */
                if (quick && cfg[c].cluster && cfg[c].splits > 3)
                    continue;
                seed += 8;
                run_one(&conv_tc_dims[i], cfg[c], dtypes[di], (int)(seed / 8 % 3 == 0),
                        (int)(seed / 8 % 8), seed);
            }
    }
    printf("%d cluster configs refused by the device\n", refused);
}
#else
static void run_all(int quick)
{
    (void)quick;
}
#endif

int main(int argc, char **argv)
{
    return conv_kernel_main(argc, argv, "tensor-core conv launches", run_all, &runs);
}
