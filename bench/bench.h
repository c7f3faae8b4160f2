/* Shared types of spforge-bench: the competitors, the precisions (--dtype),
 * one result row per problem and precision, and the handles every
 * measurement uses. */
#ifndef SPF_BENCH_BENCH_H
#define SPF_BENCH_BENCH_H

#include "problems.h"
#include "spforge.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusparse.h>

typedef enum competitor {
    COMP_SPFORGE,     /* spf_plan_create, strategy AUTO, in the row's dtype and math mode: the
                         plan spforge returns (the planner's choice among the strategies)     */
    COMP_GENERIC,     /* spf_plan_create, strategy GENERIC, in the row's dtype (not on tf32
                         rows: a CUDA-core kernel, the f32 one again)                          */
    COMP_CUBLAS_F32,  /* cublasGemmEx on the dense A, CUBLAS_COMPUTE_32F, default math (no TF32) */
    COMP_CUBLAS_TF32, /* the same with CUBLAS_COMPUTE_32F_FAST_TF32                               */
    COMP_CUBLAS_F16,  /* fp16 A, B, C with fp32 accumulation                                     */
    COMP_CUBLAS_BF16, /* bf16 A, B, C with fp32 accumulation (runs with --dtype bf16 only)       */
    COMP_CUSPARSE,    /* cusparseSpMM on CSR, fp32, best of DEFAULT and CSR_ALG1..3               */
    COMP_COUNT
} competitor;

/* The competitors measured once per problem and shared by its rows. */
#define COMP_FIRST_VENDOR COMP_CUBLAS_F32

extern const char *const competitor_names[COMP_COUNT];

/* One --dtype entry: the storage type and math mode of the spforge plans,
 * and the cuBLAS competitor of the same dtype and math mode. */
typedef struct precision {
    const char *name;  /* "f32", "tf32", "f16", "bf16"                      */
    spf_dtype dtype;
    spf_math math;
    competitor cublas; /* cuBLAS of the same dtype and math                  */
} precision;

enum { PRECISION_COUNT = 4, DTYPE_COUNT = SPF_DTYPE_BF16 + 1 };
extern const precision precisions[PRECISION_COUNT];

/* The precision named name (also spf_dtype_from_name's "float32", ...), or NULL. */
const precision *precision_find(const char *name);

typedef enum result_state {
    RESULT_NOT_RUN = 0, /* not part of this row (graphs: no dense, no AUTO; tf32: no generic) */
    RESULT_OK,          /* checked against the reference, then timed                   */
    RESULT_FAILED,      /* ran, but the output failed the check: reported, never timed */
    RESULT_ERROR        /* could not run (plan creation, vendor status, ...)           */
} result_state;

typedef struct comp_result {
    result_state state;
    double us;          /* median per launch (RESULT_OK only)           */
    double err;         /* relative Frobenius error against the oracle  */
    char detail[384];   /* kernel / algorithm, or what went wrong       */
} comp_result;

/* One problem in one precision. The vendor results (COMP_FIRST_VENDOR on)
 * are the problem's, the same in each of its rows. */
typedef struct bench_row {
    bench_problem problem;
    const precision *prec;
    int64_t nnz;
    double density;
    int fits_l2;                 /* A (CSR) + B + C of fp32 fit in L2: not rotated */
    comp_result r[COMP_COUNT];
    int have_plan;               /* plan: the AUTO plan's info                     */
    spf_plan_info plan;
    double plan_wall_s;          /* spf_plan_create wall time, measured here       */
    double generic_plan_wall_s;
    char cusparse_algs[384];     /* every algorithm's time or failure             */
} bench_row;

typedef struct bench_ctx {
    cudaStream_t stream;
    cublasHandle_t cublas;
    cusparseHandle_t cusparse;
    const precision *precs[PRECISION_COUNT]; /* --dtype, in the order given      */
    int prec_count;
    int need_bf16;               /* a bf16 precision: cuBLAS bf16 runs too          */
    int tune;                    /* 0: --no-spforge-tune                           */
    spf_tune_space tune_space;   /* --tune-space compact|full                       */
    const char *tuning_dir;      /* --tuning-logs DIR: one CSV per tuned problem    */
    int64_t tune_max_nnz;        /* --tune-max-nnz: larger problems get the AUTO plan
                                    without exhaustive tuning                       */
    int unrolled;                /* 0: --no-unrolled (no AUTO plan at all)         */
    int reorder;                 /* --reorder: LO-SpMM Algorithm 1 rows (AUTO plan) */
    int search;                  /* --search: the AUTO plan by the low-cost search
                                    over tune_space (instead of exhaustive tuning)  */
    int l2_bytes;
} bench_ctx;

/* One launch of a competitor on ctx->stream (no synchronization). */
typedef spf_status (*launch_fn)(void *state, void *stream);

/* The output a launch writes: its device buffer, storage type and size. */
typedef struct output_desc {
    void *c;
    spf_dtype dtype;
    int64_t count;
} output_desc;

/* Poison the output (NaN bytes), launch once, check it against ref within
 * tol (core/dtype.h dtype_tolerance: BENCHMARKS.md's thresholds), and only
 * then time it (timing_measure: BENCHMARKS.md protocol). */
void measure(const bench_ctx *ctx, launch_fn fn, void *state, const output_desc *out,
             const double *ref, double tol, comp_result *res);

/* Record a status (and the thread's detail message) as an error result. */
void result_error(comp_result *res, spf_status st, const char *what);

/* Dense operands of one problem, shared by the competitors: B drawn in fp32
 * and staged in every dtype a competitor of the problem reads. */
typedef struct operands {
    int64_t m, k, n;
    void *b[DTYPE_COUNT]; /* device K×N row-major, by spf_dtype (NULL: not needed) */
    void *c[DTYPE_COUNT]; /* device M×N row-major, likewise                         */
    const double *ref;    /* host M×N oracle from the fp32 B                        */
} operands;

/* cuBLAS fp32 / TF32 / fp16 (and bf16 with ctx->need_bf16) on the dense A
 * (uploaded from the CSR, M×K row-major). */
void vendor_cublas(const bench_ctx *ctx, const spf_matrix *a, const operands *o, bench_row *row);
/* cuSPARSE CSR SpMM, best algorithm, preprocessing before timing. */
void vendor_cusparse(const bench_ctx *ctx, const spf_matrix *a, const operands *o, bench_row *row);

/* Everything for one problem: matrix, operands, reference, the vendors once
 * and the spforge plans in each precision: rows[0 .. ctx->prec_count). */
spf_status run_problem(const bench_ctx *ctx, bench_problem *p, bench_row *rows);

#endif
