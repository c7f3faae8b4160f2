/* The backends `spforge run` can execute on, behind one small interface:
 * the CPU reference, and the GPU through a plan (spf_plan_create). */
#ifndef SPF_CLI_RUN_BACKEND_H
#define SPF_CLI_RUN_BACKEND_H

#include "cli/cli.h"
#include "spforge.h"

#include <stddef.h>

/* The --backend names, in this order. */
enum { BACKEND_AUTO, BACKEND_CPU, BACKEND_GPU };
extern const char *const run_backend_names[];

/* The --timing names: a loop of launches (default), or their replays in a
 * CUDA graph (gpu/timing.h). */
enum { TIMING_LOOP, TIMING_GRAPH };
extern const char *const run_timing_names[];

/* The --weights names, in spf_timing's order. */
extern const char *const run_weights_names[];

/* How a plan times its candidates and the run its plan (spf_timing). */
#define CLI_WEIGHTS_OPTION(weights)                                                                \
    {"weights", CLI_CHOICE, &(weights), "cold|hot",                                                \
     "GPU: time with the weights cold (default: the L2 flushed before every launch and the "      \
     "flush's time subtracted, as in a model whose layers stream their weights in turn) or hot "  \
     "(the same buffers back to back, resident in the L2); the plan chooses its kernel by the "   \
     "same rule", run_weights_names, 0, 0, 0}

/* C = A·B (+bias, relu) on host buffers: b K×n, c M×n row-major, bias M
 * floats or NULL; threads 0 = the default (parallel_default_threads); repeat
 * timed runs. */
typedef struct run_request {
    const spf_matrix *a;
    int64_t n;
    const float *b;
    float *c;
    const float *bias;
    int relu, threads, repeat;
    int graph;              /* GPU: time graph replays (--timing graph)      */
    spf_plan_options plan;  /* the GPU backend's plan (bias, relu, threads set from above) */
    cli_progress *progress; /* the display: the plan's progress and the timed runs */
} run_request;

typedef struct run_outcome {
    double median_s, min_s; /* per run: wall time (CPU) or kernel time (GPU) */
    const char *timing;     /* what the times measure                       */
    char detail[256];       /* the kernel chosen and how long the plan took */
    double tolerance;       /* relative error allowed against the f64 reference */
    int have_plan;          /* the GPU backend: plan holds its info         */
    spf_plan_info plan;
} run_outcome;

typedef struct run_backend {
    const char *name;        /* "cpu"                                      */
    const char *description; /* one line for the output                    */
    spf_status (*run)(const run_request *req, run_outcome *out);
} run_backend;

/* The options of a run timed on a chosen backend (run, conv): host
 * threads, repeats, the backend (an index into run_backend_names) and the
 * GPU's timing (an index into timing_names, whose first two are
 * run_timing_names'; timing_metavar lists them). */
#define CLI_RUN_OPTIONS(threads, repeat, backend, timing, timing_names, timing_metavar)            \
    {"threads", CLI_INT, &(threads), "T", CLI_THREADS_HELP, NULL, 0, 4096, 0},                    \
    {"repeat", CLI_INT, &(repeat), "R", "CPU: timed repeats, the median is reported (default "     \
     "5); GPU: the timing protocol of BENCHMARKS.md", NULL, 1, 100000, 0},                         \
    {"backend", CLI_CHOICE, &(backend), "auto|cpu|gpu",                                            \
     "where to run (default auto: the best available)", run_backend_names, 0, 0, 0},              \
    {"timing", CLI_CHOICE, &(timing), timing_metavar,                                              \
     "GPU: time a loop of launches (default; the host's cost per launch included) or the "       \
     "replays of a CUDA graph of them (the GPU's time alone); both, where offered: the two of "    \
     "one plan", timing_names, 0, 0, 0}

/* The median of count (≥ 1) wall times, sorting them; *min the least. */
double run_times_median(double *times, int count, double *min);

/* The backend for a --backend choice on this device (auto: the GPU when
 * there is one), or NULL with the status to report and why. */
const run_backend *run_backend_select(int choice, const spf_device_info *device, spf_status *status,
                                      char *why, size_t why_cap);

#endif
