/* The tensor-core kernels (tc_kernel.h) config by config against the CPU
 * reference accumulated in double: every config (nt × stages × warps ×
 * split × unit or group kernel) × fp16 / bf16 / f32 under TF32 × B K×N (blocked and condensed
 * formats) and N×K (blocked) × C in both layouts, on odd shapes (M, K, N
 * multiples of no tile; N ∈ {1, 3, 17, 49, 127}), empty rows and empty
 * windows, fully dense tiles, one nonzero, K = 3, a power-law graph, and a
 * row map (a reordering: C's rows permuted). Bias and ReLU cycle. C is
 * poisoned with NaN before every launch, and the element past its end
 * must stay poisoned. Units are cut as for a device of 2^20 SMs, so that a
 * split config splits every window of more than 8 tiles.
 *
 * The host parts (config names, refusals, units) run without a GPU; the
 * launches skip visibly (exit 77) when there is no device. `test_tc
 * --quick` runs a subset (compute-sanitizer in scripts/device-check.sh). */
#include "test_util.h"

#include "core/alloc.h"
#include "core/dtype.h"
#include "core/matrix.h"
#include "strategy/tc/tc_kernel.h"

#include <stdint.h>

#ifdef SPF_HAVE_CUDA
#include "spmm_case.h"
#endif

static void test_config_names(void)
{
    tc_config c = {4, 3, 8, 1, 0}, back;
    char name[64];
    tc_config_name(&c, name, sizeof name);
    CHECK(strcmp(name, "nt4_s3_w8_split") == 0);
    CHECK_OK(tc_config_from_name(name, &back));
    CHECK(back.nt == 4 && back.stages == 3 && back.warps == 8 && back.split == 1);
    CHECK_OK(tc_config_from_name("nt1_s2_w4", &back));
    CHECK(back.split == 0);
    CHECK_STATUS(tc_config_from_name("nt3_s2_w4", &back), SPF_ERR_PARSE);
    CHECK_STATUS(tc_config_from_name("nt2_s9_w4", &back), SPF_ERR_PARSE);
    CHECK_STATUS(tc_config_from_name("nt2_s2_w4_splat", &back), SPF_ERR_PARSE);
    CHECK(tc_config_refusal(&c, SPF_DTYPE_F16, SPF_LAYOUT_N_FIRST, TC_FORMAT_CONDENSED) != NULL);
    CHECK(tc_config_refusal(&c, SPF_DTYPE_F16, SPF_LAYOUT_N_FIRST, TC_FORMAT_BLOCKED) == NULL);
    tc_config g = {2, 2, 4, 1, 1};
    tc_config_name(&g, name, sizeof name);
    CHECK(strcmp(name, "nt2_s2_w4_split_group") == 0);
    CHECK_OK(tc_config_from_name(name, &back));
    CHECK(back.group == 1 && back.split == 1);
    CHECK_OK(tc_config_from_name("nt8_s4_w8_group", &back));
    CHECK(back.group == 1 && back.split == 0);
    CHECK(tc_config_refusal(&g, SPF_DTYPE_F16, SPF_LAYOUT_N_LAST, TC_FORMAT_CONDENSED) != NULL);
}

/* Units cover every tile once, windows in parts of equal size, parts
 * counted right, heavier units first when split. */
static void test_units(void)
{
    double density[70];
    for (int i = 0; i < 70; i++)
        density[i] = i < 16 ? 0.9 : i < 32 ? 0.0 : 0.1;
    spf_matrix *a = random_csr(70, 700, density, 5);
    tc_format f;
    CHECK_OK(tc_format_build(a, SPF_DTYPE_F16, TC_FORMAT_BLOCKED, 1, &f));
    for (int split = 0; split < 2; split++) {
        tc_unit *u = NULL;
        int32_t count = 0, max_parts = 0;
        CHECK_OK(tc_units_build(&f, split, 1 << 20, 1, &u, &count, &max_parts));
        int64_t *seen = calloc((size_t)f.tiles + 1, sizeof *seen);
        int32_t *parts = calloc((size_t)f.windows, sizeof *parts);
        for (int32_t i = 0; i < count; i++) {
            CHECK(u[i].tile_begin >= f.window_tile[u[i].window] &&
                  u[i].tile_end <= f.window_tile[u[i].window + 1] &&
                  u[i].tile_begin <= u[i].tile_end);
            for (int32_t t = u[i].tile_begin; t < u[i].tile_end; t++)
                seen[t]++;
            parts[u[i].window]++;
            if (split && i > 0)
                CHECK(u[i].tile_end - u[i].tile_begin <= u[i - 1].tile_end - u[i - 1].tile_begin);
        }
        for (int64_t t = 0; t < f.tiles; t++)
            CHECK_MSG(seen[t] == 1, "split %d: tile %lld covered %lld times", split, (long long)t,
                      (long long)seen[t]);
        for (int32_t i = 0; i < count; i++)
            CHECK(parts[u[i].window] == u[i].parts);
        for (int64_t w = 0; w < f.windows; w++) /* empty windows get a unit too */
            CHECK(parts[w] >= 1);
        CHECK(split ? max_parts > 1 : max_parts == 1);
        free(seen);
        free(parts);
        mem_free(u);
    }
    tc_format_free(&f);
    spf_matrix_free(a);
}

#ifdef SPF_HAVE_CUDA

static const int ns[] = {1, 3, 17, 49, 127};

static const struct {
    spf_dtype dtype;
    spf_math math;
} kinds[] = {{SPF_DTYPE_F16, SPF_MATH_DEFAULT},
             {SPF_DTYPE_BF16, SPF_MATH_DEFAULT},
             {SPF_DTYPE_F32, SPF_MATH_TF32}};

static uint64_t next_seed = 0x7c000000;
static int launches;

/* One (matrix, kind, B layout, format mode, row map): every config, N and
 * C layout. */
static void run_format(const char *label, const spf_matrix *a, int kind, spf_layout bl,
                       tc_format_mode mode, const int32_t *row_map, int quick)
{
    spf_dtype dtype = kinds[kind].dtype;
    spf_math math = kinds[kind].math;
    tc_format f;
    CHECK_OK(tc_format_build(a, dtype, mode, 2, &f));
    if (math == SPF_MATH_TF32)
        tc_format_round_tf32(&f);
    tc_device dev;
    CHECK_OK(tc_device_upload(&f, row_map, &dev));
    double tol = dtype_tolerance(dtype, math), worst = 0;
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
        for (int nt = 1; nt <= 8; nt *= 2)
            for (int stages = 2; stages <= TC_MAX_STAGES; stages++)
                for (int warps = 4; warps <= 8; warps *= 2)
                    for (int kernel = 0; kernel < 4; kernel++) {
                        tc_config cfg = {nt, stages, warps, kernel & 1, kernel >> 1};
                        if (quick && (stages != 3 || warps != 4))
                            continue;
                        if (tc_config_refusal(&cfg, dtype, bl, f.mode))
                            continue;
                        int blocks = 0;
                        CHECK_OK(tc_config_occupancy(&cfg, dtype, bl, &blocks));
                        if (blocks == 0)
                            continue;
                        tc_schedule sched;
                        CHECK_OK(tc_schedule_make(&f, &cfg, n, 1 << 20, 1, &sched));
                        for (int cl = SPF_LAYOUT_N_LAST; cl <= SPF_LAYOUT_N_FIRST; cl++) {
                            spmm_operands op = {.n = n, .b_layout = bl, .b = t.db, .c = t.dc,
                                              .bias = bias ? t.dbias : NULL, .relu = relu};
                            spmm_case_strides(&t, (spf_layout)cl, &op.b_row, &op.b_col, &op.c_row,
                                              &op.c_col);
                            spmm_case_poison(&t);
                            CHECK_OK(tc_launch(&dev, &sched, &cfg, &op, NULL));
                            int past = 1;
                            double err = spmm_case_error(&t, (spf_layout)cl, &past);
                            char name[32], what[96];
                            tc_config_name(&cfg, name, sizeof name);
                            snprintf(what, sizeof what, "%s N=%lld C %s", name, (long long)n,
                                     spf_layout_name((spf_layout)cl));
                            CHECK_MSG(past, "%s: %s: wrote past the end of C", label, what);
                            CHECK_MSG(err <= tol, "%s %s B %s %s: %s (bias %d relu %d, %d parts "
                                      "at most): relative error %.3g > %g",
                                      label, dtype_name(dtype), spf_layout_name(bl),
                                      tc_format_mode_name(f.mode), what, bias, relu,
                                      sched.max_parts, err, tol);
                            if (!(err <= worst))
                                worst = err, snprintf(worst_what, sizeof worst_what, "%s", what);
                            launches++;
                        }
                        tc_schedule_release(&sched);
                    }
        spmm_case_free(&t);
    }
    printf("%s: %s B %s %s%s: %lld tiles, worst relative error %.3g (%s)\n", label,
           dtype_name(dtype), spf_layout_name(bl), tc_format_mode_name(f.mode),
           row_map ? " row map" : "", (long long)f.tiles, worst, worst_what);
    tc_device_release(&dev);
    tc_format_free(&f);
}

static void run_matrix(const char *label, const spf_matrix *a, int quick)
{
    for (int kind = 0; kind < 3; kind++) {
        run_format(label, a, kind, SPF_LAYOUT_N_LAST, TC_FORMAT_BLOCKED, NULL, quick);
        run_format(label, a, kind, SPF_LAYOUT_N_LAST, TC_FORMAT_CONDENSED, NULL, quick);
        run_format(label, a, kind, SPF_LAYOUT_N_FIRST, TC_FORMAT_BLOCKED, NULL, quick);
    }
}

static void test_kernels(int quick)
{
    double d1[37], d2[130], d3[48];
    for (int i = 0; i < 37; i++)
        d1[i] = 0.3;
    for (int i = 0; i < 130; i++) /* rows 16-47 (two windows) and every 5th row empty */
        d2[i] = (i >= 16 && i < 48) || i % 5 == 0 ? 0.0 : 0.05 + 0.2 * (i % 4);
    for (int i = 0; i < 48; i++)
        d3[i] = 1.0;
    spf_matrix *odd = random_csr(37, 53, d1, 11);
    spf_matrix *holes = random_csr(130, 257, d2, 12);
    spf_matrix *full = random_csr(48, 64, d3, 13);
    spf_matrix *single = one_nonzero_csr();
    double dk[1000];
    for (int i = 0; i < 1000; i++)
        dk[i] = 0.6;
    spf_matrix *narrow = random_csr(1000, 3, dk, 14);
    spf_matrix *graph = gen_matrix(SPF_GEN_RMAT, 600, 600, 0.99, 15);
    run_matrix("37x53 odd", odd, quick);
    run_matrix("130x257 empty rows and windows", holes, quick);
    if (!quick) {
        run_matrix("48x64 dense tiles", full, quick);
        run_matrix("3x1000 one nonzero", single, quick);
        run_matrix("1000x3 K=3", narrow, quick);
        run_matrix("600x600 power-law graph", graph, quick);
    }
    /* a row map: C's rows in reverse order */
    int64_t m = spf_matrix_rows(holes);
    int32_t *map = malloc((size_t)m * sizeof *map);
    for (int64_t i = 0; i < m; i++)
        map[i] = (int32_t)(m - 1 - i);
    for (int kind = 0; kind < 3; kind++)
        run_format("130x257 reversed rows", holes, kind, SPF_LAYOUT_N_LAST, TC_FORMAT_CONDENSED,
                   map, quick);
    free(map);
    printf("%d launches checked\n", launches);
    spf_matrix_free(odd);
    spf_matrix_free(holes);
    spf_matrix_free(full);
    spf_matrix_free(single);
    spf_matrix_free(narrow);
    spf_matrix_free(graph);
}
#endif

int main(int argc, char **argv)
{
    test_config_names();
    test_units();
    spf_device_info info;
    CHECK_OK(spf_device_query(0, &info));
    if (!info.available) {
        if (check_failed)
            return check_report();
        check_report();
        SKIP("no CUDA device (%s): tc kernel launches not run", info.reason);
    }
#ifdef SPF_HAVE_CUDA
    test_kernels(argc > 1 && strcmp(argv[1], "--quick") == 0);
#else
    (void)argc, (void)argv;
#endif
    return check_report();
}
