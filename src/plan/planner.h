/* The planner (DESIGN.md decision 7), CPU only: from the problem, the
 * device and the request, the candidates of every strategy in the table
 * (strategy/strategy.h), those that support the problem ranked by their
 * cost estimates, and which of them the plan builds and times. The rule
 * users get: AUTO is never slower than the dense strategy of the same
 * dtype and math mode, because the floor (dense) is always built and
 * timed when it is allowed, and the fastest measured candidate is kept. */
#ifndef SPF_PLAN_PLANNER_H
#define SPF_PLAN_PLANNER_H

#include "plan/problem.h"
#include "strategy/strategy.h"

/* Supported candidates whose estimate is over this many times the best
 * estimate are not built (a floor strategy always is): the estimates are
 * calibrated rooflines (plan/calibration.h), good to about 1.5× (their
 * fit's rms log error is 0.1-0.5), not to 3. Tighter, the fit's set
 * loses its fastest strategy on more problems; looser, more are built for
 * nothing (scripts/fit_calibration.py counts both). */
#define PLANNER_SLACK 2.0

/* The most candidates besides the floors built and timed for one plan:
 * the plan's time is mostly their tuning. */
#define PLANNER_OTHERS_MAX 2

typedef struct planner_candidate {
    const strategy *s;
    int supported;       /* supports() said yes                              */
    int build;           /* the plan builds (and under AUTO times) it        */
    double estimate_us;  /* s->estimate_us, for supported candidates         */
    char reason[160];    /* why not supported, or why not built              */
} planner_candidate;

/* The candidates of p on dev (NULL: none) under o, into out (room for
 * SPF_MAX_CANDIDATES): a forced strategy is the one candidate; AUTO
 * considers every row that runs on a device. Supported ones first, by
 * estimate, then the refused ones in table order. Returns their count. */
int planner_rank(const problem *p, const spf_device_info *dev, const spf_plan_options *o,
                 planner_candidate *out);

/* Whether a supported candidate that planner_rank left out is built after
 * all, once a plan has timed what it built: when its estimate is within
 * PLANNER_SLACK of best_measured_us (> 0), the fastest time measured so
 * far, and fewer than PLANNER_OTHERS_MAX others than the floors were built. The estimates are
 * rooflines: a kernel far slower than its own (a graph's irregular rows,
 * measured 10-30× over on the H100) must not hide a strategy that was only
 * estimated slower than it. When not, c->reason says why, against the
 * measurement. */
int planner_build_late(planner_candidate *c, double best_measured_us, int others);

#endif
