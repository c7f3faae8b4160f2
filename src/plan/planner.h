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

/* Once a time is measured, a candidate is built and timed only when its
 * calibrated estimate is within its reach of that time: exp(2 rms) of its
 * calibration row's log error (about two standard errors), at least
 * PLANNER_REACH_MIN (the timing's own spread and a held-out matrix's
 * larger error), and PLANNER_SLACK for a strategy the fit has no rows for.
 * A sparse candidate estimated 1.5× the measured dense time, with a fit
 * good to 6 %, costs a plan 0.1-0.5 s of format building and tuning on an
 * LLM layer for a loss (scripts/plan_profile.py). */
#define PLANNER_REACH_MIN 1.25

typedef struct planner_candidate {
    const strategy *s;
    int supported;       /* supports() said yes                              */
    int build;           /* the plan builds (and under AUTO times) it        */
    double estimate_us;  /* s->estimate_us, for supported candidates         */
    double reach;        /* the most estimate_us / a measured time it is built at */
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
 * its reach of best_measured_us (> 0), the fastest time measured so far,
 * and fewer than PLANNER_OTHERS_MAX others than the floors were built. The
 * estimates are rooflines: a kernel far slower than its own (a graph's
 * irregular rows, measured 10-30× over on the H100) must not hide a
 * strategy that was only estimated slower than it. When not, c->reason
 * says why, against the measurement. */
int planner_build_late(planner_candidate *c, double best_measured_us, int others);

/* Whether a candidate planner_rank chose to build is still worth it once
 * best_measured_us (> 0; 0: nothing measured yet) is known: a floor always,
 * another while its estimate is within its reach of the measurement. When
 * not, c->reason says why. */
int planner_still_worth(planner_candidate *c, double best_measured_us);

#endif
