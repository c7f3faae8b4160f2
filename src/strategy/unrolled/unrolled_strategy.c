/* The unrolled strategy's row (strategy.h): generated PTX with A's values
 * as immediates (LO-SpMM, SparseRT), compiled at plan time. Its
 * configuration is forced (options.config), the rank model's first choice,
 * found by the low-cost search (options.search) or by exhaustive tuning
 * (options.exhaustive), within a code budget under AUTO. */
#include "strategy/strategy.h"

#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "core/matrix.h"
#include "gpu/jit.h"
#include "gpu/timing.h"
#include "strategy/roofline.h"
#include "strategy/unrolled/reorder.h"
#include "strategy/unrolled/schedule.h"
#include "strategy/unrolled/search.h"
#include "strategy/unrolled/tuner.h"
#include "strategy/unrolled/unrolled.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The code budget of AUTO, in instructions (schedule_instructions). ptxas
 * assembled ~105 k fma of unrolled code in 9.6 CPU-seconds on the H200 host
 * (DESIGN.md: 16 chunks × 0.6 s), about 11 k instructions per CPU-second;
 * 2^20 instructions is then ~95 CPU-seconds, a few seconds on a 16-core
 * host. Bigger patterns are left to the other strategies. */
#define PLAN_CODE_BUDGET ((int64_t)1 << 20)

/* ----------------------------------------------- the configuration type */

spf_status spf_kernel_config_name(const spf_kernel_config *c, char *name, size_t name_size)
{
    error_clear();
    CHECK_ARG(c != NULL && name != NULL && name_size > 0);
    int len = snprintf(name, name_size, "m%d_n%d_v%d_p%d_k%d", (int)c->m1, (int)c->n1, (int)c->v,
                       (int)c->prefetch, (int)c->ksplit);
    if (len < 0 || (size_t)len >= name_size)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "name_size %zu: the name needs %d bytes", name_size,
                    len + 1);
    return SPF_OK;
}

spf_status spf_kernel_config_from_name(const char *name, spf_kernel_config *out)
{
    error_clear();
    CHECK_ARG(name != NULL && out != NULL);
    spf_kernel_config c;
    int used = 0;
    if (sscanf(name, "m%d_n%d_v%d_p%d_k%d%n", &c.m1, &c.n1, &c.v, &c.prefetch, &c.ksplit,
               &used) != 5 ||
        name[used] != 0)
        return FAIL(SPF_ERR_INVALID_ARGUMENT,
                    "\"%s\": expected a configuration name like m32_n64_v1_p2_k4", name);
    *out = c;
    return SPF_OK;
}

/* --------------------------------------------------------------- the row */

static int f16x2_of(const problem *p) { return p->math == SPF_MATH_F16X2; }

/* The fixed fallback of a plan built without search or tuning (see
 * build_configured): the configuration with the smallest geomean loss
 * against the tuned best over the 26 problems tuned on the H200
 * (bench/results/tuning/, 2026-11-22): a thread per column (v = 1), 32
 * rows per block, two warps per group and a 4-way K split (SparseRT §3.4)
 * lost 1.14× on geomean and 1.35× at worst, where the previous guess
 * (m1 = 8, the widest vector N allows) lost 1.40× and 1.96×. It also makes
 * the least code per nonzero, so it compiles fastest. f16x2 accumulation
 * needs pairs of columns, so it takes v = 2. */
static spf_kernel_config default_config(int64_t n, int f16x2)
{
    spf_kernel_config cfg = {.m1 = 32, .n1 = f16x2 ? 128 : 64, .v = f16x2 ? 2 : 1, .prefetch = 2,
                             .ksplit = 4};
    if (schedule_config_check(&cfg, n) != SPF_OK) {
        error_clear();
        cfg.ksplit = 1;
    }
    return cfg;
}

/* An explicit UNROLLED is taken at any size; AUTO keeps to the budget. */
static int64_t code_budget(const spf_plan_options *o)
{
    return o->strategy == SPF_STRATEGY_UNROLLED ? 0 : PLAN_CODE_BUDGET;
}

static int unrolled_supports(const problem *p, const spf_device_info *dev,
                             const spf_plan_options *o, char *reason, size_t cap)
{
#ifndef SPF_HAVE_CUDA /* the checks below still compile, so they stay in step */
    snprintf(reason, cap, "built without CUDA");
    return 0;
#endif
    if (!dev || !dev->available) {
        snprintf(reason, cap, "no device: %s", dev ? dev->reason : "none");
        return 0;
    }
    if (dev->cc_major < 8) {
        snprintf(reason, cap, "generated code needs compute capability 8.0 or newer; the device "
                              "is %d.%d",
                 dev->cc_major, dev->cc_minor);
        return 0;
    }
    if (p->b_layout != SPF_LAYOUT_N_LAST || p->c_layout != SPF_LAYOUT_N_LAST) {
        snprintf(reason, cap, "generates code for B as K×N and C as M×N only");
        return 0;
    }
    if (f16x2_of(p) && p->n % 2) {
        snprintf(reason, cap, "f16x2 accumulation works on pairs of columns; N = %lld is odd",
                 (long long)p->n);
        return 0;
    }
    int64_t budget = code_budget(o);
    /* Every nonzero is at least one fma in the code, whatever the
     * configuration: a pattern with more nonzeros than the budget is
     * refused without walking it (the estimate below took 0.5-0.9 s of a
     * plan's time on a 4096×4096 layer at 0.5, 8.4 M nonzeros). */
    if (budget > 0 && p->a->nnz > budget) {
        snprintf(reason, cap,
                 "%lld nonzeros, each at least one instruction: over AUTO's compile budget of "
                 "%lld (strategy UNROLLED takes any size)",
                 (long long)p->a->nnz, (long long)budget);
        return 0;
    }
    if (budget > 0 && !o->config) {
        spf_kernel_config cfg = default_config(p->n, f16x2_of(p));
        int64_t instructions = 0;
        spf_status st = unrolled_estimate(p->a, NULL, p->n, &cfg, p->dtype, f16x2_of(p), p->bias,
                                          p->relu, &instructions);
        error_clear();
        if (st == SPF_OK && instructions > budget) {
            snprintf(reason, cap,
                     "about %lld instructions of code, over AUTO's compile budget of %lld "
                     "(strategy UNROLLED takes any size)",
                     (long long)instructions, (long long)budget);
            return 0;
        }
    }
    return 1;
}

/* The roofline of CUDA-core FMAs over B once and C once: A's values and
 * columns are in the instruction stream (strategy/roofline.h). */
static double unrolled_estimate_us(const problem *p, const spf_device_info *dev)
{
    double e = (double)dtype_size(p->dtype), nnz = (double)p->a->nnz, n = (double)p->n;
    double bytes = ((double)p->k + (double)p->m) * n * e;
    double peak = roofline_peak_flops(dev, p->dtype, p->math, ROOFLINE_CUDA_CORES);
    return roofline_us(2 * nnz * n, bytes, peak, roofline_bandwidth(dev), 1);
}

#ifdef SPF_HAVE_CUDA

typedef struct unrolled_build {
    const problem *p;
    const strategy_env *env;
    spf_plan_info *info;
    jit_module *module;
    int ptx_sm, sass_sm;
    int64_t budget;
} unrolled_build;

/* One unrolled kernel of configuration cfg, on rows in LO-SpMM Algorithm 1
 * order (strategy/unrolled/reorder.h) when asked, for the configuration's
 * m1; the reorder time counts as generation time. */
static spf_status build_one(const unrolled_build *u, spf_kernel_config cfg)
{
    spf_status status = SPF_OK;
    const problem *p = u->p;
    const spf_plan_options *o = u->env->options;
    ptx_program prog = {0};
    int32_t *row_order = NULL;
    u->info->code_bytes = 0;
    double t0 = timing_now_s();
    if (o->reorder) {
        row_order = mem_alloc_array((size_t)(p->m ? p->m : 1), sizeof *row_order);
        if (!row_order)
            FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "row order of %lld rows", (long long)p->m);
        TRY(reorder_rows(p->a, cfg.m1, REORDER_NNZ_SLACK, row_order));
    }
    TRY(unrolled_generate(p->a, row_order, p->n, &cfg, p->dtype, f16x2_of(p), p->bias, p->relu,
                          u->ptx_sm, u->budget, &prog));
    u->info->generate_s = timing_now_s() - t0;
    for (int i = 0; i < prog.unit_count; i++)
        u->info->code_bytes += (int64_t)prog.units[i].size;
    jit_timings t = {0};
    TRY(jit_build(&prog, u->sass_sm, o->host_threads, u->module, &t));
    spf_kernel_config_name(&cfg, u->info->config, sizeof u->info->config);
    u->info->registers = u->module->registers;
    u->info->compile_s = t.compile_s;
    snprintf(u->info->assembler, sizeof u->info->assembler, "%s", jit_assembler_name(t.assembler));
    u->info->link_s = t.link_s;
    u->info->load_s = t.load_s;
    snprintf(u->info->kernel_name, sizeof u->info->kernel_name, "%s", prog.entry);
fail:
    ptx_program_free(&prog);
    mem_free(row_order);
    return status;
}

/* The rank model's first choice (LO-SpMM §3.5) among the survivors of the
 * constraints in o->tune_space: the CPU stages of the search with K = 1,
 * milliseconds and no compile. *found is 0 when there is none (no usable
 * model, nothing survives, the stages failed) or the model has not been
 * trained for the request: its training logs are all float32 without
 * f16x2 accumulation. Fails only when the progress callback cancelled. */
static spf_status ranked_config(const unrolled_build *u, spf_kernel_config *out, int *found)
{
    const problem *p = u->p;
    const spf_plan_options *o = u->env->options;
    *found = 0;
    if (p->dtype != SPF_DTYPE_F32 || f16x2_of(p))
        return SPF_OK;
    search_request q = {.a = p->a, .n = p->n, .space = o->tune_space, .dtype = p->dtype,
                        .bias = p->bias, .relu = p->relu, .top_k = 1,
                        .sm_count = u->env->device->sm_count, .threads = o->host_threads};
    search_shortlist s = {0};
    spf_search_info info;
    spf_status st = search_shortlist_create(&q, &s, &info);
    if (st == SPF_ERR_CANCELLED)
        return st;
    *found = st == SPF_OK && s.count > 0 && s.ranked;
    if (*found)
        *out = s.configs[0];
    else
        log_msg(SPF_LOG_INFO, "plan: no ranked configuration (%s); the fixed default",
                st != SPF_OK ? spf_last_error() : s.count ? "no usable rank model"
                                                          : "nothing survives the constraints");
    error_clear();
    search_shortlist_free(&s);
    return SPF_OK;
}

/* A plan without search or tuning: the forced configuration; else the
 * rank model's choice, and the fixed default when that one cannot be built
 * (over the code budget, rejected by ptxas). Replayed over the 48 tuning
 * logs measured on the H200 (bench/results/tuning and search-eval, every
 * configuration of each problem timed), the fixed default's kernel was
 * 19.5 % slower than each problem's best on mean (86 % at worst), the
 * model's first choice 8.8 % (76 %; leave-one-problem-out), for the same
 * single compile. */
static spf_status build_configured(const unrolled_build *u)
{
    const spf_plan_options *o = u->env->options;
    if (o->config)
        return build_one(u, *o->config);
    spf_kernel_config fixed = default_config(u->p->n, f16x2_of(u->p)), ranked;
    int found = 0;
    spf_status cancelled = ranked_config(u, &ranked, &found);
    if (cancelled != SPF_OK)
        return cancelled;
    if (found && memcmp(&ranked, &fixed, sizeof fixed) != 0) {
        spf_status st = build_one(u, ranked);
        if (st != SPF_ERR_UNSUPPORTED && st != SPF_ERR_COMPILE)
            return st;
        log_msg(SPF_LOG_INFO, "plan: the rank model's choice m1 %d n1 %d v %d could not be "
                              "built (%s); the fixed default instead",
                (int)ranked.m1, (int)ranked.n1, (int)ranked.v, spf_last_error());
        jit_module_release(u->module);
        error_clear();
    }
    return build_one(u, fixed);
}

/* The info from the tuning log's chosen row (exhaustive tuning and the
 * search), which was checked and timed already. */
static void info_from_log(const unrolled_build *u, const tune_log *log)
{
    const tune_row *r = &log->rows[log->best];
    spf_plan_info *info = u->info;
    spf_kernel_config_name(&r->cfg, info->config, sizeof info->config);
    info->registers = u->module->registers;
    info->code_bytes = r->code_bytes;
    info->generate_s = r->generate_s;
    info->compile_s = r->compile_s;
    snprintf(info->assembler, sizeof info->assembler, "%s", jit_assembler_name(r->assembler));
    info->link_s = r->link_s;
    info->load_s = r->load_s;
    info->kernel_us = r->kernel_us;
    info->verify_error = r->verify_error;
    snprintf(info->kernel_name, sizeof info->kernel_name, "%s", r->kernel_name);
}

static spf_status build_tuned(const unrolled_build *u)
{
    const problem *p = u->p;
    const spf_plan_options *o = u->env->options;
    tune_request q = {.a = p->a, .n = p->n, .space = o->tune_space, .reorder = o->reorder,
                      .dtype = p->dtype, .f16x2_accumulate = f16x2_of(p), .bias = p->bias,
                      .relu = p->relu, .ptx_sm = u->ptx_sm, .sass_sm = u->sass_sm,
                      .threads = o->host_threads, .code_budget = u->budget,
                      .check = u->env->check};
    spf_status status = tuner_run(&q, u->module, u->env->log);
    u->info->configs_tried = u->env->log->count;
    u->info->tune_s = u->env->log->wall_s;
    if (status == SPF_OK)
        info_from_log(u, u->env->log);
    return status;
}

/* The low-cost search (strategy/unrolled/search.h) of options.tune_space. */
static spf_status build_searched(const unrolled_build *u)
{
    const problem *p = u->p;
    const spf_plan_options *o = u->env->options;
    search_request q = {.a = p->a, .n = p->n, .space = o->tune_space, .dtype = p->dtype,
                        .f16x2_accumulate = f16x2_of(p), .bias = p->bias, .relu = p->relu,
                        .reorder = o->reorder, .top_k = o->search_top_k,
                        .proxies = o->search_proxies, .sm_count = u->env->device->sm_count,
                        .ptx_sm = u->ptx_sm, .sass_sm = u->sass_sm, .threads = o->host_threads,
                        .code_budget = u->budget, .check = u->env->check};
    spf_status status = search_run(&q, u->module, &u->info->search, u->env->log);
    u->info->configs_tried = u->env->log->count;
    u->info->tune_s = u->info->search.total_s;
    if (status == SPF_OK)
        info_from_log(u, u->env->log);
    return status;
}

static spf_status unrolled_build_state(const problem *p, const strategy_env *env, void **state,
                                       spf_plan_info *info)
{
    *state = NULL;
    const spf_plan_options *o = env->options;
    if ((o->exhaustive || o->search) && (!env->check || !env->log))
        return FAIL(SPF_ERR_INTERNAL, "tuning without prepared buffers or a log");
    jit_module *module = mem_calloc(1, sizeof *module);
    if (!module)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "an unrolled plan");
    const spf_device_info *dev = env->device;
    unrolled_build u = {.p = p, .env = env, .info = info, .module = module,
                        .sass_sm = dev->cc_major * 10 + dev->cc_minor,
                        .ptx_sm = dev->cc_major >= 9 ? 90 : 80, .budget = code_budget(o)};
    spf_status st = o->exhaustive ? build_tuned(&u) : o->search ? build_searched(&u)
                                                                : build_configured(&u);
    if (st != SPF_OK) {
        jit_module_release(module);
        mem_free(module);
        return st;
    }
    info->device_bytes = (int64_t)module->image_size;
    *state = module;
    return SPF_OK;
}

static spf_status unrolled_launch(const void *state, const void *b, void *c, const float *bias,
                                  void *stream)
{
    return jit_launch(state, b, c, bias, stream);
}

static void unrolled_release(void *state)
{
    if (!state)
        return;
    jit_module_release(state);
    mem_free(state);
}

/* The entry: grid, block and shared bytes (3 + 3 + 1 little-endian u32),
 * then the linked cubin. */
enum { UNROLLED_HEADER_BYTES = 7 * 4 };

static void put_u32(unsigned char *at, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        at[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *at)
{
    return (uint32_t)at[0] | (uint32_t)at[1] << 8 | (uint32_t)at[2] << 16 | (uint32_t)at[3] << 24;
}

static spf_status unrolled_encode(const void *state, unsigned char **bytes, size_t *size)
{
    const jit_module *m = state;
    *size = UNROLLED_HEADER_BYTES + m->image_size;
    *bytes = mem_alloc(*size);
    if (!*bytes)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "a cache entry of %zu bytes", *size);
    for (int i = 0; i < 3; i++) {
        put_u32(*bytes + 4 * i, m->grid[i]);
        put_u32(*bytes + 12 + 4 * i, m->block[i]);
    }
    put_u32(*bytes + 24, m->shared_bytes);
    memcpy(*bytes + UNROLLED_HEADER_BYTES, m->image, m->image_size);
    return SPF_OK;
}

static spf_status unrolled_decode(const problem *p, const strategy_env *env,
                                  const spf_plan_info *stored, const unsigned char *bytes,
                                  size_t size, void **state)
{
    (void)p, (void)env;
    *state = NULL;
    if (size <= UNROLLED_HEADER_BYTES)
        return FAIL(SPF_ERR_PARSE, "an unrolled entry of %zu bytes: too short for a kernel", size);
    unsigned grid[3], block[3];
    for (int i = 0; i < 3; i++) {
        grid[i] = get_u32(bytes + 4 * i);
        block[i] = get_u32(bytes + 12 + 4 * i);
    }
    jit_module *module = mem_calloc(1, sizeof *module);
    if (!module)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "an unrolled plan");
    spf_status st = jit_module_load_image(bytes + UNROLLED_HEADER_BYTES,
                                          size - UNROLLED_HEADER_BYTES, stored->kernel_name, grid,
                                          block, get_u32(bytes + 24), module, NULL);
    if (st != SPF_OK) {
        mem_free(module);
        return st;
    }
    *state = module;
    return SPF_OK;
}

#else /* !SPF_HAVE_CUDA: supports() says no, so none of these is reached */

static spf_status unrolled_build_state(const problem *p, const strategy_env *env, void **state,
                                       spf_plan_info *info)
{
    (void)p, (void)env, (void)info;
    *state = NULL;
    return FAIL(SPF_ERR_NO_DEVICE, "built without CUDA");
}

static spf_status unrolled_launch(const void *state, const void *b, void *c, const float *bias,
                                  void *stream)
{
    (void)state, (void)b, (void)c, (void)bias, (void)stream;
    return FAIL(SPF_ERR_NO_DEVICE, "built without CUDA");
}

static void unrolled_release(void *state) { (void)state; }

static spf_status unrolled_encode(const void *state, unsigned char **bytes, size_t *size)
{
    (void)state, (void)bytes, (void)size;
    return FAIL(SPF_ERR_NO_DEVICE, "built without CUDA");
}

static spf_status unrolled_decode(const problem *p, const strategy_env *env,
                                  const spf_plan_info *stored, const unsigned char *bytes,
                                  size_t size, void **state)
{
    (void)p, (void)env, (void)stored, (void)bytes, (void)size;
    *state = NULL;
    return FAIL(SPF_ERR_NO_DEVICE, "built without CUDA");
}

#endif

const strategy strategy_unrolled = {
    .id = SPF_STRATEGY_UNROLLED,
    .name = "unrolled",
    .on_device = 1,
    .supports = unrolled_supports,
    .estimate_us = unrolled_estimate_us,
    .build = unrolled_build_state,
    .launch = unrolled_launch,
    .release = unrolled_release,
    .encode = unrolled_encode,
    .decode = unrolled_decode,
};
