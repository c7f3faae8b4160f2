/* The schedule of a generated SpMM kernel, apart from any PTX text: which
 * rows each thread block computes, which columns of A (rows of B) it visits
 * with which values, how a tile's columns are split among thread groups,
 * and the launch geometry. unrolled.c turns it into code; the CPU executor
 * here runs it step by step so the schedule's logic is tested without a GPU.
 *
 * LO-SpMM §3.1 hierarchical 2-D tiling: a thread block computes an A_tile of
 * m1 rows (m1 consecutive entries of a row list, so after reordering the
 * rows need not be contiguous) × n1 columns of C; a thread owns m1 × v
 * outputs. SparseRT §3.3–3.4: the block's threads form ksplit groups that
 * share the tile's K range, each group taking a contiguous run of non-empty
 * columns holding about the same number of nonzeros; partial sums meet in
 * shared memory. */
#ifndef SPF_STRATEGY_UNROLLED_SCHEDULE_H
#define SPF_STRATEGY_UNROLLED_SCHEDULE_H

#include "spforge.h"

#include <stdint.h>

/* Dynamic shared memory a kernel may use without the per-kernel opt-in. */
#define SCHEDULE_SHARED_LIMIT (48 * 1024)

typedef struct sched_entry {
    int32_t slot; /* row of the tile, 0 .. rows - 1 (position in the row list - first_row) */
    float value;
} sched_entry;

typedef struct sched_column {
    int32_t col;   /* column of A = row of B                                 */
    int32_t count; /* entries, ascending by slot, at entries[first ...]      */
    int64_t first;
} sched_column;

typedef struct sched_tile {
    int32_t first_row; /* index of its first row in the row list             */
    int32_t rows;      /* m1, or fewer for the last tile                      */
    int64_t first_col; /* index of its first column in schedule.cols          */
    int32_t col_count; /* non-empty columns (nnc); empty columns are skipped  */
    int64_t nnz;
} sched_tile;

typedef struct schedule {
    spf_kernel_config cfg;
    int64_t m, k, n;
    int32_t tile_count;   /* ceil(m / m1): grid.y                                    */
    int32_t col_tiles;    /* ceil(n / n1): grid.x                                    */
    int32_t group_threads;/* n1 / v threads per group                                */
    int32_t *row_list;    /* m original row indices in tile order (owned)           */
    sched_tile *tiles;    /* tile_count                                              */
    sched_column *cols;   /* every tile's columns, ascending by column within a tile */
    sched_entry *entries; /* nnz                                                     */
    int32_t *group_start; /* tile_count × (ksplit + 1): group g of tile t runs the tile's
                             columns [gs[g], gs[g + 1]) (indices within the tile)      */
    unsigned grid[3], block[3];
    unsigned shared_bytes;/* (ksplit - 1) · m1 · n1 · 4 bytes for the reduction        */
} schedule;

/* Check a configuration for a product with n columns; the message names
 * the offending field. */
spf_status schedule_config_check(const spf_kernel_config *cfg, int64_t n);

/* The most row tiles a schedule holds: the kernel's grid along y. */
enum { SCHEDULE_MAX_TILES = 65535 };

/* SPF_OK if the rows cut into tiles of m1 (>= 1) fit a schedule, else
 * SPF_ERR_UNSUPPORTED naming the count and the limit: no kernel of this m1
 * exists. */
spf_status schedule_tiles_check(int64_t rows, int64_t m1);

/* Build the schedule. row_order: m distinct row indices (a permutation of
 * 0 .. m - 1, caller-owned, copied) or NULL for the identity. */
spf_status schedule_create(const spf_matrix *a, const int32_t *row_order, int64_t n,
                           const spf_kernel_config *cfg, schedule *out);
void schedule_free(schedule *s); /* accepts a zeroed schedule */

/* The thread group that reduces, finishes and stores a row slot. Rows are
 * dealt round-robin so every group shares the epilogue. */
static inline int32_t schedule_owner(const schedule *s, int32_t slot)
{
    return slot % s->cfg.ksplit;
}

/* The K-split reduction's shared-memory buffers: a row's owner reads the
 * partial of the group `owner + 1 + j` (mod ksplit) from buffer j, for j in
 * [0, ksplit - 1), and adds them in that order. */
static inline int32_t schedule_partial_writer(const schedule *s, int32_t owner, int32_t j)
{
    return (owner + 1 + j) % s->cfg.ksplit;
}

static inline int32_t schedule_partial_buffer(const schedule *s, int32_t owner, int32_t writer)
{
    return (writer - owner - 1 + s->cfg.ksplit) % s->cfg.ksplit;
}

/* Which row slots group g of tile t touches (has a nonzero in one of its
 * columns): touched[slot] = 1 or 0 for slot < m1. A group writes a partial
 * sum to shared memory, and the owner reads it, only for touched rows. */
void schedule_group_rows(const schedule *s, int32_t tile, int32_t group, uint8_t *touched);

/* Code-size estimate in instructions for the whole kernel: fma_per_entry
 * instructions per nonzero (v for fp32 lanes, v/2 for f16x2), load_ops per
 * B row visited (1 load plus any conversions), store_ops per output row. */
int64_t schedule_instructions(const schedule *s, int fma_per_entry, int load_ops, int store_ops);

/* The end of the compilation unit that starts at tile `first`: whole tiles
 * up to about `target` instructions (fma_per_entry per nonzero, one per B
 * row visited), at least one. Units sized by code rather than by rows keep
 * ptxas's per-process cost from dominating small kernels and its
 * superlinear cost from dominating dense tiles (DESIGN.md decision 1). */
int32_t schedule_unit_end(const schedule *s, int32_t first, int fma_per_entry, int64_t target);

/* Run the schedule on the host in fp32, exactly as the kernel does: per
 * block and thread, per group the columns in order (fma, first term a
 * multiply), partials summed by the owner in the kernel's order, + bias,
 * ReLU, stored at the original row; threads past n compute on a clamped
 * column and store nothing.
 *   b: k×n row-major, c: m×n row-major (every element written),
 *   bias: m floats or NULL; all host, caller-owned. */
spf_status schedule_execute_cpu(const schedule *s, const float *b, float *c, const float *bias,
                                int relu);

#endif
