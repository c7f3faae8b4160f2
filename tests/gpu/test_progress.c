/* Progress of device plans (spf_plan_options.progress): the stages only a
 * GPU runs. An AUTO plan sends REFERENCE, CANDIDATES with a BUILD and a
 * TIME per strategy built, the unrolled strategy's COMPILE inside its
 * BUILD, and VERIFY; the low-cost search sends CONSTRAINTS, RANK, PROXIES
 * and FINAL, each compiling inside; every sequence keeps the contract
 * (tests/progress_events.h). A cancellation at each of those stages
 * returns SPF_ERR_CANCELLED with no plan, leaves the device memory as it
 * was, and the next plan builds. (The host-side stages, and the CPU plan,
 * are tests/unit/test_progress.c's.) */
#define _POSIX_C_SOURCE 200809L

#include "progress_events.h"
#include "test_util.h"

#include <stdlib.h>

#ifndef SPF_HAVE_CUDA
int main(int argc, char **argv) { SKIP("no CUDA device: built without CUDA"); }
#else

static recorder rec;

static spf_plan_options auto_options(void)
{
    spf_plan_options o;
    spf_plan_options_init(&o);
    o.progress = recorder_fn;
    o.progress_user = &rec;
    return o;
}

static spf_plan_options search_options(void)
{
    spf_plan_options o = auto_options();
    o.strategy = SPF_STRATEGY_UNROLLED;
    o.search = 1;
    o.search_top_k = 4;
    o.tune_space = SPF_TUNE_SPACE_COMPACT;
    return o;
}

/* Index of the first event of stage in phase at or after from, or -1. */
static int find_from(int from, spf_stage stage, spf_progress_phase phase)
{
    for (int i = from < 0 ? 0 : from; i < rec.count; i++)
        if (rec.ev[i].stage == stage && rec.ev[i].phase == phase)
            return i;
    return -1;
}

/* stage's END comes after its BEGIN, at the depth asked, and succeeded. */
static void check_stage(const char *label, spf_stage stage, int depth)
{
    int begin = find_from(0, stage, SPF_PROGRESS_BEGIN);
    int end = find_from(begin, stage, SPF_PROGRESS_END);
    CHECK_MSG(begin > 0 && end > begin && rec.ev[begin].depth == depth &&
                  rec.ev[end].status == SPF_OK,
              "%s: %s begins at %d (depth %d, want %d), ends at %d", label,
              spf_stage_name(stage), begin, begin > 0 ? rec.ev[begin].depth : -1, depth, end);
}

static size_t free_device_bytes(void)
{
    size_t free_b = 0, total = 0;
    CUDA_OK(cudaMemGetInfo(&free_b, &total));
    return free_b;
}

static void test_auto(const spf_matrix *a)
{
    recorder_init(&rec);
    spf_plan_options o = auto_options();
    spf_plan *p = NULL;
    CHECK_OK(spf_plan_create(a, 64, &o, &p));
    recorder_check(&rec, SPF_OK, "auto");
    check_stage("auto", SPF_STAGE_REFERENCE, 1);
    check_stage("auto", SPF_STAGE_CANDIDATES, 1);
    check_stage("auto", SPF_STAGE_BUILD, 2);
    check_stage("auto", SPF_STAGE_TIME, 2);
    check_stage("auto", SPF_STAGE_VERIFY, 1);
    int unrolled = -1;
    for (int i = 0; i < rec.count; i++)
        if (rec.ev[i].stage == SPF_STAGE_BUILD && rec.ev[i].phase == SPF_PROGRESS_BEGIN &&
            strcmp(rec.ev[i].text, "unrolled") == 0)
            unrolled = i;
    int compile = find_from(unrolled, SPF_STAGE_COMPILE, SPF_PROGRESS_BEGIN);
    CHECK_MSG(unrolled < 0 || (compile > unrolled && rec.ev[compile].depth == 3),
              "the unrolled BUILD at %d, its COMPILE at %d", unrolled, compile);
    printf("auto: %d events; unrolled %s\n", rec.count, unrolled < 0 ? "not built" : "built");
    spf_plan_free(p);
}

static void test_search(const spf_matrix *a)
{
    recorder_init(&rec);
    spf_plan_options o = search_options();
    spf_plan *p = NULL;
    CHECK_OK(spf_plan_create(a, 64, &o, &p));
    recorder_check(&rec, SPF_OK, "search");
    check_stage("search", SPF_STAGE_CONSTRAINTS, 3);
    check_stage("search", SPF_STAGE_RANK, 3);
    check_stage("search", SPF_STAGE_PROXIES, 3);
    check_stage("search", SPF_STAGE_FINAL, 3);
    int proxies = find_from(0, SPF_STAGE_PROXIES, SPF_PROGRESS_BEGIN);
    int final = find_from(0, SPF_STAGE_FINAL, SPF_PROGRESS_BEGIN);
    CHECK(proxies > 0 && rec.ev[proxies].total == 4);
    CHECK(find_from(proxies, SPF_STAGE_COMPILE, SPF_PROGRESS_BEGIN) > proxies);
    CHECK(find_from(final, SPF_STAGE_COMPILE, SPF_PROGRESS_BEGIN) > final);
    printf("search: %d events over %.2f s\n", rec.count, rec.ev[rec.count - 1].elapsed_s);
    spf_plan_free(p);
}

/* A cancellation at the BEGIN (or the first STEP) of each stage. */
static void test_cancel(const spf_matrix *a)
{
    static const struct {
        spf_stage stage;
        spf_progress_phase phase;
        int search;
    } at[] = {{SPF_STAGE_REFERENCE, SPF_PROGRESS_BEGIN, 0}, {SPF_STAGE_BUILD, SPF_PROGRESS_BEGIN, 0},
              {SPF_STAGE_TIME, SPF_PROGRESS_BEGIN, 0},      {SPF_STAGE_COMPILE, SPF_PROGRESS_BEGIN, 0},
              {SPF_STAGE_VERIFY, SPF_PROGRESS_BEGIN, 0},    {SPF_STAGE_CONSTRAINTS, SPF_PROGRESS_END, 1},
              {SPF_STAGE_PROXIES, SPF_PROGRESS_BEGIN, 1},   {SPF_STAGE_COMPILE, SPF_PROGRESS_STEP, 1},
              {SPF_STAGE_FINAL, SPF_PROGRESS_BEGIN, 1}};
    size_t before = free_device_bytes();
    for (size_t t = 0; t < sizeof at / sizeof at[0]; t++) {
        recorder_init(&rec);
        rec.cancel_stage = at[t].stage;
        rec.cancel_phase = at[t].phase;
        spf_plan_options o = at[t].search ? search_options() : auto_options();
        spf_plan *p = (spf_plan *)1;
        spf_status st = spf_plan_create(a, 64, &o, &p);
        char label[96];
        snprintf(label, sizeof label, "%s: cancel at %s (phase %d)", at[t].search ? "search" : "auto",
                 spf_stage_name(at[t].stage), (int)at[t].phase);
        if (rec.cancelled_at < 0) { /* a STEP needs 0.1 s of it; AUTO may build no unrolled */
            printf("%s: never reached\n", label);
            CHECK_MSG(st == SPF_OK, "%s: %s", label, spf_status_string(st));
            spf_plan_free(p);
            continue;
        }
        CHECK_MSG(st == SPF_ERR_CANCELLED && p == NULL, "%s: %s: %s", label,
                  spf_status_string(st), spf_last_error());
        recorder_check(&rec, SPF_ERR_CANCELLED, label);
        printf("%s: stopped %.3f s after\n", label,
               rec.ev[rec.count - 1].elapsed_s - rec.ev[rec.cancelled_at].elapsed_s);
    }
    size_t after = free_device_bytes();
    /* the context's own pools may move a little; a leaked plan holds MBs */
    CHECK_MSG(after + (8u << 20) >= before, "device memory: %zu bytes free before, %zu after",
              before, after);
    recorder_init(&rec);
    spf_plan_options o = auto_options();
    spf_plan *p = NULL;
    CHECK_OK(spf_plan_create(a, 64, &o, &p));
    spf_plan_free(p);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    setenv("SPFORGE_CACHE_DIR", "off", 1); /* every plan is built */
    spf_device_info dev;
    if (spf_device_query(0, &dev) != SPF_OK || !dev.available)
        SKIP("no CUDA device: %s", dev.reason);
    spf_matrix *a = gen_matrix(SPF_GEN_UNIFORM, 512, 512, 0.9, 21);
    test_auto(a);
    test_search(a);
    test_cancel(a);
    spf_matrix_free(a);
    return check_report();
}

#endif /* SPF_HAVE_CUDA */
