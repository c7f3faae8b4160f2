/* Event timing. R back-to-back launches amortize the event resolution
 * (~0.5 µs) and the launch gaps of launch-bound problems the same way for
 * every competitor; the median over rounds resists clock and neighbour
 * noise (BENCHMARKS.md). */
#define _POSIX_C_SOURCE 200809L

#include "gpu/timing.h"

#include "core/error.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MIN_ROUNDS = 7, MAX_ROUNDS = 1000, MAX_REPEATS = 10000 };

/* Warm-up after idle. An idle GPU drops its SM clock (345 MHz idle against
 * 1980 MHz under load on the H200, device notes) and takes time to raise it
 * again, while the tuner and the search leave the GPU idle for seconds at a
 * time (ptxas). Three warm-up launches did not cover that: the same kernel
 * timed in the search and in the oracle came out up to 28 % apart (std 13 %
 * over 27 kernels, H200, bench/results/search-eval/full-r2-8801d1e), while
 * kernels timed back to back agreed. So the first measurement after
 * IDLE_AFTER_S without one keeps the GPU busy with the launch being timed
 * for WARMUP_AFTER_IDLE_US first; back-to-back measurements (a tuning
 * batch) pay it once. */
#define IDLE_AFTER_S 0.02
#define WARMUP_AFTER_IDLE_US 20000.0
static _Atomic double last_measure_end_s; /* timing_now_s() of the last; 0: none */

double timing_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void timing_options_init(timing_options *options)
{
    *options = (timing_options){.warmup = 3, .rounds = MIN_ROUNDS, .repeats = 0,
                                .target_round_us = 500.0};
}

#ifdef SPF_HAVE_CUDA
#include "gpu/cuda_check.h"

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* R launches between start and stop; the elapsed time per launch in µs. */
static spf_status time_round(timing_launch_fn fn, void *ctx, cudaStream_t stream, int repeats,
                             cudaEvent_t start, cudaEvent_t stop, double *per_launch_us)
{
    spf_status status = SPF_OK;
    TRY(CUDA_CHECK(cudaEventRecord(start, stream)));
    for (int r = 0; r < repeats; r++)
        TRY(fn(ctx, stream));
    TRY(CUDA_CHECK(cudaEventRecord(stop, stream)));
    TRY(CUDA_CHECK(cudaEventSynchronize(stop)));
    float ms = 0.0f;
    TRY(CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop)));
    *per_launch_us = 1000.0 * (double)ms / repeats;
fail:
    return status;
}

spf_status timing_measure(timing_launch_fn fn, void *ctx, void *stream,
                          const timing_options *options, timing_result *out)
{
    spf_status status = SPF_OK;
    cudaEvent_t start = NULL, stop = NULL;
    double samples[MAX_ROUNDS];
    timing_options opt;
    if (options)
        opt = *options;
    else
        timing_options_init(&opt);
    int rounds = opt.rounds < MIN_ROUNDS ? MIN_ROUNDS : opt.rounds > MAX_ROUNDS ? MAX_ROUNDS : opt.rounds;
    memset(out, 0, sizeof *out);
    cudaStream_t s = (cudaStream_t)stream;

    TRY(CUDA_CHECK(cudaEventCreate(&start)));
    TRY(CUDA_CHECK(cudaEventCreate(&stop)));
    int warmup = opt.warmup < 1 ? 1 : opt.warmup;
    double estimate_us;
    TRY(time_round(fn, ctx, s, warmup, start, stop, &estimate_us));
    int repeats = opt.repeats;
    if (repeats <= 0) {
        double r = estimate_us > 0.0 ? opt.target_round_us / estimate_us : MAX_REPEATS;
        repeats = r < 1.0 ? 1 : r > MAX_REPEATS ? MAX_REPEATS : (int)r;
    }
    if (timing_now_s() - atomic_load(&last_measure_end_s) > IDLE_AFTER_S) {
        for (double busy_us = 0; busy_us < WARMUP_AFTER_IDLE_US;) {
            double per_launch_us;
            TRY(time_round(fn, ctx, s, repeats, start, stop, &per_launch_us));
            busy_us += per_launch_us * repeats;
            if (!(per_launch_us > 0))
                break; /* an empty launch: nothing keeps the GPU busy */
        }
    }
    for (int i = 0; i < rounds; i++)
        TRY(time_round(fn, ctx, s, repeats, start, stop, &samples[i]));
    atomic_store(&last_measure_end_s, timing_now_s());
    qsort(samples, (size_t)rounds, sizeof samples[0], compare_double);
    out->median_us = rounds % 2 ? samples[rounds / 2]
                                : 0.5 * (samples[rounds / 2 - 1] + samples[rounds / 2]);
    out->min_us = samples[0];
    out->max_us = samples[rounds - 1];
    out->repeats = repeats;
    out->rounds = rounds;
fail:
    if (start)
        (void)cudaEventDestroy(start);
    if (stop)
        (void)cudaEventDestroy(stop);
    return status;
}

#else

spf_status timing_measure(timing_launch_fn fn, void *ctx, void *stream,
                          const timing_options *options, timing_result *out)
{
    (void)fn, (void)ctx, (void)stream, (void)options;
    memset(out, 0, sizeof *out);
    return FAIL(SPF_ERR_NO_DEVICE, "built without CUDA");
}

#endif
