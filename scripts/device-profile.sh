#!/usr/bin/env bash
# Nsight Compute on one kernel of `spforge conv` runs, in ONE device call
# (≤ 10 minutes), results under $OUT:
#   - the CLI built (Release, -j16), the DLMC ResNet-50 files unpacked
#     from .convdata/rn50.tar.xz (carry it) into data/;
#   - per line of $SPF_PROFILE_RUNS (default: the 3×3 layers of groups 1
#     and 4 at 0.9, batch 1, f16, NHWC, the IMPLICIT path's kernels):
#     `ncu --set full` on launch $SPF_PROFILE_SKIP (default 0) of the
#     kernels whose demangled name matches $SPF_PROFILE_KERNEL (default
#     window_kernel), its details page (profile-N.txt) and the per-SASS
#     stall samples of its source page (sass-N.csv), both in
#     profile.tar.gz.
#
#   SPF_GIT_COMMIT=<sha> bash scripts/device-profile.sh
#
# A run line: a DLMC file under data/dlmc/rn50/magnitude_pruning/ and the
# `spforge conv` arguments after it, e.g.
#   0.9/bottleneck_2_block_group1_1_1.smtx --input-shape 1,64,56,56 --padding 1
# (--layout nhwc --dtype f16 --strategy $SPF_PROFILE_STRATEGY, default
# generic, and --no-progress are added).
# The kernel names carry their template arguments in ncu's demangled form
# (window_kernel<__half, 2, 2>), so SPF_PROFILE_KERNEL can pick a config.
set -uo pipefail
# shellcheck source=device-steps.sh
. "$(dirname "$0")/device-steps.sh"
device_init device-profile

device_convdata
build_step 260 -j16 --target spforge_cli
[ -x "$build/spforge" ] || { echo "build failed: see build.log" | tee -a "$out/summary.txt"; exit 1; }
export SPFORGE_CACHE_DIR=off
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
runs=${SPF_PROFILE_RUNS:-"0.9/bottleneck_2_block_group1_1_1.smtx --input-shape 1,64,56,56 --padding 1
0.9/bottleneck_2_block_group4_2_1.smtx --input-shape 1,512,7,7 --padding 1"}
kernel=${SPF_PROFILE_KERNEL:-window_kernel}
mkdir -p "$build/profile"
i=0
while IFS= read -r line; do
  [ -n "$line" ] || continue
  i=$((i + 1))
  # shellcheck disable=SC2086
  set -- $line
  file=data/dlmc/rn50/magnitude_pruning/$1
  shift
  echo "run $i: $file $*" | tee -a "$out/summary.txt"
  step "profile-$i" "$build/profile/profile-$i.txt" 150 "$ncu" --set full \
    --kernel-name-base demangled --kernel-name "regex:$kernel" \
    --launch-skip "${SPF_PROFILE_SKIP:-0}" --launch-count 1 -f -o "$build/profile/report-$i" \
    "$build/spforge" conv "$file" "$@" --layout nhwc --dtype f16 \
    --strategy "${SPF_PROFILE_STRATEGY:-generic}" --no-progress
  if [ -f "$build/profile/report-$i.ncu-rep" ]; then
    "$ncu" --import "$build/profile/report-$i.ncu-rep" --print-details all \
      >>"$build/profile/profile-$i.txt" 2>&1
    "$ncu" --import "$build/profile/report-$i.ncu-rep" --page source --print-source sass --csv \
      >"$build/profile/sass-$i.csv" 2>&1
  fi
done <<<"$runs"
tar -czf "$out/profile.tar.gz" -C "$build" --exclude='*.ncu-rep' profile
tar -czf "$out/logs.tar.gz" -C "$out" $(cd "$out" && ls ./*.log) && rm -f "$out"/*.log
echo "== done in $(($(date +%s) - start))s; failed:${failed:- none}" | tee -a "$out/summary.txt"
[ -z "$failed" ]
