/* One row order per A_tile height. LO-SpMM §4.2 reorders the rows for a
 * given tile size, so a search over configurations of several m1 needs
 * Algorithm 1's order (reorder_rows, plan/reorder.h) once for each m1 in
 * its list: the generator runs each configuration on the order of its m1,
 * and the balance constraint (§3.4, COV_row) and the rank features measure
 * the tiles of that order. */
#ifndef SPF_STRATEGY_UNROLLED_ROW_ORDERS_H
#define SPF_STRATEGY_UNROLLED_ROW_ORDERS_H

#include "spforge.h"

#include <stdint.h>

typedef struct row_orders {
    int count;         /* distinct m1 values                                  */
    int32_t *m1;       /* count values, ascending (owned)                     */
    int32_t **order;   /* count orders of a->rows entries, or NULL for the
                          identity: for m1 = 1, and where the m1 has more
                          tiles than a schedule takes (its configurations
                          cannot be generated); owned                         */
} row_orders;

/* reorder_rows(a, m1, REORDER_NNZ_SLACK, ...) for every distinct m1 > 1 of
 * configs[0 .. count), the m1 values side by side on `threads` host threads
 * (0 = all cores). m1 = 1 keeps the identity: every order makes the same
 * one-row tiles (nnc and COV_row cannot change), and Algorithm 1 is at its
 * slowest there (one tile per row: 8.8 s on the 33288×512 DLMC embedding
 * on the 2-core development host, against 3.2 s for m1 = 4). out is zeroed
 * first; release it with row_orders_free. */
spf_status row_orders_create(const spf_matrix *a, const spf_kernel_config *configs, int count,
                             int threads, row_orders *out);

/* The order for m1, or NULL (the identity) when o is NULL or holds none
 * for m1. */
const int32_t *row_orders_find(const row_orders *o, int32_t m1);

void row_orders_free(row_orders *o); /* accepts NULL or a zeroed struct */

#endif
