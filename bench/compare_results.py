#!/usr/bin/env python3
"""Check spforge-bench result files (JSON) against issue 10's targets.

    bench/compare_results.py --floor 0.97 large-*.json
        every row's AUTO plan against cuBLAS of the row's own dtype and math
        mode: rows where cublas_same_over_spforge < FLOOR (or missing)
    bench/compare_results.py --baseline OLD.json... --current NEW.json... [--max-slowdown 0.03]
        the AUTO plan ("spforge") of each row of NEW against the same problem
        and dtype in OLD: rows more than MAX_SLOWDOWN slower, and the geomean

Rows are matched by problem name and dtype (files from before --dtype are
f32). Exit status 1 when a check fails, so a run script can stop on it.
"""
import argparse
import json
import math
import sys


def rows_of(paths):
    out = {}
    for path in paths:
        with open(path) as f:
            doc = json.load(f)
        for row in doc["rows"]:
            out[(row["problem"], row.get("dtype", "f32"))] = row
    return out


def time_us(row, competitor):
    r = row.get("results", {}).get(competitor)
    return r["us"] if r and r.get("state") == "ok" and r.get("us") else None


def auto_us(row):
    return time_us(row, "spforge")


def same_name(row):
    """cuBLAS of the row's precision; files from before --dtype hold f32 rows."""
    return row.get("cublas_same", "cublas_fp32")


def check_floor(rows, floor):
    bad = 0
    for (problem, dtype), row in rows.items():
        same, ours = time_us(row, same_name(row)), auto_us(row)
        ratio = same / ours if same and ours else None
        chose = row.get("plan", {}).get("strategy", "-")
        if ratio is None or ratio < floor:
            bad += 1
            same = same_name(row)
            print(f"below {floor}: {problem} {dtype}: {same}/spforge = "
                  f"{'missing' if ratio is None else f'{ratio:.3f}'} (AUTO chose {chose})")
    print(f"floor {floor}: {len(rows) - bad} of {len(rows)} rows pass")
    return bad == 0


def check_baseline(old, new, max_slowdown):
    bad, logs = 0, []
    for key, row in new.items():
        if key not in old:
            continue
        a, b = auto_us(old[key]), auto_us(row)
        if a is None or b is None:
            bad += 1
            print(f"missing time: {key[0]} {key[1]} (baseline {a}, current {b})")
            continue
        logs.append(math.log(b / a))
        if b > a * (1 + max_slowdown):
            bad += 1
            print(f"slower: {key[0]} {key[1]}: {a:.2f} -> {b:.2f} us ({b / a:.3f}x), "
                  f"AUTO chose {row.get('plan', {}).get('strategy', '-')}")
    matched = len(logs)
    geo = math.exp(sum(logs) / matched) if matched else float("nan")
    print(f"baseline: {matched} rows matched, geomean current/baseline {geo:.3f}, "
          f"{bad} rows more than {100 * max_slowdown:g} % slower or missing")
    return bad == 0 and matched > 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", help="result files for --floor")
    ap.add_argument("--floor", type=float, help="least cublas_same_over_spforge per row")
    ap.add_argument("--baseline", nargs="+", default=[], help="result files of the baseline")
    ap.add_argument("--current", nargs="+", default=[], help="result files to compare")
    ap.add_argument("--max-slowdown", type=float, default=0.03)
    args = ap.parse_args()
    ok = True
    if args.floor is not None:
        ok &= check_floor(rows_of(args.files + args.current), args.floor)
    if args.baseline:
        ok &= check_baseline(rows_of(args.baseline), rows_of(args.current), args.max_slowdown)
    if args.floor is None and not args.baseline:
        ap.error("nothing to check: give --floor and/or --baseline with --current")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
