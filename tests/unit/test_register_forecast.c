/* The register forecast (LO-SpMM §3.2) against ptxas: PTX for a spread of
 * configurations (m1, v, prefetch, ksplit, dtype) on random matrices is
 * assembled with ptxas -c -v under the cap each program asks for
 * (program.max_registers, +32 on spills, as jit.c does through
 * ptxas_compile), and the forecast is compared with the registers ptxas
 * used. Writes the table to $SPF_BUILD_DIR/register_forecast.csv (one run
 * is committed as bench/results/register-forecast-cpu.csv). Skips visibly
 * when no ptxas is installed. */
#include "test_util.h"

#include "strategy/unrolled/schedule.h"
#include "strategy/unrolled/unrolled.h"
#include "core/rng.h"
#include "gpu/ptxas.h"
#include "strategy/unrolled/constraints.h"

#include <stdint.h>
#include <stdlib.h>

enum { CASES = 40 };

/* The bounds the forecast must keep (constraints.c, register_forecast, has
 * the measurements behind them). ptxas reports use in steps the cap sets:
 * it fills a cap the kernel could exceed (to the cap less 2), and the cap
 * is rounded to 8, so one allocation granule (8) is the resolution a
 * config-only formula can reach; most configurations must land within it.
 * Two departures are inherent and bounded apart: a forecast too high where
 * a thread's share of the tile is a few columns and ptxas needs less than
 * the cap (conservative, at most OVER_BOUND), and a forecast too low where
 * ptxas spilled under the cap and ran again with 32 more, which no formula
 * of the configuration alone foresees: every miss low beyond the granule
 * must be such a rerun (registers over the cap). */
#define GRANULE 8
#define WITHIN_GRANULE_SHARE 0.75
#define OVER_BOUND 48
#define MEAN_ABS_ERROR 6.0

typedef struct fcase {
    spf_kernel_config cfg;
    spf_dtype dtype;
    int f16x2;
    int64_t m, k;
    double sparsity;
    spf_matrix *a;
    ptx_program prog;
    int unit0;         /* its first unit in the flat list */
} fcase;

static const char *math_label(spf_dtype d, int f16x2)
{
    return f16x2 ? "f16x2" : d == SPF_DTYPE_F32 ? "f32" : d == SPF_DTYPE_F16 ? "f16" : "bf16";
}

/* A configuration drawn from the FULL space's values that the schedule
 * accepts for n, with a dtype; every (m1, v) pair and every dtype appear
 * (the first 18 cases walk m1 × v, the dtype cycles). */
static void draw_case(rng *r, int i, int64_t n, fcase *c)
{
    static const int32_t m1s[] = {1, 2, 4, 8, 16, 32}, vs[] = {1, 2, 4}, n1s[] = {32, 64, 128, 256},
                         pfs[] = {0, 1, 2, 4}, ks[] = {1, 2, 4};
    static const double sparsities[] = {0.8, 0.9, 0.95};
    for (;;) {
        spf_kernel_config cfg = {
            .m1 = i < 18 ? m1s[i % 6] : m1s[rng_next(r) % 6],
            .v = i < 18 ? vs[i / 6] : vs[rng_next(r) % 3],
            .n1 = n1s[rng_next(r) % 4],
            .prefetch = pfs[rng_next(r) % 4],
            .ksplit = ks[rng_next(r) % 3],
        };
        int d = i % 4; /* f32, f16, bf16, f16 with f16x2 accumulation */
        if (d == 3 && cfg.v == 1)
            d = 1;
        if (schedule_config_check(&cfg, n) != SPF_OK)
            continue;
        *c = (fcase){.cfg = cfg,
                     .dtype = d == 0 ? SPF_DTYPE_F32 : d == 2 ? SPF_DTYPE_BF16 : SPF_DTYPE_F16,
                     .f16x2 = d == 3,
                     .m = 64,
                     .k = 256,
                     .sparsity = sparsities[rng_next(r) % 3]};
        return;
    }
}

int main(int argc, char **argv)
{
    char ptxas[1024];
    if (!ptxas_locate(ptxas, sizeof ptxas))
        SKIP("no ptxas ($SPF_PTXAS, $CUDA_HOME/bin, /usr/local/cuda/bin or PATH): the register "
             "forecast cannot be checked");
    const int64_t n = 256;
    fcase cases[CASES];
    rng r;
    rng_seed(&r, 7); /* the fit (constraints.c) drew 120 cases from seed 2026 */
    int units = 0;
    for (int i = 0; i < CASES; i++) {
        fcase *c = &cases[i];
        draw_case(&r, i, n, c);
        c->a = gen_matrix(SPF_GEN_UNIFORM, c->m, c->k, c->sparsity, 100 + (uint64_t)i);
        spf_status st = unrolled_generate(c->a, NULL, n, &c->cfg, c->dtype, c->f16x2, 1, 1, 90, 0,
                                          &c->prog);
        CHECK_MSG(st == SPF_OK, "case %d: %s", i, spf_last_error());
        c->unit0 = units;
        units += c->prog.unit_count;
    }
    const ptx_unit **list = calloc((size_t)units, sizeof *list);
    unsigned *caps = calloc((size_t)units, sizeof *caps);
    ptxas_result *res = calloc((size_t)units, sizeof *res);
    CHECK(list && caps && res);
    if (!list || !caps || !res)
        return check_report();
    for (int i = 0; i < CASES; i++)
        for (int u = 0; u < cases[i].prog.unit_count; u++) {
            list[cases[i].unit0 + u] = &cases[i].prog.units[u];
            caps[cases[i].unit0 + u] = cases[i].prog.max_registers;
        }
    CHECK_OK(ptxas_compile(ptxas, list, caps, units, 90, 0, res));

    const char *build = getenv("SPF_BUILD_DIR");
    char csv_path[1200];
    snprintf(csv_path, sizeof csv_path, "%s/register_forecast.csv", build ? build : ".");
    FILE *csv = fopen(csv_path, "w");
    CHECK_MSG(csv != NULL, "cannot write %s", csv_path);
    if (csv)
        fprintf(csv, "m1,n1,v,prefetch,ksplit,dtype,m,k,sparsity,register_cap,registers,"
                     "spill_bytes,forecast,error\n");
    double sum = 0;
    int worst = 0, measured = 0, within = 0, reruns = 0;
    for (int i = 0; i < CASES; i++) {
        fcase *c = &cases[i];
        int regs = 0, spills = 0, ok = c->prog.unit_count > 0;
        for (int u = 0; u < c->prog.unit_count; u++) {
            ptxas_result *x = &res[c->unit0 + u];
            CHECK_MSG(x->status == SPF_OK, "case %d unit %d: %s", i, u, x->log ? x->log : "");
            ok &= x->status == SPF_OK;
            /* ptxas -c -v names the entry's count only; the tile functions'
             * come from the cubin, and ptxas_compile reports the largest */
            int unit_regs =
                x->status == SPF_OK ? ptxas_cubin_registers(x->cubin, x->cubin_size) : 0;
            CHECK_MSG(x->status != SPF_OK || (unit_regs > 0 && unit_regs == x->registers),
                      "case %d unit %d: cubin %d registers, ptxas_compile %d", i, u, unit_regs,
                      x->registers);
            regs = unit_regs > regs ? unit_regs : regs;
            spills += x->spill_bytes;
        }
        if (!ok)
            continue;
        int f = register_forecast(&c->cfg, c->dtype), err = f - regs;
        int abs_err = err < 0 ? -err : err;
        sum += abs_err;
        worst = abs_err > worst ? abs_err : worst;
        measured++;
        within += abs_err <= GRANULE;
        reruns += regs > (int)c->prog.max_registers;
        CHECK_MSG(err <= OVER_BOUND && (err >= -GRANULE || regs > (int)c->prog.max_registers),
                  "%s m1 %d v %d p %d k %d: forecast %d, ptxas %d under the cap %u",
                  math_label(c->dtype, c->f16x2), c->cfg.m1, c->cfg.v, c->cfg.prefetch,
                  c->cfg.ksplit, f, regs, c->prog.max_registers);
        printf("%-5s m1 %2d n1 %3d v %d p %d k %d  %3lldx%-3lld s %.2f  cap %3u  ptxas %3d  "
               "spill %d  forecast %3d  error %+d\n",
               math_label(c->dtype, c->f16x2), c->cfg.m1, c->cfg.n1, c->cfg.v, c->cfg.prefetch,
               c->cfg.ksplit, (long long)c->m, (long long)c->k, c->sparsity,
               c->prog.max_registers, regs, spills, f, err);
        if (csv)
            fprintf(csv, "%d,%d,%d,%d,%d,%s,%lld,%lld,%.2f,%u,%d,%d,%d,%d\n", c->cfg.m1, c->cfg.n1,
                    c->cfg.v, c->cfg.prefetch, c->cfg.ksplit, math_label(c->dtype, c->f16x2),
                    (long long)c->m, (long long)c->k, c->sparsity, c->prog.max_registers, regs,
                    spills, f, err);
    }
    CHECK(measured >= 30);
    double mean = measured ? sum / measured : 0;
    printf("forecast error over %d configurations: mean |error| %.2f, max |error| %d registers; "
           "%d within %d; %d reran over the cap for spills (bounds: mean %.0f, share %.2f)\n",
           measured, mean, worst, within, GRANULE, reruns, MEAN_ABS_ERROR, WITHIN_GRANULE_SHARE);
    CHECK(mean <= MEAN_ABS_ERROR);
    CHECK(within >= WITHIN_GRANULE_SHARE * measured);
    if (csv) {
        fclose(csv);
        printf("table: %s\n", csv_path);
    }
    for (int i = 0; i < units; i++)
        ptxas_result_clear(&res[i]);
    for (int i = 0; i < CASES; i++) {
        ptx_program_free(&cases[i].prog);
        spf_matrix_free(cases[i].a);
    }
    free(list);
    free(caps);
    free(res);
    return check_report();
}
