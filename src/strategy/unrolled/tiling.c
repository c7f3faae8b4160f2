#include "strategy/unrolled/tiling.h"

#include "strategy/unrolled/schedule.h"
#include "core/alloc.h"
#include "core/error.h"
#include "core/matrix.h"

#include <math.h>

/* The values of each dimension of a space; (v, n1) pairs are listed
 * together so the compact space can keep a warp or two per thread group. */
typedef struct space_axes {
    const int32_t *m1, *vn1, *prefetch, *ksplit; /* vn1: v, n1 pairs */
    int m1_count, vn1_count, prefetch_count, ksplit_count;
} space_axes;

#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const int32_t full_m1[] = {1, 2, 4, 8, 16, 32};
static const int32_t full_vn1[] = {1, 32, 1, 64, 1, 128, 1, 256, 2, 32, 2, 64, 2, 128, 2, 256,
                                   4, 32, 4, 64, 4, 128, 4, 256};
static const int32_t full_prefetch[] = {0, 1, 2, 4};
static const int32_t full_ksplit[] = {1, 2, 4};

static const int32_t compact_m1[] = {2, 4, 8, 16, 32};
static const int32_t compact_vn1[] = {1, 32, 1, 64, 2, 64, 4, 128, 4, 256};
static const int32_t compact_prefetch[] = {2};

static const space_axes spaces[] = {
    [SPF_TUNE_SPACE_COMPACT] = {compact_m1, compact_vn1, compact_prefetch, full_ksplit,
                                LEN(compact_m1), LEN(compact_vn1) / 2, LEN(compact_prefetch),
                                LEN(full_ksplit)},
    [SPF_TUNE_SPACE_FULL] = {full_m1, full_vn1, full_prefetch, full_ksplit, LEN(full_m1),
                             LEN(full_vn1) / 2, LEN(full_prefetch), LEN(full_ksplit)},
};

spf_status tile_space_create(int64_t n, spf_tune_space which, tile_space *out)
{
    if (!out)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "no output space");
    *out = (tile_space){0};
    if (n < 1)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "n = %lld: B needs at least one column",
                    (long long)n);
    if (which != SPF_TUNE_SPACE_COMPACT && which != SPF_TUNE_SPACE_FULL)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "unknown tuning space %d", (int)which);
    const space_axes *s = &spaces[which];
    int cap = s->m1_count * s->vn1_count * s->prefetch_count * s->ksplit_count;
    spf_kernel_config *list = mem_alloc_array((size_t)cap, sizeof *list);
    if (!list)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "%d configurations", cap);
    int k = 0;
    for (int a = 0; a < s->m1_count; a++)
        for (int b = 0; b < s->vn1_count; b++)
            for (int d = 0; d < s->prefetch_count; d++)
                for (int e = 0; e < s->ksplit_count; e++) {
                    spf_kernel_config cfg = {.m1 = s->m1[a], .n1 = s->vn1[2 * b + 1],
                                             .v = s->vn1[2 * b], .prefetch = s->prefetch[d],
                                             .ksplit = s->ksplit[e]};
                    if (schedule_config_check(&cfg, n) == SPF_OK)
                        list[k++] = cfg;
                }
    error_clear(); /* the rejections are the filter, not errors */
    out->configs = list;
    out->count = k;
    return SPF_OK;
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

const int32_t *tile_problem_row_order(const tile_problem *p, int32_t m1)
{
    const int32_t *order = row_orders_find(p->orders, m1);
    return order ? order : p->row_order;
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
    const int32_t *order = tile_problem_row_order(p, m1);
    double mean = (double)a->nnz / (double)tiles, sq = 0.0;
    for (int64_t first = 0; first < a->rows; first += m1) {
        int64_t end = first + m1 < a->rows ? first + m1 : a->rows, nnz = 0;
        for (int64_t i = first; i < end; i++)
            nnz += row_nnz(a, order, i);
        sq += ((double)nnz - mean) * ((double)nnz - mean);
    }
    return sqrt(sq / (double)tiles) / mean;
}

double tiling_col_waste(int64_t n, int32_t n1)
{
    int64_t padded = (n + n1 - 1) / n1 * n1;
    return (double)padded / (double)n - 1.0;
}
