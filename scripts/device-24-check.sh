#!/usr/bin/env bash
# One device call (about 7 minutes): a Release build in /tmp/b, the GPU
# tests of the strategies (the cusparselt row included), the planner and
# the torch layer, 2:4 against dense and torch's cuSPARSELt path
# (scripts/bench_24.py), the plan-time profile (scripts/plan_profile.py)
# and the Llama-7B-shaped sparsify timing (scripts/sparsify_llama.py:
# 32 blocks, empty cache then from it). Few files under $OUT (the device
# tool returns a bounded count).
#
#   SPF_GIT_COMMIT=<sha> bash scripts/device-24-check.sh
set -uo pipefail
out=${OUT:-./device-24-check-out}
mkdir -p "$out"
cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_COMPILER="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" >/dev/null 2>&1
cmake --build /tmp/b -j"$(nproc)" >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
(cd /tmp/b && timeout 150 ctest -R "test_strategies|test_plan$|test_plan_cache|python_torch_gpu" \
  --output-on-failure -j4 >"$out/ctest.log" 2>&1)
grep -E "tests passed|Failed|FAIL|Timeout|cusparselt" "$out/ctest.log" | head -12
export PYTHONPATH=$PWD/python SPF_LIB=/tmp/b/libspforge.so SPFORGE_CACHE_DIR=off
timeout 150 python3 -X faulthandler scripts/bench_24.py --json "$out/bench24.json" >/tmp/bench24.log 2>&1
grep -v -i "warn\|return cls" /tmp/bench24.log | tail -10
timeout 60 python3 scripts/plan_profile.py --gaps 3 --json "$out/profile.json" >"$out/profile.log" 2>&1
grep -E "^[a-z]" "$out/profile.log" | cut -c1-60
unset SPFORGE_CACHE_DIR
timeout 280 python3 scripts/sparsify_llama.py --summary "$out/plan-summary.json" 2>&1 | tail -4
