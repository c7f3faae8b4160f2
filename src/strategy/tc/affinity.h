/* Acc-SpMM's data-affinity-based row reordering (paper 002 §3.2,
 * Algorithm 1) for the tensor-core format (tc_format.h): rows that share
 * columns are placed next to each other, so that a window of TC_TILE rows
 * lists fewer distinct columns and CONDENSED mode cuts it into fewer
 * tiles. The kernel writes C row order[i] for format row i, so only A's
 * rows move; B and C keep their order (as in the paper, §4.3.1).
 *
 * The graph is A's (affinity_graph.h: a square matrix's indices, or the
 * bipartite graph of rows and columns). Two steps:
 *
 *   I. Dendrogram construction (lines 1-8, dendrogram.h), as in Rabbit
 *      Order (paper 002 ref. [32]), which it follows: vertices in ascending
 *      degree each merge into the neighbouring community of largest
 *      modularity gain ΔQ (Eq. 3.2) when that gain is positive.
 *  II. Ordering generation (lines 9-27): a DFS over the dendrogram gives
 *      every non-empty row a DFS place; from the first unvisited place a
 *      chain moves to the unvisited row sharing the most columns (common
 *      neighbours) with the current one, ties to the earlier DFS place,
 *      and restarts at the next unvisited place when no unvisited row
 *      shares a column.
 *
 * Where we depart from the paper, and why:
 *   - Candidates in step II. The paper searches every unvisited leaf for
 *     the most common neighbours: quadratic in the rows. Only a row that
 *     shares a column can have one, so we look through the current row's
 *     columns; each column lists its rows in DFS order and drops the
 *     visited ones as it meets them, and at most AFFINITY_SCAN_CAP
 *     unvisited rows are counted per column (AFFINITY_SCAN_BUDGET per step
 *     over all the row's columns, at least one per column). Without the
 *     caps every step through a hub column (a power-law graph's) would
 *     cost its degree. The rows counted are each column's earliest in DFS
 *     order, the ones the paper's tie rule favours. On the dev set's 41
 *     matrices (the guard's note), counting every sharing row leaves 1.5 %
 *     fewer tiles in all (96201 against 97596 after the guard;
 *     amazon_photo 5667 against 6241) and takes 10 times as long on R-MAT
 *     2^20 (29 s against 3 s).
 *   - Empty rows take no part and come last, ascending.
 *   - A guard: the chain's order is kept unless the DFS order alone, or
 *     the rows' own order (empty rows last), has fewer CONDENSED tiles.
 *     The paper always reorders. Of the 41 graphs and scientific matrices
 *     of the dev set, the chain had fewer tiles than the DFS order on 33
 *     and more on 5, meshes among them (delaunay_n16: 14306 against
 *     13224); it had more than the rows' own order on 8, FEM and banded
 *     ones (ex9: 1340 against 1106; the attention masks of
 *     cerespmm/kernel_inputs, banded already, by 0.3-2.5 %), and so did the
 *     DFS order. R-MAT's own order, recursive quadrants, is as good as the
 *     chain's (2^20: 650918 tiles against 651395). Counting a window's
 *     distinct columns is one pass over the nonzeros per order.
 *
 * Cost: step I near-linear as Rabbit Order; step II at most
 * AFFINITY_SCAN_BUDGET counted rows per step plus each column entry
 * dropped once; both sequential, as in the paper. threads split the
 * column lists' construction and the guard's tile counts. On the 2-core
 * development host: R-MAT 2^20 × 2^20 with 11M nonzeros in about 3 s; a
 * uniform random 2^20 × 2^20 with 10 per row, no structure at all, in
 * 7.5 s, step I's worst case: nearly every vertex merges and the lists
 * carried up come to 4.3 times the edges (bench/results/tc-format/
 * affinity-cpu.txt). */
#ifndef SPF_STRATEGY_TC_AFFINITY_H
#define SPF_STRATEGY_TC_AFFINITY_H

#include "spforge.h"

#include <stdint.h>

enum {
    AFFINITY_SCAN_CAP = 32,     /* unvisited rows counted per shared column and step */
    AFFINITY_SCAN_BUDGET = 1024 /* unvisited rows counted per step, over all columns */
};

/* The data-affinity row order of a.
 *   a:       the matrix (read during the call only)
 *   threads: host threads, 0 = all cores
 *   order:   out, a permutation of 0 .. rows − 1 (rows int32, mem_alloc'd:
 *            the caller frees it with the library's allocator);
 *            order[i] is the original row placed at position i. Set to
 *            NULL first, and on failure.
 *   seconds: out, wall time of the call; may be NULL
 * SPF_ERR_OVERFLOW for a non-square matrix with rows + cols > INT32_MAX
 * (its graph's vertex ids are int32). */
spf_status tc_affinity_order(const spf_matrix *a, int threads, int32_t **order, double *seconds);

/* The matrix with row i of *out = row order[i] of a (values carried).
 *   order: a->rows int32, a permutation (checked: SPF_ERR_INVALID_ARGUMENT
 *          names the first entry out of range or repeated)
 *   out:   set to NULL first; a new matrix (spf_matrix_free) */
spf_status tc_permute_rows(const spf_matrix *a, const int32_t *order, spf_matrix **out);

#endif
