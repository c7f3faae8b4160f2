/* One SpMM problem for the kernel-level GPU tests (test_tc.c,
 * test_tcfrag.c): fresh random B and bias in the dtype and B's layout on
 * the device, the double reference of A rounded to the dtype (rows
 * permuted by a row map when there is one), and the check of one launch's
 * C: poisoned with NaN before, the element past its end still poisoned
 * after, the relative error against the reference. Header-only: each test
 * is one program. */
#ifndef SPF_TESTS_GPU_SPMM_CASE_H
#define SPF_TESTS_GPU_SPMM_CASE_H

#include "test_util.h"

#include "core/dtype.h"
#include "core/matrix.h"

#include <cuda_runtime_api.h>
#include <stdlib.h>

typedef struct spmm_case {
    int64_t m, k, n;
    spf_dtype dtype;
    spf_layout b_layout;
    size_t es, c_bytes;
    void *db, *dc;           /* device B, C (+ one poisoned element past C) */
    float *dbias;            /* device bias, C's rows                       */
    double *ref;             /* m × n, C's rows                             */
    unsigned char *raw;      /* C as read back                              */
    float *c;                /* C unpacked to m × n floats                  */
    void *scratch;
} spmm_case;

/* The case of A (m × k, rows of the format), n columns: C's row of the
 * format's row i is row_map[i] (NULL: i), with that row's bias. */
static void spmm_case_make(spmm_case *t, const spf_matrix *a, spf_dtype dtype, spf_layout bl,
                           int64_t n, int bias, int relu, const int32_t *row_map, uint64_t seed)
{
    memset(t, 0, sizeof *t);
    int64_t m = spf_matrix_rows(a), k = spf_matrix_cols(a);
    t->m = m, t->k = k, t->n = n, t->dtype = dtype, t->b_layout = bl;
    t->es = dtype_size(dtype);
    t->c_bytes = (size_t)(m * n) * t->es;
    float *b = malloc((size_t)(k * n + 1) * sizeof *b);
    float *bias_v = malloc((size_t)(m + 1) * sizeof *bias_v);
    float *bias_rows = malloc((size_t)(m + 1) * sizeof *bias_rows);
    double *ref = malloc((size_t)(m * n + 1) * sizeof *ref);
    unsigned char *staged = malloc((size_t)(k * n) * t->es + t->es);
    t->ref = malloc((size_t)(m * n + 1) * sizeof *t->ref);
    t->scratch = malloc((size_t)(k * n + m * n + 1) * sizeof(float));
    t->raw = malloc(t->c_bytes + t->es);
    t->c = malloc((size_t)(m * n + 1) * sizeof *t->c);
    spf_fill_uniform(b, k * n, seed);
    spf_fill_uniform(bias_v, m, seed + 1);
    dtype_round(dtype, b, k * n);
    operand_pack(dtype, bl, b, k, n, staged, t->scratch);
    for (int64_t i = 0; i < m; i++)
        bias_rows[i] = bias_v[row_map ? row_map[i] : i];
    spf_matrix *ar = NULL; /* A as a format holds it: rounded to the dtype */
    CHECK_OK(spf_matrix_clone(a, &ar));
    dtype_round(dtype, ar->values, ar->nnz);
    CHECK_OK(spf_reference_spmm_f64(ar, n, b, ref, bias ? bias_rows : NULL, relu, 0));
    spf_matrix_free(ar);
    for (int64_t i = 0; i < m; i++)
        memcpy(t->ref + (row_map ? row_map[i] : i) * n, ref + i * n, (size_t)n * sizeof *ref);
    CUDA_OK(cudaMalloc(&t->db, (size_t)(k * n) * t->es + t->es));
    CUDA_OK(cudaMalloc(&t->dc, t->c_bytes + t->es));
    CUDA_OK(cudaMalloc((void **)&t->dbias, (size_t)(m + 1) * sizeof *t->dbias));
    CUDA_OK(cudaMemcpy(t->db, staged, (size_t)(k * n) * t->es, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(t->dbias, bias_v, (size_t)m * sizeof *t->dbias, cudaMemcpyHostToDevice));
    free(b);
    free(bias_v);
    free(bias_rows);
    free(ref);
    free(staged);
}

/* Element strides of B (its layout) and of C in layout cl. */
static void spmm_case_strides(const spmm_case *t, spf_layout cl, int64_t *b_row, int64_t *b_col,
                              int64_t *c_row, int64_t *c_col)
{
    *b_row = t->b_layout == SPF_LAYOUT_N_LAST ? t->n : 1;
    *b_col = t->b_layout == SPF_LAYOUT_N_LAST ? 1 : t->k;
    *c_row = cl == SPF_LAYOUT_N_LAST ? t->n : 1;
    *c_col = cl == SPF_LAYOUT_N_LAST ? 1 : t->m;
}

static void spmm_case_poison(const spmm_case *t)
{
    CUDA_OK(cudaMemset(t->dc, 0xff, t->c_bytes + t->es));
}

/* After a launch writing C in layout cl: synchronize, read C back; 0 in
 * *past_ok when the element past C was written; the relative error. */
static double spmm_case_error(spmm_case *t, spf_layout cl, int *past_ok)
{
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemcpy(t->raw, t->dc, t->c_bytes + t->es, cudaMemcpyDeviceToHost));
    *past_ok = 1;
    for (size_t i = 0; i < t->es; i++)
        *past_ok &= t->raw[t->c_bytes + i] == 0xff;
    operand_unpack(t->dtype, cl, t->raw, t->m, t->n, t->c, t->scratch);
    return spf_relative_error(t->c, t->ref, t->m * t->n);
}

static void spmm_case_free(spmm_case *t)
{
    cudaFree(t->db);
    cudaFree(t->dc);
    cudaFree(t->dbias);
    free(t->ref);
    free(t->raw);
    free(t->c);
    free(t->scratch);
    memset(t, 0, sizeof *t);
}

#endif
