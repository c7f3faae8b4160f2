/* The GPU tests' check of a built plan: C = A·B (+ bias, ReLU as the
 * options ask) on fresh random B and bias — seeds *seed and *seed + 1, then
 * *seed moves on by 2, so no two checks share inputs and none shares the
 * self-check's — run through host_run_plan and compared with the reference
 * accumulated in double. Returns the relative error (INFINITY when the
 * buffers could not be allocated; a failed run is a CHECK failure). */
#ifndef SPF_TESTS_PLAN_ERROR_H
#define SPF_TESTS_PLAN_ERROR_H

#include "test_util.h"

#include "gpu/host_run.h"

#include <math.h>
#include <stdlib.h>

#ifdef SPF_HAVE_CUDA

static double plan_product_error(const spf_plan *p, const spf_matrix *a, int64_t n,
                                 const spf_plan_options *o, uint64_t *seed)
{
    int64_t m = spf_matrix_rows(a), k = spf_matrix_cols(a);
    uint64_t s = *seed;
    *seed += 2;
    float *b = malloc((size_t)(k * n) * sizeof *b), *c = malloc((size_t)(m * n) * sizeof *c);
    float *bias = malloc((size_t)m * sizeof *bias);
    double *ref = malloc((size_t)(m * n) * sizeof *ref);
    double err = INFINITY;
    if (b && c && bias && ref) {
        spf_fill_uniform(b, k * n, s);
        spf_fill_uniform(bias, m, s + 1);
        const float *bias_arg = o->bias ? bias : NULL;
        timing_result t;
        spf_status st = spf_reference_spmm_f64(a, n, b, ref, bias_arg, o->relu, 0);
        if (st == SPF_OK)
            st = host_run_plan(p, m, k, n, b, c, bias_arg, NULL, &t);
        CHECK_MSG(st == SPF_OK, "running the plan: %s: %s", spf_status_string(st), spf_last_error());
        if (st == SPF_OK)
            err = spf_relative_error(c, ref, m * n);
    }
    free(b);
    free(c);
    free(bias);
    free(ref);
    return err;
}

#endif

#endif
