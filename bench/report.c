/* JSON, CSV and the stdout table of spforge-bench (see report.h). */
#include "report.h"

#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/file.h"
#include "core/json.h"

#include "plan/info_json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const state_names[] = {"not_run", "ok", "failed", "error"};

/* The strategies a plan may hold are the values 1 .. strategy_end() - 1
 * (AUTO is 0), as spf_strategy_name names them: the CSV's candidate
 * columns follow the library's list, whatever it holds. */
static int strategy_end(void)
{
    int s = 1;
    while (strcmp(spf_strategy_name((spf_strategy)s), "?") != 0)
        ++s;
    return s;
}

/* The planner's measured time of strategy s for this plan, NAN if it did
 * not time it. */
static double candidate_us(const spf_plan_info *info, spf_strategy s)
{
    for (int i = 0; i < info->candidate_count && i < SPF_MAX_CANDIDATES; ++i)
        if (info->candidates[i].strategy == s && info->candidates[i].kernel_us > 0)
            return info->candidates[i].kernel_us;
    return NAN;
}

/* cuBLAS of the row's precision over the AUTO plan: >= 1 when the plan is
 * at least as fast (issue 10: never slower than dense). NAN if either is
 * missing. */
static double same_ratio(const bench_row *r)
{
    const comp_result *same = &r->r[r->prec->cublas], *ours = &r->r[COMP_SPFORGE];
    if (same->state != RESULT_OK || ours->state != RESULT_OK || ours->us <= 0)
        return NAN;
    return same->us / ours->us;
}

/* Summary groups: rows of one sparsity (files without a target share -1)
 * and one precision. */
enum { MAX_GROUPS = 64, MAX_STRATEGIES = 16 };
typedef struct group {
    double sparsity;
    const precision *prec;
    int rows;
    double log_sum[COMP_COUNT]; /* Σ log(other_us / spforge_us)        */
    int pairs[COMP_COUNT];
    double generic_log_sum[COMP_COUNT]; /* Σ log(other_us / generic_us) */
    int generic_pairs[COMP_COUNT];
    double worst_same;          /* least cublas_same / spforge, NAN if none */
    const char *worst_problem;
    int slower_than_same;       /* rows where that ratio is < 1         */
    int chosen[MAX_STRATEGIES]; /* AUTO's choices by strategy value     */
    double plan_s_max;
} group;

static int groups_build(const bench_row *rows, int count, group *g)
{
    int n = 0;
    for (int i = 0; i < count; ++i) {
        const bench_row *r = &rows[i];
        int j = 0;
        while (j < n && (g[j].sparsity != r->problem.sparsity || g[j].prec != r->prec))
            ++j;
        if (j == n) {
            if (n == MAX_GROUPS)
                continue;
            memset(&g[n], 0, sizeof g[n]);
            g[n].sparsity = r->problem.sparsity;
            g[n].prec = r->prec;
            g[n++].worst_same = NAN;
        }
        g[j].rows++;
        for (int c = 0; c < COMP_COUNT; ++c) {
            if (r->r[c].state != RESULT_OK)
                continue;
            if (c != COMP_SPFORGE && r->r[COMP_SPFORGE].state == RESULT_OK) {
                g[j].log_sum[c] += log(r->r[c].us / r->r[COMP_SPFORGE].us);
                g[j].pairs[c]++;
            }
            if (c != COMP_GENERIC && r->r[COMP_GENERIC].state == RESULT_OK) {
                g[j].generic_log_sum[c] += log(r->r[c].us / r->r[COMP_GENERIC].us);
                g[j].generic_pairs[c]++;
            }
        }
        double same = same_ratio(r);
        if (!isnan(same)) {
            if (isnan(g[j].worst_same) || same < g[j].worst_same) {
                g[j].worst_same = same;
                g[j].worst_problem = r->problem.name;
            }
            g[j].slower_than_same += same < 1.0;
        }
        if (r->have_plan) {
            if ((unsigned)r->plan.strategy < MAX_STRATEGIES)
                g[j].chosen[r->plan.strategy]++;
            if (r->plan.plan_s > g[j].plan_s_max)
                g[j].plan_s_max = r->plan.plan_s;
        }
    }
    return n;
}

static double geomean(double log_sum, int pairs)
{
    return pairs ? exp(log_sum / pairs) : NAN;
}

/* 2·nnz·N flops over the kernel time, in TFLOP/s. */
static double tflops(const bench_row *r, competitor c)
{
    if (r->r[c].state != RESULT_OK || r->r[c].us <= 0)
        return NAN;
    return 2.0 * (double)r->nnz * (double)r->problem.n / (r->r[c].us * 1e6);
}

/* The AUTO plan: what spf_plan_get_info says of it, every candidate the
 * planner considered included, and the bench's own wall time around
 * spf_plan_create. */
static void json_plan(json_writer *w, const bench_row *r)
{
    json_object_begin(w, "plan");
    plan_info_json_fields(w, &r->plan);
    json_double(w, "plan_create_wall_s", r->plan_wall_s);
    json_object_end(w);
}

static void json_row(json_writer *w, const bench_env *env, const bench_row *r)
{
    const bench_problem *p = &r->problem;
    json_object_begin(w, NULL);
    json_string(w, "problem", p->name);
    json_string(w, "use", p->use);
    json_string(w, "path", p->path[0] ? p->path : NULL);
    json_int(w, "M", p->m);
    json_int(w, "K", p->k);
    json_int(w, "N", p->n);
    json_int(w, "nnz", r->nnz);
    json_double(w, "density", r->density);
    if (p->sparsity >= 0)
        json_double(w, "sparsity", p->sparsity);
    else
        json_null(w, "sparsity");
    json_string(w, "dtype", r->prec->name);
    json_string(w, "storage", spf_dtype_name(r->prec->dtype));
    json_string(w, "math", spf_math_name(r->prec->math));
    json_bool(w, "fits_l2", r->fits_l2);
    json_object_begin(w, "results");
    for (int c = 0; c < COMP_COUNT; ++c) {
        const comp_result *x = &r->r[c];
        if (x->state == RESULT_NOT_RUN)
            continue;
        json_object_begin(w, competitor_names[c]);
        json_string(w, "state", state_names[x->state]);
        if (x->state == RESULT_OK)
            json_double(w, "us", x->us);
        else
            json_null(w, "us");
        if (x->state == RESULT_OK || x->state == RESULT_FAILED)
            json_double(w, "rel_error", x->err);
        else
            json_null(w, "rel_error");
        json_string(w, "detail", x->detail);
        json_object_end(w);
    }
    json_object_end(w);
    json_string(w, "cublas_same", competitor_names[r->prec->cublas]);
    json_double(w, "cublas_same_over_spforge", same_ratio(r));
    json_string(w, "cusparse_algs", r->cusparse_algs);
    json_double(w, "spforge_tflops", tflops(r, COMP_SPFORGE));
    json_double(w, "spforge_fp32_peak_fraction", tflops(r, COMP_SPFORGE) / env->fp32_peak_tflops);
    json_double(w, "generic_tflops", tflops(r, COMP_GENERIC));
    json_double(w, "generic_fp32_peak_fraction", tflops(r, COMP_GENERIC) / env->fp32_peak_tflops);
    if (r->have_plan)
        json_plan(w, r);
    if (r->r[COMP_GENERIC].state != RESULT_NOT_RUN)
        json_double(w, "generic_plan_create_wall_s", r->generic_plan_wall_s);
    else
        json_null(w, "generic_plan_create_wall_s");
    json_object_end(w);
}

static void json_summary(json_writer *w, const bench_row *rows, int count)
{
    group g[MAX_GROUPS];
    int n = groups_build(rows, count, g), send = strategy_end();
    json_array_begin(w, "summary");
    for (int j = 0; j < n; ++j) {
        json_object_begin(w, NULL);
        if (g[j].sparsity >= 0)
            json_double(w, "sparsity", g[j].sparsity);
        else
            json_null(w, "sparsity");
        json_string(w, "dtype", g[j].prec->name);
        json_int(w, "rows", g[j].rows);
        json_object_begin(w, "spforge_geomean_speedup_over");
        for (int c = 0; c < COMP_COUNT; ++c)
            if (c != COMP_SPFORGE && g[j].pairs[c])
                json_double(w, competitor_names[c], geomean(g[j].log_sum[c], g[j].pairs[c]));
        json_object_end(w);
        json_object_begin(w, "generic_geomean_speedup_over");
        for (int c = 0; c < COMP_COUNT; ++c)
            if (c != COMP_GENERIC && g[j].generic_pairs[c])
                json_double(w, competitor_names[c],
                            geomean(g[j].generic_log_sum[c], g[j].generic_pairs[c]));
        json_object_end(w);
        json_string(w, "cublas_same", competitor_names[g[j].prec->cublas]);
        json_double(w, "cublas_same_over_spforge_worst", g[j].worst_same);
        json_string(w, "cublas_same_over_spforge_worst_problem", g[j].worst_problem);
        json_int(w, "rows_slower_than_cublas_same", g[j].slower_than_same);
        json_object_begin(w, "auto_chose");
        for (int st = 1; st < send && st < MAX_STRATEGIES; ++st)
            if (g[j].chosen[st])
                json_int(w, spf_strategy_name((spf_strategy)st), g[j].chosen[st]);
        json_object_end(w);
        json_double(w, "plan_s_max", g[j].plan_s_max);
        json_object_end(w);
    }
    json_array_end(w);
}

static spf_status json_text(const char *set, const bench_env *env, const bench_row *rows,
                            int count, char **out)
{
    json_writer w;
    json_init(&w);
    json_object_begin(&w, NULL);
    json_string(&w, "set", set);
    json_string(&w, "device", env->device);
    json_int(&w, "cc_major", env->cc_major);
    json_int(&w, "cc_minor", env->cc_minor);
    json_int(&w, "sm_count", env->sm_count);
    json_int(&w, "l2_bytes", env->l2_bytes);
    json_double(&w, "fp32_peak_tflops", env->fp32_peak_tflops);
    json_int(&w, "driver_version", env->driver_version);
    json_int(&w, "cuda_runtime_version", env->runtime_version);
    json_int(&w, "cublas_version", env->cublas_version);
    json_int(&w, "cusparse_version", env->cusparse_version);
    json_string(&w, "commit", env->commit);
    json_string(&w, "date", env->date);
    json_string(&w, "command", env->command);
    json_bool(&w, "spforge_exhaustive", env->tune);
    json_bool(&w, "spforge_unrolled", env->unrolled);
    json_array_begin(&w, "dtypes");
    for (int i = 0; i < env->prec_count; ++i)
        json_string(&w, NULL, env->precs[i]->name);
    json_array_end(&w);
    json_string(&w, "timing",
                "kernel time per launch: warm-up, then R back-to-back launches between two CUDA "
                "events, median over >= 7 rounds (src/gpu/timing.c), same for every competitor");
    json_string(&w, "inputs",
                "not rotated: operands stay resident; fits_l2 marks rows whose fp32 CSR A + B + C "
                "fit in L2; B drawn in fp32 and rounded to each dtype, every result checked "
                "against the double oracle of the fp32 B");
    json_object_begin(&w, "tolerances");
    for (int i = 0; i < PRECISION_COUNT; ++i)
        json_double(&w, precisions[i].name,
                    dtype_tolerance(precisions[i].dtype, precisions[i].math));
    json_object_end(&w);
    json_array_begin(&w, "rows");
    for (int i = 0; i < count; ++i)
        json_row(&w, env, &rows[i]);
    json_array_end(&w);
    json_summary(&w, rows, count);
    json_object_end(&w);
    return json_finish(&w, out);
}

static void csv_us(FILE *f, const comp_result *x)
{
    switch (x->state) {
    case RESULT_OK: fprintf(f, ",%.3f,%.3g", x->us, x->err); break;
    case RESULT_FAILED: fprintf(f, ",failed,%.3g", x->err); break;
    case RESULT_ERROR: fprintf(f, ",error,"); break;
    default: fprintf(f, ",,"); break;
    }
}

/* A number, or an empty field for NAN. */
static void csv_number(FILE *f, const char *format, double v)
{
    fputc(',', f);
    if (!isnan(v))
        fprintf(f, format, v);
}

/* Quote a CSV field that may hold commas or quotes. */
static void csv_string(FILE *f, const char *s)
{
    fputs(",\"", f);
    for (; *s; ++s) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void csv_write(FILE *f, const bench_row *rows, int count)
{
    int send = strategy_end();
    fprintf(f, "problem,use,dtype,M,K,N,nnz,sparsity,fits_l2");
    for (int c = 0; c < COMP_COUNT; ++c)
        fprintf(f, ",%s_us,%s_relerr", competitor_names[c], competitor_names[c]);
    fprintf(f, ",cublas_same,cublas_same_over_spforge,spforge_strategy,spforge_kernel,"
               "spforge_config,spforge_plan_s,spforge_plan_wall_s,spforge_device_bytes,"
               "spforge_compile_s,spforge_configs_tried");
    for (int st = 1; st < send; ++st)
        fprintf(f, ",t_%s_us", spf_strategy_name((spf_strategy)st));
    fprintf(f, ",cusparse_alg\n");
    for (int i = 0; i < count; ++i) {
        const bench_row *r = &rows[i];
        fprintf(f, "\"%s\",%s,%s,%lld,%lld,%lld,%lld,", r->problem.name, r->problem.use,
                r->prec->name, (long long)r->problem.m, (long long)r->problem.k,
                (long long)r->problem.n, (long long)r->nnz);
        if (r->problem.sparsity >= 0)
            fprintf(f, "%g", r->problem.sparsity);
        fprintf(f, ",%d", r->fits_l2);
        for (int c = 0; c < COMP_COUNT; ++c)
            csv_us(f, &r->r[c]);
        fprintf(f, ",%s", competitor_names[r->prec->cublas]);
        csv_number(f, "%.4f", same_ratio(r));
        const spf_plan_info *p = &r->plan;
        if (r->have_plan) {
            fprintf(f, ",%s", spf_strategy_name(p->strategy));
            csv_string(f, p->kernel_name);
            csv_string(f, p->config);
            fprintf(f, ",%.3f,%.3f,%lld,%.3f,%d", p->plan_s, r->plan_wall_s,
                    (long long)p->device_bytes, p->compile_s, p->configs_tried);
        } else {
            fprintf(f, ",,,,,,,,");
        }
        for (int st = 1; st < send; ++st)
            csv_number(f, "%.3f", r->have_plan ? candidate_us(p, (spf_strategy)st) : NAN);
        csv_string(f, r->r[COMP_CUSPARSE].state == RESULT_OK ? r->r[COMP_CUSPARSE].detail : "");
        fputc('\n', f);
    }
}

/* Written whole to a temporary file and renamed (core/file.h). */
static spf_status write_replacing(const char *path, const char *text, const bench_row *rows,
                                  int count)
{
    file_replace w;
    spf_status st = file_replace_begin(&w, path, 0666);
    if (st != SPF_OK)
        return st;
    if (text)
        fputs(text, w.file);
    else
        csv_write(w.file, rows, count);
    return file_replace_commit(&w);
}

spf_status report_write(const char *dir, const char *set, const bench_env *env,
                        const bench_row *rows, int count)
{
    char base[1100], path[1200];
    snprintf(base, sizeof base, "%s/%s-%s-%s", dir, set, env->device_slug, env->ymd);
    char *text = NULL;
    spf_status st = json_text(set, env, rows, count, &text);
    if (st == SPF_OK) {
        snprintf(path, sizeof path, "%s.json", base);
        st = write_replacing(path, text, rows, count);
    }
    mem_free(text);
    if (st == SPF_OK) {
        snprintf(path, sizeof path, "%s.csv", base);
        st = write_replacing(path, NULL, rows, count);
    }
    return st;
}

static void cell(const comp_result *x)
{
    switch (x->state) {
    case RESULT_OK: printf(" %9.2f", x->us); break;
    case RESULT_FAILED: printf(" %9s", "FAILED"); break;
    case RESULT_ERROR: printf(" %9s", "error"); break;
    default: printf(" %9s", "-"); break;
    }
}

static void ratio(double v)
{
    if (isnan(v))
        printf(" %8s", "-");
    else
        printf(" %7.2fx", v);
}

void report_table_header(void)
{
    printf("%-48s %-4s %9s %9s %9s %9s %9s %9s %9s %9s %8s %8s  %s\n", "problem (µs per launch)",
           "prec", "nnz", "spforge", "generic", "cuBLAS32", "TF32", "fp16", "bf16", "cuSPARSE",
           "/cuSP", "/same", "AUTO chose (plan s)");
}

void report_table_row(const bench_row *r)
{
    printf("%-48.48s %-4s %9lld", r->problem.name, r->prec->name, (long long)r->nnz);
    for (int c = 0; c < COMP_COUNT; ++c)
        cell(&r->r[c]);
    const comp_result *ours = &r->r[COMP_SPFORGE], *sp = &r->r[COMP_CUSPARSE];
    ratio(ours->state == RESULT_OK && sp->state == RESULT_OK ? sp->us / ours->us : NAN);
    ratio(same_ratio(r));
    if (r->have_plan)
        printf("  %s (%.2f)", spf_strategy_name(r->plan.strategy), r->plan.plan_s);
    printf("\n");
    for (int c = 0; c < COMP_COUNT; ++c)
        if (r->r[c].state == RESULT_FAILED || r->r[c].state == RESULT_ERROR)
            printf("    %s %s: %s\n", competitor_names[c], state_names[r->r[c].state],
                   r->r[c].detail);
    fflush(stdout);
}

void report_summary(const char *set, const bench_row *rows, int count)
{
    group g[MAX_GROUPS];
    int n = groups_build(rows, count, g), send = strategy_end();
    for (int j = 0; j < n; ++j) {
        printf("%s", set);
        if (g[j].sparsity >= 0)
            printf(" s=%g", g[j].sparsity);
        printf(" %s (%d rows) geomean speedup of spforge over:", g[j].prec->name, g[j].rows);
        for (int c = 0; c < COMP_COUNT; ++c)
            if (c != COMP_SPFORGE && g[j].pairs[c])
                printf(" %s %.2fx (%d)", competitor_names[c], geomean(g[j].log_sum[c], g[j].pairs[c]),
                       g[j].pairs[c]);
        const char *lead = "\n   generic kernel over:";
        for (int c = 0; c < COMP_COUNT; ++c)
            if (c != COMP_GENERIC && g[j].generic_pairs[c]) {
                printf("%s %s %.2fx (%d)", lead, competitor_names[c],
                       geomean(g[j].generic_log_sum[c], g[j].generic_pairs[c]),
                       g[j].generic_pairs[c]);
                lead = "";
            }
        if (!isnan(g[j].worst_same))
            printf("\n   %s / spforge: worst %.3fx (%s), %d rows below 1x",
                   competitor_names[g[j].prec->cublas], g[j].worst_same, g[j].worst_problem,
                   g[j].slower_than_same);
        printf("\n   AUTO chose:");
        for (int st = 1; st < send && st < MAX_STRATEGIES; ++st)
            if (g[j].chosen[st])
                printf(" %s %d", spf_strategy_name((spf_strategy)st), g[j].chosen[st]);
        printf("; plan creation up to %.2f s\n", g[j].plan_s_max);
    }
}
