/* The plan object (DESIGN.md decision 7): one handle over the strategies —
 * the CPU reference, the generic CSR kernel (S2) and the generated unrolled
 * kernel (S1), forced, ranked, searched or exhaustively tuned — each
 * self-checked against the CPU reference when built (decision 6), kept in
 * the plan cache (decision 5) and executed on the caller's stream without
 * allocating or synchronizing. The build steps of GPU plans are in
 * plan_build.c. */
#include "plan/plan_internal.h"

#include "strategy/unrolled/schedule.h"
#include "core/alloc.h"
#include "core/error.h"
#include "core/log.h"
#include "core/matrix.h"
#include "core/overlap.h"
#include "core/dtype.h"
#include "gpu/timing.h"
#include "plan/cache.h"

#include <stdio.h>
#include <string.h>

#ifdef SPF_HAVE_CUDA
#include "gpu/cuda_check.h"
#endif

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

static spf_status launch_plan(void *ctx, const void *b, void *c, const float *bias, void *stream)
{
    return plan_gpu_launch(ctx, b, c, bias, stream);
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
        TRY(plan_build_generic(p, a));
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
    TRY(plan_build_strategy(p, a, o, dev, &check));

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
    return plan_gpu_launch(p, b, c, bias, stream);
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

/* Every strategy (the CPU reference included) reads B and bias while it
 * writes C (core/overlap.h). */
static spf_status check_disjoint(const spf_plan *p, const void *b, const void *c, const float *bias)
{
    uint64_t es = dtype_size(p->dtype); /* m, k, n < 2^31: the sizes below fit */
    return output_disjoint("spf_plan_execute", c, (uint64_t)(p->m * p->n) * es, b,
                           (uint64_t)(p->k * p->n) * es, bias, (uint64_t)p->m * sizeof *bias);
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
    spf_status st = check_disjoint(plan, b, c, bias);
    if (st != SPF_OK)
        return st;
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
