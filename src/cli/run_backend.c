#include "cli/run_backend.h"

#include <stdio.h>

const char *const run_backend_names[] = {"auto", "cpu", "gpu", NULL};

static spf_status cpu_execute(const spf_matrix *a, int64_t n, const float *b, float *c,
                              const float *bias, int relu, int threads)
{
    return spf_reference_spmm(a, n, b, c, bias, relu, SPF_ACCUMULATE_F32, threads);
}

static const run_backend cpu_backend = {
    "cpu", "CPU reference (float accumulation, multithreaded)", cpu_execute};

const run_backend *run_backend_select(int choice, const spf_device_info *device, spf_status *status,
                                      char *why, size_t why_cap)
{
    *status = SPF_OK;
    why[0] = '\0';
    if (choice != BACKEND_GPU)
        return &cpu_backend; /* auto: no GPU backend exists yet, so the CPU is the best one */
    if (!device->available) {
        *status = SPF_ERR_NO_DEVICE;
        snprintf(why, why_cap, "--backend gpu: no GPU backend available (%s)", device->reason);
    } else {
        *status = SPF_ERR_UNSUPPORTED;
        snprintf(why, why_cap, "--backend gpu: no GPU backend available in spforge %s (device: %s)",
                 spf_version(), device->name);
    }
    return NULL;
}
