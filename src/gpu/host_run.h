/* Run a GPU plan on host operands: the `spforge run` GPU backend. Uploads
 * B (and the bias), poisons C, times the plan's launches with the protocol
 * of timing.c and downloads C. Allocation and copies happen here, outside
 * the timed region and outside spf_plan_execute. */
#ifndef SPF_GPU_HOST_RUN_H
#define SPF_GPU_HOST_RUN_H

#include "gpu/timing.h"
#include "spforge.h"

/*   b:    host, K×n float32       c: host, M×n float32, overwritten
 *   bias: host, M floats, or NULL (the plan must have been made with bias)
 * SPF_ERR_NO_DEVICE in a build without CUDA. */
spf_status host_run_plan(const spf_plan *plan, int64_t m, int64_t k, int64_t n, const float *b,
                         float *c, const float *bias, timing_result *timing);

#endif
