/* The tensor-core strategy's cost model: the planner's estimate of a
 * problem (no format built), and the ranking of the kernel configurations
 * for a built format, which the strategy then times in rank order (issue
 * 11 item 4; paper 001's order: constraints first, then a model, then
 * measure the few it ranks first). */
#ifndef SPF_STRATEGY_TC_TC_RANK_H
#define SPF_STRATEGY_TC_TC_RANK_H

#include "plan/problem.h"
#include "strategy/tc/tc_format.h"
#include "strategy/tc/tc_kernel.h"

/* nt × stages × warps × split × group */
enum { TC_MAX_CONFIGS = 4 * 3 * 2 * 2 * 2 };

typedef struct tc_estimate {
    double tiles;   /* non-empty 16×16 tiles expected (random placement)   */
    double us;      /* one launch, microseconds                            */
} tc_estimate;

/* From the matrix's shape and nonzeros only: tiles as if the nonzeros were
 * placed at random, then the model of one launch at the widest column
 * block N needs. */
tc_estimate tc_estimate_problem(const problem *p, const spf_device_info *dev);

/* The model's time of config c on format f (tiles and bytes known),
 * microseconds. */
double tc_model_us(const problem *p, const tc_format *f, const tc_config *c,
                   const spf_device_info *dev);

/* The configs that pass the constraints (shared memory within the
 * device's limit, column blocks no wider than N needs, the format's
 * placement allowed with B's layout), best model time first, into out
 * (cap entries); their count. */
int tc_rank_configs(const problem *p, const tc_format *f, const spf_device_info *dev,
                    tc_config *out, int cap);

#endif
