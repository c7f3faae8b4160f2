#!/usr/bin/env bash
# Issue 15's multi-GPU measurements in ONE device call on a host of several
# GPUs (nvidia-h200-x2 / -x4 or the H100 kinds; ≤ 10 minutes), results
# under $OUT:
#   - the library, CLI and GPU tests built (Release, -j);
#   - test_generic (long rows cut into pieces among the cases; and its
#     --quick subset under compute-sanitizer memcheck and racecheck) and
#     test_dist_nccl (also under memcheck)
#     (the C API's distributed plans, a thread a GPU, NCCL from $SPF_NCCL
#     or the toolkit's or torch's libnccl);
#   - scripts/bench_dist.py under torchrun, one process per GPU: the R-MAT
#     graph of 2^22 vertices (52.8 M edges) at N = 128, one GPU against 2
#     and 4 (B split by rows and replicated), each step timed alone, and
#     NCCL's all-to-all bandwidth (dist.csv, dist-links.csv);
#   - scripts/sharded_eval.py over bench/sharded-eval-problems.txt on one
#     GPU and on two, each GPU's process with its share of the host's cores
#     (the wall times in each sharded.json), both folders kept in
#     sharded-eval.tar.gz;
#   - tests/python/test_distributed.py: gloo ranks on the CPU and sharing
#     one GPU, and NCCL ranks a GPU each (2 to 4).
#
#   SPF_GIT_COMMIT=<sha> bash scripts/device-dist.sh
#
# <sha> written out here, not $(git rev-parse ...) run on the device: the
# copy's .git there can be stale (at b8758f4 it said 7c0c94b).
#
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0 and the torch and NVSHMEM
# equivalents): it can take a shared host's GPUs out of service.
# SPF_CHECK_BUDGET_S: seconds the whole script may take (default 570).
# SPF_SKIP_DIST_TEST=1 leaves the Python test out, SPF_SKIP_SHARDED=1 the
# sharded tuning (about 260 s of the budget); SPF_DIST_BENCH_ONLY=1 runs
# the build and bench_dist alone (no tests, sanitizers or sharded tuning:
# a second look at a tree whose tests passed on these GPUs). What comes back: summary.txt,
# dist.csv, dist-links.csv, traces.tar.gz (a timeline of three calls of each
# run and rank, torch.profiler's Chrome traces), sharded-eval.tar.gz and
# logs.tar.gz.
# SPF_DIST_ARGS: bench_dist.py's arguments in place of the R-MAT target
# run's (a smaller graph for a quick look, say).
set -uo pipefail
# shellcheck source=device-steps.sh
. "$(dirname "$0")/device-steps.sh"
device_init device-dist
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

{ nvidia-smi && nvidia-smi topo -m; } >"$out/nvidia-smi.txt" 2>&1
head -n 15 "$out/nvidia-smi.txt" | tee -a "$out/summary.txt"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
echo "GPUs: $gpus" | tee -a "$out/summary.txt"

build_step 240 -j32 --target spforge spforge_cli test_generic test_dist_nccl
if [ ! -f "$build/libspforge.so" ]; then
  echo "build failed: no library; see build.log" | tee -a "$out/summary.txt"
  exit 1
fi
export SPF_LIB=$build/libspforge.so
if [ -z "${SPF_NCCL:-}" ]; then
  for f in /usr/local/cuda/lib64/libnccl.so.2 $(python3 -c "import nvidia.nccl, os
print(os.path.join(list(nvidia.nccl.__path__)[0], 'lib', 'libnccl.so.2'))" 2>/dev/null); do
    [ -f "$f" ] && { export SPF_NCCL=$f; break; }
  done
fi
echo "NCCL: ${SPF_NCCL:-not found}" | tee -a "$out/summary.txt"

if [ "${SPF_DIST_BENCH_ONLY:-0}" = 1 ]; then
  export SPF_SKIP_SHARDED=1 SPF_SKIP_DIST_TEST=1
else
  step test-generic "$out/gpu-tests.log" 120 "$build/tests/test_generic"
  step test-dist-nccl "$out/dist-nccl.log" 120 "$build/tests/test_dist_nccl"
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  step memcheck-generic "$out/memcheck.log" 120 "$sanitizer" --tool memcheck --leak-check full \
    --error-exitcode 1 "$build/tests/test_generic" --quick
  # the long rows' pieces share a block's memory with the sub-warps' rows
  step racecheck-generic "$out/racecheck.log" 90 "$sanitizer" --tool racecheck \
    --error-exitcode 1 "$build/tests/test_generic" --quick
  # a thread a GPU, NCCL's kernels included (their own accesses are NCCL's)
  # NCCL's own handled API errors (its probes of kernels for other chips,
  # peer access enabled twice: 900 at 5bb9712) are not counted, only accesses
  step memcheck-dist-nccl "$out/memcheck-dist-nccl.log" 90 "$sanitizer" --tool memcheck \
    --report-api-errors no --error-exitcode 1 --target-processes application-only \
    "$build/tests/test_dist_nccl"
fi

ranks=""
for p in 2 4 8; do [ "$p" -le "$gpus" ] && ranks="$ranks${ranks:+,}$p"; done
dist_args=${SPF_DIST_ARGS:---scale 22 --sparsity 0.999997 --columns 128 \
  --splits rows,rows@nccl,replicated}
rm -rf "$build/traces"
# shellcheck disable=SC2086
step bench-dist "$out/bench-dist.log" 300 torchrun --nproc_per_node "$gpus" \
  "$root/scripts/bench_dist.py" $dist_args --ranks "${ranks:-1}" --out "$out/dist.csv" \
  --links-out "$out/dist-links.csv" --trace "$build/traces"
tar -czf "$out/traces.tar.gz" -C "$build" traces 2>/dev/null

if [ "${SPF_SKIP_SHARDED:-0}" != 1 ]; then
  list=$root/bench/sharded-eval-problems.txt
  results=$build/sharded-eval
  rm -rf "$results"
  share=$(($(nproc) / (gpus > 0 ? gpus : 1)))
  step sharded-1gpu "$out/sharded-1gpu.log" 200 python3 "$root/scripts/sharded_eval.py" \
    "$build" "$results/gpu1" "$list" --gpus 0 --threads-per-gpu "$share"
  [ "$gpus" -ge 2 ] && step sharded-2gpu "$out/sharded-2gpu.log" 150 \
    python3 "$root/scripts/sharded_eval.py" "$build" "$results/gpu2" "$list" --gpus 0,1 \
    --threads-per-gpu "$share"
  tar -czf "$out/sharded-eval.tar.gz" -C "$build" sharded-eval 2>/dev/null
fi
# last: the Python test (the measurements first, should time run short)
[ "${SPF_SKIP_DIST_TEST:-0}" = 1 ] ||
  step dist-test "$out/dist-test.log" 150 python3 "$root/tests/python/test_distributed.py"
# what comes back is at most 8 files: the logs in one archive
tar -czf "$out/logs.tar.gz" -C "$out" nvidia-smi.txt $(cd "$out" && ls ./*.log) &&
  rm -f "$out"/*.log "$out/nvidia-smi.txt"

echo "== done in $(($(date +%s) - start))s; failed:${failed:- none}" | tee -a "$out/summary.txt"
[ -z "$failed" ]
