/* The search's CPU stages (gpu/search.h): the counts after each stage,
 * the rank model's top K (checked against the model's scores of every
 * survivor), the default K, the visible fall-back without a model, row
 * orders with reorder, an empty shortlist, and the proxy ordering that
 * picks the winner. The GPU stages: tests/gpu/test_search.c. */
#define _POSIX_C_SOURCE 200809L

#include "test_util.h"

#include "strategy/unrolled/search.h"
#include "strategy/unrolled/constraints.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int warnings;
static char last_warning[1024];

static void count_warnings(spf_log_level level, const char *message, void *user)
{
    (void)user;
    if (level == SPF_LOG_WARN) {
        warnings++;
        snprintf(last_warning, sizeof last_warning, "%s", message);
    }
}

static search_request request(const spf_matrix *a, int64_t n)
{
    return (search_request){.a = a, .n = n, .space = SEARCH_DEFAULT_SPACE, .dtype = SPF_DTYPE_F32,
                            .proxies = 1, .sm_count = 132, .ptx_sm = 90, .sass_sm = 90};
}

static void check_monotone(const char *what, const spf_search_info *s)
{
    CHECK_MSG(s->space >= s->after_register && s->after_register >= s->after_utilization &&
                  s->after_utilization >= s->after_balance && s->after_balance >= s->after_rank &&
                  s->after_rank == s->evaluated && s->space > 0,
              "%s: counts %d %d %d %d %d %d", what, s->space, s->after_register,
              s->after_utilization, s->after_balance, s->after_rank, s->evaluated);
}

/* No usable model: every survivor goes on, in space order, with a warning. */
static void test_no_model(const spf_matrix *a)
{
    setenv("SPFORGE_RANK_MODEL", "/nonexistent/rank_model.txt", 1);
    search_request q = request(a, 64);
    q.top_k = 2;
    search_shortlist s;
    spf_search_info info;
    warnings = 0;
    CHECK_OK(search_shortlist_create(&q, &s, &info));
    CHECK_MSG(warnings == 1 && strstr(last_warning, "no rank model"), "warnings %d: %s", warnings,
              last_warning);
    CHECK(s.ranked == 0 && s.count == info.after_balance && info.after_rank == s.count);
    check_monotone("no model", &info);
    /* in space order: grouped by ascending m1 */
    int sorted = 1;
    for (int i = 1; i < s.count; i++)
        sorted &= s.configs[i - 1].m1 <= s.configs[i].m1;
    CHECK(sorted);
    search_shortlist_free(&s);
    unsetenv("SPFORGE_RANK_MODEL");
}

/* A small model whose scores spread the configurations: prefers small
 * m1, then K splits, then wide n1. */
static rank_model *test_model(void)
{
    char text[2048];
    int len = snprintf(text, sizeof text, "spforge-rank-model 1\nfeatures %d", RANK_FEATURE_COUNT);
    for (int j = 0; j < RANK_FEATURE_COUNT; j++)
        len += snprintf(text + len, sizeof text - (size_t)len, " %s", rank_feature_names[j]);
    snprintf(text + len, sizeof text - (size_t)len,
             "\ntrees 3\n"
             "tree 3\n0 split %d 4.5 1 2\n1 leaf 1.0\n2 leaf -1.0\n"
             "tree 3\n0 split %d 1.5 1 2\n1 leaf -0.25\n2 leaf 0.5\n"
             "tree 5\n0 split %d 64.5 1 2\n1 leaf 0.0\n2 split %d 2.5 3 4\n3 leaf 0.125\n"
             "4 leaf 0.0625\nend\n",
             RANK_F_M1, RANK_F_KSPLIT, RANK_F_N1, RANK_F_V);
    rank_model *m = NULL;
    CHECK_OK(rank_model_parse(text, strlen(text), "test model", &m));
    return m;
}

/* The shortlist is the model's top K of the survivors of the constraints,
 * best first, ties by space order. */
static void test_top_k(const spf_matrix *a, int64_t n, int top_k, int reorder)
{
    rank_model *model = test_model();
    search_request q = request(a, n);
    q.top_k = top_k;
    q.model = model;
    q.reorder = reorder;
    search_shortlist s;
    spf_search_info info;
    warnings = 0;
    CHECK_OK(search_shortlist_create(&q, &s, &info));
    CHECK_MSG(warnings == 0, "warning: %s", last_warning);
    check_monotone("top-k", &info);
    int k = top_k ? top_k : search_default_top_k(info.after_balance);
    CHECK(s.ranked == 1 && s.count == (info.after_balance < k ? info.after_balance : k));
    CHECK(info.analysis_s > 0 && info.rank_s > 0 && (info.reorder_s > 0) == (reorder != 0));
    CHECK(s.orders.count == (reorder ? 6 : 0)); /* FULL: one per m1 */

    /* The survivors the same way, scored one by one. */
    tile_space all;
    CHECK_OK(tile_space_create(n, q.space, &all));
    tile_problem p = {a, n, NULL, reorder ? &s.orders : NULL};
    constraint_options co;
    constraint_options_init(&co);
    co.th_row = SEARCH_BALANCE_TH_ROW;
    co.th_col = SEARCH_BALANCE_TH_COL;
    int counts[CONSTRAINT_STAGES];
    CHECK_OK(space_reduce(&p, &co, &all, counts));
    CHECK_EQ_I64(counts[CONSTRAINT_STAGE_BALANCE], info.after_balance);
    double *f = malloc((size_t)(all.count + 1) * RANK_FEATURE_COUNT * sizeof *f);
    double *score = malloc((size_t)(all.count + 1) * sizeof *score);
    CHECK_OK(tune_features(&p, SPF_DTYPE_F32, all.configs, all.count, f));
    for (int i = 0; i < all.count; i++)
        score[i] = rank_model_score(model, f + (size_t)i * RANK_FEATURE_COUNT);
    int wrong = 0;
    for (int r = 0; r < s.count; r++) {
        /* the r-th best: the highest score not yet taken, first in space order */
        int best = -1;
        for (int i = 0; i < all.count; i++)
            if (score[i] > -INFINITY && (best < 0 || score[i] > score[best]))
                best = i;
        wrong += best < 0 || memcmp(&all.configs[best], &s.configs[r], sizeof s.configs[r]) != 0 ||
                 memcmp(f + (size_t)best * RANK_FEATURE_COUNT,
                        s.features + (size_t)r * RANK_FEATURE_COUNT,
                        RANK_FEATURE_COUNT * sizeof(double)) != 0;
        if (best >= 0)
            score[best] = -INFINITY;
    }
    CHECK_MSG(wrong == 0, "n = %lld, K = %d, reorder %d: %d of %d shortlisted differ from the "
              "model's order", (long long)n, top_k, reorder, wrong, s.count);
    printf("n = %lld, K = %d, reorder %d: space %d -> register %d -> utilization %d -> balance %d "
           "-> top-K %d; first m%d n%d v%d p%d k%d\n",
           (long long)n, top_k, reorder, info.space, info.after_register, info.after_utilization,
           info.after_balance, info.after_rank, s.count ? s.configs[0].m1 : 0,
           s.count ? s.configs[0].n1 : 0, s.count ? s.configs[0].v : 0,
           s.count ? s.configs[0].prefetch : 0, s.count ? s.configs[0].ksplit : 0);
    free(f);
    free(score);
    tile_space_free(&all);
    search_shortlist_free(&s);
    rank_model_free(model);
}

/* The committed model (embedded at build time) ranks without a warning. */
static void test_default_model(const spf_matrix *a)
{
    search_request q = request(a, 49);
    search_shortlist s;
    spf_search_info info;
    warnings = 0;
    CHECK_OK(search_shortlist_create(&q, &s, &info));
    CHECK_MSG(warnings == 0, "warning: %s", last_warning);
    int k = search_default_top_k(info.after_balance);
    CHECK(s.ranked == 1 && s.count == (info.after_balance < k ? info.after_balance : k));
    int v1 = 1;
    for (int i = 0; i < s.count; i++)
        v1 &= s.configs[i].v == 1; /* 49 is odd */
    CHECK(v1);
    search_shortlist_free(&s);
}

/* Nothing survives: too few blocks for any tile (2 × 1 outputs). */
static void test_empty(void)
{
    spf_matrix *a = gen_matrix(SPF_GEN_UNIFORM, 2, 16, 0.5, 4);
    search_request q = request(a, 1);
    search_shortlist s;
    spf_search_info info;
    CHECK_OK(search_shortlist_create(&q, &s, &info));
    CHECK(s.count == 0 && info.after_utilization == 0 && info.after_rank == 0 && info.space > 0);
    search_shortlist_free(&s);
    q.top_k = -1;
    CHECK_STATUS(search_shortlist_create(&q, &s, &info), SPF_ERR_INVALID_ARGUMENT);
    q.top_k = 0;
    q.space = (spf_tune_space)9;
    CHECK_STATUS(search_shortlist_create(&q, &s, &info), SPF_ERR_INVALID_ARGUMENT);
    CHECK(s.count == 0 && s.configs == NULL);
    spf_matrix_free(a);
}

static void test_proxy_order(void)
{
    const double us[] = {3.0, 0.0, 1.0, NAN, 1.0, -2.0, INFINITY, 2.5};
    int order[8], failed[8];
    int good = search_proxy_order(us, 8, order, failed);
    CHECK_EQ_I64(good, 4);
    const int want[] = {2, 4, 7, 0}, want_failed[] = {1, 3, 5, 6};
    CHECK(memcmp(order, want, sizeof want) == 0 && memcmp(failed, want_failed, sizeof want_failed) == 0);
    CHECK_EQ_I64(search_proxy_order(us, 0, order, failed), 0);
    const double none[] = {NAN, 0.0};
    CHECK_EQ_I64(search_proxy_order(none, 2, order, failed), 0);
    CHECK(failed[0] == 0 && failed[1] == 1);
}

/* The default K: 10 up to 200 survivors, 5 % of them (rounded up) past that. */
static void test_default_top_k(void)
{
    CHECK(search_default_top_k(0) == SEARCH_DEFAULT_TOP_K);
    CHECK(search_default_top_k(74) == 10);
    CHECK(search_default_top_k(200) == 10);
    CHECK(search_default_top_k(201) == 11);
    CHECK(search_default_top_k(660) == 33);
}

int main(int argc, char **argv)
{
    spf_set_log_callback(count_warnings, NULL);
    /* uneven rows (magnitude pruning), some empty, M not a multiple of 32 */
    spf_matrix *a = gen_matrix(SPF_GEN_MAGNITUDE, 1000, 300, 0.9, 17);
    test_no_model(a);
    test_top_k(a, 64, 5, 0);
    test_top_k(a, 49, 0, 0);
    test_top_k(a, 256, 3, 1);
    test_top_k(a, 3, 1000, 0); /* K over the survivors: all of them */
    test_default_model(a);
    test_empty();
    test_proxy_order();
    test_default_top_k();
    spf_matrix_free(a);
    return check_report();
}
