#!/usr/bin/env bash
# Run `spforge stat FILE` and `spforge run FILE --n 64` on every .smtx and
# .mtx file of the extracted dev data set (data/, filled by
# scripts/extract-data.sh), report each failure with its message, and print
# the number of files, the failures and the total wall time. Exits 1 if any
# command failed, 77 if there is no data to sweep.
#
#   scripts/sweep-data.sh [--every K]   # K > 1: only every K-th file (a quick subset)
# The binary is $SPF_CLI, else build/spforge.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cli=${SPF_CLI:-$root/build/spforge}
every=1
if [ "${1:-}" = "--every" ]; then
  every=${2:?--every needs a number}
fi
if [ ! -x "$cli" ]; then
  echo "sweep-data: no spforge binary at $cli (build first, or set SPF_CLI)" >&2
  exit 1
fi
bash "$root/scripts/extract-data.sh" >&2
data=${SPF_DATA_DIR:-$root/data}
if [ ! -d "$data" ]; then
  echo "SKIP: no data folder at $data (../shared/data absent)"
  exit 77
fi

mapfile -d '' files < <(find "$data" -type f \( -name '*.smtx' -o -name '*.mtx' \) -print0 | sort -z)
if [ "${#files[@]}" -eq 0 ]; then
  echo "SKIP: no .smtx or .mtx files under $data"
  exit 77
fi

start=$(date +%s.%N)
count=0
failed=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for i in "${!files[@]}"; do
  [ $((i % every)) -eq 0 ] || continue
  f=${files[$i]}
  count=$((count + 1))
  for cmd in stat run; do
    if [ "$cmd" = stat ]; then args=(stat "$f"); else args=(run "$f" --n 64); fi
    if ! "$cli" "${args[@]}" >"$log" 2>&1; then
      failed=$((failed + 1))
      echo "FAILED: spforge ${args[*]}"
      sed 's/^/    /' "$log" | tail -5
    fi
  done
done
end=$(date +%s.%N)
smtx=$(printf '%s\n' "${files[@]}" | grep -c '\.smtx$')
printf 'sweep: %d of %d files (%d .smtx, %d .mtx in data/), %d commands, %d failed, %.1f s wall on %d cores\n' \
  "$count" "${#files[@]}" "$smtx" $((${#files[@]} - smtx)) $((2 * count)) "$failed" \
  "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')" "$(nproc)"
[ "$failed" -eq 0 ]
