/* The conv plans' dense path (issue 14; spf_conv_path SPF_CONV_DENSE):
 * cuDNN's convolution on the weights expanded dense, the conv plans'
 * floor as the DENSE strategy is the SpMM plans' (DESIGN.md decision 7).
 * A pruned layer at batch 32 ran 0.44-0.56x of cuDNN through the explicit
 * im2col and cuBLASLt (bench/results/conv/): with cuDNN among the
 * candidates AUTO times, a conv plan is not slower than it. Bias, the
 * residual and ReLU follow in one pass (gpu/elementwise.h). CUDA
 * builds; cuDNN loaded at run time (cudnn_api.h). */
#ifndef SPF_CONV_CONV_DENSE_H
#define SPF_CONV_CONV_DENSE_H

#include "ref/conv.h"
#include "spforge.h"

typedef struct conv_dense conv_dense;

/* The dense convolution of s on o->device in o's dtype and math: w is the
 * weights with their columns in the layout's filter order ((c, r, s) for
 * NCHW, (r, s, c) for NHWC), expanded dense on the device; of the
 * execution plans cuDNN's heuristics list first (cudnn_api.h's backend
 * API), the fastest on random input, its workspace at most 256 MB.
 * SPF_ERR_UNSUPPORTED (with why) where cuDNN is not loaded or builds no
 * plan. */
spf_status conv_dense_create(const spf_matrix *w, const conv_shape *s, const spf_plan_options *o,
                             int relu, conv_dense **out);

/* out = conv(in) (+ bias) (+ residual) (ReLU when the plan's relu) on
 * stream, the whole batch at once; bias and residual may be NULL; in and
 * out aligned to 16 bytes (SPF_ERR_INVALID_ARGUMENT otherwise: the plan
 * was built for that). One execute at a time (the workspace and cuDNN's
 * handle are the plan's). */
spf_status conv_dense_run(const conv_dense *d, const void *in, void *out, const float *bias,
                          const void *residual, void *stream);

/* "cudnn_<engine index>_<f32|f16|bf16>" */
const char *conv_dense_name(const conv_dense *d);
void conv_dense_free(conv_dense *d); /* accepts NULL */

#endif
