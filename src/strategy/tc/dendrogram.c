#include "strategy/tc/dendrogram.h"

#include "core/alloc.h"
#include "core/error.h"

#include <string.h>

enum { NONE = -1 };

static int32_t find_root(int32_t *up, int32_t v)
{
    while (up[v] != v) {
        up[v] = up[up[v]]; /* path halving */
        v = up[v];
    }
    return v;
}

static void gather(dendrogram *d, int32_t v, int32_t x, int64_t w, int64_t *touched)
{
    int32_t r = find_root(d->up, x);
    if (r == v)
        return; /* inside the community */
    if (d->acc[r] == 0)
        d->touched[(*touched)++] = r;
    d->acc[r] += w;
}

/* v's turn (Algorithm 1 lines 3-7). Merging communities u and v adds to
 * Eq. 3.2's sum the pairs across them: ΔQ = 2·(w_uv / 2m − k_u·k_v / (2m)²)
 * with w_uv the edges between them, as Rabbit Order has it. So the largest
 * ΔQ is the largest w_uv · 2m − k_u · k_v, positive exactly when ΔQ is.
 * 2m = 2·nnz: every nonzero is an edge seen from both ends. */
static spf_status take_turn(const affinity_graph *g, dendrogram *d, int32_t v)
{
    int64_t touched = 0;
    const int32_t *run[2];
    int64_t len[2], shift[2];
    int runs = affinity_neighbors(g, v, run, len, shift);
    for (int i = 0; i < runs; i++)
        for (int64_t j = 0; j < len[i]; j++)
            gather(d, v, (int32_t)(run[i][j] + shift[i]), 1, &touched);
    for (int32_t c = d->child[v]; c != NONE; c = d->sibling[c]) {
        for (int64_t j = 0; j < d->list_len[c]; j++)
            gather(d, v, d->list[c][j].to, d->list[c][j].w, &touched);
        mem_free(d->list[c]);
        d->list[c] = NULL;
        d->list_len[c] = 0;
    }
    double two_m = 2.0 * (double)g->a->nnz, best_gain = 0.0;
    int32_t best = NONE;
    for (int64_t i = 0; i < touched; i++) {
        int32_t u = d->touched[i];
        double gain = (double)d->acc[u] * two_m - (double)d->k[u] * (double)d->k[v];
        if (gain > best_gain || (gain == best_gain && best != NONE && u < best))
            best_gain = gain, best = u;
    }
    spf_status status = SPF_OK;
    if (best != NONE) {
        d->up[v] = best;
        d->k[best] += d->k[v];
        d->sibling[v] = d->child[best];
        d->child[best] = v;
        /* best's turn is still to come: it gathers v's edges then (a root
         * whose turn is over never merges, so never needs them) */
        if (!d->done[best] && touched > 1) {
            dendrogram_link *l = mem_alloc_array((size_t)touched - 1, sizeof *l);
            int64_t n = 0;
            for (int64_t i = 0; l && i < touched; i++)
                if (d->touched[i] != best)
                    l[n++] = (dendrogram_link){.w = d->acc[d->touched[i]], .to = d->touched[i]};
            d->list[v] = l;
            d->list_len[v] = n;
            if (!l)
                status = FAIL(SPF_ERR_OUT_OF_MEMORY, "affinity: %lld edges of vertex %d",
                              (long long)touched, (int)v);
        }
    }
    for (int64_t i = 0; i < touched; i++)
        d->acc[d->touched[i]] = 0;
    d->done[v] = 1;
    return status;
}

void dendrogram_free(dendrogram *d)
{
    for (int64_t v = 0; d->list && v < d->n; v++)
        mem_free(d->list[v]);
    mem_free(d->up);
    mem_free(d->k);
    mem_free(d->child);
    mem_free(d->sibling);
    mem_free(d->list);
    mem_free(d->list_len);
    mem_free(d->acc);
    mem_free(d->touched);
    mem_free(d->done);
    memset(d, 0, sizeof *d);
}

spf_status dendrogram_build(const affinity_graph *g, dendrogram *d)
{
    memset(d, 0, sizeof *d);
    spf_status status = SPF_OK;
    int64_t n = g->n, maxdeg = 0;
    size_t vertices = (size_t)(n ? n : 1);
    int64_t *bucket = NULL;
    int32_t *by_degree = mem_alloc_array(vertices, sizeof *by_degree);
    d->n = n;
    d->up = mem_alloc_array(vertices, sizeof *d->up);
    d->k = mem_alloc_array(vertices, sizeof *d->k);
    d->child = mem_alloc_array(vertices, sizeof *d->child);
    d->sibling = mem_alloc_array(vertices, sizeof *d->sibling);
    d->list = mem_calloc(vertices, sizeof *d->list);
    d->list_len = mem_calloc(vertices, sizeof *d->list_len);
    d->acc = mem_calloc(vertices, sizeof *d->acc);
    d->touched = mem_alloc_array(vertices, sizeof *d->touched);
    d->done = mem_calloc(vertices, sizeof *d->done);
    if (!by_degree || !d->up || !d->k || !d->child || !d->sibling || !d->list ||
        !d->list_len || !d->acc || !d->touched || !d->done)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "affinity: dendrogram of %lld vertices", (long long)n);
    for (int64_t v = 0; v < n; v++) {
        const int32_t *run[2];
        int64_t len[2], shift[2];
        int runs = affinity_neighbors(g, v, run, len, shift);
        d->k[v] = 0;
        for (int i = 0; i < runs; i++)
            d->k[v] += len[i];
        maxdeg = d->k[v] > maxdeg ? d->k[v] : maxdeg;
        d->up[v] = (int32_t)v;
        d->child[v] = d->sibling[v] = NONE;
    }
    /* ascending degree, ties by index: a counting sort */
    bucket = mem_calloc((size_t)maxdeg + 2, sizeof *bucket);
    if (!bucket)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "affinity: degrees up to %lld", (long long)maxdeg);
    for (int64_t v = 0; v < n; v++)
        bucket[d->k[v] + 1]++;
    for (int64_t i = 0; i <= maxdeg; i++)
        bucket[i + 1] += bucket[i];
    for (int64_t v = 0; v < n; v++)
        by_degree[bucket[d->k[v]]++] = (int32_t)v;
    for (int64_t i = bucket[0]; i < n; i++) /* isolated vertices (degree 0) stay alone */
        TRY(take_turn(g, d, by_degree[i]));
fail:
    mem_free(by_degree);
    mem_free(bucket);
    if (status != SPF_OK)
        dendrogram_free(d);
    return status;
}

spf_status dendrogram_rows(const affinity_graph *g, const dendrogram *d, int32_t *rows,
                           int64_t *count)
{
    const spf_matrix *a = g->a;
    int32_t *stack = mem_alloc_array((size_t)(d->n ? d->n : 1), sizeof *stack);
    *count = 0;
    if (!stack)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "affinity: DFS of %lld vertices", (long long)d->n);
    for (int64_t root = 0; root < d->n; root++) {
        if (d->up[root] != root)
            continue;
        int64_t top = 0;
        stack[top++] = (int32_t)root;
        while (top > 0) {
            int32_t x = stack[--top];
            if (x < a->rows && a->row_ptr[x + 1] > a->row_ptr[x])
                rows[(*count)++] = x;
            /* the list runs latest merge first: pushed in its order, the
             * earliest pops first */
            for (int32_t c = d->child[x]; c != NONE; c = d->sibling[c])
                stack[top++] = c;
        }
    }
    mem_free(stack);
    return SPF_OK;
}
