/* The tensor-core strategy's row (strategy.h): A in the tc format
 * (tc_format.h) on the device, multiplied by the precompiled mma kernels
 * (tc_kernel.h) on fp16 / bf16 B and C, or f32 under TF32 math.
 *
 * Choosing the configuration (issue 11 item 4, the low-cost search's
 * pattern of paper 001: constraints, then a model, then time the few it
 * ranks first): the constraints drop configs the device cannot launch or
 * that only waste column blocks (8·nt well past N); a cost model ranks the
 * rest (tc_rank_configs); the first TC_TIMED are timed on the self-check's
 * buffers and the fastest is kept. */
#include "strategy/tc/tc_kernel.h"

#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "core/matrix.h"
#include "gpu/launch_order.h"
#include "gpu/timing.h"
#include "strategy/roofline.h"
#include "strategy/tc/affinity.h"
#include "strategy/strategy.h"
#include "strategy/tc/tc_rank.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The configs the cost model ranks first that build times. */
enum { TC_TIMED = 6 };

/* The largest N: grid.y counts column blocks of 8·nt (≤ 65535). */
#define TC_MAX_N ((int64_t)65535 * 8)

typedef struct tc_state {
    problem p;          /* the matrix pointer is not kept */
    tc_config config;
    tc_device dev;
    tc_schedule sched;
    launch_order order; /* made when the schedule splits windows (a workspace) */
} tc_state;

static int tc_supports(const problem *p, const spf_device_info *dev, const spf_plan_options *o,
                       char *reason, size_t cap)
{
    (void)o;
#ifndef SPF_HAVE_CUDA
    snprintf(reason, cap, "built without CUDA");
    return 0;
#endif
    if (!dev || !dev->available) {
        snprintf(reason, cap, "no device: %s", dev ? dev->reason : "none");
        return 0;
    }
    if (dev->cc_major < 8) {
        snprintf(reason, cap, "mma.sync needs compute capability 8.0 or later; the device is "
                 "%d.%d", dev->cc_major, dev->cc_minor);
        return 0;
    }
    if (p->dtype == SPF_DTYPE_F32 && p->math != SPF_MATH_TF32) {
        snprintf(reason, cap, "f32 runs on tensor cores only under TF32 math (math tf32 opts in)");
        return 0;
    }
    if (p->math == SPF_MATH_F16X2) {
        snprintf(reason, cap, "accumulates in fp32 (math f16x2 asked)");
        return 0;
    }
    if (p->n > TC_MAX_N) {
        snprintf(reason, cap, "N = %lld: at most %lld columns (grid rows of column blocks)",
                 (long long)p->n, (long long)TC_MAX_N);
        return 0;
    }
    if (p->m > INT32_MAX - TC_TILE || p->k > INT32_MAX - TC_TILE) {
        snprintf(reason, cap, "M or K reach 2^31 (the kernel's int32 rows and columns)");
        return 0;
    }
    return 1;
}

static double tc_estimate_us(const problem *p, const spf_device_info *dev)
{
    tc_estimate e = tc_estimate_problem(p, dev);
    return e.us;
}

#ifdef SPF_HAVE_CUDA

/* One config of a built state, for timing. */
typedef struct timed_config {
    const tc_state *s;
    const tc_schedule *sched;
    const tc_config *config;
    const selfcheck *check;
} timed_config;

static spf_status timed_launch(void *ctx, void *stream)
{
    const timed_config *t = ctx;
    spmm_operands op = problem_operands(&t->s->p, t->check->b, t->check->c, t->check->bias);
    return tc_launch(&t->s->dev, t->sched, t->config, &op, stream);
}


/* Resident warps per SM of config c (0: it cannot launch). */
static int resident_warps(const tc_config *c, const problem *p)
{
    int blocks = 0;
    if (tc_config_occupancy(c, p->dtype, p->b_layout, &blocks) != SPF_OK)
        return 0;
    return blocks * c->warps;
}

/* Time config c (its own schedule) on the self-check's buffers. */
static spf_status time_config(const tc_state *s, const tc_format *f, const tc_config *c,
                              int sms, int warps, const selfcheck *check, double *us)
{
    tc_schedule sched;
    spf_status status = tc_schedule_make(f, c, s->p.n, sms, warps, &sched);
    if (status != SPF_OK)
        return status;
    timed_config t = {s, &sched, c, check};
    timing_result r;
    timing_options topt;
    selfcheck_timing(check, &topt);
    status = timing_measure(timed_launch, &t, NULL, &topt, &r);
    *us = r.median_us;
    tc_schedule_release(&sched);
    return status;
}

/* The state for config c: schedule, and the ordering a workspace needs. */
static spf_status state_finish(tc_state *s, const tc_format *f, const tc_config *c, int sms)
{
    s->config = *c;
    int warps = resident_warps(c, &s->p);
    if (warps == 0)
        return FAIL(SPF_ERR_UNSUPPORTED, "tc: config cannot launch on this device");
    spf_status status = tc_schedule_make(f, c, s->p.n, sms, warps, &s->sched);
    if (status == SPF_OK && s->sched.workspace)
        status = launch_order_init(&s->order, "tc");
    return status;
}

/* A permutation that moves nothing: no row map is needed. */
static int is_identity(const int32_t *order, int64_t rows)
{
    for (int64_t i = 0; i < rows; i++)
        if (order[i] != i)
            return 0;
    return 1;
}

/* The format of p. With o->reorder and a CONDENSED format (graphs), A's rows
 * first take Acc-SpMM's data-affinity order (affinity.h, paper 002 §3.2),
 * which gathers rows sharing columns into one window so that it condenses
 * into fewer tiles; *row_map then gets the order (the kernel writes C row
 * row_map[i] for format row i), else NULL. *reorder_s: the order's time. */
static spf_status format_for(const problem *p, const spf_plan_options *o, tc_format *f,
                             int32_t **row_map, double *reorder_s)
{
    *row_map = NULL;
    *reorder_s = 0;
    /* a condensed format gathers rows of B, which needs B as K×N */
    tc_format_mode mode = p->b_layout == SPF_LAYOUT_N_FIRST ? TC_FORMAT_BLOCKED : TC_FORMAT_AUTO;
    int threads = o ? o->host_threads : 0;
    spf_status status = tc_format_build(p->a, p->dtype, mode, threads, f);
    if (status == SPF_OK && o && o->reorder && f->mode == TC_FORMAT_CONDENSED) {
        int32_t *order = NULL;
        spf_matrix *moved = NULL;
        tc_format g = {0};
        status = tc_affinity_order(p->a, threads, &order, reorder_s);
        if (status == SPF_OK && !is_identity(order, p->m))
            status = tc_permute_rows(p->a, order, &moved);
        if (status == SPF_OK && moved)
            status = tc_format_build(moved, p->dtype, TC_FORMAT_CONDENSED, threads, &g);
        if (status == SPF_OK && moved) {
            log_msg(SPF_LOG_DEBUG, "tc: affinity order in %.3f s: %lld tiles, %lld before",
                    *reorder_s, (long long)g.tiles, (long long)f->tiles);
            tc_format_free(f);
            *f = g;
            *row_map = order;
            order = NULL;
        }
        spf_matrix_free(moved);
        mem_free(order);
    }
    if (status == SPF_OK && p->math == SPF_MATH_TF32)
        tc_format_round_tf32(f);
    return status;
}

static void tc_release(void *state);

static spf_status tc_build(const problem *p, const strategy_env *env, void **state,
                           spf_plan_info *info)
{
    *state = NULL;
    spf_status status = SPF_OK;
    tc_format f = {0};
    int32_t *row_map = NULL;
    double reorder_s = 0;
    tc_state *s = mem_calloc(1, sizeof *s);
    if (!s)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "a tc plan");
    s->p = *p;
    s->p.a = NULL;
    double t0 = timing_now_s();
    TRY(format_for(p, env->options, &f, &row_map, &reorder_s));
    info->generate_s = f.build_s + reorder_s;
    double t1 = timing_now_s();
    TRY(tc_device_upload(&f, row_map, &s->dev));
    info->load_s = timing_now_s() - t1;
    int sms = env->device ? env->device->sm_count : 0;

    tc_config ranked[TC_MAX_CONFIGS];
    int count = tc_rank_configs(p, &f, env->device, ranked, TC_MAX_CONFIGS);
    if (count == 0)
        FAIL_GOTO(SPF_ERR_UNSUPPORTED, "tc: no config fits this device");
    int best = -1;
    double best_us = 0;
    if (env->check) {
        double tune0 = timing_now_s();
        int tried = 0;
        for (int i = 0; i < count && tried < TC_TIMED; i++) {
            int warps = resident_warps(&ranked[i], p);
            if (warps == 0)
                continue;
            double us = 0;
            tried++;
            if (time_config(s, &f, &ranked[i], sms, warps, env->check, &us) != SPF_OK) {
                log_msg(SPF_LOG_DEBUG, "tc: a config did not run: %s", spf_last_error());
                continue;
            }
            if (best < 0 || us < best_us)
                best = i, best_us = us;
        }
        info->tune_s = timing_now_s() - tune0;
        info->configs_tried = tried;
        info->kernel_us = best >= 0 ? best_us : 0;
        if (best < 0)
            FAIL_GOTO(SPF_ERR_UNSUPPORTED, "tc: no config ran: %s", spf_last_error());
    } else {
        best = 0;
    }
    TRY(state_finish(s, &f, &ranked[best], sms));
    tc_config_name(&s->config, info->config, sizeof info->config);
    snprintf(info->kernel_name, sizeof info->kernel_name, "tc_%s_%s%s%s_%s", dtype_name(p->dtype),
             tc_format_mode_name(f.mode), row_map ? "_affinity" : "",
             p->b_layout == SPF_LAYOUT_N_FIRST ? "_bnk" : "", info->config);
    info->device_bytes = s->dev.bytes + s->sched.bytes;
    log_msg(SPF_LOG_DEBUG, "tc: %s format%s %lld tiles, %.3f bytes per weight, built in %.3f s; "
            "plan in %.3f s", tc_format_mode_name(f.mode), row_map ? " (affinity order)" : "",
            (long long)f.tiles, tc_format_bytes_per_weight(&f), f.build_s, timing_now_s() - t0);
    tc_format_free(&f);
    mem_free(row_map);
    *state = s;
    return SPF_OK;
fail:
    tc_format_free(&f);
    mem_free(row_map);
    tc_release(s);
    return status;
}

typedef struct tc_call {
    const tc_state *s;
    spmm_operands op;
} tc_call;

static spf_status run_state(const void *ctx, void *stream)
{
    const tc_call *call = ctx;
    return tc_launch(&call->s->dev, &call->s->sched, &call->s->config, &call->op, stream);
}

static spf_status tc_launch_state(const void *state, const void *b, void *c, const float *bias,
                                  void *stream)
{
    const tc_state *s = state;
    tc_call call = {s, problem_operands(&s->p, b, c, bias)};
    if (!s->sched.workspace)
        return run_state(&call, stream);
    /* split windows share the plan's workspace: one launch at a time */
    return launch_ordered(&s->order, run_state, &call, stream);
}

static void tc_release(void *state)
{
    tc_state *s = state;
    if (!s)
        return;
    launch_order_release(&s->order);
    tc_schedule_release(&s->sched);
    tc_device_release(&s->dev);
    mem_free(s);
}

/* The cache keeps the config's name: decode rebuilds the format and
 * uploads it, without ranking or timing. */
static spf_status tc_encode(const void *state, unsigned char **bytes, size_t *size)
{
    const tc_state *s = state;
    char name[64];
    tc_config_name(&s->config, name, sizeof name);
    return strategy_encode_name(name, bytes, size);
}

static spf_status tc_decode(const problem *p, const strategy_env *env, const spf_plan_info *stored,
                            const unsigned char *bytes, size_t size, void **state)
{
    (void)stored;
    *state = NULL;
    char name[64];
    spf_status status = strategy_decode_name(bytes, size, "tc", name, sizeof name);
    if (status != SPF_OK)
        return status;
    tc_config c;
    status = tc_config_from_name(name, &c);
    if (status != SPF_OK)
        return status;
    tc_format f = {0};
    int32_t *row_map = NULL;
    double reorder_s = 0;
    tc_state *s = mem_calloc(1, sizeof *s);
    if (!s)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "a tc plan");
    s->p = *p;
    s->p.a = NULL;
    const char *why = NULL;
    TRY(format_for(p, env->options, &f, &row_map, &reorder_s));
    if ((why = tc_config_refusal(&c, p->dtype, p->b_layout, f.mode)) != NULL)
        FAIL_GOTO(SPF_ERR_PARSE, "tc entry \"%s\": %s", name, why);
    TRY(tc_device_upload(&f, row_map, &s->dev));
    TRY(state_finish(s, &f, &c, env->device ? env->device->sm_count : 0));
    tc_format_free(&f);
    mem_free(row_map);
    *state = s;
    return SPF_OK;
fail:
    tc_format_free(&f);
    mem_free(row_map);
    tc_release(s);
    return status;
}

#else /* no CUDA: supports() refuses, so none of these runs */

#define tc_build strategy_build_without_cuda
#define tc_launch_state strategy_launch_without_cuda
#define tc_release strategy_release_nothing
#define tc_encode NULL
#define tc_decode NULL

#endif

const strategy strategy_tc = {
    .id = SPF_STRATEGY_TC,
    .name = "tc",
    .on_device = 1,
    .supports = tc_supports,
    .estimate_us = tc_estimate_us,
    .build = tc_build,
    .launch = tc_launch_state,
    .release = tc_release,
    .encode = tc_encode,
    .decode = tc_decode,
};
