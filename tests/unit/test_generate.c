/* Generators: shape, exact nnz, reproducibility, the structure each pruning
 * pattern promises (checked block by block), R-MAT skew, and errors. */
#include "test_util.h"

#include "core/matrix.h"

/* Generate from o and validate what came out. */
static spf_matrix *generate_valid(const spf_gen_options *o)
{
    spf_matrix *a = NULL;
    CHECK_OK(spf_matrix_generate(o, &a));
    if (a)
        CHECK_OK(spf_matrix_validate(a));
    return a;
}

static spf_matrix *generate(spf_generator kind, int64_t rows, int64_t cols, double sparsity,
                            uint64_t seed)
{
    spf_gen_options o = gen_options(kind, rows, cols, sparsity, seed);
    return generate_valid(&o);
}

static int same_matrix(const spf_matrix *a, const spf_matrix *b)
{
    int64_t nnz = spf_matrix_nnz(a);
    return spf_matrix_rows(a) == spf_matrix_rows(b) && spf_matrix_cols(a) == spf_matrix_cols(b) &&
           nnz == spf_matrix_nnz(b) &&
           !memcmp(spf_matrix_row_ptr(a), spf_matrix_row_ptr(b),
                   (size_t)(spf_matrix_rows(a) + 1) * sizeof(int64_t)) &&
           !memcmp(spf_matrix_col_idx(a), spf_matrix_col_idx(b), (size_t)nnz * sizeof(int32_t)) &&
           !memcmp(spf_matrix_values(a), spf_matrix_values(b), (size_t)nnz * sizeof(float));
}

/* Same seed, same matrix; another seed, another pattern. */
static void check_seeding(const spf_gen_options *base)
{
    spf_gen_options o = *base;
    spf_matrix *a = NULL, *b = NULL, *c = NULL;
    CHECK_OK(spf_matrix_generate(&o, &a));
    CHECK_OK(spf_matrix_generate(&o, &b));
    o.seed += 1000;
    CHECK_OK(spf_matrix_generate(&o, &c));
    if (a && b && c) {
        CHECK_MSG(same_matrix(a, b), "kind %d not reproducible", (int)o.kind);
        int64_t nnz = spf_matrix_nnz(a) < spf_matrix_nnz(c) ? spf_matrix_nnz(a) : spf_matrix_nnz(c);
        CHECK_MSG(memcmp(spf_matrix_col_idx(a), spf_matrix_col_idx(c), (size_t)nnz * 4) != 0,
                  "kind %d: seeds %llu and %llu give the same pattern", (int)o.kind,
                  (unsigned long long)base->seed, (unsigned long long)o.seed);
    }
    spf_matrix_free(a);
    spf_matrix_free(b);
    spf_matrix_free(c);
}

static void check_uniform_values(const spf_matrix *a)
{
    const float *v = spf_matrix_values(a);
    int in_range = 1, distinct = 0;
    for (int64_t j = 0; j < spf_matrix_nnz(a); j++) {
        in_range &= v[j] >= -1.0f && v[j] <= 1.0f;
        distinct += j > 0 && v[j] != v[j - 1];
    }
    CHECK(in_range);
    CHECK(distinct > spf_matrix_nnz(a) / 2);
}

static void test_uniform(void)
{
    spf_matrix *a = generate(SPF_GEN_UNIFORM, 100, 57, 0.7, 3);
    CHECK_EQ_I64(spf_matrix_rows(a), 100);
    CHECK_EQ_I64(spf_matrix_cols(a), 57);
    CHECK_EQ_I64(spf_matrix_nnz(a), 100 * 17); /* round(0.3 * 57) = 17 per row */
    int exact = 1;
    for (int i = 0; i < 100; i++)
        exact &= spf_matrix_row_ptr(a)[i + 1] - spf_matrix_row_ptr(a)[i] == 17;
    CHECK(exact);
    check_uniform_values(a);
    /* Uniform over columns: every column is used somewhere in 1700 draws. */
    int used[57] = {0};
    for (int64_t j = 0; j < spf_matrix_nnz(a); j++)
        used[spf_matrix_col_idx(a)[j]] = 1;
    int all = 1;
    for (int c = 0; c < 57; c++)
        all &= used[c];
    CHECK(all);
    spf_matrix_free(a);

    a = generate(SPF_GEN_UNIFORM, 10, 10, 0.99, 1); /* round(0.1) = 0 per row */
    CHECK_EQ_I64(spf_matrix_nnz(a), 0);
    spf_matrix_free(a);
    a = generate(SPF_GEN_UNIFORM, 6, 9, 0.0, 1);
    CHECK_EQ_I64(spf_matrix_nnz(a), 54);
    spf_matrix_free(a);

    spf_gen_options o;
    spf_gen_options_init(&o);
    CHECK(o.kind == SPF_GEN_UNIFORM && o.rows == 768 && o.cols == 768 && o.sparsity == 0.9);
    CHECK(o.seed == 1 && o.vector_length == 4 && o.n == 2 && o.m == 4 && o.rmat_a == 0.57);
    check_seeding(&o);
}

static void test_magnitude(void)
{
    spf_matrix *a = generate(SPF_GEN_MAGNITUDE, 64, 50, 0.8, 5);
    CHECK_EQ_I64(spf_matrix_nnz(a), 640); /* round(0.2 * 3200) */
    /* The kept weights are the top 20% of |N(0,1)|: all beyond about the
     * 80th percentile of |w| (1.2816), some far beyond, both signs. */
    float min_abs = INFINITY, max_abs = 0;
    int negative = 0;
    for (int64_t j = 0; j < spf_matrix_nnz(a); j++) {
        float m = fabsf(spf_matrix_values(a)[j]);
        min_abs = m < min_abs ? m : min_abs;
        max_abs = m > max_abs ? m : max_abs;
        negative += spf_matrix_values(a)[j] < 0;
    }
    CHECK_NEAR(min_abs, 1.2816, 0.12);
    CHECK(max_abs > 2.5f);
    CHECK(negative > 200 && negative < 440);

    /* One Gaussian matrix per seed: a sparser pruning keeps a subset of a
     * denser one, with the same values (the selection is global and exact). */
    spf_matrix *b = generate(SPF_GEN_MAGNITUDE, 64, 50, 0.9, 5);
    CHECK_EQ_I64(spf_matrix_nnz(b), 320);
    int subset = 1;
    for (int64_t i = 0; i < 64; i++) {
        int64_t ja = spf_matrix_row_ptr(a)[i];
        for (int64_t jb = spf_matrix_row_ptr(b)[i]; jb < spf_matrix_row_ptr(b)[i + 1]; jb++) {
            while (ja < spf_matrix_row_ptr(a)[i + 1] && spf_matrix_col_idx(a)[ja] < spf_matrix_col_idx(b)[jb])
                ja++;
            subset &= ja < spf_matrix_row_ptr(a)[i + 1] &&
                      spf_matrix_col_idx(a)[ja] == spf_matrix_col_idx(b)[jb] &&
                      spf_matrix_values(a)[ja] == spf_matrix_values(b)[jb];
        }
    }
    CHECK(subset);
    spf_matrix_free(b);
    spf_matrix_free(a);

    a = generate(SPF_GEN_MAGNITUDE, 7, 3, 0.0, 2);
    CHECK_EQ_I64(spf_matrix_nnz(a), 21);
    spf_matrix_free(a);

    spf_gen_options o = gen_options(SPF_GEN_MAGNITUDE, 40, 30, 0.9, 1);
    check_seeding(&o);
}

static void test_column_vector(void)
{
    /* 37 rows: 9 groups of 4 and a last group of 1 */
    spf_gen_options o = gen_options(SPF_GEN_COLUMN_VECTOR, 37, 40, 0.75, 1);
    o.vector_length = 4;
    spf_matrix *a = generate_valid(&o);
    CHECK_EQ_I64(spf_matrix_nnz(a), 37 * 10);
    const int64_t *rp = spf_matrix_row_ptr(a);
    const int32_t *ci = spf_matrix_col_idx(a);
    int shared = 1, groups_differ = 0;
    for (int64_t i = 0; i < 37; i++) {
        CHECK_EQ_I64(rp[i + 1] - rp[i], 10);
        int64_t lead = i - i % 4; /* first row of i's vector group */
        shared &= !memcmp(ci + rp[i], ci + rp[lead], 10 * sizeof *ci);
        if (i % 4 == 0 && i > 0)
            groups_differ += memcmp(ci + rp[i], ci + rp[i - 4], 10 * sizeof *ci) != 0;
    }
    CHECK(shared);
    CHECK(groups_differ >= 8);
    check_uniform_values(a);
    spf_matrix_free(a);
    check_seeding(&o);
}

/* Each V×M block: every row keeps exactly n columns, all rows of the block
 * draw from at most 4 columns; returns the number of blocks using exactly
 * min(4, m) columns. */
static int64_t check_vnm(const spf_matrix *a, int v, int n, int m)
{
    int64_t rows = spf_matrix_rows(a), cols = spf_matrix_cols(a), full = 0;
    const int64_t *rp = spf_matrix_row_ptr(a);
    const int32_t *ci = spf_matrix_col_idx(a);
    int ok = 1;
    for (int64_t r0 = 0; r0 < rows; r0 += v) {
        for (int64_t c0 = 0; c0 < cols; c0 += m) {
            int used[64] = {0}, distinct = 0;
            for (int64_t i = r0; i < r0 + v && i < rows; i++) {
                int in_block = 0;
                for (int64_t j = rp[i]; j < rp[i + 1]; j++)
                    if (ci[j] >= c0 && ci[j] < c0 + m) {
                        in_block++;
                        distinct += !used[ci[j] - c0];
                        used[ci[j] - c0] = 1;
                    }
                ok &= in_block == n;
            }
            ok &= distinct <= 4;
            full += distinct == (m < 4 ? m : 4);
        }
    }
    CHECK_MSG(ok, "%d:%d:%d structure broken", v, n, m);
    return full;
}

/* One V:N:M matrix from o with V, N and M set: its exact nnz and block
 * structure; returns check_vnm's count of full blocks. */
static int64_t check_vnm_case(spf_gen_options *o, int v, int n, int m, int64_t want_nnz)
{
    o->vector_length = v;
    o->n = n;
    o->m = m;
    spf_matrix *a = NULL;
    CHECK_OK(spf_matrix_generate(o, &a));
    CHECK_EQ_I64(spf_matrix_nnz(a), want_nnz);
    int64_t full = check_vnm(a, v, n, m);
    spf_matrix_free(a);
    return full;
}

static void test_vnm(void)
{
    /* 20 rows: two blocks of 8 rows and a last one of 4; sparsity 0.3 is
     * ignored, V:N:M implies 1 - n/m */
    spf_gen_options o = gen_options(SPF_GEN_VNM, 20, 64, 0.3, 1);
    o.vector_length = 8;
    o.n = 2;
    o.m = 8;
    spf_matrix *a = generate_valid(&o);
    CHECK_EQ_I64(spf_matrix_nnz(a), 20 * 64 * 2 / 8);
    /* Of the 24 blocks, 8 rows each taking 2 of 4 columns miss one of the 4
     * with probability 4 / 2^8 (4 rows: 4 / 2^4), so most use all 4. */
    int64_t full = check_vnm(a, 8, 2, 8);
    CHECK_MSG(full >= 18, "%lld of 24 blocks use 4 columns", (long long)full);
    check_uniform_values(a);
    spf_matrix_free(a);
    check_seeding(&o);

    /* Plain 2:4 is V = 1. */
    o.rows = 33;
    o.cols = 48;
    check_vnm_case(&o, 1, 2, 4, 33 * 24);

    /* m below 4 keeps the whole block: 1:2. */
    check_vnm_case(&o, 16, 1, 2, 33 * 24);

    /* A wide block, 64:4:32, where each row keeps 4 of the block's 4. */
    o.rows = 128;
    o.cols = 256;
    CHECK_EQ_I64(check_vnm_case(&o, 64, 4, 32, 128 * 8 * 4), 2 * 8);
}

static void test_rmat(void)
{
    spf_matrix *a = generate(SPF_GEN_RMAT, 1024, 1024, 0.99, 9);
    CHECK_EQ_I64(spf_matrix_nnz(a), 10486); /* round(0.01 * 1024^2) */
    spf_matrix_stats s;
    CHECK_OK(spf_matrix_stats_compute(a, &s));
    /* Power-law skew: the heaviest row is far above the mean (~10). */
    CHECK_MSG(s.row_nnz_max > 10 * s.row_nnz_mean, "max %lld, mean %g",
              (long long)s.row_nnz_max, s.row_nnz_mean);
    CHECK(s.row_nnz_cv > 1.0);
    CHECK(s.empty_rows > 100);
    check_uniform_values(a);
    spf_matrix_free(a);

    /* A shape that is not a power of two: clipped, exact nnz, in range. */
    a = generate(SPF_GEN_RMAT, 300, 500, 0.95, 4);
    CHECK_EQ_I64(spf_matrix_nnz(a), 7500);
    spf_matrix_free(a);

    spf_gen_options o = gen_options(SPF_GEN_RMAT, 512, 512, 0.97, 1);
    check_seeding(&o);

    /* A dense request: the d quadrant's far corner has probability 0.05^9. */
    o.sparsity = 0.0;
    a = (spf_matrix *)1;
    CHECK_STATUS(spf_matrix_generate(&o, &a), SPF_ERR_INVALID_ARGUMENT);
    CHECK(a == NULL);
    CHECK_DETAIL("distinct edges");
    CHECK_DETAIL("higher sparsity");

    /* Uniform quadrants reach high density. */
    o.rmat_a = o.rmat_b = o.rmat_c = 0.25;
    o.sparsity = 0.5;
    o.rows = o.cols = 64;
    CHECK_OK(spf_matrix_generate(&o, &a));
    CHECK_EQ_I64(spf_matrix_nnz(a), 2048);
    spf_matrix_free(a);
}

static void test_empty_shapes(void)
{
    for (int kind = SPF_GEN_UNIFORM; kind <= SPF_GEN_RMAT; kind++) {
        const int64_t shapes[][2] = {{0, 0}, {0, 8}, {8, 0}};
        for (int s = 0; s < 3; s++) {
            spf_matrix *a = generate((spf_generator)kind, shapes[s][0], shapes[s][1], 0.5, 1);
            CHECK_EQ_I64(spf_matrix_nnz(a), 0);
            CHECK_EQ_I64(spf_matrix_rows(a), shapes[s][0]);
            spf_matrix_free(a);
        }
    }
}

static void expect_error(const spf_gen_options *o, spf_status st, const char *detail)
{
    spf_matrix *a = (spf_matrix *)1;
    CHECK_STATUS(spf_matrix_generate(o, &a), st);
    CHECK(a == NULL);
    CHECK_DETAIL(detail);
}

static void test_errors(void)
{
    spf_gen_options o;
    spf_gen_options_init(&o);
    o.sparsity = 1.0;
    expect_error(&o, SPF_ERR_INVALID_ARGUMENT, "sparsity");
    o.sparsity = -0.1;
    expect_error(&o, SPF_ERR_INVALID_ARGUMENT, "sparsity");
    o.sparsity = NAN;
    expect_error(&o, SPF_ERR_INVALID_ARGUMENT, "sparsity");
    spf_gen_options_init(&o);
    o.rows = -1;
    expect_error(&o, SPF_ERR_INVALID_ARGUMENT, "negative shape");
    o.rows = 4;
    o.cols = (int64_t)INT32_MAX + 1;
    expect_error(&o, SPF_ERR_OVERFLOW, "int32");
    spf_gen_options_init(&o);
    o.kind = (spf_generator)17;
    expect_error(&o, SPF_ERR_INVALID_ARGUMENT, "unknown generator");
    spf_gen_options_init(&o);
    o.kind = SPF_GEN_COLUMN_VECTOR;
    o.vector_length = 0;
    expect_error(&o, SPF_ERR_INVALID_ARGUMENT, "vector_length");
    spf_gen_options_init(&o);
    o.kind = SPF_GEN_VNM;
    o.cols = 30;
    expect_error(&o, SPF_ERR_INVALID_ARGUMENT, "divide cols");
    o.cols = 64;
    o.n = 5;
    o.m = 8;
    expect_error(&o, SPF_ERR_INVALID_ARGUMENT, "at most 4");
    o.n = 3;
    o.m = 2;
    expect_error(&o, SPF_ERR_INVALID_ARGUMENT, "at most 2");
    o.n = 0;
    expect_error(&o, SPF_ERR_INVALID_ARGUMENT, "n >= 1");
    spf_gen_options_init(&o);
    o.kind = SPF_GEN_RMAT;
    o.rmat_a = 0.6;
    o.rmat_b = 0.3;
    expect_error(&o, SPF_ERR_INVALID_ARGUMENT, "a + b + c <= 1");
    o.rmat_a = -0.1;
    expect_error(&o, SPF_ERR_INVALID_ARGUMENT, "R-MAT probabilities");
    spf_matrix *a = NULL;
    CHECK_STATUS(spf_matrix_generate(NULL, &a), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(spf_matrix_generate(&o, NULL), SPF_ERR_INVALID_ARGUMENT);
}

static int fail_after;
static void *failing_alloc(size_t n, void *u) { (void)u; return fail_after-- > 0 ? malloc(n ? n : 1) : NULL; }
static void *failing_realloc(void *p, size_t n, void *u) { (void)u; return fail_after-- > 0 ? realloc(p, n ? n : 1) : NULL; }
static void plain_free(void *p, void *u) { (void)u; free(p); }

/* Every allocation failure point of every generator gives OUT_OF_MEMORY. */
static void test_allocation_failures(void)
{
    spf_allocator failing = {failing_alloc, failing_realloc, plain_free, NULL};
    for (int kind = SPF_GEN_UNIFORM; kind <= SPF_GEN_RMAT; kind++) {
        spf_gen_options o = gen_options((spf_generator)kind, 32, 32, 0.9, 1);
        for (int k = 0; k < 8; k++) {
            fail_after = k;
            spf_set_allocator(&failing);
            spf_matrix *a = NULL;
            spf_status st = spf_matrix_generate(&o, &a);
            spf_set_allocator(NULL);
            CHECK_MSG(st == SPF_OK || st == SPF_ERR_OUT_OF_MEMORY, "kind %d, k=%d: status %d",
                      kind, k, (int)st);
            CHECK((st == SPF_OK) == (a != NULL));
            spf_matrix_free(a);
        }
    }
}

/* core/strays.h: crowded rows spread evenly, three in their fullest run,
 * every other nonzero kept; an empty row crowded in run 0. */
static void test_crowded_rows(void)
{
    spf_matrix *a = gen_vnm(64, 32, 1, 2, 4, 91), *c = NULL;
    CHECK_OK(matrix_crowd_rows(a, 4, &c));
    CHECK_OK(spf_matrix_validate(c));
    int64_t changed = 0;
    for (int64_t r = 0; r < 64; r++) {
        int64_t an = a->row_ptr[r + 1] - a->row_ptr[r], cn = c->row_ptr[r + 1] - c->row_ptr[r];
        int most = 0;
        for (int64_t q = 0; q < 8; q++) {
            int n = 0;
            for (int64_t e = c->row_ptr[r]; e < c->row_ptr[r + 1]; e++)
                n += c->col_idx[e] / 4 == q;
            most = n > most ? n : most;
        }
        int crowded_row = r % 16 == 0; /* rows 0, 16, 32, 48 */
        CHECK_MSG(crowded_row ? most == 3 && cn == an + 1 : most <= 2 && cn == an,
                  "row %lld: %lld nonzeros (from %lld), fullest run %d", (long long)r,
                  (long long)cn, (long long)an, most);
        /* the row's own nonzeros stay, values and all */
        for (int64_t e = a->row_ptr[r]; e < a->row_ptr[r + 1]; e++) {
            int kept = 0;
            for (int64_t x = c->row_ptr[r]; x < c->row_ptr[r + 1]; x++)
                kept |= c->col_idx[x] == a->col_idx[e] && c->values[x] == a->values[e];
            changed += !kept;
        }
    }
    CHECK_MSG(changed == 0, "%lld nonzeros lost", (long long)changed);
    spf_matrix_free(c);
    spf_matrix *empty = NULL;
    CHECK_OK(spf_matrix_create_csr(2, 8, 0, (int64_t[]){0, 0, 0}, NULL, NULL, 0, &empty));
    CHECK_OK(matrix_crowd_rows(empty, 1, &c));
    CHECK(c->nnz == 3 && c->col_idx[0] == 0 && c->col_idx[1] == 1 && c->col_idx[2] == 2 &&
          c->row_ptr[1] == 3);
    spf_matrix_free(c);
    CHECK_STATUS(matrix_crowd_rows(empty, 3, &c), SPF_ERR_INVALID_ARGUMENT);
    spf_matrix_free(empty);
    spf_matrix_free(a);
}

int main(int argc, char **argv)
{
    test_crowded_rows();
    test_uniform();
    test_magnitude();
    test_column_vector();
    test_vnm();
    test_rmat();
    test_empty_shapes();
    test_errors();
    test_allocation_failures();
    return check_report();
}
