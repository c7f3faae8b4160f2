/* Every dense configuration of the warpgroup conv kernel (conv/conv_wg.h)
 * on one convolution, each checked against the double reference and timed
 * in CUDA graphs (the GPU's time, as bench_conv.py's graph columns), in
 * one process: the positions a block (32 to 256) × the weights staged
 * (two stages, one, and the chunks split over a cluster of 2, 4 or 8) or
 * resident, so that choices AUTO makes between them can be compared on
 * the same device and clocks (bench/results/conv/).
 *
 *   spf_conv_wg_sweep N C H W K R S STRIDE PAD [ONLY]
 *
 * NHWC, f16, random weights at density 0.4 (conv_case.h), bias and ReLU.
 * One line a config: its name, the grid, shared memory, µs a launch in
 * graphs, the relative error. ONLY: only the configs whose name holds it.
 * Exit 1 when a config's result is wrong, 77 without a device of compute
 * capability 9.0. */
#include "gpu/conv_kernel_test.h"

#include "conv/conv_wg.h"
#include "gpu/timing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct call {
    const conv_wg *x;
    const conv_io *io;
} call;

static spf_status launch(void *ctx, void *stream)
{
    const call *c = ctx;
    return conv_wg_launch(c->x, c->io->input, c->io->out, c->io->bias, c->io->residual, stream);
}

/* geom's config on t: checked, timed, one line; 0 where it is wrong */
static int sweep_one(conv_case *t, const spf_matrix *tap_major, const conv_wg_geom *geom,
                     const char *only)
{
    char name[64];
    conv_wg_name(geom, SPF_DTYPE_F16, name, sizeof name);
    if (only && !strstr(name, only))
        return 1;
    conv_wg *x = NULL;
    if (conv_wg_create(tap_major, geom, SPF_DTYPE_F16, 1, &x) != SPF_OK) {
        printf("%-34s refused: %s\n", name, spf_last_error());
        return 1;
    }
    conv_io io;
    conv_io_stage(t, SPF_DTYPE_F16, 1, 0, &io);
    conv_io_poison(&io);
    call c = {x, &io};
    const spf_status launched = launch(&c, NULL);
    conv_io_read(&io, SPF_DTYPE_F16, t);
    const double err = launched == SPF_OK ? spf_relative_error(t->out, t->want, t->out_count) : 1.0;
    timing_options o;
    timing_options_init(&o);
    o.graph = 1;
    timing_result r = {0};
    if (timing_measure(launch, &c, NULL, &o, &r) != SPF_OK)
        r.median_us = 0;
    const int ok = err <= dtype_tolerance(SPF_DTYPE_F16, SPF_MATH_DEFAULT) && r.median_us > 0;
    printf("%-34s grid %4d x %2d x %d  smem %6zu  %7.2f us  error %.2e%s\n", name, geom->tiles,
           geom->k / CONV_WG_BM, geom->splits, conv_wg_smem(geom), r.median_us, err,
           ok ? "" : "  WRONG");
    fflush(stdout);
    conv_io_free(&io);
    conv_wg_free(x);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc < 10) {
        fprintf(stderr, "usage: %s N C H W K R S STRIDE PAD [ONLY]\n", argv[0]);
        return 2;
    }
    const conv_dims d = {"sweep",       atoll(argv[1]), atoll(argv[2]), atoll(argv[3]),
                         atoll(argv[4]), atoll(argv[5]), atoll(argv[6]), atoll(argv[7]),
                         atoll(argv[8]), atoll(argv[9])};
    const char *only = argc > 10 ? argv[10] : NULL;
    for (int i = 1; i < 10; i++)
        if (atoll(argv[i]) < (i == 9 ? 0 : 1)) {
            fprintf(stderr, "%s: argument %d (\"%s\"): expected a positive number%s\n",
                    argv[0], i, argv[i], i == 9 ? " or 0" : "");
            return 2;
        }
    spf_device_info info;
    if (spf_device_query(0, &info) != SPF_OK || !info.available || info.cc_major < 9) {
        printf("SKIP: no device of compute capability 9.0 (the warpgroup kernel)\n");
        return 77;
    }
    conv_case t;
    conv_case_make(&t, &d, SPF_CONV_NHWC, 1, 0, 1, SPF_DTYPE_F16, 7);
    spf_matrix *tap_major = NULL;
    if (conv_weights_tap_major(t.w, (int32_t)d.c, (int32_t)(d.r * d.s), &tap_major) != SPF_OK) {
        fprintf(stderr, "%s: the weights: %s\n", argv[0], spf_last_error());
        return 1;
    }
    const conv_gather g = conv_dims_gather(&d);
    int configs = 0, wrong = 0;
    for (int b = 0; b < CONV_WG_WIDTHS; b++)
        for (int weights = CONV_WG_STAGED; weights <= CONV_WG_RESIDENT; weights++) {
            conv_wg_geom geom, split, one;
            char reason[200];
            if (!conv_wg_geometry(&g, (int32_t)d.k, conv_wg_widths[b], (conv_wg_weights)weights,
                                  &geom, reason, sizeof reason)) {
                printf("bn%d %s: %s\n", conv_wg_widths[b],
                       weights == CONV_WG_STAGED ? "staged" : "resident", reason);
                continue;
            }
            for (int z = 0; z <= CONV_WG_SPLIT_CHOICES; z++) {
                if (z > 0 && !conv_wg_split(&geom, conv_wg_splits[z - 1], &split))
                    continue;
                const conv_wg_geom *at = z > 0 ? &split : &geom;
                configs++, wrong += !sweep_one(&t, tap_major, at, only);
                if (conv_wg_one_stage(at, &one))
                    configs++, wrong += !sweep_one(&t, tap_major, &one, only);
            }
        }
    spf_matrix_free(tap_major);
    conv_case_free(&t);
    printf("%d configs, %d wrong\n", configs, wrong);
    return wrong ? 1 : 0;
}
