/* conv_plan.h's conv_select: the IMPLICIT path's kernels (and the window
 * kernel's configs) built beside the explicit and dense paths, each timed
 * as an execute runs it (BENCHMARKS.md's protocol, gpu/timing.c; the
 * residual add included where the path needs one) and the fastest kept: a
 * measurement, as AUTO's choice among strategies is (DESIGN.md decision
 * 7). The implicit kernels and cuDNN have no SpMM plan's self-check, so the
 * path kept gets its own against the conv reference. */
#include "conv/conv_plan.h"

#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/rng.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifdef SPF_HAVE_CUDA
#include "gpu/cuda_check.h"
#include "gpu/host_run.h"
#include "gpu/timing.h"

#include <cuda_runtime_api.h>

typedef struct path_run {
    const spf_conv_plan *p;
    spf_conv_path path;
    const void *in, *residual;
    void *out;
    const float *bias;
} path_run;

static spf_status run_path(void *ctx, void *stream)
{
    const path_run *r = ctx;
    return conv_run(r->p, r->path, r->in, r->out, r->bias, r->residual, stream);
}

/* The GPU's time of one execute on path, replayed in a CUDA graph (in a
 * launch loop the host's cost per launch, several µs on the H200's host,
 * hides kernels of a few µs, and the choice would be a coin toss), with
 * the weights cold: timing_measure's defaults. */
static spf_status time_path(path_run *r, spf_conv_path path, double *us)
{
    timing_result t;
    r->path = path;
    spf_status status = timing_measure(run_path, r, NULL, NULL, &t);
    *us = t.median_us;
    return status;
}

/* The kept path once on r's input and residual (in, residual: the same
 * on the host, as rounded), its output poisoned first, against the
 * reference. */
static spf_status verify_path(path_run *r, const spf_matrix *weights, const conv_shape *s,
                              const float *in, const float *bias, const float *residual,
                              spf_math math)
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
    TRY(conv_run(p, p->info.path, r->in, r->out, r->bias, r->residual, NULL));
    TRY(CUDA_CHECK(cudaMemcpy(raw, r->out, bytes, cudaMemcpyDeviceToHost)));
    dtype_to_float(p->dtype, raw, got, p->out_count);
    TRY(reference_conv2d(weights, s, in, bias, residual, p->relu, want));
    for (int64_t i = 0; i < p->out_count; i++)
        ref[i] = want[i];
    const double error = spf_relative_error(got, ref, p->out_count);
    const double tolerance = dtype_tolerance(p->dtype, math);
    if (!(error <= tolerance))
        FAIL_GOTO(SPF_ERR_VERIFY, "conv: the %s path's relative error %.3g against the CPU "
                  "reference, over the tolerance %.0e", spf_conv_path_name(p->info.path), error,
                  tolerance);
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
    } else if (path == SPF_CONV_DENSE) {
        conv_dense_free(p->dense);
        p->dense = NULL;
    } else {
        spf_plan_free(p->spmm);
        p->spmm = NULL;
        conv_workspace_free(p);
    }
}

/* The kind of an implicit choice as the plan's info lists them: its
 * kernel, the warpgroup kernel's sparse weights apart from its dense. */
static int kind_of(const conv_implicit_choice *c)
{
    return c->kind == CONV_IMPLICIT_WG && c->wg.weights == CONV_WG_SPARSE ? CONV_IMPLICIT_WG + 1
                                                                          : (int)c->kind;
}

/* Choice c of kind `kind` took us: p->implicit_kinds keeps the fastest of
 * each kind (its kernel's name and time). */
static void note_kind(spf_conv_plan *p, const conv_implicit *x, int kind, int *kinds, double us)
{
    int at = 0;
    while (at < p->implicit_kind_count && kinds[at] != kind)
        at++;
    if (at == SPF_MAX_CANDIDATES)
        return;
    spf_candidate *c = &p->implicit_kinds[at];
    if (at == p->implicit_kind_count) {
        p->implicit_kind_count++;
        kinds[at] = kind;
    } else if (c->kernel_us <= us) {
        return;
    }
    spf_plan_info info;
    memset(&info, 0, sizeof info);
    conv_implicit_describe(x, &info);
    *c = (spf_candidate){.strategy = info.strategy, .outcome = SPF_CANDIDATE_SLOWER,
                         .kernel_us = us};
    snprintf(c->detail, sizeof c->detail, "%s", info.kernel_name);
}

/* Build, time and keep the fastest of the implicit choices (p->implicit,
 * its time in p->info.implicit_us, its kind's entry in p->implicit_kinds
 * p->implicit_chosen); a choice its kernel turns down at build is passed
 * over. */
static spf_status fastest_implicit(spf_conv_plan *p, path_run *r, const spf_matrix *w,
                                   const spf_plan_options *o, const conv_implicit_choice *choices,
                                   int count)
{
    spf_status status = SPF_OK;
    conv_implicit *best = NULL;
    int kinds[SPF_MAX_CANDIDATES], best_kind = -1;
    for (int i = 0; i < count; i++) {
        conv_implicit *x = NULL;
        status = conv_implicit_create(w, &p->gather, o, p->relu, p->residual, &choices[i], &x);
        if (status == SPF_ERR_UNSUPPORTED) {
            error_clear();
            status = SPF_OK;
            continue;
        }
        if (status != SPF_OK)
            break;
        double us = 0;
        p->implicit = x;
        status = time_path(r, SPF_CONV_IMPLICIT, &us);
        p->implicit = NULL;
        if (status == SPF_OK)
            note_kind(p, x, kind_of(&choices[i]), kinds, us);
        if (status == SPF_OK && (!best || us < p->info.implicit_us)) {
            conv_implicit_free(best);
            best = x, x = NULL;
            p->info.implicit_us = us;
            best_kind = kind_of(&choices[i]);
        }
        conv_implicit_free(x);
        if (status != SPF_OK)
            break;
    }
    if (status == SPF_OK && !best)
        status = FAIL(SPF_ERR_UNSUPPORTED, "conv: no implicit kernel took the convolution");
    if (status != SPF_OK) {
        conv_implicit_free(best);
        return status;
    }
    p->implicit = best;
    for (int k = 0; k < p->implicit_kind_count; k++)
        if (kinds[k] == best_kind)
            p->implicit_chosen = k;
    return SPF_OK;
}

/* host count floats uniform in [-1, 1] from g, rounded to dtype, and their
 * device copy (*dev, cudaFree) */
static spf_status random_staged(spf_dtype dtype, int64_t count, rng *g, float **host, void **dev)
{
    *host = mem_alloc_array((size_t)(count > 0 ? count : 1), sizeof **host);
    if (!*host)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "conv: a random tensor of %lld elements",
                    (long long)count);
    for (int64_t i = 0; i < count; i++)
        (*host)[i] = (float)(2.0 * rng_uniform(g) - 1.0);
    dtype_round(dtype, *host, count);
    return host_stage(dtype, *host, count, dev, NULL);
}

static spf_status select_on_device(spf_conv_plan *p, const spf_matrix *w,
                                   const spf_matrix *weights, const conv_shape *s,
                                   const spf_plan_options *o,
                                   const conv_implicit_choice *choices, int count)
{
    spf_status status = SPF_OK;
    float *in = NULL, *bias = NULL, *residual = NULL;
    path_run r = {.p = p};
    rng g;
    rng_seed(&g, 0xc0417u);
    TRY(random_staged(p->dtype, p->in_count, &g, &in, (void **)&r.in));
    if (p->bias_count)
        TRY(random_staged(SPF_DTYPE_F32, p->bias_count, &g, &bias, (void **)&r.bias));
    if (p->residual)
        TRY(random_staged(p->dtype, p->out_count, &g, &residual, (void **)&r.residual));
    TRY(CUDA_CHECK(cudaMalloc(&r.out, (size_t)(p->out_count > 0 ? p->out_count : 1) * p->elem)));
    if (count)
        TRY(fastest_implicit(p, &r, w, o, choices, count));
    /* every path held timed; the fastest kept, the others released */
    const spf_conv_path explicit_path = p->info.path;
    spf_conv_path best = p->implicit ? SPF_CONV_IMPLICIT : explicit_path;
    double best_us = p->implicit ? p->info.implicit_us : 0;
    if (p->spmm) {
        TRY(time_path(&r, explicit_path, &p->info.im2col_us));
        if (!p->implicit || p->info.im2col_us < best_us)
            best = explicit_path, best_us = p->info.im2col_us;
    }
    if (p->dense) {
        TRY(time_path(&r, SPF_CONV_DENSE, &p->info.dense_us));
        if (p->info.dense_us < best_us)
            best = SPF_CONV_DENSE, best_us = p->info.dense_us;
    }
    if (best != SPF_CONV_IMPLICIT && p->implicit) {
        drop_path(p, SPF_CONV_IMPLICIT);
        p->implicit_chosen = -1;
    }
    if (best != SPF_CONV_DENSE && p->dense)
        drop_path(p, SPF_CONV_DENSE);
    if (best != explicit_path && p->spmm)
        drop_path(p, explicit_path);
    p->info.path = best;
    if (best == SPF_CONV_IMPLICIT || best == SPF_CONV_DENSE)
        p->info.workspace_bytes = 0;
    if (best == SPF_CONV_DENSE)
        p->info.launches = 1;
    if ((best == SPF_CONV_IMPLICIT || best == SPF_CONV_DENSE) && o->verify)
        TRY(verify_path(&r, weights, s, in, bias, residual, o->math));
fail:
    cudaFree((void *)r.in);
    cudaFree((void *)r.bias);
    cudaFree((void *)r.residual);
    cudaFree(r.out);
    mem_free(in);
    mem_free(bias);
    mem_free(residual);
    return status;
}

spf_status conv_select(spf_conv_plan *p, const spf_matrix *w, const spf_matrix *weights,
                       const conv_shape *s, const spf_plan_options *o,
                       const conv_implicit_choice *choices, int count)
{
    int previous = -1;
    spf_status status = CUDA_CHECK(cudaGetDevice(&previous));
    if (status == SPF_OK)
        status = CUDA_CHECK(cudaSetDevice(o->device));
    if (status == SPF_OK && !p->spmm && !p->dense)
        p->info.path = SPF_CONV_IMPLICIT;
    if (status == SPF_OK)
        status = select_on_device(p, w, weights, s, o, choices, count);
    if (previous >= 0 && previous != o->device)
        (void)cudaSetDevice(previous);
    return status;
}

#else

spf_status conv_select(spf_conv_plan *p, const spf_matrix *w, const spf_matrix *weights,
                       const conv_shape *s, const spf_plan_options *o,
                       const conv_implicit_choice *choices, int count)
{
    (void)p, (void)w, (void)weights, (void)s, (void)o, (void)choices, (void)count;
    return FAIL(SPF_ERR_NO_DEVICE, "conv: built without CUDA");
}

#endif
