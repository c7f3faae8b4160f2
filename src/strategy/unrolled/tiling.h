/* The tile space of the generated kernel for one (matrix, n): which
 * configurations exist, and the geometry of each (LO-SpMM §3.1
 * hierarchical 2-D tiling: a thread block computes an A_tile of m1 rows ×
 * a B_tile of n1 columns of C). The constraints (constraints.h) prune this
 * space; the geometry here is what they measure. */
#ifndef SPF_STRATEGY_UNROLLED_TILING_H
#define SPF_STRATEGY_UNROLLED_TILING_H

#include "strategy/unrolled/row_orders.h"
#include "spforge.h"

#include <stdint.h>

/* The problem a space is built for. */
typedef struct tile_problem {
    const spf_matrix *a;      /* borrowed; read during calls only                   */
    int64_t n;                /* columns of B and C, ≥ 1                            */
    const int32_t *row_order; /* m rows in tile order (a permutation from the
                                 reorder, LO-SpMM §4), or NULL for the identity;
                                 borrowed                                          */
    const row_orders *orders; /* one order per m1 (the reorder of each tile
                                 height), or NULL; where it holds an order for
                                 m1 that order replaces row_order; borrowed       */
} tile_problem;

/* The rows of p in tile order for A_tiles of m1 rows: p->orders' order for
 * m1 if it has one, else p->row_order (NULL: the identity). */
const int32_t *tile_problem_row_order(const tile_problem *p, int32_t m1);

typedef struct tile_space {
    spf_kernel_config *configs; /* count entries (owned; tile_space_free)          */
    int count;
} tile_space;

/* Every configuration of the space `which` (spf_tune_space in spforge.h
 * lists the values) that schedule_config_check accepts for n, grouped by
 * m1 (ascending): FULL is the paper's space and the low-cost search's
 * default, COMPACT the exhaustive tuner's default. This is the one
 * definition of both spaces; the tuner and the search take their lists
 * from here. */
spf_status tile_space_create(int64_t n, spf_tune_space which, tile_space *out);
void tile_space_free(tile_space *s); /* accepts NULL or a zeroed space */

/* Threads per block: n1 / v threads per group × ksplit groups. */
int64_t tiling_threads(const spf_kernel_config *cfg);

/* Thread blocks of the launch, LO-SpMM Eq. (1): ceil(m / m1) · ceil(n / n1). */
int64_t tiling_blocks(int64_t m, int64_t n, const spf_kernel_config *cfg);

/* COV_row (LO-SpMM §3.4): the coefficient of variation (population standard
 * deviation / mean) of nnz across the A_tiles of m1 consecutive rows of the
 * row order for m1 (tile_problem_row_order), the last tile as short as it
 * comes. 0 for a matrix without
 * nonzeros or a single tile. */
double tiling_row_cov(const tile_problem *p, int32_t m1);

/* WASTE_col (LO-SpMM §3.4): the padding ratio of the last column tile,
 * ceil(n / n1) · n1 / n − 1. */
double tiling_col_waste(int64_t n, int32_t n1);

#endif
