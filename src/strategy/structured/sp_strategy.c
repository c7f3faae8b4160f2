/* The structured strategy's row (strategy.h): 2:4 and V:2:M matrices
 * (sp_pattern.h) on the sparse tensor cores, mma.sp m16n8k32, fp16 and
 * bf16 with fp32 accumulation, over the format of sp_format.h (issue 13;
 * STuning-DL §II for V:N:M, whose kept columns are gathered); column
 * vectors on the dense tensor cores with their columns gathered
 * (sp_colvec.h). Rows that strays keep out of a 2:4 or V:2:M pattern
 * (sp_pattern.h) go to the generic CSR kernel, launched after the
 * structured one and timed with it.
 *
 * From N = 256 on Hopper a V:2:M matrix takes the 2:4 format, which the
 * TMA kernel runs (SP_AS_24_FROM_N).
 *
 * It says no, with the reason, to a matrix without such a pattern. Its
 * regime is a model pruned with structure, at every N: the format moves
 * 1.125 bytes a weight (2:4) or 0.56 (V:2:8) where dense fp16 moves 2.
 *
 * Choosing the configuration (STuning-DL §IV): the predictor
 * (sp_predict.h) ranks the tuning space of N (sp_tuning_space: the stream
 * kernel up to N = 128, the tile kernel from N = 16, on Hopper the wgmma
 * kernel and from N = 64 the TMA kernel), its first SP_PREDICT_TIMED that
 * launch are timed on the self-check's buffers, with every config of the
 * TMA kernel (which the model has no logs of), and the fastest is kept. */
#include "strategy/structured/sp_kernel.h"

#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "core/matrix.h"
#include "gpu/timing.h"
#include "strategy/generic/generic.h"
#include "strategy/roofline.h"
#include "strategy/structured/sp_colvec.h"
#include "strategy/structured/sp_predict.h"
#include "strategy/structured/sp_strays.h"
#include "strategy/strategy.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* grid.y counts column blocks of at least 64 (≤ 65535) */
#define SP_MAX_N ((int64_t)65535 * 64)

static int sp_supports(const problem *p, const spf_device_info *dev, const spf_plan_options *o,
                       char *reason, size_t cap)
{
    (void)o;
    if (!strategy_supports_16bit(p, dev, "mma.sp", "the sparse tensor cores' 2:4 types", reason, cap))
        return 0;
    if (p->n > SP_MAX_N) {
        snprintf(reason, cap, "N = %lld: at most %lld columns", (long long)p->n,
                 (long long)SP_MAX_N);
        return 0;
    }
    if (p->m >= INT32_MAX || p->k >= INT32_MAX) {
        snprintf(reason, cap, "M or K reaches 2^31 (the kernel's int32 offsets)");
        return 0;
    }
    sp_pattern pat;
    return sp_pattern_detect(p->a, &pat, reason, cap);
}

/* Column vectors: the stored values (2 bytes) and their blocks' columns
 * (4 bytes a column of a block) once per column block, B and C; the
 * gathered rows of B from L2; the mma over each tile's 16 slots a step. */
static double colvec_estimate_us(const problem *p, const sp_pattern *pat,
                                 const spf_device_info *dev)
{
    double n = (double)p->n, stored = pat->fill * (double)p->a->nnz, columns = stored / pat->vec;
    double nc = 8.0 * sp_nb_for(p->n), col_blocks = ceil(n / nc);
    double bw = roofline_bandwidth(dev);
    double bytes = (2.0 * stored + 4.0 * columns) * col_blocks +
                   2.0 * n * ((double)p->k + (double)p->m);
    double b_reads = columns * fmin(n, nc) * 2.0 * col_blocks;
    double flops = 32.0 * columns * nc * col_blocks;
    double peak = roofline_peak_flops(dev, p->dtype, p->math, ROOFLINE_TENSOR_CORES);
    return fmax(fmax(bytes / bw, b_reads / (3.0 * bw)), flops / peak) * 1e6 + ROOFLINE_LAUNCH_US;
}

/* Bytes of A (1.125 a condensed weight) once per column block, B and C;
 * the rows of B every pair of row tiles reads from L2 (at about three
 * times the DRAM rate); mma.sp at twice the dense tensor-core rate. */
static double sp_estimate_us(const problem *p, const spf_device_info *dev)
{
    sp_pattern pat = {.group = 4}; /* a matrix without a pattern (never built) as 2:4 */
    char why[8];
    sp_pattern_detect(p->a, &pat, why, sizeof why);
    if (pat.vec)
        return colvec_estimate_us(p, &pat, dev);
    double m = (double)p->m, n = (double)p->n;
    double kc = ceil((double)sp_pattern_condensed_cols(&pat, p->k) / 64.0) * 64.0;
    double nc = 8.0 * sp_nb_for(p->n), col_blocks = ceil(n / nc);
    double bw = roofline_bandwidth(dev);
    double bytes = 1.125 * m * kc * col_blocks + 2.0 * n * ((double)p->k + m);
    double b_reads = ceil(m / 32.0) * kc * fmin(n, 64.0) * 2.0 * col_blocks;
    double flops = 2.0 * m * kc * n / 2.0;
    double peak = 2.0 * roofline_peak_flops(dev, p->dtype, p->math, ROOFLINE_TENSOR_CORES);
    return fmax(fmax(bytes / bw, b_reads / (3.0 * bw)), flops / peak) * 1e6 + ROOFLINE_LAUNCH_US;
}

#ifdef SPF_HAVE_CUDA

/* What strays leave to a second kernel (sp_pattern.h, "Strays"): without
 * ReLU the strays alone, whose products are added to C; with ReLU the
 * rows outside the pattern whole, by the CSR kernel. */
typedef struct sp_apart {
    sp_strays strays;     /* rows 0: none            */
    generic_csr outside;  /* ordered 0: none         */
} sp_apart;

typedef struct sp_state {
    problem p; /* the matrix pointer is not kept */
    sp_config config;
    sp_device dev;
    sp_apart apart;
} sp_state;

typedef struct sp_call {
    const sp_device *dev;
    const sp_config *config;
    const sp_apart *apart;
    const problem *p;
    spmm_operands op;
} sp_call;

static void apart_release(sp_apart *apart)
{
    sp_strays_release(&apart->strays);
    generic_csr_release(&apart->outside);
}

/* The structured kernel, then (same stream: in order) the strays' kernel
 * adding to its C, or the CSR kernel overwriting the rows outside. */
static spf_status sp_call_launch(const sp_call *call, void *stream)
{
    const spmm_operands *op = &call->op;
    spf_status status = sp_launch(call->dev, call->config, op, stream);
    if (status == SPF_OK && call->apart->strays.rows > 0)
        status = sp_strays_launch(&call->apart->strays, call->p->dtype, op, stream);
    if (status == SPF_OK && call->apart->outside.ordered > 0)
        status = generic_csr_launch(&call->apart->outside, call->p, op->b, op->c, op->bias,
                                    stream);
    return status;
}

static spf_status timed_launch(void *ctx, void *stream)
{
    return sp_call_launch(ctx, stream);
}

static void sp_release(void *state)
{
    sp_state *s = state;
    if (!s)
        return;
    sp_device_release(&s->dev);
    apart_release(&s->apart);
    mem_free(s);
}

/* Split p's matrix into the part that has pattern pat (*inside) and what
 * goes apart: without ReLU its strays (sp_pattern_strays), with ReLU the
 * whole rows outside the pattern (sp_pattern_outside). */
static spf_status split(const problem *p, const sp_pattern *pat, spf_matrix **inside,
                        sp_apart *apart)
{
    const spf_matrix *a = p->a;
    spf_status status = SPF_OK;
    spf_matrix *out = NULL; /* the nonzeros apart */
    uint8_t *row_mask = NULL;
    uint8_t *mask = mem_alloc((size_t)a->row_ptr[a->rows] + 1); /* a nonzero's: 1 apart */
    if (!mask)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "structured: a mask of %lld nonzeros",
                  (long long)a->row_ptr[a->rows]);
    if (!p->relu) {
        if (sp_pattern_strays(a, pat, mask) < 0)
            FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "structured: the strays");
    } else {
        row_mask = mem_alloc((size_t)a->rows + 1);
        if (!row_mask || sp_pattern_outside(a, pat, row_mask) < 0)
            FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "structured: the rows outside the pattern");
        for (int64_t r = 0; r < a->rows; r++)
            memset(mask + a->row_ptr[r], row_mask[r], (size_t)(a->row_ptr[r + 1] - a->row_ptr[r]));
    }
    TRY(matrix_part(a, mask, 1, &out));
    if (!p->relu)
        TRY(sp_strays_upload(out, &apart->strays));
    else
        TRY(generic_csr_upload_nonempty(out, &apart->outside));
    TRY(matrix_part(a, mask, 0, inside));
fail:
    if (status != SPF_OK)
        apart_release(apart);
    spf_matrix_free(out);
    mem_free(row_mask);
    mem_free(mask);
    return status;
}

/* From this N on Hopper a V:2:M matrix takes the 2:4 format: the TMA
 * kernel runs 2:4 only, and it beats both dense and the V:2:M kernels there
 * (H200, 4096 × 4096 N = 2048: 68 µs, cuBLAS fp16 87, the best V128:2:8
 * kernel 174; N = 256: 21.8 against the V:2:M kernels' 43). The TMA
 * kernel with V:2:M's rows of B gathered took 476 µs by the copy engine (a
 * row a copy) and 134 µs by cp.async (bench/results/structured/README.md). */
#define SP_AS_24_FROM_N 256

/* Detect, build and upload the format of p, and what strays leave apart
 * of its pattern (sp_pattern.h). On Hopper (hopper) from SP_AS_24_FROM_N
 * a V:2:M matrix takes the 2:4 format (two of M in each group are at most
 * two in each run of four), its strays those of V:2:M: decided by the
 * problem alone, so that a cached plan's format is built again the same
 * way. */
static spf_status upload_format(const problem *p, int hopper, sp_device *dev, sp_apart *apart,
                                double *build_s)
{
    sp_pattern pat;
    char reason[512];
    memset(apart, 0, sizeof *apart);
    if (!sp_pattern_detect(p->a, &pat, reason, sizeof reason))
        return FAIL(SPF_ERR_UNSUPPORTED, "structured: %s", reason);
    spf_matrix *inside = NULL;
    if (pat.outside > 0) {
        spf_status status = split(p, &pat, &inside, apart);
        if (status != SPF_OK)
            return status;
    }
    if (hopper && p->n >= SP_AS_24_FROM_N && pat.v != 0)
        pat = (sp_pattern){.group = 4, .outside = pat.outside};
    sp_format f;
    spf_status status = sp_format_build(inside ? inside : p->a, &pat, p->dtype, 0, &f);
    spf_matrix_free(inside);
    if (status != SPF_OK) {
        apart_release(apart);
        return status;
    }
    *build_s = f.build_s;
    char name[32];
    sp_pattern_name(&pat, name, sizeof name);
    log_msg(SPF_LOG_DEBUG, "structured: %s, %lld tiles, %.3f bytes per weight, %d rows outside "
            "(%s), built in %.3f s", name, (long long)f.tiles, sp_format_bytes_per_weight(&f),
            pat.outside, p->relu ? "CSR, whole rows" : "their strays added", f.build_s);
    status = sp_device_upload(&f, dev);
    sp_format_free(&f);
    if (status != SPF_OK)
        apart_release(apart);
    return status;
}

/* Splitting K over a cluster is worth timing only where the blocks of the
 * unsplit grid leave SMs idle (the few row blocks of N = 64 or of a
 * narrow layer). */
static int split_pays(const sp_config *c, const problem *p, const spf_device_info *dev)
{
    if (c->split_k <= 1)
        return 1;
    int64_t blocks = (p->m + c->bm - 1) / c->bm * ((p->n + c->bn - 1) / c->bn);
    return dev && blocks < dev->sm_count;
}

static spf_status sp_build(const problem *p, const strategy_env *env, void **state,
                           spf_plan_info *info)
{
    *state = NULL;
    spf_status status = SPF_OK;
    sp_device dev = {0};
    sp_apart apart = {0};
    sp_config best = {0}, space[SP_SPACE_MAX];
    int order[SP_SPACE_MAX];
    double best_us = 0, build_s = 0;
    int tried = 0, have = 0;
    double t0 = timing_now_s();
    int hopper = env->device && env->device->cc_major == 9;
    TRY(upload_format(p, hopper, &dev, &apart, &build_s));
    double load_s = timing_now_s() - t0 - build_s, tune0 = timing_now_s();
    int count = sp_tuning_space(p->n, &dev.pattern, hopper, space, SP_SPACE_MAX);
    /* the model's first SP_PREDICT_TIMED configs that launch (§IV: time the
     * model's top few and keep the fastest); without a check buffer to time
     * with, its first that launches. Column vectors: the model has no logs
     * of their kernel, whose space is small (at most 32 configs): all. */
    int timed = SP_PREDICT_TIMED;
    if (dev.pattern.vec) {
        for (int i = 0; i < count; i++)
            order[i] = i;
        timed = count;
    } else {
        const rank_model *model;
        TRY(sp_model(&model));
        TRY(sp_predict_order(model, p->m, p->k, p->n, &dev.pattern, space, count, order));
        if (env->check) /* the TMA kernel, which the model has no logs of: all */
            timed += sp_unlogged_first(space, count, order);
    }
    for (int i = 0; i < count && tried < timed && !(have && !env->check); i++) {
        const sp_config *c = &space[order[i]];
        if (!split_pays(c, p, env->device))
            continue;
        int blocks = 0;
        if (sp_config_occupancy(c, &dev, &blocks) != SPF_OK || blocks == 0) {
            error_clear();
            continue;
        }
        if (!env->check) { /* nothing to time with: the first config that launches */
            best = *c, have = 1;
            continue;
        }
        sp_call call = {&dev, c, &apart, p,
                        problem_operands(p, env->check->b, env->check->c, env->check->bias)};
        timing_result r;
        timing_options topt;
        selfcheck_timing(env->check, &topt);
        tried++;
        if (timing_measure(timed_launch, &call, NULL, &topt, &r) != SPF_OK) {
            log_msg(SPF_LOG_DEBUG, "structured: a config did not run: %s", spf_last_error());
            error_clear();
            continue;
        }
        if (!have || r.median_us < best_us)
            best = *c, best_us = r.median_us, have = 1;
    }
    if (!have)
        FAIL_GOTO(SPF_ERR_UNSUPPORTED, "structured: no config launches on this device");
    info->generate_s = build_s;
    info->load_s = load_s;
    if (env->check) {
        info->tune_s = timing_now_s() - tune0;
        info->configs_tried = tried;
        info->kernel_us = best_us;
    }
    sp_state *s = mem_calloc(1, sizeof *s);
    if (!s)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "a structured plan");
    s->p = *p;
    s->p.a = NULL;
    s->config = best;
    s->dev = dev;
    s->apart = apart;
    char pattern[32];
    sp_pattern_name(&dev.pattern, pattern, sizeof pattern);
    sp_config_name(&best, info->config, sizeof info->config);
    snprintf(info->kernel_name, sizeof info->kernel_name, "structured_%s_%s_%s",
             dtype_name(p->dtype), pattern, info->config);
    info->device_bytes = s->dev.bytes;
    info->device_bytes += apart.strays.bytes;
    if (apart.outside.ordered > 0) /* row_ptr, row_order; col_idx, values */
        info->device_bytes +=
            8 * ((int64_t)apart.outside.rows + 1) + 8 * (int64_t)apart.outside.nnz;
    *state = s;
    return SPF_OK;
fail:
    sp_device_release(&dev);
    apart_release(&apart);
    return status;
}

static spf_status sp_launch_state(const void *state, const void *b, void *c, const float *bias,
                                  void *stream)
{
    const sp_state *s = state;
    sp_call call = {&s->dev, &s->config, &s->apart, &s->p, problem_operands(&s->p, b, c, bias)};
    return sp_call_launch(&call, stream);
}

/* The cache keeps the config's name: decode detects and builds the format
 * again and uploads it, without timing. */
static spf_status sp_encode(const void *state, unsigned char **bytes, size_t *size)
{
    const sp_state *s = state;
    char name[64];
    sp_config_name(&s->config, name, sizeof name);
    return strategy_encode_name(name, bytes, size);
}

static spf_status sp_decode(const problem *p, const strategy_env *env, const spf_plan_info *stored,
                            const unsigned char *bytes, size_t size, void **state)
{
    (void)stored;
    *state = NULL;
    char name[64];
    spf_status status = strategy_decode_name(bytes, size, "structured", name, sizeof name);
    if (status != SPF_OK)
        return status;
    sp_config c;
    status = sp_config_from_name(name, &c);
    if (status != SPF_OK)
        return status;
    sp_state *s = mem_calloc(1, sizeof *s);
    if (!s)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "a structured plan");
    double build_s = 0;
    int hopper = env->device && env->device->cc_major == 9;
    status = upload_format(p, hopper, &s->dev, &s->apart, &build_s);
    if (status == SPF_OK && !sp_config_in_space(&c, p->n, &s->dev.pattern, hopper))
        status = FAIL(SPF_ERR_PARSE, "structured config \"%s\": not in the tuning space of "
                      "N = %lld on this pattern and device", name, (long long)p->n);
    if (status != SPF_OK) {
        sp_release(s);
        return status;
    }
    s->p = *p;
    s->p.a = NULL;
    s->config = c;
    *state = s;
    return SPF_OK;
}

#else /* no CUDA: supports() refuses, so none of these runs */

#define sp_build strategy_build_without_cuda
#define sp_launch_state strategy_launch_without_cuda
#define sp_release strategy_release_nothing
#define sp_encode NULL
#define sp_decode NULL

#endif

const strategy strategy_structured = {
    .id = SPF_STRATEGY_STRUCTURED,
    .name = "structured",
    .on_device = 1,
    .supports = sp_supports,
    .estimate_us = sp_estimate_us,
    .build = sp_build,
    .launch = sp_launch_state,
    .release = sp_release,
    .encode = sp_encode,
    .decode = sp_decode,
};
