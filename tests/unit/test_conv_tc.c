/* The tensor-core conv kernel's host side (conv/conv_tc.h) without a GPU:
 * its arithmetic replayed on the CPU block by block with the geometry
 * functions the kernel itself calls (the B slice gathered through the
 * places and taps, 8 channels a run; the A tile expanded from the block's
 * entries, each of which must fall in its thread's warp's units, and
 * each padding entry into its thread's own slot; the slices' partial sums
 * added; the epilogue's bias, residual
 * and ReLU), against the conv reference, for every shape of
 * conv_tc_case.h and every config a test runs, in f16 and bf16. Every
 * gathered run is also checked element by element against the explicit
 * im2col's index (conv_gather_from). With B by the copy engine, the
 * slice is laid out as the kernel reads it (conv_tc_swizzled, checked
 * against the 128-byte swizzle), and the copy engine's walk through the
 * im2col box (conv_tc_box's bounds, PTX ISA "Im2col mode") must visit
 * each block's positions in order. Then the configs listed for ResNet-50
 * shapes, the shared-memory budget, and the refusals (NCHW, C not a
 * multiple of 8, an input past 32-bit offsets, f32; C not a multiple of
 * 64 for the copy engine). */
#include "conv_tc_case.h"

#include "core/half.h"

#include <math.h>

static int64_t runs_checked, runs_wrong, pads, pads_wrong, owners_wrong, walks_wrong,
    swizzles_wrong;

/* The copy engine's walk of block n0's box: from position n0's window
 * corner, bn pixels `stride` apart along W, wrapping to the box's left
 * edge and the next row at its right, to the next image past its bottom;
 * each pixel must be the corner of position n0 + i (where that is one). */
static void check_walk(const conv_tc_geom *g, int32_t n0)
{
    int32_t lower[2], upper[2], corner, y, x;
    conv_tc_box(g, lower, upper);
    conv_tc_place(g, n0, &corner, &y, &x);
    int64_t image = n0 / ((int64_t)g->p * g->q);
    for (int32_t i = 0; i < g->bn && n0 + i < g->cols; i++) {
        int32_t want_corner, want_y, want_x;
        conv_tc_place(g, n0 + i, &want_corner, &want_y, &want_x);
        walks_wrong += want_y != y || want_x != x ||
                       (n0 + i) / ((int64_t)g->p * g->q) != image;
        x += g->stride;
        if (x > g->w - 1 + upper[0]) {
            x = lower[0], y += g->stride;
            if (y > g->h - 1 + upper[1])
                y = lower[1], image++;
        }
    }
}

/* conv_tc_swizzled against the copy engine's 128-byte swizzle of a box
 * chunk of bn rows of 128 bytes: byte address bits 4-6 exclusive-ored
 * with bits 7-9. */
static void check_swizzle(const conv_tc_geom *g)
{
    for (uint32_t n = 0; n < (uint32_t)g->bn; n++)
        for (uint32_t j = 0; j < (uint32_t)g->ks; j++) {
            const uint32_t plain = ((j / CONV_TC_CHUNK * g->bn + n) * CONV_TC_CHUNK +
                                    j % CONV_TC_CHUNK) * 2;
            swizzles_wrong +=
                conv_tc_swizzled(g->bn, n, j) * 2 != (plain ^ ((plain >> 7 & 7) << 4));
        }
}

static float entry_value(uint32_t e, spf_dtype dtype)
{
    const uint16_t bits = (uint16_t)(e & 0xffff);
    return dtype == SPF_DTYPE_F16 ? f16_to_float(bits) : bf16_to_float(bits);
}

/* Where element j of position n of B's slice lies in the block's tile. */
static int64_t at(const conv_tc_geom *g, int32_t n, int32_t j)
{
    return g->tma ? (int64_t)conv_tc_swizzled((uint32_t)g->bn, (uint32_t)n, (uint32_t)j)
                  : (int64_t)n * g->ks + j;
}

/* What the kernel computes: NHWC out of cols × K. */
static void replay(const conv_tc_format *f, spf_dtype dtype, const float *in, const float *bias,
                   const float *residual, int relu, float *out)
{
    const conv_tc_geom *g = &f->geom;
    const conv_gather eg = {.c = g->c, .h = g->h, .w = g->w, .r = g->r, .s = g->s,
                            .stride = g->stride, .pad = g->pad, .p = g->p, .q = g->q,
                            .cols = g->cols, .nhwc = 1};
    float *a = malloc((size_t)CONV_TC_BM * g->ks * sizeof *a);
    float *b = malloc((size_t)g->bn * g->ks * sizeof *b);
    double *sum = calloc((size_t)g->cols * g->k, sizeof *sum);
    for (int32_t mt = 0; mt < g->mtiles; mt++)
        for (int32_t nt = 0; nt < g->ntiles; nt++)
            for (int32_t z = 0; z < g->splits; z++) {
                const int32_t n0 = nt * g->bn, k0 = mt * CONV_TC_BM, kk0 = z * g->ks;
                if (g->tma && mt == 0 && z == 0)
                    check_walk(g, n0);
                for (int32_t n = 0; n < g->bn; n++) {
                    int32_t corner = 0, y0 = -(1 << 28), x0 = 0;
                    if (n0 + n < g->cols)
                        conv_tc_place(g, n0 + n, &corner, &y0, &x0);
                    for (int32_t j = 0; j < g->ks / 8; j++) {
                        const int32_t kk = kk0 + 8 * j;
                        int32_t offset = 0;
                        uint32_t dydx = 0;
                        if (kk < g->kred)
                            conv_tc_tap(g, kk, &offset, &dydx);
                        const int64_t src = kk < g->kred && conv_tc_inside(g, y0, x0, dydx)
                                                ? (int64_t)corner + offset
                                                : -1;
                        for (int32_t u = 0; u < 8; u++) {
                            b[at(g, n, 8 * j + u)] = src < 0 ? 0.0f : in[src + u];
                            if (n0 + n < g->cols && kk < g->kred) {
                                runs_checked++;
                                const int64_t want = conv_gather_from(&eg, kk + u, n0 + n);
                                runs_wrong += want != (src < 0 ? -1 : src + u);
                            }
                        }
                    }
                }
                for (int64_t i = 0; i < (int64_t)CONV_TC_BM * g->ks; i++)
                    a[i] = 0.0f;
                /* the entries' offsets in the kernel's tile, rows of
                 * ks + CONV_TC_PAD; the padding columns are never read */
                const int32_t pitch = g->ks + CONV_TC_PAD;
                const uint32_t *entry = f->entry + (int64_t)(mt * g->splits + z) * g->cap;
                for (int32_t e = 0; e < g->cap; e++) {
                    /* the thread whose slot e is: its entries fall in
                     * its warp's units, its padding in its own slot */
                    const int32_t t = e / 4 % CONV_TC_THREADS;
                    const int32_t at = (int32_t)(entry[e] >> 16), row = at / pitch,
                                  col = at - row * pitch;
                    if (row < CONV_TC_BM && col < g->ks) {
                        a[(int64_t)row * g->ks + col] = entry_value(entry[e], dtype);
                        if (nt == 0)
                            owners_wrong += conv_tc_owner((uint32_t)at) != t / 32;
                    } else if (nt == 0) {
                        pads++, pads_wrong += entry[e] != conv_tc_dump(g, t);
                    }
                }
                for (int32_t n = 0; n < g->bn && n0 + n < g->cols; n++)
                    for (int32_t m = 0; m < CONV_TC_BM && k0 + m < g->k; m++) {
                        double s = 0;
                        for (int32_t j = 0; j < g->ks; j++)
                            s += (double)a[(int64_t)m * g->ks + j] * b[at(g, n, j)];
                        sum[(int64_t)(n0 + n) * g->k + k0 + m] += s;
                    }
            }
    for (int64_t i = 0; i < (int64_t)g->cols * g->k; i++) {
        double y = sum[i] + (bias ? bias[i % g->k] : 0.0) + (residual ? residual[i] : 0.0);
        out[i] = (float)(relu && y < 0 ? 0.0 : y);
    }
    free(a);
    free(b);
    free(sum);
}

/* d's case under cfg in dtype: 1 when the geometry took it. */
static int check_config(const conv_dims *d, conv_tc_config cfg, spf_dtype dtype, int variant,
                        uint64_t seed)
{
    const int bias = variant & 1, residual = (variant >> 1) & 1, relu = (variant >> 2) & 1;
    conv_case t;
    conv_case_make(&t, d, SPF_CONV_NHWC, bias, residual, relu, dtype, seed);
    conv_tc_format f;
    if (!conv_tc_case_format(&t, d, cfg, dtype, &f)) {
        conv_case_free(&t);
        return 0;
    }
    const conv_tc_geom *g = &f.geom;
    CHECK(g->ks % (g->tma ? CONV_TC_CHUNK : 16) == 0 && g->ks <= CONV_TC_MAX_KS &&
          conv_tc_smem(g) <= CONV_TC_SMEM && g->tma == cfg.tma);
    if (g->tma)
        check_swizzle(g);
    CHECK((int64_t)g->ks * g->splits >= g->kred && (int64_t)g->ks * (g->splits - 1) < g->kred);
    CHECK(g->cap % (4 * CONV_TC_THREADS) == 0 && g->cap > 0 && f.nnz == spf_matrix_nnz(t.w));
    CHECK(!g->cluster || (g->splits > 1 && g->splits <= CONV_TC_MAX_CLUSTER));
    CHECK_EQ_I64(conv_tc_workspace(g),
                 g->splits > 1 && !g->cluster ? (int64_t)g->cols * g->k * 4 : 0);
    const int64_t pads_before = pads;
    for (int64_t i = 0; i < t.out_count; i++)
        t.out[i] = NAN;
    replay(&f, dtype, t.in, bias ? t.bias : NULL, t.residual, relu, t.out);
    /* every nonzero is one entry, and the rest padding */
    CHECK_EQ_I64(pads - pads_before, (int64_t)g->mtiles * g->splits * g->cap - f.nnz);
    /* the reference's weights are not rounded to the dtype: its tolerance */
    const double err = spf_relative_error(t.out, t.want, t.out_count);
    CHECK_MSG(err <= dtype_tolerance(dtype, SPF_MATH_DEFAULT),
              "%s bn%d ks%d z%d %s variant %d: relative error %.3g", d->label, g->bn, g->ks,
              g->splits, spf_dtype_name(dtype), variant, err);
    conv_tc_format_free(&f);
    conv_case_free(&t);
    return 1;
}

static void check_configs_and_refusals(void)
{
    conv_tc_config cfg[CONV_TC_MAX_CONFIGS];
    conv_tc_geom geom_tma;
    char reason[200] = "";
    /* layer4 of ResNet-50 at batch 1: 49 positions, 512 channels, 4608
     * columns: block widths up to 64; slices enough for 132 SMs */
    conv_gather g = {.c = 512, .h = 7, .w = 7, .r = 3, .s = 3, .stride = 1, .pad = 1, .p = 7,
                     .q = 7, .cols = 49, .nhwc = 1};
    int n = conv_tc_configs(&g, 512, 132, 0, cfg, reason, sizeof reason);
    CHECK_MSG(n >= 6 && n <= CONV_TC_MAX_CONFIGS, "%d configs: %s", n, reason);
    int fills = 0;
    for (int i = 0; i < n; i++) {
        conv_tc_geom geom;
        CHECK(conv_tc_geometry(&g, 512, cfg[i], &geom, reason, sizeof reason));
        CHECK(conv_tc_smem(&geom) <= CONV_TC_SMEM && !cfg[i].cluster && !cfg[i].tma);
        fills += (int64_t)geom.ntiles * geom.mtiles * geom.splits >= 132;
    }
    CHECK(fills >= 3);
    /* on sm_90: splits of at most 16 meet in a cluster (at 16 positions a
     * block, 7 slices of 672 columns: the fewest its shared memory takes,
     * 8 of 576 with the copy engine's whole chunks; at 64, 16 are tried:
     * 8 blocks fill no GPU), and each config has its twin with B by the
     * copy engine (C = 512), slices of whole chunks */
    n = conv_tc_configs(&g, 512, 132, 1, cfg, reason, sizeof reason);
    CHECK_MSG(n >= 12 && n <= CONV_TC_MAX_CONFIGS, "%d configs: %s", n, reason);
    int fewest = 0, sixteens = 0, tmas = 0;
    for (int i = 0; i < n; i++) {
        CHECK(cfg[i].cluster == (cfg[i].splits > 1 && cfg[i].splits <= CONV_TC_MAX_CLUSTER));
        fewest += cfg[i].bn == 16 && cfg[i].splits == (cfg[i].tma ? 8 : 7) && cfg[i].cluster;
        sixteens += cfg[i].bn == 64 && cfg[i].splits == 16 && cfg[i].cluster && !cfg[i].tma;
        conv_tc_geom geom;
        CHECK(conv_tc_geometry(&g, 512, cfg[i], &geom, reason, sizeof reason));
        CHECK(!cfg[i].tma || geom.ks % CONV_TC_CHUNK == 0);
        tmas += cfg[i].tma;
    }
    /* (the twins' slices are whole chunks: 16 of 288 columns become 15
     * of 320) */
    CHECK_EQ_I64(fewest, 2);
    CHECK_EQ_I64(sixteens, 1);
    CHECK_MSG(tmas >= 6 && tmas < n, "%d of %d configs by the copy engine", tmas, n);
    /* layer1 at batch 32: 100 352 positions fill the GPU without a split;
     * each block width takes the fewest slices its shared memory allows
     * (576 columns: one at 16 positions, two at 32 and 64) */
    g = (conv_gather){.c = 64, .h = 56, .w = 56, .r = 3, .s = 3, .stride = 1, .pad = 1, .p = 56,
                      .q = 56, .cols = 32 * 3136, .nhwc = 1};
    n = conv_tc_configs(&g, 64, 132, 1, cfg, reason, sizeof reason);
    CHECK_EQ_I64(n, 6);
    for (int i = 0; i < n; i++)
        CHECK_MSG(cfg[i].splits == (cfg[i].bn == 16 ? 1 : 2) && cfg[i].cluster == (cfg[i].bn > 16),
                  "bn %d: %d slices, cluster %d", cfg[i].bn, cfg[i].splits, cfg[i].cluster);
    /* the copy engine's boxes: 64 channels, a stride up to 8, corners
     * within -128 to 127 */
    g.c = 32;
    CHECK(!conv_tc_geometry(&g, 64, (conv_tc_config){16, 1, 0, 1}, &geom_tma, reason,
                            sizeof reason) &&
          strstr(reason, "multiple of 64"));
    CHECK_EQ_I64(conv_tc_configs(&g, 64, 132, 1, cfg, reason, sizeof reason), 3);
    g.c = 64;
    g.stride = 9, g.p = g.q = 7;
    CHECK(!conv_tc_geometry(&g, 64, (conv_tc_config){16, 1, 0, 1}, &geom_tma, reason,
                            sizeof reason) &&
          strstr(reason, "at most 8"));
    g.stride = 1, g.pad = 200, g.p = g.q = 454;
    CHECK(!conv_tc_geometry(&g, 64, (conv_tc_config){16, 1, 0, 1}, &geom_tma, reason,
                            sizeof reason) &&
          strstr(reason, "-128 to 127"));
    g.pad = 1, g.p = g.q = 56;
    CHECK(conv_tc_geometry(&g, 64, (conv_tc_config){16, 3, 0, 1}, &geom_tma, reason,
                           sizeof reason) &&
          geom_tma.ks == 192 && geom_tma.splits == 3 && geom_tma.tma);
    char tname[64];
    conv_tc_name(&geom_tma, SPF_DTYPE_F16, tname, sizeof tname);
    CHECK_MSG(strcmp(tname, "convtc_f16_bn16_ks192_z3t") == 0, "%s", tname);
    /* a slice wider than shared memory holds */
    conv_tc_geom geom;
    CHECK(!conv_tc_geometry(&g, 64, (conv_tc_config){64, 1, 0, 0}, &geom, reason, sizeof reason) ||
          geom.ks <= 416);
    g.c = 512;
    CHECK(!conv_tc_geometry(&g, 64, (conv_tc_config){64, 1, 0, 0}, &geom, reason, sizeof reason) &&
          strstr(reason, "shared memory"));
    CHECK(!conv_tc_geometry(&g, 64, (conv_tc_config){48, 4, 0, 0}, &geom, reason, sizeof reason) &&
          strstr(reason, "bn"));
    /* a split whose partial sums pass the workspace cap, and one that a
     * cluster cannot take */
    CHECK(!conv_tc_geometry(&g, 512, (conv_tc_config){64, 16, 0, 0}, &geom, reason,
                            sizeof reason) &&
          strstr(reason, "partial sums"));
    CHECK(!conv_tc_geometry(&g, 512, (conv_tc_config){16, 17, 1, 0}, &geom, reason,
                            sizeof reason) &&
          strstr(reason, "at most 16"));
    CHECK(conv_tc_geometry(&g, 512, (conv_tc_config){16, 8, 1, 0}, &geom, reason, sizeof reason) &&
          geom.cluster && conv_tc_workspace(&geom) == 0);
    /* an input of 2^31 elements: past the 32-bit offsets */
    const conv_gather big = {.c = 512, .h = 2048, .w = 2048, .r = 3, .s = 3, .stride = 1,
                             .pad = 1, .p = 2048, .q = 2048, .cols = 2048 * 2048, .nhwc = 1};
    CHECK(!conv_tc_geometry(&big, 64, (conv_tc_config){64, 20, 0, 0}, &geom, reason,
                            sizeof reason) &&
          strstr(reason, "32-bit"));
    g.c = 12;
    CHECK(conv_tc_configs(&g, 64, 132, 1, cfg, reason, sizeof reason) == 0 &&
          strstr(reason, "multiple of 8"));
    g.c = 64;
    g.nhwc = 0;
    CHECK(conv_tc_configs(&g, 64, 132, 1, cfg, reason, sizeof reason) == 0 &&
          strstr(reason, "NCHW"));
    /* f32 has no m16n8k16 */
    g.nhwc = 1;
    g.cols = 49;
    CHECK(conv_tc_geometry(&g, 64, (conv_tc_config){16, 2, 0, 0}, &geom, reason, sizeof reason));
    spf_matrix *w = NULL;
    static const int64_t empty_rows[65] = {0};
    CHECK_OK(spf_matrix_create_csr(64, 576, 0, empty_rows, NULL, NULL, 1, &w));
    conv_tc_format f;
    CHECK(conv_tc_format_make(w, &geom, SPF_DTYPE_F32, &f) == SPF_ERR_UNSUPPORTED);
    CHECK_OK(conv_tc_format_make(w, &geom, SPF_DTYPE_BF16, &f));
    char name[64];
    conv_tc_name(&geom, SPF_DTYPE_BF16, name, sizeof name);
    CHECK_MSG(strcmp(name, "convtc_bf16_bn16_ks288_z2") == 0, "%s", name);
    conv_tc_format_free(&f);
    CHECK(conv_tc_geometry(&g, 64, (conv_tc_config){16, 2, 1, 0}, &geom, reason, sizeof reason));
    conv_tc_name(&geom, SPF_DTYPE_F16, name, sizeof name);
    CHECK_MSG(strcmp(name, "convtc_f16_bn16_ks288_z2c") == 0, "%s", name);
    spf_matrix_free(w);
}

/* conv_div against the division for every divisor to 2^12 and a few
 * past, at the numerators around its multiples and the ends of the
 * range (0 ≤ x < 2^31). */
static void check_fastdiv(void)
{
    int64_t wrong = 0, checked = 0;
    uint64_t state = 0x5eed;
    for (uint32_t d = 1; d < (1u << 12) + 40; d = d < 4096 ? d + 1 : d * 3 + 7) {
        const conv_fastdiv f = conv_fastdiv_make(d);
        const uint32_t xs[] = {0, 1, d - 1, d, d + 1, 2 * d - 1, 2 * d, 1000003u % (1u << 31),
                               (uint32_t)INT32_MAX, (uint32_t)INT32_MAX - 1,
                               (uint32_t)INT32_MAX / d * d, (uint32_t)INT32_MAX / d * d - 1};
        for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++, checked++)
            wrong += conv_div(xs[i], f) != xs[i] / d;
        for (int i = 0; i < 64; i++, checked++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            const uint32_t x = (uint32_t)(state >> 33);
            wrong += conv_div(x, f) != x / d;
        }
    }
    CHECK_MSG(wrong == 0, "conv_div: %lld of %lld quotients wrong", (long long)wrong,
              (long long)checked);
}

int main(int argc, char **argv)
{
    check_fastdiv();
    uint64_t seed = 0xc7c0;
    int taken = 0;
    for (int i = 0; i < CONV_TC_DIMS; i++) {
        conv_tc_config cfg[CONV_TC_TEST_CONFIGS];
        const int n = conv_tc_test_configs(&conv_tc_dims[i], cfg);
        for (int c = 0; c < n; c++) {
            seed += 8;
            const spf_dtype dtype = seed / 8 % 2 ? SPF_DTYPE_F16 : SPF_DTYPE_BF16;
            taken += check_config(&conv_tc_dims[i], cfg[c], dtype, (int)(seed / 8 % 8), seed);
        }
    }
    CHECK_MSG(runs_wrong == 0, "%lld of %lld gathered elements not the explicit im2col's",
              (long long)runs_wrong, (long long)runs_checked);
    CHECK_MSG(pads_wrong == 0, "%lld of %lld padding entries not zeros into their thread's slot",
              (long long)pads_wrong, (long long)pads);
    CHECK_MSG(owners_wrong == 0, "%lld entries outside their warp's units of the tile",
              (long long)owners_wrong);
    CHECK_MSG(walks_wrong == 0 && swizzles_wrong == 0,
              "%lld box pixels off their positions, %lld elements off the swizzle",
              (long long)walks_wrong, (long long)swizzles_wrong);
    CHECK_MSG(taken >= CONV_TC_DIMS * 12, "%d configs taken", taken);
    check_configs_and_refusals();
    return check_report();
}
