/* conv_implicit.h: the window kernel, the generic CSR kernel or the
 * unrolled kernel over a convolution's implicit im2col. For the generic
 * kernel the host encodes each nonzero's filter column as its tap: the
 * input offset from the window's corner and (dy, dx) for the padding test
 * (an array beside the values); the unrolled kernel bakes the same offsets
 * into its code as immediates, as SparseRT (paper 004 §4.3) does. */
#include "conv/conv_implicit.h"

#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/matrix.h"
#include "plan/problem.h"
#include "strategy/strategy.h"
#include "strategy/unrolled/unrolled.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifdef SPF_HAVE_CUDA
#include "gpu/device_upload.h"
#include "gpu/jit.h"
#include "strategy/generic/generic.h"

#include <cuda_runtime_api.h>

struct conv_implicit {
    conv_implicit_kind kind;
    conv_window *window;   /* WINDOW                                        */
    conv_tc *tc;           /* TC                                            */
    conv_wg *wg;           /* WG                                            */
    jit_module unrolled;   /* UNROLLED: the generated kernel, loaded        */
    char unrolled_name[128], unrolled_config[64];
    spf_dtype dtype;
    int nhwc;
    generic_csr csr;       /* GENERIC, and the rest below                   */
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

/* The SpMM the kernels compute, for the generic strategy's checks: B as
 * N×K, C in the conv layout's order. */
static problem implicit_problem(const spf_matrix *w, const conv_gather *g,
                                const spf_plan_options *o)
{
    spf_plan_options n = *o;
    n.b_layout = SPF_LAYOUT_N_FIRST;
    n.c_layout = g->nhwc ? SPF_LAYOUT_N_FIRST : SPF_LAYOUT_N_LAST;
    return problem_make(w, g->cols, &n);
}

/* The generic kernel's own limits, past the strategy's. */
static int generic_takes(const conv_gather *g, char *reason, size_t cap)
{
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

/* The unrolled kernel's configurations for this convolution (a thread per
 * position, v = 1): the unrolled strategy's fixed default (32 rows a
 * block, a 4-way K split; its smallest loss over the H200 tuning set), and
 * 16 rows, 32 positions, a 2-way split for the few positions of a small
 * image at batch 1 (49 at 7×7, where 64 columns a block leave half the
 * threads idle). AUTO times the first alone; their count, 0 with a reason
 * when none can be generated. */
static int unrolled_choices(const spf_matrix *w, const conv_gather *g, const spf_plan_options *o,
                            const spf_device_info *dev, conv_implicit_choice *out, char *reason,
                            size_t cap)
{
    static const spf_kernel_config configs[CONV_UNROLLED_CONFIGS] = {{32, 64, 1, 2, 4},
                                                                     {16, 32, 1, 2, 2}};
    if (!dev->available || dev->cc_major < 8) {
        snprintf(reason, cap, "generated code needs a device of compute capability 8.0 or newer");
        return 0;
    }
    if (o->dtype != SPF_DTYPE_F32 && o->dtype != SPF_DTYPE_F16 && o->dtype != SPF_DTYPE_BF16) {
        snprintf(reason, cap, "dtype %d: f32, f16 or bf16", (int)o->dtype);
        return 0;
    }
    if (o->math == SPF_MATH_F16X2) {
        snprintf(reason, cap, "f16x2 accumulation pairs adjacent columns; the implicit gather's "
                 "columns are output positions a thread each");
        return 0;
    }
    const int autos = o->strategy == SPF_STRATEGY_AUTO;
    if (autos && w->nnz > CONV_UNROLLED_AUTO_NNZ) {
        snprintf(reason, cap, "%lld nonzeros: AUTO compiles the unrolled kernel for at most %d "
                 "(strategy UNROLLED for any)", (long long)w->nnz, CONV_UNROLLED_AUTO_NNZ);
        return 0;
    }
    int n = 0;
    for (int i = 0; i < (autos ? 1 : CONV_UNROLLED_CONFIGS); i++) {
        if (unrolled_gather_check(w, g, &configs[i], o->dtype) != SPF_OK) {
            snprintf(reason, cap, "%s", spf_last_error());
            error_clear();
            continue;
        }
        out[n++] = (conv_implicit_choice){.kind = CONV_IMPLICIT_UNROLLED,
                                          .unrolled = configs[i]};
    }
    return n;
}

/* out[n] = the warpgroup kernel of geometry g unless out[0..n) has it
 * (two widths can give one geometry: a whole 7×7 image at 64 positions
 * or at 128); the count. */
static int add_wg(conv_implicit_choice *out, int n, const conv_wg_geom *g)
{
    for (int i = 0; i < n; i++)
        if (out[i].kind == CONV_IMPLICIT_WG && memcmp(&out[i].wg, g, sizeof *g) == 0)
            return n;
    out[n] = (conv_implicit_choice){.kind = CONV_IMPLICIT_WG, .wg = *g};
    return n + 1;
}

/* add_wg of g, and of g with one stage where that fits two blocks an SM
 * (conv_wg_one_stage); the count. */
static int add_wg_stages(conv_implicit_choice *out, int n, const conv_wg_geom *g)
{
    conv_wg_geom one;
    n = add_wg(out, n, g);
    return conv_wg_one_stage(g, &one) ? add_wg(out, n, &one) : n;
}

/* Whether g's grid split `splits` ways is still at most two blocks an SM
 * of `sms`: splitting is for grids that leave SMs idle (batch 1), and at
 * batch 32 it only adds the sums' exchange. */
static int wg_grid_idle(const conv_wg_geom *g, int32_t splits, int sms)
{
    return (int64_t)g->tiles * (g->k / CONV_WG_BM) * splits <= 2 * (int64_t)sms;
}

/* The tensor-core kernel's configurations for this convolution (f16 and
 * bf16 on compute capability 8.0 or newer); their count, 0 with a reason. */
static int tc_choices(const conv_gather *g, int32_t k, const spf_plan_options *o,
                      const spf_device_info *dev, conv_implicit_choice *out, char *reason,
                      size_t cap)
{
    if (!dev->available || dev->cc_major < 8) {
        snprintf(reason, cap, "mma.sync m16n8k16 needs a device of compute capability 8.0 or "
                 "newer");
        return 0;
    }
    if (o->dtype != SPF_DTYPE_F16 && o->dtype != SPF_DTYPE_BF16) {
        snprintf(reason, cap, "dtype %s: f16 or bf16", dtype_name(o->dtype));
        return 0;
    }
    if (o->math != SPF_MATH_DEFAULT) {
        snprintf(reason, cap, "math %s: the tensor cores accumulate in fp32",
                 spf_math_name(o->math));
        return 0;
    }
    conv_tc_config cfg[CONV_TC_MAX_CONFIGS];
    int n = conv_tc_configs(g, k, dev->sm_count, dev->cc_major >= 9, cfg, reason, cap);
    for (int i = 0; i < n; i++)
        out[i] = (conv_implicit_choice){.kind = CONV_IMPLICIT_TC, .tc = cfg[i]};
    /* the warpgroup kernel on Hopper, at each block width its geometry
     * takes, the weights dense in each stage (and with one stage where
     * that fits two blocks an SM; and split over a cluster where the grid
     * leaves SMs idle), resident, or sparse */
    char why_wg[200] = "";
    for (int i = 0; i < CONV_WG_WIDTHS && dev->cc_major >= 9; i++)
        for (int weights = CONV_WG_STAGED; weights <= CONV_WG_SPARSE; weights++) {
            conv_wg_geom geom, split;
            if (!conv_wg_geometry(g, k, conv_wg_widths[i], (conv_wg_weights)weights, &geom,
                                  why_wg, sizeof why_wg))
                continue;
            n = add_wg_stages(out, n, &geom);
            for (int z = 0; z < CONV_WG_SPLIT_CHOICES; z++)
                if (wg_grid_idle(&geom, conv_wg_splits[z], dev->sm_count) &&
                    conv_wg_split(&geom, conv_wg_splits[z], &split))
                    n = add_wg_stages(out, n, &split);
        }
    return n;
}

int conv_implicit_choices(const spf_matrix *w, const conv_gather *g, const spf_plan_options *o,
                          const spf_device_info *dev, int direct, conv_implicit_choice *out,
                          char *reason, size_t cap)
{
    if (w->rows > INT32_MAX) {
        snprintf(reason, cap, "%lld output channels (the kernels' int32 offsets)",
                 (long long)w->rows);
        return 0;
    }
    char why_window[160] = "", why_generic[200] = "", why_unrolled[200] = "", why_tc[200] = "";
    int n = 0;
    if (o->strategy == SPF_STRATEGY_AUTO || o->strategy == SPF_STRATEGY_TC)
        n += tc_choices(g, (int32_t)w->rows, o, dev, out + n, why_tc, sizeof why_tc);
    else
        snprintf(why_tc, sizeof why_tc, "not the plan's strategy");
    if (o->strategy == SPF_STRATEGY_TC) {
        if (n == 0)
            snprintf(reason, cap, "tensor-core kernel: %s", why_tc);
        return n;
    }
    if (o->strategy == SPF_STRATEGY_AUTO || o->strategy == SPF_STRATEGY_UNROLLED)
        n += unrolled_choices(w, g, o, dev, out + n, why_unrolled, sizeof why_unrolled);
    else
        snprintf(why_unrolled, sizeof why_unrolled, "not the plan's strategy");
    if (o->strategy != SPF_STRATEGY_AUTO && o->strategy != SPF_STRATEGY_GENERIC) {
        if (n == 0)
            snprintf(reason, cap, "unrolled kernel: %s", why_unrolled);
        return n;
    }
    /* the other two are the generic strategy's kind: its device, dtype and
     * math limits hold for both */
    const problem p = implicit_problem(w, g, o);
    if (strategy_find(SPF_STRATEGY_GENERIC)->supports(&p, dev, o, why_generic,
                                                      sizeof why_generic)) {
        conv_window_config cfg[CONV_WINDOW_MAX_CONFIGS];
        const int windows = conv_window_configs(g, (int32_t)w->rows, cfg, why_window,
                                                sizeof why_window);
        for (int i = 0; i < windows; i++)
            out[n++] = (conv_implicit_choice){.kind = CONV_IMPLICIT_WINDOW, .cfg = cfg[i]};
        if (direct)
            snprintf(why_generic, sizeof why_generic,
                     "a 1×1 direct convolution reads its input as B");
        else if (generic_takes(g, why_generic, sizeof why_generic))
            out[n++] = (conv_implicit_choice){.kind = CONV_IMPLICIT_GENERIC};
    } else {
        snprintf(why_window, sizeof why_window, "%s", why_generic);
    }
    if (n == 0)
        snprintf(reason, cap, "window kernel: %s; generic kernel: %s; unrolled kernel: %s; "
                 "tensor-core kernel: %s", why_window, why_generic, why_unrolled, why_tc);
    return n;
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

static spf_status window_create(const spf_matrix *w, const conv_gather *g, spf_dtype dtype,
                                int relu, conv_window_config cfg, conv_window **out)
{
    conv_window_geom geom;
    char reason[160];
    if (!conv_window_geometry(g, (int32_t)w->rows, cfg, CONV_WINDOW_SMEM, &geom, reason,
                              sizeof reason))
        return FAIL(SPF_ERR_UNSUPPORTED, "conv window: %s", reason);
    conv_window_format f;
    spf_status status = conv_window_format_make(w, &geom, &f);
    if (status == SPF_OK)
        status = conv_window_create(&f, dtype, relu, out);
    if (status == SPF_OK)
        status = conv_window_allow(*out);
    conv_window_format_free(&f);
    if (status != SPF_OK) {
        conv_window_free(*out);
        *out = NULL;
    }
    return status;
}

static spf_status tc_create(const spf_matrix *w, const conv_gather *g, spf_dtype dtype, int relu,
                            conv_tc_config cfg, conv_tc **out)
{
    conv_tc_geom geom;
    char reason[200];
    if (!conv_tc_geometry(g, (int32_t)w->rows, cfg, &geom, reason, sizeof reason))
        return FAIL(SPF_ERR_UNSUPPORTED, "conv tc: %s", reason);
    conv_tc_format f;
    spf_status status = conv_tc_format_make(w, &geom, dtype, &f);
    if (status == SPF_OK)
        status = conv_tc_create(&f, dtype, relu, out);
    conv_tc_format_free(&f);
    return status;
}

/* The unrolled kernel of configuration cfg for the gather, generated and
 * loaded on the current device (the plan's bias; relu: the kernel's). */
static spf_status unrolled_create(const spf_matrix *w, const conv_gather *g,
                                  const spf_plan_options *o, int relu,
                                  const spf_kernel_config *cfg, conv_implicit *x)
{
    spf_device_info dev;
    spf_status status = spf_device_query(o->device, &dev);
    if (status != SPF_OK)
        return status;
    ptx_program prog;
    status = unrolled_generate_gather(w, NULL, g, cfg, o->dtype, o->bias, relu,
                                      dev.cc_major >= 9 ? 90 : 80, 0, &prog);
    if (status != SPF_OK)
        return status;
    jit_timings t = {0};
    status = jit_build(&prog, dev.cc_major * 10 + dev.cc_minor, o->host_threads, &x->unrolled,
                       &t);
    snprintf(x->unrolled_name, sizeof x->unrolled_name, "%s", prog.entry);
    spf_kernel_config_name(cfg, x->unrolled_config, sizeof x->unrolled_config);
    ptx_program_free(&prog);
    return status;
}

spf_status conv_implicit_create(const spf_matrix *w, const conv_gather *g,
                                const spf_plan_options *o, int relu, int residual,
                                const conv_implicit_choice *c, conv_implicit **out)
{
    *out = NULL;
    conv_implicit *x = mem_calloc(1, sizeof *x);
    if (!x)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "conv: an implicit im2col plan");
    spf_status status = SPF_OK;
    x->kind = c->kind;
    x->dtype = o->dtype;
    x->nhwc = g->nhwc;
    if (c->kind == CONV_IMPLICIT_WINDOW) {
        TRY(window_create(w, g, o->dtype, relu, c->cfg, &x->window));
        *out = x;
        return SPF_OK;
    }
    if (c->kind == CONV_IMPLICIT_TC) {
        TRY(tc_create(w, g, o->dtype, relu, c->tc, &x->tc));
        *out = x;
        return SPF_OK;
    }
    if (c->kind == CONV_IMPLICIT_WG) {
        TRY(conv_wg_create(w, &c->wg, o->dtype, relu, &x->wg));
        *out = x;
        return SPF_OK;
    }
    if (c->kind == CONV_IMPLICIT_UNROLLED) {
        TRY(unrolled_create(w, g, o, relu && !residual, &c->unrolled, x));
        *out = x;
        return SPF_OK;
    }
    const problem p = implicit_problem(w, g, o);
    TRY(generic_csr_upload(w, &x->csr));
    TRY(taps_upload(w, g, &x->taps));
    /* cudaMalloc'd buffers, as the plan's own tests and its callers pass */
    const void *aligned = (const void *)(uintptr_t)256;
    TRY(generic_launch_choose(&x->csr, &p, aligned, aligned, &x->launch));
    x->im2col = (generic_im2col){.taps = x->taps, .c = g->c, .h = g->h, .w = g->w, .p = g->p,
                                 .q = g->q, .stride = g->stride, .pad = g->pad, .nhwc = g->nhwc};
    x->relu = relu && !residual; /* else after the plan's residual add */
    *out = x;
    return SPF_OK;
fail:
    conv_implicit_free(x);
    return status;
}

int conv_implicit_fuses_residual(const conv_implicit *x)
{
    return x->kind == CONV_IMPLICIT_WINDOW || x->kind == CONV_IMPLICIT_TC ||
           x->kind == CONV_IMPLICIT_WG;
}

spf_status conv_implicit_launch(const conv_implicit *x, const void *in, void *out,
                                const float *bias, const void *residual, void *stream)
{
    if (x->kind == CONV_IMPLICIT_WINDOW)
        return conv_window_launch(x->window, in, out, bias, residual, stream);
    if (x->kind == CONV_IMPLICIT_TC)
        return conv_tc_launch(x->tc, in, out, bias, residual, stream);
    if (x->kind == CONV_IMPLICIT_WG)
        return conv_wg_launch(x->wg, in, out, bias, residual, stream);
    if (x->kind == CONV_IMPLICIT_UNROLLED)
        return jit_launch(&x->unrolled, in, out, bias, stream);
    return generic_csr_im2col_dispatch(&x->csr, &x->launch, &x->im2col, in, out, bias, x->relu,
                                       stream);
}

void conv_implicit_describe(const conv_implicit *x, spf_plan_info *info)
{
    info->strategy = SPF_STRATEGY_GENERIC;
    if (x->kind == CONV_IMPLICIT_UNROLLED) {
        info->strategy = SPF_STRATEGY_UNROLLED;
        snprintf(info->kernel_name, sizeof info->kernel_name, "%s", x->unrolled_name);
        snprintf(info->config, sizeof info->config, "%s", x->unrolled_config);
        info->dtype = x->dtype;
        info->b_layout = info->c_layout = x->nhwc ? SPF_LAYOUT_N_FIRST : SPF_LAYOUT_N_LAST;
        info->registers = x->unrolled.registers;
        info->device_bytes = (int64_t)x->unrolled.image_size;
        return;
    }
    if (x->tc) {
        const conv_tc_geom *g = &x->tc->geom;
        info->strategy = SPF_STRATEGY_TC;
        conv_tc_name(g, x->tc->dtype, info->kernel_name, sizeof info->kernel_name);
        conv_tc_config_name(g, info->config, sizeof info->config);
        info->dtype = x->tc->dtype;
        info->b_layout = info->c_layout = SPF_LAYOUT_N_FIRST;
        info->device_bytes = x->tc->bytes;
        return;
    }
    if (x->wg) {
        info->strategy = SPF_STRATEGY_TC;
        const conv_wg_geom *g = conv_wg_geometry_of(x->wg);
        conv_wg_name(g, x->dtype, info->kernel_name, sizeof info->kernel_name);
        conv_wg_config_name(g, info->config, sizeof info->config);
        info->dtype = x->dtype;
        info->b_layout = info->c_layout = SPF_LAYOUT_N_FIRST;
        info->device_bytes = conv_wg_bytes(x->wg);
        return;
    }
    if (x->window) {
        const conv_window_geom *g = &x->window->geom;
        conv_window_name(g, x->window->dtype, info->kernel_name, sizeof info->kernel_name);
        snprintf(info->config, sizeof info->config, "rw%d_j%d_cc%d", g->rw, g->j, g->cc);
        info->dtype = x->window->dtype;
        info->b_layout = info->c_layout = SPF_LAYOUT_N_FIRST;
        info->device_bytes = x->window->bytes;
        return;
    }
    generic_launch_name(&x->launch, info->kernel_name, sizeof info->kernel_name);
    snprintf(info->config, sizeof info->config, "v%d_sw%d", x->launch.vec, x->launch.subwarp);
    info->dtype = x->launch.dtype;
    info->b_layout = x->launch.b_layout;
    info->c_layout = x->launch.c_layout;
    info->device_bytes = (int64_t)(x->csr.rows + 1) * 4 * 2 + (int64_t)x->csr.nnz * 16;
}

void conv_implicit_free(conv_implicit *x)
{
    if (!x)
        return;
    conv_window_free(x->window);
    conv_tc_free(x->tc);
    conv_wg_free(x->wg);
    jit_module_release(&x->unrolled);
    generic_csr_release(&x->csr);
    (void)cudaFree(x->taps);
    mem_free(x);
}

#else /* !SPF_HAVE_CUDA: conv_implicit_choices finds none (no device) */

spf_status conv_implicit_create(const spf_matrix *w, const conv_gather *g,
                                const spf_plan_options *o, int relu, int residual,
                                const conv_implicit_choice *c, conv_implicit **out)
{
    (void)w, (void)g, (void)o, (void)relu, (void)residual, (void)c;
    *out = NULL;
    return FAIL(SPF_ERR_NO_DEVICE, "conv: built without CUDA");
}

int conv_implicit_fuses_residual(const conv_implicit *x)
{
    (void)x;
    return 0;
}

spf_status conv_implicit_launch(const conv_implicit *x, const void *in, void *out,
                                const float *bias, const void *residual, void *stream)
{
    (void)x, (void)in, (void)out, (void)bias, (void)residual, (void)stream;
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
