#!/usr/bin/env python3
"""bench/results/e2e/summary.json from the results of scripts/e2e_bert.py:
one row per model, batch, N, sparsity and timing (CUDA graph, eager), with
spforge's time, the best dense time of the same run and which dense that
was: torch eager (F.linear), or torch.compile of the dense model where the
run timed it, each eager or replayed in a CUDA graph as the row says. The weights are cold in every row: each model's layers stream more
weights a step than the L2 holds (BERT-base 170 MB, the Llama-7B MLP
block 270 MB in fp16). Rows already in the summary for other models or
devices are kept; those of the models this run measured on its device are
replaced.

    python3 scripts/e2e_summary.py RESULTS/e2e_bert.json bench/results/e2e/summary.json
"""

import json
import os
import sys

BERT_MODEL = "bert-base (seq %d)"
MLP_MODEL = "llama-7b mlp block (decode)"


def rows_of(results):
    env = results["environment"]
    common = {"dtype": env["args"].get("dtype") or "float16", "weights": "cold",
              "commit": env.get("commit"), "device": env.get("gpu", "cpu")}
    for r in results["bert"]:
        yield from timed_rows(common, r, BERT_MODEL % r["seq"], r["batch"], "sparse_ms",
                              "sparse_graph_ms")
    for r in results["mlp"]:
        # n_plans="auto", SparseLinear's default: N up to 64 runs the plan of
        # the next power of two
        yield from timed_rows(common, r, MLP_MODEL, r["n"], "pow2_ms", "pow2_graph_ms")


DENSE_NAMES = {"dense_ms": "torch F.linear (eager)", "dense_graph_ms": "torch F.linear (CUDA graph)",
               "compile_ms": "torch.compile (eager)",
               "compile_graph_ms": "torch.compile (CUDA graph)"}


def timed_rows(common, r, model, batch, eager_key, graph_key):
    """spforge's best against the best dense, eager and in a graph: each
    the faster of torch as is and torch.compile, where the run timed both."""
    for timing, ours, theirs in (("graph", (graph_key, "sparse_compile_graph_ms"),
                                  ("dense_graph_ms", "compile_graph_ms")),
                                 ("eager", (eager_key, "sparse_compile_ms"),
                                  ("dense_ms", "compile_ms"))):
        dense = [(r[k], k) for k in theirs if r.get(k)]
        sparse = [(r[k], k) for k in ours if r.get(k)]
        if not sparse or not dense:
            continue
        ms, key = min(dense)
        us, how = min(sparse)
        yield dict(common, model=model, batch=batch, n=r["n"], sparsity=r["sparsity"],
                   timing=timing, spforge_us=1e3 * us, best_dense_us=1e3 * ms,
                   best_dense=DENSE_NAMES[key],
                   spforge="torch.compile" if how.startswith("sparse_compile") else "as is")


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    with open(argv[0]) as f:
        new = [{k: r[k] for k in ("model", "batch", "n", "sparsity", "dtype", "weights", "timing",
                                  "spforge_us", "best_dense_us", "best_dense", "commit", "device")
                if k in r} | {"spforge": r.get("spforge", "as is")}
               for r in rows_of(json.load(f))]
    old = []
    if os.path.exists(argv[1]):
        with open(argv[1]) as f:
            old = json.load(f)
    measured = {(r["model"], r["device"]) for r in new}
    rows = [r for r in old if (r["model"], r["device"]) not in measured] + new
    with open(argv[1], "w") as f:
        json.dump(rows, f, indent=1)
        f.write("\n")
    for r in new:
        print("%-28s batch %-3d N=%-5d s=%.2f %-5s spforge %9.1f us  dense %9.1f us  %.2fx"
              % (r["model"], r["batch"], r["n"], r["sparsity"], r["timing"], r["spforge_us"],
                 r["best_dense_us"], r["best_dense_us"] / r["spforge_us"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
