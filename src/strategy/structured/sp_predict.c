/* The structured strategy's predictor (sp_predict.h). */
#include "strategy/structured/sp_predict.h"

#include "core/alloc.h"
#include "core/error.h"

#include <math.h>
#include <string.h>

const char *const sp_feature_names[SP_FEATURE_COUNT] = {
    "m",     "k",      "n",    "v",    "group",  "kind",           "nb",      "rt",
    "warps", "stages", "rows", "cols", "blocks", "pairs_per_warp", "col_fill",
};
const rank_schema sp_schema = {sp_feature_names, SP_FEATURE_COUNT};

/* models/sp_predictor.txt, generated into the build by cmake/embed_text.cmake. */
extern const unsigned char sp_predictor_embedded[];
extern const size_t sp_predictor_embedded_size;

void sp_features(int64_t m, int64_t k, int64_t n, const sp_pattern *p, const sp_config *c,
                 double out[SP_FEATURE_COUNT])
{
    const int stream = c->kind == SP_STREAM;
    const double rows = stream ? 16.0 * c->rt : c->bm, cols = stream ? 8.0 * c->nb : c->bn;
    const double pairs = ceil((double)sp_pattern_condensed_cols(p, k) / 64.0);
    const double col_blocks = ceil((double)n / cols);
    const double f[SP_FEATURE_COUNT] = {
        (double)m,
        (double)k,
        (double)n,
        p->v,
        p->group,
        c->kind,
        stream ? c->nb : 0,
        stream ? c->rt : 0,
        stream ? c->warps : 0,
        c->stages,
        rows,
        cols,
        ceil((double)m / rows) * col_blocks,
        stream ? pairs / c->warps : pairs,
        (double)n / (cols * col_blocks),
    };
    for (int i = 0; i < SP_FEATURE_COUNT; i++)
        out[i] = f[i];
}

spf_status sp_model(const rank_model **out)
{
    static const rank_model_source source = {&sp_schema, "SPFORGE_SP_MODEL",
                                             sp_predictor_embedded, &sp_predictor_embedded_size,
                                             "models/sp_predictor.txt (embedded)"};
    static rank_model *model;
    return rank_model_load(&source, &model, out);
}

spf_status sp_predict_order(const rank_model *model, int64_t m, int64_t k, int64_t n,
                            const sp_pattern *p, const sp_config *space, int count, int *order)
{
    CHECK_ARG(model != NULL && p != NULL && count >= 0 && (count == 0 || (space && order)));
    if (count == 0)
        return SPF_OK;
    double *x = mem_alloc_array((size_t)count * SP_FEATURE_COUNT, sizeof *x);
    if (!x)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "the features of %d structured configs", count);
    for (int i = 0; i < count; i++)
        sp_features(m, k, n, p, &space[i], x + (size_t)i * SP_FEATURE_COUNT);
    spf_status status = rank_model_top_k(model, x, count, count, order);
    mem_free(x);
    return status;
}

int sp_unlogged_first(const sp_config *space, int count, int *order)
{
    int moved = 0;
    for (int i = 0; i < count; i++)
        if (space[order[i]].kind == SP_TMA) {
            int keep = order[i];
            memmove(order + moved + 1, order + moved, (size_t)(i - moved) * sizeof *order);
            order[moved++] = keep;
        }
    return moved;
}
