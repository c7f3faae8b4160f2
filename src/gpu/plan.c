/* The plan object (DESIGN.md decision 7): one handle over the strategies —
 * the CPU reference, the generic CSR kernel (S2) and the generated unrolled
 * kernel (S1), forced, default or exhaustively tuned — each self-checked
 * against the CPU reference when built (decision 6) and executed on the
 * caller's stream without allocating or synchronizing. */
#include "codegen/schedule.h"
#include "codegen/unrolled.h"
#include "core/alloc.h"
#include "core/error.h"
#include "core/log.h"
#include "core/matrix.h"
#include "gpu/generic.h"
#include "gpu/jit.h"
#include "gpu/search.h"
#include "gpu/selfcheck.h"
#include "gpu/timing.h"
#include "gpu/tuner.h"
#include "plan/cache.h"
#include "plan/plan_cpu.h"
#include "plan/reorder.h"

#include <stdio.h>
#include <string.h>

#ifdef SPF_HAVE_CUDA
#include "gpu/cuda_check.h"
#endif

/* The code budget of AUTO, in instructions (schedule_instructions). ptxas
 * assembled ~105 k fma of unrolled code in 9.6 CPU-seconds on the H200 host
 * (DESIGN.md: 16 chunks × 0.6 s), about 11 k instructions per CPU-second;
 * 2^20 instructions is then ~95 CPU-seconds, a few seconds on a 16-core
 * host. Bigger patterns go to the generic kernel. */
#define PLAN_CODE_BUDGET ((int64_t)1 << 20)

struct spf_plan {
    spf_strategy strategy; /* resolved: never AUTO                */
    spf_dtype dtype;
    int64_t m, k, n;
    int bias, relu;
    int device;            /* GPU plans run on this device only   */
    spf_plan_info info;
    cpu_plan cpu;
    generic_csr generic;
    jit_module module;
    tune_log log;          /* exhaustive tuning only              */
};

void spf_plan_options_init(spf_plan_options *options)
{
    if (!options)
        return;
    memset(options, 0, sizeof *options);
    options->strategy = SPF_STRATEGY_AUTO;
    options->dtype = SPF_DTYPE_F32;
    options->verify = 1;
    options->device = 0;
    options->config = NULL;
    options->tune_space = SPF_TUNE_SPACE_COMPACT;
    options->search_proxies = 1;
    options->cache = 1;
}

static int is_flag(int x) { return x == 0 || x == 1; }

static spf_status check_options(int64_t n, const spf_plan_options *o)
{
    if (n < 1 || n > INT32_MAX)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "n = %lld: must be in 1 .. 2^31 - 1", (long long)n);
    if (o->strategy < SPF_STRATEGY_AUTO || o->strategy > SPF_STRATEGY_CPU)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "unknown strategy %d", (int)o->strategy);
    if (o->dtype < SPF_DTYPE_F32 || o->dtype > SPF_DTYPE_BF16)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "unknown dtype %d", (int)o->dtype);
    if (!is_flag(o->f16x2_accumulate) || !is_flag(o->bias) || !is_flag(o->relu) ||
        !is_flag(o->verify) || !is_flag(o->exhaustive) || !is_flag(o->reorder) ||
        !is_flag(o->search) || !is_flag(o->search_proxies) || !is_flag(o->cache))
        return FAIL(SPF_ERR_INVALID_ARGUMENT,
                    "f16x2_accumulate, bias, relu, verify, exhaustive, reorder, search, "
                    "search_proxies and cache must be 0 or 1");
    if (o->search_top_k < 0)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "search_top_k = %d: must be ≥ 0", o->search_top_k);
    if (o->tune_space != SPF_TUNE_SPACE_COMPACT && o->tune_space != SPF_TUNE_SPACE_FULL)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "unknown tune_space %d", (int)o->tune_space);
    if (o->device < 0 || o->host_threads < 0)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "device %d, host_threads %d: must be ≥ 0", o->device,
                    o->host_threads);
    if (o->f16x2_accumulate && o->dtype != SPF_DTYPE_F16)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "f16x2 accumulation needs dtype F16");
    int unrolled = o->strategy == SPF_STRATEGY_AUTO || o->strategy == SPF_STRATEGY_UNROLLED;
    if ((o->config || o->exhaustive) && !unrolled)
        return FAIL(SPF_ERR_INVALID_ARGUMENT,
                    "a forced config or exhaustive tuning needs strategy UNROLLED or AUTO");
    if (o->config && o->exhaustive)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "a forced config and exhaustive tuning exclude each other");
    if (o->search && (o->exhaustive || o->config || !unrolled))
        return FAIL(SPF_ERR_INVALID_ARGUMENT,
                    "the low-cost search needs strategy UNROLLED or AUTO and excludes exhaustive "
                    "tuning and a forced config");
    if (o->reorder && !unrolled)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "row reordering needs strategy UNROLLED or AUTO");
    if (o->config && schedule_config_check(o->config, n) != SPF_OK) {
        error_prefix("config");
        return SPF_ERR_INVALID_ARGUMENT;
    }
    if (o->strategy == SPF_STRATEGY_CPU && o->dtype != SPF_DTYPE_F32)
        return FAIL(SPF_ERR_UNSUPPORTED, "the CPU strategy takes float32 buffers only (dtype F32)");
    if (o->strategy == SPF_STRATEGY_GENERIC && o->f16x2_accumulate)
        return FAIL(SPF_ERR_UNSUPPORTED, "f16x2 accumulation exists in the UNROLLED strategy only");
    return SPF_OK;
}

/* ------------------------------------------------------------ GPU plans */

#ifdef SPF_HAVE_CUDA

/* Launch whatever the plan holds; the one path for execute and the checks. */
static spf_status gpu_launch(const spf_plan *p, const void *b, void *c, const float *bias,
                             void *stream)
{
    if (p->strategy == SPF_STRATEGY_GENERIC)
        return generic_csr_launch(&p->generic, p->n, p->dtype, b, c, bias, p->relu, stream);
    return jit_launch(&p->module, b, c, bias, stream);
}

static spf_status launch_plan(void *ctx, const void *b, void *c, const float *bias, void *stream)
{
    return gpu_launch(ctx, b, c, bias, stream);
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

static spf_status build_generic(spf_plan *p, const spf_matrix *a)
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
    return gpu_launch(t->p, t->check->b, t->check->c, t->check->bias, stream);
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
    TRY(build_generic(p, a));
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
static spf_status build_strategy(spf_plan *p, const spf_matrix *a, const spf_plan_options *o,
                                 const spf_device_info *dev, selfcheck *check)
{
    int sass_sm = dev->cc_major * 10 + dev->cc_minor;
    int ptx_sm = dev->cc_major >= 9 ? 90 : 80;
    if (o->strategy == SPF_STRATEGY_GENERIC)
        return build_generic(p, a);
    if (dev->cc_major < 8) {
        if (o->strategy == SPF_STRATEGY_UNROLLED)
            return FAIL(SPF_ERR_UNSUPPORTED, "generated kernels need compute capability 8.0 or "
                                             "newer; device %d is %d.%d",
                        p->device, dev->cc_major, dev->cc_minor);
        return build_generic(p, a);
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
        return build_generic(p, a);
    }
    return st;
}

/* Where a GPU plan is looked up and stored (plan/cache.h): dir is "" when
 * the cache is off for this plan. */
typedef struct cache_slot {
    char dir[4096];
    cache_key key;
} cache_slot;

static void release_gpu(spf_plan *p);

/* The plan rebuilt from a cache entry: the kernel loaded, the info of the
 * build that stored it restored. SPF_ERR_PARSE for an entry that does not
 * fit the request. */
static spf_status plan_from_entry(spf_plan *p, const spf_matrix *a, const spf_plan_options *o,
                                  const cache_entry *e)
{
    spf_status status = SPF_OK;
    if (o->strategy != SPF_STRATEGY_AUTO && o->strategy != e->strategy)
        return FAIL(SPF_ERR_PARSE, "a plan of strategy %d stored for a request of strategy %d",
                    (int)e->strategy, (int)o->strategy);
    if (e->strategy == SPF_STRATEGY_GENERIC)
        TRY(build_generic(p, a));
    else
        TRY(jit_module_load_image(e->payload, e->payload_size, e->kernel_name, e->grid, e->block,
                                  e->shared_bytes, &p->module, NULL));
    p->strategy = e->strategy;
    p->info.config = e->config;
    snprintf(p->info.kernel_name, sizeof p->info.kernel_name, "%s", e->kernel_name);
    p->info.registers = e->registers;
    p->info.code_bytes = e->code_bytes;
    p->info.configs_tried = e->configs_tried;
    p->info.kernel_us = e->kernel_us;
    p->info.tune_s = e->tune_s;
    p->info.verify_error = e->verify_error;
    p->info.search = e->search;
fail:
    return status;
}

/* DESIGN.md decision 5: the plan of this request from the on-disk cache,
 * with nothing searched, compiled or checked (only verified plans are
 * stored); 1 on a hit. The cache can cost a miss, never a plan: an entry
 * that cannot be used is logged and rebuilt (and overwritten by
 * cache_save), and a folder that cannot be named turns it off. */
static int cache_lookup(spf_plan *p, const spf_matrix *a, const spf_plan_options *o,
                        const spf_device_info *dev, cache_slot *slot)
{
    cache_entry e = {0};
    int found = 0;
    double t0 = timing_now_s();
    slot->dir[0] = 0;
    if (!o->cache)
        return 0;
    spf_status st = cache_dir_default(slot->dir, sizeof slot->dir);
    if (st == SPF_OK && slot->dir[0])
        st = cache_key_make(a, p->n, o, dev->cc_major * 10 + dev->cc_minor, &slot->key);
    if (st != SPF_OK) {
        log_msg(SPF_LOG_WARN, "plan cache: off for this plan: %s", spf_last_error());
        slot->dir[0] = 0;
    }
    if (slot->dir[0])
        st = cache_load(slot->dir, &slot->key, &e, &found);
    if (st == SPF_OK && found)
        st = plan_from_entry(p, a, o, &e);
    if (st != SPF_OK && slot->dir[0]) {
        log_msg(SPF_LOG_WARN, "plan cache: entry not used, building the plan: %s", spf_last_error());
        release_gpu(p);
        p->info = (spf_plan_info){.verify_error = -1.0};
        found = 0;
    }
    cache_entry_release(&e);
    error_clear();
    p->info.from_cache = found;
    if (found)
        p->info.load_s = timing_now_s() - t0;
    return found;
}

/* DESIGN.md decision 5: store a plan built and checked here, so that the
 * next create of this request loads it. A plan the self-check did not run
 * on is not stored, since a hit is trusted unchecked; a failure to store
 * costs the next create a build, not this one its plan. */
static void cache_save(const spf_plan *p, const spf_plan_options *o, const cache_slot *slot)
{
    if (!slot->dir[0] || !o->verify || !(p->info.verify_error >= 0))
        return;
    cache_entry e = {.strategy = p->strategy,
                     .config = p->info.config,
                     .registers = p->info.registers,
                     .configs_tried = p->info.configs_tried,
                     .code_bytes = p->info.code_bytes,
                     .kernel_us = p->info.kernel_us,
                     .tune_s = p->info.tune_s,
                     .verify_error = p->info.verify_error,
                     .search = p->info.search};
    snprintf(e.kernel_name, sizeof e.kernel_name, "%s", p->info.kernel_name);
    if (p->strategy == SPF_STRATEGY_UNROLLED) {
        memcpy(e.grid, p->module.grid, sizeof e.grid);
        memcpy(e.block, p->module.block, sizeof e.block);
        e.shared_bytes = p->module.shared_bytes;
        e.payload = p->module.image; /* borrowed */
        e.payload_size = p->module.image_size;
    }
    if (cache_store(slot->dir, &slot->key, &e) != SPF_OK) {
        log_msg(SPF_LOG_WARN, "plan cache: %s not stored: %s", p->info.kernel_name,
                spf_last_error());
        error_clear();
    }
}

/* Build the plan's kernel and check it against the CPU reference
 * (DESIGN.md decision 6). */
static spf_status build_checked(spf_plan *p, const spf_matrix *a, const spf_plan_options *o,
                                const spf_device_info *dev)
{
    spf_status status = SPF_OK;
    selfcheck check = {0};
    double t0 = timing_now_s();
    if (o->verify || o->exhaustive)
        TRY(selfcheck_prepare(a, p->n, p->dtype, p->bias, p->relu, o->host_threads, &check));
    double prepare_s = timing_now_s() - t0;
    TRY(build_strategy(p, a, o, dev, &check));

    if (o->verify && p->info.verify_error < 0) { /* the tuner checked its pick already */
        t0 = timing_now_s();
        TRY(selfcheck_measure(&check, launch_plan, p, &p->info.verify_error));
        p->info.verify_s = prepare_s + (timing_now_s() - t0);
        double tolerance = selfcheck_tolerance(p->dtype, o->f16x2_accumulate);
        if (!(p->info.verify_error <= tolerance))
            FAIL_GOTO(SPF_ERR_VERIFY,
                      "%s on a %lld×%lld matrix, N = %lld: relative error %.3g against the CPU "
                      "reference, over the tolerance %.0e",
                      p->info.kernel_name, (long long)p->m, (long long)p->k, (long long)p->n,
                      p->info.verify_error, tolerance);
    }
fail:
    selfcheck_release(&check);
    return status;
}

static spf_status create_gpu(spf_plan *p, const spf_matrix *a, const spf_plan_options *o)
{
    spf_status status = SPF_OK;
    int previous = -1;
    cache_slot slot;
    spf_device_info dev;
    TRY(spf_device_query(o->device, &dev));
    if (!dev.available)
        FAIL_GOTO(SPF_ERR_NO_DEVICE,
                  "device %d: %s; SPF_STRATEGY_CPU runs the CPU reference on host buffers instead",
                  o->device, dev.reason);
    TRY(CUDA_CHECK(cudaGetDevice(&previous)));
    TRY(CUDA_CHECK(cudaSetDevice(o->device)));
    /* The driver linker works in the current context: make it exist. */
    TRY(CUDA_CHECK(cudaFree(NULL)));
    if (!cache_lookup(p, a, o, &dev, &slot)) {
        TRY(build_checked(p, a, o, &dev));
        cache_save(p, o, &slot);
    }
fail:
    if (previous >= 0 && previous != o->device)
        (void)cudaSetDevice(previous);
    return status;
}

static spf_status execute_gpu(const spf_plan *p, const void *b, void *c, const float *bias,
                              void *stream)
{
    int current;
    spf_status st = CUDA_CHECK(cudaGetDevice(&current));
    if (st != SPF_OK)
        return st;
    if (current != p->device)
        return FAIL(SPF_ERR_INVALID_ARGUMENT,
                    "the plan was built on device %d but device %d is current", p->device, current);
    return gpu_launch(p, b, c, bias, stream);
}

static void release_gpu(spf_plan *p)
{
    jit_module_release(&p->module);
    generic_csr_release(&p->generic);
}

#else /* !SPF_HAVE_CUDA */

static spf_status create_gpu(spf_plan *p, const spf_matrix *a, const spf_plan_options *o)
{
    (void)p, (void)a;
    return FAIL(SPF_ERR_NO_DEVICE,
                "device %d: spforge was built without CUDA; SPF_STRATEGY_CPU runs the CPU "
                "reference on host buffers instead",
                o->device);
}

static spf_status execute_gpu(const spf_plan *p, const void *b, void *c, const float *bias,
                              void *stream)
{
    (void)p, (void)b, (void)c, (void)bias, (void)stream;
    return FAIL(SPF_ERR_NO_DEVICE, "built without CUDA");
}

static void release_gpu(spf_plan *p) { (void)p; }

#endif

/* -------------------------------------------------------------- the API */

spf_status spf_plan_create(const spf_matrix *a, int64_t n, const spf_plan_options *options,
                           spf_plan **out)
{
    spf_status status = SPF_OK;
    spf_plan *p = NULL;
    error_clear();
    CHECK_ARG(out != NULL);
    *out = NULL;
    CHECK_ARG(a != NULL);
    spf_plan_options defaults;
    spf_plan_options_init(&defaults);
    const spf_plan_options *o = options ? options : &defaults;
    TRY(check_options(n, o));

    p = mem_calloc(1, sizeof *p);
    if (!p)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "a plan");
    p->dtype = o->dtype;
    p->m = a->rows, p->k = a->cols, p->n = n;
    p->bias = o->bias, p->relu = o->relu;
    p->device = o->device;
    p->info.verify_error = -1.0;
    if (o->strategy == SPF_STRATEGY_CPU) {
        TRY(cpu_plan_create(a, n, o->relu, o->host_threads, &p->cpu));
        p->strategy = SPF_STRATEGY_CPU;
        snprintf(p->info.kernel_name, sizeof p->info.kernel_name, "cpu_reference_f64");
    } else {
        TRY(create_gpu(p, a, o));
    }
    p->info.strategy = p->strategy;
    *out = p;
    p = NULL;
fail:
    spf_plan_free(p);
    return status;
}

spf_status spf_plan_execute(const spf_plan *plan, const void *b, void *c, const float *bias,
                            void *stream)
{
    error_clear();
    CHECK_ARG(plan != NULL);
    CHECK_ARG(b != NULL && c != NULL);
    if (plan->bias && !bias)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "the plan adds a bias: bias must not be NULL");
    if (!plan->bias && bias)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "the plan was made without bias: pass NULL");
    if (plan->strategy == SPF_STRATEGY_CPU)
        return cpu_plan_execute(&plan->cpu, b, c, bias);
    return execute_gpu(plan, b, c, bias, stream);
}

spf_status spf_plan_get_info(const spf_plan *plan, spf_plan_info *out)
{
    error_clear();
    CHECK_ARG(plan != NULL && out != NULL);
    *out = plan->info;
    return SPF_OK;
}

spf_status spf_plan_write_tuning_log(const spf_plan *plan, const char *path)
{
    error_clear();
    CHECK_ARG(plan != NULL && path != NULL);
    if (plan->log.count == 0 && plan->info.from_cache)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "the plan was loaded from the plan cache, which keeps "
                                              "no tuning log (options.cache = 0 tunes again)");
    if (plan->log.count == 0)
        return FAIL(SPF_ERR_INVALID_ARGUMENT,
                    "the plan was not tuned (options.exhaustive and options.search are 0): it "
                    "has no tuning log");
    return tune_log_write_csv(&plan->log, path);
}

void spf_plan_free(spf_plan *plan)
{
    if (!plan)
        return;
    cpu_plan_release(&plan->cpu);
    release_gpu(plan);
    tune_log_free(&plan->log);
    mem_free(plan);
}
