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
# It reads the report ptxas wrote when the library was built
# (cmake/ptxas_log.sh: OBJECT.ptxas.log, -Xptxas=-v), so nothing is
# assembled again; and it counts the fences ptxas added (info C7519,
# "warpgroup.arrive is injected"), which the kernels' sources explain.
#   test_sm90a_ptxas.sh OBJECT_DIR SOURCE_DIR FILE...
set -uo pipefail
objdir=$1 src=$2
shift 2
failed=0
for file in "$@"; do
  log=$objdir/${file#"$src"/}.o.ptxas.log
  if [ ! -e "$log" ]; then
    echo "FAIL $file: no ptxas report $log (build the library first)"
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
  kernels=$(grep -c "Compiling entry function" "$log") # 0 in a file of host code
  fenced=$(grep C7519 "$log" | grep -o "function '[^']*'" | sort -u | wc -l)
  if [ $ok = 1 ]; then
    echo "ok   $file: $kernels kernels, $fenced with fences added (C7519)"
  else
    failed=1
  fi
done
exit $failed
