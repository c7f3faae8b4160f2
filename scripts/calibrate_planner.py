#!/usr/bin/env python3
"""The data the planner's calibration (src/plan/calibration.c) is fitted on:
for pruned layers of the LLM and BERT shapes (magnitude of a random normal
weight, fp16, Y = X·Wᵀ layouts as SparseLinear plans them) and for DLMC
matrices (f32 under TF32 and fp16, the bench's layouts), every strategy
forced in turn (plan cache off, self-check on), its roofline estimate
(spf_plan_info's candidate) beside the GPU's time of the plan it built,
weights cold, by graph replay (spforge._timing, the planner's own rule).

    PYTHONPATH=python SPF_LIB=build/libspforge.so \\
        python3 scripts/calibrate_planner.py --out bench/results/plan-time/calibration.csv

Then scripts/fit_calibration.py prints the table calibration.c holds.
"""

import argparse
import csv
import glob
import os
import sys
import time

SHAPES = {"bert-qkvo": (768, 768), "bert-up": (3072, 768), "bert-down": (768, 3072),
          "llm-attn": (4096, 4096), "llm-up": (11008, 4096), "llm-down": (4096, 11008)}
STRATEGIES = ("dense", "generic", "unrolled", "tc", "tcfrag", "panel", "structured")
FIELDS = ("problem", "m", "k", "nnz", "n", "dtype", "math", "layout", "strategy", "estimate_us",
          "measured_us", "plan_s", "kernel")


def pruned(rng, m, k, sparsity):
    import numpy
    import spforge
    w = rng.standard_normal((m, k), dtype=numpy.float32)
    keep = numpy.abs(w) > numpy.quantile(numpy.abs(w), sparsity)
    return spforge.Matrix(w, mask=keep)


def problems(args, rng):
    """(name, matrix, n, dtype, math, layout) for every problem of the set."""
    import spforge
    for name in args.shapes.split(","):
        m, k = SHAPES[name]
        for s in (float(v) for v in args.sparsities.split(",")):
            a = pruned(rng, m, k, s)
            for n in (int(v) for v in args.ns.split(",")):
                yield "%s-s%.2f" % (name, s), a, n, "f16", "default", "n_first"
    files = sorted(glob.glob(os.path.join(args.dlmc, "**", "*.smtx"), recursive=True))
    for path in files[::max(1, len(files) // args.dlmc_count)][:args.dlmc_count]:
        a = spforge.Matrix.read(path)
        for n in (int(v) for v in args.dlmc_ns.split(",")):
            yield os.path.relpath(path, args.dlmc), a, n, "f32", "tf32", "n_last"
            yield os.path.relpath(path, args.dlmc), a, n, "f16", "default", "n_last"


def measure(plan, m, k, n, dtype, layout):
    import torch
    from spforge import _timing
    tdtype = torch.float16 if dtype == "f16" else torch.float32
    b_shape, c_shape = ((n, k), (n, m)) if layout == "n_first" else ((k, n), (m, n))
    b = torch.randn(b_shape, dtype=tdtype, device="cuda")
    c = torch.full(c_shape, float("nan"), dtype=tdtype, device="cuda")
    # the tensors, not their pointers: execute then runs on torch's current
    # stream, the one graph_time_us captures
    us = _timing.graph_time_us(lambda: plan.execute(b, c), cold=True)
    if not bool(torch.isfinite(c).all()):
        raise RuntimeError("the timed launches left C unwritten: they were not the plan's")
    return us


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="CSV to write (one row per problem and strategy)")
    p.add_argument("--shapes", default=",".join(SHAPES))
    p.add_argument("--sparsities", default="0.5,0.7,0.9")
    p.add_argument("--ns", default="1,16,64,256")
    p.add_argument("--dlmc", default="data/dlmc", help="DLMC folder (.smtx files under it)")
    p.add_argument("--dlmc-count", type=int, default=6)
    p.add_argument("--dlmc-ns", default="64,256")
    p.add_argument("--strategies", default=",".join(STRATEGIES))
    p.add_argument("--budget-s", type=float, default=1e9, help="stop starting problems after this")
    args = p.parse_args(argv)
    import numpy
    import spforge
    rng = numpy.random.default_rng(0)
    t_start = time.perf_counter()
    with open(args.out, "w", newline="") as f:
        out = csv.DictWriter(f, FIELDS)
        out.writeheader()
        for name, a, n, dtype, math, layout in problems(args, rng):
            if time.perf_counter() - t_start > args.budget_s:
                print("budget spent: stopping", flush=True)
                break
            m, k = a.shape
            for s in args.strategies.split(","):
                t0 = time.perf_counter()
                try:
                    plan = spforge.Plan(a, n, strategy=s, dtype=dtype, math=math, b_layout=layout,
                                        c_layout=layout, cache=False, progress=False)
                except spforge.Error as e:
                    if "not supported" not in str(e) and "refus" not in str(e):
                        print("%s N=%d %s: %s" % (name, n, s, str(e)[:120]), flush=True)
                    continue
                plan_s = time.perf_counter() - t0
                info = plan.info()
                est = [c["estimate_us"] for c in info["candidates"] if c["strategy"] == s]
                us = measure(plan, m, k, n, dtype, layout)
                plan.close()
                row = {"problem": name, "m": m, "k": k, "nnz": a.nnz, "n": n, "dtype": dtype,
                       "math": math, "layout": layout, "strategy": s,
                       "estimate_us": "%.3f" % est[0] if est else "",
                       "measured_us": "%.3f" % us, "plan_s": "%.3f" % plan_s,
                       "kernel": info["kernel_name"]}
                out.writerow(row)
                f.flush()
                print("%-28s N=%-4d %-4s %-10s est %8.2f  meas %8.2f  plan %.2f s" % (
                    name, n, dtype, s, est[0] if est else -1, us, plan_s), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
