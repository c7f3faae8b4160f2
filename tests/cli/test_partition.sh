#!/usr/bin/env bash
# spforge partition end to end (no GPU needed): a graph and a non-square
# matrix split over several rank counts; the JSON's parts cover every row
# once, their nonzeros add up to the matrix's, every row of B received is
# sent by someone, the balanced split is never worse than an even one by
# rows; layers of ranks (--replicas) hold B once each and exchange less;
# the text table; usage (2) and input (1) errors naming what was
# wrong.
. "$(dirname "$0")/harness.sh"

expect_rc 0 help_partition partition --help
check "partition --help prints its usage" grep -q "usage: spforge partition FILE" "$tmp/help_partition.out"
check "partition is listed" sh -c "'$cli' --help | grep -q '^  partition '"

expect_rc 0 gen_graph gen "$tmp/g.mtx" --kind rmat --rows 4096 --cols 4096 --sparsity 0.995 --seed 2
expect_rc 0 gen_wide gen "$tmp/w.smtx" --rows 300 --cols 700 --sparsity 0.9 --seed 3

expect_rc 0 p_graph partition "$tmp/g.mtx" --ranks 1,2,3,8 --n 64 --dtype f16 --json
json_true p_graph "[s['ranks'] for s in d['splits']] == [1, 2, 3, 8] and d['b_split'] == 'rows'" \
  "one split per rank count, B split as A's rows"
json_true p_graph "all(sum(p['rows'] for p in s['parts']) == d['rows'] and \
all(s['parts'][i]['row0'] + s['parts'][i]['rows'] == s['parts'][i + 1]['row0'] \
for i in range(len(s['parts']) - 1)) for s in d['splits'])" "the parts cover every row once"
json_true p_graph "all(sum(p['own_nnz'] + p['remote_nnz'] for p in s['parts']) == d['nnz'] \
for s in d['splits'])" "own and remote nonzeros add up to the matrix's"
json_true p_graph "all(sum(p['recv_rows'] for p in s['parts']) == sum(p['send_rows'] \
for p in s['parts']) == s['recv_rows_total'] for s in d['splits'])" "every row received is sent"
json_true p_graph "all(s['largest_work'] <= s['even_rows_largest_work'] for s in d['splits'])" \
  "the balanced split is no worse than an even one"
json_true p_graph "d['splits'][0]['recv_rows_total'] == 0 and \
d['splits'][0]['parts'][0]['remote_nnz'] == 0" "one rank receives nothing"
expect_rc 0 p_wide partition "$tmp/w.smtx" --ranks 4 --json
json_true p_wide "d['b_split'] == 'even' and [p['b_rows'] for p in d['splits'][0]['parts']] == \
[175, 175, 175, 175]" "a non-square A splits B evenly"
expect_rc 0 p_layers partition "$tmp/g.mtx" --ranks 2,4,8 --replicas 2 --n 64 --json
json_true p_layers "d['replicas'] == 2 and d['splits'][0]['recv_rows_total'] == 0" \
  "two copies of B on 2 ranks: nothing is exchanged"
json_true p_layers "all(sum(p['own_nnz'] + p['remote_nnz'] for p in s['parts']) == d['nnz'] and \
sum(p['b_rows'] for p in s['parts']) == 2 * d['rows'] for s in d['splits'])" \
  "in layers, each layer's ranks hold B once"
json_true p_layers "d['splits'][2]['recv_rows_total'] < \
json.load(open('$tmp/p_graph.out'))['splits'][3]['recv_rows_total']" \
  "on 8 ranks, two layers exchange fewer rows than one"
expect_rc 2 bad_layers partition "$tmp/g.mtx" --ranks 2,3 --replicas 2
stderr_has bad_layers "3 is not a multiple"
expect_rc 0 p_text partition "$tmp/g.mtx" --ranks 4 --n 128
check "the text names the split and the table" sh -c "grep -q '^P = 4: split' '$tmp/p_text.out' \
  && grep -q 'recv rows' '$tmp/p_text.out' && grep -q 'MB at N = 128 f32' '$tmp/p_text.out'"

expect_rc 2 no_ranks partition "$tmp/g.mtx"
stderr_has no_ranks "--ranks P[,P...] is required"
expect_rc 2 bad_ranks partition "$tmp/g.mtx" --ranks 2,x
stderr_has bad_ranks "expected rank counts from 1 to 65536"
expect_rc 2 zero_ranks partition "$tmp/g.mtx" --ranks 0
expect_rc 2 bad_split partition "$tmp/g.mtx" --ranks 2 --b-split cols
expect_rc 1 missing partition "$tmp/none.mtx" --ranks 2
stderr_has missing "none.mtx"

report
