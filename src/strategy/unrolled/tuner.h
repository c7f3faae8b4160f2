/* The exhaustive tuner (issue 3, item 5): every configuration of a list —
 * a whole space (plan/tiling.h) or the candidates a search kept — is
 * generated, compiled, checked and timed, and the fastest kept. Every
 * configuration's outcome is logged with its rank features, failures
 * included with their reason: the search's oracle and the rank model
 * (scripts/train_rank_model.py) train on these rows. */
#ifndef SPF_STRATEGY_UNROLLED_TUNER_H
#define SPF_STRATEGY_UNROLLED_TUNER_H

#include "gpu/jit.h"
#include "gpu/selfcheck.h"
#include "plan/rank_features.h"
#include "strategy/unrolled/row_orders.h"
#include "strategy/unrolled/tiling.h"

typedef enum tune_outcome {
    TUNE_OK = 0,          /* checked and timed                                  */
    TUNE_NOT_GENERATED,   /* the generator declined (e.g. over the code budget) */
    TUNE_COMPILE_FAILED,  /* the assembler rejected a unit                      */
    TUNE_SPILLS,          /* assembled with register spills: skipped            */
    TUNE_LOAD_FAILED,     /* linking or loading failed                          */
    TUNE_WRONG,           /* the self-check's error was over the tolerance      */
    TUNE_LAUNCH_FAILED,   /* the launch or the timing failed                    */
    TUNE_PROXY_ONLY       /* a search ran its proxy only (proxy_us), not the
                             kernel                                             */
} tune_outcome;

const char *tune_outcome_name(tune_outcome o);

typedef struct tune_row {
    spf_kernel_config cfg;
    char kernel_name[128];
    int threads;           /* per block                                         */
    int units;             /* compilation units                                 */
    int registers;         /* per thread: as loaded, else ptxas's largest       */
    int spill_bytes;       /* ptxas: spill stores + loads                       */
    int64_t code_bytes;    /* PTX text                                          */
    double generate_s;     /* PTX generation                                    */
    double compile_s;      /* the assembler, summed over the units              */
    jit_assembler assembler; /* which one (gpu/assembler.h)                     */
    double link_s, load_s;
    double check_s;        /* the self-check: poison, launch, download, compare */
    double time_s;         /* timing the kernel (warm-up and rounds)            */
    double kernel_us;      /* median per launch (0 if not timed)                */
    double proxy_us;       /* its proxy's time in a search (0: no proxy ran)    */
    double verify_error;   /* relative error (-1 if not run)                    */
    double features[RANK_FEATURE_COUNT]; /* rank_features; NaN where the m1 has
                                            more tiles than a schedule takes  */
    tune_outcome outcome;
    char reason[240];      /* why it failed, or ""                              */
} tune_row;

/* A row for cfg before anything ran: name, threads, verify_error -1,
 * outcome TUNE_OK, features 0 (tune_features fills them). */
void tune_row_init(tune_row *row, const spf_kernel_config *cfg, spf_dtype dtype,
                   int f16x2_accumulate);

typedef struct tune_log {
    int64_t m, k, n, nnz;
    spf_dtype dtype;
    int f16x2_accumulate, bias, relu;
    int reorder;           /* rows in Algorithm 1 order, one per m1             */
    int sm;                /* ptxas target, e.g. 90                             */
    tune_row *rows;        /* count, in list order (owned)                      */
    int count;
    int best;              /* index of the chosen row, -1 if none passed        */
    double wall_s;         /* the whole tuning run                              */
} tune_log;

typedef struct tune_request {
    const spf_matrix *a;
    int64_t n;
    const spf_kernel_config *configs; /* the list to run (borrowed, config_count
                                         entries, each valid for n), or NULL
                                         for every configuration of `space`   */
    int config_count;
    spf_tune_space space;  /* with configs NULL: tile_space_create(n, space)    */
    int reorder;           /* generate each configuration on the LO-SpMM
                              Algorithm 1 order of its m1 (row_orders)          */
    const row_orders *orders; /* with reorder: the orders to use (borrowed), or
                                 NULL to compute them for the list's m1 values */
    spf_dtype dtype;
    int f16x2_accumulate, bias, relu;
    int ptx_sm;            /* PTX .target for the generator (80 or 90)          */
    int sass_sm;           /* ptxas -arch                                       */
    int threads;           /* host threads, 0 = all cores                       */
    int64_t code_budget;   /* per kernel, in instructions (≤ 0: none)           */
    selfcheck *check;      /* prepared buffers on the current device: every
                              configuration is checked and timed on them        */
    int search_final;      /* progress (core/progress.h): the configurations
                              count in the search's FINAL stage, not TUNE       */
} tune_request;

/* The rank features (plan/rank_features.h) of configs[0 .. count) for
 * the problem p (p->orders gives the row order of each m1) and dtype into
 * out (count × RANK_FEATURE_COUNT, row-major; caller-owned). Each distinct
 * m1 is summarized once (rank_tiles_compute); an m1 with more tiles than a
 * schedule takes gets NaN features (no kernel of it can be generated). */
spf_status tune_features(const tile_problem *p, spf_dtype dtype, const spf_kernel_config *configs,
                         int count, double *out);

/* Run the list on the current device. On success *best holds the
 * fastest checked kernel, loaded, and log->best its row. When no
 * configuration passes: SPF_ERR_VERIFY if one ran but was wrong,
 * SPF_ERR_UNSUPPORTED if the generator declined them all, else
 * SPF_ERR_COMPILE, with the counts and a first reason in the detail. The
 * log is filled either way (release it with tune_log_free). */
spf_status tuner_run(const tune_request *req, jit_module *best, tune_log *log);

void tune_log_free(tune_log *log); /* accepts a zeroed log */

/* One CSV row per configuration, with a header line (tuning-log columns in
 * tuner.c: the problem, the configuration, its costs and outcome, then
 * proxy_us and the rank_feature_names columns, the reason last). Written
 * to a temporary name and renamed. */
spf_status tune_log_write_csv(const tune_log *log, const char *path);

#endif
