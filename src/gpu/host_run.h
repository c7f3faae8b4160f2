/* Run a device plan on host operands: the `spforge run` (and `spforge
 * conv`) GPU backend.
 * Stages B (and the bias) in the plan's dtype and layout, poisons C, times
 * the plan's launches with the protocol of timing.c and reads C back as
 * float M×n. Allocation, conversion and copies happen here, outside the
 * timed region and outside spf_plan_execute. */
#ifndef SPF_GPU_HOST_RUN_H
#define SPF_GPU_HOST_RUN_H

#include "gpu/timing.h"
#include "spforge.h"

/*   b:    host, K×n float32 (rounded to the plan's dtype by the caller if
 *         the reference is to see what the kernel sees)
 *   c:    host, M×n float32, overwritten
 *   bias: host, M floats, or NULL (the plan must have been made with bias)
 *   topt: how to time (gpu/timing.h), NULL for the defaults
 * SPF_ERR_NO_DEVICE in a build without CUDA. */
spf_status host_run_plan(const spf_plan *plan, int64_t m, int64_t k, int64_t n, const float *b,
                         float *c, const float *bias, const timing_options *topt,
                         timing_result *timing);

/* The same for a device conv plan (spforge conv, the conv tests): in
 * (in_count floats, the plan's layout) and residual (out_count floats, or
 * NULL) staged in the plan's dtype, bias (bias_count floats, or NULL) as
 * is, out (out_count floats) read back. */
spf_status host_run_conv(const spf_conv_plan *plan, int64_t in_count, int64_t out_count,
                         int64_t bias_count, const float *in, const float *bias,
                         const float *residual, float *out, const timing_options *topt,
                         timing_result *timing);

/* count host floats (src) rounded to dtype into a new device buffer *dst
 * (cudaFree it), the copy finished on stream; nothing, *dst NULL, when src
 * is NULL. CUDA builds only. */
spf_status host_stage(spf_dtype dtype, const float *src, int64_t count, void **dst, void *stream);

#endif
