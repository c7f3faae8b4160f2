/* The CPU strategy of a plan: the reference SpMM on host buffers, for
 * machines without a GPU (and as the answer of last resort). */
#ifndef SPF_STRATEGY_CPU_CPU_H
#define SPF_STRATEGY_CPU_CPU_H

#include "spforge.h"

typedef struct cpu_plan {
    spf_matrix *a;  /* owned copy of the matrix */
    int64_t n;
    int relu;
    int threads;    /* 0 = all cores            */
} cpu_plan;

/* Copy a for later execution; n ≥ 1 columns of B. */
spf_status cpu_plan_create(const spf_matrix *a, int64_t n, int relu, int threads, cpu_plan *out);

/* C = A·B (+ bias) (ReLU) on host buffers: b K×n, c M×n float32 row-major,
 * bias M floats or NULL. Accumulates in double, like the oracle. */
spf_status cpu_plan_execute(const cpu_plan *p, const float *b, float *c, const float *bias);

void cpu_plan_release(cpu_plan *p); /* accepts a zeroed plan */

#endif
