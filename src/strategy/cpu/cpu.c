#include "strategy/cpu/cpu.h"

#include "core/error.h"

#include <string.h>

spf_status cpu_plan_create(const spf_matrix *a, int64_t n, int relu, int threads, cpu_plan *out)
{
    memset(out, 0, sizeof *out);
    out->n = n;
    out->relu = relu;
    out->threads = threads;
    return spf_matrix_clone(a, &out->a);
}

spf_status cpu_plan_execute(const cpu_plan *p, const float *b, float *c, const float *bias)
{
    return spf_reference_spmm(p->a, p->n, b, c, bias, p->relu, SPF_ACCUMULATE_F64, p->threads);
}

void cpu_plan_release(cpu_plan *p)
{
    if (!p)
        return;
    spf_matrix_free(p->a);
    memset(p, 0, sizeof *p);
}
