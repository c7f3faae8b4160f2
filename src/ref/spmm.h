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

#endif
