/* spf_matrix: construction from CSR and COO arrays, copies, accessors and
 * validation of the CSR invariants. */
#include "core/matrix.h"

#include "core/alloc.h"
#include "core/budget.h"
#include "core/error.h"
#include "core/parallel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

spf_status matrix_alloc(int64_t rows, int64_t cols, int64_t nnz, spf_matrix **out)
{
    *out = NULL;
    if (rows < 0 || cols < 0 || nnz < 0)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "negative size (rows %lld, cols %lld, nnz %lld)",
                    (long long)rows, (long long)cols, (long long)nnz);
    if (rows > INT32_MAX || cols > INT32_MAX)
        return FAIL(SPF_ERR_OVERFLOW, "shape %lld x %lld exceeds int32 indices (max %d)",
                    (long long)rows, (long long)cols, INT32_MAX);
    if (nnz > rows * cols) /* rows, cols < 2^31, so the product fits */
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "nnz %lld exceeds rows * cols = %lld",
                    (long long)nnz, (long long)(rows * cols));
    char shape[96];
    snprintf(shape, sizeof shape, "%lld x %lld with %lld nonzeros", (long long)rows,
             (long long)cols, (long long)nnz);
    spf_status status = budget_check(shape, csr_bytes(rows, nnz), "the CSR arrays");
    if (status != SPF_OK)
        return status;
    spf_matrix *a = mem_calloc(1, sizeof *a);
    if (!a)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "matrix header");
    static uint64_t last_id;
    a->id = __atomic_add_fetch(&last_id, 1, __ATOMIC_RELAXED);
    a->rows = rows;
    a->cols = cols;
    a->nnz = nnz;
    a->row_ptr = mem_alloc_array((size_t)rows + 1, sizeof *a->row_ptr);
    a->col_idx = mem_alloc_array((size_t)nnz, sizeof *a->col_idx);
    a->values = mem_alloc_array((size_t)nnz, sizeof *a->values);
    if (!a->row_ptr || !a->col_idx || !a->values) {
        spf_matrix_free(a);
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "CSR arrays for %lld x %lld with %lld nonzeros",
                    (long long)rows, (long long)cols, (long long)nnz);
    }
    a->row_ptr[0] = 0;
    *out = a;
    return SPF_OK;
}

void spf_matrix_free(spf_matrix *a)
{
    if (!a)
        return;
    mem_free(a->row_ptr);
    mem_free(a->col_idx);
    mem_free(a->values);
    mem_free(a);
}

/* NaN and infinities are refused at every door (the readers refuse them in
 * files): one would poison every output row it touches without any error. */
static spf_status finite_check(int64_t row, int32_t col, float value, const char *what)
{
    if (isfinite(value))
        return SPF_OK;
    return FAIL(SPF_ERR_INVALID_MATRIX, "row %lld, column %d: %s %s is not finite (NaN and "
                "infinities are refused)", (long long)row, col, what,
                isnan(value) ? "NaN" : value > 0 ? "inf" : "-inf");
}

static spf_status check_ends(int64_t rows, int64_t nnz, const int64_t *row_ptr)
{
    if (row_ptr[0] != 0)
        return FAIL(SPF_ERR_INVALID_MATRIX, "row_ptr[0] is %lld, expected 0", (long long)row_ptr[0]);
    if (row_ptr[rows] != nnz)
        return FAIL(SPF_ERR_INVALID_MATRIX, "row_ptr[%lld] is %lld, expected nnz = %lld",
                    (long long)rows, (long long)row_ptr[rows], (long long)nnz);
    return SPF_OK;
}

/* csr_check's rules for rows [begin, end), row_ptr's ends already checked. */
static spf_status check_rows(int64_t begin, int64_t end, int64_t cols, int64_t nnz,
                             const int64_t *row_ptr, const int32_t *col_idx, const float *values)
{
    for (int64_t i = begin; i < end; i++) {
        int64_t lo = row_ptr[i], hi = row_ptr[i + 1];
        if (hi < lo || hi > nnz)
            return FAIL(SPF_ERR_INVALID_MATRIX, "row %lld: row_ptr %lld .. %lld is not "
                        "non-decreasing within 0 .. nnz = %lld",
                        (long long)i, (long long)lo, (long long)hi, (long long)nnz);
        for (int64_t j = lo; j < hi; j++) {
            int32_t c = col_idx[j];
            if (c < 0 || c >= cols)
                return FAIL(SPF_ERR_INVALID_MATRIX, "row %lld, entry %lld: column %d out of "
                            "range 0 .. %lld", (long long)i, (long long)j, c, (long long)cols - 1);
            if (j > lo && c <= col_idx[j - 1])
                return FAIL(SPF_ERR_INVALID_MATRIX, "row %lld, entry %lld: column %d %s column %d "
                            "before it (columns must be sorted and unique)", (long long)i,
                            (long long)j, c, c == col_idx[j - 1] ? "repeats" : "is below",
                            col_idx[j - 1]);
            spf_status st = values ? finite_check(i, c, values[j], "value") : SPF_OK;
            if (st != SPF_OK)
                return st;
        }
    }
    return SPF_OK;
}

spf_status csr_check(int64_t rows, int64_t cols, int64_t nnz, const int64_t *row_ptr,
                     const int32_t *col_idx, const float *values)
{
    spf_status st = check_ends(rows, nnz, row_ptr);
    return st != SPF_OK ? st : check_rows(0, rows, cols, nnz, row_ptr, col_idx, values);
}

/* spf_matrix_create_csr's pass over a range of rows: check_rows, then the
 * copy of the rows' entries. A 7B-model layer has 10^7 nonzeros: the pass
 * runs on every core; on a fault, csr_check on the calling thread names
 * the first row in error, whichever range failed first. */
typedef struct csr_fill {
    const int64_t *row_ptr;
    const int32_t *col_idx;
    const float *values;
    spf_matrix *a;
} csr_fill;

static spf_status fill_rows(void *ctx, int64_t begin, int64_t end, int worker)
{
    const csr_fill *f = ctx;
    spf_matrix *a = f->a;
    (void)worker;
    spf_status st = check_rows(begin, end, a->cols, a->nnz, f->row_ptr, f->col_idx, f->values);
    if (st != SPF_OK)
        return st;
    /* Every row checked has lo <= hi, so the ranges' entries are disjoint. */
    int64_t lo = f->row_ptr[begin], count = f->row_ptr[end] - lo;
    if (count > 0) {
        memcpy(a->col_idx + lo, f->col_idx + lo, (size_t)count * sizeof *a->col_idx);
        if (f->values)
            memcpy(a->values + lo, f->values + lo, (size_t)count * sizeof *a->values);
    }
    return SPF_OK;
}

enum { FILL_GRAIN_NNZ = 1 << 20 }; /* nonzeros per range: smaller matrices use one thread */

spf_status spf_matrix_create_csr(int64_t rows, int64_t cols, int64_t nnz, const int64_t *row_ptr,
                                 const int32_t *col_idx, const float *values, uint64_t seed,
                                 spf_matrix **out)
{
    error_clear();
    CHECK_ARG(out);
    *out = NULL;
    CHECK_ARG(row_ptr);
    CHECK_ARG(col_idx || nnz == 0);
    spf_matrix *a = NULL;
    spf_status status = matrix_alloc(rows, cols, nnz, &a);
    if (status != SPF_OK)
        return status;
    TRY(check_ends(rows, nnz, row_ptr));
    memcpy(a->row_ptr, row_ptr, ((size_t)rows + 1) * sizeof *row_ptr);
    int64_t grain = nnz > FILL_GRAIN_NNZ ? rows / (nnz / FILL_GRAIN_NNZ) : rows;
    csr_fill fill = {row_ptr, col_idx, values && nnz ? values : NULL, a};
    if (rows > 0 && parallel_for(rows, grain > 0 ? grain : 1, 0, fill_rows, &fill) != SPF_OK) {
        error_clear();
        TRY(csr_check(rows, cols, nnz, row_ptr, col_idx, values));
        FAIL_GOTO(SPF_ERR_INTERNAL, "CSR arrays refused, but csr_check found no fault");
    }
    if (!fill.values)
        spf_fill_uniform(a->values, nnz, seed);
    *out = a;
    return SPF_OK;
fail:
    spf_matrix_free(a);
    return status;
}

typedef struct coo_entry {
    int32_t row, col;
    float value;
    int64_t order; /* input position, so the sort is stable and sums are reproducible */
} coo_entry;

static int coo_entry_cmp(const void *pa, const void *pb)
{
    const coo_entry *a = pa, *b = pb;
    if (a->row != b->row)
        return a->row < b->row ? -1 : 1;
    if (a->col != b->col)
        return a->col < b->col ? -1 : 1;
    return (a->order > b->order) - (a->order < b->order);
}

spf_status spf_matrix_create_coo(int64_t rows, int64_t cols, int64_t nnz, const int32_t *row_idx,
                                 const int32_t *col_idx, const float *values,
                                 spf_duplicates duplicates, uint64_t seed, spf_matrix **out)
{
    error_clear();
    CHECK_ARG(out);
    *out = NULL;
    CHECK_ARG((row_idx && col_idx) || nnz == 0);
    CHECK_ARG(duplicates == SPF_DUPLICATES_REJECT || duplicates == SPF_DUPLICATES_SUM);
    spf_status status = SPF_OK;
    spf_matrix *a = NULL;
    coo_entry *e = NULL;
    float *random_values = NULL;
    if (rows < 0 || cols < 0 || nnz < 0)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "negative size");
    e = mem_alloc_array((size_t)nnz, sizeof *e);
    if (!e && nnz)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "%lld COO entries", (long long)nnz);
    if (!values && nnz) {
        random_values = mem_alloc_array((size_t)nnz, sizeof *random_values);
        if (!random_values)
            FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "%lld random values", (long long)nnz);
        spf_fill_uniform(random_values, nnz, seed);
        values = random_values;
    }
    for (int64_t i = 0; i < nnz; i++) {
        if (row_idx[i] < 0 || row_idx[i] >= rows || col_idx[i] < 0 || col_idx[i] >= cols)
            FAIL_GOTO(SPF_ERR_INVALID_MATRIX, "entry %lld: (%d, %d) outside the %lld x %lld shape",
                      (long long)i, row_idx[i], col_idx[i], (long long)rows, (long long)cols);
        TRY(finite_check(row_idx[i], col_idx[i], values[i], "value"));
        e[i] = (coo_entry){row_idx[i], col_idx[i], values[i], i};
    }
    if (nnz)
        qsort(e, (size_t)nnz, sizeof *e, coo_entry_cmp);
    int64_t unique = 0;
    for (int64_t i = 0; i < nnz; i++) {
        if (unique > 0 && e[unique - 1].row == e[i].row && e[unique - 1].col == e[i].col) {
            if (duplicates == SPF_DUPLICATES_REJECT)
                FAIL_GOTO(SPF_ERR_INVALID_MATRIX, "entries %lld and %lld both set (%d, %d) "
                          "(duplicates are rejected; sum them with SPF_DUPLICATES_SUM)",
                          (long long)e[unique - 1].order, (long long)e[i].order, e[i].row, e[i].col);
            e[unique - 1].value += e[i].value;
            TRY(finite_check(e[i].row, e[i].col, e[unique - 1].value, "the sum of duplicates"));
        } else {
            e[unique++] = e[i];
        }
    }
    TRY(matrix_alloc(rows, cols, unique, &a));
    for (int64_t i = 0; i <= rows; i++)
        a->row_ptr[i] = 0;
    for (int64_t i = 0; i < unique; i++) {
        a->row_ptr[e[i].row + 1]++;
        a->col_idx[i] = e[i].col;
        a->values[i] = e[i].value;
    }
    for (int64_t i = 0; i < rows; i++)
        a->row_ptr[i + 1] += a->row_ptr[i];
    mem_free(e);
    mem_free(random_values);
    *out = a;
    return SPF_OK;
fail:
    mem_free(e);
    mem_free(random_values);
    spf_matrix_free(a);
    return status;
}

spf_status spf_matrix_clone(const spf_matrix *a, spf_matrix **out)
{
    error_clear();
    CHECK_ARG(out);
    *out = NULL;
    CHECK_ARG(a);
    spf_matrix *c = NULL;
    spf_status status = matrix_alloc(a->rows, a->cols, a->nnz, &c);
    if (status != SPF_OK)
        return status;
    memcpy(c->row_ptr, a->row_ptr, ((size_t)a->rows + 1) * sizeof *a->row_ptr);
    if (a->nnz) {
        memcpy(c->col_idx, a->col_idx, (size_t)a->nnz * sizeof *a->col_idx);
        memcpy(c->values, a->values, (size_t)a->nnz * sizeof *a->values);
    }
    *out = c;
    return SPF_OK;
}

int64_t spf_matrix_rows(const spf_matrix *a) { return a ? a->rows : 0; }
int64_t spf_matrix_cols(const spf_matrix *a) { return a ? a->cols : 0; }
int64_t spf_matrix_nnz(const spf_matrix *a) { return a ? a->nnz : 0; }
const int64_t *spf_matrix_row_ptr(const spf_matrix *a) { return a ? a->row_ptr : NULL; }
const int32_t *spf_matrix_col_idx(const spf_matrix *a) { return a ? a->col_idx : NULL; }
const float *spf_matrix_values(const spf_matrix *a) { return a ? a->values : NULL; }

spf_status spf_matrix_to_coo(const spf_matrix *a, int32_t *row_idx, int32_t *col_idx, float *values)
{
    error_clear();
    CHECK_ARG(a);
    for (int64_t i = 0; i < a->rows; i++)
        for (int64_t j = a->row_ptr[i]; j < a->row_ptr[i + 1]; j++) {
            if (row_idx)
                row_idx[j] = (int32_t)i;
            if (col_idx)
                col_idx[j] = a->col_idx[j];
            if (values)
                values[j] = a->values[j];
        }
    return SPF_OK;
}

spf_status spf_matrix_validate(const spf_matrix *a)
{
    error_clear();
    CHECK_ARG(a);
    return csr_check(a->rows, a->cols, a->nnz, a->row_ptr, a->col_idx, a->values);
}

spf_status matrix_part(const spf_matrix *a, const uint8_t *mask, uint8_t keep, spf_matrix **out)
{
    int64_t nnz = 0;
    for (int64_t i = 0; i < a->row_ptr[a->rows]; i++)
        nnz += mask[i] == keep;
    spf_status status = matrix_alloc(a->rows, a->cols, nnz, out);
    if (status != SPF_OK)
        return status;
    spf_matrix *m = *out;
    int64_t at = 0;
    m->row_ptr[0] = 0;
    for (int64_t r = 0; r < a->rows; r++) {
        for (int64_t i = a->row_ptr[r]; i < a->row_ptr[r + 1]; i++)
            if (mask[i] == keep) {
                m->col_idx[at] = a->col_idx[i];
                m->values[at++] = a->values ? a->values[i] : 1.0f;
            }
        m->row_ptr[r + 1] = at;
    }
    return SPF_OK;
}

float *matrix_dense(const spf_matrix *a)
{
    float *dense = mem_calloc((size_t)(a->rows * a->cols) + 1, sizeof *dense);
    if (!dense)
        return NULL;
    for (int64_t r = 0; r < a->rows; r++)
        for (int64_t q = a->row_ptr[r]; q < a->row_ptr[r + 1]; q++)
            dense[r * a->cols + a->col_idx[q]] = a->values ? a->values[q] : 1.0f;
    return dense;
}
