#include "strategy/cpu/cpu.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/matrix.h"
#include "ref/spmm.h"

#include <stdio.h>
#include <string.h>

typedef struct cpu_state {
    spf_matrix *a;  /* owned copy of the matrix */
    int64_t n;
    operand_strides bs, cs; /* the layouts of B and C (any: ref/spmm.h) */
    int relu;
    int threads;    /* 0 = all cores            */
} cpu_state;

static int cpu_supports(const problem *p, const spf_device_info *dev, const spf_plan_options *o,
                        char *reason, size_t cap)
{
    (void)dev, (void)o;
    if (p->dtype != SPF_DTYPE_F32) {
        snprintf(reason, cap, "takes float32 host buffers only, not %s", spf_dtype_name(p->dtype));
        return 0;
    }
    return 1;
}

/* A few GFLOP/s per host: the CPU is never a contender on a device, only
 * the plan of a machine without one. */
static double cpu_estimate_us(const problem *p, const spf_device_info *dev)
{
    (void)dev;
    return 1.0 + 2.0 * (double)p->a->nnz * (double)p->n / 5e9 * 1e6;
}

static spf_status cpu_build(const problem *p, const strategy_env *env, void **state,
                            spf_plan_info *info)
{
    *state = NULL;
    cpu_state *s = mem_calloc(1, sizeof *s);
    if (!s)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "a CPU plan");
    s->n = p->n;
    s->bs = problem_b_strides(p);
    s->cs = problem_c_strides(p);
    s->relu = p->relu;
    s->threads = env->options->host_threads;
    spf_status st = spf_matrix_clone(p->a, &s->a);
    if (st != SPF_OK) {
        mem_free(s);
        return st;
    }
    snprintf(info->kernel_name, sizeof info->kernel_name, "cpu_reference_f64");
    *state = s;
    return SPF_OK;
}

static spf_status cpu_launch(const void *state, const void *b, void *c, const float *bias,
                             void *stream)
{
    (void)stream;
    const cpu_state *s = state;
    return reference_spmm_strided(s->a, s->n, b, s->bs, c, s->cs, bias, s->relu,
                                  SPF_ACCUMULATE_F64, s->threads);
}

static void cpu_release(void *state)
{
    cpu_state *s = state;
    if (!s)
        return;
    spf_matrix_free(s->a);
    mem_free(s);
}

const strategy strategy_cpu = {
    .id = SPF_STRATEGY_CPU,
    .name = "cpu",
    .on_device = 0,
    .supports = cpu_supports,
    .estimate_us = cpu_estimate_us,
    .build = cpu_build,
    .launch = cpu_launch,
    .release = cpu_release,
    .encode = NULL, /* nothing compiled: not cached */
    .decode = NULL,
};
