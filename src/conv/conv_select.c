/* conv_plan.h's conv_select: the IMPLICIT path built beside the explicit
 * one, the two timed as an execute runs them (BENCHMARKS.md's protocol,
 * gpu/timing.c) and the faster kept: a measurement, as AUTO's choice among
 * strategies is (DESIGN.md decision 7). The implicit kernel has no SpMM
 * plan's self-check, so it gets its own against the conv reference. */
#include "conv/conv_plan.h"

#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/rng.h"

#include <math.h>
#include <stdint.h>

#ifdef SPF_HAVE_CUDA
#include "gpu/cuda_check.h"
#include "gpu/host_run.h"
#include "gpu/timing.h"

#include <cuda_runtime_api.h>

typedef struct path_run {
    const spf_conv_plan *p;
    spf_conv_path path;
    const void *in;
    void *out;
    const float *bias;
} path_run;

static spf_status run_path(void *ctx, void *stream)
{
    const path_run *r = ctx;
    return conv_run(r->p, r->path, r->in, r->out, r->bias, stream);
}

static spf_status time_path(path_run *r, spf_conv_path path, double *us)
{
    timing_result t;
    r->path = path;
    spf_status status = timing_measure(run_path, r, NULL, NULL, &t);
    *us = t.median_us;
    return status;
}

/* The implicit kernel once on r's input (in: the same on the host, as
 * rounded), its output poisoned first, against the reference. */
static spf_status verify_implicit(path_run *r, const spf_matrix *weights, const conv_shape *s,
                                  const float *in, const float *bias, spf_math math)
{
    const spf_conv_plan *p = r->p;
    spf_status status = SPF_OK;
    const size_t bytes = (size_t)p->out_count * p->elem;
    void *raw = mem_alloc(bytes);
    float *got = mem_alloc_array((size_t)p->out_count, sizeof *got);
    float *want = mem_alloc_array((size_t)p->out_count, sizeof *want);
    double *ref = mem_alloc_array((size_t)p->out_count, sizeof *ref);
    if (!raw || !got || !want || !ref)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "conv: checking an output of %lld elements",
                  (long long)p->out_count);
    TRY(CUDA_CHECK(cudaMemset(r->out, 0xff, bytes))); /* NaN: an output never written fails */
    TRY(conv_run(p, SPF_CONV_IMPLICIT, r->in, r->out, r->bias, NULL));
    TRY(CUDA_CHECK(cudaMemcpy(raw, r->out, bytes, cudaMemcpyDeviceToHost)));
    dtype_to_float(p->dtype, raw, got, p->out_count);
    /* the kernel's own ReLU: none when a residual comes after it */
    TRY(reference_conv2d(weights, s, in, bias, NULL, p->relu && !p->residual, want));
    for (int64_t i = 0; i < p->out_count; i++)
        ref[i] = want[i];
    const double error = spf_relative_error(got, ref, p->out_count);
    const double tolerance = dtype_tolerance(p->dtype, math);
    if (!(error <= tolerance))
        FAIL_GOTO(SPF_ERR_VERIFY, "conv: the implicit im2col kernel's relative error %.3g "
                  "against the CPU reference, over the tolerance %.0e", error, tolerance);
fail:
    mem_free(raw);
    mem_free(got);
    mem_free(want);
    mem_free(ref);
    return status;
}

static void drop_path(spf_conv_plan *p, spf_conv_path path)
{
    if (path == SPF_CONV_IMPLICIT) {
        conv_implicit_free(p->implicit);
        p->implicit = NULL;
    } else {
        spf_plan_free(p->spmm);
        p->spmm = NULL;
        conv_workspace_free(p);
    }
}

static spf_status select_on_device(spf_conv_plan *p, const spf_matrix *weights,
                                   const conv_shape *s, const spf_plan_options *o)
{
    spf_status status = SPF_OK;
    float *in = mem_alloc_array((size_t)p->in_count, sizeof *in);
    float *bias = p->bias_count ? mem_alloc_array((size_t)p->bias_count, sizeof *bias) : NULL;
    path_run r = {.p = p};
    if (!in || (p->bias_count && !bias))
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "conv: a random input of %lld elements",
                  (long long)p->in_count);
    rng g;
    rng_seed(&g, 0xc0417u);
    for (int64_t i = 0; i < p->in_count; i++)
        in[i] = (float)(2.0 * rng_uniform(&g) - 1.0);
    for (int64_t i = 0; i < p->bias_count; i++)
        bias[i] = (float)(2.0 * rng_uniform(&g) - 1.0);
    dtype_round(p->dtype, in, p->in_count);
    TRY(host_stage(p->dtype, in, p->in_count, (void **)&r.in, NULL));
    TRY(host_stage(SPF_DTYPE_F32, bias, p->bias_count, (void **)&r.bias, NULL));
    TRY(CUDA_CHECK(cudaMalloc(&r.out, (size_t)(p->out_count > 0 ? p->out_count : 1) * p->elem)));
    if (p->spmm) {
        TRY(time_path(&r, p->info.path, &p->info.im2col_us));
        TRY(time_path(&r, SPF_CONV_IMPLICIT, &p->info.implicit_us));
        const int implicit = p->info.implicit_us < p->info.im2col_us;
        drop_path(p, implicit ? p->info.path : SPF_CONV_IMPLICIT);
        if (implicit)
            p->info.path = SPF_CONV_IMPLICIT, p->info.workspace_bytes = 0;
    }
    if (p->implicit && o->verify)
        TRY(verify_implicit(&r, weights, s, in, bias, o->math));
fail:
    cudaFree((void *)r.in);
    cudaFree((void *)r.bias);
    cudaFree(r.out);
    mem_free(in);
    mem_free(bias);
    return status;
}

spf_status conv_select(spf_conv_plan *p, const spf_matrix *w, const spf_matrix *weights,
                       const conv_shape *s, const spf_plan_options *o)
{
    int previous = -1;
    spf_status status = CUDA_CHECK(cudaGetDevice(&previous));
    if (status == SPF_OK)
        status = CUDA_CHECK(cudaSetDevice(o->device));
    if (status == SPF_OK)
        status = conv_implicit_create(w, &p->gather, o, &p->implicit);
    if (status == SPF_OK && !p->spmm)
        p->info.path = SPF_CONV_IMPLICIT;
    if (status == SPF_OK)
        status = select_on_device(p, weights, s, o);
    if (previous >= 0 && previous != o->device)
        (void)cudaSetDevice(previous);
    return status;
}

#else

spf_status conv_select(spf_conv_plan *p, const spf_matrix *w, const spf_matrix *weights,
                       const conv_shape *s, const spf_plan_options *o)
{
    (void)p, (void)w, (void)weights, (void)s, (void)o;
    return FAIL(SPF_ERR_NO_DEVICE, "conv: built without CUDA");
}

#endif
