/* The exhaustive tuner (issue 3, item 5): every configuration of a bounded
 * space is generated, compiled, checked and timed, and the fastest kept.
 * Every configuration's outcome is logged, failures included with their
 * reason: the next issue's oracle and rank model train on these rows. */
#ifndef SPF_GPU_TUNER_H
#define SPF_GPU_TUNER_H

#include "gpu/jit.h"
#include "gpu/selfcheck.h"

/* The space (spf_tune_space in spforge.h says which values), less the
 * combinations schedule_config_check rejects for this n (threads per block
 * not a multiple of 32 or over 1024, v not dividing n, too much shared
 * memory). *configs is mem_alloc'd (mem_free it). */
spf_status tuner_space(int64_t n, spf_tune_space space, spf_kernel_config **configs, int *count);

typedef enum tune_outcome {
    TUNE_OK = 0,          /* checked and timed                                  */
    TUNE_NOT_GENERATED,   /* the generator declined (e.g. over the code budget) */
    TUNE_COMPILE_FAILED,  /* ptxas rejected a unit                              */
    TUNE_SPILLS,          /* assembled with register spills: skipped            */
    TUNE_LOAD_FAILED,     /* linking or loading failed                          */
    TUNE_WRONG,           /* the self-check's error was over the tolerance      */
    TUNE_LAUNCH_FAILED    /* the launch or the timing failed                    */
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
    double compile_s;      /* ptxas, summed over the units                      */
    double link_s, load_s;
    double kernel_us;      /* median per launch (0 if not timed)                */
    double verify_error;   /* relative error (-1 if not run)                    */
    tune_outcome outcome;
    char reason[240];      /* why it failed, or ""                              */
} tune_row;

typedef struct tune_log {
    int64_t m, k, n, nnz;
    spf_dtype dtype;
    int f16x2_accumulate, bias, relu;
    int sm;                /* ptxas target, e.g. 90                             */
    tune_row *rows;        /* count, in space order (owned)                     */
    int count;
    int best;              /* index of the chosen row, -1 if none passed        */
    double wall_s;         /* the whole tuning run                              */
} tune_log;

typedef struct tune_request {
    const spf_matrix *a;
    int64_t n;
    spf_tune_space space;
    spf_dtype dtype;
    int f16x2_accumulate, bias, relu;
    int ptx_sm;            /* PTX .target for the generator (80 or 90)          */
    int sass_sm;           /* ptxas -arch                                       */
    int threads;           /* host threads, 0 = all cores                       */
    int64_t code_budget;   /* per kernel, in instructions (≤ 0: none)           */
    selfcheck *check;      /* prepared buffers on the current device: every
                              configuration is checked and timed on them        */
} tune_request;

/* Run the whole space on the current device. On success *best holds the
 * fastest checked kernel, loaded, and log->best its row. When no
 * configuration passes: SPF_ERR_VERIFY if one ran but was wrong,
 * SPF_ERR_UNSUPPORTED if the generator declined them all, else
 * SPF_ERR_COMPILE, with the counts and a first reason in the detail. The
 * log is filled either way (release it with tune_log_free). */
spf_status tuner_run(const tune_request *req, jit_module *best, tune_log *log);

void tune_log_free(tune_log *log); /* accepts a zeroed log */

/* One CSV row per configuration, with a header line (tuning-log columns in
 * tuner.c). Written to a temporary name and renamed. */
spf_status tune_log_write_csv(const tune_log *log, const char *path);

#endif
