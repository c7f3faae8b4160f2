# Shared by the device scripts (sourced): a time budget for the whole call
# and steps run under their share of it, each logged, its outcome and last
# lines in $out/summary.txt.

# device_init NAME: what every device script sets first: root (the
# repository, the working directory), out ($OUT, else NAME-out in it),
# budget ($SPF_CHECK_BUDGET_S, default 570 s), start, build (build-device),
# failed (empty), and an empty $out/summary.txt.
device_init() {
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  cd "$root" || exit 1
  out=${OUT:-$root/$1-out}
  mkdir -p "$out"
  budget=${SPF_CHECK_BUDGET_S:-570}
  start=$(date +%s)
  build=$root/build-device
  failed=""
  : >"$out/summary.txt"
}

left() { echo $((budget - ($(date +%s) - start))); }
# cap SECONDS: the smaller of SECONDS and what is left minus a reserve for
# packaging the results; at least 10.
cap() {
  local c=$1 l
  l=$(($(left) - 20))
  [ "$l" -lt "$c" ] && c=$l
  [ "$c" -lt 10 ] && c=10
  echo "$c"
}
step() { # step NAME LOG SECONDS COMMAND...
  local name=$1 log=$2 secs
  secs=$(cap "$3")
  shift 3
  echo "== $name (limit ${secs}s, $(left)s left)" | tee -a "$out/summary.txt"
  local t0=$(date +%s) rc
  timeout --kill-after=5 "$secs" "$@" >"$log" 2>&1
  rc=$?
  echo "   rc=$rc in $(($(date +%s) - t0))s" | tee -a "$out/summary.txt"
  tail -n 5 "$log" | sed 's/^/   | /' | tee -a "$out/summary.txt"
  [ "$rc" -ne 0 ] && failed="$failed $name"
  return "$rc"
}

# build_step SECONDS ARGS...: the Release build of $build as the step
# "build" (build.log), `cmake --build "$build" ARGS...` after configuring
# with the host's nvcc.
build_step() {
  local secs=$1
  shift
  step build "$out/build.log" "$secs" bash -c 'cmake -S . -B "$0" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_COMPILER="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" &&
    cmake --build "$0" "$@"' "$build" "$@"
}

# device_convdata: the GPU into summary.txt, and the DLMC ResNet-50 files
# (.convdata/rn50.tar.xz, carried: ../shared does not travel) unpacked
# into data/, over what a warm machine kept there (the carried archive may
# hold more sparsities than the last one).
device_convdata() {
  nvidia-smi -L 2>&1 | tee -a "$out/summary.txt"
  if [ -f .convdata/rn50.tar.xz ]; then
    mkdir -p data && tar -xJf .convdata/rn50.tar.xz -C data
  fi
}
