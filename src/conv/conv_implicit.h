/* A conv plan's IMPLICIT path (issue 14 item 2): a kernel that reads the
 * input itself, so no im2col is written to memory. Three kernels can take
 * it:
 *   - the window kernel (conv_window.h): NHWC, any filter, 1×1 included;
 *     it stages the input under a tile of positions in shared memory and
 *     adds the residual in its epilogue;
 *   - the generic strategy's N×K kernel reading B as the implicit im2col
 *     (strategy/generic/generic.h, generic_im2col): either layout, one
 *     launch an image in NCHW; not for 1×1 direct convolutions (the input
 *     is B already);
 *   - the unrolled strategy's generated kernel with the implicit gather
 *     (strategy/unrolled/unrolled.h, unrolled_generate_gather; SparseRT,
 *     paper 004 §4.3): each nonzero a load at its tap's immediate offset
 *     and an fma with the value as an immediate; either layout, 1×1
 *     included; compiled for each configuration, so AUTO offers it only to
 *     weights of at most CONV_UNROLLED_AUTO_NNZ nonzeros (UNROLLED to any);
 *   - the tensor-core kernel (conv_tc.h): NHWC with C a multiple of 8,
 *     f16 and bf16; the weights expanded into a shared-memory tile, B
 *     gathered into the shared-memory stage, mma.sync; adds the residual
 *     in its epilogue;
 *   - the warpgroup kernel (conv_wg.h): Hopper, NHWC at stride 1, C and K
 *     multiples of 64, f16 and bf16; the input rows under a block read
 *     once for every tap; the weights dense (wgmma) or their 2:4 part
 *     (wgmma.sp) with the strays on the CUDA cores; adds the residual in
 *     its epilogue.
 * conv_implicit_choices lists the kernels (and configs) that take a
 * convolution for the plan's strategy (GENERIC: the first two, UNROLLED:
 * the third, TC: the last two, AUTO: all); conv_select times them and keeps
 * the fastest. The
 * weights come with their columns in B's order (conv_gather.h: (r, s, c)
 * for NHWC). Device plans only. */
#ifndef SPF_CONV_CONV_IMPLICIT_H
#define SPF_CONV_CONV_IMPLICIT_H

#include "conv/conv_gather.h"
#include "conv/conv_tc.h"
#include "conv/conv_wg.h"
#include "conv/conv_window.h"
#include "spforge.h"

#include <stddef.h>

typedef struct conv_implicit conv_implicit;

typedef enum conv_implicit_kind {
    CONV_IMPLICIT_WINDOW,
    CONV_IMPLICIT_GENERIC,
    CONV_IMPLICIT_UNROLLED,
    CONV_IMPLICIT_TC,
    CONV_IMPLICIT_WG
} conv_implicit_kind;

/* One candidate: a kernel, and its config where it has one. */
typedef struct conv_implicit_choice {
    conv_implicit_kind kind;
    conv_window_config cfg;    /* WINDOW only   */
    spf_kernel_config unrolled; /* UNROLLED only */
    conv_tc_config tc;          /* TC only       */
    conv_wg_geom wg;            /* WG only: its geometry      */
} conv_implicit_choice;

enum {
    CONV_UNROLLED_CONFIGS = 2,
    CONV_IMPLICIT_MAX_CHOICES =
        CONV_WINDOW_MAX_CONFIGS + 1 + CONV_UNROLLED_CONFIGS + CONV_TC_MAX_CONFIGS +
        CONV_WG_WIDTHS * (4 + 2 * CONV_WG_SPLIT_CHOICES), /* the warpgroup kernel: its
                               widths × 3 ways with the weights, the staged one
                               also with one stage (conv_wg_one_stage), and
                               split, each with one stage too (conv_wg_split) */
    /* AUTO's limit for the unrolled kernel: compiled per plan and config,
     * and ptxas's time grows with the code (a ResNet-50 3×3 layer of 64
     * channels at 0.9 has 3 686 nonzeros, of 256 channels 58 982) */
    CONV_UNROLLED_AUTO_NNZ = 16384
};

/* The choices for this convolution (direct: 1×1, stride 1, no padding) on
 * device `dev` with options o (strategy, dtype, math, bias, relu; the
 * kernels' limits, their int32 offsets among them), at most
 * CONV_IMPLICIT_MAX_CHOICES into out; their count. When none, reason says
 * why not. */
int conv_implicit_choices(const spf_matrix *w, const conv_gather *g, const spf_plan_options *o,
                          const spf_device_info *dev, int direct, conv_implicit_choice *out,
                          char *reason, size_t cap);

/* Upload w (and the generic kernel's taps) for choice c to the current
 * device. relu and residual: the convolution's; a kernel that does not
 * add the residual leaves the ReLU to the plan's residual add too. *out is
 * NULL on failure. */
spf_status conv_implicit_create(const spf_matrix *w, const conv_gather *g,
                                const spf_plan_options *o, int relu, int residual,
                                const conv_implicit_choice *c, conv_implicit **out);

/* Whether the kernel adds the residual itself (the window and
 * tensor-core kernels do; after the generic one the plan adds it). */
int conv_implicit_fuses_residual(const conv_implicit *x);

/* One launch over a launch's input (an NCHW image, or the NHWC batch):
 * out = w·im2col(in) (+bias) (+residual: only where the kernel fuses it,
 * else NULL) (ReLU), on stream. */
spf_status conv_implicit_launch(const conv_implicit *x, const void *in, void *out,
                                const float *bias, const void *residual, void *stream);

/* The kernel's name and launch shape, as an SpMM plan's info gives them. */
void conv_implicit_describe(const conv_implicit *x, spf_plan_info *info);

void conv_implicit_free(conv_implicit *x); /* accepts NULL */

#endif
