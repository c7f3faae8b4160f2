#!/usr/bin/env bash
# The spforge CLI end to end: --help on every command, --json output that
# parses and carries the right values, gen -> convert -> stat round trips,
# the default run within tolerance, and the exit codes and messages of bad
# input (1) and usage errors (2). Needs $SPF_CLI (set by ctest).
. "$(dirname "$0")/harness.sh"

# ---- --help everywhere, exit 0
expect_rc 0 help --help
for cmd in info gen stat convert run tune conv partition; do
  expect_rc 0 "help_$cmd" "$cmd" --help
  check "$cmd --help prints its usage" grep -q "usage: spforge $cmd" "$tmp/help_$cmd.out"
  check "$cmd --help fits 100 columns" [ -z "$(LC_ALL=C awk 'length > 100' "$tmp/help_$cmd.out")" ]
done
expect_rc 2 noargs
expect_rc 2 unknown_cmd frobnicate
stderr_has unknown_cmd "frobnicate"

# ---- info
expect_rc 0 info info
check "info names the device or the CPU fallback" grep -Eq "^(device 0:|no CUDA device: .* using the CPU reference)" "$tmp/info.out"
expect_rc 0 info_json info --json
check "info --json parses" parses info_json
json_true info_json "d['version'] == '$("$cli" --version | cut -d' ' -f2)'" "info version"
json_true info_json "d['host_cores'] >= 1 and 'available' in d['device']" "info fields"
json_true info_json "d['device']['available'] or len(d['device']['reason']) > 0" "info reason when no device"
json_true info_json "{'dense', 'cusparselt', 'cpu'} <= {s['name'] for s in d['strategies']} and all(s['available'] or s['reason'] for s in d['strategies'])" "info lists the strategies, a reason for each one unavailable"
check "info lists cuSPARSELt's availability" grep -Eq "^  cusparselt +(available|unavailable: .+)$" "$tmp/info.out"

# ---- gen -> stat: the same matrix, the same hashes
expect_rc 0 gen gen "$tmp/a.mtx" --rows 100 --cols 80 --sparsity 0.8 --seed 7 --json
check "gen --json parses" parses gen
json_true gen "d['stats']['rows'] == 100 and d['stats']['cols'] == 80 and d['seed'] == 7" "gen shape"
json_true gen "d['stats']['nnz'] == 100 * 16" "gen uniform keeps round(0.2*80) per row"
expect_rc 0 stat stat "$tmp/a.mtx" --json
check "stat --json parses" parses stat
gen_stats=$(json gen "d['stats']")
stat_stats=$(json stat "d['stats']")
check "stat reproduces gen's statistics and hashes" [ "$gen_stats" = "$stat_stats" ]
json_true stat "d['read_ms'] >= 0 and d['path'].endswith('a.mtx')" "stat path and time"
# 100×80 at 0.8: 7 windows of 16 rows × 5 column blocks, every block hit
expect_rc 0 stat_tc stat "$tmp/a.mtx" --tc-format --json
json_true stat_tc "d['tc_format']['placement'] == 'blocked' and d['tc_format']['tiles'] == 35" "stat --tc-format tiles"
# each tile's fp16 values padded to 16 bytes: 2 bytes per nonzero plus at most 14 per tile
json_true stat_tc "(d['tc_format']['bytes'] - 35 * 44 - 8 * 8) % 16 == 0 and 1600 * 2 <= d['tc_format']['bytes'] - 35 * 44 - 8 * 8 <= 1600 * 2 + 35 * 14" "stat --tc-format bytes: fp16 values padded per tile to 16 bytes, 44 bytes per tile, 8 per window offset"
json_true stat_tc "d['tc_format']['affinity']['placement'] == 'blocked' and d['tc_format']['affinity']['tiles'] == 35 and d['tc_format']['affinity']['reorder_ms'] >= 0" "stat --tc-format after affinity reordering: every block still hit"
# a graph condensed: affinity reordering (never more tiles than the rows' own order)
expect_rc 0 gen_graph gen "$tmp/g.mtx" --kind rmat --rows 2048 --cols 2048 --sparsity 0.998 --seed 3
expect_rc 0 stat_tc_graph stat "$tmp/g.mtx" --tc-placement condensed --json
json_true stat_tc_graph "d['tc_format']['placement'] == 'condensed' and d['tc_format']['affinity']['placement'] == 'condensed'" "stat --tc-placement condensed"
json_true stat_tc_graph "0 < d['tc_format']['affinity']['tiles'] <= d['tc_format']['tiles']" "stat --tc-format: affinity reordering never adds tiles"
expect_rc 0 stat_tc_text stat "$tmp/g.mtx" --tc-format
check "stat text shows the reordered format" grep -q "after affinity reordering: [0-9]* tiles" "$tmp/stat_tc_text.out"
expect_rc 2 stat_tc_bad stat "$tmp/g.mtx" --tc-placement diagonal
expect_rc 0 stat_text stat "$tmp/a.mtx"
check "stat text shows nnz and hashes" grep -q "nnz 1600" "$tmp/stat_text.out"
check "stat text shows the hashes" grep -q "pattern [0-9a-f]\{16\}" "$tmp/stat_text.out"

for kind in uniform magnitude colvec vnm 2:4 rmat; do
  f="$tmp/k_${kind/:/_}.smtx"
  expect_rc 0 "gen_$kind" gen "$f" --kind "$kind" --rows 64 --cols 64 --sparsity 0.75 --seed 3 --json
  json_true "gen_$kind" "d['kind'] == '$kind' and d['stats']['nnz'] > 0" "gen --kind $kind"
done
json_true gen_2:4 "d['stats']['nnz'] == 64 * 64 // 2" "2:4 keeps half"
expect_rc 0 gen_same gen "$tmp/again.smtx" --kind rmat --rows 64 --cols 64 --sparsity 0.75 --seed 3 --json
json_true gen_same "d['stats']['pattern_hash'] == '$(json gen_rmat "d['stats']['pattern_hash']")'" "gen is reproducible"

# ---- convert round trips: mtx -> smtx (pattern), mtx -> npy -> mtx (values)
expect_rc 0 conv1 convert "$tmp/a.mtx" "$tmp/b.smtx" --json
json_true conv1 "d['nnz'] == 1600 and d['output'].endswith('b.smtx')" "convert --json"
expect_rc 0 stat_b stat "$tmp/b.smtx" --json
json_true stat_b "d['stats']['pattern_hash'] == '$(json stat "d['stats']['pattern_hash']")'" "smtx keeps the pattern"
expect_rc 0 conv2 convert "$tmp/a.mtx" "$tmp/c.npy"
expect_rc 0 conv3 convert "$tmp/c.npy" "$tmp/d.mtx"
expect_rc 0 stat_d stat "$tmp/d.mtx" --json
d_stats=$(json stat_d "d['stats']")
check "mtx -> npy -> mtx keeps pattern and values" [ "$d_stats" = "$stat_stats" ]
expect_rc 0 stat_npy_pruned stat "$tmp/c.npy" --sparsity 0.9 --json
json_true stat_npy_pruned "d['stats']['nnz'] == 800" "npy magnitude pruning to 0.9 of 8000"

# ---- run: the embedded default input within tolerance
expect_rc 0 run_default run --n 64 --json
check "run --json parses" parses run_default
json_true run_default "d['default_input'] and d['stats']['rows'] == 768 and d['stats']['cols'] == 768" "default input shape"
json_true run_default "d['stats']['nnz'] == 768 * 77" "default input is uniform at 0.9"
# --backend auto: a GPU plan where there is a device, else the CPU reference
backend=cpu
device_available && backend=gpu
json_true run_default "d['relative_error'] <= 1e-6 and d['passed'] and d['backend'] == '$backend'" "default run error"
json_true run_default "d['time_ms_median'] > 0 and d['gflops'] > 0 and d['repeat'] == 5" "run timing"
expect_rc 0 run_text run --n 33 --repeat 2
check "run text names the default input" grep -q "embedded default: uniform 768x768, sparsity 0.9, seed 1" "$tmp/run_text.out"
check "run text has the device line" grep -Eq "^device +(device 0:|no CUDA device: .*CPU reference)" "$tmp/run_text.out"
check "run text has the error line" grep -Eq "^error .* ok$" "$tmp/run_text.out"
expect_rc 0 run_file run "$tmp/a.mtx" --n 7 --bias --relu --threads 2 --repeat 3 --seed 5 --backend cpu --json
json_true run_file "d['passed'] and d['bias'] and d['relu'] and d['n'] == 7 and d['threads'] == 2" "run on a file with bias and relu"
expect_rc 0 run_n1 run "$tmp/k_2_4.smtx" --n 1 --json
json_true run_n1 "d['relative_error'] <= 1e-6" "run N = 1"

# ---- progress on stderr: off by default off a terminal and with --json;
# --progress shows it (stdout keeps only the JSON), --no-progress never
check "run --json wrote nothing to stderr" [ ! -s "$tmp/run_default.err" ]
check "run off a terminal shows no progress" [ ! -s "$tmp/run_text.err" ]
expect_rc 0 progress_json run --n 16 --repeat 3 --progress --json
check "run --progress --json: stdout is the JSON object alone" parses progress_json
json_true progress_json "d['passed']" "run --progress --json result"
stderr_has progress_json "spforge run: "
if [ "$backend" = cpu ]; then
  stderr_has progress_json "cpu run 1/3"
else
  stderr_has progress_json "candidates"
  stderr_has progress_json "plan ready"
fi
stderr_has progress_json "checking C against the double-accumulated reference"
check "progress off a terminal is whole lines (no carriage return)" \
  bash -c '! grep -q $'"'"'\r'"'"' "$1"' _ "$tmp/progress_json.err"
expect_rc 0 progress_text run --n 16 --repeat 2 --progress
stderr_has progress_text "spforge run: "
check "run --progress keeps stdout's text" grep -Eq "^error .* ok$" "$tmp/progress_text.out"
expect_rc 0 no_progress run --n 16 --repeat 2 --no-progress --json
check "run --no-progress writes nothing to stderr" [ ! -s "$tmp/no_progress.err" ]
expect_rc 2 both_progress run --n 16 --progress --no-progress
stderr_has both_progress "--progress and --no-progress exclude each other"
for opt in --progress --no-progress; do # tune's: test_tune.sh
  check "run --help documents $opt" grep -q -- "$opt" "$tmp/help_run.out"
done
# On a terminal (script(1) gives one): one line redrawn in place and erased
# at the end; with --json none. Skipped where script is missing.
if command -v script >/dev/null 2>&1 && script -qfec true /dev/null >/dev/null 2>&1; then
  script -qfec "$(printf '%q ' "$cli" run --n 512 --repeat 20)" /dev/null >"$tmp/tty.out" 2>&1
  check "on a terminal: the progress line is redrawn (\\r) and erased (ESC[K)" \
    grep -q $'\r.*spforge run: .*\033\[K' "$tmp/tty.out"
  check "on a terminal: the results follow on a clean line" grep -Eq "^error .* ok" \
    <(tr -d '\r' <"$tmp/tty.out" | sed 's/\x1b\[K//g')
  script -qfec "$(printf '%q ' "$cli" run --n 64 --json)" /dev/null >"$tmp/tty_json.out" 2>&1
  check "on a terminal with --json: no progress" bash -c '! grep -q "spforge run: " "$1"' _ \
    "$tmp/tty_json.out"
  check "on a terminal with --json: the JSON" grep -q '"command":"run"' "$tmp/tty_json.out"
else
  echo "NOTE: no script(1): the terminal display is not tested"
fi

# ---- input and runtime errors: exit 1, the message names the file
expect_rc 1 missing stat "$tmp/nope.mtx"
stderr_has missing "nope.mtx"
stderr_has missing "spforge stat: I/O error:"
printf '%%%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.0\n' >"$tmp/short.mtx"
expect_rc 1 truncated stat "$tmp/short.mtx"
stderr_has truncated "short.mtx"
printf 'garbage\x01\x02' >"$tmp/junk.smtx"
expect_rc 1 junk run "$tmp/junk.smtx" --n 4
stderr_has junk "junk.smtx"
: >"$tmp/empty.mtx"
expect_rc 1 empty convert "$tmp/empty.mtx" "$tmp/out.smtx"
stderr_has empty "empty.mtx"
check "a failed convert leaves no output" [ ! -e "$tmp/out.smtx" ]
expect_rc 2 cpu_dtype run --n 8 --dtype f16 --backend cpu
stderr_has cpu_dtype "shape a GPU plan, not --backend cpu"
expect_rc 2 strategy_cpu run --n 8 --strategy cpu
stderr_has strategy_cpu "--backend cpu"
expect_rc 2 bad_math run --n 8 --math fast
stderr_has bad_math "default|tf32|f16x2"
run_cli gpu run --n 8 --backend gpu
if ! device_available; then
  check "--backend gpu without a GPU exits 1" [ "$rc" -eq 1 ]
  stderr_has gpu "no usable CUDA device"
  expect_rc 1 dtype run --n 8 --dtype f16
  stderr_has dtype "shape a GPU plan"
else
  check "--backend gpu on a GPU machine runs and passes its check" [ "$rc" -eq 0 ]
  # every dtype, math mode and layout through AUTO, checked against the reference
  for args in "--dtype f16" "--dtype bf16 --bias --relu" "--math tf32" \
              "--dtype f16 --math f16x2" "--b-layout n_first --c-layout n_first --bias" \
              "--b-layout n_first" "--c-layout n_first --dtype bf16" "--no-dense"; do
    run_cli gpu_opts run --n 49 $args --json
    check "run $args passes its check" [ "$rc" -eq 0 ]
    check "run $args names its candidates" grep -q '"candidates":\[{' "$tmp/gpu_opts.out"
  done
fi

# ---- inputs that are not regular files: refused at once (a hang is the failure:
# timeout ends it with 124), as the matrix and as the values file
printf '#!/bin/sh\nexec timeout 20 "%s" "$@"\n' "$cli" >"$tmp/cli_timeout"
chmod +x "$tmp/cli_timeout"
cli_plain=$cli
cli="$tmp/cli_timeout"
mkfifo "$tmp/fifo.mtx" "$tmp/fifo.npy"
mkdir "$tmp/folder.smtx"
ln -s /dev/zero "$tmp/zero.mtx"
ln -s /dev/null "$tmp/null.npy"
for f in fifo.mtx folder.smtx zero.mtx null.npy; do
  expect_rc 1 "nonreg_$f" stat "$tmp/$f"
  stderr_has "nonreg_$f" "expected a regular file"
done
for f in fifo.npy null.npy; do
  expect_rc 1 "nonreg_values_$f" stat "$tmp/k_2_4.smtx" --values "$tmp/$f"
  stderr_has "nonreg_values_$f" "values file: $tmp/$f: is a"
done
expect_rc 1 nonreg_values_zero run "$tmp/k_2_4.smtx" --n 2 --values /dev/zero
stderr_has nonreg_values_zero "/dev/zero: is a character device, expected a regular file"
cli=$cli_plain

# ---- the read limit: a tiny file declaring a huge shape is refused before
# allocating; --max-read-bytes and $SPFORGE_READ_MAX_BYTES lower and raise it
printf '%%%%MatrixMarket matrix coordinate real general\n2147483647 1 0\n' >"$tmp/huge_rows.mtx"
expect_rc 1 huge_rows stat "$tmp/huge_rows.mtx"
stderr_has huge_rows "needs 17179869184 bytes, which would exceed the read limit of 4294967296 bytes"
expect_rc 1 limit_low stat "$tmp/a.mtx" --max-read-bytes 1000
stderr_has limit_low "a.mtx: reading the shape and entries the header declares needs"
stderr_has limit_low "exceed the read limit of 1000 bytes"
SPFORGE_READ_MAX_BYTES=1000 expect_rc 1 limit_env stat "$tmp/a.mtx"
stderr_has limit_env "exceed the read limit of 1000 bytes"
SPFORGE_READ_MAX_BYTES=1000 expect_rc 0 limit_raised stat "$tmp/a.mtx" --max-read-bytes 100000000
SPFORGE_READ_MAX_BYTES=1000 expect_rc 0 limit_off convert "$tmp/a.mtx" "$tmp/limit.smtx" --max-read-bytes -1
expect_rc 2 limit_bad stat "$tmp/a.mtx" --max-read-bytes 4G
stderr_has limit_bad "--max-read-bytes: expected an integer, got '4G'"

# ---- usage errors: exit 2, the option is named
expect_rc 2 no_out gen
expect_rc 2 no_n run
stderr_has no_n "--n"
expect_rc 2 bad_seed stat "$tmp/a.mtx" --seed abc
stderr_has bad_seed "--seed"
expect_rc 2 bad_sparsity gen "$tmp/x.mtx" --sparsity 1.5
stderr_has bad_sparsity "--sparsity"
expect_rc 2 bad_kind gen "$tmp/x.mtx" --kind diagonal
stderr_has bad_kind "--kind"
expect_rc 2 bad_nm gen "$tmp/x.mtx" --kind vnm --nm 4:2
stderr_has bad_nm "--nm"
expect_rc 2 bogus info --bogus
stderr_has bogus "--bogus"
expect_rc 2 no_value gen "$tmp/x.mtx" --rows
stderr_has no_value "--rows"
expect_rc 2 bad_n run --n 0
stderr_has bad_n "--n: out of range [1, 2147483647], got '0'"
# integers: exact bounds; "out of range" for a valid integer, even beyond int64
expect_rc 2 big_n run --n 99999999999
stderr_has big_n "--n: out of range [1, 2147483647], got '99999999999'"
expect_rc 2 huge_n run --n 99999999999999999999999
stderr_has huge_n "--n: out of range [1, 2147483647], got '99999999999999999999999'"
expect_rc 2 text_n run --n 12x
stderr_has text_n "--n: expected an integer, got '12x'"
expect_rc 2 big_threads run --n 4 --threads 5000
stderr_has big_threads "--threads: out of range [0, 4096], got '5000'"
expect_rc 2 big_rows gen "$tmp/x.mtx" --rows 2147483648
stderr_has big_rows "--rows: out of range [1, 2147483647], got '2147483648'"
expect_rc 2 big_seed stat "$tmp/a.mtx" --seed 99999999999999999999999
stderr_has big_seed "--seed: out of range [0, 18446744073709551615]"
stderr_has bad_sparsity "--sparsity: out of range [0, 1), got '1.5'"
expect_rc 2 extra stat "$tmp/a.mtx" "$tmp/b.smtx"
check "usage errors write nothing to stdout" [ ! -s "$tmp/bogus.out" ]

# The default thread count: $SPFORGE_THREADS, else $OMP_NUM_THREADS, else the CPUs the process may use
threads_of() { "$@" | python3 -c 'import json, sys; print(json.load(sys.stdin)["host_cores"])'; }
check "SPFORGE_THREADS sets the default threads" [ "$(threads_of env SPFORGE_THREADS=3 "$cli" info --json)" = 3 ]
check "OMP_NUM_THREADS sets them (its first value)" [ "$(threads_of env -u SPFORGE_THREADS OMP_NUM_THREADS=5,2 "$cli" info --json)" = 5 ]
check "SPFORGE_THREADS before OMP_NUM_THREADS" [ "$(threads_of env SPFORGE_THREADS=2 OMP_NUM_THREADS=7 "$cli" info --json)" = 2 ]
if command -v taskset >/dev/null && taskset -c 0 true 2>/dev/null; then
  check "one CPU in the affinity mask: one thread" \
    [ "$(threads_of env -u SPFORGE_THREADS -u OMP_NUM_THREADS taskset -c 0 "$cli" info --json)" = 1 ]
else
  echo "skip: taskset cannot pin this process (the affinity check)"
fi

# With --json a failure is one JSON object on stdout, with the text on stderr and the same exit code
expect_rc 1 json_missing stat "$tmp/no_such.mtx" --json
check "a failed stat --json prints one JSON object" parses json_missing
json_true json_missing "d['command'] == 'stat' and d['error']['status'] == -3 and d['error']['name'] == 'I/O error' and 'no_such.mtx: cannot open for reading' in d['error']['detail'] and d['exit_code'] == 1" "stat --json error object"
stderr_has json_missing "spforge stat: I/O error:"
expect_rc 2 json_usage run --bogus --json
json_true json_usage "d['error'] == {'status': -1, 'name': 'invalid argument', 'detail': \"unknown option '--bogus'\"} and d['exit_code'] == 2" "a usage error before --json is JSON too"
expect_rc 2 json_range gen "$tmp/y.mtx" --json --rows 0
json_true json_range "d['command'] == 'gen' and 'out of range' in d['error']['detail']" "gen --json usage error"

report
