#!/usr/bin/env python3
"""Which compile-time variants of the structured kernels earn their place.

Reads sweep logs of H200 runs (spf_sp_sweep: "log,M,K,PATTERN,N,dtype,layout,CONFIG,us" rows,
or "CONFIG  us" lines under "== PROBLEM" headers) and groups each config into the kernel it
runs: the template instantiation its name fixes (stream nb/rt, tile and wgmma shapes, TMA shape
with A staged and K split), its run-time parameters (warps, stages, the split's blocks) aside.
Then, greedily, it takes out the variant whose absence costs least, while on every problem the
fastest config left is within --tolerance of the fastest of all; what it printed is the table of
bench/results/kernel-budget/README.md.

    scripts/kernel_budget.py LOG... [--tolerance 0.02]
"""
import argparse
import collections
import re
import sys

VARIANTS = [
    (re.compile(r"(nb\d+_rt\d+)_w\d+_s\d+$"), "stream {}"),
    (re.compile(r"(wm\d+n\d+)s\d+$"), "wgmma {}"),
    (re.compile(r"(m\d+n\d+)s\d+$"), "tile {}"),
    (re.compile(r"(tm\d+n\d+)s\d+(a?)(k\d)?$"), "tma {}"),
    (re.compile(r"(cv_nb\d+)_w\d+_s\d+$"), "colvec {}"),
]


def variant(config):
    for pattern, label in VARIANTS:
        m = pattern.match(config)
        if m:
            if label.startswith("tma"):
                return label.format(m.group(1) + m.group(2) + ("k" if m.group(3) else ""))
            return label.format(m.group(1))
    return None


def read(paths):
    problems = collections.defaultdict(dict)
    for path in paths:
        current = None
        with open(path) as f:
            for line in f:
                if line.startswith("log,"):
                    p = line.strip().split(",")
                    key, config, us = ",".join(p[1:7]), p[7], float(p[8])
                else:
                    m = re.match(r"== (.*)", line)
                    if m:
                        current = path + ": " + m.group(1).strip()
                        continue
                    m = re.match(r"^\s*(\S+)\s+([\d.]+) us", line)
                    if not m or current is None:
                        continue
                    key, config, us = current, m.group(1), float(m.group(2))
                v = variant(config)
                if v is not None:
                    problems[key][v] = min(us, problems[key].get(v, float("inf")))
    return problems


def worst_loss(problems, kept):
    worst = 0.0
    for times in problems.values():
        best = min(times.values())
        left = [t for v, t in times.items() if v in kept]
        worst = max(worst, min(left) / best - 1 if left else float("inf"))
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("logs", nargs="+")
    ap.add_argument("--tolerance", type=float, default=0.02)
    args = ap.parse_args()
    problems = read(args.logs)
    if not problems:
        sys.exit("kernel_budget.py: no timed configs in %s" % " ".join(args.logs))
    kept = {v for times in problems.values() for v in times}
    wins = collections.Counter(min(t, key=t.get) for t in problems.values())
    print("%d problems, %d variants" % (len(problems), len(kept)))
    while True:
        costs = sorted((worst_loss(problems, kept - {v}), v) for v in kept)
        if not costs or costs[0][0] > args.tolerance:
            break
        loss, v = costs[0]
        kept.remove(v)
        print("  out: %-20s (fastest on %d problems; worst loss with it out %.2f %%)"
              % (v, wins[v], 100 * loss))
    print("kept: " + ", ".join("%s (fastest on %d)" % (v, wins[v]) for v in sorted(kept)))


if __name__ == "__main__":
    main()
