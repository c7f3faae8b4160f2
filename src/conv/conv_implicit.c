/* conv_implicit.h: the generic CSR kernel over a convolution's implicit
 * im2col. The host encodes each nonzero's filter column as its tap: the
 * input offset from the window's corner and (dy, dx) for the padding test
 * (SparseRT, paper 004 §4.3, bakes the same offsets into its code as
 * immediates; here they are an array beside the values). */
#include "conv/conv_implicit.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/matrix.h"
#include "plan/problem.h"
#include "strategy/strategy.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifdef SPF_HAVE_CUDA
#include "gpu/device_upload.h"
#include "strategy/generic/generic.h"

#include <cuda_runtime_api.h>

struct conv_implicit {
    generic_csr csr;
    generic_im2col im2col;
    generic_launch launch;
    int32_t *taps; /* device: the im2col's taps, owned */
    int relu;
};
#endif

/* The input a launch reads: the NHWC batch, or one NCHW image. */
static int64_t launch_input(const conv_gather *g)
{
    const int64_t image = (int64_t)g->c * g->h * g->w;
    return g->nhwc ? image * (g->cols / ((int64_t)g->p * g->q)) : image;
}

/* The SpMM the kernel computes, for the generic strategy's checks: B as
 * N×K, C in the conv layout's order. */
static problem implicit_problem(const spf_matrix *w, const conv_gather *g,
                                const spf_plan_options *o)
{
    spf_plan_options n = *o;
    n.b_layout = SPF_LAYOUT_N_FIRST;
    n.c_layout = g->nhwc ? SPF_LAYOUT_N_FIRST : SPF_LAYOUT_N_LAST;
    return problem_make(w, g->cols, &n);
}

int conv_implicit_supports(const spf_matrix *w, const conv_gather *g, const spf_plan_options *o,
                           const spf_device_info *dev, char *reason, size_t cap)
{
    const problem p = implicit_problem(w, g, o);
    if (!strategy_find(SPF_STRATEGY_GENERIC)->supports(&p, dev, o, reason, cap))
        return 0;
    if (launch_input(g) > INT32_MAX) {
        snprintf(reason, cap, "an input of %lld elements a launch: the implicit gather's "
                 "offsets are 32-bit", (long long)launch_input(g));
        return 0;
    }
    /* generic_launch_choose's N×K shape: 4 output positions a thread, a
     * column tile a block row of the grid, at most 65535 of them */
    if (g->cols > 65535LL * 4) {
        snprintf(reason, cap, "%d output positions a launch: more than the N×K kernel's 65535 "
                 "tiles of 4", g->cols);
        return 0;
    }
    if (g->r >= (1 << 15) || g->s >= (1 << 15)) {
        snprintf(reason, cap, "a %d×%d filter: taps are encoded in 15 bits", g->r, g->s);
        return 0;
    }
    return 1;
}

#ifdef SPF_HAVE_CUDA

/* The taps of w's nonzeros, in B's column order (conv_gather.h). */
static spf_status taps_upload(const spf_matrix *w, const conv_gather *g, int32_t **out)
{
    const int32_t rs = g->r * g->s;
    int32_t *host = mem_alloc_array((size_t)(w->nnz > 0 ? w->nnz : 1) * 2, sizeof *host);
    if (!host)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "conv: the taps of %lld nonzeros", (long long)w->nnz);
    for (int64_t q = 0; q < w->nnz; q++) {
        const int32_t kk = w->col_idx[q];
        const int32_t c = g->nhwc ? kk % g->c : kk / rs, tap = g->nhwc ? kk / g->c : kk % rs;
        const int32_t dy = tap / g->s, dx = tap % g->s;
        host[2 * q] = g->nhwc ? (dy * g->w + dx) * g->c + c : (c * g->h + dy) * g->w + dx;
        host[2 * q + 1] = dy << 16 | dx;
    }
    int64_t bytes = 0;
    spf_status status = device_upload((void **)out, host, w->nnz * 2, sizeof *host, &bytes);
    mem_free(host);
    return status;
}

spf_status conv_implicit_create(const spf_matrix *w, const conv_gather *g,
                                const spf_plan_options *o, conv_implicit **out)
{
    *out = NULL;
    conv_implicit *x = mem_calloc(1, sizeof *x);
    if (!x)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "conv: an implicit im2col plan");
    spf_status status = SPF_OK;
    const problem p = implicit_problem(w, g, o);
    TRY(generic_csr_upload(w, &x->csr));
    TRY(taps_upload(w, g, &x->taps));
    /* cudaMalloc'd buffers, as the plan's own tests and its callers pass */
    const void *aligned = (const void *)(uintptr_t)256;
    TRY(generic_launch_choose(&x->csr, &p, aligned, aligned, &x->launch));
    x->im2col = (generic_im2col){.taps = x->taps, .c = g->c, .h = g->h, .w = g->w, .p = g->p,
                                 .q = g->q, .stride = g->stride, .pad = g->pad, .nhwc = g->nhwc};
    x->relu = o->relu;
    *out = x;
    return SPF_OK;
fail:
    conv_implicit_free(x);
    return status;
}

spf_status conv_implicit_launch(const conv_implicit *x, const void *in, void *out,
                                const float *bias, void *stream)
{
    return generic_csr_im2col_dispatch(&x->csr, &x->launch, &x->im2col, in, out, bias, x->relu,
                                       stream);
}

void conv_implicit_describe(const conv_implicit *x, spf_plan_info *info)
{
    generic_launch_name(&x->launch, info->kernel_name, sizeof info->kernel_name);
    snprintf(info->config, sizeof info->config, "v%d_sw%d", x->launch.vec, x->launch.subwarp);
    info->strategy = SPF_STRATEGY_GENERIC;
    info->dtype = x->launch.dtype;
    info->b_layout = x->launch.b_layout;
    info->c_layout = x->launch.c_layout;
    info->device_bytes = (int64_t)(x->csr.rows + 1) * 4 * 2 + (int64_t)x->csr.nnz * 16;
}

void conv_implicit_free(conv_implicit *x)
{
    if (!x)
        return;
    generic_csr_release(&x->csr);
    (void)cudaFree(x->taps);
    mem_free(x);
}

#else /* !SPF_HAVE_CUDA: conv_implicit_supports says no (no device) */

spf_status conv_implicit_create(const spf_matrix *w, const conv_gather *g,
                                const spf_plan_options *o, conv_implicit **out)
{
    (void)w, (void)g, (void)o;
    *out = NULL;
    return FAIL(SPF_ERR_NO_DEVICE, "conv: built without CUDA");
}

spf_status conv_implicit_launch(const conv_implicit *x, const void *in, void *out,
                                const float *bias, void *stream)
{
    (void)x, (void)in, (void)out, (void)bias, (void)stream;
    return FAIL(SPF_ERR_NO_DEVICE, "conv: built without CUDA");
}

void conv_implicit_describe(const conv_implicit *x, spf_plan_info *info)
{
    (void)x, (void)info;
}

void conv_implicit_free(conv_implicit *x)
{
    (void)x;
}

#endif
