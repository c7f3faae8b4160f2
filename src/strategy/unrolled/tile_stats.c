#include "strategy/unrolled/tile_stats.h"

#include "core/alloc.h"
#include "core/budget.h"
#include "core/error.h"
#include "core/matrix.h"

#include <math.h>
#include <string.h>

/* SPF_OK if order is a permutation of 0 .. rows - 1. */
static spf_status order_check(int64_t rows, const int32_t *order)
{
    unsigned char *seen = mem_calloc((size_t)(rows ? rows : 1), 1);
    if (!seen)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "tile statistics: a check of %lld rows",
                    (long long)rows);
    spf_status status = SPF_OK;
    for (int64_t i = 0; i < rows && status == SPF_OK; i++) {
        if (order[i] < 0 || order[i] >= rows || seen[order[i]])
            status = FAIL(SPF_ERR_INVALID_ARGUMENT, "row order entry %lld = %d: not a "
                          "permutation of 0 .. %lld", (long long)i, (int)order[i],
                          (long long)rows - 1);
        else
            seen[order[i]] = 1;
    }
    mem_free(seen);
    return status;
}

/* A tile's nnc is the number of distinct columns among its rows' nonzeros,
 * as the schedule gathers them (schedule.c); counted here on the host with
 * one stamp per column (the last tile that met it), so that the statistics
 * hold for any number of tiles, not only those a kernel's grid can launch. */
spf_status tile_nnc_stats(const spf_matrix *a, const int32_t *row_order, int m1,
                          tile_stats *out)
{
    if (!out)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "no output statistics");
    memset(out, 0, sizeof *out);
    if (!a || m1 < 1)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "tile statistics need a matrix and m1 >= 1");
    spf_status status = budget_check("tile statistics", bytes_add(bytes_mul(a->cols, 4), a->rows),
                                     "one stamp per column and a row check");
    if (status != SPF_OK)
        return status;
    if (row_order && (status = order_check(a->rows, row_order)) != SPF_OK)
        return status;
    int32_t *stamp = mem_calloc((size_t)(a->cols ? a->cols : 1), sizeof *stamp);
    if (!stamp)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "tile statistics: %lld column stamps",
                    (long long)a->cols);
    int64_t tiles = (a->rows + m1 - 1) / m1;
    double nnc_sum = 0, nnz_sum = 0, nnz_sq = 0;
    for (int64_t t = 0; t < tiles; t++) {
        int64_t nnc = 0, nnz = 0, end = (t + 1) * m1 < a->rows ? (t + 1) * m1 : a->rows;
        for (int64_t i = t * m1; i < end; i++) {
            int64_t row = row_order ? row_order[i] : i;
            for (int64_t e = a->row_ptr[row]; e < a->row_ptr[row + 1]; e++) {
                int32_t c = a->col_idx[e];
                nnc += stamp[c] != (int32_t)(t + 1);
                stamp[c] = (int32_t)(t + 1);
            }
            nnz += a->row_ptr[row + 1] - a->row_ptr[row];
        }
        out->max_nnc = nnc > out->max_nnc ? nnc : out->max_nnc;
        out->max_nnz = nnz > out->max_nnz ? nnz : out->max_nnz;
        nnc_sum += (double)nnc;
        nnz_sum += (double)nnz;
    }
    mem_free(stamp);
    out->tiles = tiles;
    if (tiles == 0)
        return SPF_OK;
    double mean_nnz = nnz_sum / (double)tiles;
    for (int64_t t = 0; t < tiles; t++) {
        int64_t nnz = 0, end = (t + 1) * m1 < a->rows ? (t + 1) * m1 : a->rows;
        for (int64_t i = t * m1; i < end; i++) {
            int64_t row = row_order ? row_order[i] : i;
            nnz += a->row_ptr[row + 1] - a->row_ptr[row];
        }
        nnz_sq += ((double)nnz - mean_nnz) * ((double)nnz - mean_nnz);
    }
    out->mean_nnc = nnc_sum / (double)tiles;
    out->cov_row = mean_nnz > 0 ? sqrt(nnz_sq / (double)tiles) / mean_nnz : 0;
    return SPF_OK;
}
