#!/usr/bin/env bash
# The libFuzzer targets of tests/fuzz (README there):
#
#   scripts/fuzz.sh build                 configure and build them in build-fuzz
#   scripts/fuzz.sh run TARGET SECONDS [libFuzzer flags...]
#                                         fuzz one target (mtx, smtx, npy,
#                                         smtx_values, cache, rank_model,
#                                         cli_args, cli_shapes); new inputs go to
#                                         build-fuzz/corpus/TARGET, a finding
#                                         to build-fuzz/findings/TARGET
#   scripts/fuzz.sh replay [TARGET...]    every input of tests/fuzz/regressions
#                                         once through its target
#   scripts/fuzz.sh ci                    build, replay, then each target for
#                                         SPF_FUZZ_CI_SECONDS (default 20), as many
#                                         at once as there are cores
#
# Exit status non-zero on any finding (a crash, a sanitizer report, an
# input over -rss_limit_mb / -malloc_limit_mb, a timeout) or a failed build.
# Environment: CC (default clang), SPF_FUZZ_BUILD (default build-fuzz).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SPF_FUZZ_BUILD:-$root/build-fuzz}
targets=(mtx smtx npy smtx_values cache rank_model cli_args cli_shapes)
# A huge allocation from a tiny input is a finding, as is a run that hangs.
limits=(-rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout=10)

die() { echo "fuzz.sh: $*" >&2; exit 2; }

build() {
  local cc=${CC:-clang}
  command -v "$cc" >/dev/null || die "no $cc: libFuzzer needs clang (apt-get install -y clang)"
  # Refuse a clang without libFuzzer's runtime now, not after the build.
  local probe
  probe=$(mktemp -d)
  echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' >"$probe/p.c"
  "$cc" -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" 2>"$probe/err" ||
    { cat "$probe/err" >&2; rm -rf "$probe"; die "$cc cannot link -fsanitize=fuzzer (libFuzzer missing)"; }
  rm -rf "$probe"
  cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSPF_FUZZ=ON -DSPF_WITH_CUDA=OFF -DSPF_WERROR=ON >/dev/null
  cmake --build "$build" --target fuzzers -j "$(nproc 2>/dev/null || echo 2)"
}

binary() {
  local b=$build/tests/fuzz/fuzz_$1
  [[ " ${targets[*]} " == *" $1 "* ]] || die "unknown target '$1' (${targets[*]})"
  [ -x "$b" ] || die "$b missing: run scripts/fuzz.sh build first"
  echo "$b"
}

# The seed folders of a target: committed files that exercise it.
seeds() {
  local t=$1 d=$root/tests
  case $t in
    mtx) echo "$d/corpus/*.mtx" ;;
    smtx) echo "$d/corpus/*.smtx" ;;
    npy) echo "$d/corpus/*.npy" ;;
    smtx_values | cli_args | cli_shapes) echo "$root/tests/fuzz/seeds/$t" ;;
    rank_model) echo "$root/models/rank_model.txt $d/fixtures/rank/model.txt" ;;
    cache) echo "$build/seeds/cache" ;;
  esac
}

# The target's working corpus: the seeds copied in once, the regressions
# every time (libFuzzer takes files only as folders).
prepare() {
  local t=$1 corpus=$build/corpus/$1 b
  b=$(binary "$t")
  mkdir -p "$corpus"
  if [ "$t" = cache ]; then
    rm -rf "$build/seeds/cache" && mkdir -p "$build/seeds/cache"
    SPF_FUZZ_CACHE_SEEDS=$build/seeds/cache "$b" >/dev/null 2>&1 || die "fuzz_cache could not write its seeds"
  fi
  local s
  for s in $(seeds "$t"); do
    if [ -d "$s" ]; then cp -n "$s"/* "$corpus"/ 2>/dev/null || true
    elif [ -f "$s" ]; then cp -n "$s" "$corpus"/; fi
  done
  [ -d "$root/tests/fuzz/regressions/$t" ] && cp -n "$root/tests/fuzz/regressions/$t"/* "$corpus"/ 2>/dev/null
  true
}

# Per-process input files go to a private tmpfs folder, removed afterwards.
with_tmp() {
  local base=/dev/shm
  [ -d "$base" ] && [ -w "$base" ] || base=${TMPDIR:-/tmp}
  SPF_FUZZ_TMP=$(mktemp -d "$base/spf-fuzz.XXXXXX")
  export SPF_FUZZ_TMP
  trap 'rm -rf "$SPF_FUZZ_TMP"' EXIT
}

target_flags() { case $1 in cli_args | cli_shapes) echo -close_fd_mask=3 ;; esac; true; }

run() {
  [ $# -ge 2 ] || die "usage: scripts/fuzz.sh run TARGET SECONDS [libFuzzer flags...]"
  local t=$1 secs=$2 b
  shift 2
  b=$(binary "$t")
  prepare "$t"
  with_tmp
  mkdir -p "$build/findings/$t"
  echo "== fuzz_$t for ${secs}s"
  # shellcheck disable=SC2046
  "$b" "${limits[@]}" $(target_flags "$t") -max_total_time="$secs" -print_final_stats=1 \
    -artifact_prefix="$build/findings/$t/" "$@" "$build/corpus/$t"
}

# One process per input, so every failing one is named, not just the first.
replay() {
  local t b f log failed=0
  with_tmp
  for t in "${@:-${targets[@]}}"; do
    b=$(binary "$t")
    for f in "$root/tests/fuzz/regressions/$t"/*; do
      [ -f "$f" ] || continue
      log=$build/replay-$t-$(basename "$f").log
      # shellcheck disable=SC2046
      if "$b" "${limits[@]}" $(target_flags "$t") "$f" >"$log" 2>&1; then
        echo "== replay fuzz_$t ${f#"$root"/}: ok"
      else
        failed=1
        grep -m 1 -A 12 'ERROR:' "$log" | grep -v '^ *#[0-9]* 0x[0-9a-f]* in \(fuzzer::\|__\)' | head -n 12
        echo "FAILED: replay fuzz_$t ${f#"$root"/} (log: $log)" >&2
      fi
    done
  done
  return $failed
}

# The targets as many at once as there are cores, each for its seconds on
# a core of its own.
ci() {
  local secs=${SPF_FUZZ_CI_SECONDS:-20} t failed="" jobs
  jobs=$(nproc 2>/dev/null || echo 2)
  build
  replay || failed="replay"
  for t in "${targets[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
    rm -f "$build/ci-$t.ok"
    ( run "$t" "$secs" >"$build/ci-$t.log" 2>&1 && touch "$build/ci-$t.ok" ) &
  done
  wait
  for t in "${targets[@]}"; do
    [ -e "$build/ci-$t.ok" ] || { failed="$failed $t"; tail -n 40 "$build/ci-$t.log"; }
    grep -h '^stat::number_of_executed_units\|^== ' "$build/ci-$t.log" | paste -sd' ' || true
  done
  [ -z "$failed" ] || { echo "fuzz.sh ci: findings in:$failed (inputs under $build/findings)" >&2; exit 1; }
  echo "fuzz.sh ci: no findings"
}

cmd=${1:-}
shift || true
case $cmd in
  build) build ;;
  run) run "$@" ;;
  replay) replay "$@" ;;
  ci) ci ;;
  *) die "usage: scripts/fuzz.sh build | run TARGET SECONDS [flags] | replay [TARGET...] | ci" ;;
esac
