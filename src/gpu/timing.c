/* Event timing. R back-to-back launches amortize the event resolution
 * (~0.5 µs) and the launch gaps of launch-bound problems the same way for
 * every competitor; the median over rounds resists clock and neighbour
 * noise (BENCHMARKS.md). Cold, the flush's rounds are timed right after
 * the launches' own, with the same R and the same graph rule, so that the
 * difference is the launch's time with its operands in HBM. */
#define _POSIX_C_SOURCE 200809L

#include "gpu/timing.h"

#include "core/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MIN_ROUNDS = 7, MAX_ROUNDS = 1000, MAX_REPEATS = 10000 };

/* Cold: launches a round at least (the flush's noise, averaged), and the
 * least time a launch is said to take (µs). */
enum { MIN_COLD_REPEATS = 8 };
#define MIN_COLD_US 0.01

double timing_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void timing_options_init(timing_options *options)
{
    *options = (timing_options){.warmup = 3, .rounds = MIN_ROUNDS, .repeats = 0,
                                .target_round_us = 500.0, .graph = 1, .cold = 1};
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

/* The rounds of fn on s: R (*repeats, chosen from one launch's time when
 * 0) launches a round, replays of their graph when *graph (cleared where
 * the capture fails: the loop is timed instead); the per-launch time of
 * each round into samples, sorted. */
static spf_status time_rounds(timing_launch_fn fn, void *ctx, cudaStream_t s,
                              const timing_options *opt, int rounds, int *graph, int *repeats,
                              cudaEvent_t start, cudaEvent_t stop, double *samples)
{
    spf_status status = SPF_OK;
    round_work work = {.fn = fn, .ctx = ctx};
    int warmup = opt->warmup < 1 ? 1 : opt->warmup;
    double estimate_us;
    TRY(time_round(&work, s, warmup, start, stop, &estimate_us));
    if (*graph) { /* the estimate from one replay: the loop's includes the host's cost */
        if (capture(fn, ctx, s, 1, &work.graph) != SPF_OK) {
            /* not capturable (a launch the capture refused): time the loop */
            error_clear();
            (void)cudaGetLastError();
            *graph = 0;
        } else {
            TRY(time_round(&work, s, 1, start, stop, &estimate_us));
            (void)cudaGraphExecDestroy(work.graph);
            work.graph = NULL;
        }
    }
    if (*repeats <= 0) {
        double r = estimate_us > 0.0 ? opt->target_round_us / estimate_us : MAX_REPEATS;
        *repeats = r < 1.0 ? 1 : r > MAX_REPEATS ? MAX_REPEATS : (int)r;
        if (opt->cold && *repeats < MIN_COLD_REPEATS)
            *repeats = MIN_COLD_REPEATS;
    }
    if (*graph) {
        TRY(capture(fn, ctx, s, *repeats, &work.graph));
        TRY(time_round(&work, s, *repeats, start, stop, &estimate_us)); /* the graph's first run */
    }
    for (int i = 0; i < rounds; i++)
        TRY(time_round(&work, s, *repeats, start, stop, &samples[i]));
    qsort(samples, (size_t)rounds, sizeof samples[0], compare_double);
fail:
    if (work.graph)
        (void)cudaGraphExecDestroy(work.graph);
    return status;
}

static double median_of_sorted(const double *x, int count)
{
    return count % 2 ? x[count / 2] : 0.5 * (x[count / 2 - 1] + x[count / 2]);
}

/* A cold launch: the flush, then the thing timed. */
typedef struct flushed {
    timing_launch_fn fn;
    void *ctx;
    l2_flush *flush;
} flushed;

static spf_status flushed_launch(void *ctx, void *stream)
{
    const flushed *f = ctx;
    spf_status st = l2_flush_launch(f->flush, stream);
    return st == SPF_OK ? f->fn(f->ctx, stream) : st;
}

static spf_status flush_alone(void *ctx, void *stream)
{
    return l2_flush_launch(((const flushed *)ctx)->flush, stream);
}

spf_status timing_measure(timing_launch_fn fn, void *ctx, void *stream,
                          const timing_options *options, timing_result *out)
{
    spf_status status = SPF_OK;
    cudaEvent_t start = NULL, stop = NULL;
    cudaStream_t own = NULL;
    l2_flush own_flush = {0};
    double samples[MAX_ROUNDS], flush_samples[MAX_ROUNDS];
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
    int graph = opt.graph, repeats = opt.repeats;
    if (!opt.cold) {
        TRY(time_rounds(fn, ctx, s, &opt, rounds, &graph, &repeats, start, stop, samples));
    } else {
        if (!opt.flush) {
            TRY(l2_flush_make(&own_flush));
            opt.flush = &own_flush;
        }
        flushed f = {fn, ctx, opt.flush};
        TRY(time_rounds(flushed_launch, &f, s, &opt, rounds, &graph, &repeats, start, stop,
                        samples));
        /* the flush alone, the same way, once per flush: what is subtracted
         * (a loop's flush, which the host's launches may stretch, each time) */
        if (!graph || !(opt.flush->us > 0)) {
            int flush_graph = graph;
            TRY(time_rounds(flush_alone, &f, s, &opt, rounds, &flush_graph, &repeats, start,
                            stop, flush_samples));
            out->flush_us = median_of_sorted(flush_samples, rounds);
            if (graph)
                opt.flush->us = out->flush_us;
        }
        out->flush_us = opt.flush->us > 0 && graph ? opt.flush->us : out->flush_us;
        /* a launch shorter than the flush's noise still counts as a time */
        for (int i = 0; i < rounds; i++)
            samples[i] = fmax(samples[i] - out->flush_us, MIN_COLD_US);
    }
    out->median_us = median_of_sorted(samples, rounds);
    out->min_us = samples[0];
    out->max_us = samples[rounds - 1];
    out->repeats = repeats;
    out->rounds = rounds;
    out->graph = graph;
    out->cold = opt.cold;
fail:
    l2_flush_release(&own_flush);
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
