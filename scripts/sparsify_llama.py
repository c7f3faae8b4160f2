#!/usr/bin/env python3
"""How long sparsify takes on a Llama-7B-shaped model (issue 50's plan-time
target): 32 blocks of nn.Linear layers with the 7B shapes (q, k, v, o
4096×4096; gate, up 11008×4096; down 4096×11008; 224 layers, fp16,
random normal weights, no bias), every layer pruned by magnitude to
--sparsity, then spforge.torch.sparsify(model, ns=...) timed twice: with
an empty plan cache, and again on a fresh copy of the model from the cache
the first run filled. Writes the plan-time summary rows (--summary: the
file's rows of this model on this device are replaced) and prints them.

    PYTHONPATH=python SPF_LIB=build/libspforge.so python3 scripts/sparsify_llama.py \\
        --summary bench/results/plan-time/summary.json
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

SHAPES = (("q", 4096, 4096), ("k", 4096, 4096), ("v", 4096, 4096), ("o", 4096, 4096),
          ("gate", 11008, 4096), ("up", 11008, 4096), ("down", 4096, 11008))


def build(torch, blocks, sparsity, seed):
    import spforge.torch as st
    torch.manual_seed(seed)
    model = torch.nn.Module()
    model.blocks = torch.nn.ModuleList()
    for _ in range(blocks):
        block = torch.nn.Module()
        for name, out_f, in_f in SHAPES:
            lin = torch.nn.Linear(in_f, out_f, bias=False, device="cuda", dtype=torch.float16)
            setattr(block, name, lin)
        model.blocks.append(block)
    st.magnitude_prune(model, sparsity, min_size=0)
    return model


def commit():
    env = os.environ.get("SPF_GIT_COMMIT")
    if env:
        return env
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--blocks", type=int, default=32)
    p.add_argument("--sparsity", type=float, default=0.7)
    p.add_argument("--ns", default="1,16,64")
    p.add_argument("--summary", help="plan-time summary.json to update")
    p.add_argument("--json", help="every plan's time and strategy")
    args = p.parse_args(argv)
    import torch
    import spforge.torch as st
    ns = tuple(int(v) for v in args.ns.split(","))
    model_name = "llama-7b-shaped, %d blocks, s=%.2f" % (args.blocks, args.sparsity)
    rows, plans = [], []
    with tempfile.TemporaryDirectory() as cache:
        os.environ["SPFORGE_CACHE_DIR"] = cache  # read per plan: an empty cache, then this one
        for run in ("empty cache", "from cache"):
            t0 = time.perf_counter()
            model = build(torch, args.blocks, args.sparsity, 0)
            torch.cuda.synchronize()
            build_s = time.perf_counter() - t0
            print("%s: model built and pruned in %.1f s" % (run, build_s), flush=True)
            report = st.sparsify(model, None, min_size=0, ns=ns, progress=False)
            layers = [m for m in model.modules() if isinstance(m, st.SparseLinear)]
            made = [q for layer in layers for q in layer.plans()]
            cached = sum(bool(q["from_cache"]) for q in made)
            median = statistics.median(q["plan_s"] for q in made) if made else None
            rows.append({"model": model_name, "layers": len(layers), "ns": list(ns),
                         "plan_s_median": median, "sparsify_s": report.seconds,
                         "from_cache": run == "from cache", "plans": len(made),
                         "plans_from_cache": cached, "commit": commit(),
                         "device": torch.cuda.get_device_name()})
            strategies = {}
            for q in made:
                strategies[q["strategy"]] = strategies.get(q["strategy"], 0) + 1
            print("%s: sparsify %.1f s, %d plans (%d from the cache), median %.3f s a plan; %s"
                  % (run, report.seconds, len(made), cached, median or 0, strategies), flush=True)
            if run == "empty cache":
                plans = [{"n": q["n"], "plan_s": q["plan_s"], "strategy": q["strategy"]}
                         for q in made]
            del model, layers, made
            torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "plans": plans}, f, indent=1)
    if args.summary:
        old = []
        if os.path.exists(args.summary):
            with open(args.summary) as f:
                old = [r for r in json.load(f)
                       if (r["model"], r["device"]) != (model_name, rows[0]["device"])]
        with open(args.summary, "w") as f:
            json.dump(old + rows, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
