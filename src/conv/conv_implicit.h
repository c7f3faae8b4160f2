/* A conv plan's IMPLICIT path (issue 14 item 2): the generic strategy's
 * N×K kernel reading B as the implicit im2col of the input
 * (strategy/generic/generic.h, generic_im2col), so no im2col is written to
 * memory: one launch for an NHWC batch, one an image in NCHW, as the
 * explicit path. The weights come with their columns in B's order
 * (conv_gather.h: (r, s, c) for NHWC). Device plans only. */
#ifndef SPF_CONV_CONV_IMPLICIT_H
#define SPF_CONV_CONV_IMPLICIT_H

#include "conv/conv_gather.h"
#include "spforge.h"

#include <stddef.h>

typedef struct conv_implicit conv_implicit;

/* Whether the path takes this convolution on device `dev` with options o
 * (dtype, math, bias, relu: the generic strategy's own limits, then the
 * kernel's 32-bit input offsets and 16-bit taps); reason says why not. */
int conv_implicit_supports(const spf_matrix *w, const conv_gather *g, const spf_plan_options *o,
                           const spf_device_info *dev, char *reason, size_t cap);

/* Upload w and its taps to the current device; *out is NULL on failure. */
spf_status conv_implicit_create(const spf_matrix *w, const conv_gather *g,
                                const spf_plan_options *o, conv_implicit **out);

/* One launch over a launch's input (an NCHW image, or the NHWC batch):
 * out = w·im2col(in) (+bias) (ReLU as o asked), on stream. */
spf_status conv_implicit_launch(const conv_implicit *x, const void *in, void *out,
                                const float *bias, void *stream);

/* The kernel's name and launch shape, as an SpMM plan's info gives them. */
void conv_implicit_describe(const conv_implicit *x, spf_plan_info *info);

void conv_implicit_free(conv_implicit *x); /* accepts NULL */

#endif
