/* The window kernel (conv/conv_window.h) on the GPU, config by config:
 * every shape of conv_window_case.h × every config × f32, f16 and bf16,
 * with the whole window in one chunk and forced into chunks of 8
 * channels, bias, residual and ReLU varied per case, the input also
 * passed one element off 16 bytes (the copy's element path), the output
 * poisoned with NaN first, against the CPU reference within the dtype's
 * tolerance. (test_conv checks the conv plans that time these configs
 * and keep one.) Skips visibly (exit 77) without a device.
 *
 * `test_conv_window --quick`: f16 only (the compute-sanitizer run). */
#include "conv_window_case.h"
#include "conv_kernel_test.h"

static int runs;

#ifdef SPF_HAVE_CUDA
static void run_one(const conv_dims *d, conv_window_config cfg, int chunked, spf_dtype dtype,
                    int misaligned, int variant, uint64_t seed)
{
    const int bias = variant & 1, residual = (variant >> 1) & 1, relu = (variant >> 2) & 1;
    conv_case t;
    conv_case_make(&t, d, SPF_CONV_NHWC, bias, residual, relu, dtype, seed);
    conv_window_format f;
    int made = conv_window_case_format(&t, d, cfg, CONV_WINDOW_SMEM, &f);
    if (made && chunked) {
        const size_t cap = conv_window_chunking_cap(&f.geom);
        conv_window_format_free(&f);
        made = f.geom.c > 8 && conv_window_case_format(&t, d, cfg, cap, &f);
    }
    if (!made) {
        conv_case_free(&t);
        return;
    }
    conv_window *x = NULL;
    CHECK_OK(conv_window_create(&f, dtype, relu, &x));
    if (x)
        CHECK_OK(conv_window_allow(x));
    conv_io io;
    conv_io_stage(&t, dtype, bias, misaligned, &io);
    if (x && io.input && io.out) {
        conv_io_poison(&io);
        CHECK_OK(conv_window_launch(x, io.input, io.out, io.bias, io.residual, NULL));
        conv_io_read(&io, dtype, &t);
        const double err = spf_relative_error(t.out, t.want, t.out_count);
        const double tol = dtype_tolerance(dtype, SPF_MATH_DEFAULT);
        CHECK_MSG(err <= tol, "%s rw%d j%d cc%d (%d chunks) %s%s variant %d: relative error %.3g "
                  "over %g", d->label, cfg.rw, cfg.j, f.geom.cc, f.geom.chunks,
                  spf_dtype_name(dtype), misaligned ? " misaligned" : "", variant, err, tol);
        runs++;
    }
    conv_io_free(&io);
    conv_window_free(x);
    conv_window_format_free(&f);
    conv_case_free(&t);
}

static void run_all(int quick)
{
    static const spf_dtype dtypes[] = {SPF_DTYPE_F32, SPF_DTYPE_F16, SPF_DTYPE_BF16};
    uint64_t seed = 0xc2000;
    for (int i = 0; i < CONV_TEST_DIMS + CONV_WINDOW_DIMS; i++)
        for (int c = 0; c < CONV_WINDOW_ALL; c++)
            for (int di = quick ? 1 : 0; di < (quick ? 2 : 3); di++)
                for (int chunked = 0; chunked < 2; chunked++) {
                    seed += 8;
                    run_one(conv_window_dim(i), conv_window_all[c], chunked, dtypes[di],
                            (int)(seed / 8 % 3 == 0), (int)(seed / 8 % 8), seed);
                }
}
#else
static void run_all(int quick)
{
    (void)quick;
}
#endif

int main(int argc, char **argv)
{
    return conv_kernel_main(argc, argv, "window launches", run_all, &runs);
}
