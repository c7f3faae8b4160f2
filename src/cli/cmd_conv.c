/* spforge conv: a sparse 2-D convolution (spf_conv_plan_*) on the
 * selected backend, timed and checked against the CPU reference like
 * `spforge run`. */
#include "cli/cli.h"
#include "cli/run_backend.h"
#include "core/budget.h"
#include "core/dtype.h"
#include "gpu/host_run.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const layout_names[] = {"nchw", "nhwc", NULL};

/* "N,C,H,W": four sizes ≥ 1, nothing after them. */
static int parse_shape(const char *text, int64_t dims[4])
{
    int used = 0;
    long long v[4];
    if (!text || sscanf(text, "%lld,%lld,%lld,%lld%n", &v[0], &v[1], &v[2], &v[3], &used) != 4 ||
        text[used] != '\0')
        return 0;
    for (int i = 0; i < 4; i++) {
        if (v[i] < 1 || v[i] > INT32_MAX)
            return 0;
        dims[i] = v[i];
    }
    return 1;
}

/* "R" or "RxS" */
static int parse_kernel(const char *text, int64_t *r, int64_t *s)
{
    long long a, b;
    int used = 0;
    if (sscanf(text, "%lldx%lld%n", &a, &b, &used) == 2 && text[used] == '\0') {
        *r = a, *s = b;
    } else if (sscanf(text, "%lld%n", &a, &used) == 1 && text[used] == '\0') {
        *r = *s = a;
    } else {
        return 0;
    }
    return *r >= 1 && *s >= 1 && *r <= 4096 && *s <= 4096;
}

/* A host plan: `repeat` executes timed by the wall clock, the median. */
static spf_status run_host(const spf_conv_plan *plan, const float *in, float *out,
                           const float *bias, const float *residual, int repeat, double *median,
                           double *min)
{
    double *times = malloc((size_t)repeat * sizeof *times);
    if (!times)
        return SPF_ERR_OUT_OF_MEMORY;
    spf_status st = SPF_OK;
    for (int r = 0; r < repeat && st == SPF_OK; r++) {
        double t0 = cli_now();
        st = spf_conv_plan_execute(plan, in, out, bias, residual, NULL);
        times[r] = cli_now() - t0;
    }
    if (st == SPF_OK)
        *median = run_times_median(times, repeat, min);
    free(times);
    return st;
}

/* --timing: run's two, and both of them on the same plan (a benchmark's
 * two columns from one plan build: graph_time_ms_* beside time_ms_*) */
enum { TIMING_BOTH = 2 };
static const char *const conv_timing_names[] = {"loop", "graph", "both", NULL};

static const char *const timing_texts[] = {
    "kernel time per execute: its launches in a loop (CUDA events, median of rounds)",
    "kernel time per execute, its launches replayed in a CUDA graph (CUDA events, median of "
    "rounds)"};

int cmd_conv(const cli_command *cmd, int argc, char **argv)
{
    cli_read_args ra;
    cli_read_args_init(&ra);
    const char *shape_text = NULL, *kernel_text = NULL;
    int64_t stride = 1, padding = 0, threads = 0, repeat = 5;
    uint64_t seed = 1;
    int layout = 0, dtype = 0, strategy = 0, no_dense = 0, bias = 0, relu = 0, residual = 0;
    int backend_choice = BACKEND_AUTO, timing_choice = TIMING_LOOP, progress = 0, no_progress = 0;
    const char *const *dtype_names = cli_dtype_names();
    const cli_option options[] = {
        {"input-shape", CLI_STRING, &shape_text, "N,C,H,W",
         "batch, channels, height and width of the input (required)", NULL, 0, 0, 0},
        {"kernel", CLI_STRING, &kernel_text, "R|RxS",
         "filter height and width (default: square, from the weights' columns / C)", NULL, 0, 0, 0},
        {"stride", CLI_INT, &stride, "S", "stride along both axes (default 1)", NULL, 1, 4096, 0},
        {"padding", CLI_INT, &padding, "P", "zero padding on every side (default 0)", NULL, 0, 4096, 0},
        {"layout", CLI_CHOICE, &layout, "nchw|nhwc",
         "of the input, the residual and the output (default nchw; nhwc is torch's channels_last)",
         layout_names, 0, 0, 0},
        {"dtype", CLI_CHOICE, &dtype, "f32|f16|bf16",
         "storage type of the tensors (default f32; GPU backend for f16 and bf16)", dtype_names, 0, 0, 0},
        {"strategy", CLI_CHOICE, &strategy, "NAME",
         "the SpMM plan's strategy (default auto: the planner times its candidates)",
         cli_strategy_names(), 0, 0, 0},
        {"no-dense", CLI_FLAG, &no_dense, NULL, "AUTO may not use the dense strategy", NULL, 0, 0, 0},
        {"bias", CLI_FLAG, &bias, NULL, "add a bias per output channel (uniform in [-1, 1])", NULL, 0, 0, 0},
        {"residual", CLI_FLAG, &residual, NULL,
         "add a residual tensor of the output's shape (uniform in [-1, 1]) before the ReLU", NULL, 0, 0, 0},
        {"relu", CLI_FLAG, &relu, NULL, "apply max(., 0) last", NULL, 0, 0, 0},
        {"seed", CLI_U64, &seed, "S", "seed of the input, bias, residual and pattern-only values (default 1)", NULL, 0, 0, 0},
        CLI_RUN_OPTIONS(threads, repeat, backend_choice, timing_choice, conv_timing_names,
                        "loop|graph|both"),
        CLI_PROGRESS_OPTIONS(progress, no_progress),
        CLI_READ_OPTIONS(ra),
    };
    cli_context ctx;
    int rc = cli_parse(&ctx, cmd, options, sizeof options / sizeof options[0], argc, argv);
    if (rc != CLI_CONTINUE)
        return rc;
    int64_t dims[4];
    if (!shape_text)
        return cli_usage_error(&ctx, "--input-shape N,C,H,W is required");
    if (!parse_shape(shape_text, dims))
        return cli_usage_error(&ctx, "--input-shape \"%s\": expected N,C,H,W, four sizes from 1 "
                                     "to 2^31 - 1", shape_text);
    int64_t kr = 0, ks = 0;
    if (kernel_text && !parse_kernel(kernel_text, &kr, &ks))
        return cli_usage_error(&ctx, "--kernel \"%s\": expected R or RxS, from 1 to 4096", kernel_text);
    if (strategy == SPF_STRATEGY_CPU)
        return cli_usage_error(&ctx, "--strategy cpu: the CPU reference is --backend cpu");
    if (progress && no_progress)
        return cli_usage_error(&ctx, "--progress and --no-progress exclude each other");
    int gpu_options = dtype || strategy || no_dense;
    if (backend_choice == BACKEND_CPU && gpu_options)
        return cli_usage_error(&ctx, "--dtype, --strategy and --no-dense shape a GPU plan, not "
                                     "--backend cpu");
    spf_device_info dev;
    spf_status st = spf_device_query(0, &dev);
    if (st != SPF_OK)
        return cli_fail_status(&ctx, st);
    char why[512];
    const run_backend *backend = run_backend_select(backend_choice, &dev, &st, why, sizeof why);
    if (!backend)
        return cli_fail(&ctx, st, "%s", why);
    const int host = strcmp(backend->name, "cpu") == 0;
    if (host && gpu_options)
        return cli_fail(&ctx, SPF_ERR_NO_DEVICE, "--dtype, --strategy and --no-dense shape a GPU "
                        "plan, and there is no usable CUDA device (%s)", dev.reason);
    cli_progress display;
    cli_progress_init(&display, "conv", cli_progress_wanted(progress, no_progress, ctx.json));

    spf_matrix *w = NULL;
    spf_conv_plan *plan = NULL;
    float *in = NULL, *out = NULL, *out2 = NULL, *want = NULL, *bias_v = NULL, *res = NULL;
    double *ref = NULL;
    rc = CLI_EXIT_FAIL;
    cli_progress_note(&display, 1, "reading %s", ctx.args[0]);
    st = cli_read_matrix(&ra, seed, ctx.args[0], &w);
    cli_progress_finish(&display);
    if (st != SPF_OK) {
        rc = cli_fail_status(&ctx, st);
        goto done;
    }
    const int64_t cols = spf_matrix_cols(w), k_out = spf_matrix_rows(w);
    if (!kernel_text) { /* square: R·R = cols / C */
        kr = 1;
        while ((kr + 1) * (kr + 1) * dims[1] <= cols)
            kr++;
        ks = kr;
        if (kr * kr * dims[1] != cols) {
            rc = cli_fail(&ctx, SPF_ERR_INVALID_ARGUMENT, "%s: %" PRId64 " columns are not C = %"
                          PRId64 " times a square filter; give --kernel RxS", ctx.args[0], cols,
                          dims[1]);
            goto done;
        }
    }
    spf_conv_desc d;
    spf_conv_desc_init(&d);
    d.batch = dims[0], d.channels = dims[1], d.height = dims[2], d.width = dims[3];
    d.kernel_h = kr, d.kernel_w = ks, d.stride = stride, d.padding = padding;
    d.layout = (spf_conv_layout)layout;
    d.residual = residual;
    spf_plan_options o;
    spf_plan_options_init(&o);
    o.strategy = host ? SPF_STRATEGY_CPU : (spf_strategy)strategy;
    o.dtype = (spf_dtype)dtype;
    o.dense = !no_dense;
    o.bias = bias;
    o.relu = relu;
    o.host_threads = (int)threads;
    if (display.on) {
        o.progress = cli_progress_event;
        o.progress_user = &display;
    }
    double t0 = cli_now();
    st = spf_conv_plan_create(w, &d, &o, &plan);
    const double plan_s = cli_now() - t0;
    cli_progress_finish(&display);
    spf_conv_info info = {.size = sizeof info};
    if (st == SPF_OK)
        st = spf_conv_plan_get_info(plan, &info);
    if (st != SPF_OK) {
        rc = cli_fail_status(&ctx, st);
        goto done;
    }
    /* < 2^63 (the plan checked them); their bytes saturate, and the budget
     * refuses them before anything is allocated */
    const int64_t in_count = dims[0] * dims[1] * dims[2] * dims[3];
    const int64_t out_count = dims[0] * k_out * info.out_h * info.out_w;
    const int both = timing_choice == TIMING_BOTH && !host;
    int64_t need = bytes_add(bytes_mul(in_count, sizeof *in),
                             bytes_mul(out_count, (int64_t)(2 * sizeof *out + sizeof *ref)));
    need = bytes_add(need, bytes_mul(out_count, (int64_t)((residual + both) * sizeof *out)));
    st = budget_check(shape_text, bytes_add(need, bytes_mul(k_out, sizeof *bias_v)),
                      "the input, output, reference and residual tensors");
    if (st != SPF_OK) {
        rc = cli_fail_input(&ctx, st, ctx.args[0]);
        goto done;
    }
    in = malloc((size_t)in_count * sizeof *in);
    out = malloc((size_t)(out_count > 0 ? out_count : 1) * sizeof *out);
    want = malloc((size_t)(out_count > 0 ? out_count : 1) * sizeof *want);
    ref = malloc((size_t)(out_count > 0 ? out_count : 1) * sizeof *ref);
    bias_v = bias ? malloc((size_t)k_out * sizeof *bias_v) : NULL;
    res = residual ? malloc((size_t)(out_count > 0 ? out_count : 1) * sizeof *res) : NULL;
    out2 = both ? malloc((size_t)(out_count > 0 ? out_count : 1) * sizeof *out2) : NULL;
    if (!in || !out || !want || !ref || (bias && !bias_v) || (residual && !res) ||
        (both && !out2)) {
        rc = cli_fail(&ctx, SPF_ERR_OUT_OF_MEMORY, "tensors of %" PRId64 " and %" PRId64
                      " elements", in_count, out_count);
        goto done;
    }
    spf_fill_uniform(in, in_count, seed);
    dtype_round((spf_dtype)dtype, in, in_count); /* as the kernel sees it, for the reference too */
    if (bias_v)
        spf_fill_uniform(bias_v, k_out, seed + 1);
    if (res) {
        spf_fill_uniform(res, out_count, seed + 2);
        dtype_round((spf_dtype)dtype, res, out_count);
    }
    double median = 0, min = 0, graph_median = 0, graph_min = 0, tolerance;
    const char *timing = "";
    cli_progress_note(&display, 1, "timing the conv plan");
    if (host) {
        st = run_host(plan, in, out, bias_v, res, (int)repeat, &median, &min);
        timing = "wall time per run";
        tolerance = 1e-6;
    } else {
        /* loop, graph, or both: the loop first, then the graph into out2 */
        for (int graph = 0; graph < 2 && st == SPF_OK; graph++) {
            if (timing_choice != TIMING_BOTH && graph != (timing_choice == TIMING_GRAPH))
                continue;
            timing_result t;
            timing_options topt;
            timing_options_init(&topt);
            topt.graph = graph;
            st = host_run_conv(plan, in_count, out_count, bias ? k_out : 0, in, bias_v, res,
                               graph && out2 ? out2 : out, &topt, &t);
            if (graph && out2) {
                graph_median = 1e-6 * t.median_us, graph_min = 1e-6 * t.min_us;
                continue;
            }
            median = 1e-6 * t.median_us, min = 1e-6 * t.min_us;
            timing = timing_texts[graph];
        }
        tolerance = dtype_tolerance((spf_dtype)dtype, SPF_MATH_DEFAULT);
    }
    cli_progress_finish(&display);
    if (st != SPF_OK) {
        rc = cli_fail_status(&ctx, st);
        goto done;
    }
    cli_progress_note(&display, 1, "checking against the CPU reference");
    st = spf_reference_conv2d(w, &d, in, bias_v, res, relu, want);
    cli_progress_finish(&display);
    if (st != SPF_OK) {
        rc = cli_fail_status(&ctx, st);
        goto done;
    }
    for (int64_t i = 0; i < out_count; i++)
        ref[i] = want[i];
    double error = spf_relative_error(out, ref, out_count);
    if (out2) { /* the graph's output checked as the loop's */
        const double graph_error = spf_relative_error(out2, ref, out_count);
        error = graph_error > error ? graph_error : error;
    }
    const int passed = error <= tolerance;
    const double flops = 2.0 * (double)spf_matrix_nnz(w) * (double)(out_count / k_out);
    const double gflops = median > 0 ? flops / median * 1e-9 : 0.0;

    if (ctx.json) {
        json_writer j;
        cli_json_begin(&j, &ctx);
        json_string(&j, "input", ctx.args[0]);
        cli_json_device(&j, "device", &dev);
        json_string(&j, "backend", backend->name);
        json_int(&j, "batch", dims[0]);
        json_int(&j, "channels", dims[1]);
        json_int(&j, "height", dims[2]);
        json_int(&j, "width", dims[3]);
        json_int(&j, "out_channels", k_out);
        json_int(&j, "kernel_h", kr);
        json_int(&j, "kernel_w", ks);
        json_int(&j, "stride", stride);
        json_int(&j, "padding", padding);
        json_int(&j, "out_h", info.out_h);
        json_int(&j, "out_w", info.out_w);
        json_string(&j, "layout", layout_names[layout]);
        json_string(&j, "dtype", dtype_names[dtype]);
        json_bool(&j, "bias", bias);
        json_bool(&j, "residual", residual);
        json_bool(&j, "relu", relu);
        json_string(&j, "path", spf_conv_path_name(info.path));
        json_int(&j, "spmm_n", info.spmm_n);
        json_int(&j, "launches", info.launches);
        json_int(&j, "workspace_bytes", info.workspace_bytes);
        json_double(&j, "im2col_us", info.im2col_us);
        json_double(&j, "implicit_us", info.implicit_us);
        json_double(&j, "dense_us", info.dense_us);
        cli_json_plan(&j, "plan", &info.spmm);
        json_double(&j, "plan_s", plan_s);
        json_string(&j, "timing", timing);
        json_double(&j, "time_ms_median", 1e3 * median);
        json_double(&j, "time_ms_min", 1e3 * min);
        if (out2) {
            json_double(&j, "graph_time_ms_median", 1e3 * graph_median);
            json_double(&j, "graph_time_ms_min", 1e3 * graph_min);
        }
        json_double(&j, "gflops", gflops);
        json_uint(&j, "seed", seed);
        json_double(&j, "relative_error", error);
        json_double(&j, "tolerance", tolerance);
        json_bool(&j, "passed", passed);
        rc = cli_json_end(&ctx, &j);
    } else {
        printf("weights    %s: %" PRId64 " x %" PRId64 ", %" PRId64 " nonzeros\n", ctx.args[0],
               k_out, cols, spf_matrix_nnz(w));
        printf("conv       %" PRId64 "x%" PRId64 "x%" PRId64 "x%" PRId64 " (%s) * %" PRId64
               "x%" PRId64 " filter, stride %" PRId64 ", padding %" PRId64 " -> %" PRId64
               " x %" PRId64 "x%" PRId64 "%s%s%s, %s\n",
               dims[0], dims[1], dims[2], dims[3], layout_names[layout], kr, ks, stride, padding,
               k_out, info.out_h, info.out_w, bias ? ", bias" : "", residual ? ", residual" : "",
               relu ? ", ReLU" : "", dtype_names[dtype]);
        printf("backend    %s: %s\n", backend->name,
               host ? "CPU plan (the SpMM's CPU reference, sums in double)"
                    : "GPU plan (spf_conv_plan_create)");
        printf("path       %s: %d SpMM launch%s of N = %" PRId64 ", workspace %" PRId64 " bytes\n",
               spf_conv_path_name(info.path), info.launches, info.launches == 1 ? "" : "es",
               info.spmm_n, info.workspace_bytes);
        if (info.implicit_us > 0 || info.dense_us > 0)
            printf("paths      timed: explicit %.2f us, implicit %.2f us, dense (cuDNN) %.2f us "
                   "per execute (0: not built)\n", info.im2col_us, info.implicit_us,
                   info.dense_us);
        printf("plan       %s strategy, %s: %s (built in %.2f s)\n",
               spf_strategy_name(info.spmm.strategy), info.spmm.config[0] ? info.spmm.config : "-",
               info.spmm.kernel_name, plan_s);
        if (!host)
            cli_print_candidates(&info.spmm);
        printf("device     ");
        cli_print_device(&dev);
        printf("time       median %.4f ms (min %.4f ms): %s\n", 1e3 * median, 1e3 * min, timing);
        if (out2)
            printf("graph time median %.4f ms (min %.4f ms): %s\n", 1e3 * graph_median,
                   1e3 * graph_min, timing_texts[1]);
        printf("throughput %.2f GFLOP/s (2*nnz*N*P*Q)\n", gflops);
        printf("error      %.3g relative to the CPU reference (tolerance %g): %s\n", error,
               tolerance, passed ? "ok" : "FAILED");
        rc = CLI_EXIT_OK;
    }
    if (rc == CLI_EXIT_OK && !passed)
        rc = cli_fail(&ctx, SPF_ERR_VERIFY, "%s: relative error %.3g exceeds the %s tolerance %g",
                      ctx.args[0], error, dtype_names[dtype], tolerance);
done:
    cli_progress_destroy(&display);
    spf_conv_plan_free(plan);
    spf_matrix_free(w);
    free(in);
    free(out);
    free(out2);
    free(want);
    free(ref);
    free(bias_v);
    free(res);
    return rc;
}
