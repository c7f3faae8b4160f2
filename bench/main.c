/* spforge-bench: spforge (the AUTO plan and the generic kernel, in each
 * precision of --dtype) beside cuBLAS fp32 / TF32 / fp16 / bf16 on the dense
 * matrix and cuSPARSE CSR SpMM, every row checked against the CPU oracle
 * (BENCHMARKS.md); usage() lists the options.
 */
#define _POSIX_C_SOURCE 200809L /* gmtime_r */
#include "bench.h"
#include "report.h"

#include "gpu/cuda_check.h"
#include "gpu/timing.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef SPF_GIT_COMMIT
#define SPF_GIT_COMMIT "unknown"
#endif

enum { MAX_SETS = 8, MAX_SPARSITIES = 16 };

typedef struct args {
    const char *sets[MAX_SETS];
    int set_count;
    double sparsities[MAX_SPARSITIES];
    int sparsity_count;
    const precision *precs[PRECISION_COUNT];
    int prec_count;
    const char *filter, *out_dir, *data_dir;
    int quick, tune, unrolled, reorder, search, list;
    spf_tune_space tune_space;
    const char *tuning_dir, *tag;
    long long tune_max_nnz;
} args;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: spforge-bench [--set NAME]... [--sparsity LIST] [--dtype LIST]...\n"
            "                     [--filter TEXT] [--quick] [--no-spforge-tune]\n"
            "                     [--tune-space S] [--tuning-logs DIR] [--tune-max-nnz X]\n"
            "                     [--no-unrolled] [--reorder] [--search] [--data DIR]\n"
            "                     [--out DIR] [--tag TEXT] [--list]\n"
            "  --set NAME         sparsert20 (default), large, dlmc, graphs, rank, structured;\n"
            "                     repeatable\n"
            "                       sparsert20  SparseRT's 20 layers, sparsity 0.9, 0.95\n"
            "                       large       BERT-base layers at N 4096 and LLM layers at\n"
            "                                   N 16, 64, 256, 2048; sparsity 0.5, 0.7, 0.9,\n"
            "                                   0.95, 0.98\n"
            "                       dlmc        DLMC ResNet-50 (N = H*W x {1, 8}) and\n"
            "                                   Transformer (N 256, 2048) under DIR/dlmc;\n"
            "                                   sparsity 0.9, 0.95\n"
            "                       graphs      DIR's .mtx files at N 32, 128, 256: AUTO, the\n"
            "                                   generic kernel and cuSPARSE (no cuBLAS)\n"
            "                       rank        64 seeded random shapes (rank model training)\n"
            "                       structured  the BERT and LLM layers at 2:4, V:2:8, V:2:16\n"
            "                                   (V 64, 128) and column vectors of 4, 8, 16\n"
            "                                   rows (sparsity 0.75, 0.9); 2:4 and V128:2:8\n"
            "                                   with strays in one row of 256\n"
            "  --sparsity LIST    comma-separated, e.g. 0.9,0.95, instead of each set's own\n"
            "                     (sparsert20, large, dlmc; structured: its column vectors)\n"
            "  --dtype LIST       comma-separated precisions of the spforge plans, repeatable;\n"
            "                     each gives one row per problem, beside cuBLAS of the same\n"
            "                     (default f32):\n"
            "                       f32   fp32 exact (cuBLAS CUBLAS_COMPUTE_32F)\n"
            "                       tf32  fp32 data, TF32 math allowed (SPF_MATH_TF32;\n"
            "                             cuBLAS CUBLAS_COMPUTE_32F_FAST_TF32)\n"
            "                       f16   fp16 B and C, fp32 accumulation (cuBLAS fp16)\n"
            "                       bf16  bf16 B and C, fp32 accumulation (cuBLAS bf16)\n"
            "                     cuBLAS fp32 / TF32 / fp16 and cuSPARSE fp32 run on every\n"
            "                     dense problem whatever the list, cuBLAS bf16 with bf16\n"
            "  --filter TEXT      only problems whose name contains TEXT (e.g. \"N=16 \")\n"
            "  --quick            a small subset of each set (the device check)\n"
            "  --no-spforge-tune  the AUTO plan without exhaustive tuning (the planner's\n"
            "                     own choice: the target runs use this)\n"
            "  --tune-space S     compact (default) or full: the space the tuner walks\n"
            "  --tuning-logs DIR  write every tuned problem's per-configuration CSV there\n"
            "  --tune-max-nnz X   tune only problems with at most X nonzeros; larger ones get\n"
            "                     the AUTO plan without tuning\n"
            "  --no-unrolled      no AUTO plan at all: the generic kernel and the vendors only\n"
            "                     (when JIT time would not fit the session)\n"
            "  --reorder          the AUTO plan on reordered rows: LO-SpMM Algorithm 1 for the\n"
            "                     unrolled kernel, Acc-SpMM's data-affinity order for tc's\n"
            "                     condensed (graph) format\n"
            "  --search           the AUTO plan's unrolled kernel by the low-cost search over\n"
            "                     --tune-space (constraints, rank model, proxies; spforge\n"
            "                     tune) instead of exhaustive tuning\n"
            "  --data DIR         extracted data folder (default $SPF_DATA_DIR or data)\n"
            "  --out DIR          where <set>-<device>-<yyyymmdd>.{json,csv} go (default .)\n"
            "  --tag TEXT         result files are <set>-TEXT-<device>-<yyyymmdd>.* (runs of one\n"
            "                     set on one day that must not overwrite each other)\n"
            "  --list             print the selected problems and exit (no device needed)\n"
            "Rows: one per problem and precision; columns: each competitor's median us per\n"
            "launch and relative error, cublas_same (cuBLAS of the row's precision) and\n"
            "cublas_same_over_spforge (>= 1: the AUTO plan is at least as fast), the strategy\n"
            "AUTO chose, its plan time, and t_<strategy>_us for every candidate it timed.\n"
            "Progress (each problem, each plan's creation time and choice) goes to stderr.\n");
}

/* --dtype: a comma-separated list added to those before; a precision named
 * twice runs once. */
static int parse_precisions(const char *text, args *a)
{
    char name[32];
    if (!*text)
        return 0;
    for (const char *s = text; *s;) {
        size_t len = strcspn(s, ",");
        if (len == 0 || len >= sizeof name)
            return 0;
        memcpy(name, s, len);
        name[len] = '\0';
        const precision *q = precision_find(name);
        if (!q)
            return 0;
        int seen = 0;
        for (int i = 0; i < a->prec_count; ++i)
            seen |= a->precs[i] == q;
        if (!seen)
            a->precs[a->prec_count++] = q; /* at most PRECISION_COUNT distinct ones */
        s += len;
        if (*s == ',' && *++s == '\0')
            return 0;
    }
    return 1;
}

static int parse_sparsities(const char *text, args *a)
{
    char *end;
    a->sparsity_count = 0;
    for (const char *s = text; *s;) {
        double v = strtod(s, &end);
        if (end == s || v < 0 || v >= 1 || a->sparsity_count == MAX_SPARSITIES)
            return 0;
        a->sparsities[a->sparsity_count++] = v;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return 0;
    }
    return a->sparsity_count > 0;
}

static int parse_args(int argc, char **argv, args *a)
{
    memset(a, 0, sizeof *a);
    a->tune = 1;
    a->unrolled = 1;
    a->out_dir = ".";
    a->data_dir = getenv("SPF_DATA_DIR") ? getenv("SPF_DATA_DIR") : "data";
    for (int i = 1; i < argc; ++i) {
        const char *o = argv[i];
        int has_value = i + 1 < argc;
        if (strcmp(o, "--set") == 0 && has_value && a->set_count < MAX_SETS)
            a->sets[a->set_count++] = argv[++i];
        else if (strcmp(o, "--sparsity") == 0 && has_value) {
            if (!parse_sparsities(argv[++i], a)) {
                fprintf(stderr, "spforge-bench: bad --sparsity list \"%s\"\n", argv[i]);
                return 0;
            }
        } else if (strcmp(o, "--dtype") == 0 && has_value) {
            if (!parse_precisions(argv[++i], a)) {
                fprintf(stderr, "spforge-bench: bad --dtype list \"%s\" (f32, tf32, f16, bf16)\n",
                        argv[i]);
                return 0;
            }
        } else if (strcmp(o, "--filter") == 0 && has_value)
            a->filter = argv[++i];
        else if (strcmp(o, "--out") == 0 && has_value)
            a->out_dir = argv[++i];
        else if (strcmp(o, "--data") == 0 && has_value)
            a->data_dir = argv[++i];
        else if (strcmp(o, "--quick") == 0)
            a->quick = 1;
        else if (strcmp(o, "--no-spforge-tune") == 0)
            a->tune = 0;
        else if (strcmp(o, "--tune-space") == 0 && has_value) {
            const char *s = argv[++i];
            if (strcmp(s, "compact") == 0)
                a->tune_space = SPF_TUNE_SPACE_COMPACT;
            else if (strcmp(s, "full") == 0)
                a->tune_space = SPF_TUNE_SPACE_FULL;
            else {
                fprintf(stderr, "spforge-bench: --tune-space takes compact or full, not \"%s\"\n", s);
                return 0;
            }
        } else if (strcmp(o, "--tune-max-nnz") == 0 && has_value) {
            char *end;
            a->tune_max_nnz = strtoll(argv[++i], &end, 10);
            if (*end || a->tune_max_nnz < 1) {
                fprintf(stderr, "spforge-bench: --tune-max-nnz takes a positive count\n");
                return 0;
            }
        } else if (strcmp(o, "--tag") == 0 && has_value)
            a->tag = argv[++i];
        else if (strcmp(o, "--tuning-logs") == 0 && has_value)
            a->tuning_dir = argv[++i];
        else if (strcmp(o, "--no-unrolled") == 0)
            a->unrolled = 0;
        else if (strcmp(o, "--reorder") == 0)
            a->reorder = 1;
        else if (strcmp(o, "--search") == 0)
            a->search = 1, a->tune = 0;
        else if (strcmp(o, "--list") == 0)
            a->list = 1;
        else if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0) {
            usage(stdout);
            exit(0);
        }
        else {
            fprintf(stderr, "spforge-bench: unknown or incomplete option \"%s\"\n", o);
            usage(stderr);
            return 0;
        }
    }
    if (a->set_count == 0)
        a->sets[a->set_count++] = "sparsert20";
    if (a->prec_count == 0)
        a->precs[a->prec_count++] = precision_find("f32");
    return 1;
}

static void env_fill(const spf_device_info *d, int argc, char **argv, int tune, int unrolled,
                     bench_env *env)
{
    memset(env, 0, sizeof *env);
    snprintf(env->device, sizeof env->device, "%s", d->name);
    size_t j = 0;
    for (const char *s = d->name; *s && j + 1 < sizeof env->device_slug; ++s)
        env->device_slug[j++] = isalnum((unsigned char)*s) ? (char)tolower((unsigned char)*s) : '-';
    env->cc_major = d->cc_major;
    env->cc_minor = d->cc_minor;
    env->sm_count = d->sm_count;
    env->l2_bytes = d->l2_bytes;
    int clock_khz = 0;
    (void)cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, d->device);
    /* FP32 lanes per SM: 64 on sm_80 (A100), 128 on sm_86 and later. */
    int lanes = d->cc_major == 8 && d->cc_minor == 0 ? 64 : 128;
    env->fp32_peak_tflops = (double)d->sm_count * lanes * 2.0 * clock_khz * 1e3 / 1e12;
    env->driver_version = d->driver_version;
    env->runtime_version = d->runtime_version;
    (void)cublasGetProperty(MAJOR_VERSION, &env->cublas_version);
    int minor = 0;
    (void)cublasGetProperty(MINOR_VERSION, &minor);
    env->cublas_version = env->cublas_version * 100 + minor;
    (void)cusparseGetProperty(MAJOR_VERSION, &env->cusparse_version);
    (void)cusparseGetProperty(MINOR_VERSION, &minor);
    env->cusparse_version = env->cusparse_version * 100 + minor;
    const char *commit = getenv("SPF_GIT_COMMIT");
    snprintf(env->commit, sizeof env->commit, "%s", commit && *commit ? commit : SPF_GIT_COMMIT);
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(env->date, sizeof env->date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    strftime(env->ymd, sizeof env->ymd, "%Y%m%d", &tm);
    size_t used = 0;
    for (int i = 0; i < argc && used < sizeof env->command; ++i)
        used += (size_t)snprintf(env->command + used, sizeof env->command - used, "%s%s",
                                 i ? " " : "", argv[i]);
    env->tune = tune;
    env->unrolled = unrolled;
}

static spf_status list_problems(const args *a, const char *set, bench_problem **problems,
                                int *count)
{
    bench_selection sel = {.sparsities = a->sparsity_count ? a->sparsities : NULL,
                           .sparsity_count = a->sparsity_count,
                           .filter = a->filter,
                           .quick = a->quick,
                           .data_dir = a->data_dir};
    spf_status st = problems_list(set, &sel, problems, count);
    if (st != SPF_OK)
        fprintf(stderr, "spforge-bench: %s: %s\n", set, spf_last_error());
    return st;
}

/* --list: the selection, without a device. */
static int print_sets(const args *a)
{
    int bad = 0;
    for (int s = 0; s < a->set_count; ++s) {
        bench_problem *problems = NULL;
        int count = 0;
        if (list_problems(a, a->sets[s], &problems, &count) != SPF_OK) {
            bad = 1;
            continue;
        }
        printf("== %s: %d problems\n", a->sets[s], count);
        for (int i = 0; i < count; ++i)
            printf("%s\n", problems[i].name);
        free(problems);
    }
    return bad;
}

/* One set: every problem in every precision, the files rewritten after
 * each problem. */
static int run_set(const bench_ctx *ctx, const args *a, const bench_env *env, const char *set)
{
    bench_problem *problems = NULL;
    int count = 0, failures = 0;
    spf_status st = list_problems(a, set, &problems, &count);
    if (st != SPF_OK)
        return 1;
    bench_row *rows = calloc((size_t)count * (size_t)ctx->prec_count + 1, sizeof *rows);
    if (!rows) {
        free(problems);
        return 1;
    }
    char label[128];
    snprintf(label, sizeof label, "%s%s%s", set, a->tag ? "-" : "", a->tag ? a->tag : "");
    printf("== %s: %d problems x %d precisions\n", set, count, ctx->prec_count);
    report_table_header();
    int done = 0;
    double t0 = timing_now_s();
    for (int i = 0; i < count; ++i) {
        fprintf(stderr, "[%d/%d] %s (%.0f s into the set)\n", i + 1, count, problems[i].name,
                timing_now_s() - t0);
        st = run_problem(ctx, &problems[i], &rows[done]);
        if (st != SPF_OK) {
            fprintf(stderr, "spforge-bench: %s: %s\n", problems[i].name, spf_last_error());
            failures++;
            continue;
        }
        /* The vendors' results are the problem's: counted once. */
        for (int j = 0; j < ctx->prec_count; ++j) {
            const bench_row *row = &rows[done + j];
            report_table_row(row);
            for (int c = 0; c < (j ? COMP_FIRST_VENDOR : COMP_COUNT); ++c)
                failures += row->r[c].state == RESULT_FAILED;
        }
        done += ctx->prec_count;
        if (report_write(a->out_dir, label, env, rows, done) != SPF_OK) {
            fprintf(stderr, "spforge-bench: %s\n", spf_last_error());
            failures++;
        }
    }
    report_summary(set, rows, done);
    printf("results: %s/%s-%s-%s.{json,csv}\n", a->out_dir, label, env->device_slug, env->ymd);
    free(rows);
    free(problems);
    return failures != 0;
}

int main(int argc, char **argv)
{
    args a;
    if (!parse_args(argc, argv, &a))
        return 2;
    if (a.list)
        return print_sets(&a);
    spf_device_info dev;
    if (spf_device_query(0, &dev) != SPF_OK || !dev.available) {
        printf("spforge-bench: no CUDA device (%s); nothing to measure\n", dev.reason);
        return 77;
    }
    /* Line-buffered even into a log file: a run cut off by a time limit
     * keeps every row it printed. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    bench_ctx ctx = {.prec_count = a.prec_count,
                     .tune = a.tune, .tune_space = a.tune_space, .tuning_dir = a.tuning_dir,
                     .tune_max_nnz = a.tune_max_nnz,
                     .unrolled = a.unrolled, .reorder = a.reorder, .search = a.search,
                     .l2_bytes = dev.l2_bytes};
    for (int i = 0; i < a.prec_count; ++i) {
        ctx.precs[i] = a.precs[i];
        ctx.need_bf16 |= a.precs[i]->dtype == SPF_DTYPE_BF16;
    }
    bench_env env;
    env_fill(&dev, argc, argv, a.tune, a.unrolled, &env);
    env.prec_count = ctx.prec_count;
    memcpy(env.precs, ctx.precs, sizeof env.precs);
    printf("device: %s (sm_%d%d, %d SMs, L2 %d MiB), driver %d, CUDA runtime %d, cuBLAS %d, "
           "cuSPARSE %d, commit %s\n",
           env.device, env.cc_major, env.cc_minor, env.sm_count, env.l2_bytes >> 20,
           env.driver_version, env.runtime_version, env.cublas_version, env.cusparse_version,
           env.commit);
    if (CUDA_CHECK(cudaStreamCreate(&ctx.stream)) != SPF_OK ||
        cublasCreate(&ctx.cublas) != CUBLAS_STATUS_SUCCESS ||
        cusparseCreate(&ctx.cusparse) != CUSPARSE_STATUS_SUCCESS ||
        cublasSetStream(ctx.cublas, ctx.stream) != CUBLAS_STATUS_SUCCESS ||
        /* fp32 exact under CUBLAS_COMPUTE_32F: no TF32 unless the compute type asks */
        cublasSetMathMode(ctx.cublas, CUBLAS_DEFAULT_MATH) != CUBLAS_STATUS_SUCCESS ||
        cusparseSetStream(ctx.cusparse, ctx.stream) != CUSPARSE_STATUS_SUCCESS) {
        fprintf(stderr, "spforge-bench: cannot create the stream or vendor handles %s\n",
                spf_last_error());
        return 1;
    }
    int failed = 0;
    for (int s = 0; s < a.set_count; ++s)
        failed |= run_set(&ctx, &a, &env, a.sets[s]);
    cusparseDestroy(ctx.cusparse);
    cublasDestroy(ctx.cublas);
    cudaStreamDestroy(ctx.stream);
    return failed;
}
