#!/usr/bin/env python3
"""Fit the planner's calibration (src/plan/calibration.c) on the rows of
scripts/calibrate_planner.py: for each strategy and range of N, the time a
plan measured ≈ scale · (roofline estimate − ROOFLINE_LAUNCH_US) + constant,
fitted by least squares on the logarithms (a grid search: the relative
error is what ranking needs). Prints the table's rows and, for the rule the
planner applies (the floor always, at most two others within the slack of
the best calibrated estimate), how often it misses the fastest strategy.

    python3 scripts/fit_calibration.py bench/results/plan-time/calibration-nvidia-h200.csv
"""

import collections
import csv
import math
import sys

LAUNCH_US = 4.0           # strategy/roofline.h: ROOFLINE_LAUNCH_US
N_MAX = (8, 64, 1 << 31)  # the ranges of N: calibration.c's n_max
SLACK, OTHERS = 2.0, 2    # plan/planner.h: PLANNER_SLACK, PLANNER_OTHERS_MAX
# The largest scale fitted: where a strategy's rows all have rooflines of
# a fraction of a µs (the unrolled kernel's, on DLMC's small matrices) the
# scale is not pinned by them, and a larger one would rule it out on large
# problems it was never measured on.
SCALE_MAX = 20.0
# Fewer rows than this (the structured strategy's: the set has no 2:4
# layers) fit nothing: the planner keeps the raw estimate, which is
# optimistic, so the strategy is built rather than ruled out.
ROWS_MIN = 10
STRATEGY_IDS = {"generic": "SPF_STRATEGY_GENERIC", "unrolled": "SPF_STRATEGY_UNROLLED",
                "dense": "SPF_STRATEGY_DENSE", "tc": "SPF_STRATEGY_TC",
                "structured": "SPF_STRATEGY_STRUCTURED", "panel": "SPF_STRATEGY_PANEL",
                "tcfrag": "SPF_STRATEGY_TCFRAG"}


def range_of(n):
    return next(i for i, top in enumerate(N_MAX) if n <= top)


def fit(points):
    """(scale, constant) minimizing the squared log error over points."""
    best = None
    for i in range(int(math.log(SCALE_MAX / 0.25) / math.log(1.1)) + 1):
        a = 0.25 * 1.1 ** i
        for j in range(100):
            c = 0.25 * j
            e = sum((math.log(max(a * x + c, 0.05)) - math.log(max(m, 0.05))) ** 2
                    for x, m in points)
            if best is None or e < best[0]:
                best = (e, a, c)
    return best[1], best[2], math.sqrt(best[0] / len(points))


def main(argv):
    rows = [r for r in csv.DictReader(open(argv[0])) if r["estimate_us"]]
    points = collections.defaultdict(list)
    for r in rows:
        points[(r["strategy"], range_of(int(r["n"])))].append(
            (max(float(r["estimate_us"]) - LAUNCH_US, 0.0), float(r["measured_us"])))
    table = {}
    print("/* strategy, n_max, scale, constant_us: fitted on %d rows (rms log error) */" % len(rows))
    for (s, b) in sorted(points, key=lambda k: (STRATEGY_IDS[k[0]], k[1])):
        if len(points[(s, b)]) < ROWS_MIN:
            table[(s, b)] = (1.0, LAUNCH_US)  # the raw estimate
            continue
        a, c, rms = fit(points[(s, b)])
        table[(s, b)] = (a, c)
        print("    {%s, %d, %.2f, %.2f}, /* %d rows, %.2f */" % (
            STRATEGY_IDS[s], min(N_MAX[b], 1 << 30) if b < len(N_MAX) - 1 else 0, a, c,
            len(points[(s, b)]), rms))
    problems = collections.defaultdict(dict)
    for r in rows:
        problems[(r["problem"], int(r["n"]), r["dtype"])][r["strategy"]] = (
            float(r["measured_us"]), float(r["estimate_us"]))
    missed, builds = [], 0
    for (name, n, dtype), d in problems.items():
        cal = {s: table[(s, range_of(n))][0] * max(e - LAUNCH_US, 0) + table[(s, range_of(n))][1]
               for s, (_, e) in d.items()}
        best = min(cal.values())
        built = ["dense"] if "dense" in d else []
        for s in sorted((s for s in d if s != "dense"), key=cal.get):
            if len(built) - 1 < OTHERS and cal[s] <= SLACK * best:
                built.append(s)
        fastest = min(d, key=lambda s: d[s][0])
        got = min(built, key=lambda s: d[s][0])
        builds += len(built)
        if d[got][0] > 1.02 * d[fastest][0]:
            missed.append("%s N=%d %s: %s (%.2f us) kept, %s %.2f us" % (
                name, n, dtype, got, d[got][0], fastest, d[fastest][0]))
    print("/* the rule: %.2f strategies built a problem, the fastest missed (by > 2 %%) on %d "
          "of %d problems */" % (builds / len(problems), len(missed), len(problems)))
    for m in missed:
        print("/*   %s */" % m)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
