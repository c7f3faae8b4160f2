#include "strategy/unrolled/constraints.h"

#include "strategy/unrolled/schedule.h"
#include "strategy/unrolled/unrolled.h"
#include "core/error.h"
#include "core/log.h"
#include "core/matrix.h"

#include <math.h>
#include <stdint.h>

void constraint_options_init(constraint_options *o)
{
    *o = (constraint_options){.dtype = SPF_DTYPE_F32,
                              .max_registers = CONSTRAINT_MAX_REGISTERS,
                              .block_registers = CONSTRAINT_BLOCK_REGISTERS,
                              .sm_count = CONSTRAINT_DEFAULT_SMS,
                              .th_row = 0.25,
                              .th_col = 0.25,
                              .balance_floor = 1};
}

/* LO-SpMM §3.2 counts a thread's variables; here they are the m1 × v
 * accumulators, the (prefetch + 1) × v lanes of the B ring and a constant
 * for addresses, loop-free control and the epilogue, plus the f16 / bf16
 * conversions — which is how the codegen sizes the register cap it hands
 * ptxas (unrolled_register_need). A least-absolute-error fit to ptxas 13.0
 * on 120 generated kernels (sm_90, -c under the cap, +32 on spills, counts
 * read from the cubin; every m1, v, prefetch and ksplit of the FULL space,
 * all dtypes) found that under its cap ptxas uses the cap less 2 whenever
 * the kernel could use more (98 of 120), so the forecast is the cap less 2
 * rather than a second formula. It errs high where a thread's share of the
 * tile is a few columns (m1 = 1 with a K split at 0.95), which only makes
 * the constraint conservative, and low where ptxas spilled under the cap
 * and was run again with 32 more. On 40 other kernels
 * (test_register_forecast.c, K 256): mean |error| 2.8, 36 within 8, the
 * largest 33 (a spill rerun); the test holds it to a mean of 6 and checks
 * the spread. */
int register_forecast(const spf_kernel_config *cfg, spf_dtype dtype)
{
    /* Under its cap ptxas uses the cap less 2 whenever the kernel could use more. */
    int64_t r = unrolled_register_need(cfg, dtype) - 2;
    return r > INT32_MAX ? INT32_MAX : (int)r; /* over 255: the constraint drops it */
}

/* Registers are allocated per warp in units of 256, i.e. 8 per thread. */
static int64_t allocated_registers(int forecast)
{
    return ((int64_t)forecast + 7) / 8 * 8;
}

int constraint_register(const tile_problem *p, const spf_kernel_config *cfg,
                        const constraint_options *o)
{
    (void)p;
    int r = register_forecast(cfg, o->dtype);
    int cap = o->max_registers < CONSTRAINT_MAX_REGISTERS ? o->max_registers
                                                          : CONSTRAINT_MAX_REGISTERS;
    return r <= cap && allocated_registers(r) * tiling_threads(cfg) <= o->block_registers;
}

int constraint_utilization(const tile_problem *p, const spf_kernel_config *cfg,
                           const constraint_options *o)
{
    /* "At least half": 2 · blocks ≥ SMs, so an odd SM count rounds up. */
    return tiling_threads(cfg) % 32 == 0 &&
           2 * tiling_blocks(p->a->rows, p->n, cfg) >= (int64_t)o->sm_count;
}

int constraint_balance(const tile_problem *p, const spf_kernel_config *cfg,
                       const constraint_options *o)
{
    return tiling_col_waste(p->n, cfg->n1) <= o->th_col && tiling_row_cov(p, cfg->m1) <= o->th_row;
}

const char *constraint_stage_name(constraint_stage s)
{
    switch (s) {
    case CONSTRAINT_STAGE_SPACE: return "space";
    case CONSTRAINT_STAGE_REGISTER: return "register";
    case CONSTRAINT_STAGE_UTILIZATION: return "utilization";
    case CONSTRAINT_STAGE_BALANCE: return "balance";
    case CONSTRAINT_STAGES: break;
    }
    return "?";
}

/* The options the balance stage applies to the survivors of the earlier
 * stages (space_reduce's balance_floor). */
static constraint_options balance_thresholds(const tile_problem *p, const tile_space *s,
                                             const constraint_options *o)
{
    constraint_options t = *o;
    if (!o->balance_floor || s->count == 0)
        return t;
    double least_row = INFINITY, least_col = INFINITY;
    for (int i = 0; i < s->count; i++) {
        least_col = fmin(least_col, tiling_col_waste(p->n, s->configs[i].n1));
        /* the space comes grouped by m1: one COV per run of equal m1 */
        if (i == 0 || s->configs[i].m1 != s->configs[i - 1].m1)
            least_row = fmin(least_row, tiling_row_cov(p, s->configs[i].m1));
    }
    t.th_row = fmax(o->th_row, least_row);
    t.th_col = fmax(o->th_col, least_col);
    if (t.th_row > o->th_row || t.th_col > o->th_col)
        log_msg(SPF_LOG_DEBUG,
                "constraints: no survivor within COV_row %g / WASTE_col %g; balance thresholds "
                "raised to %g / %g",
                o->th_row, o->th_col, t.th_row, t.th_col);
    return t;
}

typedef int (*constraint_fn)(const tile_problem *, const spf_kernel_config *,
                             const constraint_options *);

spf_status space_reduce(const tile_problem *p, const constraint_options *o, tile_space *s,
                        int counts[CONSTRAINT_STAGES])
{
    static const constraint_fn stages[CONSTRAINT_STAGES] = {
        [CONSTRAINT_STAGE_REGISTER] = constraint_register,
        [CONSTRAINT_STAGE_UTILIZATION] = constraint_utilization,
        [CONSTRAINT_STAGE_BALANCE] = constraint_balance,
    };
    constraint_options defaults;
    if (!p || !p->a || !s || !counts || s->count < 0 || (s->count > 0 && !s->configs))
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "no problem, matrix, space or counts");
    if (p->n < 1)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "n = %lld: B needs at least one column",
                    (long long)p->n);
    if (!o) {
        constraint_options_init(&defaults);
        o = &defaults;
    }
    if (o->dtype != SPF_DTYPE_F32 && o->dtype != SPF_DTYPE_F16 && o->dtype != SPF_DTYPE_BF16)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "dtype %d: not F32, F16 or BF16", (int)o->dtype);
    if (o->max_registers < 1 || o->block_registers < 1 || o->sm_count < 1 ||
        !(o->th_row >= 0.0) || !(o->th_col >= 0.0))
        return FAIL(SPF_ERR_INVALID_ARGUMENT,
                    "options: max_registers %d, block_registers %d, sm_count %d (each ≥ 1), "
                    "th_row %g, th_col %g (each ≥ 0)",
                    o->max_registers, o->block_registers, o->sm_count, o->th_row, o->th_col);
    for (int i = 0; i < s->count; i++)
        if (schedule_config_check(&s->configs[i], p->n) != SPF_OK) {
            error_prefix("%s: configuration %d", __func__, i);
            return SPF_ERR_INVALID_ARGUMENT;
        }
    counts[CONSTRAINT_STAGE_SPACE] = s->count;
    for (int stage = CONSTRAINT_STAGE_REGISTER; stage < CONSTRAINT_STAGES; stage++) {
        constraint_options t = stage == CONSTRAINT_STAGE_BALANCE ? balance_thresholds(p, s, o) : *o;
        int kept = 0;
        for (int i = 0; i < s->count; i++)
            if (stages[stage](p, &s->configs[i], &t))
                s->configs[kept++] = s->configs[i];
        s->count = kept;
        counts[stage] = kept;
    }
    return SPF_OK;
}
