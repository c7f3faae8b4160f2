/* Column vectors in the structured strategy on the CPU
 * (src/strategy/structured/sp_colvec.h):
 *   - detection: the generator's column vectors of 4, 8 and 16 rows at
 *     0.75 and 0.9 (a last block cut short), with stray nonzeros (a
 *     column more in a block), with the rows shuffled (permuted), a
 *     single row; a random matrix and strays past SP_COLVEC_FILL refused
 *     with a reason; 2:4 and V:2:M matrices keep their patterns;
 *   - the format, bit-exact against a plain reference written here from
 *     sp_colvec.h's text (each block's union of columns, ascending, at
 *     its slots; each value at the lane, word and half the text names;
 *     padding with column 0 and zeros), and read back to the matrix
 *     rounded to fp16 / bf16, through the row order when permuted;
 *   - the rows' order: a permutation, rows of the same columns together;
 *   - the configs: names, refusals, the tuning space. */
#include "test_util.h"

#include "sp_cases.h"

#include "core/matrix.h"
#include "strategy/structured/sp_colvec.h"
#include "strategy/structured/sp_kernel.h"

#include <stdint.h>
#include <stdlib.h>

static void expect_colvec(const char *label, const spf_matrix *a, int l, int permuted)
{
    sp_pattern p;
    char why[512] = "";
    int ok = sp_pattern_detect(a, &p, why, sizeof why);
    CHECK_MSG(ok && p.vec == l && p.permuted == permuted, "%s: detected %d (vec %d permuted %d "
              "M %d V %d: %s), expected column vectors of %d%s", label, ok, p.vec, p.permuted,
              p.group, p.v, why, l, permuted ? ", permuted" : "");
}

static void test_detection(void)
{
    const double sparsities[] = {0.75, 0.9};
    const int ls[] = {4, 8, 16};
    for (int si = 0; si < 2; si++)
        for (int li = 0; li < 3; li++) {
            char label[64];
            spf_matrix *a = gen_colvec(70, 300, ls[li], sparsities[si], 100 + li);
            snprintf(label, sizeof label, "colvec%d at %.2f", ls[li], sparsities[si]);
            expect_colvec(label, a, ls[li], 0);
            spf_matrix *s = shuffled_with_strays(a, 1, 0, 200 + li);
            snprintf(label, sizeof label, "colvec%d at %.2f shuffled", ls[li], sparsities[si]);
            expect_colvec(label, s, ls[li], 1);
            spf_matrix_free(s);
            spf_matrix_free(a);
        }
    /* three strays in 64 × 400 at 0.9 (40 columns a block): a column more
     * in three blocks */
    spf_matrix *a = gen_colvec(64, 400, 8, 0.9, 7);
    spf_matrix *strays = shuffled_with_strays(a, 0, 3, 8);
    expect_colvec("colvec8 with 3 strays", strays, 8, 0);
    sp_pattern p;
    char why[512];
    CHECK(sp_colvec_detect(strays, &p, why, sizeof why));
    CHECK_MSG(p.fill > 1.0 && p.fill < 1.03, "3 strays: fill %.4f", p.fill);
    spf_matrix_free(strays);
    /* 300 strays: blocks of 4 rows store (2560 + 4·300) / 2860 ≈ 1.31×,
     * of 8 1.7× */
    strays = shuffled_with_strays(a, 0, 300, 9);
    CHECK(!sp_pattern_detect(strays, &p, why, sizeof why));
    CHECK_MSG(strstr(why, "not column vectors") != NULL, "reason: %s", why);
    spf_matrix_free(strays);
    spf_matrix_free(a);
    double d[32];
    for (int i = 0; i < 32; i++)
        d[i] = 0.1;
    spf_matrix *random = random_csr(32, 400, d, 10);
    CHECK(!sp_pattern_detect(random, &p, why, sizeof why));
    CHECK_MSG(strstr(why, "not column vectors") != NULL, "reason: %s", why);
    spf_matrix_free(random);
    spf_matrix *one = gen_colvec(1, 50, 4, 0.5, 11); /* one row: any length holds */
    expect_colvec("one row", one, 16, 0);
    spf_matrix_free(one);
    /* the sparse tensor cores' patterns come first */
    spf_matrix *v8 = gen_vnm(128, 256, 128, 2, 8, 12);
    CHECK(sp_pattern_detect(v8, &p, why, sizeof why) && p.vec == 0 && p.group == 8);
    spf_matrix_free(v8);

    /* names */
    char name[32];
    sp_pattern c8p = {.vec = 8, .permuted = 1}, back;
    sp_pattern_name(&c8p, name, sizeof name);
    CHECK(strcmp(name, "colvec8p") == 0);
    CHECK(sp_pattern_from_name("colvec8p", &back) && back.vec == 8 && back.permuted == 1);
    CHECK(sp_pattern_from_name("colvec16", &back) && back.vec == 16 && back.permuted == 0);
    CHECK(!sp_pattern_from_name("colvec5", &back) && !sp_pattern_from_name("colvec8q", &back) &&
          !sp_pattern_from_name("colvec 8", &back) && !sp_pattern_from_name("colvec", &back));
}

/* The place of the value of tile row rr, slot j in a step's words as the
 * text says it, as word · 2 + half; -1 where nothing is stored. */
static int text_place(int l, int rr, int j)
{
    if (rr / l != j / l)
        return -1;
    int g = rr % 8, t = (j % 8) / 2, lane = 4 * g + t;
    int reg = (rr >= 8) + 2 * (j >= 8); /* a0 (g, 2t), a1 (g+8, 2t), a2 (g, 2t+8), a3 (g+8, 2t+8) */
    int word;
    if (l == 16)
        word = 4 * lane + reg;
    else if (l == 8)
        word = 2 * lane + (reg == 3);
    else
        word = 2 * (8 * (g / 4) + 2 * (g % 4) + t % 2) + (reg == 3);
    return 2 * word + j % 2;
}

static int cmp_i32(const void *pa, const void *pb)
{
    int32_t a = *(const int32_t *)pa, b = *(const int32_t *)pb;
    return (a > b) - (a < b);
}

/* The format of a (pattern p) against the plain reference. */
static void check_bits(const char *label, const spf_matrix *a, const sp_pattern *p,
                       const sp_format *f)
{
    const int l = p->vec;
    float *d = dense_rounded(a, f->dtype);
    int32_t *order = NULL;
    CHECK_OK(sp_colvec_order(a, p->permuted, &order));
    int32_t *u = malloc((size_t)(a->cols + 1) * sizeof *u);
    int64_t bad = 0;
    const uint16_t *halves = (const uint16_t *)f->values;
    for (int64_t r = 0; r < a->rows; r++)
        bad += f->row_map[r] != order[r];
    for (int64_t t = 0; t < f->tiles; t++) {
        int64_t s0 = f->step_ptr[t], steps = f->step_ptr[t + 1] - s0, most = 0;
        for (int b = 0; b < 16 / l; b++) {
            /* the block's union, ascending */
            int64_t n = 0;
            for (int32_t c = 0; c < a->cols; c++) {
                int used = 0; /* a nonzero of the block's rows in column c */
                for (int64_t i = t * 16 + b * l; i < t * 16 + (b + 1) * l && i < a->rows && !used;
                     i++)
                    for (int64_t e = a->row_ptr[order[i]]; e < a->row_ptr[order[i] + 1]; e++)
                        used |= a->col_idx[e] == c;
                if (used)
                    u[n++] = c;
            }
            qsort(u, (size_t)n, sizeof *u, cmp_i32);
            most = n > most ? n : most;
            for (int64_t s = 0; s < steps; s++)
                for (int e = 0; e < l; e++) {
                    int64_t x = s * l + e;
                    int j = b * l + e;
                    int32_t col = x < n ? u[x] : 0;
                    bad += f->gather[(s0 + s) * 16 + j] != col;
                    for (int rr = b * l; rr < (b + 1) * l; rr++) {
                        int64_t i = t * 16 + rr;
                        float want = x < n && i < a->rows ? d[order[i] * a->cols + col] : 0.0f;
                        uint16_t bits;
                        dtype_from_float(f->dtype, &want, &bits, 1);
                        int place = text_place(l, rr, j);
                        if (halves[(s0 + s) * 8 * l * 2 + place] != bits && bad++ < 3)
                            fprintf(stderr, "%s: tile %lld step %lld row %d slot %d: %04x, "
                                    "expected %04x\n", label, (long long)t, (long long)s, rr, j,
                                    halves[(s0 + s) * 8 * l * 2 + place], bits);
                    }
                }
        }
        bad += steps != ((most + l - 1) / l + 16 / l - 1) / (16 / l) * (16 / l); /* whole windows */
    }
    CHECK_MSG(bad == 0, "%s: %lld places differ from the reference", label, (long long)bad);
    free(u);
    free(order);
    free(d);
}

static void check_matrix(const char *label, const spf_matrix *a)
{
    sp_pattern p;
    char why[512] = "";
    CHECK_MSG(sp_colvec_detect(a, &p, why, sizeof why), "%s: %s", label, why);
    const spf_dtype dtypes[] = {SPF_DTYPE_F16, SPF_DTYPE_BF16};
    for (int di = 0; di < 2; di++) {
        sp_format f;
        CHECK_OK(sp_format_build(a, &p, dtypes[di], 2, &f));
        check_bits(label, a, &p, &f);
        sp_case_check_readback(label, a, &f);
        sp_format_free(&f);
    }
}

static void test_format(void)
{
    const int ls[] = {4, 8, 16};
    for (int li = 0; li < 3; li++) {
        char label[64];
        spf_matrix *a = gen_colvec(70, 203, ls[li], 0.8, 30 + li); /* a last tile of 6 rows */
        snprintf(label, sizeof label, "colvec%d 70x203", ls[li]);
        check_matrix(label, a);
        spf_matrix *s = shuffled_with_strays(a, 1, 0, 40 + li);
        snprintf(label, sizeof label, "colvec%d 70x203 shuffled", ls[li]);
        check_matrix(label, s);
        spf_matrix_free(s);
        s = shuffled_with_strays(a, 0, 4, 50 + li);
        snprintf(label, sizeof label, "colvec%d 70x203 with 4 strays", ls[li]);
        check_matrix(label, s);
        spf_matrix_free(s);
        spf_matrix_free(a);
    }
    spf_matrix *k3 = sp_case_k3_empty_rows(60); /* K = 3, empty rows */
    check_matrix("20x3 with empty rows", k3);
    /* bytes: 32 × 64 colvec16 keeping 16 columns: 512 values (fp16), 16
     * columns of 4 bytes a step and block, step_ptr (a window of 16 / l =
     * 1 step) */
    spf_matrix *whole = gen_colvec(32, 64, 16, 0.75, 61);
    sp_pattern p = {.vec = 16};
    sp_format f;
    CHECK_OK(sp_format_build(whole, &p, SPF_DTYPE_F16, 1, &f));
    CHECK_MSG(f.steps == 2 && f.bytes == 2 * 512 + 2 * 64 + 12, "colvec16 32x64: %lld steps, %lld "
              "bytes", (long long)f.steps, (long long)f.bytes);
    sp_format_free(&f);
    sp_pattern l5 = {.vec = 5};
    CHECK_STATUS(sp_format_build(whole, &l5, SPF_DTYPE_F16, 1, &f), SPF_ERR_INVALID_ARGUMENT);
    spf_matrix_free(whole);
    spf_matrix_free(k3);
}

static void test_order(void)
{
    spf_matrix *a = gen_colvec(64, 100, 4, 0.8, 70);
    spf_matrix *s = shuffled_with_strays(a, 1, 0, 71);
    int32_t *order = NULL;
    CHECK_OK(sp_colvec_order(s, 1, &order));
    int *seen = calloc(64, sizeof *seen);
    int64_t bad = 0, breaks = 0;
    for (int i = 0; i < 64; i++)
        bad += order[i] < 0 || order[i] >= 64 || seen[order[i]]++;
    for (int i = 1; i < 64; i++) { /* neighbours of different columns: one between groups */
        int64_t b0 = s->row_ptr[order[i - 1]], b1 = s->row_ptr[order[i]];
        int64_t n0 = s->row_ptr[order[i - 1] + 1] - b0, n1 = s->row_ptr[order[i] + 1] - b1;
        breaks += n0 != n1 || memcmp(s->col_idx + b0, s->col_idx + b1, (size_t)n0 * 4) != 0;
    }
    CHECK_MSG(bad == 0, "the order is not a permutation");
    CHECK_MSG(breaks == 15, "%lld changes of columns between neighbours, expected 15 (16 groups)",
              (long long)breaks);
    free(seen);
    free(order);
    spf_matrix_free(s);
    spf_matrix_free(a);
}

static void test_configs(void)
{
    sp_pattern cv = {.vec = 8}, p24 = {.group = 4};
    sp_config c = {.kind = SP_COLVEC, .nb = 2, .rt = 1, .warps = 8, .stages = 3}, back;
    char name[32];
    sp_config_name(&c, name, sizeof name);
    CHECK(strcmp(name, "cv_nb2_w8_s3") == 0);
    CHECK_OK(sp_config_from_name(name, &back));
    CHECK(back.kind == SP_COLVEC && back.nb == 2 && back.rt == 1 && back.warps == 8 &&
          back.stages == 3);
    CHECK_STATUS(sp_config_from_name("cv_nb3_w8_s3", &back), SPF_ERR_PARSE);
    CHECK_STATUS(sp_config_from_name("cv_nb2_w8_s3x", &back), SPF_ERR_PARSE);
    CHECK_STATUS(sp_config_from_name("cv_nb2_w32_s3", &back), SPF_ERR_PARSE);
    CHECK(sp_config_refusal(&c, &cv) == NULL);
    CHECK(sp_config_refusal(&c, &p24) != NULL);
    sp_config stream = {.kind = SP_STREAM, .nb = 2, .rt = 1, .warps = 8, .stages = 3};
    CHECK(sp_config_refusal(&stream, &cv) != NULL);
    CHECK(sp_config_smem(&c) == 8 * 3 * (512 + 2 * 1024));
    CHECK(sp_config_threads(&c) == 256);
    sp_config space[SP_SPACE_MAX];
    const int64_t ns[] = {1, 16, 64, 4096};
    /* nb 4 and 8 past N = 32: deep rings of 16 warps pass 227 KB */
    const int want[] = {16, 16, 24, 24};
    for (int i = 0; i < 4; i++) {
        int count = sp_tuning_space(ns[i], &cv, 1, space, SP_SPACE_MAX), others = 0;
        for (int j = 0; j < count && j < SP_SPACE_MAX; j++)
            others += space[j].kind != SP_COLVEC || sp_config_refusal(&space[j], &cv) != NULL;
        CHECK_MSG(count == want[i] && others == 0, "N = %lld: %d configs (%d not column-vector), "
                  "expected %d", (long long)ns[i], count, others, want[i]);
    }
    CHECK(sp_config_in_space(&c, 16, &cv, 1) && !sp_config_in_space(&c, 16, &p24, 1));
    c.nb = 1; /* not at N = 16: a block of 8 columns would read A twice */
    CHECK(!sp_config_in_space(&c, 16, &cv, 1));
}

int main(int argc, char **argv)
{
    test_detection();
    test_format();
    test_order();
    test_configs();
    return check_report();
}
