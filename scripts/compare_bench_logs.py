#!/usr/bin/env python3
"""spforge-bench logs of two builds, row by row (rows paired in order: the
logs cut long problem names): AUTO's and the generic kernel's time, after ÷
before, their geomeans and AUTO's picks. For runs whose result files are
missing (bench/results/kernel-budget/README.md); bench/compare_results.py
compares result files.

    scripts/compare_bench_logs.py BEFORE.log AFTER.log [BEFORE.log AFTER.log ...]
"""
import collections
import math
import re
import sys

ROW = re.compile(r"^(\S.*?)\s+(f16|f32|bf16|tf32)\s+\d+\s+([\d.]+)\s+([\d.]+)\s.*\s(\w+) \([\d.]+\)\s*$")


def rows(path):
    out = []
    with open(path) as f:
        for line in f:
            m = ROW.match(line)
            if m and not line.startswith("["):
                out.append((m.group(1), float(m.group(3)), float(m.group(4)), m.group(5)))
    return out


def geomean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs))


def main():
    paths = sys.argv[1:]
    if not paths or len(paths) % 2:
        sys.exit(__doc__)
    every_auto, every_generic = [], []
    for before_path, after_path in zip(paths[::2], paths[1::2]):
        before, after = rows(before_path), rows(after_path)
        if [r[0] for r in before] != [r[0] for r in after] or not before:
            sys.exit("%s and %s hold different rows" % (before_path, after_path))
        auto = [a[1] / b[1] for b, a in zip(before, after)]
        generic = [a[2] / b[2] for b, a in zip(before, after)]
        print("%s: %d rows, AUTO %.3f (%.3f to %.3f), generic %.3f; picks %s; %s" % (
            after_path, len(auto), geomean(auto), min(auto), max(auto), geomean(generic),
            dict(collections.Counter(r[3] for r in before)),
            dict(collections.Counter(r[3] for r in after))))
        every_auto += auto
        every_generic += generic
    print("all: %d rows, AUTO %.3f, generic %.3f" % (len(every_auto), geomean(every_auto),
                                                     geomean(every_generic)))


if __name__ == "__main__":
    main()
