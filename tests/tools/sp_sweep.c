/* Every configuration of the structured strategy's kernels on one problem,
 * each checked against the double reference and timed, and where the
 * strategy's own pick stands among them: the tuning logs of issue 13's
 * predictor (STuning-DL §IV: the template space of each kernel) and the
 * check of the pick against the exhaustive best.
 *
 *   spf_sp_sweep M K PATTERN N [f16|bf16] [kn|nk] [SEED] [CONFIG]
 *
 * PATTERN: 2:4 or V<v>:2:<m> (spforge gen --kind vnm); B K×N (kn, the
 * default) or N×K (nk). The space: sp_tuning_space (sp_kernel.h). One
 * line a config (name, µs, relative error), a "log," CSV line a config
 * (M, K, pattern, N, dtype, layout, config, µs), then the strategy's pick
 * (the predictor's, sp_predict.h) and its ratio to the best. Exit 1 when
 * a config's result is wrong. Needs a device (exit
 * 77 without one). CONFIG: that config alone (for a profiler). */
#include "gpu/spmm_case.h"

#include "core/error.h"
#include "gpu/timing.h"
#include "strategy/structured/sp_kernel.h"

#include <stdio.h>

typedef struct call {
    const sp_device *dev;
    const sp_config *config;
    spmm_operands op;
} call;

static spf_status launch(void *ctx, void *stream)
{
    const call *c = ctx;
    return sp_launch(c->dev, c->config, &c->op, stream);
}



typedef struct result {
    char name[32];
    double us;
} result;

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: %s M K PATTERN N [f16|bf16] [kn|nk] [SEED] [CONFIG]\n",
                argv[0]);
        return 2;
    }
    spf_device_info info;
    if (spf_device_query(0, &info) != SPF_OK || !info.available) {
        printf("SKIP: no CUDA device\n");
        return 77;
    }
    spf_gen_options g;
    spf_gen_options_init(&g);
    g.kind = SPF_GEN_VNM;
    g.rows = atoll(argv[1]), g.cols = atoll(argv[2]);
    g.seed = argc > 7 ? strtoull(argv[7], NULL, 10) : 3;
    if (strcmp(argv[3], "2:4") == 0)
        g.vector_length = 1, g.n = 2, g.m = 4;
    else if (sscanf(argv[3], "V%d:%d:%d", &g.vector_length, &g.n, &g.m) != 3) {
        fprintf(stderr, "%s: pattern \"%s\": expected 2:4 or V<v>:<n>:<m>\n", argv[0], argv[3]);
        return 2;
    }
    int64_t n = atoll(argv[4]);
    spf_dtype dtype = SPF_DTYPE_F16;
    if (argc > 5 && spf_dtype_from_name(argv[5], &dtype) != SPF_OK) {
        fprintf(stderr, "%s: dtype \"%s\": expected f16 or bf16\n", argv[0], argv[5]);
        return 2;
    }
    spf_layout bl = argc > 6 && strcmp(argv[6], "nk") == 0 ? SPF_LAYOUT_N_FIRST : SPF_LAYOUT_N_LAST;
    spf_matrix *a = NULL;
    if (g.rows < 1 || g.cols < 1 || n < 1 || spf_matrix_generate(&g, &a) != SPF_OK) {
        fprintf(stderr, "%s: cannot make the problem: %s\n", argv[0], spf_last_error());
        return 2;
    }
    sp_pattern pat;
    char why[256];
    sp_format f;
    sp_device dev;
    if (!sp_pattern_detect(a, &pat, why, sizeof why) ||
        sp_format_build(a, &pat, dtype, 0, &f) != SPF_OK || sp_device_upload(&f, &dev) != SPF_OK) {
        fprintf(stderr, "%s: the format: %s %s\n", argv[0], why, spf_last_error());
        return 1;
    }
    sp_format_free(&f);
    spmm_case t;
    spmm_case_make(&t, a, dtype, bl, n, 0, 0, NULL, 0x5eed);
    double tol = dtype_tolerance(dtype, SPF_MATH_DEFAULT);
    static result results[SP_SPACE_MAX];
    static sp_config space[SP_SPACE_MAX];
    int count = sp_tuning_space(n, &pat, info.cc_major == 9, space, SP_SPACE_MAX), wrong = 0;
    for (int i = 0; i < count; i++) {
        result *out = &results[i];
        sp_config_name(&space[i], out->name, sizeof out->name);
        int blocks = 0;
        if (argc > 8 && strcmp(out->name, argv[8]) != 0) {
            out->us = 0;
            continue;
        }
        if (sp_config_occupancy(&space[i], &dev, &blocks) != SPF_OK || blocks == 0) {
            error_clear();
            out->us = 0;
            continue;
        }
        call cl = {&dev, &space[i], {.n = n, .b_layout = bl, .b = t.db, .c = t.dc}};
        spmm_case_strides(&t, SPF_LAYOUT_N_LAST, &cl.op.b_row, &cl.op.b_col, &cl.op.c_row,
                          &cl.op.c_col);
        spmm_case_poison(&t);
        int past = 1;
        double err =
            launch(&cl, NULL) == SPF_OK ? spmm_case_error(&t, SPF_LAYOUT_N_LAST, &past) : 1.0;
        timing_result r = {0};
        if (timing_measure(launch, &cl, NULL, NULL, &r) != SPF_OK)
            r.median_us = 0;
        out->us = r.median_us;
        int ok = err <= tol && past && r.median_us > 0;
        wrong += !ok;
        printf("%-14s %9.2f us  error %.2e%s\n", out->name, out->us, err, ok ? "" : "  WRONG");
        printf("log,%lld,%lld,%s,%lld,%s,%s,%s,%.3f\n", (long long)g.rows, (long long)g.cols,
               argv[3], (long long)n, spf_dtype_name(dtype), bl == SPF_LAYOUT_N_LAST ? "kn" : "nk",
               out->name, out->us);
    }
    sp_device_release(&dev);
    spf_plan_options o;
    spf_plan_options_init(&o);
    o.strategy = SPF_STRATEGY_STRUCTURED, o.dtype = dtype, o.b_layout = bl, o.cache = 0;
    spf_plan *plan = NULL;
    spf_plan_info pi = {.size = sizeof pi};
    if (spf_plan_create(a, n, &o, &plan) != SPF_OK || spf_plan_get_info(plan, &pi) != SPF_OK) {
        fprintf(stderr, "the structured plan: %s\n", spf_last_error());
        return 1;
    }
    int best = -1, pick = -1;
    for (int i = 0; i < count; i++) {
        if (results[i].us > 0 && (best < 0 || results[i].us < results[best].us))
            best = i;
        if (strcmp(results[i].name, pi.config) == 0)
            pick = i;
    }
    if (best < 0) {
        fprintf(stderr, "no config ran\n");
        return 1;
    }
    printf("problem %lldx%lld %s N=%lld %s %s: %d configs, best %s %.2f us\n", (long long)g.rows,
           (long long)g.cols, argv[3], (long long)n, spf_dtype_name(dtype),
           bl == SPF_LAYOUT_N_LAST ? "kn" : "nk", count, results[best].name, results[best].us);
    if (pick >= 0 && results[pick].us > 0)
        printf("pick %s: %.2f us in the sweep, %.3f of the best; planned in %.3f s\n", pi.config,
               results[pick].us, results[pick].us / results[best].us, pi.plan_s);
    else
        printf("pick %s (%.2f us at planning) is outside what ran; planned in %.3f s\n",
               pi.config, pi.kernel_us, pi.plan_s);
    spf_plan_free(plan);
    spmm_case_free(&t);
    spf_matrix_free(a);
    return wrong ? 1 : 0;
}
