/* The build steps of GPU plans (gpu/plan_internal.h): which configuration
 * of the generated unrolled kernel (forced, the rank model's choice, the
 * low-cost search's or the exhaustive tuner's), the generic CSR kernel, and
 * AUTO's choice between the two by measurement. plan.c wraps them with the
 * plan cache and the self-check. */
#include "plan/plan_internal.h"

#include "strategy/unrolled/schedule.h"
#include "strategy/unrolled/unrolled.h"
#include "core/alloc.h"
#include "core/error.h"
#include "core/log.h"
#include "core/matrix.h"
#include "strategy/unrolled/search.h"
#include "gpu/timing.h"
#include "strategy/unrolled/reorder.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifdef SPF_HAVE_CUDA

/* The code budget of AUTO, in instructions (schedule_instructions). ptxas
 * assembled ~105 k fma of unrolled code in 9.6 CPU-seconds on the H200 host
 * (DESIGN.md: 16 chunks × 0.6 s), about 11 k instructions per CPU-second;
 * 2^20 instructions is then ~95 CPU-seconds, a few seconds on a 16-core
 * host. Bigger patterns go to the generic kernel. */
#define PLAN_CODE_BUDGET ((int64_t)1 << 20)

spf_status plan_gpu_launch(const spf_plan *p, const void *b, void *c, const float *bias,
                           void *stream)
{
    if (p->strategy == SPF_STRATEGY_GENERIC)
        return generic_csr_launch(&p->generic, p->n, p->dtype, b, c, bias, p->relu, stream);
    return jit_launch(&p->module, b, c, bias, stream);
}


/* The fixed fallback of a plan built without search or tuning (see
 * build_configured): the configuration with the smallest geomean loss
 * against the tuned best over the 26
 * problems tuned on the H200 (bench/results/tuning/, 2026-11-22): a thread
 * per column (v = 1), 32 rows per block, two warps per group and a 4-way
 * K split (SparseRT §3.4) lost 1.14× on geomean and 1.35× at worst, where
 * the previous guess (m1 = 8, the widest vector N allows) lost 1.40× and
 * 1.96×. It also makes the least code per nonzero, so it compiles fastest.
 * f16x2 accumulation needs pairs of columns, so it takes v = 2. */
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

/* One unrolled kernel of configuration cfg, on rows in LO-SpMM Algorithm 1
 * order (plan/reorder.h) when asked, for the configuration's m1; the
 * reorder time counts as generation time. */
static spf_status build_unrolled(spf_plan *p, const spf_matrix *a, const spf_plan_options *o,
                                 spf_kernel_config cfg, int ptx_sm, int sass_sm, int64_t budget)
{
    spf_status status = SPF_OK;
    ptx_program prog = {0};
    int32_t *row_order = NULL;
    p->info.code_bytes = 0;
    double t0 = timing_now_s();
    if (o->reorder) {
        row_order = mem_alloc_array((size_t)(p->m ? p->m : 1), sizeof *row_order);
        if (!row_order)
            FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "row order of %lld rows", (long long)p->m);
        TRY(reorder_rows(a, cfg.m1, REORDER_NNZ_SLACK, row_order));
    }
    TRY(unrolled_generate(a, row_order, p->n, &cfg, p->dtype, o->f16x2_accumulate, p->bias,
                          p->relu, ptx_sm, budget, &prog));
    p->info.generate_s = timing_now_s() - t0;
    for (int u = 0; u < prog.unit_count; u++)
        p->info.code_bytes += (int64_t)prog.units[u].size;
    jit_timings t = {0};
    TRY(jit_build(&prog, sass_sm, o->host_threads, &p->module, &t));
    p->strategy = SPF_STRATEGY_UNROLLED;
    p->info.config = cfg;
    p->info.registers = p->module.registers;
    p->info.compile_s = t.compile_s;
    p->info.link_s = t.link_s;
    p->info.load_s = t.load_s;
    snprintf(p->info.kernel_name, sizeof p->info.kernel_name, "%s", prog.entry);
fail:
    ptx_program_free(&prog);
    mem_free(row_order);
    return status;
}

/* The rank model's first choice (LO-SpMM §3.5) among the survivors of the
 * constraints in o->tune_space: the CPU stages of the search with K = 1,
 * milliseconds and no compile. 0 when there is none (no usable model,
 * nothing survives) or the model has not been trained for the request:
 * its training logs are all float32 without f16x2 accumulation. */
static int ranked_config(const spf_plan *p, const spf_matrix *a, const spf_plan_options *o,
                         const spf_device_info *dev, spf_kernel_config *out)
{
    if (p->dtype != SPF_DTYPE_F32 || o->f16x2_accumulate)
        return 0;
    search_request q = {.a = a, .n = p->n, .space = o->tune_space, .dtype = p->dtype,
                        .bias = p->bias, .relu = p->relu, .top_k = 1, .sm_count = dev->sm_count,
                        .threads = o->host_threads};
    search_shortlist s = {0};
    spf_search_info info;
    spf_status st = search_shortlist_create(&q, &s, &info);
    int ok = st == SPF_OK && s.count > 0 && s.ranked;
    if (ok)
        *out = s.configs[0];
    else
        log_msg(SPF_LOG_INFO, "plan: no ranked configuration (%s); the fixed default",
                st != SPF_OK ? spf_last_error() : s.count ? "no usable rank model"
                                                          : "nothing survives the constraints");
    error_clear();
    search_shortlist_free(&s);
    return ok;
}

/* A plan without search or tuning: the forced configuration; else the
 * rank model's choice, and the fixed default when that one cannot be built
 * (over the code budget, rejected by ptxas). Replayed over the 48 tuning
 * logs measured on the H200 (bench/results/tuning and search-eval, every
 * configuration of each problem timed), the fixed default's kernel was
 * 19.5 % slower than each problem's best on mean (86 % at worst), the
 * model's first choice 8.8 % (76 %; leave-one-problem-out), for the same
 * single compile. */
static spf_status build_configured(spf_plan *p, const spf_matrix *a, const spf_plan_options *o,
                                   const spf_device_info *dev, int ptx_sm, int sass_sm,
                                   int64_t budget)
{
    if (o->config)
        return build_unrolled(p, a, o, *o->config, ptx_sm, sass_sm, budget);
    spf_kernel_config fixed = default_config(p->n, o->f16x2_accumulate), ranked;
    if (ranked_config(p, a, o, dev, &ranked) && memcmp(&ranked, &fixed, sizeof fixed) != 0) {
        spf_status st = build_unrolled(p, a, o, ranked, ptx_sm, sass_sm, budget);
        if (st != SPF_ERR_UNSUPPORTED && st != SPF_ERR_COMPILE)
            return st;
        log_msg(SPF_LOG_INFO, "plan: the rank model's choice m1 %d n1 %d v %d could not be "
                              "built (%s); the fixed default instead",
                (int)ranked.m1, (int)ranked.n1, (int)ranked.v, spf_last_error());
        jit_module_release(&p->module);
        error_clear();
    }
    return build_unrolled(p, a, o, fixed, ptx_sm, sass_sm, budget);
}

/* The plan's info from the tuning log's chosen row (exhaustive tuning and
 * the search), which was checked and timed already. */
static void info_from_log(spf_plan *p)
{
    const tune_row *r = &p->log.rows[p->log.best];
    p->strategy = SPF_STRATEGY_UNROLLED;
    p->info.config = r->cfg;
    p->info.registers = p->module.registers;
    p->info.code_bytes = r->code_bytes;
    p->info.generate_s = r->generate_s;
    p->info.compile_s = r->compile_s;
    p->info.link_s = r->link_s;
    p->info.load_s = r->load_s;
    p->info.kernel_us = r->kernel_us;
    p->info.verify_error = r->verify_error;
    snprintf(p->info.kernel_name, sizeof p->info.kernel_name, "%s", r->kernel_name);
}

static spf_status build_tuned(spf_plan *p, const spf_matrix *a, const spf_plan_options *o,
                              int ptx_sm, int sass_sm, int64_t budget, selfcheck *check)
{
    tune_request q = {.a = a, .n = p->n, .space = o->tune_space, .reorder = o->reorder,
                      .dtype = p->dtype, .f16x2_accumulate = o->f16x2_accumulate,
                      .bias = p->bias, .relu = p->relu, .ptx_sm = ptx_sm, .sass_sm = sass_sm,
                      .threads = o->host_threads, .code_budget = budget, .check = check};
    spf_status status = tuner_run(&q, &p->module, &p->log);
    p->info.configs_tried = p->log.count;
    p->info.tune_s = p->log.wall_s;
    if (status == SPF_OK)
        info_from_log(p);
    return status;
}

/* The low-cost search (gpu/search.h) of options.tune_space. It compiles
 * and times kernels, so it prepares the self-check's buffers even when
 * options.verify is off (the caller releases them). */
static spf_status build_searched(spf_plan *p, const spf_matrix *a, const spf_plan_options *o,
                                 const spf_device_info *dev, int ptx_sm, int sass_sm,
                                 int64_t budget, selfcheck *check)
{
    if (!check->b) {
        spf_status st = selfcheck_prepare(a, p->n, p->dtype, p->bias, p->relu, o->host_threads,
                                          check);
        if (st != SPF_OK)
            return st;
    }
    search_request q = {.a = a, .n = p->n, .space = o->tune_space, .dtype = p->dtype,
                        .f16x2_accumulate = o->f16x2_accumulate, .bias = p->bias,
                        .relu = p->relu, .reorder = o->reorder, .top_k = o->search_top_k,
                        .proxies = o->search_proxies, .sm_count = dev->sm_count,
                        .ptx_sm = ptx_sm, .sass_sm = sass_sm, .threads = o->host_threads,
                        .code_budget = budget, .check = check};
    spf_status status = search_run(&q, &p->module, &p->info.search, &p->log);
    p->info.configs_tried = p->log.count;
    p->info.tune_s = p->info.search.total_s;
    if (status == SPF_OK)
        info_from_log(p);
    return status;
}

spf_status plan_build_generic(spf_plan *p, const spf_matrix *a)
{
    spf_status status = generic_csr_upload(a, &p->generic);
    if (status != SPF_OK)
        return status;
    p->strategy = SPF_STRATEGY_GENERIC;
    /* The shape as launched on cudaMalloc'd (256-byte aligned) buffers;
     * less aligned caller buffers may get narrower vectors. */
    generic_launch l;
    const void *aligned = (const void *)(uintptr_t)256;
    status = generic_launch_choose(&p->generic, p->n, p->dtype, aligned, aligned, &l);
    if (status == SPF_OK)
        generic_launch_name(&l, p->info.kernel_name, sizeof p->info.kernel_name);
    return status;
}

/* Time whatever the plan holds on the self-check's buffers (timing.c). */
typedef struct timed_plan {
    const spf_plan *p;
    const selfcheck *check;
} timed_plan;

static spf_status launch_timed_plan(void *ctx, void *stream)
{
    const timed_plan *t = ctx;
    return plan_gpu_launch(t->p, t->check->b, t->check->c, t->check->bias, stream);
}

static spf_status time_plan(const spf_plan *p, const selfcheck *check, double *us)
{
    timed_plan t = {p, check};
    timing_result r;
    spf_status st = timing_measure(launch_timed_plan, &t, NULL, NULL, &r);
    if (st == SPF_OK)
        *us = r.median_us;
    return st;
}

/* DESIGN.md decision 7: strategies live side by side and a plan must not
 * keep a kernel that another strategy beats. With the unrolled kernel built,
 * AUTO also builds the generic one, times both on the self-check's buffers
 * and keeps the faster. The loser is released. */
static spf_status keep_faster(spf_plan *p, const spf_matrix *a, const selfcheck *check)
{
    double unrolled_us = p->info.kernel_us, generic_us = 0;
    spf_status status = SPF_OK;
    spf_plan_info unrolled_info = p->info;
    if (!(unrolled_us > 0))
        TRY(time_plan(p, check, &unrolled_us));
    TRY(plan_build_generic(p, a));
    TRY(time_plan(p, check, &generic_us));
    if (generic_us < unrolled_us) {
        log_msg(SPF_LOG_INFO, "plan: generic kernel %.2f us beats %s at %.2f us", generic_us,
                unrolled_info.kernel_name, unrolled_us);
        jit_module_release(&p->module);
        p->info.config = (spf_kernel_config){0};
        p->info.registers = 0;
        p->info.kernel_us = generic_us;
        p->info.verify_error = -1; /* create_gpu checks the kept kernel */
        return SPF_OK;
    }
    generic_csr_release(&p->generic);
    p->info = unrolled_info;
    p->info.kernel_us = unrolled_us;
    p->strategy = SPF_STRATEGY_UNROLLED;
    return SPF_OK;
fail:
    return status;
}

/* The strategy chosen (DESIGN.md decision 7): the unrolled kernel when its
 * code fits the budget, else the generic one; AUTO with buffers to time on
 * keeps whichever of the two is faster. */
spf_status plan_build_strategy(spf_plan *p, const spf_matrix *a, const spf_plan_options *o,
                               const spf_device_info *dev, selfcheck *check)
{
    int sass_sm = dev->cc_major * 10 + dev->cc_minor;
    int ptx_sm = dev->cc_major >= 9 ? 90 : 80;
    if (o->strategy == SPF_STRATEGY_GENERIC)
        return plan_build_generic(p, a);
    if (dev->cc_major < 8) {
        if (o->strategy == SPF_STRATEGY_UNROLLED)
            return FAIL(SPF_ERR_UNSUPPORTED, "generated kernels need compute capability 8.0 or "
                                             "newer; device %d is %d.%d",
                        p->device, dev->cc_major, dev->cc_minor);
        return plan_build_generic(p, a);
    }
    /* An explicit UNROLLED is taken at any size; AUTO keeps to the budget. */
    int64_t budget = o->strategy == SPF_STRATEGY_UNROLLED ? 0 : PLAN_CODE_BUDGET;
    spf_status st = o->exhaustive ? build_tuned(p, a, o, ptx_sm, sass_sm, budget, check)
                    : o->search   ? build_searched(p, a, o, dev, ptx_sm, sass_sm, budget, check)
                                  : build_configured(p, a, o, dev, ptx_sm, sass_sm, budget);
    if (st == SPF_OK && o->strategy == SPF_STRATEGY_AUTO && check->b)
        return keep_faster(p, a, check);
    if (st == SPF_ERR_UNSUPPORTED && o->strategy == SPF_STRATEGY_AUTO) {
        log_msg(SPF_LOG_INFO, "plan: the generic kernel instead of generated code: %s",
                spf_last_error());
        jit_module_release(&p->module);
        p->info.config = (spf_kernel_config){0};
        error_clear();
        return plan_build_generic(p, a);
    }
    return st;
}

#endif
