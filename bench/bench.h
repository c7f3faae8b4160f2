/* Shared types of spforge-bench: the competitors, one result row per
 * problem, and the handles every measurement uses. */
#ifndef SPF_BENCH_BENCH_H
#define SPF_BENCH_BENCH_H

#include "problems.h"
#include "spforge.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusparse.h>

typedef enum competitor {
    COMP_SPFORGE,     /* spf_plan_create, strategy AUTO: the plan spforge returns (the tuned or
                         default unrolled kernel, or the generic one when it is faster)      */
    COMP_GENERIC,     /* spf_plan_create, strategy GENERIC                                       */
    COMP_CUBLAS_F32,  /* cublasGemmEx on the dense A, CUBLAS_COMPUTE_32F                          */
    COMP_CUBLAS_TF32, /* the same with CUBLAS_COMPUTE_32F_FAST_TF32                               */
    COMP_CUBLAS_F16,  /* fp16 A, B, C with fp32 accumulation                                     */
    COMP_CUSPARSE,    /* cusparseSpMM on CSR, best of DEFAULT and CSR_ALG1..3                     */
    COMP_COUNT
} competitor;

extern const char *const competitor_names[COMP_COUNT];

typedef enum result_state {
    RESULT_NOT_RUN = 0, /* not part of this problem (graphs: no dense, no unrolled)    */
    RESULT_OK,          /* checked against the reference, then timed                   */
    RESULT_FAILED,      /* ran, but the output failed the check: reported, never timed */
    RESULT_ERROR        /* could not run (plan creation, vendor status, ...)           */
} result_state;

typedef struct comp_result {
    result_state state;
    double us;          /* median per launch (RESULT_OK only)           */
    double err;         /* relative Frobenius error against the oracle  */
    char detail[384];   /* config / algorithm, or what went wrong       */
} comp_result;

typedef struct bench_row {
    bench_problem problem;
    int64_t nnz;
    double density;
    int fits_l2;                 /* A (CSR) + B + C of fp32 fit in L2: not rotated */
    comp_result r[COMP_COUNT];
    int have_plan;               /* plan: the tuned (UNROLLED) plan's info         */
    spf_plan_info plan;
    double plan_wall_s;          /* spf_plan_create wall time                      */
    double generic_plan_wall_s;
    char cusparse_algs[384];     /* every algorithm's time or failure             */
} bench_row;

typedef struct bench_ctx {
    cudaStream_t stream;
    cublasHandle_t cublas;
    cusparseHandle_t cusparse;
    int tune;                    /* 0: --no-spforge-tune                           */
    spf_tune_space tune_space;   /* --tune-space compact|full                       */
    const char *tuning_dir;      /* --tuning-logs DIR: one CSV per tuned problem    */
    int64_t tune_max_nnz;        /* --tune-max-nnz: larger problems get the AUTO plan
                                    (default config, or generic over the code budget) */
    int unrolled;                /* 0: --no-unrolled                               */
    int reorder;                 /* --reorder: LO-SpMM Algorithm 1 rows (AUTO plan) */
    int search;                  /* --search: the AUTO plan by the low-cost search
                                    over tune_space (instead of exhaustive tuning)  */
    int l2_bytes;
} bench_ctx;

/* Relative-error thresholds of BENCHMARKS.md. */
#define TOL_F32 1e-5
#define TOL_TF32 5e-3
#define TOL_F16 1e-2

/* One launch of a competitor on ctx->stream (no synchronization). */
typedef spf_status (*launch_fn)(void *state, void *stream);

/* The output a launch writes: its device buffer, storage type and size. */
typedef struct output_desc {
    void *c;
    spf_dtype dtype;
    int64_t count;
} output_desc;

/* Poison the output (NaN bytes), launch once, check it against ref within
 * tol, and only then time it (timing_measure: BENCHMARKS.md protocol). */
void measure(const bench_ctx *ctx, launch_fn fn, void *state, const output_desc *out,
             const double *ref, double tol, comp_result *res);

/* Record a status (and the thread's detail message) as an error result. */
void result_error(comp_result *res, spf_status st, const char *what);

/* Dense operands of one problem, shared by the competitors. */
typedef struct operands {
    int64_t m, k, n;
    float *b32;          /* device K×N fp32                       */
    void *b16;           /* device K×N fp16 (NULL for graphs)     */
    float *c32;          /* device M×N fp32                       */
    void *c16;           /* device M×N fp16 (NULL for graphs)     */
    const double *ref;   /* host M×N oracle                       */
} operands;

/* cuBLAS fp32 / TF32 / fp16 on the dense A (host fp32, M×K). */
void vendor_cublas(const bench_ctx *ctx, const spf_matrix *a, const operands *o, bench_row *row);
/* cuSPARSE CSR SpMM, best algorithm, preprocessing before timing. */
void vendor_cusparse(const bench_ctx *ctx, const spf_matrix *a, const operands *o, bench_row *row);

/* Everything for one problem: matrix, operands, reference, every competitor. */
spf_status run_problem(const bench_ctx *ctx, bench_problem *p, bench_row *row);

#endif
