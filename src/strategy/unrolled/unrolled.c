#include "strategy/unrolled/unrolled.h"

#include "strategy/unrolled/kernel_emit.h"
#include "strategy/unrolled/ptx.h"
#include "strategy/unrolled/schedule.h"
#include "core/alloc.h"
#include "core/error.h"
#include "core/matrix.h"

#include <stdio.h>
#include <string.h>

void unrolled_kernel_name(const spf_kernel_config *cfg, spf_dtype dtype, int f16x2_accumulate,
                          char name[128])
{
    snprintf(name, 128, "spf_unrolled_%s_m%d_n%d_v%d_p%d_k%d",
             kernel_dtype_tag(dtype, f16x2_accumulate), (int)cfg->m1, (int)cfg->n1, (int)cfg->v,
             (int)cfg->prefetch, (int)cfg->ksplit);
}

/* The generator of one schedule: its tile functions and entry, named for
 * the configuration. */
static void gen_init(tile_gen *g, const schedule *s, spf_dtype dtype, int f16x2, int bias, int relu)
{
    char name[128];
    unrolled_kernel_name(&s->cfg, dtype, f16x2, name);
    tile_gen_init(g, s, dtype, f16x2, bias, relu, name);
}

/* --------------------------------------------------------------- driver */

/* The register cap suggested to ptxas for the tile functions: the m1 × v
 * accumulators (f16x2: half as many while accumulating, but f32 in the
 * epilogue) with a quarter more for the scheduler's freedom, the prefetch
 * ring counted in f32 lanes, 40 for addresses and the epilogue, and 24 more
 * for f16 / bf16 conversions; rounded up to 8 and at most 255. Measured
 * with ptxas 13.0 on 64×256 patterns at 0.9: spill-free for m1 × v up to
 * 128, with and without a K split (the pooled owned rows keep the split's
 * epilogue as light as the plain one). */
int64_t unrolled_register_need(const spf_kernel_config *cfg, spf_dtype dtype)
{
    int64_t acc = (int64_t)cfg->m1 * cfg->v;
    int64_t need = acc + acc / 4 + (int64_t)(cfg->prefetch + 1) * cfg->v + 40 +
                   (dtype == SPF_DTYPE_F32 ? 0 : 24);
    return (need + 7) / 8 * 8;
}

/* Code size (the budget decides unrolled vs generic): per nonzero the fmas;
 * per B row the load and its conversions; per output row the epilogue and
 * store. */
static int64_t instruction_estimate(const tile_gen *g)
{
    int v = g->s->cfg.v;
    int fma = tile_fma_per_entry(g);
    int load_ops = 1 + (g->dtype == SPF_DTYPE_F32 || g->f16x2 ? 0 : 2 * v);
    int store_ops = 1 + g->bias * (1 + v) + g->relu * v + (g->dtype == SPF_DTYPE_F32 ? 0 : v);
    return schedule_instructions(g->s, fma, load_ops, store_ops);
}

spf_status unrolled_estimate(const spf_matrix *a, const int32_t *row_order, int64_t n,
                             const spf_kernel_config *cfg, spf_dtype dtype, int f16x2_accumulate,
                             int bias, int relu, int64_t *instructions)
{
    spf_status status = SPF_OK;
    schedule s = {0};
    if (!instructions)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "no output");
    *instructions = 0;
    TRY(kernel_check_request(a, n, dtype, f16x2_accumulate, cfg));
    TRY(schedule_create(a, row_order, n, cfg, &s));
    tile_gen g;
    gen_init(&g, &s, dtype, f16x2_accumulate, bias, relu);
    *instructions = instruction_estimate(&g);
fail:
    schedule_free(&s);
    return status;
}

/* Both generators: B in memory (gather NULL) or a convolution's implicit
 * im2col. */
static spf_status generate(const spf_matrix *a, const int32_t *row_order, int64_t n,
                           const spf_kernel_config *cfg, spf_dtype dtype, int f16x2_accumulate,
                           int bias, int relu, const conv_gather *gather, int sm,
                           int64_t code_budget, ptx_program *out)
{
    spf_status status = SPF_OK;
    schedule s = {0};
    if (!out)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "no output program");
    memset(out, 0, sizeof *out);
    if (sm != 80 && sm != 90)
        FAIL_GOTO(SPF_ERR_INVALID_ARGUMENT, "sm = %d: must be 80 or 90", sm);
    TRY(kernel_check_request(a, n, dtype, f16x2_accumulate, cfg));
    TRY(schedule_create(a, row_order, n, cfg, &s));

    tile_gen g;
    gen_init(&g, &s, dtype, f16x2_accumulate, bias, relu);
    if (gather) {
        g.gather = gather;
        g.c_row_bytes = gather->nhwc ? g.es : n * g.es;
        snprintf(g.name + strlen(g.name), sizeof g.name - strlen(g.name), "_im2col_%s",
                 gather->nhwc ? "nhwc" : "nchw");
    }
    int64_t estimate = instruction_estimate(&g);
    if (code_budget > 0 && estimate > code_budget)
        FAIL_GOTO(SPF_ERR_UNSUPPORTED,
                  "%s: about %lld instructions, over the code budget of %lld (use the generic "
                  "kernel)",
                  g.name, (long long)estimate, (long long)code_budget);

    entry_dispatch dispatch = {.functions = s.tile_count};
    TRY(kernel_emit_units(&g, sm, &dispatch, out));
    memcpy(out->grid, s.grid, sizeof out->grid);
    memcpy(out->block, s.block, sizeof out->block);
    out->shared_bytes = s.shared_bytes;
fail:
    schedule_free(&s);
    if (status != SPF_OK)
        ptx_program_free(out);
    return status;
}

spf_status unrolled_generate(const spf_matrix *a, const int32_t *row_order, int64_t n,
                             const spf_kernel_config *cfg, spf_dtype dtype, int f16x2_accumulate,
                             int bias, int relu, int sm, int64_t code_budget, ptx_program *out)
{
    return generate(a, row_order, n, cfg, dtype, f16x2_accumulate, bias, relu, NULL, sm,
                    code_budget, out);
}

spf_status unrolled_gather_check(const spf_matrix *a, const conv_gather *gather,
                                 const spf_kernel_config *cfg, spf_dtype dtype)
{
    if (!a || !gather || !cfg)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "no matrix, gather or configuration");
    const int64_t es = dtype == SPF_DTYPE_F32 ? 4 : 2, pq = (int64_t)gather->p * gather->q;
    if (cfg->v != 1)
        return FAIL(SPF_ERR_UNSUPPORTED, "implicit im2col: v = %d; a thread's columns are "
                    "output positions whose windows are not adjacent, so v = 1",
                    (int)cfg->v);
    if (gather->r > 16 || gather->s > 16)
        return FAIL(SPF_ERR_UNSUPPORTED, "implicit im2col: a %d×%d filter; at most 16×16 (the "
                    "tap mask holds 16 rows and 16 columns)", (int)gather->r, (int)gather->s);
    if (a->cols != (int64_t)gather->c * gather->r * gather->s || pq <= 0 ||
        gather->cols % pq != 0)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "implicit im2col: %lld weight columns against "
                    "C·R·S = %lld, or %d positions not whole images of %lld",
                    (long long)a->cols, (long long)gather->c * gather->r * gather->s,
                    (int)gather->cols, (long long)pq);
    /* the input a launch reads, and the entry's 32-bit products */
    const int64_t input = (int64_t)gather->cols / pq * gather->c * gather->h * gather->w * es;
    if (input > INT32_MAX || a->rows * es > INT32_MAX)
        return FAIL(SPF_ERR_UNSUPPORTED, "implicit im2col: an input of %lld bytes a launch; "
                    "at most 2^31 - 1 (32-bit offsets)", (long long)input);
    return SPF_OK;
}

spf_status unrolled_generate_gather(const spf_matrix *a, const int32_t *row_order,
                                    const conv_gather *gather, const spf_kernel_config *cfg,
                                    spf_dtype dtype, int bias, int relu, int sm,
                                    int64_t code_budget, ptx_program *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    spf_status status = unrolled_gather_check(a, gather, cfg, dtype);
    if (status != SPF_OK)
        return status;
    return generate(a, row_order, gather->cols, cfg, dtype, 0, bias, relu, gather, sm,
                    code_budget, out);
}
