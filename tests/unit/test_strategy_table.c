/* The strategy table's invariants (src/strategy/strategy.h) and the
 * planner over it (src/plan/planner.h), without a GPU: every row named
 * once and found by its name, every function a plan calls present, a
 * refusal always with a reason, estimates positive and growing with the
 * work; the planner's candidates for a forced strategy and for AUTO on a
 * described (not present) device, supported ones first by estimate, the
 * floor always built. The GPU side (every strategy × dtype × layout
 * against the reference, each cache entry's round trip) is
 * tests/gpu/test_strategies.c and tests/gpu/test_plan_cache.c. */
#include "test_util.h"

#include "plan/calibration.h"
#include "plan/planner.h"
#include "plan/problem.h"
#include "strategy/strategy.h"

static void test_rows(void)
{
    int device_rows = 0; /* AUTO's candidates: they must fit the info's list */
    for (int i = 0; i < strategy_count; i++)
        device_rows += strategy_table[i]->on_device;
    CHECK(strategy_count >= 3 && device_rows <= SPF_MAX_CANDIDATES);
    for (int i = 0; i < strategy_count; i++) {
        const strategy *s = strategy_table[i];
        CHECK_MSG(s->name && s->name[0] && strcmp(s->name, "?") != 0, "row %d has no name", i);
        CHECK_MSG(s->id != SPF_STRATEGY_AUTO, "%s: AUTO is not a row", s->name);
        CHECK_MSG(strategy_find(s->id) == s, "%s: strategy_find", s->name);
        CHECK_MSG(strcmp(spf_strategy_name(s->id), s->name) == 0, "%s: spf_strategy_name", s->name);
        spf_strategy back = SPF_STRATEGY_AUTO;
        CHECK_OK(spf_strategy_from_name(s->name, &back));
        CHECK(back == s->id);
        CHECK_MSG(s->supports && s->estimate_us && s->build && s->launch && s->release,
                  "%s: a missing function", s->name);
        CHECK_MSG((s->encode == NULL) == (s->decode == NULL), "%s: encode without decode",
                  s->name);
        for (int j = 0; j < i; j++)
            CHECK_MSG(strategy_table[j]->id != s->id && strcmp(strategy_table[j]->name, s->name),
                      "%s: listed twice", s->name);
    }
    spf_strategy out;
    CHECK_STATUS(spf_strategy_from_name("fastest", &out), SPF_ERR_INVALID_ARGUMENT);
    CHECK_DETAIL("auto, unrolled, generic");
    CHECK_OK(spf_strategy_from_name("auto", &out));
    CHECK(out == SPF_STRATEGY_AUTO && strcmp(spf_strategy_name(SPF_STRATEGY_AUTO), "auto") == 0);
    CHECK(strcmp(spf_strategy_name((spf_strategy)99), "?") == 0);
    CHECK(strategy_find((spf_strategy)99) == NULL && strategy_find(SPF_STRATEGY_AUTO) == NULL);
}

/* The other name lists of the public header. */
static void test_names(void)
{
    spf_dtype d;
    spf_math m;
    spf_layout l;
    CHECK_OK(spf_dtype_from_name("bfloat16", &d));
    CHECK(d == SPF_DTYPE_BF16 && strcmp(spf_dtype_name(d), "bf16") == 0);
    CHECK_OK(spf_math_from_name("tf32", &m));
    CHECK(m == SPF_MATH_TF32 && strcmp(spf_math_name(SPF_MATH_F16X2), "f16x2") == 0);
    CHECK_OK(spf_layout_from_name("nk", &l));
    CHECK(l == SPF_LAYOUT_N_FIRST && strcmp(spf_layout_name(l), "n_first") == 0);
    CHECK_STATUS(spf_math_from_name("fast", &m), SPF_ERR_INVALID_ARGUMENT);
    CHECK_DETAIL("default, tf32, f16x2");
    CHECK_STATUS(spf_layout_from_name(NULL, &l), SPF_ERR_INVALID_ARGUMENT);
}

/* An H100 as spf_device_query would describe it. */
static spf_device_info h100(void)
{
    spf_device_info d = {.available = 1, .cc_major = 9, .cc_minor = 0, .sm_count = 132,
                         .max_threads_per_sm = 2048, .total_memory = (int64_t)80 << 30};
    snprintf(d.name, sizeof d.name, "NVIDIA H100 80GB HBM3 (described)");
    return d;
}

static void test_refusals_and_estimates(void)
{
    spf_matrix *a = gen_matrix(SPF_GEN_UNIFORM, 300, 200, 0.9, 3);
    spf_plan_options o;
    spf_plan_options_init(&o);
    spf_device_info none = {.available = 0};
    snprintf(none.reason, sizeof none.reason, "no CUDA driver");
    spf_device_info dev = h100();
    for (int i = 0; i < strategy_count; i++) {
        const strategy *s = strategy_table[i];
        problem p = problem_make(a, 64, &o);
        char reason[160] = "";
        int yes = s->supports(&p, s->on_device ? &none : NULL, &o, reason, sizeof reason);
        CHECK_MSG(s->on_device ? !yes : yes, "%s: supports() without a device said %d", s->name,
                  yes);
        CHECK_MSG(yes || reason[0], "%s: refused without a reason", s->name);
        problem big = problem_make(a, 4096, &o);
        double e64 = s->estimate_us(&p, &dev), e4096 = s->estimate_us(&big, &dev);
        CHECK_MSG(e64 > 0 && e4096 > e64, "%s: estimates %g us at N = 64, %g us at N = 4096",
                  s->name, e64, e4096);
        /* an f16x2 problem of odd N, or B as N×K: whoever refuses says why */
        o.dtype = SPF_DTYPE_F16, o.math = SPF_MATH_F16X2, o.b_layout = SPF_LAYOUT_N_FIRST;
        problem odd = problem_make(a, 49, &o);
        reason[0] = 0;
        yes = s->supports(&odd, &dev, &o, reason, sizeof reason);
        CHECK_MSG(yes || reason[0], "%s: refused f16x2 at N = 49 without a reason", s->name);
        spf_plan_options_init(&o);
    }
    spf_matrix_free(a);
}

static void test_planner(void)
{
    spf_matrix *a = gen_matrix(SPF_GEN_UNIFORM, 300, 200, 0.9, 4);
    spf_plan_options o;
    spf_plan_options_init(&o);
    spf_device_info dev = h100();
    planner_candidate c[SPF_MAX_CANDIDATES];

    /* a forced strategy is the one candidate */
    o.strategy = SPF_STRATEGY_CPU;
    problem p = problem_make(a, 64, &o);
    int count = planner_rank(&p, NULL, &o, c);
    CHECK(count == 1 && c[0].s->id == SPF_STRATEGY_CPU && c[0].supported && c[0].build);

    /* AUTO: the device rows only; supported ones first, by estimate; the
     * refused ones with their reasons; every floor row that is supported
     * built. Whether a row supports the problem here depends on the build
     * (CUDA or not), which the invariants below do not. */
    o.strategy = SPF_STRATEGY_AUTO;
    count = planner_rank(&p, &dev, &o, c);
    int device_rows = 0, others = 0;
    for (int i = 0; i < strategy_count; i++)
        device_rows += strategy_table[i]->on_device;
    CHECK(count == device_rows);
    for (int i = 0; i < count; i++) {
        CHECK_MSG(c[i].s->on_device, "%s listed under AUTO", c[i].s->name);
        CHECK_MSG(c[i].supported || c[i].reason[0], "%s: refused without a reason", c[i].s->name);
        CHECK_MSG(!c[i].build || c[i].supported, "%s: built though refused", c[i].s->name);
        CHECK_MSG(!c[i].supported || !c[i].s->floor || c[i].build, "%s: a floor not built",
                  c[i].s->name);
        CHECK_MSG(c[i].build || !c[i].supported || c[i].reason[0], "%s: skipped without why",
                  c[i].s->name);
        others += c[i].build && !c[i].s->floor;
        if (i > 0) {
            CHECK_MSG(c[i - 1].supported >= c[i].supported, "refused before supported");
            if (c[i].supported)
                CHECK_MSG(c[i - 1].estimate_us <= c[i].estimate_us, "not by estimate");
        }
    }

    CHECK_MSG(others <= PLANNER_OTHERS_MAX, "%d candidates built besides the floors", others);

    /* B as N×K: the unrolled strategy refuses it, and says so (without
     * CUDA every device row says that first) */
    o.b_layout = SPF_LAYOUT_N_FIRST;
    p = problem_make(a, 64, &o);
    count = planner_rank(&p, &dev, &o, c);
#ifdef SPF_HAVE_CUDA
    const char *why = "K×N";
#else
    const char *why = "built without CUDA";
#endif
    for (int i = 0; i < count; i++)
        if (c[i].s->id == SPF_STRATEGY_UNROLLED)
            CHECK_MSG(!c[i].supported && strstr(c[i].reason, why), "unrolled: %s", c[i].reason);
    spf_matrix_free(a);
}

/* planner_build_late: a candidate left out by the estimates is built once
 * the fastest measured time shows the estimates were too hopeful (the
 * graphs of the dev set: unrolled estimated 7 us, measured 155 us, tc
 * estimated 152 us and skipped), never past the limit of candidates besides
 * the floors, never one refused, already built or a floor (always built);
 * the reason of one still left out names the measurement. */
static void test_build_late(void)
{
    planner_candidate c = {.s = strategy_find(SPF_STRATEGY_TC), .supported = 1,
                           .estimate_us = 152.0, .reach = 2.0};
    snprintf(c.reason, sizeof c.reason, "estimated 152 us, over 2x the best estimate (7.1 us)");
    CHECK(!planner_build_late(&c, 0.0, 1));           /* nothing measured yet */
    CHECK(planner_build_late(&c, 155.0, 1));          /* measured far over its estimate */
    CHECK(planner_build_late(&c, 76.0, 1));           /* 152 <= 2 x 76 */
    CHECK(!planner_build_late(&c, 155.0, PLANNER_OTHERS_MAX));
    CHECK(!planner_build_late(&c, 75.0, 1));          /* 152 > 2 x 75 */
    CHECK_MSG(strstr(c.reason, "best measured time (75.0 us)") != NULL, "reason: %s", c.reason);
    c.supported = 0;
    CHECK(!planner_build_late(&c, 155.0, 0));
    c.supported = 1, c.build = 1;
    CHECK(!planner_build_late(&c, 155.0, 0));         /* built already: not twice */
    c.build = 0, c.s = strategy_find(SPF_STRATEGY_DENSE);
    CHECK(c.s->floor && !planner_build_late(&c, 155.0, 0)); /* a floor is built up front */
}

/* planner_still_worth: a candidate chosen by the estimates is dropped once
 * a measured time beats its estimate by more than its reach (the reason
 * names both); before any measurement, and for a floor, it stays. And the
 * reach planner_rank gives: two rms of the calibration's log error, at
 * least PLANNER_REACH_MIN, PLANNER_SLACK where the fit has no row. */
static void test_still_worth(void)
{
    planner_candidate c = {.s = strategy_find(SPF_STRATEGY_TCFRAG), .supported = 1, .build = 1,
                           .estimate_us = 35.8, .reach = 1.25};
    CHECK(planner_still_worth(&c, 0.0));
    CHECK(planner_still_worth(&c, 30.0));  /* 35.8 <= 1.25 x 30 */
    CHECK(!planner_still_worth(&c, 23.4)); /* the LLM layer's dense time at N = 1 */
    CHECK_MSG(strstr(c.reason, "best measured time (23.4 us)") != NULL, "reason: %s", c.reason);
    c.s = strategy_find(SPF_STRATEGY_DENSE);
    CHECK(planner_still_worth(&c, 1.0));

    problem p = {.m = 4096, .k = 4096, .n = 1, .dtype = SPF_DTYPE_F16};
    CHECK(calibration_rms_log(strategy_find(SPF_STRATEGY_TCFRAG), &p) > 0);
    CHECK(calibration_rms_log(strategy_find(SPF_STRATEGY_CPU), &p) < 0);
}

/* The calibration (plan/calibration.h): a strategy the fit has rows for
 * gets scale · (estimate − launch) + constant, growing with the estimate;
 * one it has none for (the CPU reference) keeps its raw estimate. */
static void test_calibration(void)
{
    spf_plan_options o;
    spf_plan_options_init(&o);
    problem p = {.m = 4096, .k = 4096, .n = 16, .dtype = SPF_DTYPE_F16};
    const strategy *dense = strategy_find(SPF_STRATEGY_DENSE);
    const strategy *generic = strategy_find(SPF_STRATEGY_GENERIC);
    const strategy *cpu = strategy_find(SPF_STRATEGY_CPU);
    CHECK(calibration_us(cpu, &p, 123.0) == 123.0);
    CHECK(calibration_us(dense, &p, 30.0) < calibration_us(dense, &p, 60.0));
    CHECK(calibration_us(dense, &p, 30.0) > 0.0 && calibration_us(dense, &p, 1.0) > 0.0);
    /* the CSR kernel, measured many times its roofline at N = 16, ranks
     * behind dense with the same estimate */
    CHECK(calibration_us(generic, &p, 30.0) > calibration_us(dense, &p, 30.0));
}

/* The cusparselt row: exact 2:4 in f16 / bf16 only, M and K multiples of
 * 16, and supported exactly when strategy_available finds its library
 * (named in the refusal otherwise); strategy_available says why a device
 * row cannot run without a device, and that cpu always can. */
static void test_cusparselt(void)
{
    const strategy *s = strategy_find(SPF_STRATEGY_CUSPARSELT);
    CHECK(s != NULL && s->on_device && !s->floor);
    spf_device_info dev = h100(), none = {0};
    snprintf(none.reason, sizeof none.reason, "no GPU in this test");
    spf_plan_options o;
    spf_plan_options_init(&o);
    o.dtype = SPF_DTYPE_F16;
    spf_matrix *two_four = gen_vnm(64, 128, 1, 2, 4, 5);
    spf_matrix *uniform = gen_matrix(SPF_GEN_UNIFORM, 64, 128, 0.4, 6);
    spf_matrix *short_k = gen_vnm(64, 100, 1, 2, 4, 7);
    char reason[160] = "", why[768] = "";
    problem p = problem_make(two_four, 16, &o);
    int yes = s->supports(&p, &dev, &o, reason, sizeof reason);
#ifdef SPF_HAVE_CUDA
    int here = strategy_available(s, &dev, why, sizeof why);
    CHECK_MSG(yes == here, "2:4: supports %d, available %d (%s / %s)", yes, here, reason, why);
    CHECK_MSG(yes || (strstr(reason, "unavailable: ") && strstr(reason, "libcusparseLt")),
              "2:4 refused: %s", reason);
    const struct {
        spf_matrix *a;
        spf_dtype dtype;
        const char *says;
    } refused[] = {{uniform, SPF_DTYPE_F16, "not 2:4"},
                   {short_k, SPF_DTYPE_F16, "multiples of 16"},
                   {two_four, SPF_DTYPE_F32, "f16 and bf16 only"}};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        o.dtype = refused[i].dtype;
        p = problem_make(refused[i].a, 16, &o);
        reason[0] = 0;
        CHECK_MSG(!s->supports(&p, &dev, &o, reason, sizeof reason) &&
                      strstr(reason, refused[i].says),
                  "case %zu: %s", i, reason);
    }
#else
    CHECK_MSG(!yes && strstr(reason, "built without CUDA"), "%s", reason);
#endif
    CHECK(!strategy_available(s, &none, why, sizeof why) && strstr(why, "no GPU in this test"));
    CHECK(!strategy_available(s, NULL, why, sizeof why) && why[0]);
    CHECK(strategy_available(strategy_find(SPF_STRATEGY_CPU), NULL, why, sizeof why));
    spf_matrix_free(two_four);
    spf_matrix_free(uniform);
    spf_matrix_free(short_k);
}

int main(int argc, char **argv)
{
    test_build_late();
    test_still_worth();
    test_calibration();
    test_rows();
    test_names();
    test_refusals_and_estimates();
    test_planner();
    test_cusparselt();
    return check_report();
}
