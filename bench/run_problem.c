/* One problem end to end: the matrix, the dense operands and the oracle
 * (CPU reference accumulated in double), then every competitor. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "bench.h"

#include "core/error.h"
#include "core/half.h"
#include "gpu/cuda_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct plan_state {
    const spf_plan *plan;
    const void *b;
    void *c;
} plan_state;

static spf_status plan_launch(void *state, void *stream)
{
    const plan_state *s = state;
    return spf_plan_execute(s->plan, s->b, s->c, NULL, stream);
}

/* The tuner's per-configuration rows (the rank model's training data), as
 * DIR/<problem name with '/' and ' ' replaced>.csv; a failure is reported
 * on stderr and does not fail the row. */
static void write_tuning_log(const spf_plan *plan, const char *dir, const char *problem)
{
    char path[1024];
    int len = snprintf(path, sizeof path, "%s/", dir);
    for (const char *p = problem; *p && len < (int)sizeof path - 5; p++)
        path[len++] = (*p == '/' || *p == ' ' || *p == '=') ? '_' : *p;
    snprintf(path + len, sizeof path - (size_t)len, ".csv");
    if (spf_plan_write_tuning_log(plan, path) != SPF_OK)
        fprintf(stderr, "  tuning log %s: %s\n", path, spf_last_error());
}

/* spforge through its public API: create the plan (timed as wall time,
 * outside the kernel timing), then the common measurement. */
static void run_spforge(const bench_ctx *ctx, const spf_matrix *a, const operands *o,
                        const char *problem, spf_strategy strategy, int exhaustive,
                        comp_result *res, spf_plan_info *info, double *wall_s)
{
    spf_plan_options opt;
    spf_plan_options_init(&opt);
    opt.strategy = strategy;
    opt.exhaustive = exhaustive;
    opt.tune_space = ctx->tune_space;
    opt.reorder = ctx->reorder && strategy != SPF_STRATEGY_GENERIC;
    opt.search = ctx->search && strategy != SPF_STRATEGY_GENERIC;
    opt.cache = 0; /* plan wall times and tuning logs are measured, never loaded */
    spf_plan *plan = NULL;
    double t0 = now_s();
    spf_status st = spf_plan_create(a, o->n, &opt, &plan);
    *wall_s = now_s() - t0;
    /* Progress on stderr: plan creation (JIT, tuning) dominates a run. */
    fprintf(stderr, "  plan %s%s: %.2f s\n", strategy == SPF_STRATEGY_GENERIC ? "generic" : "auto",
            exhaustive ? " (exhaustive)" : opt.search ? " (search)" : "", *wall_s);
    if (st == SPF_OK)
        info->size = sizeof *info, st = spf_plan_get_info(plan, info);
    if (st != SPF_OK) {
        result_error(res, st, "spf_plan_create");
        spf_plan_free(plan);
        return;
    }
    snprintf(res->detail, sizeof res->detail, "%s", info->kernel_name);
    if ((exhaustive || opt.search) && ctx->tuning_dir)
        write_tuning_log(plan, ctx->tuning_dir, problem);
    plan_state s = {plan, o->b32, o->c32};
    output_desc out = {o->c32, SPF_DTYPE_F32, o->m * o->n};
    measure(ctx, plan_launch, &s, &out, o->ref, TOL_F32, res);
    spf_plan_free(plan);
}

/* B uniform in [-1, 1] (seeded), its fp16 copy, the oracle, device buffers. */
static spf_status operands_create(const spf_matrix *a, int64_t n, int dense, operands *o,
                                  double **ref)
{
    spf_status status = SPF_OK;
    int64_t m = spf_matrix_rows(a), k = spf_matrix_cols(a);
    memset(o, 0, sizeof *o);
    o->m = m, o->k = k, o->n = n;
    float *b = malloc((size_t)(k * n) * sizeof *b);
    uint16_t *b16 = dense ? malloc((size_t)(k * n) * sizeof *b16) : NULL;
    *ref = malloc((size_t)(m * n) * sizeof **ref);
    if (!b || (dense && !b16) || !*ref)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "operands of %lldx%lldx%lld", (long long)m,
                  (long long)k, (long long)n);
    spf_fill_uniform(b, k * n, 2);
    TRY(spf_reference_spmm_f64(a, n, b, *ref, NULL, 0, 0));
    o->ref = *ref;
    TRY(CUDA_CHECK(cudaMalloc((void **)&o->b32, (size_t)(k * n) * sizeof *b)));
    TRY(CUDA_CHECK(cudaMalloc((void **)&o->c32, (size_t)(m * n) * sizeof(float))));
    TRY(CUDA_CHECK(cudaMemcpy(o->b32, b, (size_t)(k * n) * sizeof *b, cudaMemcpyHostToDevice)));
    if (dense) {
        for (int64_t i = 0; i < k * n; ++i)
            b16[i] = f16_from_float(b[i]);
        TRY(CUDA_CHECK(cudaMalloc(&o->b16, (size_t)(k * n) * sizeof *b16)));
        TRY(CUDA_CHECK(cudaMalloc(&o->c16, (size_t)(m * n) * sizeof *b16)));
        TRY(CUDA_CHECK(cudaMemcpy(o->b16, b16, (size_t)(k * n) * sizeof *b16,
                                  cudaMemcpyHostToDevice)));
    }
fail:
    free(b);
    free(b16);
    return status;
}

static void operands_free(operands *o)
{
    (void)cudaFree(o->b32);
    (void)cudaFree(o->c32);
    (void)cudaFree(o->b16);
    (void)cudaFree(o->c16);
    memset(o, 0, sizeof *o);
}

spf_status run_problem(const bench_ctx *ctx, bench_problem *p, bench_row *row)
{
    spf_status status = SPF_OK;
    spf_matrix *a = NULL;
    operands o = {0};
    double *ref = NULL;
    memset(row, 0, sizeof *row);
    TRY(problem_matrix(p, &a));
    row->problem = *p;
    row->nnz = spf_matrix_nnz(a);
    row->density = (double)row->nnz / ((double)p->m * (double)p->k);
    int64_t bytes = 8 * row->nnz + 4 * (p->m + 1) + 4 * (p->k + p->m) * p->n;
    row->fits_l2 = bytes <= ctx->l2_bytes;
    TRY(operands_create(a, p->n, !p->graph, &o, &ref));

    if (!p->graph && ctx->unrolled) {
        int tune = ctx->tune && (ctx->tune_max_nnz <= 0 || row->nnz <= ctx->tune_max_nnz);
        run_spforge(ctx, a, &o, p->name, SPF_STRATEGY_AUTO, tune,
                    &row->r[COMP_SPFORGE],
                    &row->plan, &row->plan_wall_s);
        row->have_plan = row->r[COMP_SPFORGE].state != RESULT_ERROR;
    }
    spf_plan_info generic_info;
    run_spforge(ctx, a, &o, p->name, SPF_STRATEGY_GENERIC, 0, &row->r[COMP_GENERIC], &generic_info,
                &row->generic_plan_wall_s);
    if (!p->graph)
        vendor_cublas(ctx, a, &o, row);
    vendor_cusparse(ctx, a, &o, row);
fail:
    operands_free(&o);
    free(ref);
    spf_matrix_free(a);
    return status;
}
