#!/usr/bin/env bash
# spforge conv end to end (CPU backend on a machine without a GPU, the GPU
# plan where there is one): 3x3 with padding, 1x1 direct and strided, the
# 7x7 stem on C = 3, both layouts, bias / residual / ReLU, checked against
# the reference by the command itself (exit 1 past the tolerance); --json
# fields; input (1) and usage (2) errors naming what was wrong.
. "$(dirname "$0")/harness.sh"

expect_rc 0 help_conv conv --help
check "conv --help prints its usage" grep -q "usage: spforge conv WEIGHTS" "$tmp/help_conv.out"
check "conv is listed" sh -c "'$cli' --help | grep -q '^  conv '"

# weights: 3x3 over C = 6 (54 columns), 1x1 over C = 6, the stem's 7x7 over C = 3
expect_rc 0 gen33 gen "$tmp/w33.smtx" --rows 10 --cols 54 --sparsity 0.7 --seed 3
expect_rc 0 gen11 gen "$tmp/w11.smtx" --rows 12 --cols 6 --sparsity 0.5 --seed 4
expect_rc 0 gen77 gen "$tmp/w77.smtx" --rows 8 --cols 147 --sparsity 0.8 --seed 5

expect_rc 0 c33 conv "$tmp/w33.smtx" --input-shape 2,6,9,7 --padding 1 --bias --relu --json
# a GPU plan may read the input itself (path implicit) where that measured faster
json_true c33 "d['passed'] and d['path'] in ('im2col', 'implicit') and d['out_h'] == 9 and d['out_w'] == 7" \
  "3x3 padding 1 keeps 9x7 and passes"
json_true c33 "d['kernel_h'] == 3 and d['kernel_w'] == 3 and d['out_channels'] == 10" \
  "the square filter comes from the columns"
expect_rc 0 c33_nhwc conv "$tmp/w33.smtx" --input-shape 3,6,8,5 --stride 2 --layout nhwc --residual --relu --json
json_true c33_nhwc "d['passed'] and d['out_h'] == 3 and d['out_w'] == 2 and d['launches'] == 1" \
  "NHWC stride 2: one launch, 3x2 out"
expect_rc 0 c11 conv "$tmp/w11.smtx" --input-shape 2,6,5,5 --residual --json
json_true c11 "d['passed'] and d['path'] == 'direct' and d['workspace_bytes'] == 0" \
  "1x1 stride 1 runs direct, no workspace"
expect_rc 0 c11s conv "$tmp/w11.smtx" --input-shape 1,6,7,7 --stride 2 --json
json_true c11s "d['passed'] and d['path'] in ('im2col', 'implicit') and d['out_h'] == 4" \
  "1x1 stride 2 gathers"
expect_rc 0 c77 conv "$tmp/w77.smtx" --input-shape 1,3,15,13 --stride 2 --padding 3 --bias --json
json_true c77 "d['passed'] and d['out_h'] == 8 and d['out_w'] == 7" "the stem: 7x7 stride 2 padding 3"
expect_rc 0 c_graph conv "$tmp/w33.smtx" --input-shape 1,6,9,7 --padding 1 --timing graph --json
json_true c_graph "d['passed'] and ('CUDA graph' in d['timing'] or d['timing'] == 'wall time per run')" \
  "--timing graph: replays on the GPU (the CPU backend's wall time without one)"
expect_rc 0 c_both conv "$tmp/w33.smtx" --input-shape 1,6,9,7 --padding 1 --timing both --json
json_true c_both "d['passed'] and (('graph_time_ms_median' in d and 'loop' in d['timing']) or d['timing'] == 'wall time per run')" \
  "--timing both: the loop's time and the graph's from one plan (the CPU backend's wall time without a GPU)"
expect_rc 0 c_text conv "$tmp/w33.smtx" --input-shape 1,6,4,4 --kernel 3x3 --padding 1 --repeat 2
check "text output names the path" grep -q "^path       im2col" "$tmp/c_text.out"
check "text output has the error line" grep -q "^error .*: ok" "$tmp/c_text.out"

# usage errors (2) and input errors (1)
expect_rc 2 no_shape conv "$tmp/w33.smtx"
stderr_has no_shape "--input-shape N,C,H,W is required"
expect_rc 2 bad_shape conv "$tmp/w33.smtx" --input-shape 1,6,9
stderr_has bad_shape "expected N,C,H,W"
expect_rc 2 zero_shape conv "$tmp/w33.smtx" --input-shape 1,0,9,9
expect_rc 2 bad_kernel conv "$tmp/w33.smtx" --input-shape 1,6,9,9 --kernel 3y3
stderr_has bad_kernel "expected R or RxS"
expect_rc 2 bad_timing conv "$tmp/w33.smtx" --input-shape 1,6,9,9 --timing events
stderr_has bad_timing "loop|graph|both"
expect_rc 2 bad_layout conv "$tmp/w33.smtx" --input-shape 1,6,9,9 --layout nwhc
expect_rc 2 no_file conv --input-shape 1,6,9,9
expect_rc 1 not_square conv "$tmp/w33.smtx" --input-shape 1,5,9,9
stderr_has not_square "54 columns are not C = 5 times a square filter"
expect_rc 1 kernel_mismatch conv "$tmp/w33.smtx" --input-shape 1,6,9,9 --kernel 1x3
stderr_has kernel_mismatch "c·r·s"
expect_rc 1 too_small conv "$tmp/w33.smtx" --input-shape 1,6,2,2
stderr_has too_small "does not fit"
expect_rc 1 missing conv "$tmp/none.smtx" --input-shape 1,6,9,9
stderr_has missing "none.smtx"

report
