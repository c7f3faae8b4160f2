/* The column lists (Aᵀ in a chosen row order) in parallel: the order is
 * cut into chunks, each chunk counts its columns, the counts' prefix sums
 * (column by column, chunk by chunk) give every chunk its own slots in
 * each column, and each chunk fills them. */
#include "strategy/tc/affinity_graph.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/parallel.h"

#include <string.h>

spf_status affinity_graph_init(affinity_graph *g, const spf_matrix *a, int threads)
{
    memset(g, 0, sizeof *g);
    g->a = a;
    g->square = a->rows == a->cols;
    g->n = g->square ? a->rows : a->rows + a->cols;
    g->threads = threads;
    if (g->n > INT32_MAX)
        return FAIL(SPF_ERR_OVERFLOW, "affinity: %lld×%lld has %lld row and column vertices, "
                    "more than int32 ids hold", (long long)a->rows, (long long)a->cols,
                    (long long)g->n);
    /* one chunk per worker, at most nnz / cols of them, so that the slots
     * take no more memory than the lists */
    int64_t most = a->cols > 0 ? a->nnz / a->cols : 1;
    g->chunks = parallel_workers(a->rows, 1, threads);
    g->chunks = g->chunks < most ? g->chunks : most > 1 ? most : 1;
    g->t_ptr = mem_alloc_array((size_t)a->cols + 1, sizeof *g->t_ptr);
    g->t_idx = mem_alloc_array((size_t)(a->nnz ? a->nnz : 1), sizeof *g->t_idx);
    g->slot = mem_alloc_array((size_t)(a->cols ? g->chunks * a->cols : 1), sizeof *g->slot);
    if (!g->t_ptr || !g->t_idx || !g->slot) {
        affinity_graph_free(g);
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "affinity: column lists of %lld nonzeros",
                    (long long)a->nnz);
    }
    return SPF_OK;
}

void affinity_graph_free(affinity_graph *g)
{
    mem_free(g->t_ptr);
    mem_free(g->t_idx);
    mem_free(g->slot);
    memset(g, 0, sizeof *g);
}

typedef struct columns_job {
    affinity_graph *g;
    const int32_t *rows;
    int64_t chunk;  /* entries of rows per chunk */
    int as_place;
    int fill;       /* 0: count into slot, 1: fill t_idx from slot */
} columns_job;

static spf_status columns_chunk(void *ctx, int64_t begin, int64_t end, int worker)
{
    (void)worker;
    columns_job *j = ctx;
    const spf_matrix *a = j->g->a;
    int64_t *slot = j->g->slot + begin / j->chunk * a->cols;
    int32_t *t_idx = j->g->t_idx;
    for (int64_t i = begin; i < end; i++) {
        int32_t r = j->rows ? j->rows[i] : (int32_t)i;
        for (int64_t p = a->row_ptr[r]; p < a->row_ptr[r + 1]; p++) {
            if (j->fill)
                t_idx[slot[a->col_idx[p]]++] = j->as_place ? (int32_t)i : r;
            else
                slot[a->col_idx[p]]++;
        }
    }
    return SPF_OK;
}

spf_status affinity_graph_columns(affinity_graph *g, const int32_t *rows, int64_t count,
                                  int as_place)
{
    spf_status status = SPF_OK;
    int64_t cols = g->a->cols;
    int64_t chunk = count > g->chunks ? (count + g->chunks - 1) / g->chunks : 1;
    int64_t chunks = (count + chunk - 1) / chunk;
    columns_job j = {.g = g, .rows = rows, .chunk = chunk, .as_place = as_place};
    memset(g->slot, 0, (size_t)(chunks * cols) * sizeof *g->slot);
    TRY(parallel_for(count, chunk, g->threads, columns_chunk, &j));
    int64_t at = 0;
    for (int64_t c = 0; c < cols; c++) {
        g->t_ptr[c] = at;
        for (int64_t k = 0; k < chunks; k++) {
            int64_t n = g->slot[k * cols + c];
            g->slot[k * cols + c] = at;
            at += n;
        }
    }
    g->t_ptr[cols] = at;
    j.fill = 1;
    TRY(parallel_for(count, chunk, g->threads, columns_chunk, &j));
fail:
    return status;
}
