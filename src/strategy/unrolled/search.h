/* The low-cost search (LO-SpMM §2–5; issue 4) for one (matrix, n, dtype,
 * epilogue): instead of compiling and timing every configuration (the
 * exhaustive tuner, tuner.h), the tile space is
 *
 *   reordered   LO-SpMM Algorithm 1, one row order per m1 (plan/row_orders.h),
 *               when asked — before the constraints, as §2 orders it;
 *   pruned      by the three constraints (§3.2–3.4, plan/constraints.h),
 *               counting what is left after each;
 *   ranked      by the rank model (§3.5, plan/rank_model.h) over the rank
 *               features (plan/rank_features.h), the top K kept;
 *   evaluated   through proxies (§5, gpu/proxy_eval.h): one cheap
 *               stand-in kernel per candidate, the fastest proxies go on;
 *               or, without proxies, by compiling, checking and timing the
 *               K real kernels with the tuner;
 *   built       the SEARCH_PROXY_FINALISTS fastest by proxy time compiled,
 *               self-checked against the CPU reference and timed (the tuner
 *               over their list), the fastest kept.
 *
 * Fall-backs are visible (log_msg WARN), never silent: without a usable
 * rank model every survivor of the constraints goes on to evaluation, in
 * space order; when the proxies fail as a whole the top K are compiled and
 * timed as real kernels; a candidate whose proxy alone failed is compiled
 * and timed beside the finalists; and when every finalist's real kernel
 * fails (spills, wrong result) the next ones by proxy time are built.
 *
 * The CPU part (search_shortlist) is separate from the GPU part so the
 * stage counts and the top-K selection can be tested without a device. */
#ifndef SPF_STRATEGY_UNROLLED_SEARCH_H
#define SPF_STRATEGY_UNROLLED_SEARCH_H

#include "gpu/jit.h"
#include "gpu/selfcheck.h"
#include "strategy/unrolled/tuner.h"
#include "plan/rank_model.h"
#include "strategy/unrolled/row_orders.h"
#include "strategy/unrolled/tiling.h"

#include <math.h>

/* The search's default space: FULL (≤ 864 configurations, every m1, n1,
 * v, prefetch and K split). The constraints and the rank model exist to
 * make the big space cheap; COMPACT (≤ 75, the exhaustive tuner's default)
 * is a hand-picked slice of it, kept small for exhaustive tuning. The
 * library takes spf_plan_options.tune_space as given (its default is
 * COMPACT, for the exhaustive tuner); `spforge tune` and spforge-bench ask
 * for this one unless told otherwise. */
#define SEARCH_DEFAULT_SPACE SPF_TUNE_SPACE_FULL

/* Candidates the rank model passes on when search_top_k is 0: the larger
 * of SEARCH_DEFAULT_TOP_K — LO-SpMM §7 (Fig. 11, "LO-SpMM-Rank") evaluates
 * the top 10 — and SEARCH_TOP_K_PERCENT % of the survivors of the
 * constraints. The share is for the FULL space: leaving each FULL-space
 * oracle log out of the training in turn (H200, 2026-11-22, 3 problems),
 * the best of the model's top 10 lost 4.0 % on mean and 8.0 % at worst
 * against the problem's best, the top 30 2.6 % and 5.1 %; over the
 * 74-configuration COMPACT space the top 10 lost 0.7 % on mean. Proxies
 * are cheap (one per m1, v, prefetch and K split, n1 a run-time argument),
 * so the extra candidates cost little. */
#define SEARCH_DEFAULT_TOP_K 10
#define SEARCH_TOP_K_PERCENT 5

static inline int search_default_top_k(int survivors)
{
    int share = (survivors * SEARCH_TOP_K_PERCENT + 99) / 100;
    return share > SEARCH_DEFAULT_TOP_K ? share : SEARCH_DEFAULT_TOP_K;
}

/* The balance constraint's thresholds in the search (LO-SpMM §3.4 sets
 * both to 0.25, constraint_options_init's default): off. Replayed over the
 * oracle logs of 21 problems (H200, scripts/search_report.py), the paper's
 * thresholds dropped the best configuration often enough to lose 11.4 % on
 * mean and 58.5 % at worst by themselves — WASTE_col above all: N = 196
 * wants n1 = 64 (30 % padding), as idle threads past N cost this kernel
 * little — and COV_row alone still 16.4 % at worst, while the constraints
 * without balance lost nothing. The stage still runs and is counted. */
#define SEARCH_BALANCE_TH_ROW INFINITY
#define SEARCH_BALANCE_TH_COL INFINITY

/* Real kernels compiled and timed after the proxies, the fastest by proxy
 * time first (§5 builds the proxy winner alone). On the H200, 21 problems
 * of scripts/search-eval.sh (2026-11-22, commit b342994): the proxy winner
 * lost 30 % on mean against the oracle where timing all ten real kernels
 * lost 15 %; proxy and real times agree only roughly on near-equal kernels
 * (Spearman 0.78 over 74 configurations in test_proxy), so the proxies
 * narrow the top K to a few and the measurement decides among those.
 * Replayed over 9 FULL-space problems (full-r2-8801d1e: each search's proxy
 * times against the oracle's real ones), the best of the 3 fastest proxies
 * lost 6.1 % on mean and 15.8 % at worst, of the 5 fastest 3.3 % and 10.5 %,
 * of the 8 fastest 2.0 % and 7.5 %; each finalist costs one real compile
 * (0.06-0.6 s for three there), so five. */
#define SEARCH_PROXY_FINALISTS 5

typedef struct search_request {
    const spf_matrix *a;    /* borrowed; read during the call only            */
    int64_t n;
    spf_tune_space space;   /* the space before the constraints               */
    spf_dtype dtype;
    int f16x2_accumulate, bias, relu;
    int reorder;            /* rows in Algorithm 1 order, one order per m1    */
    int top_k;              /* ≥ 0; 0: search_default_top_k(survivors)       */
    int proxies;            /* evaluate through proxies (1) or real kernels   */
    const rank_model *model; /* borrowed, or NULL for rank_model_default()     */
    int sm_count;           /* SMs of the device (the utilization constraint) */
    int ptx_sm, sass_sm;    /* PTX .target and ptxas -arch                    */
    int threads;            /* host threads, 0 = all cores                    */
    int64_t code_budget;    /* per kernel, in instructions (≤ 0: none)        */
    selfcheck *check;       /* prepared buffers on the current device         */
} search_request;

/* The candidates the CPU stages leave, best first. */
typedef struct search_shortlist {
    spf_kernel_config *configs; /* count entries, ranked best first (owned)     */
    double *features;           /* count × RANK_FEATURE_COUNT, same order (owned) */
    int count;
    int ranked;                 /* 1: ordered by the rank model; 0: in space
                                   order (no usable model)                      */
    row_orders orders;          /* with reorder: one per m1 of the space (owned) */
} search_shortlist;

/* Reorder, prune, rank: the CPU stages. Fills the counts (space through
 * after_rank) and analysis_s, reorder_s and rank_s of *info (zeroed first).
 * An empty shortlist (nothing survives the constraints) is not an error
 * here. Release out with search_shortlist_free. */
spf_status search_shortlist_create(const search_request *q, search_shortlist *out,
                                   spf_search_info *info);
void search_shortlist_free(search_shortlist *s); /* accepts a zeroed struct */

/* Order candidates by proxy time: order receives the indices i whose
 * proxy_us[i] is finite and > 0, fastest first (ties by index), and
 * failed receives the others in index order; both caller-owned, count
 * entries. Returns how many went to order. */
int search_proxy_order(const double *proxy_us, int count, int *order, int *failed);

/* The whole search on the current device. On success *best holds the
 * chosen kernel, loaded, self-checked and timed; log holds one row per
 * candidate evaluated (proxy_us, features; the real kernels' costs where
 * one was built) with log->best the chosen row, and *info every count and
 * time. Failures as tuner_run's (SPF_ERR_UNSUPPORTED when nothing
 * survives the constraints or nothing could be generated, so AUTO falls
 * back to the generic kernel). The log is filled either way (release it
 * with tune_log_free). */
spf_status search_run(const search_request *q, jit_module *best, spf_search_info *info,
                      tune_log *log);

#endif
