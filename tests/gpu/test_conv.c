/* Conv plans on the GPU (src/conv/): every shape of conv_case.h in both
 * layouts through each strategy that takes the problem (auto, generic,
 * unrolled, tc, tcfrag, panel, dense) in f32, f16 and bf16, with bias,
 * residual and ReLU varied per case, the output poisoned with NaN first
 * (host_run_conv), against the CPU reference within the dtype's
 * tolerance. The generic strategy runs the implicit path (no im2col in
 * memory: the window kernel in NHWC, 1×1 included, the generic gather in
 * NCHW), the unrolled one its generated kernel over the implicit im2col
 * (both layouts, every shape), tc its tensor-core kernel over it (NHWC, C
 * a multiple of 8, f16 and bf16; else the explicit path), dense cuDNN's convolution where cuDNN loads
 * (the whole batch at once, bias, residual and ReLU after), the others the
 * explicit path; AUTO times every path it built and keeps the fastest. A
 * strategy refusing a case is counted, not failed. Plans on cuDNN's path
 * or the warpgroup kernel must refuse an input or output off a 16-byte
 * boundary. Skips visibly (exit 77) without a device.
 *
 * `test_conv --quick`: auto, generic, unrolled and tc only (the
 * compute-sanitizer run of the device scripts). */
#include "conv_case.h"

#include "gpu/host_run.h"

#ifdef SPF_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

static const spf_strategy strategies[] = {SPF_STRATEGY_AUTO,   SPF_STRATEGY_GENERIC,
                                          SPF_STRATEGY_UNROLLED, SPF_STRATEGY_TC,
                                          SPF_STRATEGY_TCFRAG, SPF_STRATEGY_PANEL,
                                          SPF_STRATEGY_DENSE};
static const spf_dtype dtypes[] = {SPF_DTYPE_F32, SPF_DTYPE_F16, SPF_DTYPE_BF16};

static int runs, refused, dense_paths, misaligned_refused;

#ifdef SPF_HAVE_CUDA
/* A plan on cuDNN's path or the warpgroup kernel given an output (then an
 * input) one element off a 16-byte boundary: SPF_ERR_UNSUPPORTED naming
 * it, before any launch (the buffers are never read). */
static void check_misaligned(const spf_conv_plan *plan, const conv_case *t,
                             const spf_conv_info *info, spf_dtype dtype, int bias)
{
    if (info->path != SPF_CONV_DENSE && strncmp(info->spmm.kernel_name, "convwg_", 7) != 0)
        return;
    const size_t es = dtype_size(dtype);
    void *in = NULL, *out = NULL, *res = NULL;
    float *b = NULL;
    CUDA_OK(cudaMalloc(&in, (size_t)(t->in_count + 8) * es));
    CUDA_OK(cudaMalloc(&out, (size_t)(t->out_count + 8) * es));
    CUDA_OK(cudaMalloc(&res, (size_t)(t->out_count + 8) * es));
    CUDA_OK(cudaMalloc((void **)&b, (size_t)(t->k + 1) * sizeof(float)));
    const void *r = t->residual ? res : NULL;
    const float *bias_arg = bias ? b : NULL;
    CHECK_STATUS(spf_conv_plan_execute(plan, in, (char *)out + es, bias_arg, r, NULL),
                 SPF_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(spf_last_error(), "the output is at") != NULL, "misaligned output: %s",
              spf_last_error());
    CHECK_STATUS(spf_conv_plan_execute(plan, (char *)in + es, out, bias_arg, r, NULL),
                 SPF_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(spf_last_error(), "the input is at") != NULL, "misaligned input: %s",
              spf_last_error());
    misaligned_refused++;
    cudaFree(in);
    cudaFree(out);
    cudaFree(res);
    cudaFree(b);
}
#endif

static void check_one(const conv_dims *d, spf_conv_layout layout, spf_strategy strategy,
                      spf_dtype dtype, int variant, uint64_t seed)
{
    const int bias = variant & 1, residual = (variant >> 1) & 1, relu = (variant >> 2) & 1;
    conv_case t;
    conv_case_make(&t, d, layout, bias, residual, relu, dtype, seed);
    spf_plan_options o;
    spf_plan_options_init(&o);
    o.strategy = strategy;
    o.dtype = dtype;
    o.bias = bias;
    o.relu = relu;
    o.cache = 0;
    spf_conv_plan *plan = NULL;
    spf_status st = spf_conv_plan_create(t.w, &t.desc, &o, &plan);
    if (st == SPF_ERR_UNSUPPORTED || st == SPF_ERR_NO_DEVICE) {
        refused++;
        conv_case_free(&t);
        return;
    }
    CHECK_MSG(st == SPF_OK, "%s %s %s %s: plan: %s", d->label,
              layout == SPF_CONV_NHWC ? "NHWC" : "NCHW", spf_strategy_name(strategy),
              spf_dtype_name(dtype), spf_last_error());
    if (st == SPF_OK) {
        timing_result timing;
        spf_conv_info info = {.size = sizeof info};
        CHECK_OK(spf_conv_plan_get_info(plan, &info));
        CHECK_OK(host_run_conv(plan, t.in_count, t.out_count, bias ? t.k : 0, t.in,
                               bias ? t.bias : NULL, t.residual, t.out, NULL, &timing));
        const double err = spf_relative_error(t.out, t.want, t.out_count);
        const double tol = dtype_tolerance(dtype, SPF_MATH_DEFAULT);
        CHECK_MSG(err <= tol, "%s %s %s %s (%s, %s) variant %d: relative error %.3g over %g",
                  d->label, layout == SPF_CONV_NHWC ? "NHWC" : "NCHW",
                  spf_strategy_name(strategy), spf_dtype_name(dtype),
                  spf_conv_path_name(info.path), info.spmm.kernel_name, variant, err, tol);
        /* the generic strategy's kernels read the input themselves (in
         * NHWC the window kernel, 1×1 direct too); AUTO timed both paths
         * and kept the faster */
        const int direct = d->r == 1 && d->s == 1 && d->stride == 1 && d->pad == 0;
        const int implicit = !direct || layout == SPF_CONV_NHWC;
        if (strategy == SPF_STRATEGY_GENERIC && implicit)
            CHECK_MSG(info.path == SPF_CONV_IMPLICIT && info.workspace_bytes == 0 &&
                          (strncmp(info.spmm.kernel_name, "generic_", 8) == 0 ||
                           (layout == SPF_CONV_NHWC &&
                            strncmp(info.spmm.kernel_name, "window_", 7) == 0)),
                      "%s generic: path %s, kernel %s, workspace %lld", d->label,
                      spf_conv_path_name(info.path), info.spmm.kernel_name,
                      (long long)info.workspace_bytes);
        /* TC's kernel over the implicit im2col where it takes the shape */
        if (strategy == SPF_STRATEGY_TC && layout == SPF_CONV_NHWC && d->c % 8 == 0 &&
            dtype != SPF_DTYPE_F32)
            CHECK_MSG(info.path == SPF_CONV_IMPLICIT && info.workspace_bytes == 0 &&
                          info.spmm.strategy == SPF_STRATEGY_TC &&
                          strncmp(info.spmm.kernel_name, "convtc_", 7) == 0,
                      "%s tc: path %s, kernel %s", d->label, spf_conv_path_name(info.path),
                      info.spmm.kernel_name);
        if (strategy == SPF_STRATEGY_UNROLLED)
            CHECK_MSG(info.path == SPF_CONV_IMPLICIT && info.workspace_bytes == 0 &&
                          info.spmm.strategy == SPF_STRATEGY_UNROLLED &&
                          strstr(info.spmm.kernel_name, "_im2col_") != NULL,
                      "%s unrolled: path %s, kernel %s, workspace %lld", d->label,
                      spf_conv_path_name(info.path), info.spmm.kernel_name,
                      (long long)info.workspace_bytes);
        /* AUTO timed every path it built (cuDNN's where it loads) and kept
         * the fastest */
        if (strategy == SPF_STRATEGY_AUTO && (implicit || info.dense_us > 0)) {
            double kept = info.path == SPF_CONV_IMPLICIT ? info.implicit_us
                          : info.path == SPF_CONV_DENSE  ? info.dense_us
                                                         : info.im2col_us;
            double best = info.im2col_us;
            if (info.implicit_us > 0 && info.implicit_us < best)
                best = info.implicit_us;
            if (info.dense_us > 0 && info.dense_us < best)
                best = info.dense_us;
            CHECK_MSG(info.im2col_us > 0 && (!implicit || info.implicit_us > 0) && kept == best,
                      "%s auto: path %s, im2col %.2f us, implicit %.2f us, dense %.2f us",
                      d->label, spf_conv_path_name(info.path), info.im2col_us, info.implicit_us,
                      info.dense_us);
        }
        /* the implicit kinds timed: the kept one CHOSEN (its time the
         * implicit path's), none where another path runs, the fastest
         * kind's time implicit_us */
        if (info.path == SPF_CONV_IMPLICIT || info.path == SPF_CONV_DENSE) {
            int chosen = -1;
            double fastest = 0;
            for (int c = 0; c < info.spmm.candidate_count; c++) {
                const spf_candidate *k = &info.spmm.candidates[c];
                if (k->outcome == SPF_CANDIDATE_CHOSEN)
                    chosen = chosen < 0 ? c : -2;
                if (fastest == 0 || k->kernel_us < fastest)
                    fastest = k->kernel_us;
            }
            const int want_chosen = info.path == SPF_CONV_IMPLICIT;
            CHECK_MSG((want_chosen ? chosen >= 0 &&
                                         strcmp(info.spmm.candidates[chosen].detail,
                                                info.spmm.kernel_name) == 0
                                   : chosen == -1) &&
                          fastest == info.implicit_us,
                      "%s %s: %d implicit kinds, chosen %d, fastest %.2f us, implicit %.2f us",
                      d->label, spf_conv_path_name(info.path), info.spmm.candidate_count, chosen,
                      fastest, info.implicit_us);
        }
        /* DENSE is cuDNN's where it loads: the whole batch in one launch */
        if (strategy == SPF_STRATEGY_DENSE && info.path == SPF_CONV_DENSE)
            CHECK_MSG(info.launches == 1 && strncmp(info.spmm.kernel_name, "cudnn_", 6) == 0 &&
                          info.spmm.strategy == SPF_STRATEGY_DENSE,
                      "%s dense: %d launches, kernel %s", d->label, info.launches,
                      info.spmm.kernel_name);
        dense_paths += info.path == SPF_CONV_DENSE;
#ifdef SPF_HAVE_CUDA
        check_misaligned(plan, &t, &info, dtype, bias);
#endif
        runs++;
    }
    spf_conv_plan_free(plan);
    conv_case_free(&t);
}

int main(int argc, char **argv)
{
    spf_device_info info;
    CHECK_OK(spf_device_query(0, &info));
    if (!info.available) {
        if (check_failed)
            return check_report();
        check_report();
        SKIP("no CUDA device (%s): conv plans not run", info.reason);
    }
    const int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    const int nstrategies = quick ? 4 : (int)(sizeof strategies / sizeof *strategies);
    uint64_t seed = 0xc1000;
    for (int i = 0; i < CONV_TEST_DIMS; i++)
        for (int layout = SPF_CONV_NCHW; layout <= SPF_CONV_NHWC; layout++)
            for (int si = 0; si < nstrategies; si++)
                for (size_t di = 0; di < sizeof dtypes / sizeof *dtypes; di++) {
                    seed += 8;
                    check_one(&conv_test_dims[i], (spf_conv_layout)layout, strategies[si],
                              dtypes[di], (int)(seed / 8 % 8), seed);
                }
    printf("%d conv plans run and checked, %d refused by their strategy, %d on cuDNN's dense "
           "path (%d refusing a misaligned input and output)\n", runs, refused, dense_paths,
           misaligned_refused);
    return check_report();
}
