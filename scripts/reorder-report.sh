#!/usr/bin/env bash
# LO-SpMM §4.2 Algorithm 1 row reordering on the DLMC dev set, on the CPU:
# per file and m1 the A_tiles' max and mean non-empty columns (nnc) and
# COV_row in row order and after reordering (reorder_rows: Algorithm 1,
# or the identity where that would raise max or mean nnc), and the reorder
# time, guard included (`spforge stat FILE --tiles M1 --json`). A case
# improves when max or mean nnc falls and neither rises, ties when both
# stay (the identity kept, or Algorithm 1 matched it), and is worse when
# either rises. Writes the CSV and prints it with the geometric-mean ratios
# after/before. The kernel-time effect needs a GPU and is not measured here.
#
#   bash scripts/reorder-report.sh [BUILD_DIR]   (default build/)
#
# Environment:
#   OUT_CSV      the CSV to write (default bench/results/reorder-dlmc-cpu.csv)
#   SPF_DATA_DIR the extracted data folder (default data/; scripts/extract-data.sh)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
cli=$build/spforge
data=${SPF_DATA_DIR:-$root/data}
csv=${OUT_CSV:-$root/bench/results/reorder-dlmc-cpu.csv}
[ -x "$cli" ] || { echo "reorder-report: no $cli (build first)" >&2; exit 1; }
[ -d "$data/dlmc" ] || { echo "reorder-report: no $data/dlmc (run scripts/extract-data.sh)" >&2; exit 1; }

tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
for s in 0.9 0.95; do
    for f in "$data"/dlmc/*/magnitude_pruning/$s/*.smtx; do
        for m1 in 8 16 32; do
            printf '%s\t%s\t' "${f#"$data"/}" "$m1" >>"$tmp"
            "$cli" stat "$f" --tiles "$m1" --json >>"$tmp"
        done
    done
done

mkdir -p "$(dirname "$csv")"
python3 - "$tmp" "$csv" <<'PY'
import csv, json, math, sys
rows = []
for line in open(sys.argv[1]):
    path, m1, text = line.rstrip("\n").split("\t", 2)
    t = json.loads(text)["tiles"]
    i, r = t["identity"], t["reordered"]
    rows.append([path, int(m1), i["max_nnc"], r["max_nnc"], i["mean_nnc"], r["mean_nnc"],
                 i["cov_row"], r["cov_row"], t["reorder_ms"]])
with open(sys.argv[2], "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["file", "m1", "max_nnc_before", "max_nnc_after", "mean_nnc_before",
                "mean_nnc_after", "cov_row_before", "cov_row_after", "reorder_ms"])
    for r in rows:
        w.writerow(r[:4] + ["%.3f" % r[4], "%.3f" % r[5], "%.4f" % r[6], "%.4f" % r[7],
                            "%.2f" % r[8]])

def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))

print("%d rows written to %s" % (len(rows), sys.argv[2]))
print("geomean after/before (lower is better):")
for label, sel in [("all", lambda r: True)] + [
        ("s%s m1 %d" % (s, m), lambda r, s=s, m=m: "/%s/" % s in r[0] and r[1] == m)
        for s in ("0.9", "0.95") for m in (8, 16, 32)]:
    g = [r for r in rows if sel(r)]
    worse = sum(1 for r in g if r[3] > r[2] or r[5] > r[4])
    tie = sum(1 for r in g if r[3] == r[2] and r[5] == r[4])
    print("  %-12s n %3d  max nnc %.3f  mean nnc %.3f  COV_row %.3f  improve %d / tie %d / worse %d"
          % (label, len(g), geomean([r[3] / r[2] for r in g]), geomean([r[5] / r[4] for r in g]),
             geomean([max(r[7], 1e-9) / max(r[6], 1e-9) for r in g]), len(g) - tie - worse, tie,
             worse))
print("reorder ms: max %.1f (%s, m1 %d)" % max((r[8], r[0], r[1]) for r in rows))
PY
