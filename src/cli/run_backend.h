/* The backends `spforge run` can execute on, behind one small interface so
 * that the GPU backend (later issues: a plan from spf_plan_create) plugs in
 * beside the CPU reference without changing cmd_run.c. */
#ifndef SPF_CLI_RUN_BACKEND_H
#define SPF_CLI_RUN_BACKEND_H

#include "spforge.h"

#include <stddef.h>

/* The --backend names, in this order. */
enum { BACKEND_AUTO, BACKEND_CPU, BACKEND_GPU };
extern const char *const run_backend_names[];

typedef struct run_backend {
    const char *name;        /* "cpu"                                      */
    const char *description; /* one line for the output                    */
    /* C = A·B (+bias, relu) on host buffers: b K×n, c M×n row-major, bias
     * M floats or NULL; threads 0 = all cores. */
    spf_status (*execute)(const spf_matrix *a, int64_t n, const float *b, float *c,
                          const float *bias, int relu, int threads);
} run_backend;

/* The backend for a --backend choice on this device, or NULL with the
 * status to report and why (e.g. no GPU backend) written into why. */
const run_backend *run_backend_select(int choice, const spf_device_info *device, spf_status *status,
                                      char *why, size_t why_cap);

#endif
