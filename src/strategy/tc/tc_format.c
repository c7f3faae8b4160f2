/* Three passes over the row windows, each in parallel (core/parallel.h):
 * the first counts each window's tiles both ways (its columns merged), the
 * mode and the tile offsets follow by prefix sums; the second fills places
 * and masks; the value offsets follow from the masks' popcounts, each
 * tile's rounded up to 16 bytes; the third stores the values. */
#include "strategy/tc/tc_format.h"

#include "core/alloc.h"
#include "core/budget.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/matrix.h"
#include "core/parallel.h"
#include "gpu/timing.h"

#include <string.h>

enum { WINDOW_GRAIN = 16 };

const char *tc_format_mode_name(tc_format_mode mode)
{
    return mode == TC_FORMAT_BLOCKED ? "blocked" : mode == TC_FORMAT_CONDENSED ? "condensed" : "auto";
}

void tc_format_free(tc_format *f)
{
    if (!f)
        return;
    mem_free(f->window_tile);
    mem_free(f->tile_col);
    mem_free(f->tile_mask);
    mem_free(f->tile_value);
    mem_free(f->values);
    mem_free(f->window_col);
    mem_free(f->col_list);
    memset(f, 0, sizeof *f);
}

int64_t tc_value_align(spf_dtype dtype) { return 16 / (int64_t)dtype_size(dtype); }

double tc_format_bytes_per_weight(const tc_format *f)
{
    double weights = (double)f->rows * (double)f->cols;
    return weights > 0 ? (double)f->bytes / weights : 0.0;
}

/* Shared by both passes. */
typedef struct build {
    const spf_matrix *a;
    tc_format *f;
    int32_t **scratch;        /* per worker: a window's sorted distinct columns */
    int32_t **merge;          /* per worker: the merge's second buffer         */
    int64_t *blocked_tiles;   /* pass 1, per window                              */
    int64_t *distinct;        /* pass 1, per window: distinct columns             */
} build;

/* The window's distinct columns, ascending, into cols; their count. Its
 * rows' columns are runs that already ascend (CSR), merged pairwise in
 * log2(TC_TILE) linear passes through tmp (a sort took most of the build:
 * 2.6 s of 11008×4096 at 0.5 on one thread). */
static int64_t window_columns(const spf_matrix *a, int64_t w, int32_t *cols, int32_t *tmp)
{
    int64_t r0 = w * TC_TILE, r1 = r0 + TC_TILE < a->rows ? r0 + TC_TILE : a->rows;
    int64_t from = a->row_ptr[r0], n = a->row_ptr[r1] - from;
    int64_t bound[TC_TILE + 1]; /* run i is [bound[i], bound[i + 1]) */
    int runs = (int)(r1 - r0);
    for (int i = 0; i <= runs; i++)
        bound[i] = a->row_ptr[r0 + i] - from;
    int32_t *src = cols, *dst = tmp;
    memcpy(src, a->col_idx + from, (size_t)n * sizeof *src);
    while (runs > 1) {
        int merged = 0;
        for (int i = 0; i < runs; i += 2, merged++) {
            int64_t x = bound[i], xe = bound[i + 1], y = xe, ye = i + 1 < runs ? bound[i + 2] : xe,
                    o = x;
            while (x < xe && y < ye)
                dst[o++] = src[x] <= src[y] ? src[x++] : src[y++];
            while (x < xe)
                dst[o++] = src[x++];
            while (y < ye)
                dst[o++] = src[y++];
            bound[merged] = bound[i];
        }
        bound[merged] = n;
        runs = merged;
        int32_t *t = src;
        src = dst, dst = t;
    }
    if (src != cols)
        memcpy(cols, src, (size_t)n * sizeof *cols);
    int64_t d = 0;
    for (int64_t i = 0; i < n; i++)
        if (d == 0 || cols[i] != cols[d - 1])
            cols[d++] = cols[i];
    return d;
}

static spf_status count_windows(void *ctx, int64_t begin, int64_t end, int worker)
{
    build *b = ctx;
    for (int64_t w = begin; w < end; w++) {
        int32_t *cols = b->scratch[worker];
        int64_t d = window_columns(b->a, w, cols, b->merge[worker]), blocks = 0;
        for (int64_t i = 0; i < d; i++)
            if (i == 0 || cols[i] / TC_TILE != cols[i - 1] / TC_TILE)
                blocks++;
        b->blocked_tiles[w] = blocks;
        b->distinct[w] = d;
    }
    return SPF_OK;
}

static void store_value(spf_dtype dtype, void *values, int64_t at, float v)
{
    dtype_from_float(dtype, &v, (unsigned char *)values + (size_t)at * dtype_size(dtype), 1);
}

/* A window's places along K, ascending (BLOCKED: its tiles' first columns;
 * CONDENSED: its column list) and their count, once pass 2 stored them. */
static const int32_t *window_places(const tc_format *f, int64_t w, int64_t *count)
{
    if (f->mode == TC_FORMAT_CONDENSED) {
        *count = f->window_col[w + 1] - f->window_col[w];
        return f->col_list + f->window_col[w];
    }
    *count = f->window_tile[w + 1] - f->window_tile[w];
    return f->tile_col + f->window_tile[w];
}

/* Passes 2 and 3 over a window's nonzeros: pass 0 sets mask bits, pass 1
 * stores each value at its tile's offset plus the popcount of the bits
 * before its own. A row's columns ascend, and so do the places: a cursor
 * finds each one's place. */
static spf_status walk_nonzeros(build *b, int64_t begin, int64_t end, int pass)
{
    const spf_matrix *a = b->a;
    tc_format *f = b->f;
    int condensed = f->mode == TC_FORMAT_CONDENSED;
    for (int64_t w = begin; w < end; w++) {
        int64_t d, first = f->window_tile[w];
        const int32_t *cols = window_places(f, w, &d);
        uint64_t *mask = f->tile_mask + first * TC_QUADRANTS;
        int64_t r0 = w * TC_TILE, r1 = r0 + TC_TILE < a->rows ? r0 + TC_TILE : a->rows;
        for (int64_t r = r0; r < r1; r++) {
            int64_t j = 0;
            for (int64_t p = a->row_ptr[r]; p < a->row_ptr[r + 1]; p++) {
                int32_t c = a->col_idx[p], key = condensed ? c : c / TC_TILE * TC_TILE;
                while (j < d && cols[j] < key)
                    j++;
                if (j == d || cols[j] != key)
                    return FAIL(SPF_ERR_INTERNAL, "tc format: column %d not in window %lld",
                                (int)c, (long long)w);
                int64_t pos = condensed ? j : j * TC_TILE + c % TC_TILE;
                int64_t t = pos / TC_TILE;
                int rr = (int)(r - r0), cc = (int)(pos % TC_TILE);
                int q = (rr >= 8) + 2 * (cc >= 8), bit = (rr % 8) * 8 + cc % 8;
                uint64_t *m = mask + t * TC_QUADRANTS;
                if (pass == 0) {
                    m[q] |= (uint64_t)1 << bit;
                    continue;
                }
                int64_t at = f->tile_value[first + t];
                for (int k = 0; k < q; k++)
                    at += __builtin_popcountll(m[k]);
                at += __builtin_popcountll(m[q] & (((uint64_t)1 << bit) - 1));
                store_value(f->dtype, f->values, at, a->values[p]);
            }
        }
    }
    return SPF_OK;
}

/* Pass 2: each window's places (tile_col, col_list) and masks. */
static spf_status fill_masks(void *ctx, int64_t begin, int64_t end, int worker)
{
    build *b = ctx;
    const spf_matrix *a = b->a;
    tc_format *f = b->f;
    int condensed = f->mode == TC_FORMAT_CONDENSED;
    for (int64_t w = begin; w < end; w++) {
        int32_t *cols = b->scratch[worker];
        int64_t d = window_columns(a, w, cols, b->merge[worker]);
        int64_t first = f->window_tile[w], count = f->window_tile[w + 1] - first;
        if (condensed) {
            int32_t *list = f->col_list + f->window_col[w];
            int64_t padded = f->window_col[w + 1] - f->window_col[w];
            memcpy(list, cols, (size_t)d * sizeof *list);
            for (int64_t i = d; i < padded; i++)
                list[i] = 0;
            for (int64_t t = 0; t < count; t++)
                f->tile_col[first + t] = (int32_t)(t * TC_TILE);
        } else {
            int64_t blocks = 0;
            for (int64_t i = 0; i < d; i++)
                if (blocks == 0 || cols[i] / TC_TILE != cols[blocks - 1] / TC_TILE)
                    cols[blocks++] = cols[i] / TC_TILE * TC_TILE;
            memcpy(f->tile_col + first, cols, (size_t)count * sizeof *cols);
        }
        memset(f->tile_mask + first * TC_QUADRANTS, 0,
               (size_t)count * TC_QUADRANTS * sizeof *f->tile_mask);
    }
    return walk_nonzeros(b, begin, end, 0);
}

static spf_status fill_values(void *ctx, int64_t begin, int64_t end, int worker)
{
    (void)worker;
    return walk_nonzeros(ctx, begin, end, 1);
}

/* Bytes a kernel reads of a format with these counts: the values (padded
 * per tile), masks and offsets per tile, the window offsets, the lists. */
static int64_t format_bytes(int64_t values, spf_dtype dtype, int64_t windows, int64_t tiles,
                            int64_t listed)
{
    return values * (int64_t)dtype_size(dtype) + tiles * (TC_QUADRANTS * 8 + 8 + 4) +
           (windows + 1) * 8 + (listed ? listed * 4 + (windows + 1) * 8 : 0);
}

static int64_t round_up(int64_t x) { return (x + TC_TILE - 1) / TC_TILE * TC_TILE; }

spf_status tc_format_build(const spf_matrix *a, spf_dtype dtype, tc_format_mode mode, int threads,
                           tc_format *out)
{
    CHECK_ARG(out != NULL);
    memset(out, 0, sizeof *out);
    CHECK_ARG(a != NULL && dtype_valid(dtype));
    CHECK_ARG(mode == TC_FORMAT_AUTO || mode == TC_FORMAT_BLOCKED || mode == TC_FORMAT_CONDENSED);
    if (a->cols > INT32_MAX - TC_TILE)
        return FAIL(SPF_ERR_OVERFLOW, "tc format: %lld columns: the tiles' int32 column offsets "
                    "need fewer than 2^31 - %d", (long long)a->cols, TC_TILE);
    /* Counts, offsets and lists per 16-row window; per nonzero at most a tile
     * of masks, offsets and padded values (a bound, checked before any of
     * it is allocated). */
    spf_status status = budget_check("tc format", bytes_add(bytes_mul(a->rows, 8),
                                                            bytes_mul(a->nnz, 64)),
                                     "the tensor-core format and its build scratch");
    if (status != SPF_OK)
        return status;
    double t0 = timing_now_s();
    tc_format *f = out;
    f->rows = a->rows, f->cols = a->cols, f->nnz = a->nnz, f->dtype = dtype;
    f->windows = (a->rows + TC_TILE - 1) / TC_TILE;
    build b = {.a = a, .f = f};
    int64_t longest = 1;
    for (int64_t w = 0; w < f->windows; w++) {
        int64_t r0 = w * TC_TILE, r1 = r0 + TC_TILE < a->rows ? r0 + TC_TILE : a->rows;
        int64_t n = a->row_ptr[r1] - a->row_ptr[r0];
        longest = n > longest ? n : longest;
    }
    int workers = parallel_workers(f->windows, WINDOW_GRAIN, threads);
    b.scratch = mem_calloc((size_t)workers, sizeof *b.scratch);
    b.merge = mem_calloc((size_t)workers, sizeof *b.merge);
    b.blocked_tiles = mem_alloc_array((size_t)f->windows + 1, sizeof *b.blocked_tiles);
    b.distinct = mem_alloc_array((size_t)f->windows + 1, sizeof *b.distinct);
    f->window_tile = mem_alloc_array((size_t)f->windows + 1, sizeof *f->window_tile);
    if (!b.scratch || !b.merge || !b.blocked_tiles || !b.distinct || !f->window_tile)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "tc format: counts of %lld windows", (long long)f->windows);
    for (int i = 0; i < workers; i++)
        if (!(b.scratch[i] = mem_alloc_array((size_t)longest, sizeof *b.scratch[i])) ||
            !(b.merge[i] = mem_alloc_array((size_t)longest, sizeof *b.merge[i])))
            FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "tc format: %lld columns of scratch",
                      (long long)longest);
    TRY(parallel_for(f->windows, WINDOW_GRAIN, threads, count_windows, &b));

    int64_t blocked = 0, condensed = 0, listed = 0, align = tc_value_align(dtype);
    for (int64_t w = 0; w < f->windows; w++) {
        blocked += b.blocked_tiles[w];
        condensed += round_up(b.distinct[w]) / TC_TILE;
        listed += round_up(b.distinct[w]);
    }
    if (mode == TC_FORMAT_AUTO)
        mode = format_bytes(a->nnz + condensed * (align - 1) / 2, dtype, f->windows, condensed,
                            listed) <
                       format_bytes(a->nnz + blocked * (align - 1) / 2, dtype, f->windows,
                                    blocked, 0)
                   ? TC_FORMAT_CONDENSED
                   : TC_FORMAT_BLOCKED;
    f->mode = mode;
    f->tiles = mode == TC_FORMAT_CONDENSED ? condensed : blocked;
    f->window_tile[0] = 0;
    for (int64_t w = 0; w < f->windows; w++)
        f->window_tile[w + 1] = f->window_tile[w] + (mode == TC_FORMAT_CONDENSED
                                                         ? round_up(b.distinct[w]) / TC_TILE
                                                         : b.blocked_tiles[w]);
    if (mode == TC_FORMAT_CONDENSED) {
        f->window_col = mem_alloc_array((size_t)f->windows + 1, sizeof *f->window_col);
        f->col_list = mem_alloc_array((size_t)(listed ? listed : 1), sizeof *f->col_list);
        if (!f->window_col || !f->col_list)
            FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "tc format: %lld listed columns", (long long)listed);
        f->window_col[0] = 0;
        for (int64_t w = 0; w < f->windows; w++)
            f->window_col[w + 1] = f->window_col[w] + round_up(b.distinct[w]);
    }
    size_t tiles = (size_t)(f->tiles ? f->tiles : 1);
    f->tile_col = mem_alloc_array(tiles, sizeof *f->tile_col);
    f->tile_mask = mem_alloc_array(tiles * TC_QUADRANTS, sizeof *f->tile_mask);
    f->tile_value = mem_alloc_array(tiles + 1, sizeof *f->tile_value);
    if (!f->tile_col || !f->tile_mask || !f->tile_value)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "tc format: %lld tiles", (long long)f->tiles);
    TRY(parallel_for(f->windows, WINDOW_GRAIN, threads, fill_masks, &b));
    /* every tile's values start on a 16-byte boundary, so that a kernel
     * copies them in 16-byte pieces (the padding is zeros, never read as
     * a nonzero: no mask bit points at it) */
    f->tile_value[0] = 0;
    for (int64_t t = 0; t < f->tiles; t++) {
        int64_t n = 0;
        for (int q = 0; q < TC_QUADRANTS; q++)
            n += __builtin_popcountll(f->tile_mask[t * TC_QUADRANTS + q]);
        f->tile_value[t + 1] = f->tile_value[t] + (n + align - 1) / align * align;
    }
    f->values = mem_calloc((size_t)(f->tile_value[f->tiles] ? f->tile_value[f->tiles] : 1),
                           dtype_size(dtype));
    if (!f->values)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "tc format: %lld values",
                  (long long)f->tile_value[f->tiles]);
    TRY(parallel_for(f->windows, WINDOW_GRAIN, threads, fill_values, &b));
    f->bytes = format_bytes(f->tile_value[f->tiles], dtype, f->windows, f->tiles,
                            mode == TC_FORMAT_CONDENSED ? listed : 0);
    f->build_s = timing_now_s() - t0;
fail:
    for (int i = 0; b.scratch && i < workers; i++)
        mem_free(b.scratch[i]);
    for (int i = 0; b.merge && i < workers; i++)
        mem_free(b.merge[i]);
    mem_free(b.scratch);
    mem_free(b.merge);
    mem_free(b.blocked_tiles);
    mem_free(b.distinct);
    if (status != SPF_OK)
        tc_format_free(f);
    return status;
}

void tc_format_to_dense(const tc_format *f, float *dense)
{
    memset(dense, 0, (size_t)(f->rows * f->cols) * sizeof *dense);
    for (int64_t w = 0; w < f->windows; w++)
        for (int64_t t = f->window_tile[w]; t < f->window_tile[w + 1]; t++) {
            int64_t at = f->tile_value[t];
            for (int q = 0; q < TC_QUADRANTS; q++)
                for (int bit = 0; bit < 64; bit++) {
                    if (!(f->tile_mask[t * TC_QUADRANTS + q] >> bit & 1))
                        continue;
                    int64_t r = w * TC_TILE + (q & 1) * 8 + bit / 8;
                    int64_t place = f->tile_col[t] + (q >> 1) * 8 + bit % 8;
                    int64_t c = f->mode == TC_FORMAT_CONDENSED
                                    ? f->col_list[f->window_col[w] + place]
                                    : place;
                    float v;
                    dtype_to_float(f->dtype, (const unsigned char *)f->values +
                                                 (size_t)at * dtype_size(f->dtype),
                                   &v, 1);
                    dense[r * f->cols + c] = v;
                    at++;
                }
        }
}

void tc_format_round_tf32(tc_format *f)
{
    if (f->dtype != SPF_DTYPE_F32)
        return;
    uint32_t *bits = f->values;
    for (int64_t i = 0; i < f->tile_value[f->tiles]; i++) {
        uint32_t x = bits[i];
        if ((x & 0x7f800000u) != 0x7f800000u) /* Inf and NaN stay */
            x = (x + 0x1000u) & ~0x1fffu;
        bits[i] = x;
    }
}
