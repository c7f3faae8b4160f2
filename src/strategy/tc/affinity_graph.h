/* A matrix read as the graph of the data-affinity reordering (affinity.h,
 * paper 002 §3.2: "each node in the graph corresponds to an index of a row
 * or a column"): a square matrix is a graph on its n indices with an edge
 * i–j per nonzero (i, j) seen from both ends (A + Aᵀ); any other shape is
 * the bipartite graph of its rows (vertices 0 .. rows − 1) and columns
 * (rows .. rows + cols − 1). Nothing is copied: a vertex's neighbours are
 * its row of A and its column of Aᵀ, which is built here (in parallel),
 * in any order of the rows the caller asks for. */
#ifndef SPF_STRATEGY_TC_AFFINITY_GRAPH_H
#define SPF_STRATEGY_TC_AFFINITY_GRAPH_H

#include "core/matrix.h"

#include <stdint.h>

typedef struct affinity_graph {
    const spf_matrix *a;
    int64_t n;       /* vertices: rows (square) or rows + cols                     */
    int square;
    int threads;     /* host threads for the column lists, 0 = all cores           */
    int64_t chunks;  /* pieces the column lists are built in                       */
    int64_t *t_ptr;  /* cols + 1: the column lists' offsets                        */
    int32_t *t_idx;  /* nnz: each column's rows (or their places in an order)      */
    int64_t *slot;   /* chunks × cols: the build's counts and cursors, free to use
                        for anything else between builds                           */
} affinity_graph;

/* Allocate the lists for a (zeroed first; affinity_graph_free). The lists
 * are not filled yet. SPF_ERR_OVERFLOW when the vertices do not fit int32. */
spf_status affinity_graph_init(affinity_graph *g, const spf_matrix *a, int threads);

void affinity_graph_free(affinity_graph *g); /* accepts a zeroed graph */

/* Fill the column lists with rows[0 .. count) taken in that order (NULL:
 * rows 0 .. count − 1), each stored as itself or, with as_place, as its
 * index in rows: every column then lists them in that order, whatever the
 * thread count. Rows left out must be empty. */
spf_status affinity_graph_columns(affinity_graph *g, const int32_t *rows, int64_t count,
                                  int as_place);

/* The neighbours of vertex v (the lists filled with rows as themselves):
 * up to two runs of ids, each plus a shift; returns how many runs. */
static inline int affinity_neighbors(const affinity_graph *g, int64_t v, const int32_t *run[2],
                                     int64_t len[2], int64_t shift[2])
{
    const spf_matrix *a = g->a;
    int count = 0;
    if (v < a->rows) {
        run[count] = a->col_idx + a->row_ptr[v];
        len[count] = a->row_ptr[v + 1] - a->row_ptr[v];
        shift[count++] = g->square ? 0 : a->rows;
    }
    if (g->square || v >= a->rows) {
        int64_t c = g->square ? v : v - a->rows;
        run[count] = g->t_idx + g->t_ptr[c];
        len[count] = g->t_ptr[c + 1] - g->t_ptr[c];
        shift[count++] = 0;
    }
    return count;
}

#endif
