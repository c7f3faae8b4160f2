/* The plan object (DESIGN.md decision 7): one handle over the strategy
 * table. spf_plan_create checks the request, asks the planner for the
 * candidates, builds the ones it names (all of them timed under AUTO, the
 * fastest kept), self-checks the kept one against the CPU reference
 * (decision 6) and keeps it in the plan cache (decision 5);
 * spf_plan_execute launches it on the caller's stream without allocating
 * or synchronizing. Nothing here switches on which strategy it holds. */
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "core/matrix.h"
#include "core/overlap.h"
#include "core/progress.h"
#include "gpu/selfcheck.h"
#include "gpu/timing.h"
#include "plan/cache.h"
#include "plan/options.h"
#include "plan/planner.h"
#include "plan/problem.h"
#include "strategy/strategy.h"
#include "strategy/unrolled/schedule.h"
#include "strategy/unrolled/tuner.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#ifdef SPF_HAVE_CUDA
#include "gpu/cuda_check.h"
#endif

struct spf_plan {
    const strategy *s;   /* the row that built it (never AUTO)             */
    void *state;         /* s's own state                                  */
    problem shape;       /* the problem, its matrix pointer cleared        */
    int device;          /* device plans run on this device only           */
    spf_plan_info info;
    tune_log log;        /* exhaustive tuning and the search only          */
};

void spf_plan_options_init(spf_plan_options *options)
{
    if (!options)
        return;
    memset(options, 0, sizeof *options);
    options->size = sizeof *options;
    options->strategy = SPF_STRATEGY_AUTO;
    options->dtype = SPF_DTYPE_F32;
    options->math = SPF_MATH_DEFAULT;
    options->b_layout = SPF_LAYOUT_N_LAST;
    options->c_layout = SPF_LAYOUT_N_LAST;
    options->dense = 1;
    options->verify = 1;
    options->tune_space = SPF_TUNE_SPACE_COMPACT;
    options->search_proxies = 1;
    options->cache = 1;
}

/* The growable structs (spforge.h): fields added after their first layout
 * go after it, so a caller built against any header since passes at least
 * these sizes. spf_plan_options's first layout ended before `progress`
 * (its sizeof then, padding included, is that offset on every ABI spforge
 * builds for: `config` made it pointer-aligned), spf_plan_info's before
 * `assembler`. A size past GROWABLE_MAX (plan/options.h) is not one any
 * header gave: the struct was not initialized. */
enum { OPTIONS_FIRST_SIZE = offsetof(spf_plan_options, progress),
       INFO_FIRST_SIZE = offsetof(spf_plan_info, assembler) };

/* The caller's options over the defaults: a caller built against an
 * earlier header passes a smaller size, and the fields it does not know
 * keep their defaults; one built against a later header passes a larger
 * size, and the fields this library does not know are not read. */
spf_status plan_options_read(const spf_plan_options *in, spf_plan_options *out)
{
    spf_plan_options_init(out);
    if (!in)
        return SPF_OK;
    if (in->size < OPTIONS_FIRST_SIZE || in->size > GROWABLE_MAX)
        return FAIL(SPF_ERR_INVALID_ARGUMENT,
                    "options.size = %u: not the size of any spf_plan_options (this library's is "
                    "%zu): initialize the options with spf_plan_options_init",
                    in->size, sizeof *in);
    memcpy(out, in, in->size < sizeof *out ? in->size : sizeof *out);
    out->size = sizeof *out;
    return SPF_OK;
}

static int is_flag(int x) { return x == 0 || x == 1; }

static spf_status check_options(int64_t n, const spf_plan_options *o)
{
    char why[160];
    if (n < 1 || n > INT32_MAX)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "n = %lld: must be in 1 .. 2^31 - 1", (long long)n);
    if (o->strategy != SPF_STRATEGY_AUTO && !strategy_find(o->strategy))
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "unknown strategy %d", (int)o->strategy);
    if (!dtype_valid(o->dtype))
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "unknown dtype %d", (int)o->dtype);
    if (!math_valid(o->math))
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "unknown math mode %d", (int)o->math);
    if (!math_fits(o->math, o->dtype, why, sizeof why))
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "%s", why);
    if ((o->b_layout != SPF_LAYOUT_N_LAST && o->b_layout != SPF_LAYOUT_N_FIRST) ||
        (o->c_layout != SPF_LAYOUT_N_LAST && o->c_layout != SPF_LAYOUT_N_FIRST))
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "unknown layout: b_layout %d, c_layout %d",
                    (int)o->b_layout, (int)o->c_layout);
    if (!is_flag(o->dense) || !is_flag(o->bias) || !is_flag(o->relu) || !is_flag(o->verify) ||
        !is_flag(o->exhaustive) || !is_flag(o->reorder) || !is_flag(o->search) ||
        !is_flag(o->search_proxies) || !is_flag(o->cache))
        return FAIL(SPF_ERR_INVALID_ARGUMENT,
                    "dense, bias, relu, verify, exhaustive, reorder, search, search_proxies and "
                    "cache must be 0 or 1");
    if (o->search_top_k < 0)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "search_top_k = %d: must be ≥ 0", o->search_top_k);
    if (o->timing != SPF_TIMING_COLD && o->timing != SPF_TIMING_HOT)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "unknown timing %d: SPF_TIMING_COLD or SPF_TIMING_HOT",
                    (int)o->timing);
    if (o->tune_space != SPF_TUNE_SPACE_COMPACT && o->tune_space != SPF_TUNE_SPACE_FULL)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "unknown tune_space %d", (int)o->tune_space);
    if (o->device < 0 || o->host_threads < 0)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "device %d, host_threads %d: must be ≥ 0", o->device,
                    o->host_threads);
    /* The unrolled strategy's own options: with AUTO they shape its
     * candidate, and the others are built beside it as always. */
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
    if (o->reorder && !unrolled && o->strategy != SPF_STRATEGY_TC)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "row reordering needs strategy UNROLLED, TC or AUTO");
    if (o->config && schedule_config_check(o->config, n) != SPF_OK) {
        error_prefix("config");
        return SPF_ERR_INVALID_ARGUMENT;
    }
    return SPF_OK;
}

static void plan_release_state(spf_plan *p)
{
    if (p->s && p->state)
        p->s->release(p->state);
    p->state = NULL;
}

const char *spf_candidate_outcome_name(spf_candidate_outcome outcome)
{
    static const char *const names[] = {"chosen", "slower", "refused", "skipped", "failed"};
    return (unsigned)outcome < sizeof names / sizeof names[0] ? names[outcome] : "?";
}

/* ------------------------------------------------- building candidates */

/* Time one built state on the self-check's buffers (gpu/timing.c). */
typedef struct timed_state {
    const strategy *s;
    const void *state;
    const selfcheck *check;
} timed_state;

static spf_status launch_timed(void *ctx, void *stream)
{
    const timed_state *t = ctx;
    return t->s->launch(t->state, t->check->b, t->check->c, t->check->bias, stream);
}

/* By the GPU's time (replays of a CUDA graph): in a launch loop every
 * candidate of a small problem costs the host's few µs per launch, and
 * AUTO's pick among them was a coin toss (bench/results/conv/README.md:
 * the panel kernel at 14 µs kept over cuBLASLt at 6.7 µs, a batch-1 3×3
 * convolution's SpMM on the H200). With the weights cold by default
 * (selfcheck_timing): timed hot, the panel kernel won 48 of BERT-base's
 * 73 layers alone and ran the model at 0.80× of dense, where each layer's
 * weights come from HBM (bench/results/e2e/). */
static spf_status time_state(const strategy *s, const void *state, const selfcheck *check,
                             double *us)
{
    timed_state t = {s, state, check};
    timing_result r;
    timing_options topt;
    selfcheck_timing(check, &topt);
    spf_status st = timing_measure(launch_timed, &t, NULL, &topt, &r);
    if (st == SPF_OK)
        *us = r.median_us;
    return st;
}

/* A build failure that means "not this candidate" under AUTO: the next
 * one is tried. Anything else (a CUDA error, a broken invariant) fails. */
static int candidate_failure(spf_status st)
{
    return st == SPF_ERR_UNSUPPORTED || st == SPF_ERR_COMPILE || st == SPF_ERR_OVERFLOW ||
           st == SPF_ERR_OUT_OF_MEMORY;
}

/* Build candidate c as a BUILD progress stage, and time it as a TIME
 * stage when `timed` (*us: its kernel time). On failure *state is NULL
 * and *build_failed says whether the build (1) or the timing (0) failed. */
static spf_status build_candidate(const planner_candidate *c, const problem *prob,
                                  const strategy_env *env, int timed, void **state,
                                  spf_plan_info *info, double *us, int *build_failed)
{
    spf_status status = SPF_OK;
    *state = NULL;
    *build_failed = 1;
    TRY(progress_begin(SPF_STAGE_BUILD, 1, "%s", c->s->name));
    TRY(progress_end(SPF_STAGE_BUILD, c->s->build(prob, env, state, info)));
    *build_failed = 0;
    *us = info->kernel_us;
    if (timed && !(*us > 0)) {
        TRY(progress_begin(SPF_STAGE_TIME, 1, "%s", c->s->name));
        TRY(progress_end(SPF_STAGE_TIME, time_state(c->s, *state, env->check, us)));
    }
fail:
    if (status != SPF_OK && *state) {
        c->s->release(*state);
        *state = NULL;
    }
    return status;
}

/* DESIGN.md decision 7: build the candidates the planner names; with more
 * than one, time each on the self-check's buffers and keep the fastest
 * (the others are released as soon as they lose). The plan's info gets
 * the kept one's build info and every candidate's outcome. */
static spf_status build_best(spf_plan *p, const problem *prob, const spf_plan_options *o,
                             const strategy_env *env)
{
    spf_status status = SPF_OK;
    planner_candidate cand[SPF_MAX_CANDIDATES];
    int count = planner_rank(prob, env->device, o, cand);
    int kept = -1, to_build = 0, built = 0, others = 0; /* others: built besides the floors */
    /* AUTO times what it builds, so that its choice is a measurement and
     * the info says what each candidate took. */
    int timed = o->strategy == SPF_STRATEGY_AUTO && env->check;
    spf_plan_info kept_info = {0};
    spf_candidate_outcome outcome[SPF_MAX_CANDIDATES];
    double times[SPF_MAX_CANDIDATES] = {0};
    char details[SPF_MAX_CANDIDATES][sizeof((spf_candidate *)0)->detail];
    spf_status last_failure = SPF_OK;

    for (int i = 0; i < count; i++)
        to_build += cand[i].build;
    TRY(progress_begin(SPF_STAGE_CANDIDATES, to_build, "%d of %d strategies", to_build, count));
    /* The floors first, so that every other candidate is weighed against a
     * measured time before it is built (planner_still_worth). */
    for (int step = 0; step < 2 * count; step++) {
        int i = step % count;
        planner_candidate *c = &cand[i];
        if ((step < count) != (c->s->floor != 0))
            continue;
        outcome[i] = !c->supported ? SPF_CANDIDATE_REFUSED : SPF_CANDIDATE_SKIPPED;
        double best = kept >= 0 ? times[kept] : 0;
        int late = timed && planner_build_late(c, best, others);
        if (c->build && timed && !planner_still_worth(c, best))
            c->build = 0;
        snprintf(details[i], sizeof details[i], "%s", c->reason);
        if (!c->build && !late)
            continue;
        spf_plan_info info = {.verify_error = -1.0};
        void *state = NULL;
        double us = 0;
        int build_failed = 0;
        spf_status st = build_candidate(c, prob, env, timed, &state, &info, &us, &build_failed);
        built++;
        others += !c->s->floor;
        if (st != SPF_OK && build_failed && candidate_failure(st) &&
            o->strategy == SPF_STRATEGY_AUTO) {
            snprintf(details[i], sizeof details[i], "%.159s", spf_last_error());
            log_msg(SPF_LOG_INFO, "plan: %s failed: %s", c->s->name, details[i]);
            outcome[i] = SPF_CANDIDATE_FAILED;
            last_failure = st;
            error_clear();
            TRY(progress_step(SPF_STAGE_CANDIDATES, built));
            continue;
        }
        TRY(st);
        snprintf(details[i], sizeof details[i], "%s", info.kernel_name);
        times[i] = us;
        outcome[i] = SPF_CANDIDATE_SLOWER;
        if (kept < 0 || us < times[kept]) {
            if (kept >= 0)
                log_msg(SPF_LOG_INFO, "plan: %s %.2f us beats %s at %.2f us", c->s->name, us,
                        cand[kept].s->name, times[kept]);
            plan_release_state(p);
            p->s = c->s;
            p->state = state;
            kept = i, kept_info = info;
        } else {
            c->s->release(state);
        }
        TRY(progress_step(SPF_STAGE_CANDIDATES, built));
    }
    if (kept < 0) {
        char text[2048];
        size_t used = 0;
        problem_describe(prob, text, sizeof text);
        used = strlen(text);
        for (int i = 0; i < count && used < sizeof text; i++) {
            snprintf(text + used, sizeof text - used, "; %s: %.159s", cand[i].s->name,
                     details[i]);
            used = strlen(text);
        }
        FAIL_GOTO(last_failure != SPF_OK ? last_failure : SPF_ERR_UNSUPPORTED,
                  "no strategy could be built for %s", text);
    }
    outcome[kept] = SPF_CANDIDATE_CHOSEN;
    p->info = kept_info;
    p->info.kernel_us = times[kept];
    for (int i = 0; i < count; i++) {
        spf_candidate *d = &p->info.candidates[p->info.candidate_count++];
        d->strategy = cand[i].s->id;
        d->outcome = outcome[i];
        d->estimate_us = cand[i].estimate_us;
        d->kernel_us = times[i];
        memcpy(d->detail, details[i], sizeof d->detail);
    }
    return progress_end(SPF_STAGE_CANDIDATES, SPF_OK);
fail:
    return progress_end(SPF_STAGE_CANDIDATES, status);
}

#ifdef SPF_HAVE_CUDA

/* ------------------------------------------------------- the plan cache */

/* Where a device plan is looked up and stored (plan/cache.h): dir is ""
 * when the cache is off for this plan. */
typedef struct cache_slot {
    char dir[4096];
    cache_key key;
} cache_slot;

/* The strategy of a cache entry, if this request may use it: one that
 * is cached (has a decode) and that the request allows. SPF_ERR_PARSE for
 * an entry that does not fit the request. */
static spf_status entry_strategy(const spf_plan_options *o, const cache_entry *e,
                                 const strategy **out)
{
    const strategy *s = strategy_find(e->strategy);
    if (!s || !s->decode)
        return FAIL(SPF_ERR_PARSE, "an entry of strategy %d, which is not cached", (int)e->strategy);
    if (o->strategy != SPF_STRATEGY_AUTO && o->strategy != s->id)
        return FAIL(SPF_ERR_PARSE, "a plan of strategy %s stored for a request of strategy %s",
                    s->name, spf_strategy_name(o->strategy));
    *out = s;
    return SPF_OK;
}

/* slot->dir: the cache folder of this request, left "" when the cache is
 * off for it (options, or a folder that cannot be named: logged). */
static void cache_dir_for(const spf_plan_options *o, cache_slot *slot)
{
    slot->dir[0] = 0;
    if (o->cache && cache_dir_default(slot->dir, sizeof slot->dir) != SPF_OK) {
        log_msg(SPF_LOG_WARN, "plan cache: off for this plan: %s", spf_last_error());
        error_clear();
        slot->dir[0] = 0;
    }
}

/* The entry under slot's key in its folder, if this request may use it
 * (*found = 1, *e filled, *s its strategy). An error is an entry that is
 * there but cannot be used. */
static spf_status cache_find_key(const spf_plan_options *o, const cache_slot *slot,
                                 cache_entry *e, const strategy **s, int *found)
{
    spf_status st = cache_load(slot->dir, &slot->key, e, found);
    if (st == SPF_OK && *found)
        st = entry_strategy(o, e, s);
    if (st != SPF_OK)
        *found = 0;
    return st;
}

/* The entry of this request on a device of architecture sm, as
 * cache_find_key; slot's dir is left "" when the cache is off for this
 * plan. */
static spf_status cache_find(const problem *prob, const spf_plan_options *o, int sm,
                             cache_slot *slot, cache_entry *e, const strategy **s, int *found)
{
    *found = 0;
    cache_dir_for(o, slot);
    if (!slot->dir[0])
        return SPF_OK;
    if (cache_key_make(prob->a, prob->n, o, sm, &slot->key) != SPF_OK) {
        log_msg(SPF_LOG_WARN, "plan cache: off for this plan: %s", spf_last_error());
        error_clear();
        slot->dir[0] = 0;
        return SPF_OK;
    }
    return cache_find_key(o, slot, e, s, found);
}

/* DESIGN.md decision 5: the plan of this request from the on-disk cache,
 * rebuilt by its strategy's decode with nothing searched, compiled or
 * checked (only verified plans are stored), the info of the build that
 * stored it restored; 1 on a hit. The cache can cost a miss, never a plan:
 * an entry that cannot be used is logged and rebuilt (and overwritten by
 * cache_save), and a folder that cannot be named turns it off. */
static int cache_lookup(spf_plan *p, const problem *prob, const spf_plan_options *o,
                        const strategy_env *env, cache_slot *slot)
{
    cache_entry e = {0};
    const strategy *s = NULL;
    int found = 0;
    double t0 = timing_now_s();
    spf_status st = cache_find(prob, o, env->device->cc_major * 10 + env->device->cc_minor, slot,
                               &e, &s, &found);
    if (st == SPF_OK && found)
        st = s->decode(prob, env, &e.info, e.payload, e.payload_size, &p->state);
    if (st == SPF_OK && found) {
        p->s = s;
        p->info = e.info;
    }
    if (st != SPF_OK && slot->dir[0]) {
        log_msg(SPF_LOG_WARN, "plan cache: entry not used, building the plan: %s", spf_last_error());
        plan_release_state(p);
        p->s = NULL;
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
    if (!slot->dir[0] || !o->verify || !(p->info.verify_error >= 0) || !p->s->encode)
        return;
    cache_entry e = {.strategy = p->s->id, .info = p->info};
    spf_status st = p->s->encode(p->state, &e.payload, &e.payload_size);
    if (st == SPF_OK)
        st = cache_store(slot->dir, &slot->key, &e);
    if (st != SPF_OK) {
        log_msg(SPF_LOG_WARN, "plan cache: %s not stored: %s", p->info.kernel_name,
                spf_last_error());
        error_clear();
    }
    mem_free(e.payload);
}

/* ------------------------------------------------------------ the build */

static spf_status launch_plan(void *ctx, const void *b, void *c, const float *bias, void *stream)
{
    const spf_plan *p = ctx;
    return p->s->launch(p->state, b, c, bias, stream);
}

/* The self-check's buffers are needed to verify, to tune, and to time
 * more than one candidate. */
static int needs_buffers(const spf_plan_options *o)
{
    return o->verify || o->exhaustive || o->search || o->strategy == SPF_STRATEGY_AUTO;
}

/* Build through the planner and check the kept kernel against the CPU
 * reference (DESIGN.md decision 6). */
static spf_status build_checked(spf_plan *p, const problem *prob, const spf_plan_options *o,
                                strategy_env *env)
{
    spf_status status = SPF_OK;
    selfcheck check = {0};
    double t0 = timing_now_s();
    if (needs_buffers(o)) {
        TRY(progress_begin(SPF_STAGE_REFERENCE, 1, "random B%s, the CPU reference",
                           prob->bias ? " and bias" : ""));
        TRY(progress_end(SPF_STAGE_REFERENCE,
                         selfcheck_prepare(prob, o->host_threads, &check)));
        TRY(selfcheck_set_timing(&check, o->timing == SPF_TIMING_COLD));
        env->check = &check;
    }
    double prepare_s = timing_now_s() - t0;
    TRY(build_best(p, prob, o, env));
    if (o->verify && p->info.verify_error < 0) { /* a tuner checked its pick already */
        t0 = timing_now_s();
        TRY(progress_begin(SPF_STAGE_VERIFY, 1, "%s", p->info.kernel_name));
        TRY(progress_end(SPF_STAGE_VERIFY,
                         selfcheck_measure(&check, launch_plan, p, &p->info.verify_error)));
        p->info.verify_s = prepare_s + (timing_now_s() - t0);
        double tolerance = dtype_tolerance(prob->dtype, prob->math);
        if (!(p->info.verify_error <= tolerance))
            FAIL_GOTO(SPF_ERR_VERIFY,
                      "%s on a %lld×%lld matrix, N = %lld: relative error %.3g against the CPU "
                      "reference, over the tolerance %.0e",
                      p->info.kernel_name, (long long)prob->m, (long long)prob->k,
                      (long long)prob->n, p->info.verify_error, tolerance);
    }
fail:
    env->check = NULL;
    selfcheck_release(&check);
    return status;
}

static spf_status create_on_device(spf_plan *p, const problem *prob, const spf_plan_options *o)
{
    spf_status status = SPF_OK;
    int previous = -1;
    cache_slot slot;
    spf_device_info dev;
    strategy_env env = {.options = o, .device = &dev, .log = &p->log};
    TRY(spf_device_query(o->device, &dev));
    if (!dev.available)
        FAIL_GOTO(SPF_ERR_NO_DEVICE,
                  "device %d: %s; SPF_STRATEGY_CPU runs the CPU reference on host buffers instead",
                  o->device, dev.reason);
    TRY(CUDA_CHECK(cudaGetDevice(&previous)));
    TRY(CUDA_CHECK(cudaSetDevice(o->device)));
    /* The driver linker works in the current context: make it exist. */
    TRY(CUDA_CHECK(cudaFree(NULL)));
    if (!cache_lookup(p, prob, o, &env, &slot)) {
        TRY(build_checked(p, prob, o, &env));
        cache_save(p, o, &slot);
    }
fail:
    if (previous >= 0 && previous != o->device)
        (void)cudaSetDevice(previous);
    return status;
}

/* The architecture of the request's device, as keys name it. */
static spf_status device_sm(const spf_plan_options *o, int *sm)
{
    spf_device_info dev;
    spf_status st = spf_device_query(o->device, &dev);
    if (st != SPF_OK)
        return st;
    if (!dev.available)
        return FAIL(SPF_ERR_NO_DEVICE, "device %d: %s", o->device, dev.reason);
    *sm = dev.cc_major * 10 + dev.cc_minor;
    return SPF_OK;
}

/* spf_plan_cache_peek on a device: the stored info of this request's
 * entry (under name's key when name is given, else the matrix's), nothing
 * decoded. An entry that cannot be used is no hit (and logged once more by
 * the spf_plan_create that rebuilds it). */
static spf_status peek_on_device(const problem *prob, const spf_matrix_name *name,
                                 const spf_plan_options *o, spf_plan_info *info,
                                 spf_strategy *id, int *found)
{
    int sm = 0;
    spf_status st = device_sm(o, &sm);
    if (st != SPF_OK)
        return st;
    cache_slot slot;
    cache_entry e = {0};
    const strategy *s = NULL;
    if (!name) {
        st = cache_find(prob, o, sm, &slot, &e, &s, found);
    } else {
        cache_dir_for(o, &slot);
        if (slot.dir[0])
            st = cache_key_make_named(name, prob->n, o, sm, &slot.key);
        if (st == SPF_OK && slot.dir[0])
            st = cache_find_key(o, &slot, &e, &s, found);
    }
    if (st != SPF_OK)
        log_msg(SPF_LOG_INFO, "plan cache: entry not usable: %s", spf_last_error());
    if (*found) {
        *info = e.info;
        *id = s->id;
    }
    cache_entry_release(&e);
    error_clear();
    return SPF_OK;
}

/* spf_plan_cache_note on a device: the request's entry, found under the
 * matrix's key, copied under name's without its payload. A failure to
 * store is logged and notes nothing, as a plan the cache cannot hold. */
static spf_status note_on_device(const problem *prob, const spf_matrix_name *name,
                                 const spf_plan_options *o, int *noted)
{
    int sm = 0, found = 0;
    spf_status st = device_sm(o, &sm);
    if (st != SPF_OK)
        return st;
    cache_slot slot;
    cache_entry e = {0};
    const strategy *s = NULL;
    if (cache_find(prob, o, sm, &slot, &e, &s, &found) != SPF_OK)
        log_msg(SPF_LOG_INFO, "plan cache: entry not usable: %s", spf_last_error());
    if (found) {
        cache_key key;
        cache_entry copy = {.strategy = e.strategy, .info = e.info};
        st = cache_key_make_named(name, prob->n, o, sm, &key);
        if (st == SPF_OK)
            st = cache_store(slot.dir, &key, &copy);
        if (st != SPF_OK)
            log_msg(SPF_LOG_WARN, "plan cache: %s not noted under its name: %s",
                    e.info.kernel_name, spf_last_error());
        *noted = st == SPF_OK;
    }
    cache_entry_release(&e);
    error_clear();
    return SPF_OK;
}

static spf_status device_current(const spf_plan *p)
{
    int current;
    spf_status st = CUDA_CHECK(cudaGetDevice(&current));
    if (st == SPF_OK && current != p->device)
        return FAIL(SPF_ERR_INVALID_ARGUMENT,
                    "the plan was built on device %d but device %d is current", p->device, current);
    return st;
}

#else /* !SPF_HAVE_CUDA */

static spf_status create_on_device(spf_plan *p, const problem *prob, const spf_plan_options *o)
{
    (void)p, (void)prob;
    return FAIL(SPF_ERR_NO_DEVICE,
                "device %d: spforge was built without CUDA; SPF_STRATEGY_CPU runs the CPU "
                "reference on host buffers instead",
                o->device);
}

static spf_status peek_on_device(const problem *prob, const spf_matrix_name *name,
                                 const spf_plan_options *o, spf_plan_info *info,
                                 spf_strategy *id, int *found)
{
    (void)prob, (void)name, (void)info, (void)id, (void)found;
    return create_on_device(NULL, NULL, o);
}

static spf_status note_on_device(const problem *prob, const spf_matrix_name *name,
                                 const spf_plan_options *o, int *noted)
{
    (void)prob, (void)name, (void)noted;
    return create_on_device(NULL, NULL, o);
}

static spf_status device_current(const spf_plan *p)
{
    (void)p;
    return FAIL(SPF_ERR_NO_DEVICE, "built without CUDA");
}

#endif

/* -------------------------------------------------------------- the API */

/* What a plan's info says of the problem it was made for, and its wall
 * time since t0 (the stored info of a cache entry lacks these). */
static void info_complete(spf_plan_info *info, spf_strategy id, const problem *prob,
                          double t0)
{
    info->size = sizeof *info;
    info->strategy = id;
    info->dtype = prob->dtype;
    info->math = prob->math;
    info->b_layout = prob->b_layout;
    info->c_layout = prob->c_layout;
    info->plan_s = timing_now_s() - t0;
}

/* The caller's *out says a size that some spf_plan_info has. */
static spf_status info_size_check(const spf_plan_info *out)
{
    if (out->size < INFO_FIRST_SIZE || out->size > GROWABLE_MAX)
        return FAIL(SPF_ERR_INVALID_ARGUMENT,
                    "info.size = %u: not the size of any spf_plan_info (this library's is %zu): "
                    "set info.size = sizeof(spf_plan_info) first",
                    out->size, sizeof *out);
    return SPF_OK;
}

/* Copy info into the caller's *out, as much as its size says it holds
 * (checked): a later header's fields past ours are left as they were. */
static void info_copy_out(const spf_plan_info *info, spf_plan_info *out)
{
    uint32_t size = out->size;
    memcpy(out, info, size < sizeof *out ? size : sizeof *out);
    out->size = size;
}

spf_status spf_plan_create(const spf_matrix *a, int64_t n, const spf_plan_options *options,
                           spf_plan **out)
{
    spf_status status = SPF_OK;
    spf_plan *p = NULL;
    spf_plan_options o;
    progress reporter;
    int entered = 0;
    error_clear();
    double t0 = timing_now_s();
    CHECK_ARG(out != NULL);
    *out = NULL;
    CHECK_ARG(a != NULL);
    TRY(plan_options_read(options, &o));
    TRY(check_options(n, &o));
    entered = 1;

    /* From here on the caller's callback hears of the progress (and it is
     * this thread's: core/progress.h); progress_leave has the last word. */
    char what[160];
    snprintf(what, sizeof what, "%lldx%lld, %lld nonzeros, N = %lld, %s, %s",
             (long long)a->rows, (long long)a->cols, (long long)a->nnz, (long long)n,
             dtype_name(o.dtype), spf_strategy_name(o.strategy));
    TRY(progress_enter(&reporter, o.progress, o.progress_user, what));
    p = mem_calloc(1, sizeof *p);
    if (!p)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "a plan");
    problem prob = problem_make(a, n, &o);
    p->device = o.device;
    p->info.verify_error = -1.0;
    const strategy *forced = strategy_find(o.strategy);
    if (forced && !forced->on_device) {
        strategy_env env = {.options = &o};
        TRY(build_best(p, &prob, &o, &env));
    } else {
        TRY(create_on_device(p, &prob, &o));
    }
    p->shape = prob;
    p->shape.a = NULL;
    info_complete(&p->info, p->s->id, &prob, t0);
fail:
    if (entered)
        status = progress_leave(&reporter, status); /* a cancellation wins */
    if (status == SPF_OK)
        *out = p;
    else
        spf_plan_free(p);
    return status;
}

/* Every strategy (the CPU reference included) reads B and bias while it
 * writes C (core/overlap.h). */
static spf_status check_disjoint(const spf_plan *p, const void *b, const void *c, const float *bias)
{
    const problem *s = &p->shape;
    uint64_t es = dtype_size(s->dtype); /* m, k, n < 2^31: the sizes below fit */
    return output_disjoint("spf_plan_execute", c, (uint64_t)(s->m * s->n) * es, b,
                           (uint64_t)(s->k * s->n) * es, bias, (uint64_t)s->m * sizeof *bias);
}

spf_status spf_plan_execute(const spf_plan *plan, const void *b, void *c, const float *bias,
                            void *stream)
{
    error_clear();
    CHECK_ARG(plan != NULL);
    CHECK_ARG(b != NULL && c != NULL);
    if (plan->shape.bias && !bias)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "the plan adds a bias: bias must not be NULL");
    if (!plan->shape.bias && bias)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "the plan was made without bias: pass NULL");
    spf_status st = check_disjoint(plan, b, c, bias);
    if (st == SPF_OK && plan->s->on_device)
        st = device_current(plan);
    if (st != SPF_OK)
        return st;
    return plan->s->launch(plan->state, b, c, bias, stream);
}

spf_status spf_plan_get_info(const spf_plan *plan, spf_plan_info *out)
{
    error_clear();
    CHECK_ARG(plan != NULL && out != NULL);
    spf_status st = info_size_check(out);
    if (st == SPF_OK)
        info_copy_out(&plan->info, out);
    return st;
}

/* A name's fields: a shape and nnz any matrix could have. */
static spf_status name_check(const spf_matrix_name *name)
{
    if (name->size < sizeof *name || name->size > GROWABLE_MAX)
        return FAIL(SPF_ERR_INVALID_ARGUMENT,
                    "name.size = %u: not the size of any spf_matrix_name (this library's is %zu): "
                    "set name.size = sizeof(spf_matrix_name) first",
                    name->size, sizeof *name);
    if (name->rows < 0 || name->cols < 0 || name->rows > INT32_MAX || name->cols > INT32_MAX ||
        name->nnz < 0 || (double)name->nnz > (double)name->rows * (double)name->cols)
        return FAIL(SPF_ERR_INVALID_ARGUMENT,
                    "name of a %lld×%lld matrix with %lld entries: no matrix has that shape",
                    (long long)name->rows, (long long)name->cols, (long long)name->nnz);
    return SPF_OK;
}

/* The checks spf_plan_cache_peek, _peek_named and _note share: the
 * options read into *o and n checked. *cached 0 for a host strategy,
 * which is never cached. */
static spf_status cache_request(int64_t n, const spf_plan_options *options, spf_plan_options *o,
                                int *cached)
{
    spf_status st = plan_options_read(options, o);
    if (st == SPF_OK)
        st = check_options(n, o);
    const strategy *forced = st == SPF_OK ? strategy_find(o->strategy) : NULL;
    *cached = st == SPF_OK && !(forced && !forced->on_device);
    return st;
}

/* What spf_plan_cache_peek (name NULL) and _peek_named (a NULL) share
 * once their pointers are checked. */
static spf_status peek(const spf_matrix *a, const spf_matrix_name *name, int64_t n,
                       const spf_plan_options *options, double t0, spf_plan_info *out,
                       int *found)
{
    spf_plan_options o;
    int cached = 0;
    spf_status st = info_size_check(out);
    if (st == SPF_OK && name)
        st = name_check(name);
    if (st == SPF_OK)
        st = cache_request(n, options, &o, &cached);
    if (st != SPF_OK || !cached)
        return st;
    problem prob = a ? problem_make(a, n, &o) : problem_make_shape(name->rows, name->cols, n, &o);
    spf_plan_info info;
    spf_strategy id = SPF_STRATEGY_AUTO;
    st = peek_on_device(&prob, name, &o, &info, &id, found);
    if (st == SPF_OK && *found) {
        info_complete(&info, id, &prob, t0);
        info.from_cache = 1;
        info.load_s = info.plan_s;
        info_copy_out(&info, out);
    }
    return st;
}

spf_status spf_plan_cache_peek(const spf_matrix *a, int64_t n, const spf_plan_options *options,
                               spf_plan_info *out, int *found)
{
    error_clear();
    double t0 = timing_now_s();
    CHECK_ARG(found != NULL);
    *found = 0;
    CHECK_ARG(a != NULL && out != NULL);
    return peek(a, NULL, n, options, t0, out, found);
}

spf_status spf_plan_cache_peek_named(const spf_matrix_name *name, int64_t n,
                                     const spf_plan_options *options, spf_plan_info *out,
                                     int *found)
{
    error_clear();
    double t0 = timing_now_s();
    CHECK_ARG(found != NULL);
    *found = 0;
    CHECK_ARG(name != NULL && out != NULL);
    return peek(NULL, name, n, options, t0, out, found);
}

spf_status spf_plan_cache_note(const spf_matrix *a, const spf_matrix_name *name, int64_t n,
                               const spf_plan_options *options, int *noted)
{
    spf_plan_options o;
    int cached = 0;
    error_clear();
    CHECK_ARG(noted != NULL);
    *noted = 0;
    CHECK_ARG(a != NULL && name != NULL);
    spf_status st = name_check(name);
    if (st == SPF_OK && (name->rows != a->rows || name->cols != a->cols || name->nnz != a->nnz))
        st = FAIL(SPF_ERR_INVALID_ARGUMENT,
                  "a name of a %lld×%lld matrix with %lld entries for a %lld×%lld matrix with "
                  "%lld", (long long)name->rows, (long long)name->cols, (long long)name->nnz,
                  (long long)a->rows, (long long)a->cols, (long long)a->nnz);
    if (st == SPF_OK)
        st = cache_request(n, options, &o, &cached);
    if (st != SPF_OK || !cached)
        return st;
    problem prob = problem_make(a, n, &o);
    return note_on_device(&prob, name, &o, noted);
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
    plan_release_state(plan);
    tune_log_free(&plan->log);
    mem_free(plan);
}
