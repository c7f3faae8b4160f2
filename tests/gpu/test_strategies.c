/* The one correctness driver (STYLE.md 12, after ggml's test-backend-ops):
 * every strategy of the table (spf_strategy 1 up while spf_strategy_name
 * knows it, so a new strategy is covered without editing this file) ×
 * dtype × math × B layout × C layout × bias / ReLU × cases, each a plan
 * with the strategy forced, run on fresh random B and bias (other seeds
 * than the self-check's, which is off here) with C poisoned with NaN, and
 * compared, read back in its layout, with the double reference on the B
 * the kernel read (rounded to the dtype) within dtype_tolerance.
 *
 * Cases: M and K multiples of no tile (37×53, 130×257), one row (1×1000),
 * K = 3 (1000×3), empty rows and rows longer than a staged chunk (75×300),
 * 2:4 (45×100) and V64:2:8 (150×256, a last block of 22 rows) for the
 * structured strategy, also with strays (three at random in the 2:4
 * matrix, a third nonzero in a run of two rows of a V64:2:8 one: the rows
 * they break go to its CSR pass; on Hopper at N = 300 the V:2:M matrices
 * in the 2:4 format), column vectors of 8 rows shuffled (C stored
 * through the order), and a few long rows among short ones (1500×3000:
 * the generic kernel cuts them into pieces), N ∈ {1, 3, 49, 127, 300}. The unrolled strategy compiles each plan with
 * ptxas, so it runs the small cases only.
 *
 * A refusal (SPF_ERR_UNSUPPORTED) prints "<strategy>: <dtype/math/layouts>:
 * unsupported: <reason>" and is checked against the expected support below,
 * so a strategy that silently stops supporting something fails. DENSE is
 * refused only without cuBLASLt: then it is reported as skipped. AUTO runs
 * on a few cases, and its plan info must record the candidates.
 *
 * Host strategies (the table's on_device = 0: cpu) run without a GPU; the
 * rest skip visibly (exit 77) when there is no device. */
#include "test_util.h"

#include "core/dtype.h"
#include "core/matrix.h"
#include "core/rng.h"
#include "ref/spmm.h"
#include "strategy/strategy.h"
#include "strategy/structured/sp_pattern.h"
#include "strategy/tc/affinity.h"

#include <ctype.h>
#include <stdint.h>

#ifdef SPF_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

enum { MAX_STRATEGIES = 16 };

/* dtype × math pairs that apply (math_fits). */
static const struct {
    spf_dtype dtype;
    spf_math math;
} dtype_maths[] = {
    {SPF_DTYPE_F32, SPF_MATH_DEFAULT}, {SPF_DTYPE_F32, SPF_MATH_TF32},
    {SPF_DTYPE_F16, SPF_MATH_DEFAULT}, {SPF_DTYPE_F16, SPF_MATH_F16X2},
    {SPF_DTYPE_BF16, SPF_MATH_DEFAULT},
};
enum { DTYPE_MATHS = sizeof dtype_maths / sizeof dtype_maths[0] };

static const int64_t ns[] = {1, 3, 49, 127, 300};

typedef struct test_case {
    const char *label;
    spf_matrix *a;
    int small; /* cheap enough for a ptxas compile per plan */
} test_case;

/* 1: the strategy must support the combination, 0: it must refuse it, -1:
 * no expectation (a strategy this table does not know yet: only its
 * results are checked). */
static int expected_support(spf_strategy s, spf_dtype dtype, spf_math math, spf_layout bl,
                            spf_layout cl, int64_t n, double density, int structured)
{
    switch (s) {
    case SPF_STRATEGY_UNROLLED: /* f16x2 accumulates pairs of columns */
        return bl == SPF_LAYOUT_N_LAST && cl == SPF_LAYOUT_N_LAST &&
               (math != SPF_MATH_F16X2 || n % 2 == 0);
    case SPF_STRATEGY_GENERIC:
        return math != SPF_MATH_F16X2; /* fp32 accumulation only; TF32 allows, not requires */
    case SPF_STRATEGY_CPU:
        return dtype == SPF_DTYPE_F32;
    case SPF_STRATEGY_DENSE:
        return 1; /* unless cuBLASLt is absent (see dense_absent) */
    case SPF_STRATEGY_TC: /* tensor cores: f16 / bf16, f32 only under TF32 */
        return dtype == SPF_DTYPE_F32 ? math == SPF_MATH_TF32 : math == SPF_MATH_DEFAULT;
    case SPF_STRATEGY_TCFRAG: /* f16 / bf16 with fp32 accumulation (every case here is a layer,
                                 not a graph: its tiles hold nonzeros) */
        return dtype != SPF_DTYPE_F32 && math == SPF_MATH_DEFAULT;
    case SPF_STRATEGY_PANEL: /* f16 / bf16, fp32 accumulation, at most half dense */
        return dtype != SPF_DTYPE_F32 && math == SPF_MATH_DEFAULT && density <= 0.5;
    case SPF_STRATEGY_STRUCTURED: /* f16 / bf16, fp32 accumulation, a 2:4 or V:2:M matrix */
        return dtype != SPF_DTYPE_F32 && math == SPF_MATH_DEFAULT && structured;
    default:
        return -1;
    }
}

static int mentions_cublaslt(const char *s)
{
    static const char word[] = "cublaslt";
    for (; *s; s++) {
        size_t i = 0;
        while (word[i] && tolower((unsigned char)s[i]) == word[i])
            i++;
        if (!word[i])
            return 1;
    }
    return 0;
}

/* What happened to one (strategy, dtype/math, layouts) over all cases, for
 * its summary line. */
typedef struct tally {
    int runs, refused;
    double worst;
    char kernel[128]; /* a kernel name it ran */
    char reason[256]; /* its first refusal    */
} tally;

static tally tallies[MAX_STRATEGIES][DTYPE_MATHS][2][2];
static int dense_supported, dense_absent; /* cases DENSE ran / refused naming cuBLASLt */

static void describe(char *buf, size_t cap, int dm, spf_layout bl, spf_layout cl)
{
    snprintf(buf, cap, "%s/%s/B %s/C %s", spf_dtype_name(dtype_maths[dm].dtype),
             spf_math_name(dtype_maths[dm].math), spf_layout_name(bl), spf_layout_name(cl));
}

/* Execute plan p once and return C as m×n floats in c (NaN where the plan
 * wrote nothing). b_staged: B in the plan's dtype and layout, host bytes.
 * Device strategies get device copies; the byte past C must stay poisoned. */
static void execute_once(const spf_plan *p, int on_device, const void *b_staged, size_t b_bytes,
                         const float *bias, int64_t m, int64_t n, spf_dtype dtype,
                         spf_layout c_layout, float *c)
{
    size_t es = dtype_size(dtype), c_bytes = (size_t)(m * n) * es;
    unsigned char *raw = malloc(c_bytes + es);
    float *cf = malloc((size_t)(m * n + 1) * sizeof *cf);
    memset(raw, 0xff, c_bytes + es); /* 0xff bytes: NaN in every dtype */
    if (!on_device) {
        CHECK_OK(spf_plan_execute(p, b_staged, raw, bias, NULL));
    } else {
#ifdef SPF_HAVE_CUDA
        void *db = NULL, *dc = NULL;
        float *dbias = NULL;
        CUDA_OK(cudaMalloc(&db, b_bytes + 1));
        CUDA_OK(cudaMalloc(&dc, c_bytes + es));
        CUDA_OK(cudaMalloc((void **)&dbias, (size_t)(m + 1) * sizeof *dbias));
        CUDA_OK(cudaMemcpy(db, b_staged, b_bytes, cudaMemcpyHostToDevice));
        if (bias)
            CUDA_OK(cudaMemcpy(dbias, bias, (size_t)m * sizeof *bias, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemset(dc, 0xff, c_bytes + es));
        CHECK_OK(spf_plan_execute(p, db, dc, bias ? dbias : NULL, NULL));
        CUDA_OK(cudaDeviceSynchronize());
        CUDA_OK(cudaMemcpy(raw, dc, c_bytes + es, cudaMemcpyDeviceToHost));
        cudaFree(db);
        cudaFree(dc);
        cudaFree(dbias);
#else
        CHECK_MSG(0, "a device strategy ran in a build without CUDA");
#endif
    }
    int past_poisoned = 1;
    for (size_t i = 0; i < es; i++)
        past_poisoned &= raw[c_bytes + i] == 0xff;
    CHECK_MSG(past_poisoned, "wrote past the end of C");
    operand_unpack(dtype, c_layout, raw, m, n, c, cf); /* an n×m C back to m×n */
    free(raw);
    free(cf);
}

/* Fresh inputs for one run: B (k×n) and bias uniform in [-1, 1], B rounded
 * to the dtype, staged in the layout, and the double reference on the
 * rounded B. Seeds from 0x7e570000 on: the self-check draws others. */
typedef struct inputs {
    void *b_staged;
    size_t b_bytes;
    float *bias;
    double *ref;
} inputs;

static uint64_t next_seed = 0x7e570000;

static inputs inputs_make(const spf_matrix *a, int64_t n, spf_dtype dtype, spf_layout bl,
                          int with_bias, int relu, int round_a)
{
    int64_t m = spf_matrix_rows(a), k = spf_matrix_cols(a);
    size_t es = dtype_size(dtype);
    inputs in = {.b_bytes = (size_t)(k * n) * es};
    float *b = malloc((size_t)(k * n + 1) * sizeof *b);
    void *rounded = malloc(in.b_bytes + es);
    in.b_staged = malloc(in.b_bytes + es);
    in.bias = malloc((size_t)(m + 1) * sizeof *in.bias);
    in.ref = malloc((size_t)(m * n + 1) * sizeof *in.ref);
    spf_fill_uniform(b, k * n, next_seed++);
    spf_fill_uniform(in.bias, m, next_seed++);
    dtype_round(dtype, b, k * n); /* the values the kernel reads */
    operand_pack(dtype, bl, b, k, n, in.b_staged, rounded);
    spf_matrix *rounded_a = NULL;
    if (round_a) { /* the strategy keeps A in the dtype: the reference too */
        CHECK_OK(spf_matrix_clone(a, &rounded_a));
        dtype_round(dtype, rounded_a->values, rounded_a->nnz);
    }
    CHECK_OK(spf_reference_spmm_f64(rounded_a ? rounded_a : a, n, b, in.ref,
                                    with_bias ? in.bias : NULL, relu, 0));
    spf_matrix_free(rounded_a);
    free(b);
    free(rounded);
    return in;
}

static void inputs_free(inputs *in)
{
    free(in->b_staged);
    free(in->bias);
    free(in->ref);
}

/* Strategies that store A in the plan's dtype. */
static int rounds_a(spf_strategy s)
{
    return s == SPF_STRATEGY_TC || s == SPF_STRATEGY_TCFRAG || s == SPF_STRATEGY_PANEL ||
           s == SPF_STRATEGY_STRUCTURED || s == SPF_STRATEGY_CUSPARSELT || s == SPF_STRATEGY_DENSE;
}

/* Run plan p on fresh inputs; the relative error against the reference.
 * round_a: the plan's strategy stores A in the dtype (tc, tcfrag, panel,
 * structured, cusparselt, dense), so the reference multiplies A rounded to
 * it, as it does B (one output of a long
 * row with cancellation otherwise measures bf16's rounding of A, not the
 * kernel). */
static double check_plan_result(const spf_plan *p, int on_device, const spf_matrix *a, int64_t n,
                                const spf_plan_options *o, int round_a)
{
    int64_t m = spf_matrix_rows(a);
    inputs in = inputs_make(a, n, o->dtype, o->b_layout, o->bias, o->relu, round_a);
    float *c = malloc((size_t)(m * n + 1) * sizeof *c);
    execute_once(p, on_device, in.b_staged, in.b_bytes, o->bias ? in.bias : NULL, m, n, o->dtype,
                 o->c_layout, c);
    /* the bias's norm beside the reference's, as the library's self-check
     * weighs it (ref/spmm.h: a 16-bit C is rounded before its bias is added) */
    double err = relative_error_biased(c, in.ref, m * n,
                                       ref_bias_norm(o->bias ? in.bias : NULL, NULL, m, n));
    free(c);
    inputs_free(&in);
    return err;
}

static void run_one(spf_strategy s, int on_device, const test_case *tc, int64_t n, int dm,
                    spf_layout bl, spf_layout cl, int variant)
{
    spf_plan_options o;
    spf_plan_options_init(&o);
    o.strategy = s;
    o.dtype = dtype_maths[dm].dtype;
    o.math = dtype_maths[dm].math;
    o.b_layout = bl;
    o.c_layout = cl;
    o.bias = variant & 1;
    o.relu = (variant >> 1) & 1;
    o.verify = 0; /* this driver is the check */
    o.cache = 0;
    char what[96];
    describe(what, sizeof what, dm, bl, cl);
    tally *t = &tallies[s][dm][bl][cl];
    double density = (double)spf_matrix_nnz(tc->a) /
                     ((double)spf_matrix_rows(tc->a) * (double)spf_matrix_cols(tc->a));
    sp_pattern pattern;
    char why[256];
    int structured = sp_pattern_detect(tc->a, &pattern, why, sizeof why);
    int expect = expected_support(s, o.dtype, o.math, bl, cl, n, density, structured);

    spf_plan *p = NULL;
    spf_status st = spf_plan_create(tc->a, n, &o, &p);
    if (st == SPF_ERR_UNSUPPORTED) {
        const char *reason = spf_last_error();
        CHECK_MSG(reason[0] != '\0', "%s: %s: refused without a reason", spf_strategy_name(s),
                  what);
        if (t->refused++ == 0) {
            snprintf(t->reason, sizeof t->reason, "%s", reason);
            printf("%s: %s: unsupported: %s\n", spf_strategy_name(s), what, reason);
        }
        if (s == SPF_STRATEGY_DENSE && mentions_cublaslt(reason))
            dense_absent++;
        else
            CHECK_MSG(expect != 1, "%s: %s: %s N=%lld: refused but expected to run (%s)",
                      spf_strategy_name(s), what, tc->label, (long long)n, reason);
        return;
    }
    CHECK_MSG(st == SPF_OK, "%s: %s: %s N=%lld: %s (%s)", spf_strategy_name(s), what, tc->label,
              (long long)n, spf_status_string(st), spf_last_error());
    if (st != SPF_OK)
        return;
    CHECK_MSG(expect != 0, "%s: %s: runs but is expected to refuse (update the table?)",
              spf_strategy_name(s), what);
    if (s == SPF_STRATEGY_DENSE)
        dense_supported++;
    spf_plan_info info = {.size = sizeof info};
    CHECK_OK(spf_plan_get_info(p, &info));
    CHECK_MSG(info.strategy == s && info.dtype == o.dtype && info.math == o.math &&
                  info.b_layout == bl && info.c_layout == cl,
              "%s: %s: the plan info records strategy %d, %s/%s/%s/%s", spf_strategy_name(s),
              what, (int)info.strategy, spf_dtype_name(info.dtype), spf_math_name(info.math),
              spf_layout_name(info.b_layout), spf_layout_name(info.c_layout));
    double err = check_plan_result(p, on_device, tc->a, n, &o, rounds_a(s));
    double tol = dtype_tolerance(o.dtype, o.math);
    CHECK_MSG(err <= tol, "%s: %s: %s N=%lld bias=%d relu=%d (%s): relative error %.3g > %g",
              spf_strategy_name(s), what, tc->label, (long long)n, o.bias, o.relu,
              info.kernel_name, err, tol);
    t->runs++;
    if (!(err <= t->worst))
        t->worst = err;
    snprintf(t->kernel, sizeof t->kernel, "%s", info.kernel_name);
    spf_plan_free(p);
}

static void run_strategy(spf_strategy s, const test_case *cases, int case_count)
{
    const strategy *row = strategy_find(s);
    CHECK_MSG(row != NULL, "strategy %d (%s) has no row in the table", (int)s,
              spf_strategy_name(s));
    if (!row)
        return;
    int variant = 0;
    for (int ci = 0; ci < case_count; ci++) {
        if (s == SPF_STRATEGY_UNROLLED && !cases[ci].small)
            continue;
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
            for (int dm = 0; dm < DTYPE_MATHS; dm++)
                for (int bl = SPF_LAYOUT_N_LAST; bl <= SPF_LAYOUT_N_FIRST; bl++)
                    for (int cl = SPF_LAYOUT_N_LAST; cl <= SPF_LAYOUT_N_FIRST; cl++)
                        /* bias and ReLU cycle through their four combinations */
                        run_one(s, row->on_device, &cases[ci], ns[ni], dm, (spf_layout)bl,
                                (spf_layout)cl, variant++ & 3);
    }
    for (int dm = 0; dm < DTYPE_MATHS; dm++)
        for (int bl = 0; bl < 2; bl++)
            for (int cl = 0; cl < 2; cl++) {
                const tally *t = &tallies[s][dm][bl][cl];
                char what[96];
                describe(what, sizeof what, dm, (spf_layout)bl, (spf_layout)cl);
                if (t->runs)
                    printf("%s: %s: %d runs, worst relative error %.3g (%s)%s\n",
                           spf_strategy_name(s), what, t->runs, t->worst, t->kernel,
                           t->refused ? ", some refused" : "");
            }
}

/* AUTO on one case: the plan info lists the candidates the planner
 * considered (DESIGN.md decision 7), exactly one chosen, timed, and the
 * one that runs; every refused or failed one says why. Its result is
 * checked like any other. */
static void check_auto(const test_case *tc, int64_t n, spf_dtype dtype, spf_layout bl,
                       spf_layout cl)
{
    spf_plan_options o;
    spf_plan_options_init(&o);
    o.dtype = dtype;
    o.b_layout = bl;
    o.c_layout = cl;
    o.bias = 1;
    o.verify = 0;
    o.cache = 0;
    spf_plan *p = NULL;
    CHECK_OK(spf_plan_create(tc->a, n, &o, &p));
    if (!p)
        return;
    spf_plan_info info = {.size = sizeof info};
    CHECK_OK(spf_plan_get_info(p, &info));
    printf("auto: %s N=%lld %s B %s C %s: chose %s (%s, %.2f us) of %d candidates\n", tc->label,
           (long long)n, spf_dtype_name(dtype), spf_layout_name(bl), spf_layout_name(cl),
           spf_strategy_name(info.strategy), info.kernel_name, info.kernel_us,
           info.candidate_count);
    CHECK(info.candidate_count >= 1 && info.candidate_count <= SPF_MAX_CANDIDATES);
    int chosen = 0;
    for (int i = 0; i < info.candidate_count && i < SPF_MAX_CANDIDATES; i++) {
        const spf_candidate *c = &info.candidates[i];
        printf("  %-8s outcome %d estimate %.2f us measured %.2f us: %s\n",
               spf_strategy_name(c->strategy), (int)c->outcome, c->estimate_us, c->kernel_us,
               c->detail);
        if (c->outcome == SPF_CANDIDATE_CHOSEN) {
            chosen++;
            CHECK_MSG(c->strategy == info.strategy, "the chosen candidate %s is not the plan's %s",
                      spf_strategy_name(c->strategy), spf_strategy_name(info.strategy));
            CHECK_MSG(c->kernel_us > 0, "the chosen candidate %s was not timed",
                      spf_strategy_name(c->strategy));
        }
        if (c->outcome == SPF_CANDIDATE_REFUSED || c->outcome == SPF_CANDIDATE_FAILED)
            CHECK_MSG(c->detail[0] != '\0', "candidate %s refused or failed without a reason",
                      spf_strategy_name(c->strategy));
    }
    CHECK_MSG(chosen == 1, "%d candidates marked chosen", chosen);
    const strategy *row = strategy_find(info.strategy);
    CHECK(row != NULL);
    if (row) {
        double err = check_plan_result(p, row->on_device, tc->a, n, &o,
                                       rounds_a(info.strategy));
        CHECK_MSG(err <= dtype_tolerance(dtype, o.math), "auto (%s): relative error %.3g",
                  info.kernel_name, err);
    }
    spf_plan_free(p);
}

/* tc under options.reorder (Acc-SpMM's data-affinity order, issue 11 item
 * 3) on an R-MAT graph whose rows are shuffled, so that the order has
 * something to gather: the plan takes the order (its kernel name says so)
 * and writes C in the caller's row order; without reorder it keeps the
 * rows as they are. Both results are checked against the reference. */
static void check_tc_affinity(void)
{
    spf_matrix *g = gen_matrix(SPF_GEN_RMAT, 2048, 2048, 0.995, 7);
    int64_t m = spf_matrix_rows(g);
    int32_t *order = malloc((size_t)m * sizeof *order);
    rng r;
    rng_seed(&r, 77);
    for (int64_t i = 0; i < m; i++)
        order[i] = (int32_t)i;
    for (int64_t i = m - 1; i > 0; i--) {
        int64_t j = (int64_t)rng_below(&r, (uint64_t)i + 1);
        int32_t t = order[i];
        order[i] = order[j], order[j] = t;
    }
    spf_matrix *shuffled = NULL;
    CHECK_OK(tc_permute_rows(g, order, &shuffled));
    for (int reorder = 0; reorder <= 1 && shuffled; reorder++) {
        spf_plan_options o;
        spf_plan_options_init(&o);
        o.strategy = SPF_STRATEGY_TC;
        o.dtype = SPF_DTYPE_F32;
        o.math = SPF_MATH_TF32;
        o.reorder = reorder;
        o.verify = 0;
        o.cache = 0;
        spf_plan *p = NULL;
        CHECK_OK(spf_plan_create(shuffled, 49, &o, &p));
        if (!p)
            continue;
        spf_plan_info info = {.size = sizeof info};
        CHECK_OK(spf_plan_get_info(p, &info));
        int affinity = strstr(info.kernel_name, "_affinity") != NULL;
        CHECK_MSG(affinity == reorder, "tc reorder=%d on shuffled R-MAT: kernel %s", reorder,
                  info.kernel_name);
        double err = check_plan_result(p, 1, shuffled, 49, &o, 1);
        CHECK_MSG(err <= dtype_tolerance(o.dtype, o.math), "tc reorder=%d (%s): relative error %.3g",
                  reorder, info.kernel_name, err);
        printf("tc: shuffled R-MAT 2048, reorder=%d: %s, relative error %.3g\n", reorder,
               info.kernel_name, err);
        spf_plan_free(p);
    }
    spf_matrix_free(shuffled);
    spf_matrix_free(g);
    free(order);
}

/* 75×300: every 11th row empty, row 5 full (300 nonzeros: longer than a
 * staged chunk and than a warp's lanes), the rest up to ~25 % dense. */
static spf_matrix *matrix_empty_rows(void)
{
    enum { ROWS = 75, COLS = 300 };
    double density[ROWS];
    rng r;
    rng_seed(&r, 75);
    for (int i = 0; i < ROWS; i++)
        density[i] = i % 11 == 0 ? 0.0 : i == 5 ? 1.0 : 0.25 * rng_uniform(&r);
    return random_csr(ROWS, COLS, density, 76);
}

/* a with strays (or its rows shuffled), a freed */
static spf_matrix *with_strays(spf_matrix *a, int strays, uint64_t seed)
{
    spf_matrix *s = shuffled_with_strays(a, 0, strays, seed);
    spf_matrix_free(a);
    return s;
}

static spf_matrix *shuffled(spf_matrix *a, uint64_t seed)
{
    spf_matrix *s = shuffled_with_strays(a, 1, 0, seed);
    spf_matrix_free(a);
    return s;
}

int main(int argc, char **argv)
{
    test_case cases[] = {
        {"37x53", gen_matrix(SPF_GEN_UNIFORM, 37, 53, 0.7, 1), 1},
        {"75x300 empty rows", matrix_empty_rows(), 1},
        {"130x257", gen_matrix(SPF_GEN_UNIFORM, 130, 257, 0.9, 2), 0},
        {"1x1000", gen_matrix(SPF_GEN_UNIFORM, 1, 1000, 0.9, 3), 0},
        {"1000x3", gen_matrix(SPF_GEN_UNIFORM, 1000, 3, 0.3, 4), 0},
        {"2:4 45x100", gen_vnm(45, 100, 1, 2, 4, 5), 1},
        {"V64:2:8 150x256", gen_vnm(150, 256, 64, 2, 8, 6), 0},
        {"2:4 64x100 3 strays", with_strays(gen_vnm(64, 100, 1, 2, 4, 7), 3, 8), 0},
        {"V64:2:8 128x256 2 crowded rows", crowded(gen_vnm(128, 256, 64, 2, 8, 9), 2), 0},
        {"colvec8 100x200 shuffled", shuffled(gen_colvec(100, 200, 8, 0.8, 11), 12), 0},
        {"long rows 1500x3000", matrix_long_rows(13), 0},
    };
    const int case_count = (int)(sizeof cases / sizeof cases[0]);
    spf_matrix_stats stats;
    CHECK_OK(spf_matrix_stats_compute(cases[1].a, &stats));
    CHECK(stats.empty_rows > 0);

    spf_device_info dev;
    CHECK_OK(spf_device_query(0, &dev));
    int skipped_device = 0;
    for (int s = 1; s < MAX_STRATEGIES && strcmp(spf_strategy_name((spf_strategy)s), "?"); s++) {
        const strategy *row = strategy_find((spf_strategy)s);
        if (row && row->on_device && !dev.available) {
            printf("%s: skipped: no CUDA device (%s)\n", spf_strategy_name((spf_strategy)s),
                   dev.reason);
            skipped_device++;
            continue;
        }
        run_strategy((spf_strategy)s, cases, case_count);
    }
    /* DENSE refuses for want of cuBLASLt everywhere or nowhere. */
    CHECK_MSG(!(dense_absent && dense_supported),
              "dense: ran %d cases but refused %d naming cuBLASLt", dense_supported, dense_absent);
    if (dense_absent && !dense_supported)
        printf("dense: SKIPPED: cuBLASLt absent (%d cases refused)\n", dense_absent);

    if (dev.available) {
        check_auto(&cases[2], 49, SPF_DTYPE_F32, SPF_LAYOUT_N_LAST, SPF_LAYOUT_N_LAST);
        check_auto(&cases[0], 127, SPF_DTYPE_F16, SPF_LAYOUT_N_FIRST, SPF_LAYOUT_N_FIRST);
        check_tc_affinity();
    }
    for (int ci = 0; ci < case_count; ci++)
        spf_matrix_free(cases[ci].a);
    if (skipped_device && !check_failed) {
        check_report();
        SKIP("no CUDA device (%s): %d device strategies not run", dev.reason, skipped_device);
    }
    return check_report();
}
