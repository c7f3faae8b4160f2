/* The CPU reference SpMM against a naive dense triple loop in double, on
 * odd and degenerate shapes; accumulation accuracy; bias and ReLU; thread
 * count independence; every layout of B and C (the strided form the cpu
 * strategy runs) bit for bit against the N_LAST result; spf_relative_error;
 * argument errors. */
#include "test_util.h"

#include "core/dtype.h"
#include "ref/spmm.h"

/* C = dense(A)·B (+ bias) (ReLU), every product and sum in double. */
static double *naive_spmm(const spf_matrix *a, int64_t n, const float *b, const float *bias, int relu)
{
    int64_t m = spf_matrix_rows(a), k = spf_matrix_cols(a);
    double *dense = calloc((size_t)(m * k) + 1, sizeof *dense);
    double *c = calloc((size_t)(m * n) + 1, sizeof *c);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = spf_matrix_row_ptr(a)[i]; j < spf_matrix_row_ptr(a)[i + 1]; j++)
            dense[i * k + spf_matrix_col_idx(a)[j]] = spf_matrix_values(a)[j];
    for (int64_t i = 0; i < m; i++)
        for (int64_t t = 0; t < n; t++) {
            double sum = 0;
            for (int64_t p = 0; p < k; p++)
                sum += dense[i * k + p] * (double)b[p * n + t];
            sum += bias ? bias[i] : 0.0;
            c[i * n + t] = relu && sum < 0 ? 0 : sum;
        }
    free(dense);
    return c;
}

static double max_rel_diff(const double *x, const double *ref, int64_t count)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < count; i++) {
        num += (x[i] - ref[i]) * (x[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* Every entry point against the naive product for one matrix and n. */
static void check_against_naive(const spf_matrix *a, int64_t n, int with_bias, int relu, uint64_t seed)
{
    int64_t m = spf_matrix_rows(a), k = spf_matrix_cols(a);
    float *b = malloc((size_t)(k * n) * sizeof *b + 1);
    float *bias = malloc((size_t)m * sizeof *bias + 1);
    float *c = malloc((size_t)(m * n) * sizeof *c + 1);
    double *c64 = malloc((size_t)(m * n) * sizeof *c64 + 1);
    spf_fill_uniform(b, k * n, seed);
    spf_fill_uniform(bias, m, seed + 1);
    const float *bp = with_bias ? bias : NULL;
    double *ref = naive_spmm(a, n, b, bp, relu);

    CHECK_OK(spf_reference_spmm_f64(a, n, b, c64, bp, relu, 2));
    double err = max_rel_diff(c64, ref, m * n);
    CHECK_MSG(err <= 1e-12, "f64 %lldx%lld n=%lld: %g", (long long)m, (long long)k, (long long)n, err);

    CHECK_OK(spf_reference_spmm(a, n, b, c, bp, relu, SPF_ACCUMULATE_F64, 2));
    err = spf_relative_error(c, ref, m * n);
    CHECK_MSG(err <= 1e-7, "f64->f32 %lldx%lld n=%lld: %g", (long long)m, (long long)k, (long long)n, err);

    CHECK_OK(spf_reference_spmm(a, n, b, c, bp, relu, SPF_ACCUMULATE_F32, 3));
    err = spf_relative_error(c, ref, m * n);
    CHECK_MSG(err <= 1e-5, "f32 %lldx%lld n=%lld: %g", (long long)m, (long long)k, (long long)n, err);
    free(b);
    free(bias);
    free(c);
    free(c64);
    free(ref);
}

static void test_shapes(void)
{
    static const struct { int64_t m, k, n; double s; } cases[] = {
        {1, 1, 1, 0.0},   {5, 1, 3, 0.0},    {17, 23, 49, 0.7}, {33, 64, 127, 0.9},
        {40, 10, 1, 0.5}, {3, 200, 64, 0.95}, {129, 7, 5, 0.3},  {8, 8, 128, 0.0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        spf_matrix *a = gen_matrix(SPF_GEN_UNIFORM, cases[i].m, cases[i].k, cases[i].s, 10 + i);
        check_against_naive(a, cases[i].n, (int)(i % 2), (int)(i % 3 == 0), 100 + i);
        spf_matrix_free(a);
    }

    /* Empty rows: an R-MAT graph leaves many. */
    spf_matrix *a = gen_matrix(SPF_GEN_RMAT, 64, 48, 0.95, 1);
    spf_matrix_stats st;
    CHECK_OK(spf_matrix_stats_compute(a, &st));
    CHECK(st.empty_rows > 0);
    check_against_naive(a, 3, 1, 0, 7);
    check_against_naive(a, 49, 1, 1, 8);
    spf_matrix_free(a);

    /* 0×K, M×0 and 0 nonzeros: C is bias (after ReLU) or zero. */
    const int64_t rp0[] = {0}, rp6[] = {0, 0, 0, 0, 0, 0, 0}, rp7[] = {0, 0, 0, 0, 0, 0, 0, 0};
    CHECK_OK(spf_matrix_create_csr(0, 5, 0, rp0, NULL, NULL, 1, &a));
    check_against_naive(a, 4, 1, 1, 9);
    spf_matrix_free(a);
    CHECK_OK(spf_matrix_create_csr(6, 0, 0, rp6, NULL, NULL, 1, &a));
    check_against_naive(a, 3, 1, 1, 10);
    check_against_naive(a, 3, 1, 0, 10);
    /* With K = 0 there is no B to read. */
    float c[18];
    CHECK_OK(spf_reference_spmm(a, 3, NULL, c, NULL, 0, SPF_ACCUMULATE_F32, 1));
    CHECK(c[0] == 0.0f && c[17] == 0.0f);
    spf_matrix_free(a);
    CHECK_OK(spf_matrix_create_csr(7, 9, 0, rp7, NULL, NULL, 1, &a));
    check_against_naive(a, 5, 1, 0, 11);
    check_against_naive(a, 5, 0, 0, 12);
    spf_matrix_free(a);
}

/* Float accumulation stays within 1e-6 of the oracle on a DNN-sized layer. */
static void test_f32_accuracy(void)
{
    spf_matrix *a = gen_matrix(SPF_GEN_UNIFORM, 768, 768, 0.9, 21);
    const int64_t n = 64;
    float *b = malloc(768 * n * sizeof *b), *c = malloc(768 * n * sizeof *c);
    double *ref = malloc(768 * n * sizeof *ref);
    spf_fill_uniform(b, 768 * n, 22);
    CHECK_OK(spf_reference_spmm_f64(a, n, b, ref, NULL, 0, 0));
    CHECK_OK(spf_reference_spmm(a, n, b, c, NULL, 0, SPF_ACCUMULATE_F32, 0));
    double err = spf_relative_error(c, ref, 768 * n);
    CHECK_MSG(err <= 1e-6, "f32 accumulation error %g", err);
    printf("768x768 s=0.9 N=64: f32 accumulation relative error %.3g\n", err);
    CHECK(err > 0); /* float really was used: rounding shows */
    CHECK_OK(spf_reference_spmm(a, n, b, c, NULL, 0, SPF_ACCUMULATE_F64, 0));
    double err64 = spf_relative_error(c, ref, 768 * n);
    CHECK_MSG(err64 <= err && err64 <= 1e-7, "f64 accumulation error %g", err64);
    free(b);
    free(c);
    free(ref);
    spf_matrix_free(a);
}

static void test_bias_relu(void)
{
    const int64_t rp[] = {0, 2, 3};
    const int32_t ci[] = {0, 2, 1};
    const float v[] = {2.0f, -1.0f, 0.5f};
    const float b[] = {1.0f, -3.0f, /* row 0 of B */ 4.0f, 2.0f, /* row 1 */ 0.5f, 1.0f};
    const float bias[] = {0.25f, -2.5f};
    spf_matrix *a = NULL;
    CHECK_OK(spf_matrix_create_csr(2, 3, 3, rp, ci, v, 0, &a));
    float c[4];
    /* Row 0: 2·(1, -3) - (0.5, 1) = (1.5, -7); row 1: 0.5·(4, 2) = (2, 1). */
    CHECK_OK(spf_reference_spmm(a, 2, b, c, NULL, 0, SPF_ACCUMULATE_F32, 1));
    CHECK(c[0] == 1.5f && c[1] == -7.0f && c[2] == 2.0f && c[3] == 1.0f);
    CHECK_OK(spf_reference_spmm(a, 2, b, c, bias, 0, SPF_ACCUMULATE_F32, 1));
    CHECK(c[0] == 1.75f && c[1] == -6.75f && c[2] == -0.5f && c[3] == -1.5f);
    CHECK_OK(spf_reference_spmm(a, 2, b, c, bias, 1, SPF_ACCUMULATE_F64, 1));
    CHECK(c[0] == 1.75f && c[1] == 0.0f && c[2] == 0.0f && c[3] == 0.0f);
    CHECK_OK(spf_reference_spmm(a, 2, b, c, NULL, 1, SPF_ACCUMULATE_F32, 1));
    CHECK(c[0] == 1.5f && c[1] == 0.0f && c[2] == 2.0f && c[3] == 1.0f);
    double c64[4];
    CHECK_OK(spf_reference_spmm_f64(a, 2, b, c64, bias, 1, 1));
    CHECK(c64[0] == 1.75 && c64[1] == 0.0 && c64[3] == 0.0);
    spf_matrix_free(a);
}

/* Rows are independent and summed in one order: any thread count, same bits. */
static void test_threads_identical(void)
{
    spf_matrix *a = gen_matrix(SPF_GEN_RMAT, 300, 256, 0.9, 1);
    const int64_t n = 33, count = 300 * n;
    float *b = malloc(256 * n * sizeof *b), *bias = malloc(300 * sizeof *bias);
    spf_fill_uniform(b, 256 * n, 5);
    spf_fill_uniform(bias, 300, 6);
    float *c[4];
    double *d[4];
    for (int t = 0; t < 4; t++) {
        c[t] = malloc(count * sizeof *c[t]);
        d[t] = malloc(count * sizeof *d[t]);
        CHECK_OK(spf_reference_spmm(a, n, b, c[t], bias, 1, SPF_ACCUMULATE_F32, t));
        CHECK_OK(spf_reference_spmm_f64(a, n, b, d[t], bias, 1, t));
    }
    for (int t = 0; t < 3; t++) {
        CHECK_MSG(!memcmp(c[t], c[3], count * sizeof *c[t]), "f32: threads %d vs 3 differ", t);
        CHECK_MSG(!memcmp(d[t], d[3], count * sizeof *d[t]), "f64: threads %d vs 3 differ", t);
    }
    for (int t = 0; t < 4; t++) {
        free(c[t]);
        free(d[t]);
    }
    free(b);
    free(bias);
    spf_matrix_free(a);
}

static void test_relative_error(void)
{
    const double ref[] = {1.0, 1.0, 0.0};
    const float same[] = {1.0f, 1.0f, 0.0f}, off[] = {1.0f, 2.0f, 0.0f};
    CHECK(spf_relative_error(same, ref, 3) == 0.0);
    CHECK_NEAR(spf_relative_error(off, ref, 3), sqrt(0.5), 1e-15);
    const double zeros[] = {0.0, 0.0};
    const float c34[] = {3.0f, 4.0f};
    CHECK_NEAR(spf_relative_error(c34, zeros, 2), 5.0, 1e-15); /* absolute against zero */
    CHECK(spf_relative_error(c34, zeros, 0) == 0.0);
    const float with_nan[] = {1.0f, NAN, 0.0f}, with_inf[] = {INFINITY, 1.0f, 0.0f};
    CHECK(isinf(spf_relative_error(with_nan, ref, 3)));
    CHECK(isinf(spf_relative_error(with_inf, ref, 3)));
    CHECK(isinf(spf_relative_error(NULL, ref, 3)));

    /* A·B = 0.582612 rounded to bf16 (0.582031), then a bias of -0.583193
     * added: within bf16's rounding, yet 99.6 % off ‖ref‖ alone; weighed
     * beside ‖bias‖ it is 0.1 %, and a dropped product still fails */
    const float bias[] = {-0.583193f};
    float got[] = {0.582612f};
    dtype_round(SPF_DTYPE_BF16, got, 1);
    got[0] += bias[0];
    const double want[] = {0.582612 - 0.583193};
    CHECK(spf_relative_error(got, want, 1) > 0.9);
    const double norm = ref_bias_norm(bias, NULL, 1, 1);
    CHECK_NEAR(norm, 0.583193, 1e-7);
    CHECK(relative_error_biased(got, want, 1, norm) < 2e-3);
    CHECK(relative_error_biased(bias, want, 1, norm) > 0.9);
    const int64_t rows[] = {1};
    const float two[] = {5.0f, 3.0f};
    CHECK_NEAR(ref_bias_norm(two, rows, 1, 4), 6.0, 1e-12); /* row 1's bias over 4 columns */
    CHECK(ref_bias_norm(NULL, NULL, 3, 4) == 0.0);
    CHECK(relative_error_biased(same, ref, 3, 0.0) == spf_relative_error(same, ref, 3));
}

/* Every (B, C) layout through the strided reference: each element sums the
 * same products in the same order, so C read back in its layout has the
 * bits of the N_LAST result, for both accumulations and any thread count. */
static void check_layouts(const spf_matrix *a, int64_t n, int with_bias, int relu, uint64_t seed)
{
    int64_t m = spf_matrix_rows(a), k = spf_matrix_cols(a);
    float *b = malloc((size_t)(k * n) * sizeof *b + 1);
    float *bt = malloc((size_t)(k * n) * sizeof *bt + 1);
    float *bias = malloc((size_t)m * sizeof *bias + 1);
    float *want = malloc((size_t)(m * n) * sizeof *want + 1);
    float *c = malloc((size_t)(m * n) * sizeof *c + 1);
    float *got = malloc((size_t)(m * n) * sizeof *got + 1);
    spf_fill_uniform(b, k * n, seed);
    spf_fill_uniform(bias, m, seed + 1);
    array_transpose(b, bt, k, n, sizeof *b); /* B as n×k */
    const float *bp = with_bias ? bias : NULL;
    for (int acc = SPF_ACCUMULATE_F32; acc <= SPF_ACCUMULATE_F64; acc++) {
        CHECK_OK(spf_reference_spmm(a, n, b, want, bp, relu, (spf_accumulate)acc, 1));
        for (int bl = SPF_LAYOUT_N_LAST; bl <= SPF_LAYOUT_N_FIRST; bl++)
            for (int cl = SPF_LAYOUT_N_LAST; cl <= SPF_LAYOUT_N_FIRST; cl++) {
                problem p = {.a = a, .m = m, .k = k, .n = n, .b_layout = (spf_layout)bl,
                             .c_layout = (spf_layout)cl};
                for (int64_t i = 0; i < m * n; i++)
                    c[i] = NAN; /* an element left unwritten fails the comparison */
                CHECK_OK(reference_spmm_strided(a, n, bl == SPF_LAYOUT_N_LAST ? b : bt,
                                                problem_b_strides(&p), c, problem_c_strides(&p),
                                                bp, relu, (spf_accumulate)acc, 1 + bl + cl));
                if (cl == SPF_LAYOUT_N_FIRST)
                    array_transpose(c, got, n, m, sizeof *c); /* back to m×n */
                else
                    memcpy(got, c, (size_t)(m * n) * sizeof *c);
                CHECK_MSG(!memcmp(got, want, (size_t)(m * n) * sizeof *got),
                          "%lldx%lld n=%lld acc=%d B %s C %s: differs from the N_LAST result",
                          (long long)m, (long long)k, (long long)n, acc, spf_layout_name(bl),
                          spf_layout_name(cl));
            }
    }
    free(b);
    free(bt);
    free(bias);
    free(want);
    free(c);
    free(got);
}

static void test_layouts(void)
{
    static const struct { int64_t m, k, n; double s; } cases[] = {
        {37, 53, 1, 0.5},  {37, 53, 3, 0.8},  {130, 257, 49, 0.9}, {1, 1000, 127, 0.9},
        {1000, 3, 3, 0.4}, {17, 1, 5, 0.0},   {1, 1, 1, 0.0},      {64, 97, 300, 0.95},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        spf_matrix *a = gen_matrix(SPF_GEN_UNIFORM, cases[i].m, cases[i].k, cases[i].s, 40 + i);
        check_layouts(a, cases[i].n, (int)(i % 2), (int)(i % 3 != 1), 400 + i);
        spf_matrix_free(a);
    }
    /* Empty rows (R-MAT leaves many) and a matrix without nonzeros: C is
     * the bias, after ReLU, in every layout. */
    spf_matrix *a = gen_matrix(SPF_GEN_RMAT, 64, 48, 0.95, 2);
    check_layouts(a, 49, 1, 1, 9);
    check_layouts(a, 127, 0, 0, 10);
    spf_matrix_free(a);
    const int64_t rp7[] = {0, 0, 0, 0, 0, 0, 0, 0};
    CHECK_OK(spf_matrix_create_csr(7, 9, 0, rp7, NULL, NULL, 1, &a));
    check_layouts(a, 3, 1, 1, 11);
    spf_matrix_free(a);
}

static int fail_alloc;
static void *maybe_alloc(size_t n, void *u) { (void)u; return fail_alloc ? NULL : malloc(n ? n : 1); }
static void *plain_realloc(void *p, size_t n, void *u) { (void)u; return realloc(p, n ? n : 1); }
static void plain_free(void *p, void *u) { (void)u; free(p); }

static void test_errors(void)
{
    spf_matrix *a = gen_matrix(SPF_GEN_UNIFORM, 10, 12, 0.5, 3);
    float b[12 * 4], c[10 * 4];
    double c64[10 * 4];
    spf_fill_uniform(b, 48, 1);
    CHECK_STATUS(spf_reference_spmm(a, 0, b, c, NULL, 0, SPF_ACCUMULATE_F32, 1), SPF_ERR_INVALID_ARGUMENT);
    CHECK_DETAIL("n < 1");
    CHECK_STATUS(spf_reference_spmm(NULL, 4, b, c, NULL, 0, SPF_ACCUMULATE_F32, 1), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(spf_reference_spmm(a, 4, NULL, c, NULL, 0, SPF_ACCUMULATE_F32, 1), SPF_ERR_INVALID_ARGUMENT);
    CHECK_DETAIL("b is NULL");
    CHECK_STATUS(spf_reference_spmm_f64(a, 4, b, NULL, NULL, 0, 1), SPF_ERR_INVALID_ARGUMENT);
    CHECK_DETAIL("spf_reference_spmm_f64");
    CHECK_STATUS(spf_reference_spmm(a, 4, b, c, NULL, 0, (spf_accumulate)7, 1), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(spf_reference_spmm(a, 4, b, c, NULL, 0, SPF_ACCUMULATE_F32, -1), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(spf_reference_spmm_f64(a, INT64_MAX / 4, b, c64, NULL, 0, 1), SPF_ERR_OVERFLOW);

    spf_allocator failing = {maybe_alloc, plain_realloc, plain_free, NULL};
    spf_set_allocator(&failing);
    fail_alloc = 1;
    spf_status st = spf_reference_spmm(a, 4, b, c, NULL, 0, SPF_ACCUMULATE_F64, 2);
    fail_alloc = 0;
    spf_set_allocator(NULL);
    CHECK(st == SPF_ERR_OUT_OF_MEMORY);
    spf_matrix_free(a);
}

/* C sharing memory with B or bias is refused before anything is written:
 * the product would read what it had already overwritten. */
static void test_overlapping_buffers(void)
{
    spf_matrix *a = gen_matrix(SPF_GEN_UNIFORM, 8, 8, 0.5, 5);
    float buf[8 * 4 + 8 * 4 + 8];
    double c64[8 * 4];
    spf_fill_uniform(buf, 8 * 4 + 8 * 4 + 8, 2);
    float before[sizeof buf / sizeof *buf];
    memcpy(before, buf, sizeof buf);
    float *b = buf, *bias = buf + 64;
    CHECK_STATUS(spf_reference_spmm(a, 4, b, b, NULL, 0, SPF_ACCUMULATE_F32, 1),
                 SPF_ERR_INVALID_ARGUMENT);
    CHECK_DETAIL("overlaps b");
    CHECK_STATUS(spf_reference_spmm(a, 4, b, b + 31, NULL, 0, SPF_ACCUMULATE_F64, 1),
                 SPF_ERR_INVALID_ARGUMENT); /* one shared element at B's end */
    CHECK_STATUS(spf_reference_spmm(a, 4, b, buf + 33, bias, 0, SPF_ACCUMULATE_F32, 1),
                 SPF_ERR_INVALID_ARGUMENT); /* C's last element is bias[0] */
    CHECK_DETAIL("overlaps bias");
    CHECK_STATUS(spf_reference_spmm_f64(a, 4, b, (double *)(void *)(b + 30), NULL, 0, 1),
                 SPF_ERR_INVALID_ARGUMENT);
    CHECK(memcmp(before, buf, sizeof buf) == 0); /* nothing written */
    /* adjacent buffers are fine */
    CHECK_OK(spf_reference_spmm(a, 4, b, buf + 32, bias, 0, SPF_ACCUMULATE_F32, 1));
    CHECK_OK(spf_reference_spmm_f64(a, 4, b, c64, b, 0, 1)); /* bias may overlap B */
    spf_matrix_free(a);
}

int main(int argc, char **argv)
{
    test_shapes();
    test_f32_accuracy();
    test_bias_relu();
    test_threads_identical();
    test_layouts();
    test_relative_error();
    test_errors();
    test_overlapping_buffers();
    return check_report();
}
