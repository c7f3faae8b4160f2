#!/usr/bin/env python3
"""2:4 on the LLM shapes (issue 50's 2:4 target): spforge's plans against
the best dense and torch's own 2:4 path, side by side in one run. For each
shape (out × in) a random normal weight pruned to 2:4 by magnitude (the
two largest of every aligned group of four along K), fp16, and N rows of
X as a Linear layer is called (Y = X·Wᵀ, both row-major):
  - dense: torch's F.linear on the pruned weight (cuBLAS);
  - torch 2:4: F.linear on to_sparse_semi_structured(W) (cuSPARSELt);
  - spforge AUTO, and the structured strategy forced (and cusparselt,
    where the build has that strategy: a row says why where it has not).
Every time is the GPU's per call by graph replay with the weights cold
(spforge._timing: the L2 read through before every call, its time taken
off), and every output is checked against the float64 product.

    PYTHONPATH=python SPF_LIB=build/libspforge.so python3 scripts/bench_24.py --json out.json
"""

import argparse
import json
import sys
import time

SHAPES = {"llm-attn": (4096, 4096), "llm-up": (11008, 4096), "llm-down": (4096, 11008)}


def prune_24(torch, w):
    """w with all but the two largest |values| of each group of four
    consecutive columns zeroed."""
    groups = w.reshape(w.shape[0], -1, 4)
    keep = groups.abs().argsort(dim=-1, descending=True)[..., :2]
    mask = torch.zeros_like(groups, dtype=torch.bool).scatter_(-1, keep, True)
    return (groups * mask).reshape(w.shape)


def rel_err(torch, got, want):
    return float((got.double() - want).abs().max() / want.abs().max().clamp_min(1e-30))


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", default=",".join(SHAPES))
    p.add_argument("--ns", default="16,64,2048")
    p.add_argument("--json", help="write the rows here")
    p.add_argument("--tolerance", type=float, default=2e-2)
    args = p.parse_args(argv)
    import torch
    import torch.nn.functional as F
    import spforge
    from spforge import _timing
    torch.manual_seed(0)
    rows, failed = [], 0
    for name in args.shapes.split(","):
        m, k = SHAPES[name]
        w = prune_24(torch, torch.randn(m, k, device="cuda")).half()
        a = spforge.Matrix(w.float().cpu().numpy(), mask=(w != 0).cpu().numpy())
        try:
            from torch.sparse import to_sparse_semi_structured
            w24, why24 = to_sparse_semi_structured(w), None
        except Exception as e:  # noqa: BLE001 - reported in the row
            w24, why24 = None, "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:120])
        for n in (int(v) for v in args.ns.split(",")):
            x = torch.randn(n, k, device="cuda").half()
            want = x.double() @ w.double().t()
            row = {"shape": name, "m": m, "k": k, "n": n, "dtype": "f16", "weights": "cold"}

            def timed(key, fn, out):
                fn()
                torch.cuda.synchronize()
                row[key + "_err"] = rel_err(torch, out(), want)
                row[key + "_us"] = _timing.graph_time_us(fn, cold=True)

            y = torch.empty(n, m, dtype=torch.float16, device="cuda")
            timed("dense", lambda: torch.matmul(x, w.t(), out=y), lambda: y)
            if w24 is not None:
                try:
                    box = {}
                    timed("torch24", lambda: box.__setitem__("y", F.linear(x, w24)),
                          lambda: box["y"])
                except Exception as e:  # noqa: BLE001
                    row["torch24_failed"] = "%s: %s" % (type(e).__name__, str(e)[:120])
            else:
                row["torch24_failed"] = why24
            for s in ("auto", "structured", "cusparselt"):
                t0 = time.perf_counter()
                try:
                    plan = spforge.Plan(a, n, strategy=s, dtype="f16", b_layout="n_first",
                                        c_layout="n_first", cache=False, progress=False)
                except (spforge.Error, ValueError) as e:  # ValueError: a name not built
                    row[s + "_failed"] = str(e)[:160]
                    continue
                row[s + "_plan_s"] = time.perf_counter() - t0
                info = plan.info()
                row[s + "_kernel"] = "%s (%s)" % (info["strategy"], info["config"])
                c = torch.full((n, m), float("nan"), dtype=torch.float16, device="cuda")
                timed(s, lambda: plan.execute(x, c), lambda: c)
                plan.close()
            dense = [row[k_] for k_ in ("dense_us",) if k_ in row]
            row["best_dense_us"] = min(dense)
            for s in ("auto", "structured", "cusparselt", "torch24"):
                if s + "_us" in row:
                    row[s + "_speedup"] = row["best_dense_us"] / row[s + "_us"]
            bad = [key for key in row if key.endswith("_err") and row[key] > args.tolerance]
            row["ok"] = not bad
            failed += bool(bad)
            rows.append(row)
            print("%-9s N=%-5d dense %8.1f | torch 2:4 %s | auto %s [%s] | structured %s | "
                  "cusparselt %s%s" % (
                      name, n, row["dense_us"], fmt(row, "torch24"), fmt(row, "auto"),
                      row.get("auto_kernel", row.get("auto_failed", "")), fmt(row, "structured"),
                      fmt(row, "cusparselt"), "" if row["ok"] else "  ERROR " + ",".join(bad)),
                  flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "spforge": spforge.version(), "rows": rows}, f, indent=1)
    return 1 if failed else 0


def fmt(row, key):
    if key + "_us" not in row:
        return "-"
    return "%.1f us %.2fx" % (row[key + "_us"], row[key + "_speedup"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
