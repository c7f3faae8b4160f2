/* The panel kernels (src/strategy/panel/panel_kernel.h) config by config
 * against the CPU reference accumulated in double: both engines (CUDA
 * cores: nc ∈ {8, 16, 32}; tensor cores: nc ∈ {16, 32, 64}) × warps ×
 * panel widths (one panel and several, a last panel cut short) × rows per
 * block (one row, a few, octets shared by 5 warps, more octets than
 * warps) × fp16 / bf16 × B
 * K×N and N×K × C in both layouts, on odd shapes (M, K, N multiples of no
 * tile; N ∈ {1, 3, 17, 49, 127}: column blocks with a ragged edge), empty
 * rows and empty runs of a panel, a full row longer than the lanes, one
 * nonzero, K = 3, and a 200 × 1000 layer at 90 % sparsity. Bias and ReLU
 * cycle. N not a multiple of 8 takes the kernel's path without 16-byte
 * loads of B.
 *
 * The launches skip visibly (exit 77) when there is no device. `test_panel
 * --quick` runs a subset (compute-sanitizer in scripts/device-check.sh). */
#include "test_util.h"

#include "core/dtype.h"
#include "core/matrix.h"
#include "strategy/panel/panel_kernel.h"

#include <stdint.h>

#ifdef SPF_HAVE_CUDA
#include "spmm_case.h"

static const int ns[] = {1, 3, 8, 17, 49, 127};
static const spf_dtype dtypes[] = {SPF_DTYPE_F16, SPF_DTYPE_BF16};
static const int32_t widths[] = {8, 40, 1024};
static const int rows_per_block[] = {1, 5, 20, 48};

static uint64_t next_seed = 0x7e000000;
static int launches;

/* One (matrix, dtype, width, B layout): every nc that N allows (its own
 * and the wider ones), warps, rows per block, N and C layout. */
static void run_format(const char *label, const spf_matrix *a, spf_dtype dtype, int32_t width,
                       spf_layout bl, int quick)
{
    panel_format f;
    CHECK_OK(panel_format_build(a, dtype, width, 2, &f));
    panel_device dev;
    CHECK_OK(panel_device_upload(&f, &dev));
    double tol = dtype_tolerance(dtype, SPF_MATH_DEFAULT), worst = 0;
    char worst_what[96] = "";
    int variant = 0;
    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
        int64_t n = ns[ni];
        if (quick && n != 3 && n != 49)
            continue;
        int bias = variant & 1, relu = variant >> 1 & 1;
        variant++;
        spmm_case t;
        spmm_case_make(&t, a, dtype, bl, n, bias, relu, NULL, next_seed);
        next_seed += 2;
        for (int mma = 0; mma <= 1; mma++)
        for (int nc = panel_nc_for(mma, n); nc <= (mma ? 64 : 32); nc *= 2)
            for (int warps = 4; warps <= 16; warps *= 4)
                for (size_t ri = 0; ri < sizeof rows_per_block / sizeof *rows_per_block; ri++) {
                    panel_config cfg = {nc, warps, width, rows_per_block[ri], mma};
                    if (panel_config_refusal(&cfg, width))
                        continue;
                    if (quick && (warps != 4 || ri == 0 || (ri == 2 && !mma)))
                        continue;
                    int blocks = 0;
                    CHECK_OK(panel_config_occupancy(&cfg, dtype, bl, &blocks));
                    if (blocks == 0)
                        continue;
                    for (int cl = SPF_LAYOUT_N_LAST; cl <= SPF_LAYOUT_N_FIRST; cl++) {
                        spmm_operands op = {.n = n, .b_layout = bl, .b = t.db, .c = t.dc,
                                            .bias = bias ? t.dbias : NULL, .relu = relu};
                        spmm_case_strides(&t, (spf_layout)cl, &op.b_row, &op.b_col, &op.c_row,
                                          &op.c_col);
                        spmm_case_poison(&t);
                        CHECK_OK(panel_launch(&dev, &cfg, &op, NULL));
                        int past = 1;
                        double err = spmm_case_error(&t, (spf_layout)cl, &past);
                        char name[48], what[96];
                        panel_config_name(&cfg, name, sizeof name);
                        snprintf(what, sizeof what, "%s N=%lld C %s", name, (long long)n,
                                 spf_layout_name((spf_layout)cl));
                        CHECK_MSG(past, "%s: %s: wrote past the end of C", label, what);
                        CHECK_MSG(err <= tol, "%s %s B %s: %s (bias %d relu %d): relative error "
                                  "%.3g > %g", label, dtype_name(dtype), spf_layout_name(bl),
                                  what, bias, relu, err, tol);
                        if (!(err <= worst))
                            worst = err, snprintf(worst_what, sizeof worst_what, "%s", what);
                        launches++;
                    }
                }
        spmm_case_free(&t);
    }
    printf("%s: %s width %d B %s: %d panels, worst relative error %.3g (%s)\n", label,
           dtype_name(dtype), width, spf_layout_name(bl), f.panels, worst, worst_what);
    panel_device_release(&dev);
    panel_format_free(&f);
}

static void run_matrix(const char *label, const spf_matrix *a, int quick)
{
    for (size_t d = 0; d < sizeof dtypes / sizeof *dtypes; d++)
        for (size_t w = 0; w < sizeof widths / sizeof *widths; w++) {
            if (quick && d > 0 && w != 1)
                continue;
            run_format(label, a, dtypes[d], widths[w], SPF_LAYOUT_N_LAST, quick);
            run_format(label, a, dtypes[d], widths[w], SPF_LAYOUT_N_FIRST, quick);
        }
}

static void test_kernels(int quick)
{
    double d1[37], d2[130], d4[200], dk[1000];
    for (int i = 0; i < 37; i++)
        d1[i] = 0.3;
    for (int i = 0; i < 130; i++) /* rows 16-47 and every 5th row empty; row 7 full */
        d2[i] = (i >= 16 && i < 48) || i % 5 == 0 ? 0.0 : i == 7 ? 1.0 : 0.05 + 0.2 * (i % 4);
    for (int i = 0; i < 200; i++)
        d4[i] = 0.1;
    for (int i = 0; i < 1000; i++)
        dk[i] = 0.6;
    spf_matrix *odd = random_csr(37, 53, d1, 11);
    spf_matrix *holes = random_csr(130, 257, d2, 12);
    spf_matrix *layer = random_csr(200, 1000, d4, 16);
    spf_matrix *single = one_nonzero_csr();
    spf_matrix *narrow = random_csr(1000, 3, dk, 14);
    run_matrix("37x53 odd", odd, quick);
    run_matrix("130x257 empty rows, a full row", holes, quick);
    run_matrix("200x1000 at 0.9", layer, quick);
    if (!quick) {
        run_matrix("3x1000 one nonzero", single, quick);
        run_matrix("1000x3 K=3", narrow, quick);
    }
    printf("%d launches checked\n", launches);
    spf_matrix_free(odd);
    spf_matrix_free(holes);
    spf_matrix_free(layer);
    spf_matrix_free(single);
    spf_matrix_free(narrow);
}
#endif

int main(int argc, char **argv)
{
    spf_device_info info;
    CHECK_OK(spf_device_query(0, &info));
    if (!info.available)
        SKIP("no CUDA device (%s): panel kernel launches not run", info.reason);
#ifdef SPF_HAVE_CUDA
    test_kernels(argc > 1 && strcmp(argv[1], "--quick") == 0);
#else
    (void)argc, (void)argv;
#endif
    return check_report();
}
