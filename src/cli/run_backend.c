#include "cli/run_backend.h"

#include "core/dtype.h"
#include "core/parallel.h"
#include "gpu/host_run.h"
#include "gpu/timing.h"

#include <stdio.h>
#include <stdlib.h>

const char *const run_backend_names[] = {"auto", "cpu", "gpu", NULL};
const char *const run_timing_names[] = {"loop", "graph", NULL};
const char *const run_weights_names[] = {"cold", "hot", NULL};

static int compare_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

double run_times_median(double *times, int count, double *min)
{
    qsort(times, (size_t)count, sizeof *times, compare_double);
    *min = times[0];
    return count % 2 ? times[count / 2] : 0.5 * (times[count / 2 - 1] + times[count / 2]);
}

static spf_status cpu_run(const run_request *q, run_outcome *out)
{
    double *times = malloc((size_t)q->repeat * sizeof *times);
    if (!times)
        return SPF_ERR_OUT_OF_MEMORY;
    spf_status st = SPF_OK;
    for (int r = 0; r < q->repeat && st == SPF_OK; r++) {
        cli_progress_note(q->progress, r == 0, "cpu run %d/%d", r + 1, q->repeat);
        double t0 = timing_now_s();
        st = spf_reference_spmm(q->a, q->n, q->b, q->c, q->bias, q->relu, SPF_ACCUMULATE_F32,
                                q->threads);
        times[r] = timing_now_s() - t0;
    }
    if (st == SPF_OK) {
        out->median_s = run_times_median(times, q->repeat, &out->min_s);
        out->timing = "wall time per run";
        out->tolerance = 1e-6;
        snprintf(out->detail, sizeof out->detail, "CPU reference, %d threads",
                 q->threads ? q->threads : parallel_default_threads());
    }
    free(times);
    return st;
}

static spf_status gpu_run(const run_request *q, run_outcome *out)
{
    spf_plan_options o = q->plan;
    o.bias = q->bias != NULL;
    o.relu = q->relu;
    o.host_threads = q->threads;
    if (q->progress->on) {
        o.progress = cli_progress_event;
        o.progress_user = q->progress;
    }
    spf_plan *plan = NULL;
    const int cold = o.timing == SPF_TIMING_COLD;
    double t0 = timing_now_s();
    spf_status st = spf_plan_create(q->a, q->n, &o, &plan);
    double plan_s = timing_now_s() - t0;
    spf_plan_info *info = &out->plan;
    timing_result t;
    info->size = sizeof *info;
    if (st == SPF_OK)
        st = spf_plan_get_info(plan, info);
    if (st == SPF_OK) {
        cli_progress_note(q->progress, 1, "timing %s", info->kernel_name);
        timing_options topt;
        timing_options_init(&topt);
        topt.graph = q->graph;
        topt.cold = cold;
        st = host_run_plan(plan, spf_matrix_rows(q->a), spf_matrix_cols(q->a), q->n, q->b, q->c,
                           q->bias, &topt, &t);
    }
    if (st == SPF_OK) {
        out->median_s = 1e-6 * t.median_us;
        out->min_s = 1e-6 * t.min_us;
        static const char *const texts[2][2] = {
            {"kernel time per launch (CUDA events, median of rounds), weights hot",
             "kernel time per launch (CUDA events, median of rounds), weights cold: the L2 "
             "flushed before each launch, the flush's time subtracted"},
            {"kernel time per launch (CUDA graph replays, CUDA events, median of rounds), "
             "weights hot",
             "kernel time per launch (CUDA graph replays, CUDA events, median of rounds), "
             "weights cold: the L2 flushed before each launch, the flush's time subtracted"}};
        out->timing = texts[q->graph != 0][cold];
        /* BENCHMARKS.md's thresholds: the GPU sums in another order, with fma. */
        out->tolerance = dtype_tolerance(o.dtype, o.math);
        out->have_plan = 1;
        if (info->from_cache)
            snprintf(out->detail, sizeof out->detail, "%s, plan loaded from the plan cache in %.3f s",
                     info->kernel_name, plan_s);
        else if (info->assembler[0])
            snprintf(out->detail, sizeof out->detail,
                     "%s, plan built in %.2f s (compile %.2f s, %s)", info->kernel_name, plan_s,
                     info->compile_s, info->assembler);
        else
            snprintf(out->detail, sizeof out->detail, "%s, plan built in %.2f s (compile %.2f s)",
                     info->kernel_name, plan_s, info->compile_s);
    }
    spf_plan_free(plan);
    return st;
}

static const run_backend cpu_backend = {
    "cpu", "CPU reference (float accumulation, multithreaded)", cpu_run};
static const run_backend gpu_backend = {"gpu", "GPU plan (spf_plan_create)", gpu_run};

const run_backend *run_backend_select(int choice, const spf_device_info *device, spf_status *status,
                                      char *why, size_t why_cap)
{
    *status = SPF_OK;
    why[0] = '\0';
    if (choice == BACKEND_CPU || (choice == BACKEND_AUTO && !device->available))
        return &cpu_backend;
    if (device->available)
        return &gpu_backend;
    *status = SPF_ERR_NO_DEVICE;
    snprintf(why, why_cap, "--backend gpu: no usable CUDA device (%s)", device->reason);
    return NULL;
}
