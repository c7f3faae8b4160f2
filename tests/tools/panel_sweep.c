/* Every configuration of the panel strategy's kernels on one problem, each
 * checked against the double reference and timed, and where the
 * strategy's own pick stands among them (issue 11: the pick within 3 % of
 * the exhaustive best of the template space).
 *
 *   spf_panel_sweep M K SPARSITY N [f16|bf16] [SEED] [ONLY]
 *
 * A is uniform random (spforge gen's UNIFORM) M × K at SPARSITY, B K×N.
 * The space: panel widths {512, 1024, 2048, 4096} × both engines (each
 * with its column block for N) × warps {4, 8, 16} × rows per block {a
 * quarter, half, one and two waves' worth} (whole octets on tensor cores).
 * One line a config (name, µs, relative error), then the strategy's pick
 * (spf_plan_create with the panel strategy), its time in the sweep and its
 * ratio to the best. ONLY: time only the configs whose name holds it (to
 * profile one). Exit 1 when a config's result is wrong. Needs a device
 * (exit 77 without one). */
#include "gpu/spmm_case.h"

#include "gpu/timing.h"
#include "strategy/panel/panel_kernel.h"

#include <stdio.h>

typedef struct call {
    const panel_device *dev;
    const panel_config *config;
    spmm_operands op;
} call;

static spf_status launch(void *ctx, void *stream)
{
    const call *c = ctx;
    return panel_launch(c->dev, c->config, &c->op, stream);
}

enum { MAX_RESULTS = 512 };

typedef struct result {
    char name[48];
    double us;
} result;

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: %s M K SPARSITY N [f16|bf16] [SEED] [ONLY]\n", argv[0]);
        return 2;
    }
    spf_device_info info;
    if (spf_device_query(0, &info) != SPF_OK || !info.available) {
        printf("SKIP: no CUDA device\n");
        return 77;
    }
    spf_gen_options g;
    spf_gen_options_init(&g);
    g.rows = atoll(argv[1]), g.cols = atoll(argv[2]), g.sparsity = atof(argv[3]);
    g.seed = argc > 6 ? strtoull(argv[6], NULL, 10) : 3;
    int64_t n = atoll(argv[4]);
    spf_dtype dtype = SPF_DTYPE_F16;
    if (argc > 5 && spf_dtype_from_name(argv[5], &dtype) != SPF_OK) {
        fprintf(stderr, "%s: dtype \"%s\": expected f16 or bf16\n", argv[0], argv[5]);
        return 2;
    }
    spf_matrix *a = NULL;
    if (g.rows < 1 || g.cols < 1 || n < 1 || spf_matrix_generate(&g, &a) != SPF_OK) {
        fprintf(stderr, "%s: cannot make the problem: %s\n", argv[0], spf_last_error());
        return 2;
    }
    spmm_case t;
    spmm_case_make(&t, a, dtype, SPF_LAYOUT_N_LAST, n, 0, 0, NULL, 0x5eed);
    double tol = dtype_tolerance(dtype, SPF_MATH_DEFAULT);
    static result results[MAX_RESULTS];
    int count = 0, wrong = 0;
    const int widths[] = {512, 1024, 2048, 4096}, warps[] = {4, 8, 16}, quarters[] = {1, 2, 4, 8};
    for (size_t wi = 0; wi < sizeof widths / sizeof *widths; wi++) {
        int width = widths[wi];
        if (width > 8 && (g.cols + 7) / 8 * 8 <= width / 2)
            continue; /* the same single panel as a narrower width */
        panel_format f;
        panel_device dev;
        if (panel_format_build(a, dtype, width, 0, &f) != SPF_OK ||
            panel_device_upload(&f, &dev) != SPF_OK) {
            fprintf(stderr, "width %d: %s\n", width, spf_last_error());
            return 1;
        }
        panel_format_free(&f);
        for (int mma = 0; mma <= 1; mma++)
            for (size_t ki = 0; ki < sizeof warps / sizeof *warps; ki++) {
                panel_config c = {panel_nc_for(mma, n), warps[ki], width, 64, mma};
                int blocks = 0;
                if (panel_config_occupancy(&c, dtype, SPF_LAYOUT_N_LAST, &blocks) != SPF_OK ||
                    blocks == 0)
                    continue;
                int wave = panel_rows_for(g.rows, n, c.nc, info.sm_count, blocks);
                for (size_t qi = 0; qi < sizeof quarters / sizeof *quarters; qi++) {
                    c.rows = wave * quarters[qi] / 4 > 0 ? wave * quarters[qi] / 4 : 1;
                    if (mma)
                        c.rows = (c.rows + 7) / 8 * 8;
                    if (c.rows > PANEL_MAX_ROWS ||
                        panel_config_occupancy(&c, dtype, SPF_LAYOUT_N_LAST, &blocks) != SPF_OK ||
                        blocks == 0 || count == MAX_RESULTS)
                        continue;
                    result *out = &results[count];
                    panel_config_name(&c, out->name, sizeof out->name);
                    if (argc > 7 && !strstr(out->name, argv[7]))
                        continue;
                    count++;
                    call cl = {&dev, &c, {.n = n, .b_layout = SPF_LAYOUT_N_LAST, .b = t.db,
                                          .c = t.dc}};
                    spmm_case_strides(&t, SPF_LAYOUT_N_LAST, &cl.op.b_row, &cl.op.b_col,
                                      &cl.op.c_row, &cl.op.c_col);
                    spmm_case_poison(&t);
                    int past = 1;
                    double err = launch(&cl, NULL) == SPF_OK
                                     ? spmm_case_error(&t, SPF_LAYOUT_N_LAST, &past)
                                     : 1.0;
                    timing_result r = {0};
                    if (timing_measure(launch, &cl, NULL, NULL, &r) != SPF_OK)
                        r.median_us = 0;
                    out->us = r.median_us;
                    int ok = err <= tol && past && r.median_us > 0;
                    wrong += !ok;
                    printf("%-26s %9.2f us  error %.2e%s\n", out->name, out->us, err,
                           ok ? "" : "  WRONG");
                }
            }
        panel_device_release(&dev);
    }
    spf_plan_options o;
    spf_plan_options_init(&o);
    o.strategy = SPF_STRATEGY_PANEL, o.dtype = dtype, o.cache = 0;
    spf_plan *plan = NULL;
    spf_plan_info pi = {.size = sizeof pi};
    if (spf_plan_create(a, n, &o, &plan) != SPF_OK || spf_plan_get_info(plan, &pi) != SPF_OK) {
        fprintf(stderr, "the panel plan: %s\n", spf_last_error());
        return 1;
    }
    int best = 0, pick = -1;
    for (int i = 0; i < count; i++) {
        if (results[i].us > 0 && (results[best].us <= 0 || results[i].us < results[best].us))
            best = i;
        if (strcmp(results[i].name, pi.config) == 0)
            pick = i;
    }
    printf("problem %lldx%lld s%.2f N=%lld %s: %d configs, best %s %.2f us\n", (long long)g.rows,
           (long long)g.cols, g.sparsity, (long long)n, spf_dtype_name(dtype), count,
           results[best].name, results[best].us);
    if (pick >= 0)
        printf("pick %s: %.2f us in the sweep, %.3f of the best; planned in %.3f s\n", pi.config,
               results[pick].us, results[pick].us / results[best].us, pi.plan_s);
    else
        printf("pick %s (%.2f us at planning) is outside the sweep; planned in %.3f s\n",
               pi.config, pi.kernel_us, pi.plan_s);
    spf_plan_free(plan);
    spmm_case_free(&t);
    spf_matrix_free(a);
    return wrong ? 1 : 0;
}
