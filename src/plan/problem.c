#include "plan/problem.h"

#include "core/dtype.h"
#include "core/matrix.h"

#include <stdio.h>

problem problem_make_shape(int64_t m, int64_t k, int64_t n, const spf_plan_options *o)
{
    return (problem){.m = m, .k = k, .n = n, .dtype = o->dtype, .math = o->math,
                     .b_layout = o->b_layout, .c_layout = o->c_layout, .bias = o->bias,
                     .relu = o->relu};
}

problem problem_make(const spf_matrix *a, int64_t n, const spf_plan_options *o)
{
    problem p = problem_make_shape(a->rows, a->cols, n, o);
    p.a = a;
    return p;
}

operand_strides problem_b_strides(const problem *p)
{
    return p->b_layout == SPF_LAYOUT_N_LAST ? (operand_strides){p->n, 1}
                                            : (operand_strides){1, p->k};
}

operand_strides problem_c_strides(const problem *p)
{
    return p->c_layout == SPF_LAYOUT_N_LAST ? (operand_strides){p->n, 1}
                                            : (operand_strides){1, p->m};
}

double problem_density(const problem *p)
{
    double cells = (double)p->m * (double)p->k;
    return cells > 0 ? (double)spf_matrix_nnz(p->a) / cells : 0.0;
}

void problem_describe(const problem *p, char *buf, size_t cap)
{
    snprintf(buf, cap, "%lld×%lld at n = %lld, %s (math %s), B %s, C %s%s%s", (long long)p->m,
             (long long)p->k, (long long)p->n, dtype_name(p->dtype), spf_math_name(p->math),
             spf_layout_name(p->b_layout), spf_layout_name(p->c_layout), p->bias ? ", bias" : "",
             p->relu ? ", relu" : "");
}

spmm_operands problem_operands(const problem *p, const void *b, void *c, const float *bias)
{
    operand_strides bs = problem_b_strides(p), cs = problem_c_strides(p);
    return (spmm_operands){.n = p->n, .b_layout = p->b_layout, .b = b, .b_row = bs.row,
                           .b_col = bs.col, .c = c, .c_row = cs.row, .c_col = cs.col,
                           .bias = p->bias ? bias : NULL, .relu = p->relu};
}
