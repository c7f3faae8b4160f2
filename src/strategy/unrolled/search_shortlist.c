/* The search's CPU stages (search.h): reorder, prune, rank — and the
 * proxy ordering — apart from the GPU ones (search.c) so that they can be
 * tested without a device. */
#include "strategy/unrolled/search.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/log.h"
#include "core/progress.h"
#include "gpu/timing.h"
#include "strategy/unrolled/constraints.h"

#include <math.h>
#include <string.h>

void search_shortlist_free(search_shortlist *s)
{
    if (!s)
        return;
    mem_free(s->configs);
    mem_free(s->features);
    row_orders_free(&s->orders);
    memset(s, 0, sizeof *s);
}

/* Drop the candidates whose features are NaN: their m1 has more tiles than
 * a schedule takes, so no kernel of theirs can be generated (tune_features). */
static int drop_unsummarized(spf_kernel_config *configs, double *features, int count)
{
    int kept = 0;
    for (int i = 0; i < count; i++) {
        const double *f = features + (size_t)i * RANK_FEATURE_COUNT;
        if (isnan(f[0]))
            continue;
        configs[kept] = configs[i];
        memmove(features + (size_t)kept * RANK_FEATURE_COUNT, f, sizeof(double) * RANK_FEATURE_COUNT);
        kept++;
    }
    return kept;
}

/* §3.5: keep the model's top k of s, best first. Without a usable model
 * every candidate stays, in space order (search.h). */
static spf_status rank_stage(const search_request *q, search_shortlist *s, int k)
{
    spf_status status = SPF_OK;
    spf_kernel_config *configs = NULL;
    double *features = NULL;
    int *best = NULL;
    const rank_model *model = q->model;
    if (!model && rank_model_default(&model) != SPF_OK) {
        log_msg(SPF_LOG_WARN,
                "search: no rank model (%s); all %d candidates left by the constraints go on to "
                "evaluation",
                spf_last_error(), s->count);
        error_clear();
        return SPF_OK;
    }
    int kept = k < s->count ? k : s->count;
    best = mem_alloc_array((size_t)(s->count ? s->count : 1), sizeof *best);
    configs = mem_alloc_array((size_t)(kept ? kept : 1), sizeof *configs);
    features = mem_alloc_array((size_t)(kept ? kept : 1) * RANK_FEATURE_COUNT, sizeof *features);
    if (!best || !configs || !features)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "ranking %d candidates", s->count);
    if (kept > 0)
        TRY(rank_model_top_k(model, s->features, s->count, kept, best));
    for (int i = 0; i < kept; i++) {
        configs[i] = s->configs[best[i]];
        memcpy(features + (size_t)i * RANK_FEATURE_COUNT,
               s->features + (size_t)best[i] * RANK_FEATURE_COUNT, sizeof(double) * RANK_FEATURE_COUNT);
    }
    mem_free(s->configs);
    mem_free(s->features);
    s->configs = configs;
    s->features = features;
    s->count = kept;
    s->ranked = 1;
    configs = NULL;
    features = NULL;
fail:
    mem_free(best);
    mem_free(configs);
    mem_free(features);
    return status;
}

spf_status search_shortlist_create(const search_request *q, search_shortlist *out,
                                   spf_search_info *info)
{
    spf_status status = SPF_OK;
    tile_space space = {0};
    spf_stage stage = SPF_STAGE_PLAN; /* PLAN: no stage of this function open */
    memset(out, 0, sizeof *out);
    memset(info, 0, sizeof *info);
    if (!q || !q->a || q->n < 1 || q->top_k < 0)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "no request or matrix, n < 1 or top_k < 0");

    double t0 = timing_now_s();
    TRY(tile_space_create(q->n, q->space, &space));
    double space_s = timing_now_s() - t0;
    /* §2: reordering comes before the constraints, which measure its tiles. */
    if (q->reorder) {
        t0 = timing_now_s();
        TRY(row_orders_create(q->a, space.configs, space.count, q->threads, &out->orders));
        info->reorder_s = timing_now_s() - t0;
        log_msg(SPF_LOG_INFO, "search: reorder: %d row orders (one per m1) in %.3f s",
                out->orders.count, info->reorder_s);
    }

    t0 = timing_now_s();
    tile_problem tiles = {q->a, q->n, NULL, q->reorder ? &out->orders : NULL};
    constraint_options co;
    constraint_options_init(&co);
    co.dtype = q->dtype; /* f16x2 accumulation needs F16, which forecasts it */
    co.th_row = SEARCH_BALANCE_TH_ROW;
    co.th_col = SEARCH_BALANCE_TH_COL;
    if (q->sm_count > 0)
        co.sm_count = q->sm_count;
    int counts[CONSTRAINT_STAGES];
    TRY(progress_begin(SPF_STAGE_CONSTRAINTS, space.count, "%d configurations", space.count));
    stage = SPF_STAGE_CONSTRAINTS;
    TRY(space_reduce(&tiles, &co, &space, counts));
    info->space = counts[CONSTRAINT_STAGE_SPACE];
    info->after_register = counts[CONSTRAINT_STAGE_REGISTER];
    info->after_utilization = counts[CONSTRAINT_STAGE_UTILIZATION];
    info->after_balance = counts[CONSTRAINT_STAGE_BALANCE];

    out->features = mem_alloc_array((size_t)(space.count ? space.count : 1) * RANK_FEATURE_COUNT,
                                    sizeof *out->features);
    if (!out->features)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "features of %d candidates", space.count);
    TRY(tune_features(&tiles, q->dtype, space.configs, space.count, out->features));
    out->configs = space.configs;
    out->count = drop_unsummarized(space.configs, out->features, space.count);
    space = (tile_space){0};
    info->analysis_s = space_s + (timing_now_s() - t0);
    log_msg(SPF_LOG_INFO,
            "search: space %d -> register %d -> utilization %d -> balance %d (%.3f s)",
            info->space, info->after_register, info->after_utilization, info->after_balance,
            info->analysis_s);
    stage = SPF_STAGE_PLAN;
    TRY(progress_end(SPF_STAGE_CONSTRAINTS, SPF_OK));

    t0 = timing_now_s();
    TRY(progress_begin(SPF_STAGE_RANK, out->count, "%d survivors", out->count));
    stage = SPF_STAGE_RANK;
    TRY(rank_stage(q, out, q->top_k ? q->top_k : search_default_top_k(out->count)));
    stage = SPF_STAGE_PLAN;
    TRY(progress_end(SPF_STAGE_RANK, SPF_OK));
    info->rank_s = timing_now_s() - t0;
    info->after_rank = out->count;
    info->evaluated = out->count;
    if (out->ranked)
        log_msg(SPF_LOG_INFO, "search: rank model: top %d of %d in %.3f ms", out->count,
                info->after_balance, 1e3 * info->rank_s);
    return SPF_OK;
fail:
    if (stage != SPF_STAGE_PLAN) /* the one of the two left open */
        status = progress_end(stage, status);
    tile_space_free(&space);
    search_shortlist_free(out);
    return status;
}

int search_proxy_order(const double *proxy_us, int count, int *order, int *failed)
{
    int good = 0, bad = 0;
    for (int i = 0; i < count; i++) {
        if (!(isfinite(proxy_us[i]) && proxy_us[i] > 0)) {
            failed[bad++] = i;
            continue;
        }
        /* insertion: a top-K list is short; equal times keep index order */
        int at = good++;
        while (at > 0 && proxy_us[order[at - 1]] > proxy_us[i]) {
            order[at] = order[at - 1];
            at--;
        }
        order[at] = i;
    }
    return good;
}
