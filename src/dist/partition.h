/* Distributed SpMM's data layout (issue 15), host code: how A's rows are
 * split over P ranks and what each rank must receive of B.
 *
 * A (M×K) is split by rows into P contiguous parts, balanced by work, not
 * by rows: a part's cost is its nonzeros plus DIST_ROW_COST per row, and
 * the split minimises the largest part's cost exactly (a binary search on
 * that bound, each probe a greedy pass). Rank r computes C's rows of part
 * r.
 *
 * B (K×N) is held either whole by every rank (replicated: no exchange) or
 * by rows (sharded: rank s holds rows b_start[s] .. b_start[s+1] - 1). In
 * the sharded case rank r needs the rows of B that the columns of its part
 * of A name; it splits its part into
 *   A_own:    the columns of rows rank r holds, renumbered into its own
 *             shard (col − b_start[r]): computed at once, while
 *   A_remote: the other columns, renumbered into the receive buffer, which
 *             holds the rows received from each other rank in rank order,
 *             arrives (the 1-D algorithm with the needed rows gathered;
 *             both parts are ordinary SpMM plans of any strategy).
 * Every rank holds the whole pattern of A, so each works out every other
 * rank's needs itself: no metadata is exchanged. */
#ifndef SPF_DIST_PARTITION_H
#define SPF_DIST_PARTITION_H

#include "spforge.h"

#include <stdint.h>

enum { DIST_MAX_RANKS = 65536 };

/* What a row costs beside its nonzeros, in nonzeros: its output row, its
 * sub-warp's start and its dependent loads. Fitted on two ranks' times of
 * the R-MAT graph of 2^22 vertices at N = 128 (generic plans, H100, the
 * 2-GPU run of 2026-11-27: a nonzero 0.089 ms per million, a row 0.381,
 * 4.3 nonzeros; the whole graph's 6.25 ms one-GPU time agrees); with one
 * per row rank 1, holding most of the (short and empty) rows, took 3.56
 * ms against rank 0's 2.73. */
enum { DIST_ROW_COST = 4 };

/* row_start (parts + 1 entries): part p is rows row_start[p] ..
 * row_start[p+1] - 1 of a, balanced as above; no part is empty when a has
 * at least `parts` rows. */
spf_status dist_partition_rows(const spf_matrix *a, int parts, int64_t *row_start);

/* The largest part's cost (nonzeros + DIST_ROW_COST · rows) and the mean's, of a split. */
void dist_partition_cost(const spf_matrix *a, int parts, const int64_t *row_start,
                         int64_t *largest, double *mean);

/* Every rank's volumes at once, in one pass over A (O(nnz + K)), for
 * statistics and the cost model: per rank (arrays of `ranks`) its
 * nonzeros in A_own and A_remote, the rows of B it receives (all, and
 * those from ranks of other groups of `group` consecutive ranks: GPUs of
 * other hosts) and sends, and the ranks it receives from.
 *
 * The ranks form layers of `layer_ranks` consecutive ones (the 1.5-D
 * algorithm: ranks / layer_ranks copies of B, each split over one layer's
 * ranks by b_start, of layer_ranks + 1 entries; rows are exchanged only
 * inside a layer). layer_ranks = ranks is the 1-D split, 1 replication. */
typedef struct dist_volume {
    int64_t *own_nnz, *remote_nnz, *recv_rows, *recv_rows_far, *send_rows;
    int32_t *recv_peers;
} dist_volume;

spf_status dist_volume_make(const spf_matrix *a, int ranks, int layer_ranks, int group,
                            const int64_t *row_start, const int64_t *b_start, dist_volume *out);
void dist_volume_free(dist_volume *v); /* accepts a zeroed one */

/* What rank `rank` of `ranks` does in the sharded case. */
typedef struct dist_exchange {
    int ranks, rank;
    int64_t row0, rows;       /* its rows of A and C                                  */
    spf_matrix *own;          /* rows × (its B rows): A_own                          */
    spf_matrix *remote;       /* rows × recv_rows: A_remote (NULL when it needs none) */
    int64_t recv_rows;        /* rows of B it receives, from all ranks               */
    int64_t *recv_count;      /* ranks: rows received from each (0 from itself)      */
    int64_t *recv_offset;     /* ranks + 1: where each one's rows start in the buffer */
    int64_t send_rows;        /* rows of its B shard it sends, to all ranks          */
    int64_t *send_count;      /* ranks: rows sent to each                            */
    int64_t *send_offset;     /* ranks + 1                                           */
    int32_t *send_index;      /* send_rows: the rows of its shard to send, in order
                                 (row numbers within its shard)                      */
} dist_exchange;

/* Rank `rank`'s exchange for a, A's rows split by row_start and B's by
 * b_start (both ranks + 1 entries; b_start covers a's K columns). */
spf_status dist_exchange_make(const spf_matrix *a, int ranks, int rank, const int64_t *row_start,
                              const int64_t *b_start, dist_exchange *out);
void dist_exchange_free(dist_exchange *x); /* accepts a zeroed one */

/* x's share as the public info (out->size set by the caller), with the
 * rank's rows of B b_row0 .. b_row0 + b_rows - 1. */
spf_status dist_layout_info(const dist_exchange *x, int64_t b_row0, int64_t b_rows,
                            spf_dist_layout_info *out);

#endif
