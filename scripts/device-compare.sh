#!/usr/bin/env bash
# Two builds side by side on the GPU host in ONE device call: a baseline
# source tree (another commit's, carried) and this tree, each built for
# the chip alone (sm_90 and sm_90a, -j16; a build kept by a warm machine
# is reused), then each benchmark run with one build after the other, so
# that both meet the same GPU, clocks and neighbours. For the kernel
# budget (bench/results/kernel-budget/): the same rows before and after.
#
#   git archive BASE | tar -x -C .baseline      (once, here; carried)
#   SPF_COMPARE_BENCH='--set large --dtype f16 --sparsity 0.9' \
#     bash scripts/device-compare.sh             (carry .baseline and devdata)
#
# Environment:
#   OUT                 where results go (default ./device-compare-out): the
#                       summary, the logs and every result file, packed in
#                       results.tar.gz (the device tool brings back 8 files)
#   SPF_COMPARE_BASE    the baseline tree (default .baseline)
#   SPF_COMPARE_BENCH   spforge-bench argument lists, ';' between runs (shell
#                       quoting within one); each runs as --out <side>/<n>
#                       with --data data
#   SPF_COMPARE_CONV    scripts/bench_conv.py arguments (a run with each
#                       build's CLI), or empty for none
#   SPF_COMPARE_STEP_S  seconds each benchmark run may take (default 280)
#   SPF_CHECK_BUDGET_S  seconds the whole call may take (default 570)
set -uo pipefail
# shellcheck source=device-steps.sh
. "$(dirname "$0")/device-steps.sh"
device_init device-compare
base=$root/${SPF_COMPARE_BASE:-.baseline}
[ -d "$base" ] || { echo "no baseline tree $base" | tee -a "$out/summary.txt"; exit 2; }
if [ ! -e data ] && [ -d devdata ]; then ln -s devdata data; fi
nvidia-smi -L 2>&1 | tee -a "$out/summary.txt"

# One chip: the baseline's CMakeLists.txt may name sm_80 too, which the
# H200 never runs; its sm_90 code is the same either way.
sed -i 's/set(CMAKE_CUDA_ARCHITECTURES 80 90)/set(CMAKE_CUDA_ARCHITECTURES 90)/' \
  "$base/CMakeLists.txt"
build_tree() { # build_tree SRC BUILD
  cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release -DSPF_CUDA_ARCHITECTURES=90 \
    -DCMAKE_CUDA_COMPILER="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" &&
    cmake --build "$2" -j16 --target spforge_cli spforge_bench spforge
}
export -f build_tree
step build-base "$out/build-base.log" 300 bash -c 'build_tree "$@"' _ "$base" "$root/build-compare-base"
step build-this "$out/build-this.log" 300 bash -c 'build_tree "$@"' _ "$root" "$root/build-compare-this"

mkdir -p "$out/base" "$out/this"
i=0
IFS=';' read -ra runs <<<"${SPF_COMPARE_BENCH:-}"
for args in "${runs[@]}"; do
  [ -n "${args// /}" ] || continue
  i=$((i + 1))
  eval "bench_args=($args)" # quotes group words: --filter "N=64 2:4"
  for side in base this; do
    mkdir -p "$out/$side/$i"
    step "bench$i-$side" "$out/bench$i-$side.log" "${SPF_COMPARE_STEP_S:-280}" \
      "$root/build-compare-$side/bench/spforge-bench" "${bench_args[@]}" --no-spforge-tune \
      --data data --out "$out/$side/$i"
  done
done
if [ -n "${SPF_COMPARE_CONV:-}" ]; then
  for side in base this; do
    tree=$root
    [ "$side" = base ] && tree=$base
    # shellcheck disable=SC2086
    step "conv-$side" "$out/conv-$side.log" "${SPF_COMPARE_STEP_S:-280}" env SPF_LIB="$root/build-compare-$side/libspforge.so" \
      python3 "$tree/scripts/bench_conv.py" --spforge "$root/build-compare-$side/spforge" \
      --data data $SPF_COMPARE_CONV --out "$out/$side/conv.csv"
  done
fi
echo "failed:${failed:- none}" | tee -a "$out/summary.txt"
tar -czf "$root/results.tar.gz" -C "$out" . && mv "$root/results.tar.gz" "$out/"
find "$out" -mindepth 1 ! -name results.tar.gz ! -name summary.txt -delete
[ -z "$failed" ]
