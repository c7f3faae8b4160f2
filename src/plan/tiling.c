#include "plan/tiling.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/matrix.h"
#include "gpu/tuner.h"

#include <math.h>

spf_status tile_space_create(int64_t n, spf_tune_space which, tile_space *out)
{
    if (!out)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "no output space");
    *out = (tile_space){0};
    if (n < 1)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "n = %lld: B needs at least one column",
                    (long long)n);
    return tuner_space(n, which, &out->configs, &out->count);
}

void tile_space_free(tile_space *s)
{
    if (!s)
        return;
    mem_free(s->configs);
    *s = (tile_space){0};
}

int64_t tiling_threads(const spf_kernel_config *cfg)
{
    return (int64_t)(cfg->n1 / cfg->v) * cfg->ksplit;
}

int64_t tiling_blocks(int64_t m, int64_t n, const spf_kernel_config *cfg)
{
    return ((m + cfg->m1 - 1) / cfg->m1) * ((n + cfg->n1 - 1) / cfg->n1);
}

static int64_t row_nnz(const spf_matrix *a, const int32_t *order, int64_t i)
{
    int64_t r = order ? order[i] : i;
    return a->row_ptr[r + 1] - a->row_ptr[r];
}

double tiling_row_cov(const tile_problem *p, int32_t m1)
{
    const spf_matrix *a = p->a;
    int64_t tiles = (a->rows + m1 - 1) / m1;
    if (tiles < 2 || a->nnz == 0)
        return 0.0;
    /* Two passes (mean, then squared deviations): exact enough in double
     * for any nnz an int64 holds, and no storage per tile. */
    double mean = (double)a->nnz / (double)tiles, sq = 0.0;
    for (int64_t first = 0; first < a->rows; first += m1) {
        int64_t end = first + m1 < a->rows ? first + m1 : a->rows, nnz = 0;
        for (int64_t i = first; i < end; i++)
            nnz += row_nnz(a, p->row_order, i);
        sq += ((double)nnz - mean) * ((double)nnz - mean);
    }
    return sqrt(sq / (double)tiles) / mean;
}

double tiling_col_waste(int64_t n, int32_t n1)
{
    int64_t padded = (n + n1 - 1) / n1 * n1;
    return (double)padded / (double)n - 1.0;
}
