#!/usr/bin/env bash
# One device call (about 8 minutes) that checks the planner on the GPU and
# measures what issue 50 targets: a Release build in /tmp/b, the GPU tests
# of the planner and the strategies, the strategies on this machine, 2:4
# against dense and torch's cuSPARSELt (scripts/bench_24.py), the
# plan-time profile, SparseLinear's eager overhead, and BERT-base / the
# Llama MLP block end to end (dense torch and torch.compile beside
# spforge), then the e2e summary rows. Logs and results under $OUT.
#
#   SPF_GIT_COMMIT=<sha> bash scripts/device-plan-check.sh
set -uo pipefail
out=${OUT:-./device-plan-check-out}
mkdir -p "$out"
cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_COMPILER="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" >"$out/cfg.log" 2>&1
cmake --build /tmp/b -j"$(nproc)" >"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
(cd /tmp/b && timeout 100 ctest -R "test_plan$|test_plan_cache|test_strategies|python_torch$" \
  --output-on-failure -j3 >"$out/ctest.log" 2>&1)
grep -E "tests passed|Failed|FAIL|Timeout" "$out/ctest.log" | head
export PYTHONPATH=$PWD/python SPF_LIB=/tmp/b/libspforge.so SPFORGE_CACHE_DIR=off
/tmp/b/spforge info >"$out/info.txt" 2>&1; grep -A12 "^strategies" "$out/info.txt"
timeout 90 python3 scripts/bench_24.py --json "$out/bench24.json" >"$out/bench24.log" 2>&1
cat "$out/bench24.log" | tail -12
timeout 45 python3 scripts/plan_profile.py --json "$out/profile.json" >"$out/profile.log" 2>&1
tail -1 "$out/profile.log"
timeout 40 python3 scripts/eager_overhead.py --ns 16 --json "$out/overhead.json" >"$out/overhead.log" 2>&1
tail -5 "$out/overhead.log"
timeout 200 python3 scripts/e2e_bert.py --out "$out/e2e" --budget-s 170 --sparsities 0.5,0.7,0.9 \
  --seqs 128 --batches 1,8 --mlp-ns 1,4,16,64 --mlp-sparsities 0.5,0.7 >"$out/e2e.log" 2>&1
tail -30 "$out/e2e.log"
cp bench/results/e2e/summary.json "$out/summary.json" 2>/dev/null
python3 scripts/e2e_summary.py "$out/e2e/e2e_bert.json" "$out/summary.json"
