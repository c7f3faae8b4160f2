/* One problem description (DESIGN.md data flow): what a plan computes,
 * passed to the planner and every strategy instead of parallel parameter
 * lists. C = A·B (+ bias[row]) (then ReLU), B and C in their layouts. */
#ifndef SPF_PLAN_PROBLEM_H
#define SPF_PLAN_PROBLEM_H

#include "spforge.h"

#include <stdint.h>

typedef struct problem {
    const spf_matrix *a;   /* host CSR; read while a plan is created only    */
    int64_t m, k, n;       /* A is m×k; n columns of B and C (< 2^31 each)    */
    spf_dtype dtype;       /* storage of B and C                             */
    spf_math math;
    spf_layout b_layout;   /* N_LAST: B is k×n; N_FIRST: n×k (row-major)     */
    spf_layout c_layout;   /* N_LAST: C is m×n; N_FIRST: n×m (row-major)     */
    int bias, relu;
} problem;

/* The problem of spf_plan_create(a, n, o); o already checked. */
problem problem_make(const spf_matrix *a, int64_t n, const spf_plan_options *o);

/* The same problem of an M×K matrix known by its shape alone (a = NULL): what
 * a lookup by a name of the matrix (spf_matrix_name) knows of it. */
problem problem_make_shape(int64_t m, int64_t k, int64_t n, const spf_plan_options *o);

/* Element strides of B and C: element (kk, j) of B is at
 * b[kk·row + j·col], element (i, j) of C at c[i·row + j·col]. */
typedef struct operand_strides {
    int64_t row, col;
} operand_strides;

operand_strides problem_b_strides(const problem *p);
operand_strides problem_c_strides(const problem *p);

/* A's nonzeros over its M·K cells (0 for an empty shape): the strategies
 * that refuse too dense or too sparse a matrix ask it. */
double problem_density(const problem *p);

/* "1024×4096 at n = 256, f16 (math default), B n_last, C n_first, bias,
 * relu": for messages and logs. */
/* The operands of one launch of p, as the precompiled tensor-core kernels
 * (tc, tcfrag) take them: B element (k, j) at b[k·b_row + j·b_col], C
 * element (i, j) at c[i·c_row + j·c_col], the bias (NULL unless p has
 * one) and ReLU. */
typedef struct spmm_operands {
    int64_t n;
    spf_layout b_layout;
    const void *b;
    int64_t b_row, b_col;
    void *c;
    int64_t c_row, c_col;
    const float *bias;
    int relu;
} spmm_operands;

spmm_operands problem_operands(const problem *p, const void *b, void *c, const float *bias);

void problem_describe(const problem *p, char *buf, size_t cap);

#endif
