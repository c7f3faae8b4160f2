/* The CPU reference of a sparse 2-D convolution (issue 14), and the
 * explicit im2col that turns one into an SpMM: the oracle the conv paths
 * of the strategies will be checked against, and the fallback's gather.
 *
 * Weights W: a K_out × (C·R·S) sparse matrix, its columns ordered c, r, s
 * (c slowest), as torch's conv.weight.reshape(K_out, -1) has them; 1×1
 * convolutions are K = C, 3×3 are 9·C, ResNet-50's 7×7 stem 147 (the DLMC
 * matrices, ../shared/data). Input N×C×H×W (NCHW) or N×H×W×C (NHWC);
 * output N×K_out×P×Q in the same layout, P = (H + 2·pad − R) / stride + 1
 * and Q alike; dilation 1, groups 1. Host code, float data. */
#ifndef SPF_REF_CONV_H
#define SPF_REF_CONV_H

#include "spforge.h"

#include <stdint.h>

typedef enum conv_layout { CONV_NCHW = 0, CONV_NHWC = 1 } conv_layout;

typedef struct conv_shape {
    int64_t n, c, h, w;  /* input: batch, channels, height, width             */
    int64_t k;           /* output channels: the weights' rows                 */
    int64_t r, s;        /* filter height and width                            */
    int64_t stride, pad; /* the same along both axes                           */
    conv_layout layout;  /* of the input and the output                        */
} conv_shape;

/* SPF_OK when the shape is whole (every size ≥ 1, pad ≥ 0, an output of
 * at least 1 × 1, element counts within int64) and, with w, w is k ×
 * c·r·s; otherwise SPF_ERR_INVALID_ARGUMENT naming the field and the value
 * expected. */
spf_status conv_shape_check(const conv_shape *s, const spf_matrix *w);

int64_t conv_out_h(const conv_shape *s); /* P */
int64_t conv_out_w(const conv_shape *s); /* Q */
/* Elements of the input (n·c·h·w) and of the output (n·k·P·Q). */
int64_t conv_input_count(const conv_shape *s);
int64_t conv_output_count(const conv_shape *s);

/* The offset of input element (n, c, y, x) and of output element
 * (n, k, p, q) in the shape's layout. */
int64_t conv_input_at(const conv_shape *s, int64_t n, int64_t c, int64_t y, int64_t x);
int64_t conv_output_at(const conv_shape *s, int64_t n, int64_t k, int64_t p, int64_t q);

/* out = W ⊛ in (+ bias[k]) (+ residual, an output-shaped tensor in the
 * same layout) (ReLU), each output summed in double over W's row in
 * column order; zeros outside the input (padding). bias and residual may
 * be NULL. */
spf_status reference_conv2d(const spf_matrix *w, const conv_shape *s, const float *in,
                            const float *bias, const float *residual, int relu, float *out);

/* The explicit im2col of in: cols, (c·r·s) × (n·P·Q) row-major; row
 * (c·R + r)·S + t is W's column of channel c and filter tap (r, t), column
 * (n·P + p)·Q + q the output position; zeros where the filter reaches into
 * the padding. Then W · cols is the output as a K_out × n·P·Q matrix
 * (conv_output_at places it in the layout). */
spf_status conv_im2col(const conv_shape *s, const float *in, float *cols);

#endif
