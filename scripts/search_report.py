#!/usr/bin/env python3
"""Summarize scripts/search-eval.sh output (issue 4 item 7).

    python3 scripts/search_report.py EVAL_DIR [--model models/rank_model.txt] [--csv OUT.csv]

Measured (from the runs): per problem the search's wall time with proxies and
without (--no-proxies: the rank model's top K compiled and timed), the
exhaustive oracle's wall time over the same space, the cost ratio, and the
loss of each pick against the oracle's best (all timed in the same process).

Replayed (from the oracle's per-configuration log, every configuration
timed): what each stage would keep. For a set of constraint thresholds, the
survivors and the best oracle time among them (the loss the constraints alone
cause), then the rank model's top K of those survivors scored from the model
file and the best oracle time among them (the loss of constraints + rank,
with the oracle's measurements standing in for evaluating the top K). The
replay uses the features the tuner logged (f_* columns), so it applies the
constraints exactly as src/plan/constraints.c does, balance floor included.
"""
import argparse
import csv
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_rank_model import parse_model, score  # noqa: E402

SM_COUNT = 132


def load_jsonl(path):
    out = {}
    if os.path.exists(path):
        for line in open(path):
            d = json.loads(line)
            out[d["name"]] = d["result"]
    return out


def load_oracle(path):
    rows = []
    for r in csv.DictReader(open(path)):
        if r["status"] == "ok":
            rows.append(r)
    return rows


def f(r, name):
    return float(r["f_" + name])


def survivors(rows, th_row, th_col, utilization=True):
    """constraints.c: register (forecast <= 255, block fits the register file),
    utilization (threads % 32, 2 * blocks >= SMs), balance with the floor."""
    keep = []
    for r in rows:
        regs = f(r, "registers")
        if regs > 255 or f(r, "threads") * (math.ceil(regs / 8) * 8) > 65536:
            continue
        if utilization and (int(f(r, "threads")) % 32 or 2 * f(r, "blocks") < SM_COUNT):
            continue
        keep.append(r)
    if not keep:
        return keep
    t_row = max(th_row, min(f(r, "cov_row") for r in keep))
    t_col = max(th_col, min(f(r, "waste_col") for r in keep))
    return [r for r in keep if f(r, "cov_row") <= t_row and f(r, "waste_col") <= t_col]


def best_us(rows):
    return min(float(r["kernel_us"]) for r in rows) if rows else math.inf


def top_k(rows, names, trees, k):
    def feats(r):
        return [float(r[n]) for n in names]
    scored = sorted(range(len(rows)), key=lambda i: (-score(trees, feats(rows[i])), i))
    return [rows[i] for i in scored[:k]]


def default_top_k(survivors):
    """search_default_top_k (src/gpu/search.h): 10, or 5 % of the survivors."""
    return max(10, (survivors * 5 + 99) // 100)


def proxy_finalists(search_csv, oracle_rows, oracle_best):
    """{F: loss of the best oracle time among the F fastest proxies} for a search's log."""
    real = {r["kernel"]: float(r["kernel_us"]) for r in oracle_rows}
    timed = [r for r in csv.DictReader(open(search_csv))
             if float(r.get("proxy_us") or 0) > 0 and r["kernel"] in real]
    timed.sort(key=lambda r: float(r["proxy_us"]))
    return {f: min(real[r["kernel"]] for r in timed[:f]) / oracle_best - 1
            for f in (1, 2, 3, 5, 8) if timed}


def pct(x):
    return "%.1f %%" % (100 * x)


def summary(label, values):
    if not values:
        return "%s: none" % label
    return "%s: mean %s, median %s, worst %s" % (
        label, pct(statistics.mean(values)), pct(statistics.median(values)), pct(max(values)))


def p95(values):
    v = sorted(values)
    return v[min(len(v) - 1, int(math.ceil(0.95 * len(v))) - 1)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("eval_dir")
    ap.add_argument("--model", default="models/rank_model.txt")
    ap.add_argument("--csv", help="write the per-problem table here")
    a = ap.parse_args()
    names, trees = parse_model(open(a.model).read(), a.model)
    searched = load_jsonl(os.path.join(a.eval_dir, "search.jsonl"))
    noproxy = load_jsonl(os.path.join(a.eval_dir, "search-noproxy.jsonl"))

    table, walls, ratios, ratios_cpu, loss_p, loss_r, loss_b = [], [], [], [], [], [], []
    finalists = {}
    replay = {}
    variants = [("paper (0.25 / 0.25)", 0.25, 0.25, True), ("no WASTE_col", 0.25, math.inf, True),
                ("no balance", math.inf, math.inf, True),
                ("no balance, no utilization", math.inf, math.inf, False)]
    for name, r in searched.items():
        e = r["exhaustive"]
        best = e["best"]["kernel_us"]
        np_r = noproxy.get(name)
        row = {"problem": name, "nnz": r["stats"]["nnz"], "n": r["n"], "space": r["space"],
               "space_count": r["counts"]["space"], "after_constraints": r["counts"]["balance"],
               "search_s": r["wall_s"], "oracle_s": e["wall_s"], "cost_ratio": e["cost_ratio"],
               "cost_ratio_cpu": e.get("cost_ratio_cpu", ""),
               "oracle_us": best, "pick_us": r["chosen"]["kernel_us"], "loss": e["loss"],
               "pick": r["chosen"]["kernel"], "oracle_pick": e["best"]["kernel"],
               "noproxy_s": np_r["wall_s"] if np_r else "",
               "noproxy_us": np_r["chosen"]["kernel_us"] if np_r else "",
               "noproxy_loss": np_r["chosen"]["kernel_us"] / best - 1 if np_r else ""}
        table.append(row)
        walls.append(r["wall_s"])
        ratios.append(e["cost_ratio"])
        if e.get("cost_ratio_cpu"):
            ratios_cpu.append(e["cost_ratio_cpu"])
        loss_p.append(e["loss"])
        if e.get("retimed"):  # spforge tune re-timed both picks side by side
            loss_b.append(e["loss_build_timings"])
        if np_r:
            loss_r.append(row["noproxy_loss"])
        oracle_csv = os.path.join(a.eval_dir, "oracle", name + ".csv")
        if os.path.exists(oracle_csv):
            rows = load_oracle(oracle_csv)
            # The AUTO oracle may keep the generic kernel: the loss of a
            # replayed pick is against the best unrolled configuration.
            ob = best_us(rows)
            for label, tr, tc, ut in variants:
                s = survivors(rows, tr, tc, ut)
                rep = replay.setdefault(label, {"keep": [], "loss": {}, "k": {}})
                rep["keep"].append(len(s) / len(rows))
                rep["loss"].setdefault("constraints", []).append(best_us(s) / ob - 1)
                for k in (1, 3, 5, 10, "default"):
                    kk = default_top_k(len(s)) if k == "default" else k
                    rep["loss"].setdefault("top-%s" % k, []).append(
                        best_us(top_k(s, names, trees, kk)) / ob - 1)
            search_csv = os.path.join(a.eval_dir, "searchlog", name + ".csv")
            if os.path.exists(search_csv):
                for f, loss in proxy_finalists(search_csv, rows, ob).items():
                    finalists.setdefault(f, []).append(loss)

    print("measured: %d problems (search with proxies, the oracle of the same space)" % len(table))
    print("  search wall: median %.2f s, p95 %.2f s, max %.2f s" %
          (statistics.median(walls), p95(walls), max(walls)))
    print("  cost ratio oracle / search: median %.1fx, min %.1fx, max %.1fx" %
          (statistics.median(ratios), min(ratios), max(ratios)))
    if ratios_cpu:
        print("  cost ratio in CPU seconds (ptxas included): median %.1fx, min %.1fx, max %.1fx" %
              (statistics.median(ratios_cpu), min(ratios_cpu), max(ratios_cpu)))
    print("  " + summary("loss, proxies (default)", loss_p))
    if loss_b:
        print("  " + summary("  the same from the builds' own timings (%d retimed)" % len(loss_b),
                             loss_b))
    print("  " + summary("loss, top-K real kernels (--no-proxies)", loss_r))
    if loss_r:
        nw = [t["noproxy_s"] for t in table if t["noproxy_s"] != ""]
        print("  --no-proxies search wall: median %.2f s, p95 %.2f s" %
              (statistics.median(nw), p95(nw)))
    print("replayed from the oracle logs (loss against the best unrolled configuration):")
    for label, rep in replay.items():
        print("  constraints %-28s keep %s of the space on average" %
              (label, pct(statistics.mean(rep["keep"]))))
        for stage, values in rep["loss"].items():
            print("    " + summary("%-12s" % stage, values))
    if finalists:
        print("replayed from the searches' logs (proxy times of the top K) and the oracle's real "
              "times:")
        for f, values in sorted(finalists.items()):
            print("    " + summary("best of the %d fastest proxies" % f, values))
    if a.csv:
        with open(a.csv, "w", newline="") as out:
            w = csv.DictWriter(out, fieldnames=list(table[0].keys()))
            w.writeheader()
            w.writerows(table)


if __name__ == "__main__":
    main()
