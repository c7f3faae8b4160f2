/* What the plan's two files share: the plan object, and the build steps
 * of GPU plans (plan_build.c: the strategies, the configuration, the
 * search or tuning, the generic kernel beside the unrolled one) that
 * plan.c (options, plan cache, self-check, the public API) calls. */
#ifndef SPF_PLAN_PLAN_INTERNAL_H
#define SPF_PLAN_PLAN_INTERNAL_H

#include "strategy/generic/generic.h"
#include "gpu/jit.h"
#include "gpu/selfcheck.h"
#include "strategy/unrolled/tuner.h"
#include "strategy/cpu/cpu.h"
#include "spforge.h"

struct spf_plan {
    spf_strategy strategy; /* resolved: never AUTO                */
    spf_dtype dtype;
    int64_t m, k, n;
    int bias, relu;
    int device;            /* GPU plans run on this device only   */
    spf_plan_info info;
    cpu_plan cpu;
    generic_csr generic;
    jit_module module;
    tune_log log;          /* exhaustive tuning only              */
};

#ifdef SPF_HAVE_CUDA

/* Launch whatever the plan holds; the one path for execute and the checks. */
spf_status plan_gpu_launch(const spf_plan *p, const void *b, void *c, const float *bias,
                           void *stream);

/* The generic CSR kernel of a, its launch shape named in p->info. */
spf_status plan_build_generic(spf_plan *p, const spf_matrix *a);

/* Build the kernel o asks for on the current device (DESIGN.md decision
 * 7): forced, ranked, searched or tuned unrolled code within the code
 * budget, else the generic kernel; AUTO with check's buffers keeps
 * whichever of the two it times faster. check may be unprepared when
 * neither verification nor tuning asked for it. */
spf_status plan_build_strategy(spf_plan *p, const spf_matrix *a, const spf_plan_options *o,
                               const spf_device_info *dev, selfcheck *check);

#endif

#endif
