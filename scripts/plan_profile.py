#!/usr/bin/env python3
"""Where a plan's time goes: for pruned fp16 layers of the LLM and BERT
shapes (magnitude of a random normal weight, Y = X·Wᵀ layouts as
SparseLinear plans them, plan cache off), each plan's wall time, the time
of each stage of spf_plan_create (its progress events) and what the
planner built and timed.

    PYTHONPATH=python SPF_LIB=build/libspforge.so python3 scripts/plan_profile.py [--json F]
"""

import argparse
import collections
import json
import statistics
import sys
import time

SHAPES = {"bert-qkvo": (768, 768), "bert-up": (3072, 768), "bert-down": (768, 3072),
          "llm-attn": (4096, 4096), "llm-up": (11008, 4096), "llm-down": (4096, 11008)}


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", default=",".join(SHAPES))
    p.add_argument("--ns", default="1,16,128")
    p.add_argument("--sparsity", type=float, default=0.7)
    p.add_argument("--weights", default="cold")
    p.add_argument("--gaps", type=int, default=0, help="print the K longest waits of each plan")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    import numpy
    import spforge
    rng = numpy.random.default_rng(0)
    rows = []
    for name in args.shapes.split(","):
        m, k = SHAPES[name]
        w = rng.standard_normal((m, k), dtype=numpy.float32)
        keep = numpy.abs(w) > numpy.quantile(numpy.abs(w), args.sparsity)
        a = spforge.Matrix(w, mask=keep)
        for n in (int(v) for v in args.ns.split(",")):
            stages = collections.defaultdict(float)
            timeline = []  # (perf_counter, what): progress events and log messages

            def hook(e):
                timeline.append((time.perf_counter(), "%s %s %s" % (e.stage, e.phase, e.text)))
                if e.phase == "end" and e.depth > 0:
                    stages[e.stage + (":" + e.text if e.stage in ("build", "time") else "")] += \
                        e.stage_s
            spforge.set_log(lambda level, message: timeline.append((time.perf_counter(), message)))
            t0 = time.perf_counter()
            plan = spforge.Plan(a, n, dtype="f16", b_layout="n_first", c_layout="n_first",
                                cache=False, weights=args.weights, progress=hook)
            wall = time.perf_counter() - t0
            spforge.set_log(None)
            info = plan.info()
            cands = [(c["strategy"], c["outcome"], round(c["estimate_us"] or 0, 2),
                      round(c["kernel_us"] or 0, 2))
                     for c in info["candidates"] if c["outcome"] != "refused"]
            marks = [(t0, "Plan() called")] + timeline + [(t0 + wall, "Plan() returned")]
            gaps = sorted(((b[0] - a[0], a[1], b[1]) for a, b in zip(marks, marks[1:])),
                          reverse=True)[:args.gaps]
            rows.append({"shape": name, "m": m, "k": k, "n": n, "plan_s": wall,
                         "strategy": info["strategy"], "stages": dict(stages),
                         "candidates": cands, "gaps": gaps})
            print("%-9s N=%-4d %.3f s %-8s %s\n    %s" % (
                name, n, wall, info["strategy"], cands,
                ", ".join("%s %.3f" % kv for kv in sorted(stages.items(), key=lambda kv: -kv[1]))),
                flush=True)
            for gap, before, after in gaps:
                print("      %6.1f ms  %.60s  ->  %.60s" % (1e3 * gap, before, after))
            plan.close()
    print("median plan %.3f s over %d plans" % (statistics.median(r["plan_s"] for r in rows),
                                                  len(rows)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
