/* Kernel timing with CUDA events, the protocol of BENCHMARKS.md: warm up,
 * then R back-to-back launches between two events per round, the per-launch
 * median over at least 7 rounds. Weights cold by default: every launch
 * follows a read that evicts the L2 (gpu/l2_flush.h), as the other layers
 * of a model do between two calls of one, and the read's own time, timed
 * in rounds of its own, is subtracted. Used by the planner, every
 * strategy's tuning and spforge-bench, so that every candidate and every
 * vendor library is timed by one rule. */
#ifndef SPF_GPU_TIMING_H
#define SPF_GPU_TIMING_H

#include "gpu/l2_flush.h"
#include "spforge.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Host wall-clock seconds (CLOCK_MONOTONIC), for the JIT and plan phase
 * times. */
double timing_now_s(void);

/* One launch of the thing being timed on `stream` (a cudaStream_t). It must
 * not synchronize; its return is checked after every launch. */
typedef spf_status (*timing_launch_fn)(void *ctx, void *stream);

typedef struct timing_options {
    int warmup;             /* launches before the first round (default 3)                */
    int rounds;             /* timed rounds, raised to at least 7 (default 7)              */
    int repeats;            /* launches per round; 0 (default) picks R so that a round
                               lasts about target_round_us, between 1 and 10000            */
    double target_round_us; /* default 500                                                 */
    int graph;              /* 1: the R launches of a round captured once in a CUDA graph,
                               each round a replay of it: the GPU's time, without the
                               host's cost per launch, which bounds launch loops of
                               kernels of a few µs (spf_plan_execute's launches are
                               capturable; where a capture fails, the loop is timed
                               instead and the result says so) (default); 0: a loop       */
    int cold;               /* 1 (default): the L2 flushed before every launch, the
                               flush's time subtracted; 0: the operands stay in the L2
                               from one launch to the next (hot)                          */
    l2_flush *flush;        /* cold: the flush to use (a plan's, made once; its time is
                               measured on first use and kept in it), or NULL for one
                               made, measured and released by the call                    */
} timing_options;

void timing_options_init(timing_options *options);

typedef struct timing_result {
    double median_us;       /* per launch: the median over rounds (the number reported)   */
    double min_us, max_us;  /* per launch: the fastest and slowest rounds                  */
    int repeats, rounds;    /* R and the number of rounds used                             */
    int graph;              /* 1: the rounds were replays of a CUDA graph                   */
    int cold;               /* 1: each launch after an L2 flush, its time subtracted       */
    double flush_us;        /* cold: the flush's median, subtracted                        */
} timing_result;

/* Time fn(ctx, stream) on `stream`; options may be NULL for the defaults
 * (graph replays, weights cold).
 * Synchronizes the stream. SPF_ERR_NO_DEVICE in a build without CUDA. */
spf_status timing_measure(timing_launch_fn fn, void *ctx, void *stream,
                          const timing_options *options, timing_result *out);

#ifdef __cplusplus
}
#endif

#endif
