#!/usr/bin/env bash
# One device call: the cusparselt strategy checked where it runs (the CLI on
# generated 2:4 matrices, test_strategies' lines for it, scripts/bench_24.py
# under faulthandler), then the Llama-7B-shaped sparsify timing
# (scripts/sparsify_llama.py) and BERT / the MLP block end to end with the
# sparse model compiled too. Few files under $OUT (the device tool returns
# a bounded count).
#
#   SPF_GIT_COMMIT=<sha> bash scripts/device-24-check.sh
set -uo pipefail
out=${OUT:-./device-24-check-out}
mkdir -p "$out"
if [ -z "${SPF_CUSPARSELT:-}" ]; then
  SPF_CUSPARSELT=$(python3 -c 'import glob, site; print(next(iter(sorted(p for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/*/lib/libcusparseLt.so*"))), ""))' 2>/dev/null)
  [ -n "$SPF_CUSPARSELT" ] && export SPF_CUSPARSELT
fi
pip list 2>/dev/null | grep -i cusparselt
cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_COMPILER="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" >/dev/null 2>&1
cmake --build /tmp/b -j"$(nproc)" >"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
log=$out/log.txt
{
  for shape in "256 512" "4096 4096"; do
    set -- $shape
    /tmp/b/spforge gen /tmp/a24.smtx --kind 2:4 --rows "$1" --cols "$2" >/dev/null
    for n in 16 2048; do
      echo "== spforge run 2:4 $1x$2 N=$n --strategy cusparselt"
      timeout 60 /tmp/b/spforge run /tmp/a24.smtx --n "$n" --dtype f16 --strategy cusparselt \
        --b-layout n_first --c-layout n_first --json 2>&1 | python3 -c 'import json,sys; t=sys.stdin.read(); 
try:
  d=json.loads(t); print({k: d.get(k) for k in ("passed","relative_error","time_ms_median","kernel","backend")})
except Exception: print(t[-600:])'
    done
  done
  echo "== test_strategies, cusparselt lines"
  (cd /tmp/b && timeout 120 ./tests/test_strategies 2>&1 | grep -iE "cusparselt|FAIL|passed|failed" | head -20)
} >"$log" 2>&1
cat "$log"
export PYTHONPATH=$PWD/python SPF_LIB=/tmp/b/libspforge.so SPFORGE_CACHE_DIR=off
timeout 120 python3 -X faulthandler scripts/bench_24.py --json "$out/bench24.json" >"$out/bench24.log" 2>&1
grep -v -i "warn\|return cls" "$out/bench24.log" | tail -25
timeout 150 python3 scripts/sparsify_llama.py --summary "$out/plan-summary.json" \
  --json "$out/sparsify.json" 2>&1 | tail -4
timeout 150 python3 scripts/e2e_bert.py --out /tmp/e2e --budget-s 125 --sparsities 0.9,0.7 \
  --seqs 128 --batches 1,8 --mlp-ns 1,16,64 --mlp-sparsities 0.7 >"$out/e2e.log" 2>&1
cp /tmp/e2e/e2e_bert.json "$out/e2e_bert.json" 2>/dev/null
grep -E "vs best|bert s=|mlp s=" "$out/e2e.log" | tail -12
