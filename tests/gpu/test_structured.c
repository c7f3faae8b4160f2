/* The structured kernels (src/strategy/structured/sp_kernel.h) config by
 * config against the CPU reference accumulated in double: the stream
 * kernel's nb (its own for N and the wider ones) × rt ∈ {1, 2} × warps ∈
 * {1, 3, 8, 16}, the tile kernel's three shapes × stages 2 to 4 and, on
 * Hopper, the wgmma kernel's four shapes × stages 2 to 4 and the TMA
 * kernel's three × stages 2, 3 and 4 × A staged or not (2:4 only; B by
 * the copy engine where its rows are 16-byte aligned: K×N at N = 8 and
 * 136, N×K at K = 200, 256 and 1000; the wgmma kernel's fallback
 * otherwise), × fp16 /
 * bf16 × B K×N and N×K × C in both layouts, on 2:4 (37×52: M, K multiples
 * of no tile; a 200×1000 layer), V128:2:8 (300×200: a last block of 44
 * rows; and 260×328, three step pairs), V32:1:16,
 * K = 3, and lone nonzeros at each place of a run with
 * empty rows; each V:2:M matrix also in the 2:4 format (it is 2:4 too).
 * N ∈ {1, 3, 8, 10, 17, 49, 127, 136}: a ragged last column block; B K×N
 * of even N takes the stream kernel's loads of two columns shared by two
 * lanes, odd N the loads of one element; the tile kernel stages rows of 8
 * and 136 (and N×K rows of K = 200, 256, 1000) by cp.async, the others by
 * plain loads. Bias and ReLU cycle.
 *
 * Column vectors (the column-vector kernel's nb × warps ∈ {1, 3, 8, 16},
 * stages cycling): 16 rows with strays on 70×203, 4 rows shuffled
 * (permuted: C through the order), 8 rows at 0.5, K = 3 with empty rows.
 *
 * The launches skip visibly (exit 77) when there is no device.
 * `test_structured --quick` runs a subset (compute-sanitizer in
 * scripts/device-check.sh). */
#include "test_util.h"

#include "core/dtype.h"
#include "core/matrix.h"
#include "strategy/structured/sp_colvec.h"
#include "strategy/structured/sp_kernel.h"

#include <stdint.h>

#ifdef SPF_HAVE_CUDA
#include "sp_cases.h"
#include "spmm_case.h"

static const int ns[] = {1, 3, 8, 10, 17, 49, 127, 136};
static const spf_dtype dtypes[] = {SPF_DTYPE_F16, SPF_DTYPE_BF16};
static const int warp_counts[] = {1, 3, 8, 16};

static uint64_t next_seed = 0x5d000000;
static int launches;
static int hopper; /* the device is compute capability 9.0: the wgmma kernel's configs too */

#define CONFIGS_MAX 160

static void add_config(sp_config *out, int *count, sp_config c)
{
    CHECK_MSG(*count < CONFIGS_MAX, "more than %d configs to check", CONFIGS_MAX);
    if (*count < CONFIGS_MAX)
        out[(*count)++] = c;
}

/* The configs checked at N = n on pattern pat: the stream kernel's at the
 * nb the strategy times and the wider ones × rt × warps, the tile kernel's every shape ×
 * stages 2 to 4, on Hopper the wgmma kernel's every shape × stages 2 to 4
 * and the TMA kernel's (whether or not the strategy would time them at
 * this N); --quick: a few of each. Returns how many (at most CONFIGS_MAX). */
static int configs_to_check(int64_t n, const sp_pattern *pat, int quick, sp_config *out)
{
    int count = 0;
    for (int nb = sp_stream_nb_min(n); pat->vec && nb <= 8; nb *= 2)
        for (size_t wi = 0; wi < sizeof warp_counts / sizeof *warp_counts; wi++) {
            sp_config c = {.kind = SP_COLVEC, .nb = nb, .rt = 1, .warps = warp_counts[wi],
                           .stages = 2 + (int)((wi + nb + n) % 4)};
            if (sp_config_refusal(&c, pat))
                c.stages = 2;
            if (!sp_config_refusal(&c, pat) && !(quick && (wi == 0 || nb != sp_nb_for(n))))
                add_config(out, &count, c);
        }
    for (int nb = sp_stream_nb_min(n); nb <= 8; nb *= 2)
        for (int rt = 1; rt <= 4; rt *= 2)
            for (size_t wi = 0; wi < sizeof warp_counts / sizeof *warp_counts; wi++) {
                /* stages 2 to 5 in turn, so that each shows up at some N */
                const int stages = 2 + (int)((wi + rt + nb + n) % 4);
                sp_config c = {.kind = SP_STREAM, .nb = nb, .rt = rt, .warps = warp_counts[wi],
                               .stages = stages};
                if (sp_config_refusal(&c, pat)) /* a deep ring of a wide block: past the smem */
                    c.stages = 2;
                if (sp_config_refusal(&c, pat) ||
                    (quick && (wi == 0 || wi == 3 || nb != sp_nb_for(n))))
                    continue;
                add_config(out, &count, c);
            }
    for (size_t si = 0; si < SP_TILE_SHAPES; si++)
        for (int stages = 2; stages <= 4; stages++) {
            sp_config c = {.kind = SP_TILE, .bm = sp_tile_shapes[si][0],
                           .bn = sp_tile_shapes[si][1], .stages = stages};
            if (sp_config_refusal(&c, pat) || (quick && (stages != 3 || si % 3 != 0)))
                continue;
            add_config(out, &count, c);
        }
    for (size_t si = 0; hopper && si < SP_WGMMA_SHAPES; si++)
        for (int stages = 2; stages <= 4; stages++) {
            sp_config c = {.kind = SP_WGMMA, .bm = sp_wgmma_shapes[si][0],
                           .bn = sp_wgmma_shapes[si][1], .stages = stages};
            if (sp_config_refusal(&c, pat) || (quick && (stages != 3 || si % 2 != 0)))
                continue;
            add_config(out, &count, c);
        }
    /* the TMA kernel at the fewest stages and at its space's, K whole; K
     * split over 2 and 4 blocks at 3 stages */
    static const int tma_stages[] = {2, 3, 4, 6};
    for (size_t si = 0; hopper && si < SP_TMA_SHAPES; si++)
        for (int staged = 0; staged <= 1; staged++)
            for (size_t ti = 0; ti < sizeof tma_stages / sizeof *tma_stages; ti++)
                for (int split = 0; split <= 4; split += 2) {
                    sp_config c = {.kind = SP_TMA, .bm = sp_tma_shapes[si][0],
                                   .bn = sp_tma_shapes[si][1], .stages = tma_stages[ti],
                                   .a_staged = staged, .split_k = split};
                    if (sp_config_refusal(&c, pat) || (split && ti != 1) ||
                        (quick && ti != 0 && si != 0 && !split))
                        continue;
                    add_config(out, &count, c);
                }
    return count;
}

/* One (matrix, pattern, dtype, B layout): every config, N and C layout. */
static void run_format(const char *label, const spf_matrix *a, const sp_pattern *pat,
                       spf_dtype dtype, spf_layout bl, int quick)
{
    sp_format f;
    CHECK_OK(sp_format_build(a, pat, dtype, 2, &f));
    sp_device dev;
    CHECK_OK(sp_device_upload(&f, &dev));
    double tol = dtype_tolerance(dtype, SPF_MATH_DEFAULT), worst = 0;
    char worst_what[96] = "", pname[32];
    sp_pattern_name(pat, pname, sizeof pname);
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
        sp_config cfgs[CONFIGS_MAX];
        int count = configs_to_check(n, pat, quick, cfgs);
        for (int ci = 0; ci < count; ci++) {
            const sp_config cfg = cfgs[ci];
            char name[32];
            sp_config_name(&cfg, name, sizeof name);
            int blocks = 0;
            CHECK_OK(sp_config_occupancy(&cfg, &dev, &blocks));
            CHECK_MSG(blocks > 0, "%s: %s does not fit an SM", label, name);
            for (int cl = SPF_LAYOUT_N_LAST; cl <= SPF_LAYOUT_N_FIRST; cl++) {
                spmm_operands op = {.n = n, .b_layout = bl, .b = t.db, .c = t.dc,
                                    .bias = bias ? t.dbias : NULL, .relu = relu};
                spmm_case_strides(&t, (spf_layout)cl, &op.b_row, &op.b_col, &op.c_row,
                                  &op.c_col);
                spmm_case_poison(&t);
                CHECK_OK(sp_launch(&dev, &cfg, &op, NULL));
                int past = 1;
                double err = spmm_case_error(&t, (spf_layout)cl, &past);
                char what[96];
                snprintf(what, sizeof what, "%s N=%lld C %s", name, (long long)n,
                         spf_layout_name((spf_layout)cl));
                CHECK_MSG(past, "%s: %s: wrote past the end of C", label, what);
                CHECK_MSG(err <= tol, "%s %s %s B %s: %s (bias %d relu %d): relative "
                          "error %.3g > %g", label, pname, dtype_name(dtype),
                          spf_layout_name(bl), what, bias, relu, err, tol);
                if (!(err <= worst))
                    worst = err, snprintf(worst_what, sizeof worst_what, "%s", what);
                launches++;
            }
        }
        spmm_case_free(&t);
    }
    printf("%s: %s %s B %s: %lld tiles × %lld %s, worst relative error %.3g (%s)\n", label,
           pname, dtype_name(dtype), spf_layout_name(bl), (long long)f.tiles,
           (long long)(pat->vec ? f.steps : f.pairs), pat->vec ? "steps in all" : "step pairs",
           worst, worst_what);
    sp_device_release(&dev);
    sp_format_free(&f);
}

/* a in its detected pattern and, when asked, in 2:4. */
static void run_matrix(const char *label, const spf_matrix *a, int also_24, int quick)
{
    sp_pattern detected, p24 = {.group = 4};
    char why[256];
    CHECK_MSG(sp_pattern_detect(a, &detected, why, sizeof why), "%s: %s", label, why);
    for (size_t d = 0; d < sizeof dtypes / sizeof *dtypes; d++)
        for (int bl = SPF_LAYOUT_N_LAST; bl <= SPF_LAYOUT_N_FIRST; bl++) {
            if (quick && d > 0 && bl == SPF_LAYOUT_N_LAST)
                continue;
            run_format(label, a, &detected, dtypes[d], (spf_layout)bl, quick);
            if (also_24 && detected.v != 0)
                run_format(label, a, &p24, dtypes[d], (spf_layout)bl, quick);
        }
}

static void test_kernels(int quick)
{
    spf_matrix *odd = gen_vnm(37, 52, 1, 2, 4, 31);
    spf_matrix *v8 = gen_vnm(300, 200, 128, 2, 8, 32);
    spf_matrix *v16 = gen_vnm(70, 256, 32, 1, 16, 33);
    spf_matrix *layer = gen_vnm(200, 1000, 1, 2, 4, 34);
    spf_matrix *v8odd = gen_vnm(260, 328, 128, 2, 8, 42); /* 3 step pairs: an odd count */
    spf_matrix *k3 = NULL;
    {   /* K = 3: two of the three columns in each row */
        int64_t rp[41];
        int32_t ci[80];
        for (int r = 0; r <= 40; r++)
            rp[r] = 2 * r;
        for (int r = 0; r < 40; r++)
            ci[2 * r] = r % 3 == 2 ? 1 : 0, ci[2 * r + 1] = r % 3 == 0 ? 1 : 2;
        CHECK_OK(spf_matrix_create_csr(40, 3, 80, rp, ci, NULL, 35, &k3));
    }
    /* lone nonzeros at places 3, 0, 1 and 3 of their runs; rows 0, 3 and
     * 5..19 empty */
    int64_t rp[21] = {0, 0, 1, 2, 2, 4};
    for (int r = 6; r <= 20; r++)
        rp[r] = 4;
    int32_t ci[4] = {3, 4, 9, 11};
    float v[4] = {0.75f, -0.5f, 0.25f, 1.5f};
    spf_matrix *lone = NULL;
    CHECK_OK(spf_matrix_create_csr(20, 70, 4, rp, ci, v, 0, &lone));
    /* column vectors: strays and a last tile of 6 rows; rows shuffled
     * (C stored through the order); K = 3 with empty rows (2:4 too, so its
     * pattern is asked for) */
    spf_matrix *cv16 = gen_colvec(70, 203, 16, 0.8, 36);
    spf_matrix *cv16s = shuffled_with_strays(cv16, 0, 5, 37);
    spf_matrix *cv4 = gen_colvec(100, 300, 4, 0.9, 38);
    spf_matrix *cv4p = shuffled_with_strays(cv4, 1, 0, 39);
    spf_matrix *cv8 = gen_colvec(48, 96, 8, 0.5, 40);
    spf_matrix *cvk3 = sp_case_k3_empty_rows(41);
    run_matrix("70x203 colvec16 with strays", cv16s, 0, quick);
    run_matrix("100x300 colvec4 shuffled", cv4p, 0, quick);
    if (!quick) {
        run_matrix("48x96 colvec8", cv8, 0, quick);
        sp_pattern cvp;
        char why[256];
        CHECK_MSG(sp_colvec_detect(cvk3, &cvp, why, sizeof why), "20x3: %s", why);
        for (size_t d = 0; d < sizeof dtypes / sizeof *dtypes; d++)
            for (int bl = SPF_LAYOUT_N_LAST; bl <= SPF_LAYOUT_N_FIRST; bl++)
                run_format("20x3 colvec, empty rows", cvk3, &cvp, dtypes[d], (spf_layout)bl, 0);
    }
    spf_matrix_free(cv16);
    spf_matrix_free(cv16s);
    spf_matrix_free(cv4);
    spf_matrix_free(cv4p);
    spf_matrix_free(cv8);
    spf_matrix_free(cvk3);
    run_matrix("37x52 2:4", odd, 0, quick);
    run_matrix("300x200 V:2:8", v8, 1, quick);
    run_matrix("200x1000 2:4", layer, 1, quick);
    if (!quick) {
        run_matrix("70x256 V:1:16", v16, 1, quick);
        run_matrix("260x328 V:2:8", v8odd, 0, quick);
        run_matrix("40x3", k3, 1, quick);
        run_matrix("20x70 lone nonzeros", lone, 1, quick);
    }
    printf("%d launches checked\n", launches);
    spf_matrix_free(odd);
    spf_matrix_free(v8);
    spf_matrix_free(v16);
    spf_matrix_free(v8odd);
    spf_matrix_free(layer);
    spf_matrix_free(k3);
    spf_matrix_free(lone);
}
#endif

int main(int argc, char **argv)
{
    spf_device_info info;
    CHECK_OK(spf_device_query(0, &info));
    if (!info.available)
        SKIP("no CUDA device (%s): structured kernel launches not run", info.reason);
#ifdef SPF_HAVE_CUDA
    hopper = info.cc_major == 9;
    test_kernels(argc > 1 && strcmp(argv[1], "--quick") == 0);
#else
    (void)argc, (void)argv;
#endif
    return check_report();
}
