/* The structured strategy's predictor (STuning-DL, paper 001 §IV): the
 * tuning space of the three kernels (sp_tuning_space, sp_kernel.h), each
 * config's features on a problem, and a ranking model over them
 * (LambdaMART, rank_model.h; trained by scripts/train_sp_predictor.py on
 * spf_sp_sweep's logs) whose first few the strategy times. Measured on
 * held-out problems of the H200 logs, the better of the two models the
 * issue names: bench/results/structured/predictor/. Host code. */
#ifndef SPF_STRATEGY_STRUCTURED_SP_PREDICT_H
#define SPF_STRATEGY_STRUCTURED_SP_PREDICT_H

#include "plan/rank_model.h"
#include "spforge.h"
#include "strategy/structured/sp_kernel.h"

#include <stdint.h>

#define SP_FEATURE_COUNT 15
extern const char *const sp_feature_names[SP_FEATURE_COUNT];
extern const rank_schema sp_schema;

/* The configs the strategy times on a problem: the model's first
 * SP_PREDICT_TIMED that launch. */
#define SP_PREDICT_TIMED 5

/* Config c's features on an m × k matrix of pattern p times N = n: the
 * problem (m, k, n, V, the group M), the config (kind, nb, rt, warps,
 * stages, a block's rows and columns) and what they make together (blocks,
 * step pairs a warp, the share of a block's columns within N). */
void sp_features(int64_t m, int64_t k, int64_t n, const sp_pattern *p, const sp_config *c,
                 double out[SP_FEATURE_COUNT]);

/* The model: the file named by SPFORGE_SP_MODEL, else
 * models/sp_predictor.txt as embedded (rank_model_load). */
spf_status sp_model(const rank_model **out);

/* Order the count configs of space for the problem, the model's best
 * first: order receives count indices (caller-owned). */
spf_status sp_predict_order(const rank_model *model, int64_t m, int64_t k, int64_t n,
                            const sp_pattern *p, const sp_config *space, int count, int *order);

/* Move the configs of kernels the model has no logs of (SP_TMA, built
 * after the logs were taken) to the front of order (count indices into
 * space), the model's order kept otherwise; returns how many. The
 * strategy times them all, besides the model's first SP_PREDICT_TIMED. */
int sp_unlogged_first(const sp_config *space, int count, int *order);

#endif
