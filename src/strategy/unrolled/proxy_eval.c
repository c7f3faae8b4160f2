/* Proxy evaluation: group by shape → generate side by side → one ptxas
 * batch → per shape link and load → per candidate launch geometry, Eq. 5
 * and 6, time. */
#define _POSIX_C_SOURCE 200809L

#include "strategy/unrolled/proxy_eval.h"

#include "strategy/unrolled/schedule.h"
#include "core/alloc.h"
#include "core/error.h"
#include "core/log.h"
#include "core/matrix.h"
#include "core/parallel.h"
#include "core/progress.h"
#include "gpu/jit.h"
#include "gpu/timing.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#ifdef SPF_HAVE_CUDA
#include "gpu/cuda_check.h"
#endif

static spf_status check_request(const proxy_request *q, const spf_kernel_config *cands, int count,
                                const double *proxy_us)
{
    if (!q || !q->a || !q->check || count < 0 || (count > 0 && (!cands || !proxy_us)))
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "no request, matrix, buffers, candidates or output");
    const selfcheck *c = q->check;
    if (!c->b || !c->c || (q->bias && !c->bias))
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "device buffers: B %p, C %p, bias %p (bias %s)",
                    c->b, c->c, (void *)c->bias, q->bias ? "asked" : "not asked");
    if (c->m != q->a->rows || c->k != q->a->cols || c->n != q->n || c->dtype != q->dtype)
        return FAIL(SPF_ERR_INVALID_ARGUMENT,
                    "buffers for %lld × %lld × %lld (dtype %d), problem %lld × %lld × %lld (dtype "
                    "%d)",
                    (long long)c->m, (long long)c->k, (long long)c->n, (int)c->dtype,
                    (long long)q->a->rows, (long long)q->a->cols, (long long)q->n, (int)q->dtype);
    if (q->smem != PROXY_SMEM_EQ6 && q->smem != PROXY_SMEM_LEAST)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "shared memory policy %d", (int)q->smem);
    for (int i = 0; i < count; i++)
        if (schedule_config_check(&cands[i], q->n) != SPF_OK) {
            error_prefix("%s: candidate %d", __func__, i);
            return SPF_ERR_INVALID_ARGUMENT;
        }
    return SPF_OK;
}

#ifdef SPF_HAVE_CUDA

/* One shape's proxy and the candidates it stands for. */
typedef struct shape {
    spf_kernel_config cfg; /* n1 unused                              */
    int32_t *n1;           /* distinct n1 values of its candidates    */
    int n1_count;
    ptx_program program;
    proxy_info info;
    spf_status status;     /* generation                              */
    char reason[240];
} shape;

static int same_shape(const spf_kernel_config *a, const spf_kernel_config *b)
{
    return a->m1 == b->m1 && a->v == b->v && a->prefetch == b->prefetch && a->ksplit == b->ksplit;
}

/* shapes[0 .. *count) and the shape of each candidate. */
static spf_status group_shapes(const spf_kernel_config *cands, int count, shape *shapes,
                               int *shape_of, int *shape_count)
{
    int k = 0;
    for (int i = 0; i < count; i++) {
        int s = 0;
        while (s < k && !same_shape(&shapes[s].cfg, &cands[i]))
            s++;
        if (s == k) {
            shapes[k].cfg = cands[i];
            shapes[k].n1 = mem_alloc_array((size_t)count, sizeof *shapes[k].n1);
            if (!shapes[k].n1)
                return FAIL(SPF_ERR_OUT_OF_MEMORY, "n1 list of %d", count);
            k++;
        }
        shape_of[i] = s;
        int j = 0;
        while (j < shapes[s].n1_count && shapes[s].n1[j] != cands[i].n1)
            j++;
        if (j == shapes[s].n1_count)
            shapes[s].n1[shapes[s].n1_count++] = cands[i].n1;
    }
    *shape_count = k;
    return SPF_OK;
}

typedef struct gen_ctx {
    const proxy_request *q;
    const proxy_device *device;
    shape *shapes;
} gen_ctx;

static spf_status generate_range(void *ctx, int64_t begin, int64_t end, int worker)
{
    (void)worker;
    const gen_ctx *c = ctx;
    const proxy_request *q = c->q;
    for (int64_t i = begin; i < end; i++) {
        shape *s = &c->shapes[i];
        proxy_spec spec = {.a = q->a, .row_order = row_orders_find(q->orders, s->cfg.m1),
                           .n = q->n, .shape = s->cfg, .n1 = s->n1, .n1_count = s->n1_count,
                           .dtype = q->dtype, .f16x2_accumulate = q->f16x2_accumulate,
                           .bias = q->bias, .relu = q->relu, .sm = q->ptx_sm,
                           .device = c->device};
        s->status = proxy_generate(&spec, &s->program, &s->info);
        if (s->status == SPF_ERR_OUT_OF_MEMORY)
            return s->status;
        if (s->status != SPF_OK)
            snprintf(s->reason, sizeof s->reason, "%s", spf_last_error());
    }
    return SPF_OK;
}

/* What Eq. 5 and 6 need, from the current device. */
static spf_status device_limits(proxy_device *d)
{
    spf_status status = SPF_OK;
    int dev;
    TRY(CUDA_CHECK(cudaGetDevice(&dev)));
    TRY(CUDA_CHECK(cudaDeviceGetAttribute(&d->sm_count, cudaDevAttrMultiProcessorCount, dev)));
    TRY(CUDA_CHECK(
        cudaDeviceGetAttribute(&d->regs_per_sm, cudaDevAttrMaxRegistersPerMultiprocessor, dev)));
    TRY(CUDA_CHECK(cudaDeviceGetAttribute(&d->max_threads_per_sm,
                                          cudaDevAttrMaxThreadsPerMultiProcessor, dev)));
    TRY(CUDA_CHECK(cudaDeviceGetAttribute(&d->max_blocks_per_sm,
                                          cudaDevAttrMaxBlocksPerMultiprocessor, dev)));
    TRY(CUDA_CHECK(cudaDeviceGetAttribute(&d->smem_per_sm,
                                          cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev)));
    TRY(CUDA_CHECK(cudaDeviceGetAttribute(&d->smem_per_block_optin,
                                          cudaDevAttrMaxSharedMemoryPerBlockOptin, dev)));
    TRY(CUDA_CHECK(cudaDeviceGetAttribute(&d->smem_reserved,
                                          cudaDevAttrReservedSharedMemoryPerBlock, dev)));
fail:
    return status;
}

/* One candidate's proxy launch. */
typedef struct launch {
    const jit_module *module;
    unsigned grid[3], block[3], shared;
    const void *b;
    void *c;
    const float *bias;
    uint32_t n1;
    void *params[4];
} launch;

static spf_status launch_proxy(void *ctx, void *stream)
{
    launch *l = ctx;
    return jit_launch_with(l->module, l->grid, l->block, l->shared, l->params, stream);
}

/* Launch geometry and Eq. 5–6 for candidate cfg of shape s. */
static void plan_launch(const proxy_request *q, const proxy_device *d, const shape *s,
                        const spf_kernel_config *cfg, launch *l, proxy_candidate *pc)
{
    pc->active_blocks = proxy_active_blocks(d, q->a->rows, q->n, cfg, q->dtype);
    pc->shared_bytes = proxy_shared_bytes(d, pc->active_blocks, s->info.reduction_bytes, q->smem);
    *l = (launch){.grid = {(unsigned)((q->n + cfg->n1 - 1) / cfg->n1), (unsigned)s->info.tiles, 1},
                  .block = {(unsigned)(cfg->n1 / cfg->v * cfg->ksplit), 1, 1},
                  .shared = (unsigned)pc->shared_bytes, .b = q->check->b, .c = q->check->c,
                  .bias = q->check->bias, .n1 = (uint32_t)cfg->n1};
    l->params[0] = &l->b;
    l->params[1] = &l->c;
    l->params[2] = &l->bias;
    l->params[3] = &l->n1;
}

static void candidate_failed(proxy_candidate *pc, spf_status st, const char *kernel, int n1,
                             const char *why)
{
    pc->status = st;
    log_msg(SPF_LOG_WARN, "proxy: %s for n1 = %d: %s", kernel, n1, why);
}

/* Link and load shape s's proxy, then time each of its candidates. */
static spf_status run_shape(const proxy_request *q, const proxy_device *d, shape *s,
                            const jit_object *o, const spf_kernel_config *cands, int count,
                            const int *shape_of, int index, proxy_candidate *details,
                            double *proxy_us, double *load_s, int *timed)
{
    jit_module m = {0};
    jit_timings jt = {0};
    launch l;
    unsigned most = s->program.shared_bytes;
    for (int i = 0; i < count; i++)
        if (shape_of[i] == index) {
            plan_launch(q, d, s, &cands[i], &l, &details[i]);
            most = l.shared > most ? l.shared : most;
        }
    s->program.shared_bytes = most; /* the load raises the kernel's limit to it */
    spf_status st = o->status != SPF_OK ? FAIL(o->status, "%s", o->log ? o->log : "ptxas failed")
                                        : jit_link_load(&s->program, o, &m, &jt);
    *load_s += jt.link_s + jt.load_s;
    timing_options topt;
    selfcheck_timing(q->check, &topt);
    topt.target_round_us = 200.0; /* as the tuner: many candidates, each cheap */
    for (int i = 0; i < count; i++) {
        if (shape_of[i] != index)
            continue;
        /* the progress count: candidates whose proxy ran or failed */
        if (progress_step(SPF_STAGE_PROXIES, (*timed)++) != SPF_OK)
            break; /* cancelled */
        proxy_candidate *pc = &details[i];
        pc->registers = m.registers;
        pc->spill_bytes = o->spill_bytes;
        if (st != SPF_OK) {
            candidate_failed(pc, st, s->program.entry, cands[i].n1, spf_last_error());
            continue;
        }
        plan_launch(q, d, s, &cands[i], &l, pc);
        l.module = &m;
        /* A diagnostic: its failure costs the number (-1), not the time. */
        if (CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                &pc->occupancy, (const void *)m.kernel, (int)l.block[0], l.shared)) != SPF_OK) {
            log_msg(SPF_LOG_WARN, "proxy: %s: no occupancy: %s", s->program.entry,
                    spf_last_error());
            pc->occupancy = -1;
        }
        timing_result tr;
        spf_status rs = timing_measure(launch_proxy, &l, q->stream, &topt, &tr);
        if (rs != SPF_OK) {
            candidate_failed(pc, rs, s->program.entry, cands[i].n1, spf_last_error());
            continue;
        }
        proxy_us[i] = tr.median_us;
        pc->status = SPF_OK;
    }
    error_clear(); /* every failure is in its candidate's details and the log */
    jit_module_release(&m);
    return progress_step(SPF_STAGE_PROXIES, *timed);
}

/* Compile every generated proxy in one batch, then run each shape. */
static spf_status compile_and_run(const proxy_request *q, const proxy_device *d, shape *shapes,
                                  int shape_count, const spf_kernel_config *cands, int count,
                                  const int *shape_of, proxy_candidate *details, double *proxy_us,
                                  proxy_timings *t)
{
    spf_status status = SPF_OK;
    const ptx_program **programs = mem_alloc_array((size_t)shape_count + 1, sizeof *programs);
    jit_object *objects = mem_calloc((size_t)shape_count + 1, sizeof *objects);
    int *which = mem_alloc_array((size_t)shape_count + 1, sizeof *which);
    int built = 0;
    if (!programs || !objects || !which)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "%d proxies", shape_count);
    for (int s = 0; s < shape_count; s++)
        if (shapes[s].status == SPF_OK) {
            which[built] = s;
            programs[built++] = &shapes[s].program;
        }
    double t0 = timing_now_s();
    TRY(jit_compile(programs, built, q->sass_sm, q->threads, objects));
    t->compile_s = timing_now_s() - t0;
    double run0 = timing_now_s();
    int timed = 0; /* candidates done: the progress count */
    for (int j = 0; j < built; j++) {
        spf_status st = run_shape(q, d, &shapes[which[j]], &objects[j], cands, count, shape_of,
                                  which[j], details, proxy_us, &t->load_s, &timed);
        jit_object_release(&objects[j]);
        TRY(st);
    }
    /* Linking and loading count as compiling, not as running. */
    t->compile_s += t->load_s;
    t->run_s = timing_now_s() - run0 - t->load_s;
fail:
    for (int j = 0; objects && j < built; j++)
        jit_object_release(&objects[j]);
    mem_free(programs);
    mem_free(objects);
    mem_free(which);
    return status;
}

/* The GPU part of proxy_evaluate: shapes, generation, compile and run. */
static spf_status evaluate(const proxy_request *q, const spf_kernel_config *cands, int count,
                           proxy_candidate *details, double *proxy_us, proxy_timings *t)
{
    spf_status status = SPF_OK;
    shape *shapes = NULL;
    int *shape_of = NULL, shape_count = 0;
    proxy_device d;
    TRY(device_limits(&d));
    shapes = mem_calloc((size_t)count, sizeof *shapes);
    shape_of = mem_alloc_array((size_t)count, sizeof *shape_of);
    if (!shapes || !shape_of)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "shapes of %d candidates", count);
    TRY(group_shapes(cands, count, shapes, shape_of, &shape_count));

    double t0 = timing_now_s();
    gen_ctx g = {q, &d, shapes};
    TRY(parallel_for(shape_count, 1, q->threads, generate_range, &g));
    t->build_s = timing_now_s() - t0;
    for (int i = 0; i < count; i++) {
        const shape *s = &shapes[shape_of[i]];
        details[i].proxy = shape_of[i];
        details[i].clusters = s->info.clusters;
        details[i].code_bytes = s->info.code_bytes;
        if (s->status != SPF_OK) {
            char name[128];
            proxy_kernel_name(&s->cfg, q->dtype, q->f16x2_accumulate, name);
            candidate_failed(&details[i], s->status, name, cands[i].n1, s->reason);
        }
    }
    for (int s = 0; s < shape_count; s++)
        t->proxies += shapes[s].status == SPF_OK;
    TRY(compile_and_run(q, &d, shapes, shape_count, cands, count, shape_of, details, proxy_us, t));
fail:
    for (int s = 0; shapes && s < shape_count; s++) {
        ptx_program_free(&shapes[s].program);
        mem_free(shapes[s].n1);
    }
    mem_free(shapes);
    mem_free(shape_of);
    return status;
}

#else

static spf_status evaluate(const proxy_request *q, const spf_kernel_config *cands, int count,
                           proxy_candidate *details, double *proxy_us, proxy_timings *t)
{
    (void)q, (void)cands, (void)count, (void)details, (void)proxy_us, (void)t;
    return FAIL(SPF_ERR_NO_DEVICE, "built without CUDA");
}

#endif

spf_status proxy_evaluate(const proxy_request *q, const spf_kernel_config *cands, int count,
                          double *proxy_us, proxy_timings *t)
{
    spf_status status = SPF_OK;
    proxy_timings local;
    proxy_candidate *own = NULL;
    if (!t)
        t = &local;
    memset(t, 0, sizeof *t);
    TRY(check_request(q, cands, count, proxy_us));
    if (count == 0)
        return SPF_OK;
    for (int i = 0; i < count; i++)
        proxy_us[i] = INFINITY;
    proxy_candidate *details = q->details;
    if (!details) {
        own = mem_calloc((size_t)count, sizeof *own);
        if (!own)
            FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "%d candidate details", count);
        details = own;
    }
    for (int i = 0; i < count; i++)
        details[i] = (proxy_candidate){.status = SPF_ERR_INTERNAL, .proxy = -1};
    TRY(evaluate(q, cands, count, details, proxy_us, t));
    for (int i = 0; i < count; i++)
        t->failed += !isfinite(proxy_us[i]);
fail:
    mem_free(own);
    return status;
}
