/* spforge run: C = A·B (+bias, +ReLU) on the selected backend, timed over
 * repeats and checked against the double-accumulated CPU reference. */
#include "cli/cli.h"

#include "core/parallel.h"
#include "cli/run_backend.h"
#include "core/budget.h"
#include "core/dtype.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

/* The embedded default input: a seeded synthetic pruned layer. */
static spf_status default_input(spf_matrix **a, char *label, size_t cap)
{
    spf_gen_options g;
    spf_gen_options_init(&g); /* uniform 768×768 at sparsity 0.9, seed 1 */
    snprintf(label, cap, "embedded default: uniform %" PRId64 "x%" PRId64 ", sparsity %g, seed %" PRIu64,
             g.rows, g.cols, g.sparsity, g.seed);
    return spf_matrix_generate(&g, a);
}

int cmd_run(const cli_command *cmd, int argc, char **argv)
{
    cli_read_args ra;
    cli_read_args_init(&ra);
    int64_t n = 0, threads = 0, repeat = 5;
    uint64_t seed = 1;
    int dtype = 0, math = 0, b_layout = 0, c_layout = 0, strategy = 0, no_dense = 0;
    int backend_choice = BACKEND_AUTO, timing_choice = TIMING_LOOP, bias = 0, relu = 0, progress = 0, no_progress = 0;
    int weights = SPF_TIMING_COLD;
    const char *const *dtype_names = cli_dtype_names();
    const cli_option options[] = {
        {"n", CLI_INT, &n, "N", "columns of B and C (required)", NULL, 1, INT32_MAX, 0},
        {"dtype", CLI_CHOICE, &dtype, "f32|f16|bf16",
         "storage type of B and C (default f32; GPU backend for f16 and bf16)", dtype_names, 0, 0, 0},
        {"math", CLI_CHOICE, &math, "default|tf32|f16x2",
         "default: exact fp32 (fp32 accumulation for f16 / bf16); tf32: TF32 tensor cores "
         "allowed (f32); f16x2: fp16 accumulation (f16)", cli_math_names(), 0, 0, 0},
        {"strategy", CLI_CHOICE, &strategy, "NAME",
         "the GPU plan's strategy: auto (default: the planner times its candidates and keeps the "
         "fastest, never slower than dense), unrolled, generic, tc, tcfrag, panel, structured, cusparselt, dense", cli_strategy_names(), 0, 0, 0},
        {"no-dense", CLI_FLAG, &no_dense, NULL,
         "AUTO may not use the dense strategy (it holds A as M×K dense values)", NULL, 0, 0, 0},
        {"b-layout", CLI_CHOICE, &b_layout, "n_last|n_first",
         "B as K×N (n_last, default) or N×K (n_first: X of Y = X·Wᵀ)", cli_layout_names(), 0, 0, 0},
        {"c-layout", CLI_CHOICE, &c_layout, "n_last|n_first",
         "C as M×N (n_last, default) or N×M (n_first)", cli_layout_names(), 0, 0, 0},
        {"bias", CLI_FLAG, &bias, NULL, "add a bias per row (uniform in [-1, 1])", NULL, 0, 0, 0},
        {"relu", CLI_FLAG, &relu, NULL, "apply max(., 0) last", NULL, 0, 0, 0},
        {"seed", CLI_U64, &seed, "S", "seed of B, the bias and pattern-only values (default 1)", NULL, 0, 0, 0},
        CLI_RUN_OPTIONS(threads, repeat, backend_choice, timing_choice, run_timing_names,
                        "loop|graph"),
        CLI_WEIGHTS_OPTION(weights),
        CLI_PROGRESS_OPTIONS(progress, no_progress),
        CLI_READ_OPTIONS(ra),
    };
    cli_context ctx;
    int rc = cli_parse(&ctx, cmd, options, sizeof options / sizeof options[0], argc, argv);
    if (rc != CLI_CONTINUE)
        return rc;
    if (n == 0)
        return cli_usage_error(&ctx, "--n is required (the number of columns of B)");
    if (strategy == SPF_STRATEGY_CPU)
        return cli_usage_error(&ctx, "--strategy cpu: the CPU reference is --backend cpu");
    if (progress && no_progress)
        return cli_usage_error(&ctx, "--progress and --no-progress exclude each other");
    cli_progress display;
    cli_progress_init(&display, "run", cli_progress_wanted(progress, no_progress, ctx.json));

    spf_device_info dev;
    spf_status st = spf_device_query(0, &dev);
    if (st != SPF_OK)
        return cli_fail_status(&ctx, st);
    char why[512];
    const run_backend *backend = run_backend_select(backend_choice, &dev, &st, why, sizeof why);
    if (!backend)
        return cli_fail(&ctx, st, "%s", why);
    int gpu_options = dtype || math || b_layout || c_layout || strategy || no_dense || weights;
    if (backend_choice == BACKEND_CPU && gpu_options)
        return cli_usage_error(&ctx, "--dtype, --math, --strategy, --no-dense, --weights and the "
                                     "layouts shape a GPU plan, not --backend cpu");
    if (backend_choice != BACKEND_GPU && gpu_options && !dev.available)
        return cli_fail(&ctx, SPF_ERR_NO_DEVICE,
                        "--dtype, --math, --strategy, --no-dense, --weights and the layouts shape a "
                        "GPU plan, "
                        "and there is no usable CUDA device (%s)", dev.reason);

    spf_matrix *a = NULL;
    float *b = NULL, *c = NULL, *bias_v = NULL;
    double *ref = NULL;
    char input[512];
    rc = CLI_EXIT_FAIL;
    if (ctx.arg_count) {
        snprintf(input, sizeof input, "%s", ctx.args[0]);
        cli_progress_note(&display, 1, "reading %s", ctx.args[0]);
        st = cli_read_matrix(&ra, seed, ctx.args[0], &a);
        cli_progress_finish(&display);
    } else {
        st = default_input(&a, input, sizeof input);
    }
    spf_matrix_stats s;
    if (st == SPF_OK)
        st = spf_matrix_stats_compute(a, &s);
    if (st != SPF_OK) {
        rc = cli_fail_status(&ctx, st);
        goto done;
    }
    /* B, C, the reference and the bias: sizes that saturate, checked against
     * the budget before anything is allocated */
    int64_t m = s.rows, k = s.cols, mn = bytes_mul(m, n), kn = bytes_mul(k, n);
    int64_t need = bytes_add(bytes_mul(kn, sizeof *b), bytes_mul(mn, sizeof *c + sizeof *ref));
    st = budget_check(input, bytes_add(need, bytes_mul(m, sizeof *bias_v)),
                      "B, C, the reference and the bias with this N");
    if (st != SPF_OK) {
        rc = cli_fail_status(&ctx, st);
        goto done;
    }
    b = malloc((size_t)(kn ? kn : 1) * sizeof *b);
    c = malloc((size_t)(mn ? mn : 1) * sizeof *c);
    ref = malloc((size_t)(mn ? mn : 1) * sizeof *ref);
    bias_v = bias ? malloc((size_t)(m ? m : 1) * sizeof *bias_v) : NULL;
    if (!b || !c || !ref || (bias && !bias_v)) {
        rc = cli_fail(&ctx, SPF_ERR_OUT_OF_MEMORY, "%s: operands of %" PRId64 "x%" PRId64
                      " with N = %" PRId64, input, m, k, n);
        goto done;
    }
    spf_fill_uniform(b, kn, seed);
    dtype_round((spf_dtype)dtype, b, kn); /* B as the kernel sees it, for the reference too */
    if (bias_v)
        spf_fill_uniform(bias_v, m, seed + 1); /* a stream apart from B's */

    run_request req = {a,        n,
                       b,        c,
                       bias_v,   relu,
                       (int)threads, (int)repeat,
                       timing_choice == TIMING_GRAPH, {0},
                       &display};
    spf_plan_options_init(&req.plan);
    req.plan.strategy = (spf_strategy)strategy;
    req.plan.dtype = (spf_dtype)dtype;
    req.plan.math = (spf_math)math;
    req.plan.b_layout = (spf_layout)b_layout;
    req.plan.c_layout = (spf_layout)c_layout;
    req.plan.timing = (spf_timing)weights;
    req.plan.dense = !no_dense;
    run_outcome out = {0};
    st = backend->run(&req, &out);
    if (st != SPF_OK) {
        cli_progress_finish(&display);
        rc = cli_fail_status(&ctx, st);
        goto done;
    }
    double median = out.median_s;
    double gflops = median > 0 ? 2.0 * (double)s.nnz * (double)n / median * 1e-9 : 0.0;

    cli_progress_note(&display, 1, "checking C against the double-accumulated reference");
    st = spf_reference_spmm_f64(a, n, b, ref, bias_v, relu, (int)threads);
    cli_progress_finish(&display);
    if (st != SPF_OK) {
        rc = cli_fail_status(&ctx, st);
        goto done;
    }
    double error = spf_relative_error(c, ref, mn);
    int passed = error <= out.tolerance; /* NaN and +inf fail too */

    if (ctx.json) {
        json_writer w;
        cli_json_begin(&w, &ctx);
        json_string(&w, "input", input);
        json_bool(&w, "default_input", ctx.arg_count == 0);
        cli_json_device(&w, "device", &dev);
        json_string(&w, "backend", backend->name);
        json_string(&w, "backend_description", backend->description);
        json_string(&w, "kernel", out.detail);
        json_string(&w, "timing", out.timing);
        json_string(&w, "weights", run_weights_names[weights]);
        if (out.have_plan)
            cli_json_plan(&w, "plan", &out.plan);
        cli_json_stats(&w, "stats", &s);
        json_int(&w, "n", n);
        json_string(&w, "dtype", dtype_names[dtype]);
        json_bool(&w, "bias", bias);
        json_bool(&w, "relu", relu);
        json_int(&w, "threads", threads ? threads : parallel_default_threads());
        json_uint(&w, "seed", seed);
        json_int(&w, "repeat", repeat);
        json_double(&w, "time_ms_median", 1e3 * median);
        json_double(&w, "time_ms_min", 1e3 * out.min_s);
        json_double(&w, "gflops", gflops);
        json_double(&w, "relative_error", error);
        json_double(&w, "tolerance", out.tolerance);
        json_bool(&w, "passed", passed);
        rc = cli_json_end(&ctx, &w);
    } else {
        printf("input      %s\n", input);
        cli_print_stats(&s);
        printf("backend    %s: %s\n", backend->name, backend->description);
        printf("kernel     %s\n", out.detail);
        if (out.have_plan) {
            printf("plan       %s strategy, %s (math %s, B %s, C %s)\n",
                   spf_strategy_name(out.plan.strategy), out.plan.config[0] ? out.plan.config : "-",
                   spf_math_name(out.plan.math), spf_layout_name(out.plan.b_layout),
                   spf_layout_name(out.plan.c_layout));
            cli_print_candidates(&out.plan);
        }
        printf("device     ");
        cli_print_device(&dev);
        printf("problem    C = A*B%s%s, N = %" PRId64 ", %s, B%s uniform in [-1, 1] from seed %" PRIu64 "\n",
               bias ? " + bias" : "", relu ? ", ReLU" : "", n, dtype_names[dtype], bias ? " and bias" : "",
               seed);
        printf("time       median %.4f ms (min %.4f ms): %s\n", 1e3 * median, 1e3 * out.min_s,
               out.timing);
        printf("throughput %.2f GFLOP/s (2*nnz*N)\n", gflops);
        printf("error      %.3g relative to the double-accumulated reference (tolerance %g): %s\n", error,
               out.tolerance, passed ? "ok" : "FAILED");
        rc = CLI_EXIT_OK;
    }
    if (rc == CLI_EXIT_OK && !passed)
        rc = cli_fail(&ctx, SPF_ERR_VERIFY, "%s: relative error %.3g exceeds the %s tolerance %g",
                      input, error, dtype_names[dtype], out.tolerance);
done:
    cli_progress_destroy(&display);
    spf_matrix_free(a);
    free(b);
    free(c);
    free(bias_v);
    free(ref);
    return rc;
}
