/* Event timing. R back-to-back launches amortize the event resolution
 * (~0.5 µs) and the launch gaps of launch-bound problems the same way for
 * every competitor; the median over rounds resists clock and neighbour
 * noise (BENCHMARKS.md). */
#define _POSIX_C_SOURCE 200809L

#include "gpu/timing.h"

#include "core/error.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MIN_ROUNDS = 7, MAX_ROUNDS = 1000, MAX_REPEATS = 10000 };

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

/* One round's work between start and stop: R launches, or a replay of
 * the graph that holds them; the elapsed time per launch in µs. */
typedef struct round_work {
    timing_launch_fn fn;
    void *ctx;
    cudaGraphExec_t graph; /* NULL: launch R times */
} round_work;

static spf_status run_round(const round_work *w, cudaStream_t stream, int repeats)
{
    if (w->graph)
        return CUDA_CHECK(cudaGraphLaunch(w->graph, stream));
    spf_status status = SPF_OK;
    for (int r = 0; r < repeats && status == SPF_OK; r++)
        status = w->fn(w->ctx, stream);
    return status;
}

/* R launches between start and stop; the elapsed time per launch in µs. */
static spf_status time_round(const round_work *w, cudaStream_t stream, int repeats,
                             cudaEvent_t start, cudaEvent_t stop, double *per_launch_us)
{
    spf_status status = SPF_OK;
    TRY(CUDA_CHECK(cudaEventRecord(start, stream)));
    TRY(run_round(w, stream, repeats));
    TRY(CUDA_CHECK(cudaEventRecord(stop, stream)));
    TRY(CUDA_CHECK(cudaEventSynchronize(stop)));
    float ms = 0.0f;
    TRY(CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop)));
    *per_launch_us = 1000.0 * (double)ms / repeats;
fail:
    return status;
}

/* The R launches captured on stream (not the legacy default one) into an
 * executable graph. Relaxed capture: a launch may set a kernel's
 * attributes (gpu/smem_limit.cuh) on its way. */
static spf_status capture(timing_launch_fn fn, void *ctx, cudaStream_t stream, int repeats,
                          cudaGraphExec_t *exec)
{
    cudaGraph_t graph = NULL;
    spf_status status = CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
    if (status != SPF_OK)
        return status;
    for (int r = 0; r < repeats && status == SPF_OK; r++)
        status = fn(ctx, stream);
    /* the capture ends whatever happened, so that the stream is usable */
    const spf_status ended = CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    if (status == SPF_OK)
        status = ended;
    if (status == SPF_OK)
        status = CUDA_CHECK(cudaGraphInstantiate(exec, graph, 0));
    if (graph)
        (void)cudaGraphDestroy(graph);
    return status;
}

spf_status timing_measure(timing_launch_fn fn, void *ctx, void *stream,
                          const timing_options *options, timing_result *out)
{
    spf_status status = SPF_OK;
    cudaEvent_t start = NULL, stop = NULL;
    cudaStream_t own = NULL;
    round_work work = {.fn = fn, .ctx = ctx};
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
    if (opt.graph && !s) {
        /* the legacy default stream cannot be captured: a stream of our own,
         * after the work queued on the default one (the operands' copies) */
        TRY(CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy)));
        TRY(CUDA_CHECK(cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking)));
        s = own;
    }
    int warmup = opt.warmup < 1 ? 1 : opt.warmup;
    double estimate_us;
    TRY(time_round(&work, s, warmup, start, stop, &estimate_us));
    int repeats = opt.repeats;
    if (opt.graph) { /* the estimate from one replay: the loop's includes the host's cost */
        if (capture(fn, ctx, s, 1, &work.graph) != SPF_OK) {
            /* not capturable (a launch the capture refused): time the loop */
            error_clear();
            (void)cudaGetLastError();
            opt.graph = 0;
        } else {
            TRY(time_round(&work, s, 1, start, stop, &estimate_us));
            (void)cudaGraphExecDestroy(work.graph);
            work.graph = NULL;
        }
    }
    if (repeats <= 0) {
        double r = estimate_us > 0.0 ? opt.target_round_us / estimate_us : MAX_REPEATS;
        repeats = r < 1.0 ? 1 : r > MAX_REPEATS ? MAX_REPEATS : (int)r;
    }
    if (opt.graph) {
        TRY(capture(fn, ctx, s, repeats, &work.graph));
        TRY(time_round(&work, s, repeats, start, stop, &estimate_us)); /* the graph's first run */
    }
    for (int i = 0; i < rounds; i++)
        TRY(time_round(&work, s, repeats, start, stop, &samples[i]));
    qsort(samples, (size_t)rounds, sizeof samples[0], compare_double);
    out->median_us = rounds % 2 ? samples[rounds / 2]
                                : 0.5 * (samples[rounds / 2 - 1] + samples[rounds / 2]);
    out->min_us = samples[0];
    out->max_us = samples[rounds - 1];
    out->repeats = repeats;
    out->rounds = rounds;
    out->graph = opt.graph;
fail:
    if (work.graph)
        (void)cudaGraphExecDestroy(work.graph);
    if (own)
        (void)cudaStreamDestroy(own);
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
