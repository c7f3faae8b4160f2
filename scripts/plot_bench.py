#!/usr/bin/env python3
"""Speedup plot of a spforge-bench result file (bench/results/*.json).

For every row (a problem in one precision of --dtype): the speedup of
spforge (the AUTO plan) over cuBLAS of the row's own dtype and math mode
(the row's "cublas_same"), and of spforge and the generic kernel over
cuSPARSE (best algorithm) and over cuBLAS fp32, as grouped bars on a log
axis, geomeans in the legend; 1x is marked. Rows where a competitor failed
its check or did not run have no bar (a failed row is never plotted as a
time). Files from before --dtype (no "dtype" field) are f32 rows.

    python3 scripts/plot_bench.py bench/results/sparsert20-nvidia-h200-20261122.json
    python3 scripts/plot_bench.py a.json b.json -o speedups.png

Writes <input>.png beside each input unless -o names one output for all.
Needs matplotlib (present on the GPU host).
"""
import argparse
import json
import math
import os
import sys

SAME = "cublas_same"  # stands for the row's own cuBLAS competitor
SERIES = [  # (label, numerator competitor, denominator competitor)
    ("spforge vs cuBLAS same dtype", SAME, "spforge"),
    ("spforge vs cuSPARSE", "cusparse", "spforge"),
    ("spforge vs cuBLAS fp32", "cublas_fp32", "spforge"),
    ("generic vs cuSPARSE", "cusparse", "spforge_generic"),
    ("generic vs cuBLAS fp32", "cublas_fp32", "spforge_generic"),
]


def time_of(row, name):
    if name == SAME:
        name = row.get("cublas_same", "cublas_fp32")
    r = row.get("results", {}).get(name)
    if not r or r.get("state") != "ok" or not r.get("us"):
        return None
    return r["us"]


def speedups(rows):
    out = {label: [] for label, _, _ in SERIES}
    for row in rows:
        for label, num, den in SERIES:
            a, b = time_of(row, num), time_of(row, den)
            out[label].append(a / b if a and b else None)
    return out


def geomean(values):
    vals = [v for v in values if v]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for doc in results for r in doc["rows"]]
    if not rows:
        print(f"plot_bench: no rows for {path}", file=sys.stderr)
        return
    s = speedups(rows)
    series = [(label, s[label]) for label, _, _ in SERIES if any(s[label])]
    width = 0.8 / max(len(series), 1)
    fig, ax = plt.subplots(figsize=(max(8, 0.45 * len(rows) + 3), 6))
    for i, (label, vals) in enumerate(series):
        xs = [j + (i - (len(series) - 1) / 2) * width for j in range(len(rows))]
        g = geomean(vals)
        ax.bar(xs, [v if v else 0 for v in vals], width,
               label=f"{label} (geomean {g:.2f}x)" if g else label)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_ylabel("speedup (competitor time / our time)")
    ax.set_xticks(range(len(rows)))
    dtypes = {r.get("dtype", "f32") for r in rows}
    labels = [r["problem"] + (f" {r.get('dtype', 'f32')}" if len(dtypes) > 1 else "") for r in rows]
    ax.set_xticklabels(labels, rotation=75, ha="right", fontsize=7)
    doc = results[0]
    sets = ", ".join(sorted({d["set"] for d in results}))
    ax.set_title(f"spforge-bench {sets} ({', '.join(sorted(dtypes))}) on {doc['device']} "
                 f"({doc['date'][:10]}, commit {doc['commit']})")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"wrote {path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("inputs", nargs="+", help="spforge-bench JSON result files")
    ap.add_argument("-o", "--output", help="one PNG for all inputs")
    args = ap.parse_args()
    docs = []
    for p in args.inputs:
        with open(p) as f:
            docs.append(json.load(f))
    if args.output:
        plot(docs, args.output)
    else:
        for p, d in zip(args.inputs, docs):
            plot([d], os.path.splitext(p)[0] + ".png")


if __name__ == "__main__":
    main()
