#include "plan/rank_features.h"

#include "core/error.h"
#include "core/dtype.h"
#include "strategy/unrolled/constraints.h"
#include "strategy/unrolled/schedule.h"
#include "strategy/unrolled/tile_stats.h"

#include <assert.h>
#include <math.h>

const char *const rank_feature_names[RANK_FEATURE_COUNT] = {
    [RANK_F_A_TILES] = "f_a_tiles",
    [RANK_F_B_TILES] = "f_b_tiles",
    [RANK_F_BLOCKS] = "f_blocks",
    [RANK_F_SPARSITY] = "f_sparsity",
    [RANK_F_NNC_SUM] = "f_nnc_sum",
    [RANK_F_NNZ_MAX] = "f_nnz_max",
    [RANK_F_M1] = "f_m1",
    [RANK_F_N1] = "f_n1",
    [RANK_F_K] = "f_k",
    [RANK_F_M] = "f_m",
    [RANK_F_N] = "f_n",
    [RANK_F_NNZ] = "f_nnz",
    [RANK_F_V] = "f_v",
    [RANK_F_PREFETCH] = "f_prefetch",
    [RANK_F_KSPLIT] = "f_ksplit",
    [RANK_F_THREADS] = "f_threads",
    [RANK_F_REGISTERS] = "f_registers",
    [RANK_F_DTYPE_BYTES] = "f_dtype_bytes",
    [RANK_F_NNC_MAX] = "f_nnc_max",
    [RANK_F_ROW_NNZ_MEAN] = "f_row_nnz_mean",
    [RANK_F_COV_ROW] = "f_cov_row",
    [RANK_F_WASTE_COL] = "f_waste_col",
    [RANK_F_FMA_PER_THREAD] = "f_fma_per_thread",
    [RANK_F_LOADS_PER_THREAD] = "f_loads_per_thread",
    [RANK_F_WARPS] = "f_warps",
};

spf_status rank_tiles_compute(const tile_problem *p, int32_t m1, rank_tiles *out)
{
    if (!out)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "no output tile summary");
    *out = (rank_tiles){0};
    if (!p || !p->a || m1 < 1)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "no problem, or m1 = %d below 1", (int)m1);
    /* tile_nnc_stats cuts the tiles as the kernel's schedule does, so the
     * features describe the blocks the kernel really runs; a config of more
     * tiles than a schedule holds has no kernel, so no features. */
    spf_status status = schedule_tiles_check(spf_matrix_rows(p->a), m1);
    if (status != SPF_OK)
        return status;
    tile_stats s;
    status = tile_nnc_stats(p->a, tile_problem_row_order(p, m1), m1, &s);
    if (status != SPF_OK)
        return status;
    out->m1 = m1;
    out->tiles = (int32_t)s.tiles; /* at most the rows, < 2^31 */
    /* mean_nnc is an exact integer sum over tiles (both far below 2^53), so
     * rounding recovers the sum. */
    out->nnc_sum = llround(s.mean_nnc * s.tiles);
    out->nnc_max = s.max_nnc;
    out->nnz_max = s.max_nnz;
    out->cov_row = s.cov_row;
    return SPF_OK;
}

void rank_features(const rank_tiles *t, const tile_problem *p, const spf_kernel_config *cfg,
                   spf_dtype dtype, double out[RANK_FEATURE_COUNT])
{
    assert(t->m1 == cfg->m1);
    const spf_matrix *a = p->a;
    int64_t m = spf_matrix_rows(a), k = spf_matrix_cols(a), nnz = spf_matrix_nnz(a);
    int64_t b_tiles = (p->n + cfg->n1 - 1) / cfg->n1;
    int64_t threads = tiling_threads(cfg);
    double blocks = (double)t->tiles * (double)b_tiles;
    double cells = (double)m * (double)k;
    out[RANK_F_A_TILES] = t->tiles;
    out[RANK_F_B_TILES] = (double)b_tiles;
    out[RANK_F_BLOCKS] = blocks;
    out[RANK_F_SPARSITY] = cells > 0 ? 1.0 - (double)nnz / cells : 1.0;
    out[RANK_F_NNC_SUM] = (double)t->nnc_sum;
    out[RANK_F_NNZ_MAX] = (double)t->nnz_max;
    out[RANK_F_M1] = cfg->m1;
    out[RANK_F_N1] = cfg->n1;
    out[RANK_F_K] = (double)k;
    out[RANK_F_M] = (double)m;
    out[RANK_F_N] = (double)p->n;
    out[RANK_F_NNZ] = (double)nnz;
    out[RANK_F_V] = cfg->v;
    out[RANK_F_PREFETCH] = cfg->prefetch;
    out[RANK_F_KSPLIT] = cfg->ksplit;
    out[RANK_F_THREADS] = (double)threads;
    out[RANK_F_REGISTERS] = register_forecast(cfg, dtype);
    out[RANK_F_DTYPE_BYTES] = (double)dtype_size(dtype);
    out[RANK_F_NNC_MAX] = (double)t->nnc_max;
    out[RANK_F_ROW_NNZ_MEAN] = m > 0 ? (double)nnz / (double)m : 0.0;
    out[RANK_F_COV_ROW] = t->cov_row;
    out[RANK_F_WASTE_COL] = tiling_col_waste(p->n, cfg->n1);
    out[RANK_F_FMA_PER_THREAD] = (double)t->nnz_max * cfg->v / cfg->ksplit;
    out[RANK_F_LOADS_PER_THREAD] = (double)t->nnc_max / cfg->ksplit;
    out[RANK_F_WARPS] = blocks * (double)threads / 32.0;
}
