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

/* C = A·B (+bias, relu) on host buffers: b K×n, c M×n row-major, bias M
 * floats or NULL; threads 0 = all cores; repeat timed runs. */
typedef struct run_request {
    const spf_matrix *a;
    int64_t n;
    const float *b;
    float *c;
    const float *bias;
    int relu, threads, repeat;
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

/* The median of count (≥ 1) wall times, sorting them; *min the least. */
double run_times_median(double *times, int count, double *min);

/* The backend for a --backend choice on this device (auto: the GPU when
 * there is one), or NULL with the status to report and why. */
const run_backend *run_backend_select(int choice, const spf_device_info *device, spf_status *status,
                                      char *why, size_t why_cap);

#endif
