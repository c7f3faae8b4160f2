/* The generic strategy's row (strategy.h): the precompiled CSR kernel of
 * generic.h, for any matrix that fits its int32 offsets. */
#include "strategy/generic/generic.h"

#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/matrix.h"
#include "gpu/launch_order.h"
#include "strategy/roofline.h"
#include "strategy/strategy.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct generic_state {
    generic_csr csr;
    problem p;    /* the matrix pointer is not kept (a->... read at build only) */
    launch_order order; /* with long rows cut: their partial sums are shared */
} generic_state;

static int generic_supports(const problem *p, const spf_device_info *dev,
                            const spf_plan_options *o, char *reason, size_t cap)
{
    (void)o;
#ifndef SPF_HAVE_CUDA /* the checks below still compile, so they stay in step */
    snprintf(reason, cap, "built without CUDA");
    return 0;
#endif
    if (!dev || !dev->available) {
        snprintf(reason, cap, "no device: %s", dev ? dev->reason : "none");
        return 0;
    }
    if (dev->cc_major < 8) {
        snprintf(reason, cap, "compiled for compute capability 8.0 and 9.0; the device is %d.%d",
                 dev->cc_major, dev->cc_minor);
        return 0;
    }
    if (p->math == SPF_MATH_F16X2) {
        snprintf(reason, cap, "accumulates in fp32 only (math f16x2 asked)");
        return 0;
    }
    if (p->a->nnz > INT32_MAX || p->k * p->n > INT32_MAX || p->m * p->n > INT32_MAX) {
        snprintf(reason, cap, "nnz, K·N or M·N reach 2^31 (the kernel's int32 offsets)");
        return 0;
    }
    return 1;
}

/* The roofline of CUDA-core FMAs over A's CSR arrays, B once and C once
 * (strategy/roofline.h: optimistic by the same rule as every estimate). */
static double generic_estimate_us(const problem *p, const spf_device_info *dev)
{
    double e = (double)dtype_size(p->dtype), nnz = (double)p->a->nnz, n = (double)p->n;
    double bytes = nnz * 8 + (double)(p->m + 1) * 4 + ((double)p->k + (double)p->m) * n * e;
    double peak = roofline_peak_flops(dev, p->dtype, p->math, ROOFLINE_CUDA_CORES);
    return roofline_us(2 * nnz * n, bytes, peak, roofline_bandwidth(dev), 1);
}

static spf_status generic_build(const problem *p, const strategy_env *env, void **state,
                                spf_plan_info *info)
{
    (void)env;
    *state = NULL;
    generic_state *s = mem_calloc(1, sizeof *s);
    if (!s)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "a generic plan");
    s->p = *p;
    s->p.a = NULL;
    spf_status status = SPF_OK;
    TRY(generic_csr_upload(p->a, &s->csr));
    /* The shape as launched on cudaMalloc'd (256-byte aligned) buffers;
     * less aligned caller buffers may get narrower vectors. */
    generic_launch l;
    const void *aligned = (const void *)(uintptr_t)256;
    TRY(generic_launch_choose(&s->csr, p, aligned, aligned, &l));
    TRY(generic_csr_cut_long_rows(&s->csr, p->a, &l));
    if (s->csr.pieces > 0)
        TRY(launch_order_init(&s->order, "generic"));
    generic_launch_name(&l, info->kernel_name, sizeof info->kernel_name);
    snprintf(info->config, sizeof info->config, "v%d_sw%d_rs%d", l.vec, l.subwarp, l.split);
    if (s->csr.pieces > 0) {
        size_t used = strlen(info->kernel_name);
        snprintf(info->kernel_name + used, sizeof info->kernel_name - used, "_long%d",
                 s->csr.long_rows);
        used = strlen(info->config);
        snprintf(info->config + used, sizeof info->config - used,
                 ", %d rows longer than %lld cut in %d pieces", s->csr.long_rows,
                 (long long)generic_long_threshold(&s->csr, &l), s->csr.pieces);
    }
    info->device_bytes = (int64_t)(p->m + 1) * 4 * 2 + (int64_t)p->a->nnz * 8 +
                         (int64_t)s->csr.pieces * (8 + 4 * p->n) + (int64_t)s->csr.long_rows * 8;
    *state = s;
    return SPF_OK;
fail:
    launch_order_release(&s->order);
    generic_csr_release(&s->csr);
    mem_free(s);
    return status;
}

typedef struct generic_call {
    const generic_state *s;
    const void *b;
    void *c;
    const float *bias;
} generic_call;

static spf_status run_call(const void *ctx, void *stream)
{
    const generic_call *call = ctx;
    return generic_csr_launch(&call->s->csr, &call->s->p, call->b, call->c, call->bias, stream);
}

static spf_status generic_launch_state(const void *state, const void *b, void *c,
                                       const float *bias, void *stream)
{
    const generic_state *s = state;
    generic_call call = {s, b, c, bias};
    if (s->csr.pieces == 0)
        return run_call(&call, stream);
    /* the long rows' pieces share the plan's partial sums: one launch at a time */
    return launch_ordered(&s->order, run_call, &call, stream);
}

static void generic_release(void *state)
{
    generic_state *s = state;
    if (!s)
        return;
    launch_order_release(&s->order);
    generic_csr_release(&s->csr);
    mem_free(s);
}

/* Nothing is compiled: the entry keeps the plan's info (its timing) and
 * decode uploads the matrix again. */
static spf_status generic_encode(const void *state, unsigned char **bytes, size_t *size)
{
    (void)state;
    *bytes = NULL;
    *size = 0;
    return SPF_OK;
}

static spf_status generic_decode(const problem *p, const strategy_env *env,
                                 const spf_plan_info *stored, const unsigned char *bytes,
                                 size_t size, void **state)
{
    (void)stored, (void)bytes;
    if (size != 0)
        return FAIL(SPF_ERR_PARSE, "a generic entry of %zu bytes: expected none", size);
    spf_plan_info scratch = {0};
    return generic_build(p, env, state, &scratch);
}

const strategy strategy_generic = {
    .id = SPF_STRATEGY_GENERIC,
    .name = "generic",
    .on_device = 1,
    .supports = generic_supports,
    .estimate_us = generic_estimate_us,
    .build = generic_build,
    .launch = generic_launch_state,
    .release = generic_release,
    .encode = generic_encode,
    .decode = generic_decode,
};
