/* A parallel for-loop over an index range on pthreads, used by the CPU
 * reference SpMM (row blocks) and by the GPU runtime for compiling chunk
 * functions side by side (DESIGN.md decision 1). */
#ifndef SPF_CORE_PARALLEL_H
#define SPF_CORE_PARALLEL_H

#include "spforge.h"

#include <stdint.h>

/* Runs body over [begin, end), a sub-range of the loop, on worker `worker`
 * (0 .. the thread count actually used - 1; a worker runs its calls one at a
 * time, so per-worker scratch indexed by it needs no locking). A non-OK
 * return stops the loop: ranges not yet started are skipped. */
typedef spf_status (*parallel_body)(void *ctx, int64_t begin, int64_t end, int worker);

/* The thread count 0 stands for, worked out once per process:
 * $SPFORGE_THREADS, else $OMP_NUM_THREADS (a positive integer; another
 * value is ignored with a warning), else the CPUs the process may run on
 * (its affinity mask, at most its cgroup's CPU quota rounded up), at least
 * 1 and at most MAX_THREADS. */
int parallel_default_threads(void);

/* The number of workers parallel_for will use for `count` items in grains
 * of `grain` with `threads` asked (0 = all cores): never more than the
 * number of grains, at least 1. Callers size per-worker scratch with it. */
int parallel_workers(int64_t count, int64_t grain, int threads);

/* Split [0, count) into ranges of `grain` items (the last may be shorter)
 * handed out dynamically to parallel_workers(count, grain, threads)
 * workers; the calling thread is worker 0. If a thread cannot be created
 * the loop runs on fewer. Returns the first failing body's status, with
 * its detail message carried over to the calling thread. */
spf_status parallel_for(int64_t count, int64_t grain, int threads, parallel_body body, void *ctx);

/* parallel_for whose items are the units of the progress stage `stage`,
 * open on the calling thread (core/progress.h): while the workers run,
 * the calling thread reports the items they have finished, about every
 * PROGRESS_STEP_INTERVAL_S, instead of running items itself (so it starts
 * one thread more; the workers are as many). A cancellation stops the loop
 * as a failure does (ranges in flight finish) and returns
 * SPF_ERR_CANCELLED. Without a progress callback on this thread it is
 * parallel_for. */
spf_status parallel_for_progress(spf_stage stage, int64_t count, int64_t grain, int threads,
                                 parallel_body body, void *ctx);

#endif
