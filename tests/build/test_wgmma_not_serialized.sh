#!/usr/bin/env bash
# ptxas must not serialize the Hopper kernels' wgmma: where it cannot keep
# them asynchronous it waits after each one and says so (info C7520,
# "wgmma.mma_async instructions are serialized"), and the kernel still
# builds and runs, only slower. It did so to the staged conv kernel once its
# argument struct passed 128 bytes, and layer3 at batch 32 went from 20.0 to
# 27.6 µs (bench/results/conv/README.md). Each sm_90a source is assembled as
# the library builds it and any C7520 fails the test, naming the functions.
#   test_wgmma_not_serialized.sh NVCC SOURCE_DIR FILE...
set -uo pipefail
nvcc=$1 src=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
for file in "$@"; do
  log=$tmp/$(basename "$file").log
  if ! "$nvcc" -O3 -DNDEBUG -DSPF_HAVE_CUDA=1 -std=c++17 -gencode=arch=compute_90a,code=sm_90a \
    -I"$src/include" -I"$src/src" -cubin -o "$tmp/out.cubin" "$file" >"$log" 2>&1; then
    echo "FAIL $file: did not compile"
    tail -5 "$log"
    failed=1
    continue
  fi
  if grep -q C7520 "$log"; then
    echo "FAIL $file: ptxas serializes the wgmma of"
    grep C7520 "$log" | grep -o "function '[^']*'" | sort -u | sed 's/^/  /'
    failed=1
  else
    echo "ok   $file"
  fi
done
exit $failed
