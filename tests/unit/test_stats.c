/* Pattern statistics (hand-computed), the XXH64 implementation against the
 * published test vectors, and the stability of the matrix hashes. */
#include "check.h"
#include "core/hash.h"

static spf_matrix *small_matrix(const float *values)
{
    /* 3×4:  [a . . b]
     *       [. . . .]
     *       [. c . .] */
    const int64_t rp[] = {0, 2, 2, 3};
    const int32_t ci[] = {0, 3, 1};
    spf_matrix *a = NULL;
    CHECK_OK(spf_matrix_create_csr(3, 4, 3, rp, ci, values, 7, &a));
    return a;
}

static void test_stats_small(void)
{
    const float v[] = {1.5f, -2.0f, 0.25f};
    spf_matrix *a = small_matrix(v);
    spf_matrix_stats s;
    CHECK_OK(spf_matrix_stats_compute(a, &s));
    CHECK_EQ_I64(s.rows, 3);
    CHECK_EQ_I64(s.cols, 4);
    CHECK_EQ_I64(s.nnz, 3);
    CHECK_NEAR(s.density, 0.25, 1e-15);
    CHECK_EQ_I64(s.row_nnz_min, 0);
    CHECK_EQ_I64(s.row_nnz_max, 2);
    CHECK_NEAR(s.row_nnz_mean, 1.0, 1e-15);
    /* Row lengths 2, 0, 1: population variance 2/3, mean 1. */
    CHECK_NEAR(s.row_nnz_cv, sqrt(2.0 / 3.0), 1e-12);
    CHECK_EQ_I64(s.empty_rows, 1);
    CHECK_EQ_I64(s.empty_cols, 1);
    CHECK_EQ_I64(s.bandwidth, 3);
    spf_matrix_free(a);

    /* A lower band: bandwidth counts row > col as well. */
    const int64_t rp[] = {0, 0, 0, 0, 0, 1};
    const int32_t ci[] = {1};
    CHECK_OK(spf_matrix_create_csr(5, 2, 1, rp, ci, NULL, 1, &a));
    CHECK_OK(spf_matrix_stats_compute(a, &s));
    CHECK_EQ_I64(s.bandwidth, 3);
    CHECK_EQ_I64(s.row_nnz_min, 0);
    CHECK_NEAR(s.row_nnz_cv, 2.0, 1e-12); /* lengths 0,0,0,0,1: std 0.4, mean 0.2 */
    spf_matrix_free(a);
}

static void test_stats_empty(void)
{
    const int64_t rp0[] = {0};
    spf_matrix *a = NULL;
    spf_matrix_stats s;
    CHECK_OK(spf_matrix_create_csr(0, 0, 0, rp0, NULL, NULL, 1, &a));
    CHECK_OK(spf_matrix_stats_compute(a, &s));
    CHECK(s.rows == 0 && s.cols == 0 && s.nnz == 0 && s.density == 0.0);
    CHECK(s.row_nnz_min == 0 && s.row_nnz_max == 0 && s.row_nnz_mean == 0.0);
    CHECK(s.row_nnz_cv == 0.0 && s.empty_rows == 0 && s.empty_cols == 0 && s.bandwidth == 0);
    spf_matrix_free(a);

    const int64_t rp3[] = {0, 0, 0, 0};
    CHECK_OK(spf_matrix_create_csr(3, 5, 0, rp3, NULL, NULL, 1, &a));
    CHECK_OK(spf_matrix_stats_compute(a, &s));
    CHECK(s.density == 0.0 && s.row_nnz_max == 0 && s.row_nnz_cv == 0.0);
    CHECK_EQ_I64(s.empty_rows, 3);
    CHECK_EQ_I64(s.empty_cols, 5);
    spf_matrix_free(a);

    CHECK_STATUS(spf_matrix_stats_compute(NULL, &s), SPF_ERR_INVALID_ARGUMENT);
    CHECK_OK(spf_matrix_create_csr(3, 5, 0, rp3, NULL, NULL, 1, &a));
    CHECK_STATUS(spf_matrix_stats_compute(a, NULL), SPF_ERR_INVALID_ARGUMENT);
    spf_matrix_free(a);
}

/* An allocator refusing blocks over 1 MiB: the statistics of a matrix with
 * few entries must not need memory in proportion to its columns. */
static void *small_alloc(size_t size, void *user)
{
    (void)user;
    return size > (1u << 20) ? NULL : malloc(size ? size : 1);
}
static void *small_realloc(void *p, size_t size, void *user)
{
    (void)user;
    return size > (1u << 20) ? NULL : realloc(p, size ? size : 1);
}
static void plain_free(void *p, void *user) { (void)user; free(p); }

static void test_stats_wide(void)
{
    const int64_t rp0[] = {0, 0, 0, 0}, rp3[] = {0, 2, 2, 3};
    const int32_t ci[] = {5, INT32_MAX - 1, 5}; /* column 5 twice: 2 distinct columns */
    spf_matrix *empty = NULL, *sparse = NULL;
    CHECK_OK(spf_matrix_create_csr(3, INT32_MAX, 0, rp0, NULL, NULL, 1, &empty));
    CHECK_OK(spf_matrix_create_csr(3, INT32_MAX, 3, rp3, ci, NULL, 1, &sparse));
    spf_allocator small = {small_alloc, small_realloc, plain_free, NULL};
    spf_matrix_stats s0, s3;
    spf_set_allocator(&small);
    spf_status st0 = spf_matrix_stats_compute(empty, &s0);
    spf_status st3 = spf_matrix_stats_compute(sparse, &s3);
    spf_set_allocator(NULL);
    CHECK_MSG(st0 == SPF_OK && st3 == SPF_OK, "%d %d: %s", (int)st0, (int)st3, spf_last_error());
    CHECK_EQ_I64(s0.empty_cols, INT32_MAX);
    CHECK_EQ_I64(s3.empty_cols, INT32_MAX - 2);
    spf_matrix_free(empty);
    spf_matrix_free(sparse);

    /* the same pattern narrow enough for one bit per column: the same count */
    const int32_t narrow[] = {5, 62, 5};
    CHECK_OK(spf_matrix_create_csr(3, 64, 3, rp3, narrow, NULL, 1, &sparse));
    CHECK_OK(spf_matrix_stats_compute(sparse, &s3));
    CHECK_EQ_I64(s3.empty_cols, 62);
    spf_matrix_free(sparse);
}

/* XXH64 test vectors (seed 0) as published with xxHash and its ports. */
static void test_xxh64_vectors(void)
{
    static const struct {
        const char *text;
        uint64_t hash;
    } vec[] = {
        {"", 0xEF46DB3751D8E999ULL},
        {"a", 0xD24EC4F1A98C6E5BULL},
        {"as", 0x1C330FB2D66BE179ULL},
        {"asd", 0x631C37CE72A97393ULL},
        {"asdf", 0x415872F599CEA71EULL},
        {"abc", 0x44BC2CF5AD770999ULL},
        {"Nobody inspects the spammish repetition", 0xFBCEA83C8A378BF1ULL},
    };
    for (size_t i = 0; i < sizeof vec / sizeof vec[0]; i++) {
        uint64_t h = hash_bytes(vec[i].text, strlen(vec[i].text), 0);
        CHECK_MSG(h == vec[i].hash, "\"%s\": %016llx, expected %016llx", vec[i].text,
                  (unsigned long long)h, (unsigned long long)vec[i].hash);
    }
    /* Feeding in pieces gives the one-shot hash, whatever the split. */
    unsigned char buf[100];
    for (int i = 0; i < 100; i++)
        buf[i] = (unsigned char)(i * 37 + 11);
    uint64_t whole = hash_bytes(buf, sizeof buf, 99);
    int same = 1;
    for (size_t cut1 = 0; cut1 <= sizeof buf; cut1 += 7)
        for (size_t cut2 = cut1; cut2 <= sizeof buf; cut2 += 5) {
            hash_state h;
            hash_init(&h, 99);
            hash_update(&h, buf, cut1);
            hash_update(&h, buf + cut1, cut2 - cut1);
            hash_update(&h, buf + cut2, sizeof buf - cut2);
            same &= hash_final(&h) == whole;
        }
    CHECK(same);
    CHECK(hash_bytes(buf, sizeof buf, 98) != whole);
}

static void test_matrix_hashes(void)
{
    const float v[] = {1.5f, -2.0f, 0.25f};
    spf_matrix *a = small_matrix(v);
    spf_matrix_stats s;
    CHECK_OK(spf_matrix_stats_compute(a, &s));
    /* Golden values: the plan cache on disk is keyed by these, so a change
     * to the hash must be deliberate (and bump the cache format). */
    CHECK_MSG(s.pattern_hash == 0x499BCBE95A931D89ULL, "pattern hash %016llx", (unsigned long long)s.pattern_hash);
    CHECK_MSG(s.values_hash == 0x1A16C6DCE0C766CAULL, "values hash %016llx", (unsigned long long)s.values_hash);

    /* Values change the values hash only. */
    const float w[] = {1.5f, -2.0f, 0.5f};
    spf_matrix *b = small_matrix(w);
    spf_matrix_stats t;
    CHECK_OK(spf_matrix_stats_compute(b, &t));
    CHECK(t.pattern_hash == s.pattern_hash);
    CHECK(t.values_hash != s.values_hash);
    spf_matrix_free(b);

    /* -0.0f and 0.0f compare equal but differ in bits: the hash sees bits. */
    const float z1[] = {1.5f, 0.0f, 0.25f}, z2[] = {1.5f, -0.0f, 0.25f};
    spf_matrix *c1 = small_matrix(z1), *c2 = small_matrix(z2);
    CHECK(matrix_values_hash(c1) != matrix_values_hash(c2));
    spf_matrix_free(c1);
    spf_matrix_free(c2);

    /* Same values, another pattern: the pattern hash changes, not the values one. */
    const int64_t rp[] = {0, 2, 2, 3};
    const int32_t moved[] = {0, 2, 1};
    CHECK_OK(spf_matrix_create_csr(3, 4, 3, rp, moved, v, 0, &b));
    CHECK_OK(spf_matrix_stats_compute(b, &t));
    CHECK(t.pattern_hash != s.pattern_hash);
    CHECK(t.values_hash == s.values_hash);
    spf_matrix_free(b);

    /* Same arrays, moved between rows. */
    const int64_t rp2[] = {0, 2, 3, 3};
    CHECK_OK(spf_matrix_create_csr(3, 4, 3, rp2, (const int32_t[]){0, 3, 1}, v, 0, &b));
    CHECK(matrix_pattern_hash(b) != s.pattern_hash);
    spf_matrix_free(b);

    /* Only the shape differs. */
    const int64_t e0[] = {0, 0, 0}, e1[] = {0, 0, 0, 0};
    spf_matrix *x = NULL, *y = NULL;
    CHECK_OK(spf_matrix_create_csr(2, 3, 0, e0, NULL, NULL, 0, &x));
    CHECK_OK(spf_matrix_create_csr(3, 2, 0, e1, NULL, NULL, 0, &y));
    CHECK(matrix_pattern_hash(x) != matrix_pattern_hash(y));
    spf_matrix *x4 = NULL;
    CHECK_OK(spf_matrix_create_csr(2, 4, 0, e0, NULL, NULL, 0, &x4));
    CHECK(matrix_pattern_hash(x) != matrix_pattern_hash(x4));
    spf_matrix_free(x);
    spf_matrix_free(y);
    spf_matrix_free(x4);

    /* A clone hashes the same. */
    CHECK_OK(spf_matrix_clone(a, &b));
    CHECK(matrix_pattern_hash(b) == s.pattern_hash && matrix_values_hash(b) == s.values_hash);
    spf_matrix_free(b);
    spf_matrix_free(a);
}

/* Hashes of a generated matrix large enough to cross the staging buffer. */
static void test_hash_generated(void)
{
    spf_gen_options o;
    spf_gen_options_init(&o);
    o.rows = 300;
    o.cols = 200;
    spf_matrix *a = NULL, *b = NULL;
    CHECK_OK(spf_matrix_generate(&o, &a));
    CHECK_OK(spf_matrix_generate(&o, &b));
    CHECK(matrix_pattern_hash(a) == matrix_pattern_hash(b));
    CHECK(matrix_values_hash(a) == matrix_values_hash(b));
    spf_matrix_free(b);
    o.seed = 2;
    CHECK_OK(spf_matrix_generate(&o, &b));
    CHECK(matrix_pattern_hash(a) != matrix_pattern_hash(b));
    CHECK(matrix_values_hash(a) != matrix_values_hash(b));
    spf_matrix_free(a);
    spf_matrix_free(b);
}

int main(int argc, char **argv)
{
    test_stats_small();
    test_stats_empty();
    test_stats_wide();
    test_xxh64_vectors();
    test_matrix_hashes();
    test_hash_generated();
    return check_report();
}
