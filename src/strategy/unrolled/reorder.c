#include "strategy/unrolled/reorder.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/matrix.h"
#include "strategy/unrolled/tile_stats.h"

#include <math.h>
#include <string.h>

/* The tiles being filled: column bitsets, counts, and the open tiles in
 * ascending (nnc, index) order. */
typedef struct tile_set {
    int32_t count;    /* T                                           */
    int64_t words;    /* 64-bit words per bitset: ceil(k / 64)         */
    uint64_t *bits;   /* count × words                                 */
    int64_t *nnc, *nnz;
    int32_t *size, *capacity;
    int64_t *th_nnz;  /* TH_nnz of each tile, rounded down (nnz are whole) */
    int32_t *open;    /* open_count tile indices, ascending (nnc, index) */
    int32_t open_count;
} tile_set;

/* The row being placed: the bitset words it touches, with its bits. */
typedef struct row_words {
    int64_t count;
    int64_t *word;
    uint64_t *mask;
} row_words;

static int tile_before(const tile_set *ts, int32_t x, int32_t y)
{
    return ts->nnc[x] != ts->nnc[y] ? ts->nnc[x] < ts->nnc[y] : x < y;
}

/* nnc of tile t after merging the row, or some value ≥ cap as soon as the
 * count reaches cap (the caller only wants merges below cap). */
static inline int64_t merged_nnc(const tile_set *ts, int32_t t, const row_words *rw, int64_t cap)
{
    const uint64_t *bits = ts->bits + (int64_t)t * ts->words;
    int64_t merged = ts->nnc[t];
    for (int64_t i = 0; i < rw->count && merged < cap; i++)
        merged += __builtin_popcountll(rw->mask[i] & ~bits[rw->word[i]]);
    return merged;
}

/* The scan is the hot loop (about T · ceil(k / 64) popcounts a row): on
 * x86-64 GCC also builds it with the popcnt instruction and picks that
 * clone at load time on CPUs that have it (the default build calls
 * libgcc's table-driven __popcountdi2, a third of the reorder time on the
 * 33288×512 DLMC embedding). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define HOT_POPCOUNT __attribute__((target_clones("popcnt", "default")))
#else
#define HOT_POPCOUNT
#endif

/* Algorithm 1 lines 9–22 for one row of rn nonzeros: the position in
 * ts->open of the chosen tile. The scan runs in ascending (nnc, index), so
 * it stops at the first tile whose nnc before merging exceeds the best
 * merge within TH_nnz (no later tile can match it), and a later tile
 * merging to the same nnc has at least the nnc before merging of the best
 * so far: it wins the tie only with strictly more. Tiles over TH_nnz are
 * merged only while no tile within it has been found. */
HOT_POPCOUNT static int32_t choose_tile(const tile_set *ts, const row_words *rw, int64_t rn)
{
    int32_t best_in = -1, best_all = -1;
    int64_t best_in_nnc = INT64_MAX, best_all_nnc = INT64_MAX, in_before = 0, all_before = 0;
    for (int32_t i = 0; i < ts->open_count; i++) {
        int32_t t = ts->open[i];
        int64_t lower = ts->nnc[t];
        if (lower > best_in_nnc)
            break;
        int fits = ts->nnz[t] + rn <= ts->th_nnz[t];
        if (!fits && (best_in >= 0 || lower > best_all_nnc))
            continue;
        int64_t cap = fits ? best_in_nnc : best_all_nnc;
        int64_t merged = merged_nnc(ts, t, rw, cap < INT64_MAX ? cap + 1 : cap);
        if (fits && (merged < best_in_nnc || (merged == best_in_nnc && lower > in_before))) {
            best_in = i;
            best_in_nnc = merged;
            in_before = lower;
        }
        if (merged < best_all_nnc || (merged == best_all_nnc && lower > all_before)) {
            best_all = i;
            best_all_nnc = merged;
            all_before = lower;
        }
    }
    return best_in >= 0 ? best_in : best_all;
}

/* Put the row into the tile at ts->open[pos] and restore the order of the
 * open tiles (its nnc grew), dropping it when full. */
static void tile_take(tile_set *ts, int32_t pos, const row_words *rw, int64_t rn)
{
    int32_t t = ts->open[pos];
    uint64_t *bits = ts->bits + (int64_t)t * ts->words;
    ts->nnc[t] = merged_nnc(ts, t, rw, INT64_MAX);
    for (int64_t i = 0; i < rw->count; i++)
        bits[rw->word[i]] |= rw->mask[i];
    ts->nnz[t] += rn;
    ts->size[t]++;
    if (ts->size[t] == ts->capacity[t]) {
        memmove(ts->open + pos, ts->open + pos + 1,
                (size_t)(ts->open_count - pos - 1) * sizeof *ts->open);
        ts->open_count--;
        return;
    }
    while (pos + 1 < ts->open_count && tile_before(ts, ts->open[pos + 1], t)) {
        ts->open[pos] = ts->open[pos + 1];
        pos++;
    }
    ts->open[pos] = t;
}

static void row_words_fill(const spf_matrix *a, int32_t r, row_words *rw)
{
    rw->count = 0;
    for (int64_t e = a->row_ptr[r]; e < a->row_ptr[r + 1]; e++) {
        int64_t w = a->col_idx[e] >> 6;
        uint64_t bit = (uint64_t)1 << (a->col_idx[e] & 63);
        if (rw->count > 0 && rw->word[rw->count - 1] == w) { /* col_idx ascends within a row */
            rw->mask[rw->count - 1] |= bit;
        } else {
            rw->word[rw->count] = w;
            rw->mask[rw->count++] = bit;
        }
    }
}

static void tile_set_free(tile_set *ts)
{
    mem_free(ts->bits);
    mem_free(ts->nnc);
    mem_free(ts->nnz);
    mem_free(ts->size);
    mem_free(ts->capacity);
    mem_free(ts->th_nnz);
    mem_free(ts->open);
}

/* T = ceil(r / m1) empty tiles of m1 rows, the last of r − (T − 1)·m1. */
static spf_status tile_set_init(tile_set *ts, int64_t r, int64_t k, int64_t nnz, int m1,
                                double slack)
{
    ts->count = (int32_t)((r + m1 - 1) / m1);
    ts->words = (k + 63) / 64;
    size_t count = (size_t)ts->count;
    ts->bits = mem_calloc(count, (size_t)ts->words * sizeof *ts->bits);
    ts->nnc = mem_calloc(count, sizeof *ts->nnc);
    ts->nnz = mem_calloc(count, sizeof *ts->nnz);
    ts->size = mem_calloc(count, sizeof *ts->size);
    ts->capacity = mem_alloc_array(count, sizeof *ts->capacity);
    ts->th_nnz = mem_alloc_array(count, sizeof *ts->th_nnz);
    ts->open = mem_alloc_array(count, sizeof *ts->open);
    if (!ts->bits || !ts->nnc || !ts->nnz || !ts->size || !ts->capacity || !ts->th_nnz || !ts->open)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "%d tiles with bitsets of %lld columns", (int)ts->count,
                    (long long)k);
    for (int32_t t = 0; t < ts->count; t++) {
        ts->capacity[t] = t + 1 < ts->count ? m1 : (int32_t)(r - (int64_t)(ts->count - 1) * m1);
        double th = (double)nnz * ts->capacity[t] / (double)r * (1.0 + slack);
        ts->th_nnz[t] = th < (double)INT64_MAX ? (int64_t)th : INT64_MAX;
        ts->open[t] = t;
    }
    ts->open_count = ts->count;
    return SPF_OK;
}

spf_status reorder_rows_greedy(const spf_matrix *a, int m1, double th_nnz_slack,
                               int32_t *row_order)
{
    spf_status status = SPF_OK;
    tile_set ts = {0};
    row_words rw = {0};
    int32_t *sorted = NULL, *tile_of = NULL, *fill = NULL;
    int64_t *bucket = NULL;
    if (!a || !row_order)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "no matrix or no output row order");
    if (m1 < 1)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "m1 = %d: must be at least 1", m1);
    if (!isfinite(th_nnz_slack) || th_nnz_slack < 0)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "TH_nnz slack %g: must be finite and ≥ 0",
                    th_nnz_slack);
    int64_t m = a->rows, max_row_nnz = 0;
    for (int64_t i = 0; i < m; i++) {
        int64_t rn = a->row_ptr[i + 1] - a->row_ptr[i];
        if (rn > max_row_nnz)
            max_row_nnz = rn;
    }

    /* Lines 2–4: non-empty rows by ascending nnz, ties by row index (a
     * counting sort: nnz per row is at most k). */
    bucket = mem_calloc((size_t)max_row_nnz + 2, sizeof *bucket);
    sorted = mem_alloc_array((size_t)(m ? m : 1), sizeof *sorted);
    tile_of = mem_alloc_array((size_t)(m ? m : 1), sizeof *tile_of);
    rw.word = mem_alloc_array((size_t)(max_row_nnz ? max_row_nnz : 1), sizeof *rw.word);
    rw.mask = mem_alloc_array((size_t)(max_row_nnz ? max_row_nnz : 1), sizeof *rw.mask);
    if (!bucket || !sorted || !tile_of || !rw.word || !rw.mask)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "reorder work arrays for %lld rows", (long long)m);
    for (int64_t i = 0; i < m; i++)
        bucket[a->row_ptr[i + 1] - a->row_ptr[i] + 1]++;
    for (int64_t v = 1; v <= max_row_nnz + 1; v++)
        bucket[v] += bucket[v - 1];
    for (int64_t i = 0; i < m; i++)
        sorted[bucket[a->row_ptr[i + 1] - a->row_ptr[i]]++] = (int32_t)i;
    int64_t empty = m ? bucket[0] : 0; /* after the pass bucket[0] counts the empty rows */
    int64_t r = m - empty;

    /* Lines 5–24 over the non-empty rows sorted[empty ..]. */
    if (r > 0) {
        TRY(tile_set_init(&ts, r, a->cols, a->nnz, m1, th_nnz_slack));
        for (int64_t j = empty; j < m; j++) {
            int32_t row = sorted[j];
            int64_t rn = a->row_ptr[row + 1] - a->row_ptr[row];
            row_words_fill(a, row, &rw);
            int32_t pos = choose_tile(&ts, &rw, rn);
            tile_of[row] = ts.open[pos];
            tile_take(&ts, pos, &rw, rn);
        }
        fill = mem_calloc((size_t)ts.count, sizeof *fill);
        if (!fill)
            FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "fill counts of %d tiles", (int)ts.count);
    }
    /* Non-empty rows in their tiles, ascending row index within a tile;
     * the empty rows after them (positions r .. m − 1). */
    int64_t next_empty = r;
    for (int64_t i = 0; i < m; i++) {
        if (a->row_ptr[i + 1] == a->row_ptr[i]) {
            row_order[next_empty++] = (int32_t)i;
        } else {
            int32_t t = tile_of[i];
            row_order[(int64_t)t * m1 + fill[t]++] = (int32_t)i;
        }
    }
fail:
    tile_set_free(&ts);
    mem_free(rw.word);
    mem_free(rw.mask);
    mem_free(sorted);
    mem_free(tile_of);
    mem_free(fill);
    mem_free(bucket);
    return status;
}

spf_status reorder_rows(const spf_matrix *a, int m1, double th_nnz_slack, int32_t *row_order)
{
    spf_status status = SPF_OK;
    tile_stats identity, greedy;
    TRY(reorder_rows_greedy(a, m1, th_nnz_slack, row_order));
    TRY(tile_nnc_stats(a, NULL, m1, &identity));
    TRY(tile_nnc_stats(a, row_order, m1, &greedy));
    /* Both have ceil(m / m1) tiles, so the means compare as the sums do. */
    if (greedy.max_nnc > identity.max_nnc || greedy.mean_nnc > identity.mean_nnc)
        for (int64_t i = 0; i < a->rows; i++)
            row_order[i] = (int32_t)i;
fail:
    return status;
}
