#!/usr/bin/env bash
# The whole GPU check in ONE device call (≤ 10 minutes): nvidia-smi, a
# Release build (-j16), the GPU tests (ctest -L gpu), the CPU tests,
# compute-sanitizer memcheck, racecheck and initcheck runs of each GPU
# strategy's quick tests (zero errors required), and a quick benchmark;
# logs and results land under $OUT (≤ 8 files).
#
#   SPF_GIT_COMMIT=<sha> bash scripts/device-check.sh     (carry devdata/)
#
# Environment:
#   OUT                  where logs go (default ./device-check-out)
#   SPF_CHECK_BUDGET_S   seconds the whole script may take (default 570);
#                        each step gets a share and the benchmark the rest
#   SPF_GIT_COMMIT       commit the results are tagged with (the device tree
#                        has no .git)
#   SPF_BENCH_ARGS       benchmark arguments (default: --quick on sparsert20,
#                        dlmc and large: four sparsert20 shapes at 0.9, two
#                        DLMC and two large problems; --no-spforge-tune, as
#                        exhaustive tuning of one sparsert20 problem outlasted
#                        two minutes on the H200 on 2026-11-22); several
#                        invocations separated by ';' run one after another,
#                        each writing its own results (and tuning logs), so a
#                        time limit loses only the last
#                        none: no benchmark (a check of the tests alone)
#   SPF_SKIP_CPU_TESTS   1: leave the CPU tests to CI (more time for the bench)
#   SPF_TORCH_CHECK      1: also tests/python/test_torch_gpu.py (spforge.torch
#                        under torch.compile and CUDA graphs; python3 with
#                        torch), up to 5 minutes of the budget
#   SPF_SEARCH_EVAL      a problem list (e.g. bench/search-eval-holdout.txt),
#                        or 1 for bench/search-eval-problems.txt: after the
#                        benchmarks, scripts/search-eval.sh over it with the
#                        time left (the search against the exhaustive oracle)
# devdata/ (scripts/make-devdata.sh) stands in for data/ when data/ is absent.
# The in-process PTX compiler is built in when the host's toolkit has it or
# a wheel of its version is carried in .deps/ (scripts/fetch-nvptxcompiler.sh;
# the host has no network): spforge info in the summary says which.
# Every step runs even when an earlier one failed (except when the library
# did not build); the exit status says whether any failed.
set -uo pipefail
# shellcheck source=device-steps.sh
. "$(dirname "$0")/device-steps.sh"
device_init device-check
results=$build/bench-results
bench_args=${SPF_BENCH_ARGS:---quick --no-spforge-tune --set sparsert20 --set dlmc --set large}

nvidia-smi >"$out/nvidia-smi.txt" 2>&1 || echo "nvidia-smi failed" >>"$out/nvidia-smi.txt"
head -n 15 "$out/nvidia-smi.txt" | tee -a "$out/summary.txt"

if [ ! -e data ] && [ -d devdata ]; then
  ln -s devdata data
  echo "data/ -> devdata/ (subset)" | tee -a "$out/summary.txt"
fi
subset_data=0
[ -L data ] && subset_data=1

bash scripts/fetch-nvptxcompiler.sh 2>&1 | tee -a "$out/summary.txt"

# Keep going past a broken target (a colleague's half-finished test, say):
# the steps below run with whatever built, and the build still counts as
# failed. Without the library nothing can run.
build_step 240 -j16 -- -k
if [ ! -f "$build/libspforge.a" ]; then
  echo "build failed: no library; see build.log" | tee -a "$out/summary.txt"
  exit 1
fi
[ -x "$build/spforge" ] && "$build/spforge" info 2>&1 | grep -A3 "jit assembler" | tee -a "$out/summary.txt"

# test_proxy tunes four problems exhaustively to compare proxy and real
# times (minutes): here its quick subset runs instead.
# python_torch_gpu (spforge.torch: torch.compile, CUDA graphs) takes a few
# minutes of its own, mostly inductor compiling: a step of its own, run
# with SPF_TORCH_CHECK=1 (python3 with torch).
step gpu-tests "$out/gpu-tests.log" 240 bash -c "ctest --test-dir '$build' -L gpu \
  -E 'test_proxy|python_torch_gpu' --output-on-failure --timeout 200 && \
  '$build/tests/test_proxy' quick"
[ "${SPF_TORCH_CHECK:-0}" = 1 ] && step torch-gpu "$out/torch-gpu.log" 300 \
  env SPF_LIB="$build/libspforge.so" python3 "$root/tests/python/test_torch_gpu.py"

# The README's demo on the GPU: spforge run picks a GPU plan when there is a device.
step demo "$out/demo.log" 60 "$build/spforge" run --n 512

# test_real_data and the CLI sweep read every file of the full data set;
# with the devdata/ subset they run in CI instead.
exclude='^$'
[ "$subset_data" = 1 ] && exclude='test_real_data|cli_test_sweep'
[ "${SPF_SKIP_CPU_TESTS:-0}" = 1 ] || step cpu-tests "$out/cpu-tests.log" 60 ctest --test-dir "$build" -LE gpu -E "$exclude" \
  --output-on-failure -j8 --timeout 80

# compute-sanitizer over each GPU strategy's quick tests: test_generic
# --quick (the GENERIC CSR kernel), test_tc --quick (the tensor-core kernels:
# two shapes, N 3 and 49, every nt and split), test_tcfrag --quick (three
# shapes, K whole and cut), test_panel --quick (three shapes, one panel and
# several), test_structured --quick (2:4 and V:2:8, odd shapes), test_conv_window_gpu --quick
# (the window kernel: every config, f16, chunked windows), test_conv --quick
# (conv plans, memcheck only) and test_plan quick (AUTO's pick, a forced
# UNROLLED f16 kernel, GENERIC bf16) under memcheck (out-of-bounds and
# misaligned accesses, device leaks), racecheck (shared-memory hazards) and
# initcheck (reads of uninitialised global memory), a few seconds each; and
# the search's proxy kernels (test_proxy quick, about a minute) under
# memcheck. Zero errors required; one summary line per tool and test.
# --target-processes application-only: the library runs ptxas as a child
# process, and compute-sanitizer 2025.3 following it died of SIGSEGV with no
# report (test_proxy quick, test_search, test_plan_cache on an H100).
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
sanitize_gpu() {
  local log=$out/compute-sanitizer.log r tool test secs t0 rc errors hazards run
  echo "== compute-sanitizer ($(left)s left)" | tee -a "$out/summary.txt"
  : >"$log"
  local runs=("memcheck:test_panel --quick" "racecheck:test_panel --quick"
    "initcheck:test_panel --quick"
    "memcheck:test_tcfrag --quick" "racecheck:test_tcfrag --quick"
    "initcheck:test_tcfrag --quick"
    "memcheck:test_structured --quick" "racecheck:test_structured --quick"
    "initcheck:test_structured --quick"
    "memcheck:test_generic --quick" "memcheck:test_plan quick" "memcheck:test_tc --quick"
    "racecheck:test_generic --quick" "racecheck:test_plan quick" "racecheck:test_tc --quick"
    "initcheck:test_generic --quick" "initcheck:test_plan quick" "initcheck:test_tc --quick"
    "memcheck:test_conv_window_gpu --quick" "racecheck:test_conv_window_gpu --quick"
    "initcheck:test_conv_window_gpu --quick" "memcheck:test_conv --quick"
    "memcheck:test_proxy quick")
  for r in "${runs[@]}"; do
    tool=${r%%:*} test=${r#*:}
    local flags=(--target-processes application-only --error-exitcode 1)
    [ "$tool" = memcheck ] && flags+=(--leak-check full)
    secs=$(cap 120)
    t0=$(date +%s)
    # shellcheck disable=SC2086
    timeout --kill-after=5 "$secs" "$sanitizer" --tool "$tool" "${flags[@]}" "$build/tests/"$test \
      >"$log.run" 2>&1
    rc=$?
    { echo "==== $tool: $test (rc=$rc)"; cat "$log.run"; } >>"$log"
    run=$(cat "$log.run")
    # memcheck and initcheck end with "ERROR SUMMARY: N errors", racecheck
    # with "RACECHECK SUMMARY: H hazards displayed (N errors, W warnings)".
    errors=$(grep -o 'ERROR SUMMARY: [0-9]* error' <<<"$run" | grep -o '[0-9]*' | tail -n 1)
    hazards=$(grep -o 'RACECHECK SUMMARY: .*' <<<"$run" | tail -n 1)
    [ -z "$errors" ] && errors=$(grep -o '([0-9]* error' <<<"$hazards" | grep -o '[0-9]*')
    printf '   %-9s %-20s errors=%s rc=%s %ss%s\n' "$tool" "$test" "${errors:-?}" "$rc" \
      "$(($(date +%s) - t0))" "${hazards:+ (${hazards#RACECHECK SUMMARY: })}" | tee -a "$out/summary.txt"
    # rc 77 (no device) fails here too: this script runs on the GPU host.
    if [ "$rc" -ne 0 ] || [ "${errors:-?}" != 0 ]; then
      failed="$failed $tool:${test%% *}"
    fi
  done
  rm -f "$log.run"
}
sanitize_gpu

mkdir -p "$results/tuning"
[ "$bench_args" = none ] && bench_args=""
IFS=';' read -ra bench_runs <<<"$bench_args"
for i in "${!bench_runs[@]}"; do
  # shellcheck disable=SC2086
  step "bench$i" "$out/bench$i.log" 400 "$build/bench/spforge-bench" ${bench_runs[$i]} --data data \
    --out "$results" --tuning-logs "$results/tuning"
done
cat "$out"/bench[0-9]*.log >"$out/bench.log" 2>/dev/null && rm -f "$out"/bench[0-9]*.log

eval_list=${SPF_SEARCH_EVAL:-0}
[ "$eval_list" = 1 ] && eval_list=$root/bench/search-eval-problems.txt
if [ "$eval_list" != 0 ]; then
  eval_s=$(cap 600)
  step search-eval "$out/search-eval.log" "$eval_s" bash "$root/scripts/search-eval.sh" "$build" \
    "$results/search-eval" "$eval_list" $((eval_s - 10))
  python3 "$root/scripts/search_report.py" "$results/search-eval" \
    --model "$root/models/rank_model.txt" >>"$out/search-eval.log" 2>&1
fi

# The speedup plots, where matplotlib is installed (the GPU host).
if ls "$results"/*.json >/dev/null 2>&1; then
  python3 "$root/scripts/plot_bench.py" "$results"/*.json >>"$out/bench.log" 2>&1 ||
    echo "plot_bench: no plot (see bench.log)" | tee -a "$out/summary.txt"
fi

# Results and plots in one archive: ≤ 8 files under $OUT.
tar -czf "$out/bench-results.tar.gz" -C "$build" bench-results 2>/dev/null
echo "== done in $(($(date +%s) - start))s; failed:${failed:- none}" | tee -a "$out/summary.txt"
[ -z "$failed" ]
