/* The tcfrag kernel (src/strategy/tcfrag/frag_kernel.h) config by config
 * against the CPU reference accumulated in double: every config (group ×
 * nt × warps × stages) × fp16 / bf16 × B K×N and N×K × C in both layouts,
 * with K whole and K cut into parts (the workspace and its last-arriver
 * epilogue), on odd shapes (M, K, N multiples of no tile; N ∈ {1, 3, 17,
 * 49, 127}), empty rows and windows, fully dense tiles, one nonzero, K = 3,
 * a 200 × 1000 layer at 70 % sparsity (many chunks, so K parts), and a
 * row map (C's rows permuted).
 * Bias and ReLU cycle. B's rows of odd pitch take the kernel's path
 * without 16-byte copies.
 *
 * The host parts (config names, refusals, parts) run without a GPU; the
 * launches skip visibly (exit 77) when there is no device. `test_tcfrag
 * --quick` runs a subset (compute-sanitizer in scripts/device-check.sh). */
#include "test_util.h"

#include "core/dtype.h"
#include "core/matrix.h"
#include "strategy/tcfrag/frag_kernel.h"

#include <stdint.h>

#ifdef SPF_HAVE_CUDA
#include "spmm_case.h"
#endif

static void test_config_names(void)
{
    frag_config c = {2, 4, 8, 3}, back;
    char name[64];
    frag_config_name(&c, name, sizeof name);
    CHECK(strcmp(name, "g2_nt4_w8_s3") == 0);
    CHECK_OK(frag_config_from_name(name, &back));
    CHECK(back.group == 2 && back.nt == 4 && back.warps == 8 && back.stages == 3);
    CHECK_STATUS(frag_config_from_name("g3_nt4_w8_s3", &back), SPF_ERR_PARSE);
    CHECK_STATUS(frag_config_from_name("g4_nt8_w4_s3", &back), SPF_ERR_PARSE); /* 32 accumulators */
    CHECK_STATUS(frag_config_from_name("g2_nt4_w8_s3x", &back), SPF_ERR_PARSE);
    CHECK_STATUS(frag_config_from_name("g2_nt4_w6_s3", &back), SPF_ERR_PARSE);
    CHECK(frag_config_refusal(&c, 1) != NULL); /* a format of another group */
    CHECK(frag_config_refusal(&c, 2) == NULL);
}

/* The cut of K fills the device about once, never more parts than chunks. */
static void test_parts(void)
{
    frag_config c = {2, 2, 4, 3};
    /* 128 groups → 32 row blocks; one wave of 132 SMs × 4 blocks → 16 parts */
    CHECK(frag_parts(128, 32, 16, &c, 132, 4) == 16);
    CHECK(frag_parts(128, 8, 16, &c, 132, 4) == 8); /* capped at the chunks */
    CHECK(frag_parts(128, 1, 16, &c, 132, 4) == 1);
    CHECK(frag_parts(4096, 32, 16, &c, 132, 4) == 1); /* enough row blocks already */
    CHECK(frag_parts(128, 32, 1024, &c, 132, 4) == 1); /* 64 column blocks */
    CHECK(frag_parts(0, 32, 16, &c, 132, 4) == 1);
}

#ifdef SPF_HAVE_CUDA

static const int ns[] = {1, 3, 17, 49, 127};
static const spf_dtype dtypes[] = {SPF_DTYPE_F16, SPF_DTYPE_BF16};
static const int groups[] = {1, 2, 4};

static uint64_t next_seed = 0x7f000000;
static int launches;

/* One (matrix, dtype, group, B layout, row map): every config, N, C layout
 * and cut of K. */
static void run_format(const char *label, const spf_matrix *a, spf_dtype dtype, int group,
                       spf_layout bl, const int32_t *row_map, int quick)
{
    frag_format f;
    CHECK_OK(frag_format_build(a, dtype, group, 2, &f));
    frag_device dev;
    CHECK_OK(frag_device_upload(&f, row_map, &dev));
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
        spmm_case_make(&t, a, dtype, bl, n, bias, relu, row_map, next_seed);
        next_seed += 2;
        for (int nt = 2; nt <= 8; nt *= 2)
            for (int warps = 4; warps <= 8; warps *= 2)
                for (int stages = 2; stages <= 3; stages++)
                    for (int cut = 0; cut < 2; cut++) {
                        frag_config cfg = {group, nt, warps, stages};
                        if (frag_config_refusal(&cfg, group))
                            continue;
                        if (quick && (warps != 4 || stages != 3))
                            continue;
                        int blocks = 0, other = 0;
                        CHECK_OK(frag_config_occupancy(&cfg, dtype, bl, &blocks));
                        if (blocks == 0)
                            continue;
                        /* another plan of the same kernel with fewer stages (less
                         * shared memory) asks for its occupancy after this one's:
                         * this one must still launch (the kernel's shared-memory
                         * limit is shared; gpu/smem_limit.cuh) */
                        frag_config fewer = {group, nt, warps, 2};
                        CHECK_OK(frag_config_occupancy(&fewer, dtype, bl, &other));
                        frag_schedule sched;
                        /* cut: as for a device of 2^20 SMs, so K is cut into every chunk */
                        CHECK_OK(frag_schedule_make(&dev, &cfg, n, cut ? 1 << 20 : 1, 1, &sched));
                        for (int cl = SPF_LAYOUT_N_LAST; cl <= SPF_LAYOUT_N_FIRST; cl++) {
                            spmm_operands op = {.n = n, .b_layout = bl, .b = t.db, .c = t.dc,
                                                .bias = bias ? t.dbias : NULL, .relu = relu};
                            spmm_case_strides(&t, (spf_layout)cl, &op.b_row, &op.b_col, &op.c_row,
                                              &op.c_col);
                            spmm_case_poison(&t);
                            CHECK_OK(frag_launch(&dev, &sched, &cfg, &op, NULL));
                            int past = 1;
                            double err = spmm_case_error(&t, (spf_layout)cl, &past);
                            char name[32], what[96];
                            frag_config_name(&cfg, name, sizeof name);
                            snprintf(what, sizeof what, "%s N=%lld C %s, %d K parts", name,
                                     (long long)n, spf_layout_name((spf_layout)cl), sched.ksplit);
                            CHECK_MSG(past, "%s: %s: wrote past the end of C", label, what);
                            CHECK_MSG(err <= tol, "%s %s B %s: %s (bias %d relu %d): relative "
                                      "error %.3g > %g", label, dtype_name(dtype),
                                      spf_layout_name(bl), what, bias, relu, err, tol);
                            if (!(err <= worst))
                                worst = err, snprintf(worst_what, sizeof worst_what, "%s", what);
                            launches++;
                        }
                        frag_schedule_release(&sched);
                    }
        spmm_case_free(&t);
    }
    printf("%s: %s group %d B %s%s: %d chunks, worst relative error %.3g (%s)\n", label,
           dtype_name(dtype), group, spf_layout_name(bl), row_map ? " row map" : "", f.chunks,
           worst, worst_what);
    frag_device_release(&dev);
    frag_format_free(&f);
}

static void run_matrix(const char *label, const spf_matrix *a, int quick)
{
    for (size_t d = 0; d < sizeof dtypes / sizeof *dtypes; d++)
        for (size_t g = 0; g < sizeof groups / sizeof *groups; g++) {
            if (quick && d > 0 && groups[g] != 2)
                continue;
            run_format(label, a, dtypes[d], groups[g], SPF_LAYOUT_N_LAST, NULL, quick);
            run_format(label, a, dtypes[d], groups[g], SPF_LAYOUT_N_FIRST, NULL, quick);
        }
}

static void test_kernels(int quick)
{
    double d1[37], d2[130], d3[48], d4[200];
    for (int i = 0; i < 37; i++)
        d1[i] = 0.3;
    for (int i = 0; i < 130; i++) /* rows 16-47 (two windows) and every 5th row empty */
        d2[i] = (i >= 16 && i < 48) || i % 5 == 0 ? 0.0 : 0.05 + 0.2 * (i % 4);
    for (int i = 0; i < 48; i++)
        d3[i] = 1.0;
    for (int i = 0; i < 200; i++)
        d4[i] = 0.3;
    spf_matrix *odd = random_csr(37, 53, d1, 11);
    spf_matrix *holes = random_csr(130, 257, d2, 12);
    spf_matrix *full = random_csr(48, 64, d3, 13);
    spf_matrix *layer = random_csr(200, 1000, d4, 16); /* many chunks: K parts */
    spf_matrix *single = one_nonzero_csr();
    double dk[1000];
    for (int i = 0; i < 1000; i++)
        dk[i] = 0.6;
    spf_matrix *narrow = random_csr(1000, 3, dk, 14);
    run_matrix("37x53 odd", odd, quick);
    run_matrix("130x257 empty rows and windows", holes, quick);
    run_matrix("200x1000 at 0.7", layer, quick);
    if (!quick) {
        run_matrix("48x64 dense tiles", full, quick);
        run_matrix("3x1000 one nonzero", single, quick);
        run_matrix("1000x3 K=3", narrow, quick);
    }
    /* a row map: C's rows in reverse order */
    int64_t m = spf_matrix_rows(holes);
    int32_t *map = malloc((size_t)m * sizeof *map);
    for (int64_t i = 0; i < m; i++)
        map[i] = (int32_t)(m - 1 - i);
    run_format("130x257 reversed rows", holes, SPF_DTYPE_F16, 2, SPF_LAYOUT_N_LAST, map, quick);
    free(map);
    printf("%d launches checked\n", launches);
    spf_matrix_free(odd);
    spf_matrix_free(holes);
    spf_matrix_free(full);
    spf_matrix_free(layer);
    spf_matrix_free(single);
    spf_matrix_free(narrow);
}
#endif

int main(int argc, char **argv)
{
    test_config_names();
    test_parts();
    spf_device_info info;
    CHECK_OK(spf_device_query(0, &info));
    if (!info.available) {
        if (check_failed)
            return check_report();
        check_report();
        SKIP("no CUDA device (%s): tcfrag kernel launches not run", info.reason);
    }
#ifdef SPF_HAVE_CUDA
    test_kernels(argc > 1 && strcmp(argv[1], "--quick") == 0);
#else
    (void)argc, (void)argv;
#endif
    return check_report();
}
