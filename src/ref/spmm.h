/* The CPU reference SpMM at any element strides of B and C (src/ref/spmm.c):
 * the public spf_reference_spmm / _f64 are its N_LAST case, and the cpu
 * strategy runs every spf_layout through it without transposed copies. */
#ifndef SPF_REF_SPMM_H
#define SPF_REF_SPMM_H

#include "plan/problem.h"
#include "spforge.h"

/* spf_reference_spmm with element (kk, j) of B at b[kk·bs.row + j·bs.col]
 * and element (i, j) of C at c[i·cs.row + j·cs.col] (problem_b_strides /
 * problem_c_strides); b holds K·n and c M·n floats, host buffers. Each
 * element of C sums its row's nonzeros in column order whatever the
 * strides, so every layout gives the bits of the N_LAST result. */
spf_status reference_spmm_strided(const spf_matrix *a, int64_t n, const float *b,
                                  operand_strides bs, float *c, operand_strides cs,
                                  const float *bias, int relu, spf_accumulate accumulate,
                                  int threads);

/* spf_relative_error over ‖ref‖ + bias_norm instead of ‖ref‖. A 16-bit C
 * is rounded before its bias is added (the dense strategy's elementwise
 * pass), so where the bias nearly cancels A·B the error follows ‖A·B‖,
 * which is at most ‖ref‖ + ‖bias‖, not ‖A·B + bias‖: on an H100 one bf16
 * output of 0.5826 - 0.5832 was 0.996 "wrong" by spf_relative_error with
 * both roundings within bf16's half ulp (test_strategies, 2026-11-27).
 * bias_norm: ref_bias_norm's, 0 without bias. */
double relative_error_biased(const float *c, const double *ref, int64_t count, double bias_norm);

/* ‖bias‖ over the outputs of C compared: n times each of the rows' bias
 * (rows: rows_count indices, or NULL for rows 0 .. rows_count - 1); 0 for
 * a NULL bias. */
double ref_bias_norm(const float *bias, const int64_t *rows, int64_t rows_count, int64_t n);

#endif
