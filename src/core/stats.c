/* spf_matrix_stats_compute: the pattern statistics the planner's features
 * start from (LO-SpMM §3.4 uses the row-length CV) and the two hashes that
 * key the plan cache. */
#include "core/alloc.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/matrix.h"

#include <math.h>
#include <string.h>

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

    unsigned char *col_seen = mem_calloc((size_t)a->cols, 1);
    if (!col_seen && a->cols)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "column marks for %lld columns", (long long)a->cols);
    for (int64_t j = 0; j < a->nnz; j++)
        col_seen[a->col_idx[j]] = 1;
    for (int64_t c = 0; c < a->cols; c++)
        s.empty_cols += !col_seen[c];
    mem_free(col_seen);

    s.pattern_hash = matrix_pattern_hash(a);
    s.values_hash = matrix_values_hash(a);
    *out = s;
    return SPF_OK;
}
