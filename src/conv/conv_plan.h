/* The conv plan's insides (spforge.h's spf_conv_plan), shared by the API
 * (conv_plan.c) and the device's choice of path (conv_select.c). */
#ifndef SPF_CONV_CONV_PLAN_H
#define SPF_CONV_CONV_PLAN_H

#include "conv/conv_dense.h"
#include "conv/conv_gather.h"
#include "conv/conv_implicit.h"
#include "ref/conv.h"
#include "spforge.h"

struct spf_conv_plan {
    spf_plan *spmm;          /* DIRECT and IM2COL: the SpMM plan, else NULL   */
    conv_implicit *implicit; /* IMPLICIT: the kernel reading the input, else NULL */
    conv_dense *dense;       /* DENSE: cuDNN's convolution, else NULL          */
    conv_gather gather;
    spf_conv_info info;      /* spmm left empty: spf_conv_plan_get_info asks the plan */
    spf_dtype dtype;
    spf_math math;
    size_t elem;             /* bytes of one element of the dtype                    */
    int residual, relu;      /* relu: after the residual (the SpMM plan has none then) */
    int64_t in_step, out_step; /* elements between the images of two launches         */
    int64_t in_count, out_count; /* elements of the input and of the output           */
    int64_t bias_count;      /* K_out with bias, else 0                             */
    void *workspace;
    /* the fastest config of each implicit kernel kind conv_select timed
     * (the window, generic, unrolled and tc kernels, the warpgroup kernel
     * dense and sparse), by kind, in the order first timed; which was kept
     * is implicit_chosen (-1: none, the plan runs another path) */
    spf_candidate implicit_kinds[SPF_MAX_CANDIDATES];
    int implicit_kind_count, implicit_chosen;
};

/* The launches of one execute on path: the gather and the SpMM (or the
 * SpMM alone, DIRECT), or the implicit kernel, for each image of NCHW (the
 * batch at once in NHWC); then the residual add (residual: NULL for a plan
 * without one) unless the implicit kernel added it. */
spf_status conv_run(const spf_conv_plan *p, spf_conv_path path, const void *input, void *output,
                    const float *bias, const void *residual, void *stream);

/* Choose p's path on o->device among those it holds: the explicit one
 * (p->spmm), the dense one (p->dense) and the IMPLICIT one, built here
 * from w (the weights with their columns in B's order), each of the count
 * choices (conv_implicit.h) timed on random input and the fastest kept.
 * Every path held is timed as an execute runs it, the fastest kept and the
 * others released (info's im2col_us, implicit_us and dense_us say what
 * each took). If IMPLICIT or DENSE is kept and o->verify, check it against
 * the CPU reference (of weights and s, as the caller gave them) on random
 * input, bias and residual: SPF_ERR_VERIFY over the tolerance. */
spf_status conv_select(spf_conv_plan *p, const spf_matrix *w, const spf_matrix *weights,
                       const conv_shape *s, const spf_plan_options *o,
                       const conv_implicit_choice *choices, int count);

/* Free the im2col workspace (none: nothing). */
void conv_workspace_free(spf_conv_plan *p);

#endif
