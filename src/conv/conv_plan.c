/* Conv plans (spforge.h, issue 14): a convolution as an SpMM plan over
 * the columns of its im2col. 1×1 stride-1 convolutions need no gather (the
 * input is B: NHWC is N·H·W × C, n_first; an NCHW image is C × H·W,
 * n_last); the others gather the im2col into the plan's workspace first
 * (conv_gather.h; NHWC's with the weights' columns in (r, s, c) order).
 * NHWC runs one launch for the batch and writes the output as SpMM's C
 * n_first; NCHW one launch per image, C n_last, since
 * K_out × N·P·Q is not NCHW's order. The residual add follows the SpMM,
 * with the ReLU moved after it. The IMPLICIT path (conv_implicit.h,
 * conv_select.c) reads the input in its kernel instead; the window kernel
 * adds the residual in its epilogue. */
#include "conv/conv_plan.h"

#include "core/alloc.h"
#include "core/budget.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "core/overlap.h"
#include "plan/options.h"
#include "strategy/strategy.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#ifdef SPF_HAVE_CUDA
#include "gpu/cuda_check.h"
#include "gpu/elementwise.h"

#include <cuda_runtime_api.h>
#endif

void spf_conv_desc_init(spf_conv_desc *desc)
{
    if (!desc)
        return;
    memset(desc, 0, sizeof *desc);
    desc->size = sizeof *desc;
    desc->batch = 1;
    desc->kernel_h = desc->kernel_w = 1;
    desc->stride = 1;
    desc->layout = SPF_CONV_NCHW;
}

const char *spf_conv_path_name(spf_conv_path path)
{
    switch (path) {
    case SPF_CONV_DIRECT: return "direct";
    case SPF_CONV_IM2COL: return "im2col";
    case SPF_CONV_IMPLICIT: return "implicit";
    case SPF_CONV_DENSE: return "dense";
    }
    return "?";
}

/* desc as the reference's shape, checked (every field named on error). */
static spf_status shape_of(const spf_matrix *w, const spf_conv_desc *d, conv_shape *s)
{
    CHECK_ARG(w != NULL && d != NULL);
    if (d->size < sizeof *d || d->size > GROWABLE_MAX)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "conv desc: size %u, expected %zu or the larger "
                    "size of a later header (spf_conv_desc_init sets it)", d->size, sizeof *d);
    if (d->layout != SPF_CONV_NCHW && d->layout != SPF_CONV_NHWC)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "conv desc: layout %d, expected SPF_CONV_NCHW or "
                    "SPF_CONV_NHWC", (int)d->layout);
    *s = (conv_shape){.n = d->batch, .c = d->channels, .h = d->height, .w = d->width,
                      .k = spf_matrix_rows(w), .r = d->kernel_h, .s = d->kernel_w,
                      .stride = d->stride, .pad = d->padding,
                      .layout = d->layout == SPF_CONV_NHWC ? CONV_NHWC : CONV_NCHW};
    return conv_shape_check(s, w);
}

spf_status spf_reference_conv2d(const spf_matrix *weights, const spf_conv_desc *desc,
                                const float *input, const float *bias, const float *residual,
                                int relu, float *output)
{
    conv_shape s;
    spf_status status = shape_of(weights, desc, &s);
    return status != SPF_OK ? status
                            : reference_conv2d(weights, &s, input, bias, residual, relu, output);
}

void conv_workspace_free(spf_conv_plan *p)
{
    if (!p->workspace)
        return;
    if (p->info.host)
        mem_free(p->workspace);
#ifdef SPF_HAVE_CUDA
    else
        (void)cudaFree(p->workspace);
#endif
    p->workspace = NULL;
}

/* The im2col buffer, on the plan's side: host memory for a CPU plan, else
 * the device's. */
static spf_status workspace_alloc(spf_conv_plan *p, int device)
{
    const size_t bytes = (size_t)p->info.workspace_bytes;
    if (p->info.host) {
        spf_status status = budget_check("conv", p->info.workspace_bytes, "the im2col workspace");
        if (status != SPF_OK)
            return status;
        p->workspace = mem_alloc(bytes);
        return p->workspace ? SPF_OK
                            : FAIL(SPF_ERR_OUT_OF_MEMORY, "conv: an im2col workspace of %zu bytes",
                                   bytes);
    }
#ifdef SPF_HAVE_CUDA
    int previous = -1;
    spf_status status = CUDA_CHECK(cudaGetDevice(&previous));
    if (status == SPF_OK)
        status = CUDA_CHECK(cudaSetDevice(device));
    if (status == SPF_OK)
        status = CUDA_CHECK(cudaMalloc(&p->workspace, bytes));
    if (previous >= 0 && previous != device)
        (void)cudaSetDevice(previous);
    if (status != SPF_OK)
        error_prefix("conv: an im2col workspace of %zu bytes on device %d: ", bytes, device);
    return status;
#else
    (void)device;
    return FAIL(SPF_ERR_NO_DEVICE, "conv: built without CUDA");
#endif
}

/* The DIRECT or IM2COL path: the SpMM plan over w (the weights in B's
 * column order) and, for IM2COL, its workspace. */
static spf_status explicit_create(spf_conv_plan *p, const spf_matrix *w,
                                  const spf_plan_options *o, int direct)
{
    spf_status status = spf_plan_create(w, p->gather.cols, o, &p->spmm);
    spf_plan_info pi = {.size = sizeof pi};
    if (status == SPF_OK)
        status = spf_plan_get_info(p->spmm, &pi);
    if (status != SPF_OK)
        return status;
    p->dtype = pi.dtype;
    p->elem = dtype_size(pi.dtype);
    p->info.host = pi.strategy == SPF_STRATEGY_CPU;
    if (direct)
        return SPF_OK;
    /* < 2^63: conv_shape_check */
    const int64_t gathered = spf_matrix_cols(w) * (int64_t)p->gather.cols;
    if (gathered > INT64_MAX / (int64_t)p->elem)
        return FAIL(SPF_ERR_UNSUPPORTED, "conv: an im2col of %lld elements passes 2^63 bytes",
                    (long long)gathered);
    p->info.workspace_bytes = gathered * (int64_t)p->elem;
    return workspace_alloc(p, o->device);
}

/* The DENSE path (conv_dense.h) into p, p->relu applied after the
 * residual as the plan's; where cuDNN is not there or takes no algorithm,
 * nothing (logged): the other paths stand. Alone (DENSE) it is the plan's
 * path. */
static void dense_try(spf_conv_plan *p, const spf_matrix *w, const conv_shape *s,
                      const spf_plan_options *o)
{
    spf_device_info dev;
    if (spf_device_query(o->device, &dev) != SPF_OK || !dev.available) {
        error_clear();
        return;
    }
    if (conv_dense_create(w, s, o, p->relu, &p->dense) != SPF_OK) {
        log_msg(SPF_LOG_INFO, "conv: no dense path: %s", spf_last_error());
        error_clear();
        return;
    }
    if (!p->spmm) {
        p->dtype = o->dtype;
        p->elem = dtype_size(o->dtype);
        p->info.path = SPF_CONV_DENSE;
        p->info.launches = 1;
    }
}

/* The strategies with kernels of their own over the implicit im2col
 * (conv_implicit.h); the others run the explicit path. */
static int implicit_strategy(spf_strategy s)
{
    return s == SPF_STRATEGY_AUTO || s == SPF_STRATEGY_GENERIC || s == SPF_STRATEGY_UNROLLED ||
           s == SPF_STRATEGY_TC;
}

/* The IMPLICIT path's choices (conv_implicit.h) when AUTO, GENERIC,
 * UNROLLED or TC asked, on the plan's device; their count (why none goes
 * to the log). */
static int implicit_choices(const spf_matrix *w, const conv_gather *g, const spf_plan_options *o,
                            int direct, conv_implicit_choice *out)
{
    if (!implicit_strategy(o->strategy)) {
        if (o->strategy != SPF_STRATEGY_DENSE && o->strategy != SPF_STRATEGY_CPU)
            log_msg(SPF_LOG_INFO, "conv: strategy %s has no kernel over the implicit im2col "
                    "(its kernels stage B's tiles from memory); the explicit im2col",
                    spf_strategy_name(o->strategy));
        return 0;
    }
    if (!dtype_valid(o->dtype))
        return 0;
    spf_device_info dev;
    char reason[400];
    if (spf_device_query(o->device, &dev) != SPF_OK) {
        error_clear();
        return 0;
    }
    const int n = conv_implicit_choices(w, g, o, &dev, direct, out, reason, sizeof reason);
    if (n == 0)
        log_msg(SPF_LOG_INFO, "conv: no implicit im2col: %s", reason);
    return n;
}

spf_status spf_conv_plan_create(const spf_matrix *weights, const spf_conv_desc *desc,
                                const spf_plan_options *options, spf_conv_plan **out)
{
    CHECK_ARG(weights != NULL && desc != NULL && out != NULL);
    *out = NULL;
    conv_shape s;
    spf_status status = shape_of(weights, desc, &s);
    if (status != SPF_OK)
        return status;
    spf_plan_options o;
    status = plan_options_read(options, &o);
    if (status != SPF_OK)
        return status;
    const int nhwc = desc->layout == SPF_CONV_NHWC;
    const int64_t p_out = conv_out_h(&s), q_out = conv_out_w(&s);
    const int64_t cols = nhwc ? s.n * p_out * q_out : p_out * q_out;
    if (cols > INT32_MAX)
        return FAIL(SPF_ERR_UNSUPPORTED, "conv: %lld output positions a launch: the SpMM takes "
                    "fewer than 2^31 columns", (long long)cols);

    if (!nhwc && s.n > INT32_MAX)
        return FAIL(SPF_ERR_UNSUPPORTED, "conv: batch %lld in NCHW (a launch per image)",
                    (long long)s.n);
    if (s.c > INT32_MAX || s.h > INT32_MAX || s.w > INT32_MAX || s.r > INT32_MAX ||
        s.s > INT32_MAX || s.stride > INT32_MAX)
        return FAIL(SPF_ERR_UNSUPPORTED, "conv: a size, filter side or stride past 2^31 - 1");
    /* NCHW launches an image at a time: the dense strategy's cuBLASLt
     * algorithm needs B and C at 16 bytes, which images of other sizes are
     * not (NHWC's one launch has no such offsets) */
    const size_t elem = dtype_valid(o.dtype) ? dtype_size(o.dtype) : 4;
    const int direct = s.r == 1 && s.s == 1 && s.stride == 1 && s.pad == 0;
    const int dense_allowed = o.dense != 0; /* cuDNN's path needs no 16-byte images */
    const int64_t in_image = s.c * s.h * s.w, out_image = s.k * p_out * q_out;
    if (!nhwc && s.n > 1 &&
        ((direct && in_image * (int64_t)elem % 16) || out_image * (int64_t)elem % 16)) {
        if (o.strategy == SPF_STRATEGY_DENSE)
            return FAIL(SPF_ERR_UNSUPPORTED, "conv: the dense strategy needs every image of B and "
                        "C at 16 bytes; NCHW images of %lld and %lld bytes are not (NHWC is one "
                        "launch)", (long long)(in_image * (int64_t)elem),
                        (long long)(out_image * (int64_t)elem));
        o.dense = 0;
    }

    spf_conv_plan *p = mem_calloc(1, sizeof *p);
    if (!p)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "a conv plan");
    p->implicit_chosen = -1;
    p->gather = (conv_gather){.c = (int32_t)s.c, .h = (int32_t)s.h, .w = (int32_t)s.w,
                              .r = (int32_t)s.r, .s = (int32_t)s.s, .stride = (int32_t)s.stride,
                              .pad = (int32_t)s.pad, .p = (int32_t)p_out, .q = (int32_t)q_out,
                              .cols = (int32_t)cols, .nhwc = nhwc};
    p->residual = desc->residual != 0;
    p->relu = o.relu != 0;
    p->math = o.math;
    p->in_step = nhwc ? 0 : in_image;
    p->out_step = nhwc ? 0 : out_image;
    p->in_count = conv_input_count(&s);
    p->out_count = conv_output_count(&s);
    p->bias_count = o.bias ? s.k : 0;
    p->info = (spf_conv_info){.size = sizeof p->info,
                              .path = direct ? SPF_CONV_DIRECT : SPF_CONV_IM2COL,
                              .out_h = p_out, .out_w = q_out, .spmm_n = cols,
                              .launches = nhwc ? 1 : (int)s.n};

    o.b_layout = o.c_layout = nhwc ? SPF_LAYOUT_N_FIRST : SPF_LAYOUT_N_LAST;
    if (p->residual)
        o.relu = 0;
    /* NHWC's B rows are (r, s, c) (conv_gather.h): the weights' columns
     * follow (a 1×1 filter has one tap, nothing to move) */
    spf_matrix *tap_major = NULL;
    if (nhwc && s.r * s.s > 1)
        status = conv_weights_tap_major(weights, (int32_t)s.c, (int32_t)(s.r * s.s), &tap_major);
    const spf_matrix *w = tap_major ? tap_major : weights;
    /* item 2: kernels that read the input themselves (conv_implicit.h);
     * AUTO times them against the explicit path, GENERIC, UNROLLED and TC
     * take their own alone */
    conv_implicit_choice choices[CONV_IMPLICIT_MAX_CHOICES];
    const int implicit =
        status == SPF_OK ? implicit_choices(w, &p->gather, &o, direct, choices) : 0;
    if (status == SPF_OK && o.strategy == SPF_STRATEGY_DENSE)
        dense_try(p, w, &s, &o);
    if (status == SPF_OK && !p->dense && !(implicit && o.strategy != SPF_STRATEGY_AUTO))
        status = explicit_create(p, w, &o, direct);
    if (status == SPF_OK && o.strategy == SPF_STRATEGY_AUTO && dense_allowed && p->spmm &&
        !p->info.host)
        dense_try(p, w, &s, &o);
    if (status == SPF_OK && (implicit || p->dense)) {
        if (!p->spmm)
            p->dtype = o.dtype, p->elem = dtype_size(o.dtype);
        status = conv_select(p, w, weights, &s, &o, choices, implicit);
    }
    spf_matrix_free(tap_major);
    if (status != SPF_OK) {
        spf_conv_plan_free(p);
        return status;
    }
    *out = p;
    return SPF_OK;
}

static spf_status residual_add(const spf_conv_plan *p, void *output, const void *residual,
                               void *stream)
{
    if (p->info.host) {
        conv_residual_host(output, residual, p->out_count, p->relu);
        return SPF_OK;
    }
#ifdef SPF_HAVE_CUDA
    return elementwise_epilogue(p->dtype, output, NULL, 1, 1, residual, p->out_count, p->relu,
                                stream);
#else
    (void)stream;
    return FAIL(SPF_ERR_NO_DEVICE, "conv: built without CUDA");
#endif
}

static spf_status gather(const spf_conv_plan *p, const void *input, void *stream)
{
    if (p->info.host) {
        conv_gather_host(&p->gather, input, p->workspace, p->elem);
        return SPF_OK;
    }
#ifdef SPF_HAVE_CUDA
    return conv_gather_launch(&p->gather, input, p->workspace, p->elem, stream);
#else
    (void)stream;
    return FAIL(SPF_ERR_NO_DEVICE, "conv: built without CUDA");
#endif
}

spf_status conv_run(const spf_conv_plan *p, spf_conv_path path, const void *input, void *output,
                    const float *bias, const void *residual, void *stream)
{
    spf_status status = SPF_OK;
    if (path == SPF_CONV_DENSE) /* the batch at once, with its own epilogue */
        return conv_dense_run(p->dense, input, output, bias, residual, stream);
    const int fused = path == SPF_CONV_IMPLICIT && conv_implicit_fuses_residual(p->implicit);
    for (int i = 0; i < p->info.launches; i++) {
        const int64_t in_at = i * p->in_step * (int64_t)p->elem;
        const int64_t out_at = i * p->out_step * (int64_t)p->elem;
        const void *image = (const unsigned char *)input + in_at;
        void *out = (unsigned char *)output + out_at;
        if (path == SPF_CONV_IMPLICIT) {
            const void *skip = fused && residual ? (const unsigned char *)residual + out_at : NULL;
            TRY(conv_implicit_launch(p->implicit, image, out, bias, skip, stream));
            continue;
        }
        if (path == SPF_CONV_IM2COL)
            TRY(gather(p, image, stream));
        TRY(spf_plan_execute(p->spmm, path == SPF_CONV_IM2COL ? p->workspace : image, out, bias,
                             stream));
    }
    if (residual && !fused)
        TRY(residual_add(p, output, residual, stream));
fail:
    return status;
}

spf_status spf_conv_plan_execute(const spf_conv_plan *plan, const void *input, void *output,
                                 const float *bias, const void *residual, void *stream)
{
    CHECK_ARG(plan != NULL && input != NULL && output != NULL);
    if (plan->residual != (residual != NULL))
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "conv: the plan was made %s a residual (desc."
                    "residual) and execute was given %s", plan->residual ? "with" : "without",
                    residual ? "one" : "none");
    const uint64_t out_bytes = (uint64_t)plan->out_count * plan->elem;
    spf_status status;
    TRY(output_disjoint(__func__, output, out_bytes, input, (uint64_t)plan->in_count * plan->elem,
                        bias, (uint64_t)plan->bias_count * sizeof(float)));
    if (residual)
        TRY(output_disjoint(__func__, output, out_bytes, residual, out_bytes, NULL, 0));
    TRY(conv_run(plan, plan->info.path, input, output, bias, residual, stream));
fail:
    return status;
}

spf_status spf_conv_plan_get_info(const spf_conv_plan *plan, spf_conv_info *out)
{
    CHECK_ARG(plan != NULL && out != NULL);
    if (out->size < sizeof *out || out->size > GROWABLE_MAX)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "info.size %u: expected %zu or the larger size of "
                    "a later header (set it to sizeof(spf_conv_info))", out->size, sizeof *out);
    *out = plan->info;
    out->spmm.size = sizeof out->spmm;
    if (plan->spmm)
        return spf_plan_get_info(plan->spmm, &out->spmm);
    /* the implicit kernels AUTO timed, beside the dense or implicit one kept */
    out->spmm.candidate_count = plan->implicit_kind_count;
    for (int c = 0; c < plan->implicit_kind_count; c++) {
        out->spmm.candidates[c] = plan->implicit_kinds[c];
        if (c == plan->implicit_chosen)
            out->spmm.candidates[c].outcome = SPF_CANDIDATE_CHOSEN;
    }
    if (plan->dense) {
        snprintf(out->spmm.kernel_name, sizeof out->spmm.kernel_name, "%s",
                 conv_dense_name(plan->dense));
        out->spmm.strategy = SPF_STRATEGY_DENSE;
        out->spmm.dtype = plan->dtype;
        out->spmm.math = plan->math;
        out->spmm.kernel_us = plan->info.dense_us;
        return SPF_OK;
    }
    /* IMPLICIT: the generic kernel stands where the SpMM plan would */
    conv_implicit_describe(plan->implicit, &out->spmm);
    out->spmm.math = plan->math;
    out->spmm.kernel_us = plan->info.implicit_us;
    return SPF_OK;
}

void spf_conv_plan_free(spf_conv_plan *plan)
{
    if (!plan)
        return;
    conv_workspace_free(plan);
    conv_implicit_free(plan->implicit);
    conv_dense_free(plan->dense);
    spf_plan_free(plan->spmm);
    mem_free(plan);
}
