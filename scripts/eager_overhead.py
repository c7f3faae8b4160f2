#!/usr/bin/env python3
"""Eager per-call cost of SparseLinear against torch's nn.Linear on one
pruned layer (issue 50, item 6): the host's time per call (perf_counter
around each call, no synchronization: what Python and the binding spend
before the kernel is queued), the wall time per call of a loop of calls
(synchronized at the end: what a user's eager step sees), and the
kernel's own time (a CUDA graph of the call, weights cold by
src/gpu/timing.c's rule, spforge._timing). Rows: the layer with its AUTO
plan, with a plan forced to a sparse strategy, and with a dense plan.

    PYTHONPATH=python SPF_LIB=build/libspforge.so python3 scripts/eager_overhead.py --json out.json
"""

import argparse
import json
import statistics
import sys
import time


def per_call(torch, fn, calls):
    """(host µs median per call, wall µs per call of the loop)."""
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    host = []
    t0 = time.perf_counter()
    for _ in range(calls):
        t = time.perf_counter()
        fn()
        host.append(time.perf_counter() - t)
    torch.cuda.synchronize()
    wall = (time.perf_counter() - t0) / calls
    return 1e6 * statistics.median(host), 1e6 * wall


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--m", type=int, default=4096)
    p.add_argument("--k", type=int, default=4096)
    p.add_argument("--ns", default="1,16")
    p.add_argument("--sparsity", type=float, default=0.7)
    p.add_argument("--calls", type=int, default=3000)
    p.add_argument("--json", default=None, help="write the rows here")
    args = p.parse_args(argv)
    try:
        import torch
        import spforge.torch as st
        from spforge._timing import graph_time_us
    except ImportError as e:
        print("skipped: %s" % e)
        return 77
    if not torch.cuda.is_available():
        print("skipped: no CUDA device")
        return 77
    torch.manual_seed(0)
    lin = torch.nn.Linear(args.k, args.m, bias=False).cuda().half()
    with torch.no_grad():
        mask = torch.from_numpy(st.magnitude_mask(lin.weight, args.sparsity))
        lin.weight.mul_(mask.to(device="cuda", dtype=lin.weight.dtype))
    rows = []
    for n in (int(v) for v in args.ns.split(",")):
        x = torch.randn(n, args.k, device="cuda", dtype=torch.half)
        with torch.inference_mode():
            host, wall = per_call(torch, lambda: lin(x), args.calls)
            kernel = graph_time_us(lambda: lin(x))
            rows.append({"n": n, "layer": "nn.Linear", "host_us": host, "wall_us": wall,
                         "kernel_us": kernel})
            for name, options in (("auto", {}), ("dense", {"strategy": "dense"}),
                                  ("generic", {"strategy": "generic"})):
                sl = st.SparseLinear.from_linear(lin, plan_options=options)
                want = lin(x)
                got = sl(x)
                err = float((got.float() - want.float()).abs().max() / want.float().abs().max())
                host, wall = per_call(torch, lambda: sl(x), args.calls)
                kernel = graph_time_us(lambda: sl(x))
                plan = sl.plans()[0]
                rows.append({"n": n, "layer": "SparseLinear " + name,
                             "strategy": plan["strategy"], "host_us": host, "wall_us": wall,
                             "kernel_us": kernel, "max_rel_err": err})
                sl.release_plans()
    for r in rows:
        print("N=%-3d %-22s %-8s host %5.1f us/call, wall %6.1f us/call, kernel %6.1f us%s"
              % (r["n"], r["layer"], r.get("strategy", "-"), r["host_us"], r["wall_us"],
                 r["kernel_us"], "  err %.1e" % r["max_rel_err"] if "max_rel_err" in r else ""))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "args": vars(args), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
