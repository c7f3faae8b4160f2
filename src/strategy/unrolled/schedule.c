#include "strategy/unrolled/schedule.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/matrix.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* CUDA's limits on one launch. */
enum { MAX_BLOCK_THREADS = 1024 };

spf_status schedule_config_check(const spf_kernel_config *cfg, int64_t n)
{
    if (!cfg)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "no kernel configuration");
    if (n < 1)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "n = %lld: B needs at least one column", (long long)n);
    if (cfg->v != 1 && cfg->v != 2 && cfg->v != 4)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "v = %d: must be 1, 2 or 4", (int)cfg->v);
    if (cfg->m1 < 1)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "m1 = %d: must be at least 1", (int)cfg->m1);
    if (cfg->prefetch < 0)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "prefetch = %d: must be 0 or more", (int)cfg->prefetch);
    if (cfg->ksplit < 1)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "ksplit = %d: must be at least 1", (int)cfg->ksplit);
    if (cfg->n1 < 1 || cfg->n1 % cfg->v != 0)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "n1 = %d: must be a positive multiple of v = %d",
                    (int)cfg->n1, (int)cfg->v);
    int64_t threads = (int64_t)(cfg->n1 / cfg->v) * cfg->ksplit;
    if (threads % 32 != 0 || threads > MAX_BLOCK_THREADS)
        return FAIL(SPF_ERR_INVALID_ARGUMENT,
                    "n1 / v · ksplit = %lld threads: must be a multiple of 32 and at most %d "
                    "(n1 = %d, v = %d, ksplit = %d)",
                    (long long)threads, MAX_BLOCK_THREADS, (int)cfg->n1, (int)cfg->v,
                    (int)cfg->ksplit);
    /* Vector loads need every B and C row to start v-aligned. */
    if (cfg->v > 1 && n % cfg->v != 0)
        return FAIL(SPF_ERR_INVALID_ARGUMENT,
                    "v = %d does not divide n = %lld (rows of B and C would lose vector alignment)",
                    (int)cfg->v, (long long)n);
    int64_t shared = (int64_t)(cfg->ksplit - 1) * cfg->m1 * cfg->n1 * (int64_t)sizeof(float);
    if (shared > SCHEDULE_SHARED_LIMIT)
        return FAIL(SPF_ERR_INVALID_ARGUMENT,
                    "ksplit = %d: the reduction needs (ksplit - 1) · m1 · n1 · 4 = %lld bytes of "
                    "shared memory, over %d",
                    (int)cfg->ksplit, (long long)shared, SCHEDULE_SHARED_LIMIT);
    return SPF_OK;
}

void schedule_free(schedule *s)
{
    if (!s)
        return;
    mem_free(s->row_list);
    mem_free(s->tiles);
    mem_free(s->cols);
    mem_free(s->entries);
    mem_free(s->group_start);
    memset(s, 0, sizeof *s);
}

/* One nonzero of a tile while its columns are being gathered. */
typedef struct triplet {
    int32_t col, slot;
    float value;
} triplet;

static int triplet_cmp(const void *pa, const void *pb)
{
    const triplet *a = pa, *b = pb;
    if (a->col != b->col)
        return a->col < b->col ? -1 : 1;
    return (a->slot > b->slot) - (a->slot < b->slot);
}

static spf_status row_list_build(const spf_matrix *a, const int32_t *row_order, int32_t *rows)
{
    spf_status status = SPF_OK;
    uint8_t *seen = NULL;
    if (!row_order) {
        for (int64_t i = 0; i < a->rows; i++)
            rows[i] = (int32_t)i;
        return SPF_OK;
    }
    seen = mem_calloc((size_t)a->rows, 1);
    if (!seen)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "row bitmap of %lld bytes", (long long)a->rows);
    for (int64_t i = 0; i < a->rows; i++) {
        int32_t r = row_order[i];
        if (r < 0 || r >= a->rows || seen[r])
            FAIL_GOTO(SPF_ERR_INVALID_ARGUMENT,
                      "row_order[%lld] = %d: not a permutation of 0 .. %lld", (long long)i, (int)r,
                      (long long)a->rows - 1);
        seen[r] = 1;
        rows[i] = r;
    }
fail:
    mem_free(seen);
    return status;
}

/* SparseRT §3.4 (Figure 3b): contiguous runs of the tile's columns, each
 * group taking the run whose prefix sum reaches its share g · nnz / ksplit,
 * so the groups hold about the same number of nonzeros. Monotone by
 * construction; groups are empty when there are fewer columns than groups. */
static void split_columns(const sched_column *cols, int32_t count, int64_t nnz, int32_t ksplit,
                          int32_t *gs)
{
    int32_t g = 1;
    int64_t before = 0; /* nonzeros in the columns before column i */
    gs[0] = 0;
    for (int32_t i = 0; i < count && g < ksplit; i++) {
        /* Start group g at i when stopping before i lands closer to the
         * share than taking column i as well. */
        while (g < ksplit && (before + cols[i].count) * ksplit > g * nnz &&
               (g * nnz - before * ksplit) <= (before + cols[i].count) * ksplit - g * nnz)
            gs[g++] = i;
        before += cols[i].count;
    }
    while (g < ksplit)
        gs[g++] = count;
    gs[ksplit] = count;
}

spf_status schedule_tiles_check(int64_t rows, int64_t m1)
{
    int64_t tiles = (rows + m1 - 1) / m1;
    if (tiles > SCHEDULE_MAX_TILES)
        return FAIL(SPF_ERR_UNSUPPORTED, "%lld row tiles of m1 = %lld: over the grid limit of %d",
                    (long long)tiles, (long long)m1, SCHEDULE_MAX_TILES);
    return SPF_OK;
}

spf_status schedule_create(const spf_matrix *a, const int32_t *row_order, int64_t n,
                           const spf_kernel_config *cfg, schedule *out)
{
    spf_status status = SPF_OK;
    triplet *work = NULL;
    if (!out)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "no output schedule");
    memset(out, 0, sizeof *out);
    if (!a)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "no matrix");
    TRY(schedule_config_check(cfg, n));
    if (a->rows < 1)
        FAIL_GOTO(SPF_ERR_UNSUPPORTED, "a matrix with no rows has no kernel");
    schedule *s = out;
    s->cfg = *cfg;
    s->m = a->rows;
    s->k = a->cols;
    s->n = n;
    int64_t tiles = (a->rows + cfg->m1 - 1) / cfg->m1;
    int64_t col_tiles = (n + cfg->n1 - 1) / cfg->n1;
    TRY(schedule_tiles_check(a->rows, cfg->m1));
    if (col_tiles > INT32_MAX)
        FAIL_GOTO(SPF_ERR_UNSUPPORTED, "%lld column tiles: over the grid limit", (long long)col_tiles);
    s->tile_count = (int32_t)tiles;
    s->col_tiles = (int32_t)col_tiles;
    s->group_threads = cfg->n1 / cfg->v;

    s->row_list = mem_alloc_array((size_t)a->rows, sizeof *s->row_list);
    s->tiles = mem_calloc((size_t)tiles, sizeof *s->tiles);
    s->entries = mem_alloc_array((size_t)(a->nnz ? a->nnz : 1), sizeof *s->entries);
    s->cols = mem_alloc_array((size_t)(a->nnz ? a->nnz : 1), sizeof *s->cols);
    s->group_start = mem_alloc_array((size_t)tiles, (size_t)(cfg->ksplit + 1) * sizeof(int32_t));
    if (!s->row_list || !s->tiles || !s->entries || !s->cols || !s->group_start)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "schedule of %lld tiles, %lld nonzeros", (long long)tiles,
                  (long long)a->nnz);
    TRY(row_list_build(a, row_order, s->row_list));

    int64_t max_tile_nnz = 0;
    for (int64_t t = 0; t < tiles; t++) {
        int64_t nnz = 0, end = (t + 1) * cfg->m1 < a->rows ? (t + 1) * cfg->m1 : a->rows;
        for (int64_t i = t * cfg->m1; i < end; i++)
            nnz += a->row_ptr[s->row_list[i] + 1] - a->row_ptr[s->row_list[i]];
        s->tiles[t].nnz = nnz;
        if (nnz > max_tile_nnz)
            max_tile_nnz = nnz;
    }
    work = mem_alloc_array((size_t)(max_tile_nnz ? max_tile_nnz : 1), sizeof *work);
    if (!work)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "tile work array of %lld entries", (long long)max_tile_nnz);

    int64_t col_total = 0, entry_total = 0;
    for (int32_t t = 0; t < s->tile_count; t++) {
        sched_tile *tile = &s->tiles[t];
        tile->first_row = t * cfg->m1;
        tile->rows = (int32_t)((int64_t)tile->first_row + cfg->m1 <= a->rows
                                   ? cfg->m1
                                   : a->rows - tile->first_row);
        int64_t used = 0;
        for (int32_t slot = 0; slot < tile->rows; slot++) {
            int32_t r = s->row_list[tile->first_row + slot];
            for (int64_t e = a->row_ptr[r]; e < a->row_ptr[r + 1]; e++)
                work[used++] = (triplet){a->col_idx[e], slot, a->values[e]};
        }
        qsort(work, (size_t)used, sizeof *work, triplet_cmp);
        tile->first_col = col_total;
        for (int64_t e = 0; e < used; e++) {
            if (e == 0 || work[e].col != work[e - 1].col)
                s->cols[col_total++] = (sched_column){work[e].col, 0, entry_total};
            s->cols[col_total - 1].count++;
            s->entries[entry_total++] = (sched_entry){work[e].slot, work[e].value};
        }
        tile->col_count = (int32_t)(col_total - tile->first_col);
        split_columns(&s->cols[tile->first_col], tile->col_count, tile->nnz, cfg->ksplit,
                      &s->group_start[(int64_t)t * (cfg->ksplit + 1)]);
    }

    s->grid[0] = (unsigned)s->col_tiles;
    s->grid[1] = (unsigned)s->tile_count;
    s->grid[2] = 1;
    s->block[0] = (unsigned)(s->group_threads * cfg->ksplit);
    s->block[1] = s->block[2] = 1;
    s->shared_bytes = (unsigned)((int64_t)(cfg->ksplit - 1) * cfg->m1 * cfg->n1 * sizeof(float));
fail:
    mem_free(work);
    if (status != SPF_OK)
        schedule_free(out);
    return status;
}

void schedule_group_rows(const schedule *s, int32_t tile, int32_t group, uint8_t *touched)
{
    const sched_tile *t = &s->tiles[tile];
    const int32_t *gs = &s->group_start[(int64_t)tile * (s->cfg.ksplit + 1)];
    memset(touched, 0, (size_t)s->cfg.m1);
    for (int32_t c = gs[group]; c < gs[group + 1]; c++) {
        const sched_column *col = &s->cols[t->first_col + c];
        for (int32_t e = 0; e < col->count; e++)
            touched[s->entries[col->first + e].slot] = 1;
    }
}

int64_t schedule_instructions(const schedule *s, int fma_per_entry, int load_ops, int store_ops)
{
    /* Per tile: the call and the function's prologue; per row and group the
     * reduction (a shared store and a load and add per lane); per output
     * row the epilogue. The entry's own code is a few dozen instructions. */
    const int64_t v = s->cfg.v, ks = s->cfg.ksplit;
    int64_t total = 64;
    for (int32_t t = 0; t < s->tile_count; t++) {
        const sched_tile *tile = &s->tiles[t];
        total += 24 + (int64_t)tile->col_count * load_ops + tile->nnz * fma_per_entry;
        total += (int64_t)tile->rows * ((ks - 1) * (2 + v) + store_ops);
    }
    return total;
}

int32_t schedule_unit_end(const schedule *s, int32_t first, int fma_per_entry, int64_t target)
{
    int64_t size = 0;
    int32_t t = first;
    while (t < s->tile_count) {
        size += s->tiles[t].col_count + s->tiles[t].nnz * fma_per_entry;
        t++;
        if (size >= target)
            break;
    }
    return t;
}

/* One thread of one block: its groups' accumulators, reduced by owner. */
static void execute_thread(const schedule *s, int32_t t, int64_t col0, const float *b, float *c,
                           const float *bias, int relu, float *acc, uint8_t *touched)
{
    const spf_kernel_config *cfg = &s->cfg;
    const sched_tile *tile = &s->tiles[t];
    const int32_t *gs = &s->group_start[(int64_t)t * (cfg->ksplit + 1)];
    const int32_t v = cfg->v, m1 = cfg->m1;
    int active = col0 < s->n;
    int64_t cc = active ? col0 : s->n - v; /* the clamped column of an idle thread */
    /* acc[g][slot][lane]; touched[g][slot] tells if group g wrote that row. */
    for (int32_t g = 0; g < cfg->ksplit; g++) {
        float *ag = &acc[(int64_t)g * m1 * v];
        schedule_group_rows(s, t, g, &touched[(int64_t)g * m1]);
        uint8_t *started = &touched[(int64_t)cfg->ksplit * m1]; /* scratch row flags */
        memset(started, 0, (size_t)m1);
        memset(ag, 0, (size_t)m1 * v * sizeof(float));
        for (int32_t ci = gs[g]; ci < gs[g + 1]; ci++) {
            const sched_column *col = &s->cols[tile->first_col + ci];
            const float *brow = &b[(int64_t)col->col * s->n + cc];
            for (int32_t e = 0; e < col->count; e++) {
                const sched_entry *en = &s->entries[col->first + e];
                float *row_acc = &ag[(int64_t)en->slot * v];
                for (int32_t l = 0; l < v; l++)
                    row_acc[l] = started[en->slot] ? fmaf(brow[l], en->value, row_acc[l])
                                                   : brow[l] * en->value;
                started[en->slot] = 1;
            }
        }
    }
    if (!active)
        return;
    for (int32_t slot = 0; slot < tile->rows; slot++) {
        int32_t owner = schedule_owner(s, slot);
        int32_t row = s->row_list[tile->first_row + slot];
        for (int32_t l = 0; l < v; l++) {
            float r = acc[((int64_t)owner * m1 + slot) * v + l];
            for (int32_t j = 0; j + 1 < cfg->ksplit; j++) {
                int32_t g = schedule_partial_writer(s, owner, j);
                if (touched[(int64_t)g * m1 + slot])
                    r += acc[((int64_t)g * m1 + slot) * v + l];
            }
            if (bias)
                r += bias[row];
            if (relu)
                r = fmaxf(r, 0.0f);
            c[(int64_t)row * s->n + cc + l] = r;
        }
    }
}

spf_status schedule_execute_cpu(const schedule *s, const float *b, float *c, const float *bias,
                                int relu)
{
    spf_status status = SPF_OK;
    if (!s || !b || !c)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "schedule, b and c are required");
    const spf_kernel_config *cfg = &s->cfg;
    float *acc = mem_alloc_array((size_t)cfg->ksplit * cfg->m1, (size_t)cfg->v * sizeof(float));
    uint8_t *touched = mem_alloc_array((size_t)cfg->ksplit + 1, (size_t)cfg->m1);
    if (!acc || !touched)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "accumulators of %d × %d × %d", (int)cfg->ksplit,
                  (int)cfg->m1, (int)cfg->v);
    for (int32_t t = 0; t < s->tile_count; t++)
        for (int32_t x = 0; x < s->col_tiles; x++)
            for (int32_t th = 0; th < s->group_threads; th++)
                execute_thread(s, t, (int64_t)x * cfg->n1 + (int64_t)th * cfg->v, b, c, bias, relu,
                               acc, touched);
fail:
    mem_free(acc);
    mem_free(touched);
    return status;
}
