/* Column vectors: detection (one pass over the nonzeros per length and
 * order) and the format (sp_colvec.h). */
#include "strategy/structured/sp_colvec.h"

#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/matrix.h"
#include "gpu/timing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TILE = 16 };

static const int32_t lengths[] = {16, 8, 4}; /* the longest first: ties go to it; each
                                                 * a multiple of the next */

/* What blocks of l rows in order store: the sum of rows × |U| (stored)
 * and of |U| (columns). stamp holds a->cols entries, reset here. Stops
 * with *stored = -1 once the fill is sure to pass SP_COLVEC_FILL (every
 * nonzero still to come is stored at least once): a matrix without
 * column vectors is given up on early. */
static void measure(const spf_matrix *a, const int32_t *order, int32_t l, int64_t *stamp,
                    int64_t *stored, int64_t *columns)
{
    for (int64_t c = 0; c < a->cols; c++)
        stamp[c] = -1;
    *stored = 0, *columns = 0;
    int64_t seen = 0;
    for (int64_t r0 = 0; r0 < a->rows; r0 += l) {
        int64_t end = a->rows - r0 < l ? a->rows : r0 + l, u = 0;
        for (int64_t i = r0; i < end; i++) {
            int64_t r = order[i];
            seen += a->row_ptr[r + 1] - a->row_ptr[r];
            for (int64_t e = a->row_ptr[r]; e < a->row_ptr[r + 1]; e++)
                if (stamp[a->col_idx[e]] != r0)
                    stamp[a->col_idx[e]] = r0, u++;
        }
        *stored += (end - r0) * u;
        *columns += u;
        if ((double)(*stored + a->nnz - seen) > SP_COLVEC_FILL * (double)a->nnz) {
            *stored = -1;
            return;
        }
    }
}

typedef struct keyed_row {
    uint64_t key;  /* a hash of the row's columns */
    int64_t group; /* rows of that hash */
    int32_t row;
} keyed_row;

static int by_key(const void *pa, const void *pb)
{
    const keyed_row *a = pa, *b = pb;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return (a->row > b->row) - (a->row < b->row);
}

/* The largest groups first: a group of a size that l does not divide
 * shifts every block after it, so such groups go last. */
static int by_group(const void *pa, const void *pb)
{
    const keyed_row *a = pa, *b = pb;
    if (a->group != b->group)
        return a->group > b->group ? -1 : 1;
    return by_key(pa, pb);
}

spf_status sp_colvec_order(const spf_matrix *a, int permuted, int32_t **order)
{
    *order = mem_alloc_array((size_t)a->rows + 1, sizeof **order);
    keyed_row *keys = permuted ? mem_alloc_array((size_t)a->rows + 1, sizeof *keys) : NULL;
    if (!*order || (permuted && !keys)) {
        mem_free(*order);
        *order = NULL;
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "the row order of %lld rows", (long long)a->rows);
    }
    for (int64_t r = 0; r < a->rows; r++) {
        (*order)[r] = (int32_t)r;
        if (keys) {
            int64_t b = a->row_ptr[r], e = a->row_ptr[r + 1];
            keys[r] = (keyed_row){hash_bytes(a->col_idx + b, (size_t)(e - b) * sizeof(int32_t), 0),
                                  0, (int32_t)r};
        }
    }
    if (keys) {
        qsort(keys, (size_t)a->rows, sizeof *keys, by_key);
        for (int64_t r0 = 0, r1; r0 < a->rows; r0 = r1) {
            for (r1 = r0 + 1; r1 < a->rows && keys[r1].key == keys[r0].key; r1++)
                ;
            for (int64_t r = r0; r < r1; r++)
                keys[r].group = r1 - r0;
        }
        qsort(keys, (size_t)a->rows, sizeof *keys, by_group);
        for (int64_t r = 0; r < a->rows; r++)
            (*order)[r] = keys[r].row;
    }
    mem_free(keys);
    return SPF_OK;
}

int sp_colvec_detect(const spf_matrix *a, sp_pattern *out, char *reason, size_t cap)
{
    int64_t *stamp = mem_alloc_array((size_t)a->cols + 1, sizeof *stamp);
    double nnz = a->nnz > 0 ? (double)a->nnz : 1.0;
    int found = 0;
    if (!stamp) {
        snprintf(reason, cap, "out of memory checking for column vectors");
        return 0;
    }
    for (int permuted = 0; permuted <= 1 && !found; permuted++) {
        int32_t *order = NULL;
        if (sp_colvec_order(a, permuted, &order) != SPF_OK) {
            snprintf(reason, cap, "out of memory checking for column vectors");
            break;
        }
        double best_bytes = 0;
        /* A block of 2l rows is the union of two of l (the same order), so
         * its fill is at least theirs: where the shortest vectors store too
         * much, the longer ones do too, and one measure settles the order
         * (a pruned LLM layer: one of three). */
        const size_t last = sizeof lengths / sizeof *lengths - 1;
        int64_t shortest, shortest_columns;
        measure(a, order, lengths[last], stamp, &shortest, &shortest_columns);
        if (shortest < 0 || (double)shortest / nnz > SP_COLVEC_FILL) {
            mem_free(order);
            continue;
        }
        for (size_t li = 0; li < sizeof lengths / sizeof *lengths; li++) {
            int64_t stored = shortest, columns = shortest_columns;
            if (li != last)
                measure(a, order, lengths[li], stamp, &stored, &columns);
            double f = (double)stored / nnz, bytes = 2.0 * (double)stored + 4.0 * (double)columns;
            if (stored < 0 || f > SP_COLVEC_FILL || (found && bytes >= best_bytes))
                continue;
            *out = (sp_pattern){.vec = lengths[li], .permuted = permuted, .fill = f};
            best_bytes = bytes, found = 1;
        }
        mem_free(order);
    }
    mem_free(stamp);
    if (!found)
        snprintf(reason, cap, "not column vectors of 4, 8 or 16 rows (blocks of 4 store more "
                 "than %.2f× their nonzeros over their columns' union)", SP_COLVEC_FILL);
    return found;
}

/* The words of one step's values for l (sp_colvec.h). */
static int step_words(int32_t l) { return 8 * l; }

/* Where the value of tile row rr (0..15) at k slot j (0..15) lies in its
 * step's words, as word * 2 + half; -1 when the fragment does not store
 * it (outside the row's block). */
static int value_place(int32_t l, int rr, int j)
{
    if (rr / l != j / l)
        return -1;
    int g = rr % 8, hi = rr / 8, t = (j % 8) / 2, half = j % 2, reg = hi + 2 * (j / 8);
    int lane = 4 * g + t;
    if (l == 16)
        return (4 * lane + reg) * 2 + half;
    /* l = 8 and 4: words a0 (reg 0) and a3 (reg 3) only */
    int word = reg == 0 ? 0 : 1;
    int slot = l == 8 ? lane : 8 * (g / 4) + 2 * (g % 4) + t % 2;
    return (2 * slot + word) * 2 + half;
}

spf_status sp_colvec_build(const spf_matrix *a, const sp_pattern *p, spf_dtype dtype,
                           sp_format *out)
{
    if (p->vec != 4 && p->vec != 8 && p->vec != 16)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "structured format: column vectors of %d rows "
                    "(expected 4, 8 or 16)", p->vec);
    double t0 = timing_now_s();
    spf_status status = SPF_OK;
    sp_format *f = out;
    const int32_t l = p->vec, per_tile = TILE / l;
    f->rows = a->rows, f->cols = a->cols, f->dtype = dtype, f->pattern = *p;
    f->tiles = (a->rows + TILE - 1) / TILE;
    int64_t *stamp = mem_alloc_array((size_t)a->cols + 1, sizeof *stamp);
    int64_t *ucount = mem_calloc((size_t)(f->tiles * per_tile) + 1, sizeof *ucount);
    int32_t *cols = mem_alloc_array((size_t)(TILE * a->cols) + 1, sizeof *cols);
    float *dense = mem_alloc_array((size_t)(TILE * a->cols) + 1, sizeof *dense);
    f->step_ptr = mem_alloc_array((size_t)f->tiles + 1, sizeof *f->step_ptr);
    if (!stamp || !ucount || !cols || !dense || !f->step_ptr)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "a column-vector format of %lld × %lld",
                  (long long)a->rows, (long long)a->cols);
    TRY(sp_colvec_order(a, p->permuted, &f->row_map));
    for (int64_t c = 0; c < a->cols; c++)
        stamp[c] = -1;
    /* the blocks' unions, for the tiles' step counts */
    f->step_ptr[0] = 0;
    for (int64_t t = 0; t < f->tiles; t++) {
        int64_t steps = 0;
        for (int b = 0; b < per_tile; b++) {
            int64_t r0 = t * TILE + (int64_t)b * l, u = 0;
            for (int64_t i = r0; i < r0 + l && i < a->rows; i++) {
                int64_t r = f->row_map[i];
                for (int64_t e = a->row_ptr[r]; e < a->row_ptr[r + 1]; e++)
                    if (stamp[a->col_idx[e]] != r0)
                        stamp[a->col_idx[e]] = r0, u++;
            }
            ucount[t * per_tile + b] = u;
            steps = u > steps * l ? (u + l - 1) / l : steps;
        }
        steps = (steps + per_tile - 1) / per_tile * per_tile; /* whole windows */
        if (f->step_ptr[t] + steps >= INT32_MAX / (8 * l))
            FAIL_GOTO(SPF_ERR_OVERFLOW, "structured format: %lld × %lld in column vectors "
                      "reaches the kernel's int32 offsets", (long long)a->rows,
                      (long long)a->cols);
        f->step_ptr[t + 1] = (int32_t)(f->step_ptr[t] + steps);
    }
    f->steps = f->step_ptr[f->tiles];
    f->values = mem_calloc((size_t)(f->steps * step_words(l)) + 1, sizeof *f->values);
    f->gather = mem_calloc((size_t)(f->steps * TILE) + 1, sizeof *f->gather);
    if (!f->values || !f->gather)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "a column-vector format of %lld steps",
                  (long long)f->steps);
    for (int64_t c = 0; c < a->cols; c++)
        stamp[c] = -1;
    uint16_t *halves = (uint16_t *)f->values;
    for (int64_t t = 0; t < f->tiles; t++) {
        const int64_t s0 = f->step_ptr[t];
        for (int b = 0; b < per_tile; b++) {
            /* the block's union, ascending, and its rows dense over it */
            int64_t r0 = t * TILE + (int64_t)b * l, u = ucount[t * per_tile + b], n = 0;
            for (int64_t i = r0; i < r0 + l && i < a->rows; i++) {
                int64_t r = f->row_map[i];
                for (int64_t e = a->row_ptr[r]; e < a->row_ptr[r + 1]; e++)
                    if (stamp[a->col_idx[e]] != r0)
                        stamp[a->col_idx[e]] = r0, cols[n++] = a->col_idx[e];
            }
            /* insertion sort: the stamps made each column once */
            for (int64_t x = 1; x < n; x++) {
                int32_t c = cols[x];
                int64_t y = x;
                for (; y > 0 && cols[y - 1] > c; y--)
                    cols[y] = cols[y - 1];
                cols[y] = c;
            }
            for (int64_t x = 0; x < u; x++)
                stamp[cols[x]] = x; /* the column's entry in U, for the values below */
            memset(dense, 0, (size_t)(l * u + 1) * sizeof *dense);
            for (int64_t i = r0; i < r0 + l && i < a->rows; i++) {
                int64_t r = f->row_map[i];
                for (int64_t e = a->row_ptr[r]; e < a->row_ptr[r + 1]; e++)
                    dense[(i - r0) * u + stamp[a->col_idx[e]]] = a->values[e];
            }
            for (int64_t x = 0; x < u; x++)
                stamp[cols[x]] = -1;
            for (int64_t s = 0; s < f->step_ptr[t + 1] - s0; s++)
                for (int e = 0; e < l; e++) {
                    int64_t x = s * l + e;
                    int j = b * l + e;
                    f->gather[(s0 + s) * TILE + j] = x < u ? cols[x] : 0;
                    for (int rr = 0; rr < l && x < u; rr++) {
                        int place = value_place(l, b * l + rr, j);
                        dtype_from_float(dtype, &dense[rr * u + x],
                                         &halves[(s0 + s) * step_words(l) * 2 + place], 1);
                    }
                }
        }
    }
    f->bytes = (int64_t)sizeof(uint32_t) * (f->steps * (step_words(l) + TILE) + f->tiles + 1) +
               (p->permuted ? (int64_t)sizeof(int32_t) * a->rows : 0);
    f->build_s = timing_now_s() - t0;
fail:
    mem_free(stamp);
    mem_free(ucount);
    mem_free(cols);
    mem_free(dense);
    if (status != SPF_OK)
        sp_format_free(f);
    return status;
}

spf_status sp_colvec_to_dense(const sp_format *f, float *dense)
{
    const int32_t l = f->pattern.vec;
    const uint16_t *halves = (const uint16_t *)f->values;
    memset(dense, 0, (size_t)(f->rows * f->cols) * sizeof *dense);
    for (int64_t t = 0; t < f->tiles; t++)
        for (int64_t s = f->step_ptr[t]; s < f->step_ptr[t + 1]; s++)
            for (int rr = 0; rr < TILE; rr++)
                for (int j = 0; j < TILE; j++) {
                    int place = value_place(l, rr, j);
                    int64_t row = t * TILE + rr, col = f->gather[s * TILE + j];
                    if (place < 0 || halves[s * step_words(l) * 2 + place] == 0)
                        continue; /* not stored, a filler or +0 */
                    if (row >= f->rows || col < 0 || col >= f->cols)
                        return FAIL(SPF_ERR_PARSE, "structured format, tile %lld, step %lld, "
                                    "row %d, slot %d: a value at row %lld, column %lld, outside "
                                    "%lld × %lld", (long long)t, (long long)s, rr, j,
                                    (long long)row, (long long)col, (long long)f->rows,
                                    (long long)f->cols);
                    float v;
                    dtype_to_float(f->dtype, &halves[s * step_words(l) * 2 + place], &v, 1);
                    dense[(int64_t)f->row_map[row] * f->cols + col] += v;
                }
    return SPF_OK;
}
