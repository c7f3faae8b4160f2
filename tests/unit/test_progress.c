/* Progress of spf_plan_create (spf_plan_options.progress) without a GPU.
 * Through the public API, the CPU plan: its events in order and nested
 * (PLAN, CANDIDATES, BUILD), the final event, a cancellation at each event
 * returning SPF_ERR_CANCELLED with no plan and nothing leaked, the final
 * event's return ignored, a callback that calls the library (its own
 * plan, a failing call) without disturbing the plan's error detail, and
 * nothing called without a callback.
 * Through a progress scope of the test's own (core/progress.h), the GPU
 * path's stages that run on the host: the parallel loop's count, reported
 * from the calling thread, and its cancellation; the search's CPU stages
 * (REORDER, CONSTRAINTS, RANK); the exhaustive tuner's TUNE count with the
 * COMPILE of each batch's PTX (ptxas or the in-process compiler, else the
 * driver path, where nothing is assembled); a compile cancelled while its
 * units are assembled. The stages that need a device (BUILD of device
 * strategies, REFERENCE, TIME, PROXIES, FINAL, VERIFY) are
 * tests/gpu/test_progress.c's. */
#define _POSIX_C_SOURCE 200809L

#include "progress_events.h"
#include "test_util.h"

#include "core/error.h"
#include "core/parallel.h"
#include "core/progress.h"
#include "gpu/assembler.h"
#include "gpu/jit.h"
#include "strategy/unrolled/search.h"
#include "strategy/unrolled/tuner.h"
#include "strategy/unrolled/unrolled.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

static recorder rec, inner; /* large: static */

/* check.h's counting allocator, with the count atomic: the stages below
 * allocate on worker threads. */
static atomic_int live_blocks;

static void *count_alloc(size_t size, void *user)
{
    (void)user;
    void *p = malloc(size ? size : 1);
    atomic_fetch_add(&live_blocks, p != NULL);
    return p;
}

static void *count_realloc(void *ptr, size_t size, void *user)
{
    (void)user;
    void *p = realloc(ptr, size ? size : 1);
    atomic_fetch_add(&live_blocks, p != NULL && ptr == NULL);
    return p;
}

static void count_free(void *ptr, void *user)
{
    (void)user;
    atomic_fetch_sub(&live_blocks, ptr != NULL);
    free(ptr);
}

static const spf_allocator counting = {count_alloc, count_realloc, count_free, NULL};

static spf_plan_options cpu_options(recorder *r)
{
    spf_plan_options o;
    spf_plan_options_init(&o);
    o.strategy = SPF_STRATEGY_CPU;
    o.host_threads = 2;
    o.progress = r ? recorder_fn : NULL;
    o.progress_user = r;
    return o;
}

/* The CPU plan's events: PLAN > CANDIDATES > BUILD "cpu", and back. */
static void test_cpu_plan_events(const spf_matrix *a)
{
    recorder_init(&rec);
    spf_plan_options o = cpu_options(&rec);
    spf_plan *p = NULL;
    CHECK_OK(spf_plan_create(a, 8, &o, &p));
    CHECK(p != NULL);
    recorder_check(&rec, SPF_OK, "cpu plan");
    static const struct {
        spf_stage stage;
        spf_progress_phase phase;
        int depth;
    } want[] = {{SPF_STAGE_PLAN, SPF_PROGRESS_BEGIN, 0},       {SPF_STAGE_CANDIDATES, SPF_PROGRESS_BEGIN, 1},
                {SPF_STAGE_BUILD, SPF_PROGRESS_BEGIN, 2},      {SPF_STAGE_BUILD, SPF_PROGRESS_END, 2},
                {SPF_STAGE_CANDIDATES, SPF_PROGRESS_END, 1},   {SPF_STAGE_PLAN, SPF_PROGRESS_END, 0}};
    int n = 0; /* STEPs are rate-limited: compare the BEGIN and END events */
    for (int i = 0; i < rec.count; i++) {
        if (rec.ev[i].phase == SPF_PROGRESS_STEP)
            continue;
        CHECK_MSG(n < 6 && rec.ev[i].stage == want[n].stage && rec.ev[i].phase == want[n].phase &&
                      rec.ev[i].depth == want[n].depth,
                  "event %d: %s phase %d depth %d", i, spf_stage_name(rec.ev[i].stage),
                  (int)rec.ev[i].phase, rec.ev[i].depth);
        n++;
    }
    CHECK_EQ_I64(n, 6);
    int build = recorder_find(&rec, SPF_STAGE_BUILD, SPF_PROGRESS_BEGIN);
    CHECK(build > 0 && strcmp(rec.ev[build].text, "cpu") == 0);
    int cands = recorder_find(&rec, SPF_STAGE_CANDIDATES, SPF_PROGRESS_END);
    CHECK(cands > 0 && rec.ev[cands].total == 1 && rec.ev[cands].done == 1);
    CHECK(strstr(rec.ev[0].text, "37x53") != NULL && strstr(rec.ev[0].text, "N = 8"));
    CHECK(strcmp(spf_stage_name(SPF_STAGE_VERIFY), "verify") == 0 &&
          strcmp(spf_stage_name((spf_stage)99), "?") == 0);
    CHECK(strcmp(spf_status_string(SPF_ERR_CANCELLED), "cancelled") == 0);
    spf_plan_free(p);

    /* without a callback: nothing is called, the same plan comes out */
    o = cpu_options(NULL);
    o.progress_user = &rec; /* a user pointer alone does nothing */
    int before = rec.count;
    CHECK_OK(spf_plan_create(a, 8, &o, &p));
    CHECK(p != NULL && rec.count == before);
    spf_plan_free(p);
}

/* A cancellation at each event: SPF_ERR_CANCELLED, no plan, nothing
 * leaked (the counting allocator), and no event after it but PLAN's END;
 * PLAN's END returning nonzero changes nothing. */
static void test_cancel_everywhere(void)
{
    atomic_store(&live_blocks, 0);
    spf_set_allocator(&counting);
    spf_matrix *a = gen_matrix(SPF_GEN_UNIFORM, 37, 53, 0.8, 3);
    recorder_init(&rec);
    spf_plan_options o = cpu_options(&rec);
    spf_plan *p = NULL;
    CHECK_OK(spf_plan_create(a, 8, &o, &p));
    spf_plan_free(p);
    int events = rec.count;
    CHECK(events >= 6);
    for (int k = 0; k < events; k++) {
        recorder_init(&rec);
        rec.cancel_at = k;
        p = (spf_plan *)1;
        spf_status st = spf_plan_create(a, 8, &o, &p);
        char label[64];
        snprintf(label, sizeof label, "cancel at event %d", k);
        if (k == events - 1) { /* PLAN's END: its return is ignored */
            CHECK_MSG(st == SPF_OK && p != NULL, "%s: %s", label, spf_status_string(st));
            recorder_check(&rec, SPF_OK, label);
            spf_plan_free(p);
            continue;
        }
        CHECK_MSG(st == SPF_ERR_CANCELLED && p == NULL, "%s: %s, plan %p", label,
                  spf_status_string(st), (void *)p);
        CHECK_MSG(strstr(spf_last_error(), "cancelled by the progress callback"), "%s: %s",
                  label, spf_last_error());
        CHECK_MSG(rec.count == k + 2, "%s: %d events", label, rec.count);
        recorder_check(&rec, SPF_ERR_CANCELLED, label);
    }
    spf_matrix_free(a);
    CHECK_MSG(atomic_load(&live_blocks) == 0, "%d blocks leaked", atomic_load(&live_blocks));
    spf_set_allocator(NULL);
}

/* A callback that calls the library: a plan of its own (with and without
 * a callback) and a call that fails, while the outer plan fails; the
 * outer plan's detail survives, and each plan's events are its own. */
static const spf_matrix *hook_matrix;
static int hook_plans;

static void call_library(const spf_progress *e, void *user)
{
    (void)user;
    if (e->stage != SPF_STAGE_CANDIDATES)
        return;
    spf_plan_options o = cpu_options(e->phase == SPF_PROGRESS_BEGIN ? &inner : NULL);
    spf_plan *p = NULL;
    if (spf_plan_create(hook_matrix, 4, &o, &p) == SPF_OK)
        hook_plans++;
    spf_plan_free(p);
    spf_matrix_stats s;
    (void)spf_matrix_stats_compute(NULL, &s); /* fails, with a detail of its own */
}

static void test_reentrant_callback(const spf_matrix *a)
{
    hook_matrix = a;
    hook_plans = 0;
    recorder_init(&rec);
    recorder_init(&inner);
    rec.hook = call_library;
    spf_plan_options o = cpu_options(&rec);
    o.dtype = SPF_DTYPE_F16; /* the CPU strategy refuses it: the plan fails */
    spf_plan *p = NULL;
    CHECK_STATUS(spf_plan_create(a, 8, &o, &p), SPF_ERR_UNSUPPORTED);
    CHECK(p == NULL);
    CHECK_DETAIL("no strategy could be built");
    CHECK_EQ_I64(hook_plans, 2);
    recorder_check(&rec, SPF_ERR_UNSUPPORTED, "failing outer plan");
    int end = recorder_find(&rec, SPF_STAGE_CANDIDATES, SPF_PROGRESS_END);
    CHECK(end > 0 && rec.ev[end].status == SPF_ERR_UNSUPPORTED);
    recorder_check(&inner, SPF_OK, "plan inside the callback");
    CHECK(inner.count >= 6 && inner.count < 20);
}

/* ----------------------------------------- stages below spf_plan_create */

static atomic_int items_run;

static spf_status slow_items(void *ctx, int64_t begin, int64_t end, int worker)
{
    (void)ctx, (void)worker;
    for (int64_t i = begin; i < end; i++) {
        nanosleep(&(struct timespec){0, 15 * 1000 * 1000}, NULL);
        atomic_fetch_add(&items_run, 1);
    }
    return SPF_OK;
}

/* The loop's count comes from the calling thread, rate-limited; a
 * cancellation stops it with items left; without a reporter it runs all. */
static void test_parallel_loop(void)
{
    progress scope;
    recorder_init(&rec);
    CHECK_OK(progress_enter(&scope, recorder_fn, &rec, "test"));
    CHECK_OK(progress_begin(SPF_STAGE_COMPILE, 40, "40 items"));
    atomic_store(&items_run, 0);
    CHECK_OK(parallel_for_progress(SPF_STAGE_COMPILE, 40, 1, 2, slow_items, NULL));
    CHECK_EQ_I64(atomic_load(&items_run), 40);
    CHECK_OK(progress_end(SPF_STAGE_COMPILE, SPF_OK));
    CHECK_OK(progress_leave(&scope, SPF_OK));
    recorder_check(&rec, SPF_OK, "parallel loop");
    int steps = 0;
    for (int i = 0; i < rec.count; i++)
        steps += rec.ev[i].phase == SPF_PROGRESS_STEP;
    CHECK_MSG(steps >= 1 && steps <= 5, "%d STEP events over 0.3 s", steps);

    recorder_init(&rec);
    rec.cancel_stage = SPF_STAGE_COMPILE;
    rec.cancel_phase = SPF_PROGRESS_STEP;
    CHECK_OK(progress_enter(&scope, recorder_fn, &rec, "test"));
    CHECK_OK(progress_begin(SPF_STAGE_COMPILE, 40, "40 items"));
    atomic_store(&items_run, 0);
    CHECK_STATUS(parallel_for_progress(SPF_STAGE_COMPILE, 40, 1, 2, slow_items, NULL),
                 SPF_ERR_CANCELLED);
    CHECK_MSG(atomic_load(&items_run) < 30, "%d items ran after the cancellation",
              atomic_load(&items_run));
    CHECK_STATUS(progress_end(SPF_STAGE_COMPILE, SPF_OK), SPF_ERR_CANCELLED);
    CHECK_STATUS(progress_begin(SPF_STAGE_VERIFY, 1, "no more"), SPF_ERR_CANCELLED);
    CHECK_STATUS(progress_step(SPF_STAGE_COMPILE, 3), SPF_ERR_CANCELLED);
    CHECK_STATUS(progress_leave(&scope, SPF_OK), SPF_ERR_CANCELLED);
    recorder_check(&rec, SPF_ERR_CANCELLED, "cancelled loop");

    atomic_store(&items_run, 0); /* no reporter: parallel_for */
    CHECK(!progress_active());
    CHECK_OK(parallel_for_progress(SPF_STAGE_COMPILE, 8, 1, 2, slow_items, NULL));
    CHECK_EQ_I64(atomic_load(&items_run), 8);
    CHECK_OK(progress_begin(SPF_STAGE_COMPILE, 1, "no reporter"));
    CHECK_OK(progress_end(SPF_STAGE_COMPILE, SPF_OK));
}

/* The search's CPU stages, row orders first: REORDER, CONSTRAINTS, RANK,
 * each inside PLAN; a cancellation in each frees the shortlist. */
static void test_search_stages(const spf_matrix *a)
{
    search_request q = {.a = a, .n = 64, .space = SPF_TUNE_SPACE_FULL, .dtype = SPF_DTYPE_F32,
                        .reorder = 1, .top_k = 4, .proxies = 1, .sm_count = 132, .ptx_sm = 90,
                        .sass_sm = 90, .threads = 2};
    progress scope;
    search_shortlist s;
    spf_search_info info;
    recorder_init(&rec);
    CHECK_OK(progress_enter(&scope, recorder_fn, &rec, "search"));
    CHECK_OK(search_shortlist_create(&q, &s, &info));
    CHECK_OK(progress_leave(&scope, SPF_OK));
    recorder_check(&rec, SPF_OK, "search stages");
    int reorder = recorder_find(&rec, SPF_STAGE_REORDER, SPF_PROGRESS_END);
    int constraints = recorder_find(&rec, SPF_STAGE_CONSTRAINTS, SPF_PROGRESS_END);
    int rank = recorder_find(&rec, SPF_STAGE_RANK, SPF_PROGRESS_END);
    CHECK_MSG(reorder > 0 && constraints > reorder && rank > constraints,
              "ends at %d, %d, %d", reorder, constraints, rank);
    CHECK(reorder > 0 && rec.ev[reorder].total == s.orders.count && rec.ev[reorder].depth == 1);
    CHECK(constraints > 0 && rec.ev[constraints].total == info.space);
    CHECK(rank > 0 && rec.ev[rank].total == info.after_balance);
    search_shortlist_free(&s);

    const spf_stage stages[] = {SPF_STAGE_REORDER, SPF_STAGE_CONSTRAINTS, SPF_STAGE_RANK};
    for (int t = 0; t < 6; t++) {
        recorder_init(&rec);
        rec.cancel_stage = stages[t / 2];
        rec.cancel_phase = t % 2 ? SPF_PROGRESS_END : SPF_PROGRESS_BEGIN;
        atomic_store(&live_blocks, 0);
        spf_set_allocator(&counting);
        CHECK_OK(progress_enter(&scope, recorder_fn, &rec, "search"));
        spf_status st = search_shortlist_create(&q, &s, &info);
        st = progress_leave(&scope, st);
        char label[64];
        snprintf(label, sizeof label, "search cancelled at %s %s", spf_stage_name(stages[t / 2]),
                 t % 2 ? "end" : "begin");
        CHECK_MSG(st == SPF_ERR_CANCELLED && s.count == 0 && s.configs == NULL, "%s: %s", label,
                  spf_status_string(st));
        recorder_check(&rec, SPF_ERR_CANCELLED, label);
        search_shortlist_free(&s);
        spf_set_allocator(NULL);
        CHECK_MSG(atomic_load(&live_blocks) == 0, "%s: %d blocks leaked", label,
                  atomic_load(&live_blocks));
    }
}

/* The exhaustive tuner over a few configurations: TUNE counts them, each
 * batch's PTX is a COMPILE stage inside it when an assembler is there;
 * without a device nothing loads, so the tuner fails (compile error: none
 * passed) and TUNE ends with that status. A cancellation at TUNE's first
 * STEP (or at COMPILE's BEGIN) stops it with nothing leaked. */
static void test_tuner_stages(const spf_matrix *a)
{
    const spf_kernel_config configs[] = {
        {8, 64, 2, 2, 1}, {16, 64, 1, 2, 1}, {4, 32, 1, 2, 2}, {8, 64, 2, 2, 2}, {32, 64, 1, 2, 4}};
    tune_request q = {.a = a, .n = 64, .configs = configs, .config_count = 5,
                      .space = SPF_TUNE_SPACE_COMPACT, .reorder = 1, .dtype = SPF_DTYPE_F32,
                      .ptx_sm = 90, .sass_sm = 90, .threads = 2};
    assembler_choice asm_choice;
    int assembles = assembler_choose(&asm_choice) == SPF_OK &&
                    asm_choice.kind != JIT_ASSEMBLER_DRIVER;
    error_clear();
    printf("tuner: %s\n", assembles ? jit_assembler_name(asm_choice.kind) : "no assembler");
    progress scope;
    jit_module best;
    tune_log log;
    recorder_init(&rec);
    CHECK_OK(progress_enter(&scope, recorder_fn, &rec, "tune"));
    spf_status st = tuner_run(&q, &best, &log);
    CHECK_MSG(st != SPF_OK, "the tuner loaded a kernel without a device? %s",
              spf_status_string(st));
    CHECK_EQ_I64(progress_leave(&scope, st), st);
    recorder_check(&rec, st, "tuner");
    int tune = recorder_find(&rec, SPF_STAGE_TUNE, SPF_PROGRESS_END);
    CHECK_MSG(tune > 0 && rec.ev[tune].status == st && rec.ev[tune].total == 5 &&
                  rec.ev[tune].done == 5,
              "TUNE's END at %d", tune);
    int compile = recorder_find(&rec, SPF_STAGE_COMPILE, SPF_PROGRESS_END);
    CHECK_MSG(assembles ? compile > 0 && rec.ev[compile].depth == 2 &&
                              rec.ev[compile].status == SPF_OK && rec.ev[compile].total >= 5
                        : compile < 0,
              "COMPILE's END at %d (assembler: %d)", compile, assembles);
    CHECK(recorder_find(&rec, SPF_STAGE_REORDER, SPF_PROGRESS_END) > 0);
    tune_log_free(&log);
    jit_module_release(&best);

    for (int t = 0; t < 2; t++) {
        recorder_init(&rec);
        rec.cancel_stage = t == 0 ? SPF_STAGE_COMPILE : SPF_STAGE_TUNE;
        rec.cancel_phase = t == 0 ? SPF_PROGRESS_BEGIN : SPF_PROGRESS_STEP;
        if (t == 0 && !assembles)
            rec.cancel_stage = SPF_STAGE_TUNE, rec.cancel_phase = SPF_PROGRESS_BEGIN;
        atomic_store(&live_blocks, 0);
        spf_set_allocator(&counting);
        CHECK_OK(progress_enter(&scope, recorder_fn, &rec, "tune"));
        st = progress_leave(&scope, tuner_run(&q, &best, &log));
        const char *label = t == 0 ? "tuner cancelled at its first stage" : "tuner cancelled at a step";
        /* a STEP comes only if the tuner ran past 0.1 s */
        CHECK_MSG(st == SPF_ERR_CANCELLED || (t == 1 && rec.cancelled_at < 0), "%s: %s", label,
                  spf_status_string(st));
        recorder_check(&rec, st, label);
        tune_log_free(&log);
        jit_module_release(&best);
        spf_set_allocator(NULL);
        CHECK_MSG(atomic_load(&live_blocks) == 0, "%s: %d blocks leaked", label,
                  atomic_load(&live_blocks));
    }
}

/* A compile cancelled while its units are assembled: jit_compile returns
 * SPF_ERR_CANCELLED with the objects released; the units in flight finish,
 * the rest are not started. */
static void test_compile_cancelled(void)
{
    assembler_choice c;
    if (assembler_choose(&c) != SPF_OK || c.kind == JIT_ASSEMBLER_DRIVER) {
        error_clear();
        printf("NOTE: no PTX assembler: the compile's cancellation is not tested\n");
        return;
    }
    spf_matrix *a = gen_matrix(SPF_GEN_UNIFORM, 512, 256, 0.9, 7);
    spf_kernel_config cfg = {8, 64, 1, 2, 1};
    ptx_program prog = {0};
    CHECK_OK(unrolled_generate(a, NULL, 64, &cfg, SPF_DTYPE_F32, 0, 0, 0, 90, 0, &prog));
    printf("compile: %d units\n", prog.unit_count);
    const ptx_program *programs[] = {&prog};
    jit_object obj;
    progress scope;
    recorder_init(&rec);
    rec.cancel_stage = SPF_STAGE_COMPILE;
    rec.cancel_phase = SPF_PROGRESS_STEP;
    CHECK_OK(progress_enter(&scope, recorder_fn, &rec, "compile"));
    spf_status st = progress_leave(&scope, jit_compile(programs, 1, 90, 2, &obj));
    int begin = recorder_find(&rec, SPF_STAGE_COMPILE, SPF_PROGRESS_BEGIN);
    CHECK(begin > 0 && rec.ev[begin].total == prog.unit_count &&
          strcmp(rec.ev[begin].text, prog.entry) == 0);
    if (rec.cancelled_at >= 0) {
        CHECK_MSG(st == SPF_ERR_CANCELLED && obj.units == NULL && obj.unit_count == 0,
                  "cancelled compile: %s", spf_status_string(st));
        CHECK(rec.ev[rec.cancelled_at].done < prog.unit_count);
    } else {
        printf("NOTE: the compile took under 0.1 s: no STEP to cancel at\n");
        CHECK_OK(st);
    }
    recorder_check(&rec, st, "compile");
    jit_object_release(&obj);
    ptx_program_free(&prog);
    spf_matrix_free(a);
}

int main(int argc, char **argv)
{
    spf_matrix *a = gen_matrix(SPF_GEN_MAGNITUDE, 37, 53, 0.8, 11);
    spf_matrix *layer = gen_matrix(SPF_GEN_UNIFORM, 256, 128, 0.9, 5);
    test_cpu_plan_events(a);
    test_cancel_everywhere();
    test_reentrant_callback(a);
    test_parallel_loop();
    test_search_stages(layer);
    test_tuner_stages(layer);
    test_compile_cancelled();
    spf_matrix_free(a);
    spf_matrix_free(layer);
    return check_report();
}
