/* One problem end to end: the matrix, the dense operands in every dtype a
 * competitor reads and the oracle (CPU reference accumulated in double),
 * the vendors once, then the spforge plans in each precision of --dtype. */
#include "bench.h"

#include "core/dtype.h"
#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/timing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
 * DIR/<problem name with '/', ' ' and '=' replaced>[_<precision>].csv (f32
 * keeps the names scripts/train_rank_model.py reads); a failure is
 * reported on stderr and does not fail the row. */
static void write_tuning_log(const spf_plan *plan, const char *dir, const char *problem,
                             const precision *prec)
{
    char path[1024];
    int len = snprintf(path, sizeof path, "%s/", dir);
    for (const char *p = problem; *p && len < (int)sizeof path - 16; p++)
        path[len++] = (*p == '/' || *p == ' ' || *p == '=') ? '_' : *p;
    path[len] = '\0';
    if (prec->dtype != SPF_DTYPE_F32 || prec->math != SPF_MATH_DEFAULT)
        len += snprintf(path + len, sizeof path - (size_t)len, "_%s", prec->name);
    snprintf(path + len, sizeof path - (size_t)len, ".csv");
    if (spf_plan_write_tuning_log(plan, path) != SPF_OK)
        fprintf(stderr, "  tuning log %s: %s\n", path, spf_last_error());
}

/* spforge through its public API in one precision: create the plan (timed
 * as wall time, outside the kernel timing), read its info, then the common
 * measurement on B and C of the plan's dtype. Returns 1 when *info holds
 * the plan's info (the plan was created, whatever its check and timing
 * gave). */
static int run_spforge(const bench_ctx *ctx, const spf_matrix *a, const operands *o,
                        const char *problem, spf_strategy strategy, const precision *prec,
                        int exhaustive, comp_result *res, spf_plan_info *info, double *wall_s)
{
    spf_plan_options opt;
    spf_plan_options_init(&opt);
    opt.strategy = strategy;
    opt.dtype = prec->dtype;
    opt.math = prec->math;
    opt.exhaustive = exhaustive;
    opt.tune_space = ctx->tune_space;
    opt.reorder = ctx->reorder && strategy != SPF_STRATEGY_GENERIC;
    opt.search = ctx->search && strategy != SPF_STRATEGY_GENERIC;
    opt.cache = 0; /* plan wall times and tuning logs are measured, never loaded */
    spf_plan *plan = NULL;
    double t0 = timing_now_s();
    spf_status st = spf_plan_create(a, o->n, &opt, &plan);
    *wall_s = timing_now_s() - t0;
    memset(info, 0, sizeof *info);
    info->size = sizeof *info;
    if (st == SPF_OK)
        st = spf_plan_get_info(plan, info);
    /* Progress on stderr: plan creation (JIT, tuning, the planner's timing
     * of its candidates) dominates a run. */
    fprintf(stderr, "  plan %s %s%s: %.2f s", spf_strategy_name(strategy), prec->name,
            exhaustive ? " (exhaustive)" : opt.search ? " (search)" : "", *wall_s);
    if (st == SPF_OK)
        fprintf(stderr, " -> %s %s\n", spf_strategy_name(info->strategy), info->kernel_name);
    else
        fprintf(stderr, " -> %s\n", spf_status_string(st));
    if (st != SPF_OK) {
        result_error(res, st, "spf_plan_create");
        spf_plan_free(plan);
        return 0;
    }
    snprintf(res->detail, sizeof res->detail, "%s", info->kernel_name);
    if ((exhaustive || opt.search) && ctx->tuning_dir)
        write_tuning_log(plan, ctx->tuning_dir, problem, prec);
    plan_state s = {plan, o->b[prec->dtype], o->c[prec->dtype]};
    output_desc out = {o->c[prec->dtype], prec->dtype, o->m * o->n};
    measure(ctx, plan_launch, &s, &out, o->ref, dtype_tolerance(prec->dtype, prec->math), res);
    spf_plan_free(plan);
    return 1;
}

/* Whether some competitor of p reads B and C in dtype d: fp32 always
 * (cuSPARSE, the oracle's input), fp16 for cuBLAS fp16 on dense problems,
 * and each precision's own dtype. */
static int dtype_needed(const bench_ctx *ctx, const bench_problem *p, spf_dtype d)
{
    if (d == SPF_DTYPE_F32 || (d == SPF_DTYPE_F16 && !p->graph))
        return 1;
    for (int i = 0; i < ctx->prec_count; ++i)
        if (ctx->precs[i]->dtype == d)
            return 1;
    return 0;
}

/* B uniform in [-1, 1] (seeded), the oracle from it, and B staged (rounded
 * to nearest even) and C allocated in every dtype needed. */
static spf_status operands_create(const bench_ctx *ctx, const bench_problem *p,
                                  const spf_matrix *a, operands *o, double **ref)
{
    spf_status status = SPF_OK;
    int64_t m = spf_matrix_rows(a), k = spf_matrix_cols(a), n = p->n;
    memset(o, 0, sizeof *o);
    o->m = m, o->k = k, o->n = n;
    float *b = malloc((size_t)(k * n) * sizeof *b);
    uint16_t *narrow = malloc((size_t)(k * n) * sizeof *narrow);
    *ref = malloc((size_t)(m * n) * sizeof **ref);
    if (!b || !narrow || !*ref)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "operands of %lldx%lldx%lld", (long long)m,
                  (long long)k, (long long)n);
    spf_fill_uniform(b, k * n, 2);
    TRY(spf_reference_spmm_f64(a, n, b, *ref, NULL, 0, 0));
    o->ref = *ref;
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        if (!dtype_needed(ctx, p, (spf_dtype)d))
            continue;
        const void *src = b;
        if (d != SPF_DTYPE_F32) {
            dtype_from_float((spf_dtype)d, b, narrow, k * n);
            src = narrow;
        }
        size_t elem = dtype_size((spf_dtype)d);
        TRY(CUDA_CHECK(cudaMalloc(&o->b[d], (size_t)(k * n) * elem)));
        TRY(CUDA_CHECK(cudaMalloc(&o->c[d], (size_t)(m * n) * elem)));
        TRY(CUDA_CHECK(cudaMemcpy(o->b[d], src, (size_t)(k * n) * elem, cudaMemcpyHostToDevice)));
    }
fail:
    free(b);
    free(narrow);
    return status;
}

static void operands_free(operands *o)
{
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        (void)cudaFree(o->b[d]);
        (void)cudaFree(o->c[d]);
    }
    memset(o, 0, sizeof *o);
}

spf_status run_problem(const bench_ctx *ctx, bench_problem *p, bench_row *rows)
{
    spf_status status = SPF_OK;
    spf_matrix *a = NULL;
    operands o = {0};
    double *ref = NULL;
    memset(rows, 0, (size_t)ctx->prec_count * sizeof *rows);
    TRY(problem_matrix(p, &a));
    bench_row *first = &rows[0];
    first->problem = *p;
    first->nnz = spf_matrix_nnz(a);
    first->density = (double)first->nnz / ((double)p->m * (double)p->k);
    int64_t bytes = 8 * first->nnz + 4 * (p->m + 1) + 4 * (p->k + p->m) * p->n;
    first->fits_l2 = bytes <= ctx->l2_bytes;
    TRY(operands_create(ctx, p, a, &o, &ref));

    /* The vendors once, before any plan: every row of the problem carries
     * their results. */
    if (!p->graph)
        vendor_cublas(ctx, a, &o, first);
    vendor_cusparse(ctx, a, &o, first);
    for (int i = 1; i < ctx->prec_count; ++i)
        rows[i] = *first;

    int tune = ctx->tune && (ctx->tune_max_nnz <= 0 || first->nnz <= ctx->tune_max_nnz);
    for (int i = 0; i < ctx->prec_count; ++i) {
        bench_row *row = &rows[i];
        row->prec = ctx->precs[i];
        if (ctx->unrolled)
            row->have_plan = run_spforge(ctx, a, &o, p->name, SPF_STRATEGY_AUTO, row->prec, tune,
                                         &row->r[COMP_SPFORGE], &row->plan, &row->plan_wall_s);
        /* The generic kernel runs on CUDA cores: under TF32 it is the f32
         * kernel again, so tf32 rows leave it out. */
        if (row->prec->math != SPF_MATH_TF32) {
            spf_plan_info generic_info;
            (void)run_spforge(ctx, a, &o, p->name, SPF_STRATEGY_GENERIC, row->prec, 0,
                              &row->r[COMP_GENERIC], &generic_info, &row->generic_plan_wall_s);
        }
    }
fail:
    operands_free(&o);
    free(ref);
    spf_matrix_free(a);
    return status;
}
