#!/usr/bin/env bash
# What ptxas does to the Hopper kernels that still builds and runs, only
# slower, fails here, naming the functions:
#   - serializing their wgmma: where it cannot keep them asynchronous it
#     waits after each one and says so (info C7520, "wgmma.mma_async
#     instructions are serialized"). It did so to the staged conv kernel
#     once its argument struct passed 128 bytes, and layer3 at batch 32
#     went from 20.0 to 27.6 µs (bench/results/conv/README.md);
#   - spilling registers to local memory: the wgmma kernels hold their
#     accumulators and fragments in registers up to the limit (the sparse
#     conv kernel at 255), and a spill sits in their inner loops.
# Each sm_90a source is assembled as the library builds it (-Xptxas -v for
# the spill counts), as many at once as there are cores (the conv
# warpgroup kernels are ~190 instantiations, about 5 CPU-minutes).
#   test_sm90a_ptxas.sh NVCC SOURCE_DIR FILE...
set -uo pipefail
nvcc=$1 src=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
jobs=$(nproc 2>/dev/null || echo 2)
i=0
for file in "$@"; do
  i=$((i + 1))
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
  ( if "$nvcc" -O3 -DNDEBUG -DSPF_HAVE_CUDA=1 -std=c++17 -gencode=arch=compute_90a,code=sm_90a \
      -Xptxas -v -I"$src/include" -I"$src/src" -cubin -o "$tmp/$i.cubin" "$file" \
      >"$tmp/$i.log" 2>&1; then echo ok >"$tmp/$i.rc"; fi ) &
done
wait
failed=0
i=0
for file in "$@"; do
  i=$((i + 1))
  log=$tmp/$i.log
  if [ ! -e "$tmp/$i.rc" ]; then
    echo "FAIL $file: did not compile"
    tail -5 "$log"
    failed=1
    continue
  fi
  ok=1
  if grep -q C7520 "$log"; then
    echo "FAIL $file: ptxas serializes the wgmma of"
    grep C7520 "$log" | grep -o "function '[^']*'" | sort -u | sed 's/^/  /'
    ok=0
  fi
  # "Compiling entry function 'NAME'" comes before its "N bytes spill stores"
  spilled=$(awk '/Compiling entry function/ { name = $0; sub(/.*function \047/, "", name)
                                              sub(/\047.*/, "", name) }
                 /bytes spill stores/ && !/ 0 bytes spill stores/ { print "  " name ": " $0 }' \
    "$log" | sort -u)
  if [ -n "$spilled" ]; then
    echo "FAIL $file: ptxas spills registers in"
    echo "$spilled"
    ok=0
  fi
  [ $ok = 1 ] && echo "ok   $file" || failed=1
done
exit $failed
