/* The features the rank model (rank_model.h) scores one (problem,
 * configuration) by: LO-SpMM §3.5 Table 1 first, in the paper's order, then
 * what our kernel adds. A problem is (A, n, row order, dtype); the per-m1
 * part (the A_tiles' nonzeros and non-empty columns) is computed once per m1
 * by rank_tiles_compute in O(nnz), after which rank_features is O(1) per
 * configuration, so a space of ~900 configurations costs six tile passes.
 *
 * Every value is a double, exact for the integer ones. rank_feature_names
 * are also the tuning log's column names (CSV, src/gpu/tuner.c) and the
 * model file's feature list (rank_model.h), so renaming or reordering them
 * invalidates every committed model and log: append new features instead,
 * and retrain. The "f_" prefix keeps them apart from the log's own columns
 * (m1, registers: the measured count, ...). */
#ifndef SPF_PLAN_RANK_FEATURES_H
#define SPF_PLAN_RANK_FEATURES_H

#include "strategy/unrolled/tiling.h"
#include "spforge.h"

#include <stdint.h>

/* Index of each feature in the vector rank_features writes. */
enum rank_feature {
    /* LO-SpMM Table 1 */
    RANK_F_A_TILES = 0, /* A_tile num: ceil(m / m1), empty-row tiles included     */
    RANK_F_B_TILES,     /* B_tile num: ceil(n / n1)                               */
    RANK_F_BLOCKS,      /* block num: A_tiles × B_tiles (LO-SpMM Eq. 1)            */
    RANK_F_SPARSITY,    /* 1 − nnz / (m·k)                                         */
    RANK_F_NNC_SUM,     /* NNC_sum: non-empty columns summed over the A_tiles      */
    RANK_F_NNZ_MAX,     /* NNZ_max: most nonzeros in one A_tile                    */
    RANK_F_M1,
    RANK_F_N1,
    RANK_F_K,
    /* beyond the paper: the rest of the problem and of our configuration */
    RANK_F_M,
    RANK_F_N,
    RANK_F_NNZ,
    RANK_F_V,           /* columns per thread (vector width of the B loads)        */
    RANK_F_PREFETCH,    /* Algorithm 2's d                                          */
    RANK_F_KSPLIT,
    RANK_F_THREADS,     /* per block: n1 / v · ksplit (tiling_threads)             */
    RANK_F_REGISTERS,   /* register_forecast for the dtype (constraints.h)          */
    RANK_F_DTYPE_BYTES, /* 4 (f32) or 2 (f16, bf16): B loads and C stores           */
    RANK_F_NNC_MAX,     /* most non-empty columns in one A_tile: the B rows the
                           slowest block loads (LO-SpMM §4's objective)              */
    RANK_F_ROW_NNZ_MEAN,/* nnz / m                                                  */
    RANK_F_COV_ROW,     /* LO-SpMM §3.4 (tiling.h): nnz balance across A_tiles      */
    RANK_F_WASTE_COL,   /* LO-SpMM §3.4 (tiling.h): padded columns of the last B_tile */
    /* derived: trees split on one feature at a time, so the per-thread work of
     * the slowest block is given outright rather than left to be assembled
     * from NNZ_max, v and ksplit */
    RANK_F_FMA_PER_THREAD,   /* NNZ_max · v / ksplit: fma lanes a thread issues      */
    RANK_F_LOADS_PER_THREAD, /* NNC_max / ksplit: B rows a thread loads              */
    RANK_F_WARPS,            /* blocks × threads / 32: the whole launch              */
    RANK_FEATURE_COUNT
};

/* CSV column names, stable (see above). */
extern const char *const rank_feature_names[RANK_FEATURE_COUNT];

/* The per-m1 summary of a problem's A_tiles (m1 consecutive entries of the
 * row order, schedule.h). */
typedef struct rank_tiles {
    int32_t m1;
    int32_t tiles;   /* ceil(m / m1)                                  */
    int64_t nnc_sum; /* non-empty columns summed over the tiles       */
    int64_t nnc_max;
    int64_t nnz_max;
    double cov_row;
} rank_tiles;

/* Summarize p's A_tiles of m1 rows (m1 ≥ 1) in the row order the kernel
 * for this m1 runs (tile_problem_row_order). O(nnz + m); the tile limit of
 * tile_nnc_stats applies (SPF_ERR_UNSUPPORTED past it). */
spf_status rank_tiles_compute(const tile_problem *p, int32_t m1, rank_tiles *out);

/* The features of configuration cfg (valid for p->n, schedule_config_check;
 * cfg->m1 == t->m1) for a kernel of dtype into out, in enum order. */
void rank_features(const rank_tiles *t, const tile_problem *p, const spf_kernel_config *cfg,
                   spf_dtype dtype, double out[RANK_FEATURE_COUNT]);

#endif
