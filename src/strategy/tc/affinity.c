/* The data-affinity row order (affinity.h): the graph's column lists,
 * step I (dendrogram.h), step II's chain over the DFS order, the guard,
 * and the permutation of a matrix's rows. */
#include "strategy/tc/affinity.h"

#include "core/alloc.h"
#include "core/budget.h"
#include "core/error.h"
#include "core/parallel.h"
#include "gpu/timing.h"
#include "strategy/tc/affinity_graph.h"
#include "strategy/tc/dendrogram.h"
#include "strategy/tc/tc_format.h"

#include <string.h>

enum { NONE = -1, WINDOW_GRAIN = 256 };

/* Step II's state. Rows are named by their DFS place, and the column
 * lists hold places, ascending. */
typedef struct chain {
    const affinity_graph *g;
    const int32_t *dfs_row;  /* place → row                                     */
    int64_t *head;           /* cols: each column's first entry not known to be
                                visited (the visited ones before it dropped)     */
    unsigned char *visited;  /* per place                                       */
    int32_t *count;          /* per place, zero between steps: common columns  */
    int32_t *touched;        /* the places count holds                          */
} chain;

/* The unvisited place sharing the most columns with the row at place p,
 * ties to the smaller place (the earlier in DFS, Algorithm 1 line 18 and
 * §3.2's example); NONE if no unvisited row shares a column. */
static int32_t next_in_chain(chain *ch, int64_t p)
{
    const spf_matrix *a = ch->g->a;
    const int64_t *t_ptr = ch->g->t_ptr;
    int32_t *t_idx = ch->g->t_idx;
    int32_t r = ch->dfs_row[p], kept[AFFINITY_SCAN_CAP];
    int64_t first = a->row_ptr[r], last = a->row_ptr[r + 1], touched = 0;
    int64_t cap = AFFINITY_SCAN_BUDGET / (last - first);
    cap = cap < 1 ? 1 : cap > AFFINITY_SCAN_CAP ? AFFINITY_SCAN_CAP : cap;
    /* each column costs two dependent cache misses (its head, then its
     * entries): asked for ahead of the scan for all the row's columns,
     * they overlap (the chain on R-MAT 2^20, 11M nonzeros: 2.2 → 1.3 s) */
    for (int64_t e = first; e < last; e++) {
        __builtin_prefetch(&ch->head[a->col_idx[e]]);
        __builtin_prefetch(&t_ptr[a->col_idx[e] + 1]);
    }
    for (int64_t e = first; e < last; e++)
        __builtin_prefetch(&t_idx[ch->head[a->col_idx[e]]]);
    for (int64_t e = first; e < last; e++) {
        int32_t c = a->col_idx[e];
        int64_t i = ch->head[c], end = t_ptr[c + 1];
        int n = 0;
        for (; i < end && n < cap; i++) {
            int32_t q = t_idx[i];
            if (ch->visited[q])
                continue;
            kept[n++] = q;
            if (ch->count[q]++ == 0)
                ch->touched[touched++] = q;
        }
        /* the unvisited entries met close up against i, in order: the
         * visited ones before them are never read again */
        ch->head[c] = i - n;
        memcpy(t_idx + i - n, kept, (size_t)n * sizeof *kept);
    }
    int32_t best = NONE;
    for (int64_t i = 0; i < touched; i++) {
        int32_t q = ch->touched[i];
        if (best == NONE || ch->count[q] > ch->count[best] ||
            (ch->count[q] == ch->count[best] && q < best))
            best = q;
    }
    for (int64_t i = 0; i < touched; i++)
        ch->count[ch->touched[i]] = 0;
    return best;
}

/* Algorithm 1 lines 9-27 over the live rows: order[0 .. live). */
static void chain_rows(chain *ch, int64_t live, int32_t *order)
{
    int64_t out = 0, next = 0;
    while (out < live) {
        while (ch->visited[next])
            next++;
        for (int64_t p = next; p != NONE; p = next_in_chain(ch, p)) {
            ch->visited[p] = 1;
            order[out++] = ch->dfs_row[p];
        }
    }
}

/* order[live ..) = the empty rows, ascending. */
static void append_empty_rows(const spf_matrix *a, int32_t *order, int64_t live)
{
    for (int64_t r = 0; r < a->rows; r++)
        if (a->row_ptr[r + 1] == a->row_ptr[r])
            order[live++] = (int32_t)r;
}

/* The CONDENSED tiles of the rows taken in an order: each window's
 * distinct columns (a column stamped with the last window that listed it,
 * one stamp array per worker) rounded up to whole tiles. */
typedef struct tiles_job {
    const affinity_graph *g;
    const int32_t *order;
    int64_t *tiles;  /* per worker */
} tiles_job;

static spf_status count_tiles(void *ctx, int64_t begin, int64_t end, int worker)
{
    tiles_job *j = ctx;
    const spf_matrix *a = j->g->a;
    int64_t *stamp = j->g->slot + worker * a->cols;
    for (int64_t w = begin; w < end; w++) {
        int64_t distinct = 0, last = (w + 1) * TC_TILE < a->rows ? (w + 1) * TC_TILE : a->rows;
        for (int64_t i = w * TC_TILE; i < last; i++) {
            int32_t r = j->order[i];
            for (int64_t p = a->row_ptr[r]; p < a->row_ptr[r + 1]; p++)
                if (stamp[a->col_idx[p]] != w) {
                    stamp[a->col_idx[p]] = w;
                    distinct++;
                }
        }
        j->tiles[worker] += (distinct + TC_TILE - 1) / TC_TILE;
    }
    return SPF_OK;
}

/* tiles: g->chunks int64 of scratch, the sum in tiles[0]. */
static spf_status order_tiles(const affinity_graph *g, const int32_t *order, int64_t *tiles)
{
    const spf_matrix *a = g->a;
    tiles_job j = {.g = g, .order = order, .tiles = tiles};
    memset(g->slot, 0xff, (size_t)(g->chunks * a->cols) * sizeof *g->slot); /* stamps −1 */
    memset(tiles, 0, (size_t)g->chunks * sizeof *tiles);
    spf_status st = parallel_for((a->rows + TC_TILE - 1) / TC_TILE, WINDOW_GRAIN,
                                 (int)g->chunks, count_tiles, &j);
    for (int64_t k = 1; k < g->chunks; k++)
        tiles[0] += tiles[k];
    return st;
}

spf_status tc_affinity_order(const spf_matrix *a, int threads, int32_t **order, double *seconds)
{
    CHECK_ARG(order != NULL);
    *order = NULL;
    if (seconds)
        *seconds = 0.0;
    CHECK_ARG(a != NULL && threads >= 0);
    /* The graph, the dendrogram and the orders: a few dozen bytes a row and a
     * nonzero (a bound, checked before any of it is allocated). */
    spf_status status = budget_check("affinity reordering", bytes_add(bytes_mul(a->rows, 64),
                                                                      bytes_mul(a->nnz, 32)),
                                     "its graph, dendrogram and orders");
    if (status != SPF_OK)
        return status;
    double t0 = timing_now_s();
    affinity_graph g = {0};
    dendrogram d = {0};
    chain ch = {.g = &g};
    size_t rows = (size_t)(a->rows ? a->rows : 1);
    int32_t *out = NULL, *dfs_row = NULL, *count = NULL, *touched = NULL;
    int64_t *tiles = NULL;
    unsigned char *visited = NULL;
    TRY(affinity_graph_init(&g, a, threads));
    out = mem_alloc_array(rows, sizeof *out);
    dfs_row = mem_alloc_array(rows, sizeof *dfs_row);
    if (!out || !dfs_row)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "affinity: orders of %lld rows", (long long)a->rows);
    TRY(affinity_graph_columns(&g, NULL, a->rows, 0));
    TRY(dendrogram_build(&g, &d));
    int64_t live;
    TRY(dendrogram_rows(&g, &d, dfs_row, &live));
    dendrogram_free(&d);

    TRY(affinity_graph_columns(&g, dfs_row, live, 1));
    count = mem_calloc(rows, sizeof *count);
    touched = mem_alloc_array(rows, sizeof *touched);
    visited = mem_calloc(rows, sizeof *visited);
    tiles = mem_alloc_array((size_t)g.chunks, sizeof *tiles);
    if (!count || !touched || !visited || !tiles)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "affinity: chain over %lld rows", (long long)live);
    ch = (chain){.g = &g, .dfs_row = dfs_row, .head = g.slot, .visited = visited,
                 .count = count, .touched = touched};
    memcpy(ch.head, g.t_ptr, (size_t)a->cols * sizeof *ch.head);
    chain_rows(&ch, live, out);
    append_empty_rows(a, out, live);

    /* the guard (affinity.h): the DFS order, then the rows' own order,
     * replace the chain's if they have fewer tiles */
    int32_t *own = touched;
    int64_t n = 0;
    for (int64_t r = 0; r < a->rows; r++)
        if (a->row_ptr[r + 1] > a->row_ptr[r])
            own[n++] = (int32_t)r;
    append_empty_rows(a, own, n);
    append_empty_rows(a, dfs_row, live);
    int64_t best;
    TRY(order_tiles(&g, out, tiles));
    best = tiles[0];
    const int32_t *alternative[2] = {dfs_row, own};
    for (int i = 0; i < 2; i++) {
        TRY(order_tiles(&g, alternative[i], tiles));
        if (tiles[0] < best) {
            best = tiles[0];
            memcpy(out, alternative[i], rows * sizeof *out);
        }
    }
    *order = out;
    out = NULL;
    if (seconds)
        *seconds = timing_now_s() - t0;
fail:
    mem_free(out);
    mem_free(dfs_row);
    mem_free(count);
    mem_free(touched);
    mem_free(visited);
    mem_free(tiles);
    dendrogram_free(&d);
    affinity_graph_free(&g);
    return status;
}

spf_status tc_permute_rows(const spf_matrix *a, const int32_t *order, spf_matrix **out)
{
    CHECK_ARG(out != NULL);
    *out = NULL;
    CHECK_ARG(a != NULL && (order != NULL || a->rows == 0));
    spf_status status = SPF_OK;
    int64_t *row_ptr = mem_alloc_array((size_t)a->rows + 1, sizeof *row_ptr);
    int32_t *col_idx = mem_alloc_array((size_t)(a->nnz ? a->nnz : 1), sizeof *col_idx);
    float *values = mem_alloc_array((size_t)(a->nnz ? a->nnz : 1), sizeof *values);
    unsigned char *seen = mem_calloc((size_t)(a->rows ? a->rows : 1), 1);
    if (!row_ptr || !col_idx || !values || !seen)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "permute rows: %lld rows, %lld nonzeros",
                  (long long)a->rows, (long long)a->nnz);
    row_ptr[0] = 0;
    for (int64_t i = 0; i < a->rows; i++) {
        int32_t r = order[i];
        if (r < 0 || r >= a->rows || seen[r])
            FAIL_GOTO(SPF_ERR_INVALID_ARGUMENT, "permute rows: order[%lld] = %d is %s",
                      (long long)i, (int)r,
                      r < 0 || r >= a->rows ? "out of range" : "repeated");
        seen[r] = 1;
        int64_t from = a->row_ptr[r], len = a->row_ptr[r + 1] - from;
        if (len > 0) {
            memcpy(col_idx + row_ptr[i], a->col_idx + from, (size_t)len * sizeof *col_idx);
            memcpy(values + row_ptr[i], a->values + from, (size_t)len * sizeof *values);
        }
        row_ptr[i + 1] = row_ptr[i] + len;
    }
    TRY(spf_matrix_create_csr(a->rows, a->cols, a->nnz, row_ptr, col_idx, values, 0, out));
fail:
    mem_free(row_ptr);
    mem_free(col_idx);
    mem_free(values);
    mem_free(seen);
    return status;
}
