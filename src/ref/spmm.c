/* The CPU reference SpMM: the oracle every GPU kernel is checked against
 * (STYLE.md 12, DESIGN.md decision 6) and the fallback without a GPU.
 * Row-major B and C make each nonzero a[i,k] an axpy of B's row k into an
 * accumulator for C's row i: contiguous, vectorizable, cache friendly. Rows
 * are independent and each sums its nonzeros in column order, so the result
 * does not depend on the thread count. */
#include "core/alloc.h"
#include "core/error.h"
#include "core/matrix.h"
#include "core/overlap.h"
#include "core/parallel.h"

#include <math.h>

/* Rows per hand-out: small enough to balance skewed row lengths. */
enum { ROWS_PER_GRAIN = 16 };

typedef struct spmm_job {
    const spf_matrix *a;
    int64_t n;
    const float *b, *bias;
    void *c;       /* float or double, M×N                          */
    void *scratch; /* one accumulator row of n per worker           */
    int relu;
} spmm_job;

/* One row-range body per (accumulator, output) type pair; the loop is
 * written once here. */
#define DEFINE_SPMM_ROWS(name, acc_t, out_t)                                               \
    static spf_status name(void *ctx, int64_t begin, int64_t end, int worker)              \
    {                                                                                      \
        const spmm_job *job = ctx;                                                         \
        const spf_matrix *a = job->a;                                                      \
        const int64_t n = job->n;                                                          \
        acc_t *restrict acc = (acc_t *)job->scratch + (int64_t)worker * n;                 \
        for (int64_t i = begin; i < end; i++) {                                            \
            for (int64_t t = 0; t < n; t++)                                                \
                acc[t] = 0;                                                                \
            for (int64_t j = a->row_ptr[i]; j < a->row_ptr[i + 1]; j++) {                  \
                const acc_t v = (acc_t)a->values[j];                                       \
                const float *restrict brow = job->b + (int64_t)a->col_idx[j] * n;          \
                for (int64_t t = 0; t < n; t++)                                            \
                    acc[t] += v * (acc_t)brow[t];                                          \
            }                                                                              \
            const acc_t bias = job->bias ? (acc_t)job->bias[i] : (acc_t)0;                 \
            out_t *restrict crow = (out_t *)job->c + i * n;                                \
            for (int64_t t = 0; t < n; t++) {                                              \
                acc_t x = acc[t] + bias;                                                   \
                crow[t] = (out_t)(job->relu && x < 0 ? 0 : x);                             \
            }                                                                              \
        }                                                                                  \
        return SPF_OK;                                                                     \
    }

DEFINE_SPMM_ROWS(spmm_rows_f32, float, float)
DEFINE_SPMM_ROWS(spmm_rows_f64_to_f32, double, float)
DEFINE_SPMM_ROWS(spmm_rows_f64, double, double)

/* Shared by both public entry points: argument checks, scratch, threads.
 * c holds elements of c_size bytes, the scratch of acc_size. */
static spf_status spmm_run(const char *func, const spf_matrix *a, int64_t n, const float *b,
                           void *c, size_t c_size, const float *bias, int relu, int threads,
                           size_t acc_size, parallel_body body)
{
    if (!a || n < 1 || threads < 0)
        return error_set(SPF_ERR_INVALID_ARGUMENT, func, "invalid argument: %s",
                         !a ? "a is NULL" : n < 1 ? "n < 1" : "threads < 0");
    /* Element counts of B, C and the scratch must fit int64 and size_t. */
    int64_t longest = a->rows > a->cols ? a->rows : a->cols;
    uint64_t limit = SIZE_MAX / sizeof(double) < INT64_MAX ? SIZE_MAX / sizeof(double) : INT64_MAX;
    if (longest > 0 && (uint64_t)n > limit / (uint64_t)longest)
        return error_set(SPF_ERR_OVERFLOW, func, "%lld x %lld operands with n = %lld overflow "
                         "the addressable size", (long long)a->rows, (long long)a->cols,
                         (long long)n);
    if ((!b && a->cols > 0) || (!c && a->rows > 0))
        return error_set(SPF_ERR_INVALID_ARGUMENT, func, "invalid argument: %s is NULL",
                         !b && a->cols > 0 ? "b" : "c");
    spf_status status = output_disjoint(func, c, (uint64_t)(a->rows * n) * c_size, b,
                                        (uint64_t)(a->cols * n) * sizeof(float), bias,
                                        (uint64_t)a->rows * sizeof(float));
    if (status != SPF_OK)
        return status;
    if (a->rows == 0)
        return SPF_OK;
    int workers = parallel_workers(a->rows, ROWS_PER_GRAIN, threads);
    void *scratch = mem_alloc_array((size_t)workers * (size_t)n, acc_size);
    if (!scratch)
        return error_set(SPF_ERR_OUT_OF_MEMORY, func, "accumulators for %d threads x n = %lld",
                         workers, (long long)n);
    spmm_job job = {a, n, b, bias, c, scratch, relu};
    status = parallel_for(a->rows, ROWS_PER_GRAIN, workers, body, &job);
    mem_free(scratch);
    return status;
}

spf_status spf_reference_spmm(const spf_matrix *a, int64_t n, const float *b, float *c,
                              const float *bias, int relu, spf_accumulate accumulate, int threads)
{
    error_clear();
    if (accumulate == SPF_ACCUMULATE_F32)
        return spmm_run(__func__, a, n, b, c, sizeof(float), bias, relu, threads, sizeof(float),
                        spmm_rows_f32);
    if (accumulate == SPF_ACCUMULATE_F64)
        return spmm_run(__func__, a, n, b, c, sizeof(float), bias, relu, threads,
                        sizeof(double), spmm_rows_f64_to_f32);
    return FAIL(SPF_ERR_INVALID_ARGUMENT, "unknown accumulation %d", (int)accumulate);
}

spf_status spf_reference_spmm_f64(const spf_matrix *a, int64_t n, const float *b, double *c,
                                  const float *bias, int relu, int threads)
{
    error_clear();
    return spmm_run(__func__, a, n, b, c, sizeof(double), bias, relu, threads, sizeof(double),
                    spmm_rows_f64);
}

double spf_relative_error(const float *c, const double *ref, int64_t count)
{
    if (count <= 0)
        return 0.0;
    if (!c || !ref)
        return INFINITY; /* no result to compare: fail every tolerance */
    double diff = 0.0, norm = 0.0;
    for (int64_t i = 0; i < count; i++) {
        if (!isfinite(c[i]))
            return INFINITY;
        double d = (double)c[i] - ref[i];
        diff += d * d;
        norm += ref[i] * ref[i];
    }
    return norm > 0.0 ? sqrt(diff / norm) : sqrt(diff);
}
