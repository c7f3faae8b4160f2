/* spf_matrix_stats_compute: the pattern statistics the planner's features
 * start from (LO-SpMM §3.4 uses the row-length CV) and the two hashes that
 * key the plan cache. */
#include "core/alloc.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/matrix.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int int32_cmp(const void *pa, const void *pb)
{
    int32_t a = *(const int32_t *)pa, b = *(const int32_t *)pb;
    return (a > b) - (a < b);
}

/* The number of distinct columns holding an entry, in O(nnz + rows) memory
 * whatever cols is (an empty matrix may declare 2^31 columns): one bit per
 * column when that is no more than the column indices themselves take,
 * else a sorted copy of the indices. */
static spf_status used_columns(const spf_matrix *a, int64_t *used)
{
    *used = 0;
    if (a->nnz == 0)
        return SPF_OK;
    if (a->cols / 8 <= a->nnz * (int64_t)sizeof(int32_t)) {
        unsigned char *seen = mem_calloc((size_t)a->cols / 8 + 1, 1);
        if (!seen)
            return FAIL(SPF_ERR_OUT_OF_MEMORY, "column marks for %lld columns",
                        (long long)a->cols);
        for (int64_t k = 0; k < a->nnz; k++) {
            int32_t c = a->col_idx[k];
            *used += !(seen[c >> 3] >> (c & 7) & 1);
            seen[c >> 3] |= (unsigned char)(1u << (c & 7));
        }
        mem_free(seen);
        return SPF_OK;
    }
    int32_t *cols = mem_alloc_array((size_t)a->nnz, sizeof *cols);
    if (!cols)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "a sorted copy of %lld column indices",
                    (long long)a->nnz);
    memcpy(cols, a->col_idx, (size_t)a->nnz * sizeof *cols);
    qsort(cols, (size_t)a->nnz, sizeof *cols, int32_cmp);
    for (int64_t k = 0; k < a->nnz; k++)
        *used += k == 0 || cols[k] != cols[k - 1];
    mem_free(cols);
    return SPF_OK;
}

spf_status spf_matrix_stats_compute(const spf_matrix *a, spf_matrix_stats *out)
{
    error_clear();
    CHECK_ARG(a);
    CHECK_ARG(out);
    spf_matrix_stats s;
    memset(&s, 0, sizeof s);
    s.rows = a->rows;
    s.cols = a->cols;
    s.nnz = a->nnz;
    s.density = a->rows && a->cols ? (double)a->nnz / ((double)a->rows * (double)a->cols) : 0.0;

    /* Row lengths: two passes (mean, then squared deviations) rather than a
     * running sum of squares, which loses precision on long rows. */
    s.row_nnz_min = a->rows ? INT64_MAX : 0;
    for (int64_t i = 0; i < a->rows; i++) {
        int64_t len = a->row_ptr[i + 1] - a->row_ptr[i];
        if (len < s.row_nnz_min)
            s.row_nnz_min = len;
        if (len > s.row_nnz_max)
            s.row_nnz_max = len;
        if (len == 0)
            s.empty_rows++;
        for (int64_t j = a->row_ptr[i]; j < a->row_ptr[i + 1]; j++) {
            int64_t dist = i > a->col_idx[j] ? i - a->col_idx[j] : a->col_idx[j] - i;
            if (dist > s.bandwidth)
                s.bandwidth = dist;
        }
    }
    if (a->rows) {
        s.row_nnz_mean = (double)a->nnz / (double)a->rows;
        double sq = 0.0;
        for (int64_t i = 0; i < a->rows; i++) {
            double d = (double)(a->row_ptr[i + 1] - a->row_ptr[i]) - s.row_nnz_mean;
            sq += d * d;
        }
        /* Population standard deviation over the mean; 0 when the mean is 0. */
        if (s.row_nnz_mean > 0.0)
            s.row_nnz_cv = sqrt(sq / (double)a->rows) / s.row_nnz_mean;
    }

    int64_t used = 0;
    spf_status status = used_columns(a, &used);
    if (status != SPF_OK)
        return status;
    s.empty_cols = a->cols - used;

    s.pattern_hash = matrix_pattern_hash(a);
    s.values_hash = matrix_values_hash(a);
    *out = s;
    return SPF_OK;
}
