#include "strategy/unrolled/tile_stats.h"

#include "strategy/unrolled/schedule.h"
#include "core/error.h"

#include <math.h>
#include <string.h>

spf_status tile_nnc_stats(const spf_matrix *a, const int32_t *row_order, int m1,
                          tile_stats *out)
{
    if (!out)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "no output statistics");
    memset(out, 0, sizeof *out);
    /* The schedule's column gathering is the one definition of a tile's
     * nnc; the smallest valid configuration for one warp of columns, since
     * n1, v and the K split do not change the row tiles. */
    spf_kernel_config cfg = {.m1 = m1, .n1 = 32, .v = 1, .prefetch = 0, .ksplit = 1};
    schedule s;
    spf_status status = schedule_create(a, row_order, cfg.n1, &cfg, &s);
    if (status != SPF_OK)
        return status;
    double nnc_sum = 0, nnz_sum = 0, nnz_sq = 0;
    for (int32_t t = 0; t < s.tile_count; t++) {
        const sched_tile *tile = &s.tiles[t];
        if (tile->col_count > out->max_nnc)
            out->max_nnc = tile->col_count;
        if (tile->nnz > out->max_nnz)
            out->max_nnz = tile->nnz;
        nnc_sum += tile->col_count;
        nnz_sum += (double)tile->nnz;
    }
    double mean_nnz = nnz_sum / s.tile_count;
    for (int32_t t = 0; t < s.tile_count; t++)
        nnz_sq += ((double)s.tiles[t].nnz - mean_nnz) * ((double)s.tiles[t].nnz - mean_nnz);
    out->tiles = s.tile_count;
    out->mean_nnc = nnc_sum / s.tile_count;
    out->cov_row = mean_nnz > 0 ? sqrt(nnz_sq / s.tile_count) / mean_nnz : 0;
    schedule_free(&s);
    return SPF_OK;
}
