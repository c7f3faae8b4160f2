/* The CPU reference SpMM: the oracle every GPU kernel is checked against
 * (STYLE.md 12, DESIGN.md decision 6) and the fallback without a GPU.
 * Row-major B and C make each nonzero a[i,k] an axpy of B's row k into an
 * accumulator for C's row i: contiguous, vectorizable, cache friendly. Rows
 * are independent and each sums its nonzeros in column order, so the result
 * does not depend on the thread count.
 * B and C may also be strided (ref/spmm.h: the N_FIRST layouts of
 * spf_layout). Where B's columns are not contiguous, C's row is formed as n
 * sparse dot products instead, each reading along one contiguous row of
 * B's N×K storage: the same sums in the same order, so the same bits. */
#include "ref/spmm.h"

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
    operand_strides bs, cs;
    void *c;       /* float or double, at strides cs                */
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
        const int64_t n = job->n, b_row = job->bs.row, b_col = job->bs.col;                \
        const int64_t c_row = job->cs.row, c_col = job->cs.col;                            \
        acc_t *restrict acc = (acc_t *)job->scratch + (int64_t)worker * n;                 \
        for (int64_t i = begin; i < end; i++) {                                            \
            const int64_t lo = a->row_ptr[i], hi = a->row_ptr[i + 1];                      \
            if (b_col == 1) {                                                              \
                for (int64_t t = 0; t < n; t++)                                            \
                    acc[t] = 0;                                                            \
                for (int64_t j = lo; j < hi; j++) {                                        \
                    const acc_t v = (acc_t)a->values[j];                                   \
                    const float *restrict brow = job->b + (int64_t)a->col_idx[j] * b_row;  \
                    for (int64_t t = 0; t < n; t++)                                        \
                        acc[t] += v * (acc_t)brow[t];                                      \
                }                                                                          \
            } else {                                                                       \
                for (int64_t t = 0; t < n; t++) {                                          \
                    const float *restrict bcol = job->b + t * b_col;                       \
                    acc_t sum = 0;                                                         \
                    for (int64_t j = lo; j < hi; j++)                                      \
                        sum += (acc_t)a->values[j] *                                       \
                               (acc_t)bcol[(int64_t)a->col_idx[j] * b_row];                \
                    acc[t] = sum;                                                          \
                }                                                                          \
            }                                                                              \
            const acc_t bias = job->bias ? (acc_t)job->bias[i] : (acc_t)0;                 \
            out_t *restrict crow = (out_t *)job->c + i * c_row;                            \
            for (int64_t t = 0; t < n; t++) {                                              \
                acc_t x = acc[t] + bias;                                                   \
                crow[t * c_col] = (out_t)(job->relu && x < 0 ? 0 : x);                     \
            }                                                                              \
        }                                                                                  \
        return SPF_OK;                                                                     \
    }

DEFINE_SPMM_ROWS(spmm_rows_f32, float, float)
DEFINE_SPMM_ROWS(spmm_rows_f64_to_f32, double, float)
DEFINE_SPMM_ROWS(spmm_rows_f64, double, double)

/* Shared by every entry point: argument checks, scratch, threads. c holds
 * elements of c_size bytes, the scratch of acc_size. */
static spf_status spmm_run(const char *func, const spf_matrix *a, int64_t n, const float *b,
                           operand_strides bs, void *c, operand_strides cs, size_t c_size,
                           const float *bias, int relu, int threads, size_t acc_size,
                           parallel_body body)
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
    spmm_job job = {a, n, b, bias, bs, cs, c, scratch, relu};
    status = parallel_for(a->rows, ROWS_PER_GRAIN, workers, body, &job);
    mem_free(scratch);
    return status;
}

static spf_status spmm_float(const char *func, const spf_matrix *a, int64_t n, const float *b,
                             operand_strides bs, float *c, operand_strides cs, const float *bias,
                             int relu, spf_accumulate accumulate, int threads)
{
    if (accumulate == SPF_ACCUMULATE_F32)
        return spmm_run(func, a, n, b, bs, c, cs, sizeof(float), bias, relu, threads,
                        sizeof(float), spmm_rows_f32);
    if (accumulate == SPF_ACCUMULATE_F64)
        return spmm_run(func, a, n, b, bs, c, cs, sizeof(float), bias, relu, threads,
                        sizeof(double), spmm_rows_f64_to_f32);
    return error_set(SPF_ERR_INVALID_ARGUMENT, func, "unknown accumulation %d", (int)accumulate);
}

spf_status reference_spmm_strided(const spf_matrix *a, int64_t n, const float *b,
                                  operand_strides bs, float *c, operand_strides cs,
                                  const float *bias, int relu, spf_accumulate accumulate,
                                  int threads)
{
    error_clear();
    return spmm_float(__func__, a, n, b, bs, c, cs, bias, relu, accumulate, threads);
}

spf_status spf_reference_spmm(const spf_matrix *a, int64_t n, const float *b, float *c,
                              const float *bias, int relu, spf_accumulate accumulate, int threads)
{
    error_clear();
    const operand_strides rows = {n, 1};
    return spmm_float(__func__, a, n, b, rows, c, rows, bias, relu, accumulate, threads);
}

spf_status spf_reference_spmm_f64(const spf_matrix *a, int64_t n, const float *b, double *c,
                                  const float *bias, int relu, int threads)
{
    error_clear();
    const operand_strides rows = {n, 1};
    return spmm_run(__func__, a, n, b, rows, c, rows, sizeof(double), bias, relu, threads,
                    sizeof(double), spmm_rows_f64);
}

double relative_error_biased(const float *c, const double *ref, int64_t count, double bias_norm)
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
    const double scale = sqrt(norm) + bias_norm;
    return scale > 0.0 ? sqrt(diff) / scale : sqrt(diff);
}

double spf_relative_error(const float *c, const double *ref, int64_t count)
{
    return relative_error_biased(c, ref, count, 0.0);
}

double ref_bias_norm(const float *bias, const int64_t *rows, int64_t rows_count, int64_t n)
{
    if (!bias)
        return 0.0;
    double sum = 0.0;
    for (int64_t i = 0; i < rows_count; i++) {
        const double b = bias[rows ? rows[i] : i];
        sum += b * b;
    }
    return sqrt(sum * (double)n);
}
