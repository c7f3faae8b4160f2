/* JSON, CSV and the stdout table of spforge-bench (see report.h). */
#include "report.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/file.h"
#include "core/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const state_names[] = {"not_run", "ok", "failed", "error"};

/* Speedup groups: rows of one sparsity (files without a target share -1). */
enum { MAX_GROUPS = 16 };
typedef struct group {
    double sparsity;
    int rows;
    double log_sum[COMP_COUNT]; /* Σ log(other_us / spforge_us)        */
    int pairs[COMP_COUNT];
    double generic_log_sum[COMP_COUNT]; /* Σ log(other_us / generic_us) */
    int generic_pairs[COMP_COUNT];
} group;

static int groups_build(const bench_row *rows, int count, group *g)
{
    int n = 0;
    for (int i = 0; i < count; ++i) {
        const bench_row *r = &rows[i];
        int j = 0;
        while (j < n && g[j].sparsity != r->problem.sparsity)
            ++j;
        if (j == n) {
            if (n == MAX_GROUPS)
                continue;
            memset(&g[n], 0, sizeof g[n]);
            g[n++].sparsity = r->problem.sparsity;
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
    json_string(w, "cusparse_algs", r->cusparse_algs);
    json_double(w, "spforge_tflops", tflops(r, COMP_SPFORGE));
    json_double(w, "spforge_fp32_peak_fraction", tflops(r, COMP_SPFORGE) / env->fp32_peak_tflops);
    json_double(w, "generic_tflops", tflops(r, COMP_GENERIC));
    json_double(w, "generic_fp32_peak_fraction", tflops(r, COMP_GENERIC) / env->fp32_peak_tflops);
    if (r->have_plan) {
        const spf_plan_info *i = &r->plan;
        json_object_begin(w, "plan");
        json_string(w, "kernel", i->kernel_name);
        json_string(w, "config", i->config);
        json_int(w, "registers", i->registers);
        json_int(w, "code_bytes", i->code_bytes);
        json_int(w, "configs_tried", i->configs_tried);
        json_double(w, "generate_s", i->generate_s);
        json_double(w, "compile_s", i->compile_s);
        json_double(w, "link_s", i->link_s);
        json_double(w, "load_s", i->load_s);
        json_double(w, "tune_s", i->tune_s);
        json_double(w, "verify_s", i->verify_s);
        json_double(w, "tuner_kernel_us", i->kernel_us);
        json_double(w, "verify_error", i->verify_error);
        json_double(w, "plan_create_wall_s", r->plan_wall_s);
        json_object_end(w);
    }
    json_double(w, "generic_plan_create_wall_s", r->generic_plan_wall_s);
    json_object_end(w);
}

static void json_summary(json_writer *w, const bench_row *rows, int count)
{
    group g[MAX_GROUPS];
    int n = groups_build(rows, count, g);
    json_array_begin(w, "summary");
    for (int j = 0; j < n; ++j) {
        json_object_begin(w, NULL);
        if (g[j].sparsity >= 0)
            json_double(w, "sparsity", g[j].sparsity);
        else
            json_null(w, "sparsity");
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
    json_string(&w, "timing",
                "kernel time per launch: warm-up, then R back-to-back launches between two CUDA "
                "events, median over >= 7 rounds (src/gpu/timing.c), same for every competitor");
    json_string(&w, "inputs",
                "not rotated: operands stay resident; fits_l2 marks rows whose fp32 CSR A + B + C "
                "fit in L2");
    json_object_begin(&w, "tolerances");
    json_double(&w, "fp32", TOL_F32);
    json_double(&w, "tf32", TOL_TF32);
    json_double(&w, "fp16", TOL_F16);
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
    fprintf(f, "problem,use,M,K,N,nnz,sparsity,fits_l2");
    for (int c = 0; c < COMP_COUNT; ++c)
        fprintf(f, ",%s_us,%s_relerr", competitor_names[c], competitor_names[c]);
    fprintf(f, ",spforge_kernel,spforge_plan_s,spforge_compile_s,spforge_configs_tried,"
               "cusparse_alg\n");
    for (int i = 0; i < count; ++i) {
        const bench_row *r = &rows[i];
        fprintf(f, "\"%s\",%s,%lld,%lld,%lld,%lld,", r->problem.name, r->problem.use,
                (long long)r->problem.m, (long long)r->problem.k, (long long)r->problem.n,
                (long long)r->nnz);
        if (r->problem.sparsity >= 0)
            fprintf(f, "%g", r->problem.sparsity);
        fprintf(f, ",%d", r->fits_l2);
        for (int c = 0; c < COMP_COUNT; ++c)
            csv_us(f, &r->r[c]);
        if (r->have_plan)
            fprintf(f, ",%s,%.3f,%.3f,%d", r->plan.kernel_name, r->plan_wall_s, r->plan.compile_s,
                    r->plan.configs_tried);
        else
            fprintf(f, ",,,,");
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

static void ratio(const bench_row *r, competitor over)
{
    if (r->r[COMP_SPFORGE].state == RESULT_OK && r->r[over].state == RESULT_OK)
        printf(" %7.2fx", r->r[over].us / r->r[COMP_SPFORGE].us);
    else
        printf(" %8s", "-");
}

void report_table_header(void)
{
    printf("%-58s %9s %9s %9s %9s %9s %9s %9s %8s %8s\n", "problem (µs per launch)", "nnz",
           "spforge", "generic", "cuBLAS32", "TF32", "fp16", "cuSPARSE", "/cuSP", "/cuBLAS");
}

void report_table_row(const bench_row *r)
{
    printf("%-58.58s %9lld", r->problem.name, (long long)r->nnz);
    for (int c = 0; c < COMP_COUNT; ++c)
        cell(&r->r[c]);
    ratio(r, COMP_CUSPARSE);
    ratio(r, COMP_CUBLAS_F32);
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
    int n = groups_build(rows, count, g);
    for (int j = 0; j < n; ++j) {
        printf("%s", set);
        if (g[j].sparsity >= 0)
            printf(" s=%g", g[j].sparsity);
        printf(" (%d rows) geomean speedup of spforge over:", g[j].rows);
        for (int c = 0; c < COMP_COUNT; ++c)
            if (c != COMP_SPFORGE && g[j].pairs[c])
                printf(" %s %.2fx (%d)", competitor_names[c], geomean(g[j].log_sum[c], g[j].pairs[c]),
                       g[j].pairs[c]);
        printf("\n   generic kernel over:");
        for (int c = 0; c < COMP_COUNT; ++c)
            if (c != COMP_GENERIC && g[j].generic_pairs[c])
                printf(" %s %.2fx (%d)", competitor_names[c],
                       geomean(g[j].generic_log_sum[c], g[j].generic_pairs[c]), g[j].generic_pairs[c]);
        printf("\n");
    }
}
