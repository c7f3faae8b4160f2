#!/usr/bin/env bash
# spforge tune without a GPU (CI): --help, usage errors (exit 2, the option
# named), a missing or malformed file (exit 1, the file named, before any
# device check) and the "no CUDA device" failure (exit 1). On a machine with
# a GPU, one small search instead: stage counts that never grow, a chosen
# kernel within tolerance, --json that parses, and a second run from the
# plan cache, and an --exhaustive run against the COMPACT oracle. Needs
# $SPF_CLI (set by ctest).
. "$(dirname "$0")/harness.sh"

# ---- help: exit 0, every option of the synopsis documented
expect_rc 0 help tune --help
check "tune --help prints its usage" grep -q "usage: spforge tune FILE" "$tmp/help.out"
for opt in --n --exhaustive --space --top-k --no-proxies --reorder --dtype --log --no-cache --json \
  --progress --no-progress; do
  check "tune --help documents $opt" grep -q -- "$opt" "$tmp/help.out"
done
expect_rc 0 main_help --help
check "spforge --help lists tune" grep -q "^  tune " "$tmp/main_help.out"

# ---- a small input
"$cli" gen "$tmp/a.mtx" --rows 96 --cols 128 --sparsity 0.9 --seed 3 >/dev/null ||
  bad "gen of the test input failed"

# ---- usage errors: exit 2, the option named, nothing on stdout
expect_rc 2 no_file tune --n 8
stderr_has no_file "missing argument"
expect_rc 2 no_n tune "$tmp/a.mtx"
stderr_has no_n "--n"
expect_rc 2 bad_n tune "$tmp/a.mtx" --n 0
stderr_has bad_n "--n"
expect_rc 2 bad_space tune "$tmp/a.mtx" --n 8 --space huge
stderr_has bad_space "--space"
expect_rc 2 bad_k tune "$tmp/a.mtx" --n 8 --top-k 0
stderr_has bad_k "--top-k"
expect_rc 2 bad_dtype tune "$tmp/a.mtx" --n 8 --dtype f64
stderr_has bad_dtype "--dtype"
expect_rc 2 bogus tune "$tmp/a.mtx" --n 8 --bogus
stderr_has bogus "--bogus"
expect_rc 2 extra tune "$tmp/a.mtx" "$tmp/b.mtx" --n 8
expect_rc 2 oracle_log tune "$tmp/a.mtx" --n 8 --oracle-log "$tmp/o.csv"
stderr_has oracle_log "--oracle-log needs --exhaustive"
check "usage errors write nothing to stdout" [ ! -s "$tmp/bogus.out" ]

# ---- input errors: exit 1, the file named (before the device is asked)
expect_rc 1 missing tune "$tmp/nothing.mtx" --n 8
stderr_has missing "nothing.mtx"
printf 'garbage\x01\x02' >"$tmp/junk.smtx"
expect_rc 1 junk tune "$tmp/junk.smtx" --n 8
stderr_has junk "junk.smtx"

# ---- the device
if ! device_available; then
  expect_rc 1 nogpu tune "$tmp/a.mtx" --n 8
  stderr_has nogpu "no CUDA device: "
  check "no GPU: nothing on stdout" [ ! -s "$tmp/nogpu.out" ]
  expect_rc 1 nogpu_json tune "$tmp/a.mtx" --n 8 --json --exhaustive
  stderr_has nogpu_json "no CUDA device: "
else
  export SPFORGE_CACHE_DIR="$tmp/cache"
  expect_rc 0 gpu tune "$tmp/a.mtx" --n 49 --json --log "$tmp/log.csv"
  json_true gpu 'd["counts"]["space"] >= d["counts"]["register"] >= d["counts"]["utilization"] >= d["counts"]["balance"] >= d["counts"]["top_k"] >= 1' \
    "the stage counts never grow"
  json_true gpu 'd["chosen"]["verify_error"] <= 1e-5 and d["chosen"]["kernel_us"] > 0' \
    "the chosen kernel passed its check and was timed"
  json_true gpu 'not d["from_cache"]' "the first search is not a cache hit"
  check "--log wrote a header and rows" [ "$(wc -l <"$tmp/log.csv")" -ge 2 ]
  expect_rc 0 gpu_again tune "$tmp/a.mtx" --n 49 --json
  json_true gpu_again 'd["from_cache"]' "the second search comes from the cache"
  expect_rc 0 gpu_text tune "$tmp/a.mtx" --n 49 --no-cache --no-proxies --top-k 3
  check "text names the stages" grep -Eq "^candidates space [0-9]+ -> register [0-9]+ .* -> top-K [0-3] " "$tmp/gpu_text.out"
  expect_rc 0 gpu_oracle tune "$tmp/a.mtx" --n 49 --space compact --exhaustive --no-cache --json
  json_true gpu_oracle 'd["exhaustive"]["retimed"] and d["exhaustive"]["retimed_oracle_us"] > 0' \
    "--exhaustive re-times both picks side by side"
  json_true gpu_oracle 'd["exhaustive"]["configs_tried"] >= d["counts"]["top_k"]' \
    "the oracle tries at least what the search ranked"
  json_true gpu_oracle 'd["cpu_s"] > 0 and d["exhaustive"]["cpu_s"] > 0 and d["exhaustive"]["cost_ratio_cpu"] > 0' \
    "the cost in CPU seconds, with ptxas counted"
fi

report
