/* LO-SpMM §4.2 Algorithm 1: reorder the rows of A so that the rows sharing
 * columns meet in the same A_tile (m1 consecutive entries of the row list
 * the generated kernel runs, schedule.h), which lowers the tiles' non-empty
 * column count (nnc, the B rows a thread block loads) while keeping the
 * tiles' nonzero counts close (load balance).
 *
 * Rows are taken in ascending nnz order (ties by row index) and each goes
 * to the open tile (fewer rows than its capacity) whose nnc after taking
 * the row is smallest among the tiles whose nnz after taking it stays
 * within TH_nnz; when no open tile stays within TH_nnz, to the open tile
 * of smallest nnc after merging. Ties go to the tile of larger nnc before
 * merging (the one sharing more of the row's columns: on the DLMC dev set
 * this gave a lower mean nnc than preferring the emptier tile), then to
 * the smaller tile index, so the result is deterministic.
 *
 * Our reading of the paper where it is loose:
 * - TH_nnz. The paper sets TH_nnz = nnz / num_A_tile and compares a tile's
 *   nnz with it. Taken literally, the tiles can never all stay under the
 *   mean, so the last rows of each tile would always fall back to the
 *   smallest-nnc rule; we compare the tile's nnz after taking the row and
 *   allow a slack: TH_nnz = nnz · capacity / r · (1 + slack) for a tile
 *   of `capacity` rows out of the r non-empty rows, which is the paper's
 *   nnz / num_A_tile · (1 + slack) when m1 divides r and scales down for
 *   the one short tile (next point).
 * - Tile sizes. The paper lets a tile stop at any size below M1; our
 *   kernel's tiles are m1 consecutive entries of the row list, so every
 *   tile holding non-empty rows is filled to exactly m1 rows except the
 *   last of them, whose capacity is the remainder r − (T − 1)·m1 of the r
 *   non-empty rows (T = ceil(r / m1), the paper's num_A_tile).
 * - Empty rows. The paper removes them; the kernel writes C only for the
 *   rows in its row list, so they must still be somewhere: they fill the
 *   rest of tile T − 1 and the tiles after it, in ascending row index.
 *   Those tiles load no B row and store zeros, bias or ReLU(bias).
 * Within a tile rows are listed in ascending original index, so a block's
 * C stores go to ascending addresses.
 *
 * Cost: a bitset of columns per tile (T · ceil(k / 64) · 8 bytes); a row's merge with a tile is the
 * popcount of the row's column words not yet in the tile, over the words
 * the row touches only. Open tiles are kept sorted by nnc, and the scan
 * stops at the first tile whose nnc already exceeds the best merge found.
 * Measured on the 2-core development host (gcc 12, -O3, popcnt clone,
 * other builds running): the 33288×512 DLMC embedding at 0.95 (852171
 * nonzeros) reorders in 0.45–0.6 s for m1 = 32 (1041 tiles) and about
 * 1.9 s for m1 = 8 (4161 tiles); the rest of the DLMC dev set in under
 * 0.1 s each. */
#ifndef SPF_STRATEGY_UNROLLED_REORDER_H
#define SPF_STRATEGY_UNROLLED_REORDER_H

#include "spforge.h"

#include <stdint.h>

/* The default slack of TH_nnz over the mean nnz per tile. */
#define REORDER_NNZ_SLACK 0.25

/* Algorithm 1 alone, as described above.
 *   a:            the matrix (read during the call only)
 *   m1:           rows per A_tile, ≥ 1
 *   th_nnz_slack: TH_nnz = nnz / tiles · (1 + slack), finite and ≥ 0
 *                 (REORDER_NNZ_SLACK by default)
 *   row_order:    out, a->rows int32 (caller-owned): a permutation of
 *                 0 .. m − 1; tile t is entries [t·m1, (t+1)·m1) */
spf_status reorder_rows_greedy(const spf_matrix *a, int m1, double th_nnz_slack,
                               int32_t *row_order);

/* The row order the kernel runs: Algorithm 1's, kept only if its tiles'
 * max nnc and mean nnc are both at most the identity order's
 * (tile_nnc_stats), else the identity 0 .. m − 1. Same parameters as
 * reorder_rows_greedy; the tile limit of tile_nnc_stats applies.
 *
 * This guard goes beyond the paper, which always applies Algorithm 1: the
 * greedy fills tiles in ascending row nnz, blind to how the heavier rows
 * to come will fit, and on the DLMC dev set at 0.9 and 0.95 (m1 = 8, 16,
 * 32) it made 74 of 363 cases worse in max or mean nnc than the rows'
 * own order (rn50 initial_conv at m1 = 8: max 90 → 111; transformer q/k
 * layers: mean up to +3 %). Both must not grow since the max bounds the
 * slowest block and the mean the total B traffic; the identity is the
 * order the kernel runs without reordering (the schedule takes any
 * permutation, so empty rows need not come last there). Ties keep
 * Algorithm 1's order, whose TH_nnz balances the tiles' nonzeros. With
 * the guard the dev set loses no case and keeps geomean ratios after /
 * before of 0.953 in max, 0.922 in mean nnc and 0.757 in COV_row (without:
 * 0.957, 0.897, 0.761: cases that traded a higher max for a lower mean
 * now keep the identity). The check builds two schedules: on the
 * development host it adds 0.1–0.3 s to the 0.5–2.2 s Algorithm 1 takes on
 * the 33288×512 embedding (852171 nonzeros; m1 = 32 … 8). */
spf_status reorder_rows(const spf_matrix *a, int m1, double th_nnz_slack, int32_t *row_order);

#endif
