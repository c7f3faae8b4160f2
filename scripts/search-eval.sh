#!/usr/bin/env bash
# Measure the low-cost search against the exhaustive oracle of the same
# space (issue 4 item 7), one `spforge tune --exhaustive --json` per problem,
# and a second search with --no-proxies (the rank model alone). Problems run
# in the order listed until the time budget would be overrun; every result
# is appended as it comes, so a cut-off run keeps what it measured.
#
#   scripts/search-eval.sh BUILD_DIR OUT_DIR LIST [BUDGET_S]
#
# LIST: one problem per line, "NAME FILE N SPACE" (SPACE compact or full);
# FILE "gen:MxK:SPARSITY" makes a uniform matrix with spforge gen (seed 1,
# as spforge-bench does). Writes OUT_DIR/search.jsonl (the search with
# proxies and the oracle), OUT_DIR/search-noproxy.jsonl, the oracle's
# per-configuration log OUT_DIR/oracle/NAME.csv, the search's own log (each
# candidate's proxy time; the finalists' real times) OUT_DIR/searchlog/NAME.csv
# and the stderr of each run in OUT_DIR/log/. scripts/search_report.py summarizes them.
# SPF_TUNE_THREADS: host threads of each tune (compiling, mostly; default 0:
# all cores), for runs that share a host's cores (scripts/sharded_eval.py).
set -uo pipefail
build=${1:?build folder} out=${2:?output folder} list=${3:?problem list}
budget=${4:-480}
cli=$build/spforge
start=$(date +%s)
mkdir -p "$out/oracle" "$out/searchlog" "$out/log" "$out/inputs"
threads=${SPF_TUNE_THREADS:-0}
export SPFORGE_CACHE_DIR=off
while read -r name file n space; do
  case "$name" in '' | '#'*) continue ;; esac
  used=$(($(date +%s) - start))
  if [ "$used" -ge "$budget" ]; then
    echo "search-eval: budget of ${budget}s spent; not run: $name and after" >&2
    break
  fi
  if [[ "$file" == gen:* ]]; then
    IFS=: read -r _ shape sparsity <<<"$file"
    file=$out/inputs/$name.smtx
    "$cli" gen "$file" --rows "${shape%x*}" --cols "${shape#*x}" --sparsity "$sparsity" \
      --seed 1 >/dev/null || { echo "search-eval: gen $name failed" >&2; continue; }
  fi
  left=$((budget - used))
  echo "search-eval: $name (N = $n, $space; ${left}s left)" >&2
  timeout "$left" "$cli" tune "$file" --n "$n" --space "$space" --exhaustive --no-cache --json --threads "$threads" \
    --log "$out/searchlog/$name.csv" --oracle-log "$out/oracle/$name.csv" \
    >"$out/log/$name.json" 2>"$out/log/$name.err" &&
    { printf '{"name":"%s","result":' "$name"; tr -d '\n' <"$out/log/$name.json"; echo "}"; } \
      >>"$out/search.jsonl" ||
    echo "search-eval: $name failed or ran out of time (see log/$name.err)" >&2
  timeout 120 "$cli" tune "$file" --n "$n" --space "$space" --no-proxies --no-cache --json --threads "$threads" \
    >"$out/log/$name-noproxy.json" 2>"$out/log/$name-noproxy.err" &&
    { printf '{"name":"%s","result":' "$name"; tr -d '\n' <"$out/log/$name-noproxy.json"; echo "}"; } \
      >>"$out/search-noproxy.jsonl"
done <"$list"
echo "search-eval: done in $(($(date +%s) - start))s" >&2
