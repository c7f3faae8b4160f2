/* Statistics of a matrix's A_tiles (LO-SpMM §3.1: m1 consecutive entries
 * of a row list per thread block) as the generated kernel's schedule cuts
 * them: the non-empty columns per tile (nnc, the B rows a block loads; what
 * §4's reordering lowers) and COV_row (§3.4: the coefficient of variation
 * of the nonzeros per tile, the load balance the paper bounds by 0.25). */
#ifndef SPF_STRATEGY_UNROLLED_TILE_STATS_H
#define SPF_STRATEGY_UNROLLED_TILE_STATS_H

#include "spforge.h"

#include <stdint.h>

typedef struct tile_stats {
    int64_t tiles;    /* ceil(m / m1), every tile (empty-row tiles included) */
    int64_t max_nnc;
    double mean_nnc;
    int64_t max_nnz;  /* most nonzeros in one tile (the rank model's NNZ_max) */
    double cov_row;   /* stddev / mean of nnz per tile; 0 without nonzeros   */
} tile_stats;

/* Compute them for the row order row_order (a permutation of 0 .. m − 1,
 * caller-owned) or the identity (NULL); m1 ≥ 1. Tiles are cut as
 * schedule_create cuts them, on the host, with no limit on their number. */
spf_status tile_nnc_stats(const spf_matrix *a, const int32_t *row_order, int m1,
                          tile_stats *out);

#endif
