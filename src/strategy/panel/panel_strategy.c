/* The panel strategy's row (strategy.h): pruned weights in the panel
 * format (panel_format.h) on the device, multiplied on CUDA cores by the
 * precompiled kernels of panel_kernel.h (tensor cores or CUDA cores),
 * fp16 and bf16 with fp32 accumulation. Its regime is high sparsity at
 * small N (LLM decoding at 70-95 % sparsity), where the tiles of a tiled
 * tensor-core format are mostly empty and a kernel that pays per nonzero
 * wins.
 *
 * Choosing the configuration: for each panel width whose two staged panels
 * fit in shared memory the format is built once, and both engines (each
 * with the narrowest column block that holds N) × warps ∈ {8, 16} × rows
 * per block ∈ {one wave, half of it} are timed on the self-check's
 * buffers; the fastest is kept. */
#include "strategy/panel/panel_kernel.h"

#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "gpu/timing.h"
#include "strategy/roofline.h"
#include "strategy/strategy.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* grid.y counts column blocks of nc (≤ 65535) */
#define PANEL_MAX_N ((int64_t)65535 * 32)

/* Four bytes a nonzero reach dense fp16's two a weight at this density. */
#define PANEL_MAX_DENSITY 0.5

/* The planner's estimate (kernels/panel_spmm.cu), the faster engine's:
 * per entry and column block a CUDA-core lane issues about 2.2·nc + 6
 * instructions, the tensor-core engine about (20 + 2·nc / 16) / 16 warp
 * instructions; 2 warp instructions a cycle per SM at 1.755 GHz. The
 * gathers of random B rows in shared memory move 2·nc bytes an entry at
 * about half of 128 bytes a cycle. */
#define ISSUE_PER_US 3.5e3
#define SMEM_BYTES_PER_US (64.0 * 1755.0)

static int panel_supports(const problem *p, const spf_device_info *dev, const spf_plan_options *o,
                          char *reason, size_t cap)
{
    (void)o;
    if (!strategy_supports_16bit(p, dev, "cp.async", "16-bit values in the entries", reason, cap))
        return 0;
    if (p->n > PANEL_MAX_N) {
        snprintf(reason, cap, "N = %lld: at most %lld columns", (long long)p->n,
                 (long long)PANEL_MAX_N);
        return 0;
    }
    if (p->m >= INT32_MAX || p->k >= INT32_MAX || spf_matrix_nnz(p->a) >= INT32_MAX) {
        snprintf(reason, cap, "M, K or the nonzeros reach 2^31 (the kernel's int32 offsets)");
        return 0;
    }
    if (problem_density(p) > PANEL_MAX_DENSITY) {
        snprintf(reason, cap, "%.0f%% dense: at four bytes a nonzero the format is larger than "
                 "dense", 100.0 * problem_density(p));
        return 0;
    }
    return 1;
}

static double engine_estimate_us(const problem *p, const spf_device_info *dev, int mma)
{
    double n = (double)p->n, nc = panel_nc_for(mma, p->n), nnz = (double)spf_matrix_nnz(p->a);
    double col_blocks = ceil(n / nc);
    double bytes = 4.0 * nnz * col_blocks + 2.0 * n * ((double)p->k + (double)p->m);
    int sms = dev && dev->available && dev->sm_count > 0 ? dev->sm_count : 132;
    double work = nnz * col_blocks / sms;
    double per_entry = mma ? (20.0 + 2.0 * nc / 16.0) / 16.0 : (2.2 * nc + 6.0) / 32.0;
    double issue_us = work * per_entry / ISSUE_PER_US;
    double smem_us = work * 2.0 * nc / SMEM_BYTES_PER_US;
    double memory_us = bytes / roofline_bandwidth(dev) * 1e6;
    return fmax(fmax(issue_us, smem_us), memory_us) + ROOFLINE_LAUNCH_US;
}

static double panel_estimate_us(const problem *p, const spf_device_info *dev)
{
    return fmin(engine_estimate_us(p, dev, 0), engine_estimate_us(p, dev, 1));
}

#ifdef SPF_HAVE_CUDA

typedef struct panel_state {
    problem p; /* the matrix pointer is not kept */
    panel_config config;
    panel_device dev;
} panel_state;

typedef struct panel_call {
    const panel_device *dev;
    const panel_config *config;
    spmm_operands op;
} panel_call;

static spf_status timed_launch(void *ctx, void *stream)
{
    const panel_call *call = ctx;
    return panel_launch(call->dev, call->config, &call->op, stream);
}

static void panel_release(void *state)
{
    panel_state *s = state;
    if (!s)
        return;
    panel_device_release(&s->dev);
    mem_free(s);
}

/* Build and upload the format of panel width `width`. */
static spf_status upload_format(const problem *p, int width, panel_device *dev, double *build_s)
{
    panel_format f;
    spf_status status = panel_format_build(p->a, p->dtype, width, 0, &f);
    if (status != SPF_OK)
        return status;
    *build_s += f.build_s;
    log_msg(SPF_LOG_DEBUG, "panel: width %d, %d panels, %.3f bytes per weight, built in %.3f s",
            width, f.panels, panel_format_bytes_per_weight(&f), f.build_s);
    status = panel_device_upload(&f, dev);
    panel_format_free(&f);
    return status;
}

/* The rows per block of config c (its other fields set) for a one-wave
 * grid, `share` of it (1 or 2: half the rows, two blocks where one was);
 * 0 when c cannot launch. */
static int rows_of(const problem *p, panel_config c, const spf_device_info *device, int share)
{
    int blocks = 0;
    c.rows = 64; /* provisional: the accumulator's share of shared memory is small */
    if (panel_config_occupancy(&c, p->dtype, p->b_layout, &blocks) != SPF_OK) {
        error_clear();
        return 0;
    }
    if (blocks == 0)
        return 0;
    int rows = panel_rows_for(p->m, p->n, c.nc, device ? device->sm_count : 0, blocks);
    rows = (rows + share - 1) / share;
    if (c.mma) /* whole octets */
        rows = (rows + 7) / 8 * 8 < PANEL_MAX_ROWS ? (rows + 7) / 8 * 8 : PANEL_MAX_ROWS;
    c.rows = rows;
    if (panel_config_occupancy(&c, p->dtype, p->b_layout, &blocks) != SPF_OK) {
        error_clear();
        return 0;
    }
    return blocks > 0 ? rows : 0;
}

static spf_status time_config(const problem *p, const panel_device *dev, const panel_config *c,
                              const selfcheck *check, double *us)
{
    panel_call call = {dev, c, problem_operands(p, check->b, check->c, check->bias)};
    timing_result r;
    timing_options topt;
    selfcheck_timing(check, &topt);
    spf_status status = timing_measure(timed_launch, &call, NULL, &topt, &r);
    *us = r.median_us;
    return status;
}

/* Panel widths tried: two panels of B in shared memory at 32 to 128 KiB
 * for nc = 16 (more blocks an SM against fewer panels a row); 512 for the
 * tensor-core engine's nc = 64. */
static const int panel_widths[] = {2048, 1024, 4096, 512};
static const int panel_warps[] = {8, 16};

/* The width actually used: a K that fits in one panel gets one panel. */
static int width_for(int64_t k, int width)
{
    int64_t whole = (k + 7) / 8 * 8;
    return whole > 0 && whole < width ? (int)whole : width;
}

static spf_status panel_build(const problem *p, const strategy_env *env, void **state,
                              spf_plan_info *info)
{
    *state = NULL;
    spf_status status = SPF_OK;
    panel_device best_dev = {0}, dev = {0};
    panel_config best = {0};
    double best_us = 0, build_s = 0, load_s = 0;
    int tried = 0, have = 0, last_width = 0;
    double tune0 = timing_now_s();
    for (size_t wi = 0; wi < sizeof panel_widths / sizeof *panel_widths; wi++) {
        int width = width_for(p->k, panel_widths[wi]);
        if (width == last_width || (!env->check && have))
            continue; /* the same panels again; or nothing to time with: the first config */
        last_width = width;
        int improved = 0, uploaded = 0;
        /* tensor cores first: without timing (no check buffers) the first
         * config that launches is kept */
        for (int trial = 0; trial < 8; trial++) {
            int mma = trial < 4, share = 1 + trial % 2;
            panel_config c = {panel_nc_for(mma, p->n), panel_warps[trial / 2 % 2], width, 1,
                              mma};
            c.rows = rows_of(p, c, env->device, share);
            if (c.rows == 0 || (!env->check && have))
                continue;
            if (!uploaded) {
                double t1 = timing_now_s();
                TRY(upload_format(p, width, &dev, &build_s));
                load_s += timing_now_s() - t1;
                uploaded = 1;
            }
            if (!env->check) { /* the first config that launches */
                best = c, have = improved = 1;
                continue;
            }
            double us = 0;
            tried++;
            if (time_config(p, &dev, &c, env->check, &us) != SPF_OK) {
                log_msg(SPF_LOG_DEBUG, "panel: a config did not run: %s", spf_last_error());
                error_clear();
                continue;
            }
            if (!have || us < best_us)
                best = c, best_us = us, have = improved = 1;
        }
        if (improved) {
            panel_device_release(&best_dev);
            best_dev = dev;
            memset(&dev, 0, sizeof dev);
        } else {
            panel_device_release(&dev);
        }
    }
    if (!have)
        FAIL_GOTO(SPF_ERR_UNSUPPORTED, "panel: no config launches on this device");
    info->generate_s = build_s;
    info->load_s = load_s;
    if (env->check) {
        info->tune_s = timing_now_s() - tune0 - load_s;
        info->configs_tried = tried;
        info->kernel_us = best_us;
    }
    panel_state *s = mem_calloc(1, sizeof *s);
    if (!s)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "a panel plan");
    s->p = *p;
    s->p.a = NULL;
    s->config = best;
    s->dev = best_dev;
    panel_config_name(&best, info->config, sizeof info->config);
    snprintf(info->kernel_name, sizeof info->kernel_name, "panel_%s%s_%s", dtype_name(p->dtype),
             p->b_layout == SPF_LAYOUT_N_FIRST ? "_bnk" : "", info->config);
    info->device_bytes = s->dev.bytes;
    *state = s;
    return SPF_OK;
fail:
    panel_device_release(&dev);
    panel_device_release(&best_dev);
    return status;
}

static spf_status panel_launch_state(const void *state, const void *b, void *c, const float *bias,
                                     void *stream)
{
    const panel_state *s = state;
    spmm_operands op = problem_operands(&s->p, b, c, bias);
    return panel_launch(&s->dev, &s->config, &op, stream);
}

/* The cache keeps the config's name: decode rebuilds the format of its
 * width and uploads it, without timing. */
static spf_status panel_encode(const void *state, unsigned char **bytes, size_t *size)
{
    const panel_state *s = state;
    char name[64];
    panel_config_name(&s->config, name, sizeof name);
    return strategy_encode_name(name, bytes, size);
}

static spf_status panel_decode(const problem *p, const strategy_env *env,
                               const spf_plan_info *stored, const unsigned char *bytes,
                               size_t size, void **state)
{
    (void)stored, (void)env;
    *state = NULL;
    char name[64];
    spf_status status = strategy_decode_name(bytes, size, "panel", name, sizeof name);
    if (status != SPF_OK)
        return status;
    panel_config c;
    status = panel_config_from_name(name, &c);
    if (status != SPF_OK)
        return status;
    if (c.nc != panel_nc_for(c.mma, p->n))
        return FAIL(SPF_ERR_PARSE, "panel config \"%s\" for N = %lld", name, (long long)p->n);
    panel_state *s = mem_calloc(1, sizeof *s);
    if (!s)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "a panel plan");
    double build_s = 0;
    status = upload_format(p, c.width, &s->dev, &build_s);
    if (status != SPF_OK) {
        mem_free(s);
        return status;
    }
    s->p = *p;
    s->p.a = NULL;
    s->config = c;
    *state = s;
    return SPF_OK;
}

#else /* no CUDA: supports() refuses, so none of these runs */

#define panel_build strategy_build_without_cuda
#define panel_launch_state strategy_launch_without_cuda
#define panel_release strategy_release_nothing
#define panel_encode NULL
#define panel_decode NULL

#endif

const strategy strategy_panel = {
    .id = SPF_STRATEGY_PANEL,
    .name = "panel",
    .on_device = 1,
    .supports = panel_supports,
    .estimate_us = panel_estimate_us,
    .build = panel_build,
    .launch = panel_launch_state,
    .release = panel_release,
    .encode = panel_encode,
    .decode = panel_decode,
};
