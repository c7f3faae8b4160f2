/* The planner's calibration of the strategies' roofline estimates
 * (strategy.h's estimate_us) into the times their plans take: for each
 * strategy and range of N, time ≈ scale · (estimate − ROOFLINE_LAUNCH_US) +
 * constant_us, fitted on the H200 (scripts/calibrate_planner.py measures,
 * scripts/fit_calibration.py fits; the rows and the fit's misses are in
 * bench/results/plan-time/). A roofline ranks a CSR kernel at N = 256 as
 * if it streamed B at peak bandwidth; the measured kernels are 0.5-20× off
 * their rooflines, by strategy, so the raw estimates cannot say which two
 * candidates are worth timing. A strategy or range the fit has no rows for
 * keeps its raw estimate, which is optimistic: it is built rather than
 * ruled out. */
#ifndef SPF_PLAN_CALIBRATION_H
#define SPF_PLAN_CALIBRATION_H

#include "plan/problem.h"
#include "strategy/strategy.h"

/* The calibrated time of s on p whose roofline estimate is estimate_us. */
double calibration_us(const strategy *s, const problem *p, double estimate_us);

/* The rms error of log(time) of the fit calibration_us used for s on p,
 * or -1 where it has no row (the raw estimate is kept). */
double calibration_rms_log(const strategy *s, const problem *p);

#endif
