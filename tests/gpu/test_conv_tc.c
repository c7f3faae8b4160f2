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
 * Then chains: launches back to back where each reads the last one's
 * output (run_chain), for the kernel's early start; with --quick only
 * configs of up to 3 slices.
 *
 * `test_conv_tc --quick`: f16 only, clusters of 2 and 3 (the
 * compute-sanitizer run). */
#include "conv_tc_case.h"
#include "conv_kernel_test.h"

#include <math.h>

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

/* Convolutions chained on one stream (C = K, the shape kept), each
 * reading the last one's output and writing over the input of the one
 * before: on sm_90 a launch may start before the previous kernel ends
 * (gpu/grid_dependency.cuh), and must wait for it before it reads its
 * input or writes its output. CHAIN launches back to back on a stream,
 * and as a CUDA graph's replay, against the same launches one at a time
 * with the stream synchronised between: the same bits where the slices'
 * sums meet in a fixed order (one slice, a cluster), within the dtype's
 * tolerance where they meet in the workspace (atomic adds). */
static void run_chain(conv_tc_config cfg, uint64_t seed)
{
    enum { CHAIN = 4 }; /* even: the last output lands in the first input's place */
    static const conv_dims d = {"3x3 on 28x28, C = K = 64 (a chain)", 1, 64, 28, 28, 64, 3, 3, 1,
                                1};
    const spf_dtype dtype = SPF_DTYPE_F16;
    conv_case t;
    conv_case_make(&t, &d, SPF_CONV_NHWC, 1, 1, 1, dtype, seed);
    conv_tc_format f;
    conv_tc *x = NULL;
    if (!conv_tc_case_format(&t, &d, cfg, dtype, &f)) {
        conv_case_free(&t);
        return;
    }
    if (conv_tc_create(&f, dtype, 1, &x) != SPF_OK) {
        CHECK(f.geom.cluster && f.geom.splits > 8); /* a size the device cannot place */
        conv_tc_format_free(&f);
        conv_case_free(&t);
        return;
    }
    conv_io io;
    conv_io_stage(&t, dtype, 1, 0, &io);
    void *first = NULL;
    cudaStream_t stream = NULL;
    CUDA_OK(cudaMalloc(&first, io.out_bytes));
    CUDA_OK(cudaMemcpy(first, io.in, io.out_bytes, cudaMemcpyDeviceToDevice));
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    float *want = malloc((size_t)t.out_count * sizeof *want);
    for (int mode = 0; mode < 3; mode++) { /* one at a time, back to back, a graph */
        CUDA_OK(cudaMemcpyAsync(io.in, first, io.out_bytes, cudaMemcpyDeviceToDevice, stream));
        CUDA_OK(cudaMemsetAsync(io.out, 0xff, io.out_bytes, stream));
        if (mode == 2)
            CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
        for (int i = 0; i < CHAIN; i++) {
            CHECK_OK(conv_tc_launch(x, i % 2 ? io.out : io.in, i % 2 ? io.in : io.out, io.bias,
                                    io.residual, stream));
            if (mode == 0)
                CUDA_OK(cudaStreamSynchronize(stream));
        }
        if (mode == 2) {
            cudaGraph_t graph = NULL;
            cudaGraphExec_t exec = NULL;
            CUDA_OK(cudaStreamEndCapture(stream, &graph));
            CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
            CUDA_OK(cudaGraphLaunch(exec, stream));
            CUDA_OK(cudaStreamSynchronize(stream));
            cudaGraphExecDestroy(exec);
            cudaGraphDestroy(graph);
        }
        CUDA_OK(cudaStreamSynchronize(stream));
        CUDA_OK(cudaMemcpy(io.raw, io.in, io.out_bytes, cudaMemcpyDeviceToHost));
        dtype_to_float(dtype, io.raw, t.out, t.out_count);
        if (mode == 0) {
            memcpy(want, t.out, (size_t)t.out_count * sizeof *want);
            continue;
        }
        double worst = 0.0; /* relative to the largest output */
        double top = 0.0;
        for (int64_t i = 0; i < t.out_count; i++) {
            top = fmax(top, fabs((double)want[i]));
            worst = fmax(worst, fabs((double)t.out[i] - (double)want[i]));
        }
        const int fixed = f.geom.cluster || f.geom.splits == 1;
        const double tol = fixed ? 0.0 : dtype_tolerance(dtype, SPF_MATH_DEFAULT) * top;
        CHECK_MSG(worst <= tol && top > 0.0 && top == top,
                  "chain of %d, bn%d ks%d z%d%s%s, %s: off by %.3g of %.3g", CHAIN, f.geom.bn,
                  f.geom.ks, f.geom.splits, f.geom.cluster ? "c" : "", f.geom.tma ? "t" : "",
                  mode == 1 ? "back to back" : "a graph", worst, top);
        runs++;
    }
    free(want);
    cudaStreamDestroy(stream);
    cudaFree(first);
    conv_io_free(&io);
    conv_tc_free(x);
    conv_tc_format_free(&f);
    conv_case_free(&t);
}

static void run_chains(int quick)
{
    static const conv_dims d = {"", 1, 64, 28, 28, 64, 3, 3, 1, 1};
    const conv_gather g = conv_dims_gather(&d);
    conv_tc_config cfg[CONV_TC_MAX_CONFIGS + 1] = {{16, 1, 0, 0}};
    char reason[200];
    const int n = 1 + conv_tc_configs(&g, (int32_t)d.k, 132, 1, cfg + 1, reason, sizeof reason);
    CHECK_MSG(n > 1, "no configs for the chain: %s", reason);
    for (int c = 0; c < n; c++)
        if (!quick || cfg[c].splits <= 3) /* the sanitizers' set: as in run_all */
            run_chain(cfg[c], 0xc4000 + 8 * (uint64_t)c);
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
    run_chains(quick);
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
