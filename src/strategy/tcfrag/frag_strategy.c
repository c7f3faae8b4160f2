/* The tcfrag strategy's row (strategy.h): pruned weights as a fragment
 * stream (frag_format.h) on the device, multiplied by the precompiled
 * kernel of frag_kernel.h, fp16 and bf16 with fp32 accumulation. Its
 * regime is small N — LLM decoding, batch-1 inference — where a sparse
 * kernel must decode A faster than dense fp16 streams it.
 *
 * Choosing the configuration: nt is the narrowest column block that holds
 * N (8 beyond 32 columns); for each group size the format is built once
 * and every (warps, stages) the device can launch is timed on the
 * self-check's buffers; the fastest is kept. The cut of K follows from the
 * device's SMs and the config's occupancy (frag_parts). */
#include "strategy/tcfrag/frag_kernel.h"

#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "gpu/launch_order.h"
#include "gpu/timing.h"
#include "strategy/roofline.h"
#include "strategy/strategy.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* grid.y counts column blocks of 8·nt (≤ 65535) */
#define FRAG_MAX_N ((int64_t)65535 * 64)

/* The planner's estimate, from Nsight Compute on the H100 (LLM 4096×4096
 * at 0.7, N = 16, g1_nt2_w8_s2): 120 warp instructions issued per tile and
 * column block (the decode, the staging, and the split-K epilogue spread
 * over the tiles), 2.0 issued per cycle per SM at 1.755 GHz; an n8 tile
 * more adds its mma and B fragments, about 10 (fitted to N = 64: 32 µs). */
#define DECODE_INSTR 120.0
#define N8_INSTR 10.0
#define ISSUE_PER_US 3.5e3

/* Below this share of non-empty 16×16 tiles (random placement) the stream
 * is mostly headers: a graph, for the tc strategy's condensed format. */
#define MIN_TILE_SHARE 0.5

static int nt_for(int64_t n) { return n <= 16 ? 2 : n <= 32 ? 4 : 8; }

static int frag_supports(const problem *p, const spf_device_info *dev, const spf_plan_options *o,
                         char *reason, size_t cap)
{
    (void)o;
    if (!strategy_supports_16bit(p, dev, "mma.sync", "the tc strategy runs f32 under TF32", reason, cap))
        return 0;
    if (p->n > FRAG_MAX_N) {
        snprintf(reason, cap, "N = %lld: at most %lld columns", (long long)p->n,
                 (long long)FRAG_MAX_N);
        return 0;
    }
    if (p->m > INT32_MAX - FRAG_TILE || p->k > INT32_MAX - FRAG_TILE) {
        snprintf(reason, cap, "M or K reach 2^31 (the kernel's int32 rows and columns)");
        return 0;
    }
    double share = 1.0 - pow(1.0 - problem_density(p), FRAG_TILE * FRAG_TILE);
    if (share < MIN_TILE_SHARE) {
        snprintf(reason, cap, "about %.0f%% of the 16×16 tiles hold nonzeros: the stream would be "
                 "mostly headers (the tc strategy condenses such matrices)", 100.0 * share);
        return 0;
    }
    return 1;
}

static double frag_estimate_us(const problem *p, const spf_device_info *dev)
{
    double n = (double)p->n, nb = 8.0 * nt_for(p->n);
    double bytes = frag_format_bytes_estimate(p->m, p->k, spf_matrix_nnz(p->a), 2) +
                   2.0 * n * ((double)p->k + (double)p->m);
    double tiles = ceil((double)p->m / FRAG_TILE) * ceil((double)p->k / FRAG_TILE);
    double instr = tiles * ceil(n / nb) * (DECODE_INSTR + N8_INSTR * nb / 8.0);
    int sms = dev && dev->available && dev->sm_count > 0 ? dev->sm_count : 132;
    double issue_us = instr / (ISSUE_PER_US * sms);
    double memory_us = bytes / roofline_bandwidth(dev) * 1e6;
    return fmax(issue_us, memory_us) + ROOFLINE_LAUNCH_US;
}

#ifdef SPF_HAVE_CUDA

typedef struct frag_state {
    problem p; /* the matrix pointer is not kept */
    frag_config config;
    frag_device dev;
    frag_schedule sched;
    launch_order order; /* made when K is cut (a workspace) */
} frag_state;

typedef struct frag_call {
    const problem *p;
    const frag_device *dev;
    const frag_schedule *sched;
    const frag_config *config;
    spmm_operands op;
} frag_call;

static spf_status run_call(const void *ctx, void *stream)
{
    const frag_call *call = ctx;
    return frag_launch(call->dev, call->sched, call->config, &call->op, stream);
}

static spf_status timed_launch(void *ctx, void *stream) { return run_call(ctx, stream); }

static void frag_release(void *state)
{
    frag_state *s = state;
    if (!s)
        return;
    launch_order_release(&s->order);
    frag_schedule_release(&s->sched);
    frag_device_release(&s->dev);
    mem_free(s);
}

/* The state of config c over an uploaded format (taken over). */
static spf_status state_make(const problem *p, frag_device *dev, const frag_config *c,
                             const spf_device_info *device, frag_state **out)
{
    *out = NULL;
    spf_status status = SPF_OK;
    frag_state *s = mem_calloc(1, sizeof *s);
    if (!s) {
        frag_device_release(dev);
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "a tcfrag plan");
    }
    s->p = *p;
    s->p.a = NULL;
    s->config = *c;
    s->dev = *dev;
    memset(dev, 0, sizeof *dev);
    int blocks = 0;
    TRY(frag_config_occupancy(c, p->dtype, p->b_layout, &blocks));
    if (blocks == 0)
        FAIL_GOTO(SPF_ERR_UNSUPPORTED, "tcfrag: config cannot launch on this device");
    TRY(frag_schedule_make(&s->dev, c, p->n, device ? device->sm_count : 0, blocks, &s->sched));
    if (s->sched.workspace)
        TRY(launch_order_init(&s->order, "tcfrag"));
    *out = s;
    return SPF_OK;
fail:
    frag_release(s);
    return status;
}

/* Build and upload the format of `group`. */
static spf_status upload_format(const problem *p, int group, frag_device *dev, double *build_s)
{
    frag_format f;
    spf_status status = frag_format_build(p->a, p->dtype, group, 0, &f);
    if (status != SPF_OK)
        return status;
    *build_s += f.build_s;
    log_msg(SPF_LOG_DEBUG, "tcfrag: group %d, %d chunks, %.3f bytes per weight, built in %.3f s",
            group, f.chunks, frag_format_bytes_per_weight(&f), f.build_s);
    status = frag_device_upload(&f, NULL, dev);
    frag_format_free(&f);
    return status;
}

/* Time config c over dev on the self-check's buffers (its own schedule). */
static spf_status time_config(const problem *p, const frag_device *dev, const frag_config *c,
                              const spf_device_info *device, const selfcheck *check, double *us)
{
    int blocks = 0;
    spf_status status = frag_config_occupancy(c, p->dtype, p->b_layout, &blocks);
    if (status != SPF_OK)
        return status;
    if (blocks == 0)
        return FAIL(SPF_ERR_UNSUPPORTED, "tcfrag: config cannot launch on this device");
    frag_schedule sched;
    status = frag_schedule_make(dev, c, p->n, device ? device->sm_count : 0, blocks, &sched);
    if (status != SPF_OK)
        return status;
    frag_call call = {p, dev, &sched, c, problem_operands(p, check->b, check->c, check->bias)};
    timing_result r;
    timing_options topt;
    selfcheck_timing(check, &topt);
    status = timing_measure(timed_launch, &call, NULL, &topt, &r);
    *us = r.median_us;
    frag_schedule_release(&sched);
    return status;
}

static const int frag_groups[] = {2, 1, 4};
static const int frag_warps[] = {4, 8};
static const int frag_stages[] = {3, 2};

static spf_status frag_build(const problem *p, const strategy_env *env, void **state,
                             spf_plan_info *info)
{
    *state = NULL;
    spf_status status = SPF_OK;
    frag_device best_dev = {0}, dev = {0};
    frag_config best = {2, nt_for(p->n), 4, 3};
    double best_us = 0, build_s = 0, load_s = 0;
    int tried = 0, have = 0;
    double tune0 = timing_now_s();
    for (int gi = 0; gi < (int)(sizeof frag_groups / sizeof *frag_groups); gi++) {
        frag_config c = {frag_groups[gi], nt_for(p->n), 4, 3};
        if (frag_config_refusal(&c, c.group) != NULL)
            continue;
        if (!env->check && c.group != best.group)
            continue; /* nothing to time with: the default config */
        double t1 = timing_now_s();
        TRY(upload_format(p, c.group, &dev, &build_s));
        load_s += timing_now_s() - t1;
        int improved = 0;
        for (int wi = 0; env->check && wi < 2; wi++)
            for (int si = 0; si < 2; si++) {
                c.warps = frag_warps[wi], c.stages = frag_stages[si];
                double us = 0;
                tried++;
                if (time_config(p, &dev, &c, env->device, env->check, &us) != SPF_OK) {
                    log_msg(SPF_LOG_DEBUG, "tcfrag: a config did not run: %s", spf_last_error());
                    continue;
                }
                if (!have || us < best_us)
                    best = c, best_us = us, have = 1, improved = 1;
            }
        if (improved || !env->check) {
            frag_device_release(&best_dev);
            best_dev = dev;
            memset(&dev, 0, sizeof dev);
            have = 1;
        } else {
            frag_device_release(&dev);
        }
    }
    if (!have)
        FAIL_GOTO(SPF_ERR_UNSUPPORTED, "tcfrag: no config ran: %s", spf_last_error());
    info->generate_s = build_s;
    info->load_s = load_s;
    if (env->check) {
        info->tune_s = timing_now_s() - tune0 - build_s - load_s;
        info->configs_tried = tried;
        info->kernel_us = best_us;
    }
    frag_state *s = NULL;
    TRY(state_make(p, &best_dev, &best, env->device, &s));
    frag_config_name(&best, info->config, sizeof info->config);
    snprintf(info->kernel_name, sizeof info->kernel_name, "tcfrag_%s%s_%s", dtype_name(p->dtype),
             p->b_layout == SPF_LAYOUT_N_FIRST ? "_bnk" : "", info->config);
    info->device_bytes = s->dev.bytes + s->sched.bytes;
    *state = s;
    return SPF_OK;
fail:
    frag_device_release(&dev);
    frag_device_release(&best_dev);
    return status;
}

static spf_status frag_launch_state(const void *state, const void *b, void *c, const float *bias,
                                    void *stream)
{
    const frag_state *s = state;
    frag_call call = {&s->p, &s->dev, &s->sched, &s->config, problem_operands(&s->p, b, c, bias)};
    if (!s->sched.workspace)
        return run_call(&call, stream);
    /* K parts share the plan's workspace: one launch at a time */
    return launch_ordered(&s->order, run_call, &call, stream);
}

/* The cache keeps the config's name: decode rebuilds the format of its
 * group and uploads it, without timing. */
static spf_status frag_encode(const void *state, unsigned char **bytes, size_t *size)
{
    const frag_state *s = state;
    char name[64];
    frag_config_name(&s->config, name, sizeof name);
    return strategy_encode_name(name, bytes, size);
}

static spf_status frag_decode(const problem *p, const strategy_env *env,
                              const spf_plan_info *stored, const unsigned char *bytes, size_t size,
                              void **state)
{
    (void)stored;
    *state = NULL;
    char name[64];
    spf_status status = strategy_decode_name(bytes, size, "tcfrag", name, sizeof name);
    if (status != SPF_OK)
        return status;
    frag_config c;
    status = frag_config_from_name(name, &c);
    if (status != SPF_OK)
        return status;
    frag_device dev;
    double build_s = 0;
    status = upload_format(p, c.group, &dev, &build_s);
    if (status != SPF_OK)
        return status;
    frag_state *s = NULL;
    status = state_make(p, &dev, &c, env->device, &s);
    *state = s;
    return status;
}

#else /* no CUDA: supports() refuses, so none of these runs */

#define frag_build strategy_build_without_cuda
#define frag_launch_state strategy_launch_without_cuda
#define frag_release strategy_release_nothing
#define frag_encode NULL
#define frag_decode NULL

#endif

const strategy strategy_tcfrag = {
    .id = SPF_STRATEGY_TCFRAG,
    .name = "tcfrag",
    .on_device = 1,
    .supports = frag_supports,
    .estimate_us = frag_estimate_us,
    .build = frag_build,
    .launch = frag_launch_state,
    .release = frag_release,
    .encode = frag_encode,
    .decode = frag_decode,
};
