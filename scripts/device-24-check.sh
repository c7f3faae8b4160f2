#!/usr/bin/env bash
# One device call: 2:4 against dense and torch's cuSPARSELt path
# (scripts/bench_24.py, under faulthandler), the Llama-7B-shaped sparsify
# timing (scripts/sparsify_llama.py) and BERT / the MLP block end to end
# with the sparse model compiled too. Few files under $OUT (the device
# tool returns a bounded count).
#
#   SPF_GIT_COMMIT=<sha> bash scripts/device-24-check.sh
set -uo pipefail
out=${OUT:-./device-24-check-out}
mkdir -p "$out"
cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_COMPILER="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" >/dev/null 2>&1
cmake --build /tmp/b -j"$(nproc)" >"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
export PYTHONPATH=$PWD/python SPF_LIB=/tmp/b/libspforge.so SPFORGE_CACHE_DIR=off
timeout 120 python3 -X faulthandler scripts/bench_24.py --json "$out/bench24.json" >"$out/bench24.log" 2>&1
grep -v -i "warn\|return cls" "$out/bench24.log" | tail -25
timeout 150 python3 scripts/sparsify_llama.py --summary "$out/plan-summary.json" \
  --json "$out/sparsify.json" 2>&1 | tail -4
timeout 150 python3 scripts/e2e_bert.py --out /tmp/e2e --budget-s 125 --sparsities 0.9,0.7 \
  --seqs 128 --batches 1,8 --mlp-ns 1,16,64 --mlp-sparsities 0.7 >"$out/e2e.log" 2>&1
cp /tmp/e2e/e2e_bert.json "$out/e2e_bert.json" 2>/dev/null
grep -E "vs best|bert s=|mlp s=" "$out/e2e.log" | tail -12
