# The helpers of the CLI tests (test_cli.sh, test_tune.sh), sourced by them:
# $cli (from $SPF_CLI, set by ctest), a scratch folder $tmp removed on exit,
# pass/fail counters, and checks on spforge's exit code, stderr and --json
# output. report prints the counts and fails when a check failed.
set -u
cli=${SPF_CLI:?set SPF_CLI to the spforge binary}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*" >&2; }
check() { # check DESCRIPTION CONDITION-COMMAND...
  local what=$1; shift
  if "$@"; then ok; else bad "$what"; fi
}

# run_cli NAME ARGS...: run spforge, keep stdout/stderr in $tmp/NAME.{out,err}, rc in $rc.
run_cli() {
  local name=$1; shift
  "$cli" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
  rc=$?
}
# expect_rc CODE NAME ARGS...
expect_rc() {
  local want=$1 name=$2; shift 2
  run_cli "$name" "$@"
  if [ "$rc" -eq "$want" ]; then ok; else
    bad "spforge $* exited $rc, expected $want"; sed 's/^/    /' "$tmp/$name.err" >&2; fi
}
# json NAME PYTHON-EXPR: evaluate EXPR with d = the JSON object of NAME's stdout.
json() {
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$tmp/$1.out" "$2" \
    2>/dev/null || echo "(no JSON in the output of '$1')"
}
# json_true NAME PYTHON-EXPR DESCRIPTION
json_true() {
  local got
  got=$(json "$1" "$2" 2>&1)
  if [ "$got" = "True" ]; then ok; else bad "$3 ($2 -> $got)"; fi
}
# device_available: whether `spforge info` reports a usable device (the JSON's
# device.available; the strategy list holds "available" keys too)
device_available() {
  "$cli" info --json | python3 -c 'import json, sys; sys.exit(0 if json.load(sys.stdin)["device"]["available"] else 1)'
}
# stderr_has NAME TEXT
stderr_has() {
  if grep -qF -- "$2" "$tmp/$1.err"; then ok; else
    bad "stderr of '$1' lacks '$2'"; sed 's/^/    /' "$tmp/$1.err" >&2; fi
}
parses() { python3 -m json.tool "$tmp/$1.out" >/dev/null 2>&1; }

report() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
