#!/usr/bin/env bash
# The CLI at its boundaries (issue 48): tiny inputs that declare huge work,
# output that cannot be delivered, targets that are not files, permissions,
# values that overflow, options that do not apply, seeds, JSON of any file
# name. The size cases run under a virtual-memory limit (ulimit -v), so
# that a blow-up fails the test instead of passing because the machine had
# the memory: a refusal must come from the work budget, before allocating,
# and say so. (Not under ASan, which reserves terabytes of address space;
# CUDA_VISIBLE_DEVICES is emptied there so that no GPU context is made.)
. "$(dirname "$0")/harness.sh"

limited() { # limited NAME ARGS...: run_cli under the memory limit
  local name=$1; shift
  if [ -n "${ASAN_OPTIONS:-}" ]; then
    run_cli "$name" "$@"
  else
    (ulimit -v 6000000 || exit 99; CUDA_VISIBLE_DEVICES='' run_cli "$name" "$@"; exit "$rc")
    rc=$?
  fi
}
expect_limited() { # expect_limited CODE NAME ARGS...
  local want=$1 name=$2; shift 2
  limited "$name" "$@"
  if [ "$rc" -eq "$want" ]; then ok; else
    bad "spforge $* exited $rc, expected $want"; sed 's/^/    /' "$tmp/$name.err" >&2; fi
}

mm() { printf '%%%%MatrixMarket matrix coordinate real general\n%s\n' "$2" >"$tmp/$1"; }

# ---- unbounded work from tiny inputs: refused by the budget, named
expect_limited 1 gen_tall gen "$tmp/g.smtx" --rows 2147483647 --cols 2 --sparsity 0
stderr_has gen_tall "2147483647 x 2 at sparsity 0: the generated matrix"
stderr_has gen_tall "over the work budget"
check "a refused gen writes no file" [ ! -e "$tmp/g.smtx" ]
expect_limited 0 gen_wide gen "$tmp/wide.smtx" --rows 1 --cols 2147483647 --sparsity 0.9999999 --json
json_true gen_wide "d['stats']['nnz'] == 215" "a 1 x 2^31 row of 215 nonzeros"
mm one_wide.mtx $'1 2147483647 1\n1 5 1.0'
expect_limited 1 npy_wide convert "$tmp/one_wide.mtx" "$tmp/wide.npy"
stderr_has npy_wide "wide.npy: 1 x 2147483647: the dense .npy array needs 8589934588 bytes"
check "a refused conversion writes no file" [ ! -e "$tmp/wide.npy" ]
mm tall.mtx '100000000 10 0'
expect_limited 1 tc_tall stat "$tmp/tall.mtx" --tc-format
stderr_has tc_tall "tall.mtx: "
stderr_has tc_tall "over the work budget"
mm rows.mtx '1000000 10 0'
expect_limited 0 tiles_rows stat "$tmp/rows.mtx" --tiles 1 --json
json_true tiles_rows "d['tiles']['count'] == 1000000" "host tile statistics past a grid's limit"
# conv: shapes whose byte counts wrap size_t (the fill wrote past a tiny malloc)
"$cli" gen "$tmp/w1.smtx" --rows 4 --cols 1 --sparsity 0 >/dev/null
expect_limited 1 conv_wrap conv "$tmp/w1.smtx" --input-shape 2147483647,1,1,1073741824 --backend cpu
stderr_has conv_wrap "2147483647,1,1,1073741824: the input, output, reference and residual tensors needs more than 2^63 bytes"
expect_limited 1 conv_big conv "$tmp/w1.smtx" --input-shape 64,1,1,16777216 --backend cpu
stderr_has conv_big "over the work budget"
expect_limited 1 conv_budget conv "$tmp/w1.smtx" --input-shape 2,1,8,8 --backend cpu --max-bytes 8000
stderr_has conv_budget "tensors needs 8720 bytes, over the work budget of 8000 bytes"
expect_limited 0 conv_ok conv "$tmp/w1.smtx" --input-shape 2,1,8,8 --backend cpu --max-bytes 800000000
expect_limited 1 run_big run "$tmp/w1.smtx" --n 2147483647 --backend cpu
stderr_has run_big "w1.smtx: B, C, the reference and the bias with this N needs"
SPFORGE_MAX_BYTES=1000 expect_limited 1 env_budget gen "$tmp/e.mtx" --rows 100 --cols 100
stderr_has env_budget "over the work budget of 1000 bytes"
SPFORGE_MAX_BYTES=lots expect_rc 1 env_bad gen "$tmp/e.mtx"
stderr_has env_bad "\$SPFORGE_MAX_BYTES: expected an integer byte count"
expect_rc 2 opt_bad gen "$tmp/e.mtx" --max-bytes lots
stderr_has opt_bad "--max-bytes: expected an integer"

# ---- output never silently lost: a full or closed stdout fails, exit 1
"$cli" gen "$tmp/a.mtx" --rows 64 --cols 48 --sparsity 0.8 >/dev/null
if [ -w /dev/full ]; then
  for json in "" --json; do
    for args in "info" "stat $tmp/a.mtx" "gen $tmp/f.mtx --rows 8 --cols 8" \
                "partition $tmp/a.mtx --ranks 2" "run $tmp/a.mtx --n 4 --backend cpu" "--help"; do
      # shellcheck disable=SC2086
      "$cli" $args $json >/dev/full 2>"$tmp/full.err"
      got=$?
      check "spforge $args $json onto a full disk exits 1 (got $got)" [ "$got" -eq 1 ]
      stderr_has full "writing standard output: No space left on device"
    done
  done
fi
for args in "info" "stat $tmp/a.mtx --json"; do
  # shellcheck disable=SC2086
  "$cli" $args >&- 2>"$tmp/closed.err"
  got=$?
  check "spforge $args onto a closed stdout exits 1 (got $got)" [ "$got" -eq 1 ]
  stderr_has closed "writing standard output"
done
# a closed stdout must not become the output file's descriptor
"$cli" convert "$tmp/a.mtx" "$tmp/c.mtx" >&- 2>/dev/null
check "a closed stdout writes nothing into the converted file" \
  cmp -s <("$cli" stat "$tmp/a.mtx" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["stats"]["pattern_hash"])') \
         <("$cli" stat "$tmp/c.mtx" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["stats"]["pattern_hash"])')

# ---- targets that are not files; permissions kept
mkfifo "$tmp/pipe.mtx"
expect_rc 1 to_fifo convert "$tmp/a.mtx" "$tmp/pipe.mtx"
stderr_has to_fifo "pipe.mtx: is a FIFO, expected a regular file or a new name"
check "the FIFO is still a FIFO" [ -p "$tmp/pipe.mtx" ]
mkdir "$tmp/dir.mtx"
expect_rc 1 to_dir convert "$tmp/a.mtx" "$tmp/dir.mtx"
stderr_has to_dir "is a folder"
cp "$tmp/a.mtx" "$tmp/secret.mtx"
chmod 600 "$tmp/secret.mtx"
expect_rc 0 keep_mode convert "$tmp/a.mtx" "$tmp/secret.mtx"
check "an 0600 file stays 0600 when replaced" [ "$(stat -c %a "$tmp/secret.mtx")" = 600 ]

# ---- values checked as they are produced
mm dup.mtx $'1 1 2\n1 1 3e38\n1 1 3e38'
expect_rc 1 dup_inf convert "$tmp/dup.mtx" "$tmp/dup_out.mtx" --duplicates sum
stderr_has dup_inf "dup.mtx:4: entry (1, 1) summed with the one on line 3 overflows float32"
check "no inf written" [ ! -e "$tmp/dup_out.mtx" ]

# ---- one rule per contract
expect_rc 1 mtx_sparsity stat "$tmp/a.mtx" --sparsity 0.5
stderr_has mtx_sparsity "applies to .npy files only, and this is a .mtx file"
expect_rc 1 mtx_values stat "$tmp/a.mtx" --values "$tmp/v.npy"
stderr_has mtx_values "applies to .smtx files only"
expect_rc 0 seed_010 gen "$tmp/s.mtx" --seed 010 --json
json_true seed_010 "d['seed'] == 10" "--seed 010 is decimal 10"
expect_rc 0 seed_08 gen "$tmp/s.mtx" --seed 08 --json
json_true seed_08 "d['seed'] == 8" "--seed 08 is decimal 8"
expect_rc 2 seed_hex gen "$tmp/s.mtx" --seed 0x10
bad_name=$(printf 'bad\377\351.mtx')
cp "$tmp/a.mtx" "$tmp/$bad_name"
expect_rc 0 utf8 stat "$tmp/$bad_name" --json
check "--json of a file name in another encoding is valid UTF-8 JSON" \
  python3 -c 'import json,sys; json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))' "$tmp/utf8.out"

report
