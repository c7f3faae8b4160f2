/* Plans on the GPU against the CPU reference accumulated in double: every
 * strategy (AUTO → unrolled, forced unrolled configs, generic, CPU, the
 * exhaustive tuner, AUTO over the code budget → generic), random and DLMC
 * patterns, f32 / f16 / bf16 storage and f16x2 accumulation, N ∈ {1, 3, 49,
 * 127, 256, 3136}, empty rows, M not divisible by m1, bias + ReLU, outputs
 * poisoned with NaN before every run, and execute captured in a CUDA graph
 * and replayed. `test_plan quick` runs a subset (for compute-sanitizer). */
#define _POSIX_C_SOURCE 200809L

#include "test_util.h"

#include "core/dtype.h"
#include "gpu/selfcheck.h"

#include <stdint.h>
#include <unistd.h>

#ifndef SPF_HAVE_CUDA
int main(int argc, char **argv) { SKIP("no CUDA device: built without CUDA"); }
#else

#include <cuda_runtime_api.h>

static cudaStream_t stream;

static double tolerance(const spf_plan_options *o) { return dtype_tolerance(o->dtype, o->math); }

/* Run the plan once on fresh random inputs (another seed than the plan's
 * self-check) with C poisoned, directly or through a captured graph, and
 * return the relative error against the double reference. */
static double run_once(const spf_plan *p, const spf_matrix *a, int64_t n, const spf_plan_options *o,
                       int graph, uint64_t seed)
{
    int64_t m = spf_matrix_rows(a), k = spf_matrix_cols(a);
    size_t es = dtype_size(o->dtype);
    float *b = malloc((size_t)(k * n + 1) * sizeof *b), *bias = malloc((size_t)(m + 1) * sizeof *bias);
    float *c = malloc((size_t)(m * n + 1) * sizeof *c);
    void *raw = malloc((size_t)(m * n + k * n + 1) * es);
    double *ref = malloc((size_t)(m * n + 1) * sizeof *ref);
    double err = INFINITY;
    if (!b || !bias || !c || !raw || !ref)
        goto done;
    spf_fill_uniform(b, k * n, seed);
    spf_fill_uniform(bias, m, seed + 1);
    dtype_from_float(o->dtype, b, raw, k * n); /* the reference sees B as stored */
    dtype_to_float(o->dtype, raw, b, k * n);
    if (spf_reference_spmm_f64(a, n, b, ref, o->bias ? bias : NULL, o->relu, 0) != SPF_OK)
        goto done;

    if (o->strategy == SPF_STRATEGY_CPU) {
        for (int64_t i = 0; i < m * n; i++)
            c[i] = NAN;
        CHECK_OK(spf_plan_execute(p, b, c, o->bias ? bias : NULL, NULL));
        err = spf_relative_error(c, ref, m * n);
        goto done;
    }
    void *db = NULL, *dc = NULL;
    float *dbias = NULL;
    CUDA_OK(cudaMalloc(&db, (size_t)(k * n + 1) * es));
    CUDA_OK(cudaMalloc(&dc, (size_t)(m * n + 1) * es));
    CUDA_OK(cudaMalloc((void **)&dbias, (size_t)(m + 1) * sizeof(float)));
    CUDA_OK(cudaMemcpy(db, raw, (size_t)(k * n) * es, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(dbias, bias, (size_t)m * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(dc, 0xff, (size_t)(m * n) * es)); /* NaN in every dtype */
    const float *bias_arg = o->bias ? dbias : NULL;
    if (graph) {
        /* Global capture mode turns any hidden allocation or
         * synchronization inside execute into an error. */
        cudaGraph_t g = NULL;
        cudaGraphExec_t ge = NULL;
        CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
        CHECK_OK(spf_plan_execute(p, db, dc, bias_arg, stream));
        CUDA_OK(cudaStreamEndCapture(stream, &g));
        CUDA_OK(cudaGraphInstantiate(&ge, g, 0));
        for (int r = 0; r < 3; r++) { /* replays, the last one checked */
            CUDA_OK(cudaMemsetAsync(dc, 0xff, (size_t)(m * n) * es, stream));
            CUDA_OK(cudaGraphLaunch(ge, stream));
        }
        CUDA_OK(cudaStreamSynchronize(stream));
        if (ge)
            cudaGraphExecDestroy(ge);
        if (g)
            cudaGraphDestroy(g);
    } else {
        CHECK_OK(spf_plan_execute(p, db, dc, bias_arg, stream));
        CUDA_OK(cudaStreamSynchronize(stream));
    }
    CUDA_OK(cudaMemcpy(raw, dc, (size_t)(m * n) * es, cudaMemcpyDeviceToHost));
    dtype_to_float(o->dtype, raw, c, m * n);
    err = spf_relative_error(c, ref, m * n);
    cudaFree(db);
    cudaFree(dc);
    cudaFree(dbias);
done:
    free(b);
    free(bias);
    free(c);
    free(raw);
    free(ref);
    return err;
}

/* expect_strategy for AUTO plans with a device: any device strategy,
 * whichever it timed fastest (DESIGN.md decision 7). */
#define EXPECT_GPU_KERNEL (-2)
/* ... and one that is not UNROLLED (a pattern over AUTO's code budget). */
#define EXPECT_NOT_UNROLLED (-3)

/* Build, check against the reference, print one line; returns the plan's
 * info (strategy -1 if creation failed). */
static spf_plan_info check_plan(const char *label, const spf_matrix *a, int64_t n,
                                const spf_plan_options *o, int expect_strategy, int graph)
{
    spf_plan_info info = {.size = sizeof info, .strategy = (spf_strategy)-1};
    spf_plan *p = NULL;
    printf("%-28s N=%-5lld ...\n", label, (long long)n);
    spf_status st = spf_plan_create(a, n, o, &p);
    CHECK_MSG(st == SPF_OK, "%s N=%lld: %s: %s", label, (long long)n, spf_status_string(st),
              spf_last_error());
    if (st != SPF_OK)
        return info;
    CHECK_OK(spf_plan_get_info(p, &info));
    double err = run_once(p, a, n, o, graph, 1000 + (uint64_t)n);
    double tol = tolerance(o);
    CHECK_MSG(err <= tol, "%s N=%lld %s: error %.3g over %.0e", label, (long long)n,
              info.kernel_name, err, tol);
    if (expect_strategy == EXPECT_GPU_KERNEL || expect_strategy == EXPECT_NOT_UNROLLED)
        CHECK_MSG(info.strategy != SPF_STRATEGY_CPU && info.strategy != SPF_STRATEGY_AUTO &&
                      (expect_strategy == EXPECT_GPU_KERNEL ||
                       info.strategy != SPF_STRATEGY_UNROLLED),
                  "%s: strategy %s", label, spf_strategy_name(info.strategy));
    if (expect_strategy >= 0)
        CHECK_MSG((int)info.strategy == expect_strategy, "%s: strategy %s, expected %s", label,
                  spf_strategy_name(info.strategy),
                  spf_strategy_name((spf_strategy)expect_strategy));
    if (o->verify && o->strategy != SPF_STRATEGY_CPU)
        CHECK_MSG(info.verify_error >= 0.0 && info.verify_error <= tol, "%s: self-check error %g",
                  label, info.verify_error);
    printf("%-28s N=%-5lld %-4s %-8s %-40s err %.2e self %.2e regs %3d gen %.3f compile %.3f "
           "link %.3f load %.3f s%s\n",
           label, (long long)n, dtype_name(o->dtype), spf_strategy_name(info.strategy),
           info.kernel_name, err, info.verify_error, info.registers, info.generate_s,
           info.compile_s, info.link_s, info.load_s, graph ? " (graph)" : "");
    spf_plan_free(p);
    return info;
}

static spf_plan_options options(spf_strategy s, spf_dtype d, int bias, int relu)
{
    spf_plan_options o;
    spf_plan_options_init(&o);
    o.strategy = s;
    o.dtype = d;
    o.bias = bias;
    o.relu = relu;
    return o;
}

static const int64_t all_n[] = {1, 3, 49, 127, 256, 3136};

/* Every N, AUTO (the default unrolled config), a forced unrolled config
 * whose m1 does not divide M, the generic kernel, on a pattern with empty
 * rows; bias + ReLU on every other N. */
static void test_random_all_n(void)
{
    spf_matrix *a = gen_matrix(SPF_GEN_MAGNITUDE, 70, 64, 0.97, 21);
    spf_matrix_stats st;
    CHECK_OK(spf_matrix_stats_compute(a, &st));
    CHECK_MSG(st.empty_rows > 0, "want empty rows: %lld", (long long)st.empty_rows);
    for (int i = 0; i < 6; i++) {
        int64_t n = all_n[i];
        int epi = i % 2;
        spf_plan_info info = {.size = sizeof info};
        spf_plan_options o = options(SPF_STRATEGY_AUTO, SPF_DTYPE_F32, epi, epi);
        info = check_plan("random70x64 auto", a, n, &o, EXPECT_GPU_KERNEL, 0);
        CHECK_MSG(info.kernel_us > 0, "AUTO chose by a measurement: kernel_us %g", info.kernel_us);
        spf_kernel_config cfg = n % 4 ? (spf_kernel_config){32, 64, 1, 4, 1}
                                      : (spf_kernel_config){16, 128, 4, 1, 2};
        o = options(SPF_STRATEGY_UNROLLED, SPF_DTYPE_F32, !epi, !epi);
        o.config = &cfg;
        info = check_plan("random70x64 forced", a, n, &o, SPF_STRATEGY_UNROLLED, 0);
        spf_kernel_config got;
        CHECK_OK(spf_kernel_config_from_name(info.config, &got));
        CHECK(memcmp(&got, &cfg, sizeof got) == 0);
        o = options(SPF_STRATEGY_GENERIC, SPF_DTYPE_F32, epi, epi);
        check_plan("random70x64 generic", a, n, &o, SPF_STRATEGY_GENERIC, 0);
    }
    spf_plan_options o = options(SPF_STRATEGY_CPU, SPF_DTYPE_F32, 1, 1);
    check_plan("random70x64 cpu", a, 49, &o, SPF_STRATEGY_CPU, 0);
    spf_matrix_free(a);
}

/* Storage types, f16x2 accumulation (its error printed), a long K that
 * the default config splits, graphs. */
static void test_dtypes_and_graphs(void)
{
    spf_matrix *a = gen_matrix(SPF_GEN_UNIFORM, 257, 512, 0.9, 22);
    const int64_t ns[] = {1, 127, 3136};
    for (int i = 0; i < 3; i++) {
        spf_plan_options o = options(SPF_STRATEGY_UNROLLED, SPF_DTYPE_F32, 1, 0);
        check_plan("uniform257x512", a, ns[i], &o, SPF_STRATEGY_UNROLLED, 0);
    }
    const spf_dtype half_types[] = {SPF_DTYPE_F16, SPF_DTYPE_BF16};
    for (int t = 0; t < 2; t++) {
        spf_plan_options o = options(SPF_STRATEGY_UNROLLED, half_types[t], 1, 1);
        check_plan("uniform257x512", a, 256, &o, SPF_STRATEGY_UNROLLED, 0);
        check_plan("uniform257x512", a, 49, &o, SPF_STRATEGY_UNROLLED, 0);
        o.strategy = SPF_STRATEGY_GENERIC;
        check_plan("uniform257x512", a, 256, &o, SPF_STRATEGY_GENERIC, 0);
    }
    spf_plan_options o = options(SPF_STRATEGY_UNROLLED, SPF_DTYPE_F16, 0, 0);
    o.math = SPF_MATH_F16X2;
    spf_plan_info info = check_plan("uniform257x512 f16x2", a, 256, &o, SPF_STRATEGY_UNROLLED, 0);
    printf("f16x2 accumulation: self-check relative error %.3e (K = 512, 51 nonzeros per row)\n",
           info.verify_error);

    o = options(SPF_STRATEGY_UNROLLED, SPF_DTYPE_F32, 1, 1);
    check_plan("uniform257x512 graph", a, 127, &o, SPF_STRATEGY_UNROLLED, 1);
    o.strategy = SPF_STRATEGY_GENERIC;
    check_plan("uniform257x512 graph", a, 127, &o, SPF_STRATEGY_GENERIC, 1);
    o = options(SPF_STRATEGY_UNROLLED, SPF_DTYPE_BF16, 0, 1);
    check_plan("uniform257x512 graph", a, 256, &o, SPF_STRATEGY_UNROLLED, 1);

    /* verify = 0: no self-check is run or reported. */
    o = options(SPF_STRATEGY_UNROLLED, SPF_DTYPE_F32, 0, 0);
    o.verify = 0;
    info = check_plan("uniform257x512 noverify", a, 64, &o, SPF_STRATEGY_UNROLLED, 0);
    CHECK(info.verify_error == -1.0);
    spf_matrix_free(a);
}

static void test_dlmc(void)
{
    const char *dir = check_data_dir();
    if (!dir)
        return;
    struct {
        const char *file, *label;
        int64_t n;
    } cases[] = {
        {"dlmc/rn50/magnitude_pruning/0.9/bottleneck_2_block_group2_3_1.smtx",
         "dlmc rn50 3x3 128x1152", 784},
        {"dlmc/transformer/magnitude_pruning/0.9/"
         "body_encoder_layer_0_self_attention_multihead_attention_k_fully_connected.smtx",
         "dlmc transformer 512x512", 256},
    };
    for (int i = 0; i < 2; i++) {
        spf_matrix *a = data_matrix(dir, cases[i].file, 7);
        if (!a)
            continue;
        spf_plan_options o = options(SPF_STRATEGY_UNROLLED, SPF_DTYPE_F32, 1, 1);
        spf_plan_info info = check_plan(cases[i].label, a, cases[i].n, &o, SPF_STRATEGY_UNROLLED, 0);
        printf("  JIT: %lld nnz, %lld bytes of PTX, generate %.3f s, compile %.3f s, link %.3f s, "
               "load %.3f s\n",
               (long long)spf_matrix_nnz(a), (long long)info.code_bytes, info.generate_s,
               info.compile_s, info.link_s, info.load_s);
        o.dtype = SPF_DTYPE_BF16;
        check_plan(cases[i].label, a, cases[i].n, &o, SPF_STRATEGY_UNROLLED, 0);
        o = options(SPF_STRATEGY_GENERIC, SPF_DTYPE_F16, 0, 0);
        check_plan(cases[i].label, a, cases[i].n, &o, SPF_STRATEGY_GENERIC, 0);
        spf_matrix_free(a);
    }
}

/* The exhaustive tuner on a small problem: every row logged, one chosen,
 * the plan runs the chosen kernel. */
static void test_exhaustive(void)
{
    spf_matrix *a = gen_matrix(SPF_GEN_UNIFORM, 40, 48, 0.9, 23);
    spf_plan_options o = options(SPF_STRATEGY_UNROLLED, SPF_DTYPE_F32, 1, 1);
    o.exhaustive = 1;
    spf_plan *p = NULL;
    CHECK_OK(spf_plan_create(a, 64, &o, &p));
    if (!p) {
        spf_matrix_free(a);
        return;
    }
    spf_plan_info info = {.size = sizeof info};
    CHECK_OK(spf_plan_get_info(p, &info));
    printf("exhaustive 40x48 N=64: %d configurations in %.2f s, best %s at %.2f us, error %.2e\n",
           info.configs_tried, info.tune_s, info.kernel_name, info.kernel_us, info.verify_error);
    CHECK(info.strategy == SPF_STRATEGY_UNROLLED);
    CHECK(info.configs_tried > 20); /* the compact space: tests/unit/test_plan_tuner.c counts it */
    CHECK(info.kernel_us > 0.0 && info.tune_s > 0.0);
    CHECK(info.verify_error >= 0.0 && info.verify_error <= 1e-5);
    CHECK(run_once(p, a, 64, &o, 0, 99) <= 1e-5);

    char path[] = "/tmp/spf-tuning-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
    CHECK_OK(spf_plan_write_tuning_log(p, path));
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    int lines = 0, chosen = 0, ok = 0;
    char line[2048];
    while (f && fgets(line, sizeof line, f)) {
        lines++;
        if (lines == 1) {
            CHECK(strncmp(line, "m,k,n,nnz,", 10) == 0);
            continue;
        }
        if (strstr(line, ",ok,1,"))
            chosen++;
        if (strstr(line, ",ok,"))
            ok++;
        if (strstr(line, ",ok,1,"))
            CHECK_MSG(strstr(line, info.kernel_name) != NULL, "chosen row %s", line);
    }
    if (f)
        fclose(f);
    remove(path);
    CHECK_EQ_I64(lines, info.configs_tried + 1);
    CHECK_EQ_I64(chosen, 1);
    printf("  tuning log: %d rows, %d ok\n", lines - 1, ok);
    CHECK(ok > 10);
    spf_plan_free(p);
    spf_matrix_free(a);
}

/* AUTO keeps to the code budget: a pattern too big to unroll takes
 * another strategy (generic, or dense where it is faster, and generic
 * without dense); an explicit UNROLLED request is not redirected. */
static void test_budget(void)
{
    spf_matrix *a = gen_matrix(SPF_GEN_UNIFORM, 2048, 2048, 0.8, 24);
    spf_plan_options o = options(SPF_STRATEGY_AUTO, SPF_DTYPE_F32, 0, 1);
    check_plan("uniform2048 over budget", a, 256, &o, EXPECT_NOT_UNROLLED, 0);
    o.dense = 0;
    check_plan("uniform2048 over budget", a, 256, &o, SPF_STRATEGY_GENERIC, 0);
    spf_matrix_free(a);
}

/* A layer whose reference would cost more than SELFCHECK_FULL_MACS: the
 * self-check covers a sample of rows (gpu/selfcheck.h). The plans still
 * match the full reference, computed here, at an odd N with bias + ReLU;
 * and a kernel that writes a wrong value into the last row (always in the
 * sample) or leaves any output unwritten (NaN) fails the check. */
typedef struct corrupt_launch {
    spf_plan *plan;
    int64_t row, n; /* row < 0: no corruption */
    float value;
} corrupt_launch;

static spf_status launch_corrupt(void *ctx, const void *b, void *c, const float *bias, void *st)
{
    corrupt_launch *l = ctx;
    spf_status status = spf_plan_execute(l->plan, b, c, bias, st);
    if (status == SPF_OK && l->row >= 0 && cudaStreamSynchronize((cudaStream_t)st) == cudaSuccess)
        CUDA_OK(cudaMemcpy((float *)c + l->row * l->n + l->n / 2, &l->value, sizeof l->value,
                           cudaMemcpyHostToDevice));
    return status;
}

static void test_sampled_selfcheck(void)
{
    spf_matrix *a = gen_matrix(SPF_GEN_UNIFORM, 3001, 2048, 0.5, 25);
    const int64_t n = 127;
    CHECK((double)spf_matrix_nnz(a) * n > SELFCHECK_FULL_MACS);
    spf_plan_options o = options(SPF_STRATEGY_GENERIC, SPF_DTYPE_F32, 1, 1);
    spf_plan_info info = check_plan("large sampled generic", a, n, &o, SPF_STRATEGY_GENERIC, 0);
    printf("large sampled generic: self-check %.3f s\n", info.verify_s);
    o = options(SPF_STRATEGY_GENERIC, SPF_DTYPE_BF16, 0, 0);
    check_plan("large sampled generic bf16", a, 3, &o, SPF_STRATEGY_GENERIC, 0);

    o = options(SPF_STRATEGY_GENERIC, SPF_DTYPE_F32, 1, 1);
    spf_plan *p = NULL;
    selfcheck check;
    CHECK_OK(spf_plan_create(a, n, &o, &p));
    problem prob = problem_make(a, n, &o);
    CHECK_OK(selfcheck_prepare(&prob, 0, &check));
    CHECK(check.rows != NULL && check.rows_checked > SELFCHECK_STRATA / 2 &&
          check.rows_checked <= SELFCHECK_STRATA + 2 && check.rows[0] == 0 &&
          check.rows[check.rows_checked - 1] == spf_matrix_rows(a) - 1);
    corrupt_launch l = {p, -1, n, 0.0f};
    double err = 0;
    CHECK_OK(selfcheck_measure(&check, launch_corrupt, &l, &err));
    CHECK_MSG(err <= dtype_tolerance(SPF_DTYPE_F32, SPF_MATH_DEFAULT), "the plan failed its check: %g", err);
    l.row = spf_matrix_rows(a) - 1;
    l.value = 1e4f;
    CHECK_OK(selfcheck_measure(&check, launch_corrupt, &l, &err));
    CHECK_MSG(err > dtype_tolerance(SPF_DTYPE_F32, SPF_MATH_DEFAULT), "a wrong last row passed: %g", err);
    l.row = check.rows[1] + 1 < check.rows[2] ? check.rows[1] + 1 : 1; /* not sampled */
    l.value = NAN;
    CHECK_OK(selfcheck_measure(&check, launch_corrupt, &l, &err));
    CHECK_MSG(isinf(err), "an unwritten (NaN) output outside the sample passed: %g", err);
    selfcheck_release(&check);
    spf_plan_free(p);
    spf_matrix_free(a);
}

/* Small cases for compute-sanitizer memcheck. */
static void test_quick(void)
{
    spf_matrix *a = gen_matrix(SPF_GEN_MAGNITUDE, 70, 64, 0.97, 21);
    spf_plan_options o = options(SPF_STRATEGY_AUTO, SPF_DTYPE_F32, 1, 1);
    check_plan("quick auto", a, 127, &o, EXPECT_GPU_KERNEL, 0);
    spf_kernel_config cfg = {16, 128, 4, 1, 2};
    o = options(SPF_STRATEGY_UNROLLED, SPF_DTYPE_F16, 1, 0);
    o.config = &cfg;
    check_plan("quick forced f16", a, 256, &o, SPF_STRATEGY_UNROLLED, 0);
    o = options(SPF_STRATEGY_GENERIC, SPF_DTYPE_BF16, 0, 1);
    check_plan("quick generic", a, 3, &o, SPF_STRATEGY_GENERIC, 1);
    spf_matrix_free(a);
}

/* `test_plan config m1 n1 v prefetch ksplit`: one forced configuration on
 * the exhaustive test's problem (to run a tuner row alone, e.g. under
 * compute-sanitizer). */
static void test_one_config(char **arg)
{
    spf_matrix *a = gen_matrix(SPF_GEN_UNIFORM, 40, 48, 0.9, 23);
    spf_kernel_config cfg = {atoi(arg[0]), atoi(arg[1]), atoi(arg[2]), atoi(arg[3]), atoi(arg[4])};
    spf_plan_options o = options(SPF_STRATEGY_UNROLLED, SPF_DTYPE_F32, 1, 1);
    o.config = &cfg;
    check_plan("one config", a, 64, &o, SPF_STRATEGY_UNROLLED, 0);
    spf_matrix_free(a);
}

/* The library's INFO and WARN lines (fallbacks, a missing ptxas); DEBUG
 * (one line per tuned configuration) only with SPF_TEST_VERBOSE set. */
static void print_log(spf_log_level level, const char *message, void *user)
{
    (void)user;
    if (level == SPF_LOG_DEBUG && !getenv("SPF_TEST_VERBOSE"))
        return;
    printf("  [library %d] %s\n", (int)level, message);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0); /* progress survives a timeout */
    /* Build every plan, even when run outside ctest: a plan cache hit would
     * skip what is tested here (tests/gpu/test_plan_cache.c tests the cache). */
    setenv("SPFORGE_CACHE_DIR", "off", 1);
    spf_set_log_callback(print_log, NULL);
    spf_device_info dev;
    if (spf_device_query(0, &dev) != SPF_OK || !dev.available)
        SKIP("no CUDA device: %s", dev.reason);
    printf("device: %s (sm_%d%d, %d SMs), driver %d, runtime %d\n", dev.name, dev.cc_major,
           dev.cc_minor, dev.sm_count, dev.driver_version, dev.runtime_version);
    CUDA_OK(cudaStreamCreate(&stream));
    if (argc > 1 && strcmp(argv[1], "quick") == 0) {
        test_quick();
    } else if (argc == 7 && strcmp(argv[1], "config") == 0) {
        test_one_config(argv + 2);
    } else {
        /* `test_plan main` or `test_plan exhaustive` runs one half. */
        const char *part = argc > 1 ? argv[1] : "all";
        if (strcmp(part, "exhaustive") != 0) {
            test_random_all_n();
            test_dtypes_and_graphs();
            test_dlmc();
            test_budget();
            test_sampled_selfcheck();
        }
        if (strcmp(part, "main") != 0)
            test_exhaustive();
    }
    cudaStreamDestroy(stream);
    return check_report();
}

#endif /* SPF_HAVE_CUDA */
