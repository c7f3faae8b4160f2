/* The structured strategy's host side on the CPU (src/strategy/structured):
 *   - pattern detection: 2:4 and V:2:M (M = 8, 16; V = 128, 64, 16)
 *     from the generator, the largest V taken, a last block or group cut
 *     short; strays: a 2:4 matrix with a stray in one row of 24 keeps 2:4 with
 *     that row out, in two rows refused with a reason naming the row, a
 *     V128:2:8 matrix with two crowded rows (core/strays.h) keeps its
 *     pattern with those rows out; in both the strays themselves
 *     (sp_pattern_strays: one a crowded row, never larger than the two
 *     kept in its run) leave the pattern exact; a random matrix refused;
 *     a matrix without nonzeros takes the most compact pattern
 *     (V128:2:32);
 *   - the format, bit-exact against a plain reference written here from
 *     sp_format.h's text: each (row, run)'s metadata nibble and value
 *     pair from the dense matrix, the gathered columns of each block of V
 *     rows, read at the word and bit the text names;
 *   - the format read back to the matrix rounded to the dtype, on odd
 *     shapes (M, K multiples of no tile, K = 3, empty rows, a lone
 *     nonzero in the last place of a run), fp16 and bf16, one thread and
 *     several giving the same bytes;
 *   - refusals: another dtype, a matrix without the pattern given;
 *   - bytes per weight (1.125 for 2:4 on whole tiles, 0.5625 for V:2:8),
 *     config names and refusals. */
#include "test_util.h"

#include "sp_cases.h"

#include "core/dtype.h"
#include "core/matrix.h"
#include "strategy/structured/sp_format.h"
#include "strategy/structured/sp_kernel.h"
#include "strategy/structured/sp_pattern.h"
#include "strategy/structured/sp_predict.h"

#include <stdint.h>
#include <stdlib.h>

/* A V:N:M matrix from the generator (which wants M to divide the
 * columns), its columns past cols dropped: a last group cut short. */
static spf_matrix *vnm(int64_t rows, int64_t cols, int v, int n, int m, uint64_t seed)
{
    spf_matrix *g = gen_vnm(rows, (cols + m - 1) / m * m, v, n, m, seed), *a = NULL;
    int64_t *rp = malloc((size_t)(rows + 1) * sizeof *rp), at = 0;
    int32_t *ci = malloc((size_t)g->nnz * sizeof *ci + 1);
    float *val = malloc((size_t)g->nnz * sizeof *val + 1);
    rp[0] = 0;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t i = g->row_ptr[r]; i < g->row_ptr[r + 1]; i++)
            if (g->col_idx[i] < cols)
                ci[at] = g->col_idx[i], val[at++] = g->values[i];
        rp[r + 1] = at;
    }
    CHECK_OK(spf_matrix_create_csr(rows, cols, at, rp, ci, val, 0, &a));
    free(rp), free(ci), free(val);
    spf_matrix_free(g);
    return a;
}

static void expect_pattern(const char *label, const spf_matrix *a, int group, int v)
{
    sp_pattern p;
    char why[256] = "";
    int ok = sp_pattern_detect(a, &p, why, sizeof why);
    CHECK_MSG(ok && p.group == group && p.v == v, "%s: detected %d (M %d V %d, %s), expected M "
              "%d V %d", label, ok, ok ? p.group : 0, ok ? p.v : 0, why, group, v);
}

/* Give the row whose sorted columns are ci[start] .. ci[*end - 1] a third
 * nonzero in run q: the run's first free column, inserted in order. */
static void add_third(int32_t *ci, int64_t start, int64_t *end, int q)
{
    for (int c = 4 * q; c < 4 * q + 4; c++) {
        int used = 0;
        for (int64_t i = start; i < *end; i++)
            used |= ci[i] == c;
        if (!used) {
            int64_t j = (*end)++;
            for (; j > start && ci[j - 1] > c; j--)
                ci[j] = ci[j - 1];
            ci[j] = c;
            return;
        }
    }
}

/* sp_pattern_strays on a (pattern p with strays): `strays` of them, each
 * no larger than the two kept in its run of four (2:4; the smallest of
 * the run); what is left has pattern p exactly, with no row out. */
static void expect_strays(const char *label, const spf_matrix *a, const sp_pattern *p,
                          int64_t strays)
{
    const int64_t nnz = a->row_ptr[a->rows];
    uint8_t *mask = calloc((size_t)nnz + 1, 1);
    int64_t *rp = calloc((size_t)a->rows + 1, sizeof *rp);
    int32_t *ci = calloc((size_t)nnz + 1, sizeof *ci);
    float *v = calloc((size_t)nnz + 1, sizeof *v);
    int64_t got = sp_pattern_strays(a, p, mask), at = 0;
    CHECK_MSG(got == strays, "%s: %lld strays, expected %lld", label, (long long)got,
              (long long)strays);
    for (int64_t r = 0; r < a->rows; r++) {
        for (int64_t i = a->row_ptr[r]; i < a->row_ptr[r + 1]; i++) {
            if (!mask[i]) {
                ci[at] = a->col_idx[i], v[at++] = a->values[i];
                continue;
            }
            for (int64_t j = a->row_ptr[r]; p->v == 0 && j < a->row_ptr[r + 1]; j++)
                if (!mask[j] && a->col_idx[j] / 4 == a->col_idx[i] / 4)
                    CHECK_MSG(fabsf(a->values[j]) >= fabsf(a->values[i]),
                              "%s: row %lld keeps %g and leaves %g apart", label, (long long)r,
                              a->values[j], a->values[i]);
        }
        rp[r + 1] = at;
    }
    spf_matrix *inside = NULL;
    CHECK_OK(spf_matrix_create_csr(a->rows, a->cols, at, rp, ci, v, 1, &inside));
    sp_pattern q;
    char why[256] = "";
    CHECK_MSG(inside && sp_pattern_detect(inside, &q, why, sizeof why) && q.group == p->group &&
                  q.v == p->v && q.outside == 0,
              "%s: without its strays not exactly M %d V %d (%s)", label, p->group, p->v, why);
    spf_matrix_free(inside);
    free(mask), free(rp), free(ci), free(v);
}

static void expect_refusal(const char *label, const spf_matrix *a, const char *names)
{
    sp_pattern p;
    char why[512] = "";
    CHECK_MSG(!sp_pattern_detect(a, &p, why, sizeof why), "%s: detected a pattern", label);
    CHECK_MSG(strstr(why, names) != NULL, "%s: reason \"%s\" does not name \"%s\"", label, why,
              names);
}

static void test_detection(void)
{
    spf_matrix *a24 = vnm(100, 203, 1, 2, 4, 3); /* K % 4 = 3: a last run cut short */
    expect_pattern("2:4", a24, 4, 0);
    spf_matrix *v8 = vnm(300, 512, 128, 2, 8, 4); /* a last block of 44 rows */
    expect_pattern("V128:2:8", v8, 8, 128);
    spf_matrix *v16 = vnm(256, 1024, 64, 2, 16, 5);
    expect_pattern("V64:2:16", v16, 16, 64);
    spf_matrix *v16b = vnm(48, 96, 16, 1, 16, 6); /* 1:16 */
    expect_pattern("V16:1:16", v16b, 16, 16);
    spf_matrix *empty = NULL;
    CHECK_OK(spf_matrix_create_csr(5, 7, 0, (int64_t[]){0, 0, 0, 0, 0, 0}, NULL, NULL, 0,
                                   &empty));
    expect_pattern("no nonzeros", empty, 32, 128); /* the fewest bytes */

    /* one stray: 24 rows of 16 columns at 2:4 (columns 4q and 4q + 2 of
     * every run), and row 17 with a third nonzero in its run 1: 2:4 with
     * row 17 out (tried before column vectors, which it also is); the
     * same with its rows' runs drawn at random */
    int64_t rp[25];
    int32_t ci[24 * 8 + 1];
    int64_t at = 0;
    rp[0] = 0;
    for (int r = 0; r < 24; r++) {
        for (int q = 0; q < 4; q++) {
            ci[at++] = 4 * q;
            if (r == 17 && q == 1)
                ci[at++] = 4 * q + 1;
            ci[at++] = 4 * q + 2;
        }
        rp[r + 1] = at;
    }
    spf_matrix *stray = NULL;
    CHECK_OK(spf_matrix_create_csr(24, 16, at, rp, ci, NULL, 7, &stray));
    sp_pattern p;
    char why[400] = "";
    CHECK_MSG(sp_pattern_detect(stray, &p, why, sizeof why) && p.group == 4 && p.outside == 1,
              "2:4 columns shared with a stray: not 2:4 with one row out (%s)", why);
    spf_matrix *random24 = gen_vnm(24, 16, 1, 2, 4, 8);
    int64_t rp2[25];
    int32_t ci2[24 * 8 + 1];
    at = 0, rp2[0] = 0;
    for (int r = 0; r < 24; r++) {
        for (int64_t i = random24->row_ptr[r]; i < random24->row_ptr[r + 1]; i++)
            ci2[at++] = random24->col_idx[i];
        if (r == 17) /* a third in run 1 */
            add_third(ci2, rp2[r], &at, 1);
        rp2[r + 1] = at;
    }
    spf_matrix_free(stray);
    CHECK_OK(spf_matrix_create_csr(24, 16, at, rp2, ci2, NULL, 7, &stray));
    /* 2:4 with row 17 left out for the CSR pass: one row of 24, within
     * 24 / SP_OUTSIDE_SHARE */
    expect_pattern("2:4 with a stray", stray, 4, 0);
    CHECK(sp_pattern_detect(stray, &p, why, sizeof why) && p.outside == 1);
    uint8_t mask[24];
    CHECK(sp_pattern_outside(stray, &p, mask) == 1);
    for (int r = 0; r < 24; r++)
        CHECK_MSG(mask[r] == (r == 17), "row %d: outside %d", r, mask[r]);
    expect_strays("2:4 with a stray", stray, &p, 1);
    spf_matrix_free(stray);
    /* a stray in rows 5 and 17: two rows of 24 out, more than 24 / 16 */
    {
        int64_t rp3[25];
        int32_t ci3[24 * 8 + 2];
        at = 0, rp3[0] = 0;
        for (int r = 0; r < 24; r++) {
            for (int64_t i = rp2[r]; i < rp2[r + 1]; i++)
                ci3[at++] = ci2[i];
            if (r == 5) /* a third in run 0 of row 5 */
                add_third(ci3, rp3[r], &at, 0);
            rp3[r + 1] = at;
        }
        CHECK_OK(spf_matrix_create_csr(24, 16, at, rp3, ci3, NULL, 7, &stray));
    }
    expect_refusal("2:4 with strays in two rows", stray, "row 5");
    expect_refusal("2:4 with strays in two rows", stray, "with strays");
    expect_refusal("2:4 with strays in two rows", stray, "not column vectors");
    spf_matrix_free(random24);

    /* V128:2:8 with a third nonzero in a run of rows 0 and 128 (so not
     * 2:4 either): those rows out */
    spf_matrix *v8s = crowded(vnm(256, 512, 128, 2, 8, 13), 2);
    CHECK_MSG(sp_pattern_detect(v8s, &p, why, sizeof why) && p.group == 8 && p.v == 128 &&
                  p.outside == 2, "V128:2:8 with strays: M %d V %d, %d rows out (%s)", p.group,
              p.v, p.outside, why);
    uint8_t mask8[256];
    CHECK(sp_pattern_outside(v8s, &p, mask8) == 2 && mask8[0] == 1 && mask8[128] == 1);
    expect_strays("V128:2:8 with two crowded rows", v8s, &p, 2);
    spf_matrix_free(v8s);
    double d[64];
    for (int i = 0; i < 64; i++)
        d[i] = 0.5;
    spf_matrix *random = random_csr(64, 200, d, 9);
    expect_refusal("random at 50 %", random, "not 2:4");
    spf_matrix_free(a24);
    spf_matrix_free(v8);
    spf_matrix_free(v16);
    spf_matrix_free(v16b);
    spf_matrix_free(empty);
    spf_matrix_free(stray);
    spf_matrix_free(random);
}

/* The expected gathered columns of block blk, group q (sp_format.h): the
 * distinct columns of the block's rows in the group, ascending, then the
 * first repeated (or the group's first column when it has none). */
static void expected_kept(const spf_matrix *a, const sp_pattern *p, int64_t blk, int64_t q,
                          int32_t kept[4])
{
    int n = 0;
    for (int32_t c = (int32_t)(q * p->group); c < (q + 1) * p->group && c < a->cols; c++) {
        int used = 0;
        for (int64_t r = blk * p->v; r < (blk + 1) * p->v && r < a->rows && !used; r++)
            for (int64_t i = a->row_ptr[r]; i < a->row_ptr[r + 1]; i++)
                used |= a->col_idx[i] == c;
        if (used)
            kept[n++] = c;
    }
    for (int k = n; k < 4; k++)
        kept[k] = n ? kept[0] : (int32_t)(q * p->group);
}

/* The format of a against the plain reference: every (row, run) of every
 * tile and step, padding included. */
static void check_bits(const char *label, const spf_matrix *a, const sp_pattern *p,
                       const sp_format *f)
{
    float *d = dense_rounded(a, f->dtype);
    int64_t kc = f->pairs * 64, bad = 0, runs = f->pairs * 16;
    for (int64_t blk = 0; p->v && blk < (a->rows + p->v - 1) / p->v; blk++)
        for (int64_t q = 0; q < kc / 4; q++) {
            int32_t kept[4] = {0, 0, 0, 0};
            if (q < (a->cols + p->group - 1) / p->group)
                expected_kept(a, p, blk, q, kept);
            for (int k = 0; k < 4; k++)
                bad += f->gather[blk * kc + q * 4 + k] != kept[k];
        }
    CHECK_MSG(bad == 0, "%s: %lld gathered columns differ", label, (long long)bad);
    bad = 0;
    for (int64_t r = 0; r < f->tiles * 16; r++)
        for (int64_t q = 0; q < runs; q++) {
            /* the run's four columns of A */
            int32_t cols[4] = {-1, -1, -1, -1}; /* past the last group: none */
            if (p->v == 0)
                for (int k = 0; k < 4; k++)
                    cols[k] = (int32_t)(q * 4 + k);
            else if (q < (a->cols + p->group - 1) / p->group)
                for (int k = 0; k < 4; k++)
                    cols[k] = f->gather[r / p->v * kc + q * 4 + k];
            int places[2], n = 0;
            float vals[2] = {0, 0};
            for (int k = 0; k < 4 && r < a->rows; k++) {
                int dup = 0; /* a repeated filler column counts once, at its first place */
                for (int j = 0; j < k; j++)
                    dup |= cols[j] == cols[k];
                if (!dup && cols[k] >= 0 && cols[k] < a->cols && d[r * a->cols + cols[k]] != 0.0f)
                    places[n] = k, vals[n] = d[r * a->cols + cols[k]], n++;
            }
            uint32_t nibble = 0x4;
            if (n == 2)
                nibble = (uint32_t)(places[0] | places[1] << 2);
            else if (n == 1 && places[0] < 3)
                nibble = (uint32_t)(places[0] | (places[0] + 1) << 2);
            else if (n == 1)
                nibble = 2 | 3 << 2, vals[1] = vals[0], vals[0] = 0;
            uint16_t bits[2];
            dtype_from_float(f->dtype, vals, bits, 2);
            uint32_t pair = bits[0] | (uint32_t)bits[1] << 16;
            /* where sp_format.h puts them */
            int64_t t = r / 16, s = q / 8, pr = s / 2;
            int rr = (int)(r % 16), h = (int)(s % 2), j = (int)(q % 8), g = rr % 8, hi = rr / 8;
            uint32_t got_pair = f->values[((((t * f->pairs + pr) * 2 + h) * 32) + 4 * g + j % 4) * 4 +
                                          hi + 2 * (j / 4)];
            uint32_t got_nibble = f->meta[(t * f->pairs + pr) * 32 + 4 * g + 2 * h + j / 4] >>
                                      (16 * hi + 4 * (j % 4)) & 0xfu;
            if (got_pair != pair || got_nibble != nibble) {
                if (bad++ < 3)
                    fprintf(stderr, "%s: row %lld run %lld: pair %08x nibble %x, expected %08x "
                            "%x\n", label, (long long)r, (long long)q, got_pair, got_nibble,
                            pair, nibble);
            }
        }
    CHECK_MSG(bad == 0, "%s: %lld runs differ from the reference", label, (long long)bad);
    free(d);
}

/* a in the format of its detected pattern, and (every matrix here has at
 * most two nonzeros in any four columns) of 2:4. */
static void check_matrix(const char *label, const spf_matrix *a)
{
    sp_pattern detected, p24 = {.group = 4};
    char why[256];
    CHECK_MSG(sp_pattern_detect(a, &detected, why, sizeof why), "%s: %s", label, why);
    spf_dtype dtypes[] = {SPF_DTYPE_F16, SPF_DTYPE_BF16};
    for (int pi = 0; pi < 2; pi++)
    for (int di = 0; di < 2; di++) {
        const sp_pattern p = pi ? p24 : detected;
        sp_format f, f1;
        CHECK_OK(sp_format_build(a, &p, dtypes[di], 3, &f));
        CHECK_OK(sp_format_build(a, &p, dtypes[di], 1, &f1));
        int64_t words = f.tiles * f.pairs * 256;
        CHECK_MSG(f.bytes == f1.bytes && memcmp(f.values, f1.values, (size_t)words * 4) == 0 &&
                      memcmp(f.meta, f1.meta, (size_t)words / 2) == 0,
                  "%s: one thread and three build different formats", label);
        check_bits(label, a, &p, &f);
        sp_case_check_readback(label, a, &f);
        sp_format_free(&f);
        sp_format_free(&f1);
    }
}

static void test_formats(void)
{
    spf_matrix *a24 = vnm(37, 53, 1, 2, 4, 21);
    check_matrix("2:4 37x53", a24);
    spf_matrix *v8 = vnm(300, 200, 128, 2, 8, 22);
    check_matrix("V128:2:8 300x200", v8);
    spf_matrix *v16 = vnm(70, 256, 32, 1, 16, 23);
    check_matrix("V32:1:16 70x256", v16);
    spf_matrix *k3 = vnm(40, 3, 1, 2, 4, 24);
    check_matrix("2:4 K=3", k3);
    /* empty rows, and lone nonzeros at each place of a run (the last
     * takes the pair (2, 3) with a zero before it) */
    int64_t rp[6] = {0, 0, 1, 2, 2, 4};
    int32_t ci[4] = {3, 4, 9, 11};
    float v[4] = {0.75f, -0.5f, 0.25f, 1.5f};
    spf_matrix *lone = NULL;
    CHECK_OK(spf_matrix_create_csr(5, 70, 4, rp, ci, v, 0, &lone));
    check_matrix("lone nonzeros", lone);

    /* refusals */
    sp_pattern p24 = {.group = 4};
    sp_format f;
    CHECK_STATUS(sp_format_build(a24, &p24, SPF_DTYPE_F32, 1, &f), SPF_ERR_INVALID_ARGUMENT);
    double d[16];
    for (int i = 0; i < 16; i++)
        d[i] = 0.9;
    spf_matrix *dense = random_csr(16, 40, d, 25);
    CHECK_STATUS(sp_format_build(dense, &p24, SPF_DTYPE_F16, 1, &f), SPF_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(spf_last_error(), "row") != NULL, "no row named: %s", spf_last_error());
    sp_pattern bad = {.group = 8, .v = 24};
    CHECK_STATUS(sp_format_build(v8, &bad, SPF_DTYPE_F16, 1, &f), SPF_ERR_INVALID_ARGUMENT);

    /* bytes per weight on whole tiles and step pairs */
    spf_matrix *big24 = vnm(64, 256, 1, 2, 4, 26), *big8 = vnm(128, 512, 128, 2, 8, 27);
    sp_pattern pb;
    char why[64];
    CHECK(sp_pattern_detect(big24, &pb, why, sizeof why));
    CHECK_OK(sp_format_build(big24, &pb, SPF_DTYPE_F16, 2, &f));
    CHECK_MSG(fabs(sp_format_bytes_per_weight(&f) - 1.125) < 1e-12, "2:4: %.4f bytes a weight",
              sp_format_bytes_per_weight(&f));
    sp_format_free(&f);
    CHECK(sp_pattern_detect(big8, &pb, why, sizeof why));
    CHECK_OK(sp_format_build(big8, &pb, SPF_DTYPE_F16, 2, &f));
    /* values and metadata at half the columns, plus 4 bytes a kept column per 128 rows */
    double want = 1.125 / 2 + 4.0 / 128 / 2;
    CHECK_MSG(fabs(sp_format_bytes_per_weight(&f) - want) < 1e-12, "V:2:8: %.4f bytes a weight, "
              "expected %.4f", sp_format_bytes_per_weight(&f), want);
    sp_format_free(&f);
    spf_matrix_free(a24);
    spf_matrix_free(v8);
    spf_matrix_free(v16);
    spf_matrix_free(k3);
    spf_matrix_free(lone);
    spf_matrix_free(dense);
    spf_matrix_free(big24);
    spf_matrix_free(big8);
}

static void test_configs(void)
{
    sp_pattern p24 = {.group = 4}, v16 = {.group = 8, .v = 16};
    sp_config c = {.kind = SP_STREAM, .nb = 2, .rt = 2, .warps = 8, .stages = 3}, back;
    char name[32];
    sp_config_name(&c, name, sizeof name);
    CHECK(strcmp(name, "nb2_rt2_w8_s3") == 0);
    CHECK_OK(sp_config_from_name(name, &back));
    CHECK(back.nb == 2 && back.rt == 2 && back.warps == 8 && back.stages == 3);
    CHECK_STATUS(sp_config_from_name("nb3_rt2_w8_s3", &back), SPF_ERR_PARSE);
    CHECK_STATUS(sp_config_from_name("nb2_rt2_w8_s3x", &back), SPF_ERR_PARSE);
    CHECK_STATUS(sp_config_from_name("nb2_rt2_w8", &back), SPF_ERR_PARSE); /* before the ring */
    CHECK_STATUS(sp_config_from_name("nb2_rt2_w8_s6", &back), SPF_ERR_PARSE);
    /* 16 warps × 4 stages × 4352 bytes: past 227 KB */
    sp_config deep = {.kind = SP_STREAM, .nb = 2, .rt = 2, .warps = 16, .stages = 4};
    CHECK(sp_config_refusal(&deep, &p24) != NULL);
    deep.stages = 3;
    CHECK(sp_config_refusal(&deep, &p24) == NULL);
    CHECK(sp_config_refusal(&c, &p24) == NULL);
    CHECK(sp_config_refusal(&c, &v16) != NULL); /* two tiles of 16 rows in a block of 16 */
    sp_config wide = {.kind = SP_STREAM, .nb = 8, .rt = 1, .warps = 16, .stages = 2};
    CHECK(sp_config_refusal(&wide, &p24) != NULL);
    CHECK(sp_nb_for(1) == 1 && sp_nb_for(16) == 2 && sp_nb_for(17) == 4 && sp_nb_for(4096) == 8);
    CHECK(sp_stream_nb_min(1) == 1 && sp_stream_nb_min(16) == 2 && sp_stream_nb_min(32) == 4);
    CHECK(sp_stream_nb_min(33) == 4 && sp_stream_nb_min(128) == 4);
    CHECK(sp_config_smem(&c) == 8 * 3 * (2 * (1024 + 128) + 2 * 1024));
    sp_config one = {.kind = SP_STREAM, .nb = 1, .rt = 1, .warps = 1, .stages = 2};
    CHECK(sp_config_smem(&one) == 2 * (1024 + 128 + 1024));
    CHECK(sp_config_threads(&c) == 256);

    /* the tile kernel's: name, refusals, stages of shared memory, threads */
    sp_config t = {.kind = SP_TILE, .bm = 128, .bn = 64, .stages = 3};
    sp_pattern v64 = {.group = 8, .v = 64}, v128 = {.group = 8, .v = 128};
    sp_config_name(&t, name, sizeof name);
    CHECK(strcmp(name, "m128n64s3") == 0);
    CHECK_OK(sp_config_from_name(name, &back));
    CHECK(back.kind == SP_TILE && back.bm == 128 && back.bn == 64 && back.stages == 3);
    CHECK_STATUS(sp_config_from_name("m96n64s3", &back), SPF_ERR_PARSE);
    CHECK_STATUS(sp_config_from_name("m64n64s5", &back), SPF_ERR_PARSE);
    CHECK_STATUS(sp_config_from_name("m64n64", &back), SPF_ERR_PARSE);
    CHECK(sp_config_refusal(&t, &p24) == NULL && sp_config_refusal(&t, &v128) == NULL);
    CHECK(sp_config_refusal(&t, &v64) != NULL); /* 128 rows across two blocks of 64 */
    CHECK(sp_config_smem(&t) == 3 * (8 * (1024 + 128) + 64 * 144));
    CHECK(sp_config_threads(&t) == 256);
    sp_config narrow = {.kind = SP_TILE, .bm = 32, .bn = 64, .stages = 2};
    CHECK(sp_config_threads(&narrow) == 64);

    /* the tuning space: the stream kernel to N = 128 from its narrowest nb,
     * the tile kernel from N = 16, the wgmma kernel on Hopper; nothing a
     * pattern refuses, nothing twice; the count without room */
    static sp_config list[SP_SPACE_MAX];
    int at16 = sp_tuning_space(16, &p24, 0, list, SP_SPACE_MAX), tiles = 0;
    CHECK(at16 > 18 && at16 <= SP_SPACE_MAX);
    for (int i = 0; i < at16; i++) {
        CHECK(sp_config_refusal(&list[i], &p24) == NULL && list[i].kind != SP_WGMMA);
        CHECK(list[i].kind != SP_STREAM || list[i].nb >= 2);
        tiles += list[i].kind == SP_TILE;
        for (int j = 0; j < i; j++)
            CHECK(memcmp(&list[i], &list[j], sizeof list[i]) != 0);
    }
    CHECK(tiles == 3 * SP_TILE_SHAPES);
    sp_config ring = {.kind = SP_STREAM, .nb = 2, .rt = 2, .warps = 16, .stages = 3};
    CHECK(sp_config_in_space(&ring, 16, &p24, 0));
    ring.stages = 4; /* 16 warps × 4 stages × 4352 bytes: past the shared memory */
    CHECK(!sp_config_in_space(&ring, 16, &p24, 0));
    ring.stages = 3;
    CHECK(!sp_config_in_space(&ring, 48, &p24, 0)); /* nb 2 is narrower than N = 48's 4 */
    CHECK(!sp_config_in_space(&ring, 129, &p24, 0)); /* no stream kernel past N = 128 */
    CHECK(!sp_config_in_space(&t, 8, &p24, 0) && sp_config_in_space(&t, 16, &p24, 0));
    CHECK(sp_tuning_space(1, &p24, 1, list, SP_SPACE_MAX) <= SP_SPACE_MAX);
    CHECK(sp_tuning_space(512, &v64, 0, list, SP_SPACE_MAX) == 3 * 2); /* bm 128 refused */
    list[2].kind = SP_WGMMA;
    CHECK(sp_tuning_space(512, &v64, 0, list, 2) == 3 * 2 && list[2].kind == SP_WGMMA);
    int hop = sp_tuning_space(512, &p24, 1, list, SP_SPACE_MAX);
    /* the TMA kernel, K whole: m128 n256 at 3 stages (4 and 6 pass the
     * shared memory), m256 n128 at 3, 4 and 6 with A staged or not, m128
     * n64 (A staged: the m128 tiles stage A) at 3, 4 and 6, m128 n128 at 3
     * and 4 (12); K split (m128 only), where the others' sums fit: over 2
     * blocks m128 n128 at 3, m128 n64 at 3 and 4 (3); over 4 blocks m128
     * n64 at 3 (1) */
    CHECK(hop == 3 * SP_TILE_SHAPES + 3 * SP_WGMMA_SHAPES + 12 + 4 && list[0].kind == SP_TILE &&
          list[3 * SP_TILE_SHAPES + 3 * SP_WGMMA_SHAPES - 1].kind == SP_WGMMA &&
          list[hop - 1].kind == SP_TMA);
    CHECK(sp_tuning_space(32, &p24, 1, list, SP_SPACE_MAX) <= SP_SPACE_MAX);
    for (int i = 0; i < sp_tuning_space(32, &p24, 1, list, SP_SPACE_MAX); i++)
        CHECK(list[i].kind != SP_TMA); /* from N = 64 */
    /* bm 64 only; no TMA kernel for V:2:M */
    CHECK(sp_tuning_space(512, &v64, 1, list, SP_SPACE_MAX) == 3 * 2 + 3 * 1);
    sp_config four = {.kind = SP_STREAM, .nb = 4, .rt = 4, .warps = 8, .stages = 2};
    CHECK(sp_config_refusal(&four, &p24) == NULL && sp_config_refusal(&four, &v64) == NULL);
    four.nb = 8;
    CHECK(sp_config_refusal(&four, &p24) != NULL); /* 4 × 8 blocks of accumulators */

    /* the wgmma kernel's: name, refusals, threads */
    sp_config w = {.kind = SP_WGMMA, .bm = 256, .bn = 128, .stages = 4};
    sp_config_name(&w, name, sizeof name);
    CHECK(strcmp(name, "wm256n128s4") == 0);
    CHECK_OK(sp_config_from_name(name, &back));
    CHECK(back.kind == SP_WGMMA && back.bm == 256 && back.bn == 128 && back.stages == 4);
    CHECK_STATUS(sp_config_from_name("wm256n256s3", &back), SPF_ERR_PARSE);
    CHECK(sp_config_refusal(&w, &v128) != NULL && sp_config_refusal(&w, &p24) == NULL);
    CHECK(sp_config_threads(&w) == 256);
    w.bm = 64;
    CHECK(sp_config_threads(&w) == 128);

    /* the TMA kernel's: name, refusals (2:4 only, the shared memory),
     * threads, its stages of B */
    sp_config x = {.kind = SP_TMA, .bm = 128, .bn = 256, .stages = 3};
    sp_config_name(&x, name, sizeof name);
    CHECK(strcmp(name, "tm128n256s3") == 0);
    CHECK_OK(sp_config_from_name(name, &back));
    CHECK(back.kind == SP_TMA && back.bm == 128 && back.bn == 256 && back.stages == 3);
    CHECK(sp_config_refusal(&x, &p24) == NULL && sp_config_refusal(&x, &v128) != NULL);
    /* a stage at bm 128: two step pairs of B, 64 × 256 each */
    CHECK(sp_config_threads(&x) == 384 && sp_config_smem(&x) == 3 * 2 * 256 * 128 + 1024);
    /* at bm 256 a pair a stage, and the epilogue's tile of C (256 × 136)
     * is larger than a ring of two */
    sp_config y = {.kind = SP_TMA, .bm = 256, .bn = 128, .stages = 2};
    CHECK(sp_config_smem(&y) == 256 * 136 * 2 + 1024);
    y.stages = 8;
    CHECK(sp_config_smem(&y) == 8 * 128 * 128 + 1024);
    CHECK_STATUS(sp_config_from_name("tm128n256s4", &back), SPF_ERR_PARSE); /* 257 KB */
    CHECK_OK(sp_config_from_name("tm256n128s6", &back));
    CHECK(back.a_staged == 0);
    CHECK_STATUS(sp_config_from_name("tm128n128s6", &back), SPF_ERR_PARSE); /* m128 stages A */
    /* A staged: a stage adds the 8 tiles' fragments and metadata of its two
     * pairs; only the TMA kernel stages A */
    CHECK_OK(sp_config_from_name("tm128n128s4a", &back));
    CHECK(back.kind == SP_TMA && back.stages == 4 && back.a_staged == 1);
    CHECK(sp_config_smem(&back) == 4 * 2 * (128 * 128 + 8 * (1024 + 128)) + 1024);
    sp_config_name(&back, name, sizeof name);
    CHECK(strcmp(name, "tm128n128s4a") == 0);
    CHECK(sp_config_in_space(&back, 512, &p24, 1));
    back.a_staged = 0;
    CHECK(!sp_config_in_space(&back, 512, &p24, 1));
    CHECK_STATUS(sp_config_from_name("tm128n256s3a", &back), SPF_ERR_PARSE); /* 247 KB */
    CHECK_STATUS(sp_config_from_name("wm128n128s3a", &back), SPF_ERR_PARSE);
    CHECK_STATUS(sp_config_from_name("tm128n128s4b", &back), SPF_ERR_PARSE);
    sp_config w3 = {.kind = SP_WGMMA, .bm = 128, .bn = 128, .stages = 3, .a_staged = 1};
    CHECK(sp_config_refusal(&w3, &p24) != NULL);
    CHECK_STATUS(sp_config_from_name("tm64n128s4", &back), SPF_ERR_PARSE);
    CHECK_STATUS(sp_config_from_name("tm128n128s1", &back), SPF_ERR_PARSE);

    /* K split over a cluster: the first block's room for the others' fp32
     * sums past the ring (or the tile of C); TMA only, 2 or 4 blocks */
    CHECK_OK(sp_config_from_name("tm128n64s3ak4", &back));
    CHECK(back.kind == SP_TMA && back.bm == 128 && back.bn == 64 && back.split_k == 4 &&
          back.a_staged == 1);
    CHECK(sp_config_smem(&back) ==
          3 * 2 * (64 * 128 + 8 * (1024 + 128)) + 3 * 128 * 64 * 4 + 1024);
    sp_config_name(&back, name, sizeof name);
    CHECK(strcmp(name, "tm128n64s3ak4") == 0);
    CHECK(sp_config_in_space(&back, 64, &p24, 1) && !sp_config_in_space(&back, 64, &p24, 0));
    CHECK_OK(sp_config_from_name("tm128n128s3ak2", &back));
    CHECK(back.a_staged == 1 && back.split_k == 2);
    sp_config_name(&back, name, sizeof name);
    CHECK(strcmp(name, "tm128n128s3ak2") == 0);
    CHECK_STATUS(sp_config_from_name("tm128n128s4ak4", &back), SPF_ERR_PARSE); /* 3 × 64 KB */
    CHECK_STATUS(sp_config_from_name("tm128n64s4k3", &back), SPF_ERR_PARSE);
    CHECK_STATUS(sp_config_from_name("tm128n64s4k", &back), SPF_ERR_PARSE);
    CHECK_STATUS(sp_config_from_name("wm128n128s3k2", &back), SPF_ERR_PARSE);
    CHECK_STATUS(sp_config_from_name("tm256n128s3k2", &back), SPF_ERR_PARSE);
    sp_config split_w = {.kind = SP_WGMMA, .bm = 128, .bn = 128, .stages = 3, .split_k = 2};
    CHECK(sp_config_refusal(&split_w, &p24) != NULL);
    /* the space holds every config at each N (SP_SPACE_MAX) */
    for (int64_t n = 1; n <= 4096; n *= 2) {
        sp_config space[SP_SPACE_MAX];
        CHECK(sp_tuning_space(n, &p24, 1, space, SP_SPACE_MAX) <= SP_SPACE_MAX);
        CHECK(sp_tuning_space(n, &v128, 1, space, SP_SPACE_MAX) <= SP_SPACE_MAX);
    }
}

/* The predictor: pattern names, features, the embedded model's order of a
 * tuning space (every config once; at N = 16, where the stream kernel is
 * 3-10x faster than the staged ones in every log, its first five are
 * stream configs). */
static void test_predictor(void)
{
    sp_pattern p;
    CHECK(sp_pattern_from_name("2:4", &p) && p.group == 4 && p.v == 0);
    CHECK(sp_pattern_from_name("V128:2:16", &p) && p.group == 16 && p.v == 128);
    CHECK(!sp_pattern_from_name("V128:2:12", &p) && !sp_pattern_from_name("V96:2:8", &p));
    CHECK(!sp_pattern_from_name("V64:3:8", &p) && !sp_pattern_from_name("2:4x", &p));
    char name[32];
    sp_pattern_name(&p, name, sizeof name);
    CHECK(strcmp(name, "V128:2:16") == 0);

    /* 4096 × 4096 V128:2:16: K / 16 · 4 = 1024 condensed columns, 16 step pairs */
    sp_config c = {.kind = SP_STREAM, .nb = 2, .rt = 4, .warps = 8, .stages = 3};
    double x[SP_FEATURE_COUNT];
    sp_features(4096, 4096, 20, &p, &c, x);
    const double want[SP_FEATURE_COUNT] = {4096, 4096, 20, 128, 16, 0, 2, 4, 8, 3,
                                           64,   16,   64 * 2, 2, 20.0 / 32};
    for (int f = 0; f < SP_FEATURE_COUNT; f++)
        CHECK(x[f] == want[f]);
    sp_config t = {.kind = SP_WGMMA, .bm = 128, .bn = 256, .stages = 4};
    sp_features(4096, 4096, 20, &p, &t, x);
    CHECK(x[5] == 2 && x[6] == 0 && x[10] == 128 && x[11] == 256 && x[12] == 32 && x[13] == 16);

    const rank_model *model;
    CHECK_OK(sp_model(&model));
    static sp_config space[SP_SPACE_MAX];
    static int order[SP_SPACE_MAX];
    sp_pattern p24 = {.group = 4};
    int count = sp_tuning_space(16, &p24, 1, space, SP_SPACE_MAX);
    CHECK_OK(sp_predict_order(model, 4096, 4096, 16, &p24, space, count, order));
    unsigned char seen[SP_SPACE_MAX] = {0};
    for (int i = 0; i < count; i++)
        CHECK(order[i] >= 0 && order[i] < count && !seen[order[i]]++);
    for (int i = 0; i < SP_PREDICT_TIMED; i++)
        CHECK(space[order[i]].kind == SP_STREAM);
    CHECK_OK(sp_predict_order(model, 4096, 4096, 16, &p24, space, 0, NULL));

    /* the TMA kernel, which the model has no logs of, goes first, its
     * configs in the model's order, the others' order kept */
    count = sp_tuning_space(512, &p24, 1, space, SP_SPACE_MAX);
    CHECK_OK(sp_predict_order(model, 4096, 4096, 512, &p24, space, count, order));
    static int moved[SP_SPACE_MAX];
    memcpy(moved, order, sizeof(int) * (size_t)count);
    int first = sp_unlogged_first(space, count, moved);
    CHECK(first == 12 + 4);
    for (int i = 0, at_tma = 0, at_rest = first; i < count; i++) {
        if (space[order[i]].kind == SP_TMA)
            CHECK(moved[at_tma++] == order[i]);
        else
            CHECK(moved[at_rest++] == order[i]);
    }
    CHECK_STATUS(sp_predict_order(NULL, 4096, 4096, 16, &p24, space, count, order),
                 SPF_ERR_INVALID_ARGUMENT);
}

int main(int argc, char **argv)
{
    test_detection();
    test_formats();
    test_configs();
    test_predictor();
    return check_report();
}
