#!/usr/bin/env python3
"""bench/results/e2e/summary.json from the results of scripts/e2e_bert.py:
one row per model, batch, N, sparsity and timing (CUDA graph, eager), with
spforge's time, the best dense time of the same run and which dense that
was. The weights are cold in every row: each model's layers stream more
weights a step than the L2 holds (BERT-base 170 MB, the Llama-7B MLP
block 270 MB in fp16). Rows already in the summary for other models are kept; those of the
models this run measured are replaced.

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
        for timing, ours, theirs in (("graph", "sparse_graph_ms", "dense_graph_ms"),
                                     ("eager", "sparse_ms", "dense_ms")):
            if r.get(ours) is None or r.get(theirs) is None:
                continue
            yield dict(common, model=BERT_MODEL % r["seq"], batch=r["batch"], n=r["n"],
                       sparsity=r["sparsity"], timing=timing, spforge_us=1e3 * r[ours],
                       best_dense_us=1e3 * r[theirs],
                       best_dense="torch F.linear (%s)" % ("CUDA graph" if timing == "graph"
                                                           else "eager"))
    for r in results["mlp"]:
        # n_plans="auto", SparseLinear's default: N up to 64 runs the plan of
        # the next power of two
        for timing, ours, theirs in (("graph", "pow2_graph_ms", "dense_graph_ms"),
                                     ("eager", "pow2_ms", "dense_ms")):
            if r.get(ours) is None or r.get(theirs) is None:
                continue
            yield dict(common, model=MLP_MODEL, batch=r["n"], n=r["n"],
                       sparsity=r["sparsity"], timing=timing, spforge_us=1e3 * r[ours],
                       best_dense_us=1e3 * r[theirs],
                       best_dense="torch F.linear (%s)" % ("CUDA graph" if timing == "graph"
                                                           else "eager"))


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    with open(argv[0]) as f:
        new = [{k: r[k] for k in ("model", "batch", "n", "sparsity", "dtype", "weights", "timing",
                                  "spforge_us", "best_dense_us", "best_dense", "commit", "device")}
               for r in rows_of(json.load(f))]
    old = []
    if os.path.exists(argv[1]):
        with open(argv[1]) as f:
            old = json.load(f)
    models = {r["model"] for r in new}
    rows = [r for r in old if r["model"] not in models] + new
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
