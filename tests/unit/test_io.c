/* Readers and writers: read → write → read round trips in every format,
 * symmetric expansion, duplicates, .smtx values files, .npy pruning and
 * dtypes, atomic writes, and allocation failures while reading. */
#define _POSIX_C_SOURCE 200809L

#include "check.h"
#include "test_util.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmp_dir[4096];
static char corpus_dir[4096];

/* dir/name in one of a few rotating buffers, so that a call may take two. */
static const char *join(const char *dir, const char *name)
{
    static char path[4][8192];
    static int next;
    char *p = path[next++ % 4];
    CHECK(snprintf(p, sizeof path[0], "%s/%s", dir, name) < (int)sizeof path[0]);
    return p;
}

/* A scratch file name in the build folder (or /tmp). */
static const char *tmp_path(const char *name) { return join(tmp_dir, name); }

static const char *corpus(const char *name) { return join(corpus_dir, name); }

static int same_pattern(const spf_matrix *a, const spf_matrix *b)
{
    int64_t nnz = spf_matrix_nnz(a);
    return spf_matrix_rows(a) == spf_matrix_rows(b) && spf_matrix_cols(a) == spf_matrix_cols(b) &&
           nnz == spf_matrix_nnz(b) &&
           memcmp(spf_matrix_row_ptr(a), spf_matrix_row_ptr(b),
                  (size_t)(spf_matrix_rows(a) + 1) * sizeof(int64_t)) == 0 &&
           (nnz == 0 || memcmp(spf_matrix_col_idx(a), spf_matrix_col_idx(b),
                               (size_t)nnz * sizeof(int32_t)) == 0);
}

static int same_values(const spf_matrix *a, const spf_matrix *b)
{
    int64_t nnz = spf_matrix_nnz(a);
    return nnz == spf_matrix_nnz(b) &&
           (nnz == 0 || memcmp(spf_matrix_values(a), spf_matrix_values(b),
                               (size_t)nnz * sizeof(float)) == 0);
}

/* A random rows x cols COO matrix of about nnz entries (repeats summed),
 * values uniform in [-1, 1] with a few awkward floats mixed in. */
static spf_matrix *random_matrix(int64_t rows, int64_t cols, int64_t nnz, uint64_t seed)
{
    int32_t *r = malloc((size_t)nnz * sizeof *r + 1), *c = malloc((size_t)nnz * sizeof *c + 1);
    float *v = malloc((size_t)nnz * sizeof *v + 1), *u = malloc((size_t)(3 * nnz) * sizeof *u + 1);
    spf_fill_uniform(u, 3 * nnz, seed);
    for (int64_t i = 0; i < nnz; i++) {
        r[i] = (int32_t)((u[3 * i] + 1.0f) * 0.5f * (float)(rows - 1) + 0.5f);
        c[i] = (int32_t)((u[3 * i + 1] + 1.0f) * 0.5f * (float)(cols - 1) + 0.5f);
        v[i] = u[3 * i + 2];
    }
    const float awkward[] = {1.0f / 3.0f, -1e-40f /* subnormal */, 3.4028235e38f, 1.1754944e-38f,
                             -0.1f, 16777217.0f};
    for (int64_t i = 0; i < nnz && i < 6; i++)
        v[i] = awkward[i];
    spf_matrix *a = NULL;
    CHECK_OK(spf_matrix_create_coo(rows, cols, nnz, r, c, v, SPF_DUPLICATES_SUM, 0, &a));
    free(r);
    free(c);
    free(v);
    free(u);
    return a;
}

static spf_matrix *read_ok(const char *path, const spf_read_options *o)
{
    spf_matrix *a = NULL;
    CHECK_OK(spf_matrix_read(path, o, &a));
    return a;
}

static void test_roundtrip_mtx_npy(void)
{
    const int64_t shapes[][3] = {{37, 53, 400}, {1, 1, 1}, {200, 3, 500}, {5, 7, 0}};
    for (int s = 0; s < 4; s++) {
        spf_matrix *a = random_matrix(shapes[s][0], shapes[s][1], shapes[s][2], 11 + (uint64_t)s);
        CHECK_OK(spf_matrix_write(a, tmp_path("rt.mtx"), SPF_FORMAT_AUTO));
        spf_matrix *b = read_ok(tmp_path("rt.mtx"), NULL);
        CHECK(b && same_pattern(a, b) && same_values(a, b));
        /* the dense writer keeps no zeros, and random values hold none */
        CHECK_OK(spf_matrix_write(a, tmp_path("rt.npy"), SPF_FORMAT_NPY));
        spf_matrix *c = read_ok(tmp_path("rt.npy"), NULL);
        CHECK(c && same_pattern(a, c) && same_values(a, c));
        spf_matrix_free(a);
        spf_matrix_free(b);
        spf_matrix_free(c);
    }
}

static void test_roundtrip_smtx(void)
{
    spf_matrix *a = random_matrix(64, 96, 700, 5);
    CHECK_OK(spf_matrix_write(a, tmp_path("rt.smtx"), SPF_FORMAT_AUTO));
    spf_read_options o;
    spf_read_options_init(&o);
    o.seed = 99;
    spf_matrix *b = read_ok(tmp_path("rt.smtx"), &o);
    CHECK(b && same_pattern(a, b));
    /* without a values file: the seeded uniform stream */
    float *expect = malloc((size_t)spf_matrix_nnz(a) * sizeof *expect);
    spf_fill_uniform(expect, spf_matrix_nnz(a), 99);
    CHECK(b && memcmp(spf_matrix_values(b), expect, (size_t)spf_matrix_nnz(a) * sizeof *expect) == 0);
    free(expect);
    /* with one: the values exactly, in file order */
    write_values_npy(tmp_path("rt_values.npy"), spf_matrix_values(a), spf_matrix_nnz(a));
    o.values_path = tmp_path("rt_values.npy");
    spf_matrix *c = read_ok(tmp_path("rt.smtx"), &o);
    CHECK(c && same_pattern(a, c) && same_values(a, c));
    /* a values file of the wrong length names both files */
    write_values_npy(tmp_path("short_values.npy"), spf_matrix_values(a), spf_matrix_nnz(a) - 1);
    o.values_path = tmp_path("short_values.npy");
    spf_matrix *d = (spf_matrix *)1;
    CHECK_STATUS(spf_matrix_read(tmp_path("rt.smtx"), &o, &d), SPF_ERR_PARSE);
    CHECK(d == NULL);
    CHECK_DETAIL("rt.smtx: values file");
    CHECK_DETAIL("short_values.npy: holds");
    o.values_path = corpus("good_f32.npy"); /* 2-D */
    CHECK_STATUS(spf_matrix_read(tmp_path("rt.smtx"), &o, &d), SPF_ERR_UNSUPPORTED);
    spf_matrix_free(a);
    spf_matrix_free(b);
    spf_matrix_free(c);
}

/* The CSR of a corpus file must be exactly these entries (row-major). */
static void check_entries(const char *name, spf_duplicates dup, int64_t rows, int64_t nnz,
                          const int64_t *row_ptr, const int32_t *col, const float *val)
{
    spf_read_options o;
    spf_read_options_init(&o);
    o.duplicates = dup;
    spf_matrix *a = read_ok(corpus(name), &o);
    if (!a)
        return;
    CHECK_MSG(spf_matrix_rows(a) == rows && spf_matrix_nnz(a) == nnz, "%s: %lld rows, %lld nnz",
              name, (long long)spf_matrix_rows(a), (long long)spf_matrix_nnz(a));
    if (spf_matrix_nnz(a) == nnz) {
        CHECK_MSG(memcmp(spf_matrix_row_ptr(a), row_ptr, (size_t)(rows + 1) * 8) == 0, "%s", name);
        CHECK_MSG(memcmp(spf_matrix_col_idx(a), col, (size_t)nnz * 4) == 0, "%s", name);
        if (val)
            CHECK_MSG(memcmp(spf_matrix_values(a), val, (size_t)nnz * 4) == 0, "%s", name);
    }
    spf_matrix_free(a);
}

static void test_symmetric_expansion(void)
{
    /* lower triangle: (1,1) 2, (2,1) -1, (3,2) 0.5, (3,3) 4 */
    const int64_t sp[] = {0, 2, 4, 6};
    const int32_t sc[] = {0, 1, 0, 2, 1, 2};
    const float sv[] = {2.0f, -1.0f, -1.0f, 0.5f, 0.5f, 4.0f};
    check_entries("good_symmetric.mtx", SPF_DUPLICATES_REJECT, 3, 6, sp, sc, sv);
    /* skew: (2,1) 1.5 and (3,1) -2.5; mirrors negated */
    const int64_t kp[] = {0, 2, 3, 4};
    const int32_t kc[] = {1, 2, 0, 0};
    const float kv[] = {-1.5f, 2.5f, 1.5f, -2.5f};
    check_entries("good_skew.mtx", SPF_DUPLICATES_REJECT, 3, 4, kp, kc, kv);
    /* an entry of the upper triangle is mirrored like any other */
    const int64_t up[] = {0, 2, 3, 4};
    const int32_t uc[] = {1, 2, 0, 0};
    const float uv[] = {1.25f, -3.0f, 1.25f, -3.0f};
    check_entries("good_upper_symmetric.mtx", SPF_DUPLICATES_REJECT, 3, 4, up, uc, uv);
    /* a pattern file: the mirror carries the same random value */
    spf_matrix *p = read_ok(corpus("good_pattern_symmetric.mtx"), NULL);
    if (p) {
        const float *v = spf_matrix_values(p); /* (0,0) (0,1) (0,2) (1,0) (2,0) */
        CHECK_EQ_I64(spf_matrix_nnz(p), 5);
        CHECK(v[1] == v[3] && v[2] == v[4] && v[1] != v[2]);
    }
    spf_matrix_free(p);
}

static void test_duplicates(void)
{
    spf_matrix *a = (spf_matrix *)1;
    CHECK_STATUS(spf_matrix_read(corpus("duplicate.mtx"), NULL, &a), SPF_ERR_INVALID_MATRIX);
    CHECK(a == NULL);
    CHECK_DETAIL("duplicate.mtx:5: entry (2, 1) repeats the one on line 3");
    /* summed in file order: 1 + 4 */
    const int64_t dp[] = {0, 0, 1, 2};
    const int32_t dc[] = {0, 2};
    const float dv[] = {5.0f, 2.0f};
    check_entries("duplicate.mtx", SPF_DUPLICATES_SUM, 3, 2, dp, dc, dv);
    /* (2,1) and its mirror (1,2) both stored: summed into both positions */
    const int64_t mp[] = {0, 1, 2, 3};
    const int32_t mc[] = {1, 0, 2};
    const float mv[] = {5.0f, 5.0f, 2.0f};
    check_entries("symmetric_mirror_duplicate.mtx", SPF_DUPLICATES_SUM, 3, 3, mp, mc, mv);
}

static void test_npy_dtypes(void)
{
    /* float16, with a subnormal (2^-20) and the largest half (65504) */
    const int64_t hp[] = {0, 2, 3, 5};
    const int32_t hc[] = {1, 3, 1, 0, 3};
    const float hv[] = {1.5f, -2.0f, 0x1p-20f, 3.25f, -65504.0f};
    check_entries("good_f16.npy", SPF_DUPLICATES_REJECT, 3, 5, hp, hc, hv);
    /* float64 rounded to float32; 1e-50 underflows to an exact zero and is dropped */
    const int64_t dp[] = {0, 2, 2, 3};
    const int32_t dc[] = {1, 3, 3};
    const float dv[] = {(float)0.1, -2.0f, 0.5f};
    check_entries("good_f64.npy", SPF_DUPLICATES_REJECT, 3, 3, dp, dc, dv);
    const int64_t fp[] = {0, 2, 2, 4};
    const int32_t fc[] = {1, 3, 0, 3};
    const float fv[] = {1.5f, -2.0f, 3.25f, 0.5f};
    check_entries("good_f32.npy", SPF_DUPLICATES_REJECT, 3, 4, fp, fc, fv);
    check_entries("good_v2.npy", SPF_DUPLICATES_REJECT, 3, 4, fp, fc, fv);
    check_entries("good_native_order.npy", SPF_DUPLICATES_REJECT, 3, 4, fp, fc, fv);
}

/* Magnitude pruning keeps exactly round((1-s)·M·K) entries, the largest |w|,
 * ties to the earlier position. */
static void test_npy_pruning(void)
{
    spf_gen_options g;
    spf_gen_options_init(&g);
    g.rows = 96;
    g.cols = 80;
    g.sparsity = 0.0; /* dense: every magnitude competes */
    spf_matrix *dense = NULL;
    CHECK_OK(spf_matrix_generate(&g, &dense));
    CHECK_OK(spf_matrix_write(dense, tmp_path("prune.npy"), SPF_FORMAT_AUTO));
    spf_read_options o;
    spf_read_options_init(&o);
    const double sparsities[] = {0.0, 0.5, 0.9, 0.973, 0.99999};
    for (int s = 0; s < 5; s++) {
        o.npy_sparsity = sparsities[s];
        spf_matrix *a = read_ok(tmp_path("prune.npy"), &o);
        if (!a)
            continue;
        int64_t keep = llround((1.0 - sparsities[s]) * 96 * 80);
        CHECK_EQ_I64(spf_matrix_nnz(a), keep);
        /* the smallest kept magnitude is >= every dropped one */
        float min_kept = INFINITY, max_all = 0;
        for (int64_t k = 0; k < spf_matrix_nnz(a); k++)
            min_kept = fminf(min_kept, fabsf(spf_matrix_values(a)[k]));
        int64_t above = 0;
        for (int64_t k = 0; k < spf_matrix_nnz(dense); k++) {
            float w = fabsf(spf_matrix_values(dense)[k]);
            above += w >= min_kept;
            max_all = fmaxf(max_all, w);
        }
        CHECK_MSG(above == keep, "sparsity %g: %lld magnitudes >= the smallest kept, kept %lld",
                  sparsities[s], (long long)above, (long long)keep);
        spf_matrix_free(a);
    }
    spf_matrix_free(dense);
    /* ties: 12 values of equal magnitude keep the first positions */
    const int64_t rp[] = {0, 4, 8, 12};
    const int32_t ci[] = {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3};
    const float tv[] = {1, -1, 1, -1, -1, 1, 0.5f, 1, 1, 1, -1, 2};
    spf_matrix *t = NULL;
    CHECK_OK(spf_matrix_create_csr(3, 4, 12, rp, ci, tv, 0, &t));
    CHECK_OK(spf_matrix_write(t, tmp_path("ties.npy"), SPF_FORMAT_NPY));
    o.npy_sparsity = 0.5; /* keep 6: the 2, then the first five 1s */
    spf_matrix *a = read_ok(tmp_path("ties.npy"), &o);
    const int64_t ep[] = {0, 4, 5, 6};
    const int32_t ec[] = {0, 1, 2, 3, 0, 3};
    CHECK(a && spf_matrix_nnz(a) == 6 && memcmp(spf_matrix_row_ptr(a), ep, sizeof ep) == 0 &&
          memcmp(spf_matrix_col_idx(a), ec, sizeof ec) == 0);
    spf_matrix_free(a);
    spf_matrix_free(t);
    o.npy_sparsity = 1.0;
    CHECK_STATUS(spf_matrix_read(tmp_path("ties.npy"), &o, &a), SPF_ERR_INVALID_ARGUMENT);
    o.npy_sparsity = NAN;
    CHECK_STATUS(spf_matrix_read(tmp_path("ties.npy"), &o, &a), SPF_ERR_INVALID_ARGUMENT);
}

static void test_pattern_values_seeded(void)
{
    spf_read_options o;
    spf_read_options_init(&o);
    CHECK(o.format == SPF_FORMAT_AUTO && o.duplicates == SPF_DUPLICATES_REJECT && o.seed == 1 &&
          o.values_path == NULL && o.npy_sparsity < 0);
    o.seed = 7;
    spf_matrix *a = read_ok(corpus("good_pattern.mtx"), &o);
    spf_matrix *b = read_ok(corpus("good_pattern.mtx"), &o);
    o.seed = 8;
    spf_matrix *c = read_ok(corpus("good_pattern.mtx"), &o);
    CHECK(a && b && c && same_values(a, b) && !same_values(a, c));
    for (int64_t k = 0; a && k < spf_matrix_nnz(a); k++)
        CHECK(fabsf(spf_matrix_values(a)[k]) <= 1.0f);
    spf_matrix_free(a);
    spf_matrix_free(b);
    spf_matrix_free(c);
}

static void test_errors_and_atomic_write(void)
{
    spf_matrix *a = (spf_matrix *)1;
    CHECK_STATUS(spf_matrix_read(tmp_path("does_not_exist.mtx"), NULL, &a), SPF_ERR_IO);
    CHECK(a == NULL);
    CHECK_DETAIL("does_not_exist.mtx: cannot open for reading: No such file");
    CHECK_STATUS(spf_matrix_read(tmp_dir, NULL, &a), SPF_ERR_UNSUPPORTED);
    spf_read_options o;
    spf_read_options_init(&o);
    o.format = SPF_FORMAT_MTX; /* an explicit format beats the extension */
    CHECK_STATUS(spf_matrix_read(corpus("unknown.dat"), &o, &a), SPF_ERR_PARSE);
    CHECK_DETAIL("unknown.dat:1: expected the banner");
    CHECK_STATUS(spf_matrix_read(NULL, NULL, &a), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(spf_matrix_read(corpus("good.smtx"), NULL, NULL), SPF_ERR_INVALID_ARGUMENT);

    spf_matrix *m = random_matrix(10, 10, 30, 3);
    CHECK_STATUS(spf_matrix_write(m, tmp_path("no_such_dir/x.mtx"), SPF_FORMAT_AUTO), SPF_ERR_IO);
    CHECK_DETAIL("no_such_dir/x.mtx: cannot create");
    CHECK_STATUS(spf_matrix_write(m, tmp_path("x.txt"), SPF_FORMAT_AUTO), SPF_ERR_UNSUPPORTED);
    CHECK_STATUS(spf_matrix_write(NULL, tmp_path("x.mtx"), SPF_FORMAT_AUTO),
                 SPF_ERR_INVALID_ARGUMENT);
    /* a write replaces the old file whole and leaves no temporary behind */
    CHECK_OK(spf_matrix_write(m, tmp_path("atomic.smtx"), SPF_FORMAT_SMTX));
    CHECK_OK(spf_matrix_write(m, tmp_path("atomic.smtx"), SPF_FORMAT_SMTX));
    char tmp[8192];
    CHECK(snprintf(tmp, sizeof tmp, "%s.tmp.%ld", tmp_path("atomic.smtx"), (long)getpid()) <
          (int)sizeof tmp);
    CHECK(access(tmp, F_OK) != 0);
    spf_matrix *b = read_ok(tmp_path("atomic.smtx"), NULL);
    CHECK(b && same_pattern(m, b));
    spf_matrix_free(b);
    spf_matrix_free(m);
}

/* An allocator failing the n-th allocation from now on. */
static int alloc_countdown;
static void *failing_alloc(size_t size, void *user)
{
    (void)user;
    return alloc_countdown-- == 0 ? NULL : malloc(size ? size : 1);
}
static void *plain_realloc(void *p, size_t size, void *user) { (void)user; return realloc(p, size ? size : 1); }
static void plain_free(void *p, void *user) { (void)user; free(p); }

/* Every allocation of a read may fail: the read then reports out of memory
 * and leaves no matrix; with enough allocations it succeeds. */
static void test_allocation_failures(void)
{
    const char *files[] = {"good_symmetric.mtx", "good_pattern.mtx", "good.smtx",
                           "good_f16.npy"};
    spf_allocator failing = {failing_alloc, plain_realloc, plain_free, NULL};
    for (int f = 0; f < 4; f++) {
        spf_read_options o;
        spf_read_options_init(&o);
        o.npy_sparsity = f == 3 ? 0.5 : -1.0;
        int failures = 0;
        for (int n = 0; n < 50; n++) {
            alloc_countdown = n;
            spf_set_allocator(&failing);
            spf_matrix *a = (spf_matrix *)1;
            spf_status st = spf_matrix_read(corpus(files[f]), &o, &a);
            spf_set_allocator(NULL);
            if (st == SPF_OK) {
                spf_matrix_free(a);
                break;
            }
            failures++;
            CHECK_MSG(st == SPF_ERR_OUT_OF_MEMORY && a == NULL, "%s, allocation %d: %s", files[f],
                      n, spf_last_error());
            CHECK_MSG(strstr(spf_last_error(), files[f]) != NULL, "%s", spf_last_error());
        }
        CHECK_MSG(failures > 0 && failures < 50, "%s: %d failing reads", files[f], failures);
    }
}

/* The read limit: lowered by the option or $SPFORGE_READ_MAX_BYTES, raised
 * by either, off when negative; a tiny file declaring a huge shape is
 * refused by default before anything is allocated. */
static void test_read_limit(void)
{
    unsetenv("SPFORGE_READ_MAX_BYTES");
    spf_read_options o;
    spf_read_options_init(&o);
    CHECK(o.max_bytes == 0);
    spf_matrix *a = (spf_matrix *)1;
    const char *huge[] = {"huge_rows.mtx", "npy_huge_rows.npy"};
    for (int f = 0; f < 2; f++) {
        CHECK_STATUS(spf_matrix_read(corpus(huge[f]), NULL, &a), SPF_ERR_OUT_OF_MEMORY);
        CHECK_DETAIL("needs 17179869184 bytes, which would exceed the read limit of 4294967296");
        CHECK(a == NULL);
    }
    o.max_bytes = 10;
    CHECK_STATUS(spf_matrix_read(corpus("good_general.mtx"), &o, &a), SPF_ERR_OUT_OF_MEMORY);
    CHECK_DETAIL("good_general.mtx: reading the shape and entries the header declares needs ");
    CHECK_DETAIL("would exceed the read limit of 10 bytes");
    CHECK_STATUS(spf_matrix_read(corpus("good.smtx"), &o, &a), SPF_ERR_OUT_OF_MEMORY);
    CHECK_STATUS(spf_matrix_read(corpus("good_f32.npy"), &o, &a), SPF_ERR_OUT_OF_MEMORY);
    o.max_bytes = 1 << 20;
    CHECK_STATUS(spf_matrix_read(corpus("huge_rows.mtx"), &o, &a), SPF_ERR_OUT_OF_MEMORY);
    CHECK_DETAIL("would exceed the read limit of 1048576 bytes");

    CHECK(setenv("SPFORGE_READ_MAX_BYTES", "10", 1) == 0);
    CHECK_STATUS(spf_matrix_read(corpus("good_general.mtx"), NULL, &a), SPF_ERR_OUT_OF_MEMORY);
    CHECK_DETAIL("would exceed the read limit of 10 bytes");
    spf_matrix *b = read_ok(corpus("good_general.mtx"), &o); /* the option beats the variable */
    spf_matrix_free(b);
    o.max_bytes = -1;
    b = read_ok(corpus("good_general.mtx"), &o);
    spf_matrix_free(b);
    CHECK(setenv("SPFORGE_READ_MAX_BYTES", "1000000", 1) == 0);
    b = read_ok(corpus("good_general.mtx"), NULL);
    spf_matrix_free(b);
    CHECK(setenv("SPFORGE_READ_MAX_BYTES", "-1", 1) == 0);
    b = read_ok(corpus("good_f32.npy"), NULL);
    spf_matrix_free(b);
    CHECK(setenv("SPFORGE_READ_MAX_BYTES", "4k", 1) == 0);
    CHECK_STATUS(spf_matrix_read(corpus("good_general.mtx"), NULL, &a), SPF_ERR_INVALID_ARGUMENT);
    CHECK_DETAIL("$SPFORGE_READ_MAX_BYTES: expected an integer byte count");
    unsetenv("SPFORGE_READ_MAX_BYTES");
}

/* A FIFO (no writer: opening it for reading would block), a folder and the
 * devices are refused at once, as a matrix and as a values file. A hang is
 * the failure: the alarm in main ends the test. */
static void test_non_regular_inputs(void)
{
    char fifo_mtx[8192], fifo_npy[8192], dir_smtx[8192]; /* join's buffers rotate */
    snprintf(fifo_mtx, sizeof fifo_mtx, "%s", tmp_path("fifo.mtx"));
    snprintf(fifo_npy, sizeof fifo_npy, "%s", tmp_path("fifo.npy"));
    snprintf(dir_smtx, sizeof dir_smtx, "%s", tmp_path("folder.smtx"));
    unlink(fifo_mtx);
    unlink(fifo_npy);
    CHECK(mkfifo(fifo_mtx, 0600) == 0 && mkfifo(fifo_npy, 0600) == 0);
    CHECK(mkdir(dir_smtx, 0700) == 0 || errno == EEXIST);
    spf_read_options o;
    spf_read_options_init(&o);
    spf_matrix *a = (spf_matrix *)1;
    CHECK_STATUS(spf_matrix_read(fifo_mtx, NULL, &a), SPF_ERR_IO);
    CHECK_DETAIL("fifo.mtx: is a FIFO, expected a regular file");
    CHECK_STATUS(spf_matrix_read(dir_smtx, NULL, &a), SPF_ERR_IO);
    CHECK_DETAIL("folder.smtx: is a folder, expected a regular file");
    const spf_format formats[] = {SPF_FORMAT_MTX, SPF_FORMAT_SMTX, SPF_FORMAT_NPY};
    for (int f = 0; f < 3; f++) {
        o.format = formats[f];
        CHECK_STATUS(spf_matrix_read("/dev/null", &o, &a), SPF_ERR_IO);
        CHECK_DETAIL("/dev/null: is a character device, expected a regular file");
        CHECK_STATUS(spf_matrix_read("/dev/zero", &o, &a), SPF_ERR_IO);
        CHECK_DETAIL("/dev/zero: is a character device");
    }
    CHECK(a == NULL);
    o.format = SPF_FORMAT_AUTO;
    const char *values[] = {fifo_npy, dir_smtx, "/dev/zero", "/dev/null"};
    for (int v = 0; v < 4; v++) {
        o.values_path = values[v];
        CHECK_STATUS(spf_matrix_read(corpus("good.smtx"), &o, &a), SPF_ERR_IO);
        CHECK_DETAIL("good.smtx: values file: ");
        CHECK_DETAIL(", expected a regular file");
    }
    unlink(fifo_mtx);
    unlink(fifo_npy);
    rmdir(dir_smtx);
}

/* A path near PATH_MAX (nested folders): the detail still says where (the
 * line or byte) and what was expected; the path loses its middle. */
static void test_long_paths(void)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", tmp_dir);
    char name[201];
    memset(name, 'd', 200);
    name[200] = '\0';
    while (strlen(dir) + 202 + 40 < sizeof dir) {
        strcat(dir, "/");
        strcat(dir, name);
        CHECK(mkdir(dir, 0700) == 0 || errno == EEXIST);
    }
    char mtx[8192], smtx[8192], npy[8192];
    snprintf(mtx, sizeof mtx, "%s/bad.mtx", dir);
    snprintf(smtx, sizeof smtx, "%s/ok.smtx", dir);
    snprintf(npy, sizeof npy, "%s/bad.npy", dir);
    CHECK(strlen(mtx) > 3000);
    FILE *f = fopen(mtx, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 oops\n2 2 1\n", f);
        fclose(f);
    }
    f = fopen(smtx, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("2, 2, 1\n0 1 1\n0\n", f);
        fclose(f);
    }
    f = fopen(npy, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("\x93NUMPX", f);
        fclose(f);
    }
    spf_matrix *a = (spf_matrix *)1;
    CHECK_STATUS(spf_matrix_read(mtx, NULL, &a), SPF_ERR_PARSE);
    CHECK_DETAIL("/bad.mtx:3: expected value, got 'oops'");
    CHECK_DETAIL("...");
    CHECK(strncmp(spf_last_error(), tmp_dir, strlen(tmp_dir)) == 0);
    spf_read_options o;
    spf_read_options_init(&o);
    o.values_path = npy;
    CHECK_STATUS(spf_matrix_read(smtx, &o, &a), SPF_ERR_PARSE);
    CHECK_DETAIL("/ok.smtx: values file: ");
    CHECK_DETAIL("/bad.npy: byte 0: expected the .npy magic");
    mtx[strlen(mtx) - 7] = 'X'; /* a file that does not exist */
    CHECK_STATUS(spf_matrix_read(mtx, NULL, &a), SPF_ERR_IO);
    CHECK_DETAIL("/Xad.mtx: cannot open for reading: No such file");
    CHECK(a == NULL);
}

/* spf_matrix_write never writes through a link, whatever name an attacker
 * can predict, and works for names and paths as long as the system allows
 * (core/file.h); success leaves no temporary file beside the target. */
static void test_write_safety(void)
{
    spf_matrix *a = gen_matrix(SPF_GEN_UNIFORM, 6, 5, 0.5, 9);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", tmp_path("write-safety"));
    CHECK(mkdir(dir, 0700) == 0 || errno == EEXIST);
    char victim[8192], target[8192], planted[8192 + 32];
    snprintf(victim, sizeof victim, "%s/victim", dir);
    snprintf(target, sizeof target, "%s/out.mtx", dir);
    const unsigned char precious[] = "precious data";
    file_spit(victim, precious, sizeof precious);
    /* a link at the temporary name a per-process scheme would use, and one
     * at the target: neither may lead the write into the victim */
    snprintf(planted, sizeof planted, "%s.tmp.%ld", target, (long)getpid());
    unlink(planted);
    unlink(target);
    CHECK(symlink(victim, planted) == 0);
    CHECK(symlink(victim, target) == 0);
    int entries = dir_entry_count(dir);
    CHECK_OK(spf_matrix_write(a, target, SPF_FORMAT_AUTO));
    size_t size = 0;
    unsigned char *kept = file_slurp(victim, &size);
    CHECK(kept && size == sizeof precious && memcmp(kept, precious, size) == 0);
    free(kept);
    struct stat st;
    CHECK(lstat(target, &st) == 0 && S_ISREG(st.st_mode)); /* the link itself replaced */
    spf_matrix *b = read_ok(target, NULL);
    CHECK(b && same_pattern(a, b));
    spf_matrix_free(b);
    CHECK(dir_entry_count(dir) == entries); /* no temporary file left */
    unlink(planted);

    /* a file name of NAME_MAX bytes, and a path just under PATH_MAX */
    char name[256];
    memset(name, 'n', 251);
    memcpy(name + 251, ".mtx", 5);
    CHECK_OK(spf_matrix_write(a, join(dir, name), SPF_FORMAT_AUTO));
    b = read_ok(join(dir, name), NULL);
    CHECK(b && same_pattern(a, b));
    spf_matrix_free(b);
    char deep[4096];
    snprintf(deep, sizeof deep, "%s", dir);
    memset(name, 'p', 200);
    name[200] = '\0';
    while (strlen(deep) + 201 + 220 < 4090) {
        strcat(deep, "/");
        strcat(deep, name);
        CHECK(mkdir(deep, 0700) == 0 || errno == EEXIST);
    }
    size_t pad = 4090 - strlen(deep) - 1 - 4; /* "/" + base + ".npy": 4090 bytes */
    char *longest = malloc(4096);
    CHECK(longest != NULL && pad > 0 && pad < 250);
    if (longest) {
        int n = snprintf(longest, 4096, "%s/%.*s.npy", deep, (int)pad,
                         "qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq"
                         "qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq"
                         "qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq"
                         "qqqqqqqqqqqqqqqqqqqqqqqqq");
        CHECK(n == 4090);
        CHECK_OK(spf_matrix_write(a, longest, SPF_FORMAT_AUTO));
        b = read_ok(longest, NULL);
        CHECK(b && same_pattern(a, b));
        spf_matrix_free(b);
        free(longest);
    }
    spf_matrix_free(a);
}

int main(int argc, char **argv)
{
    const char *src = getenv("SPF_SOURCE_DIR"), *build = getenv("SPF_BUILD_DIR");
    if (!src)
        SKIP("SPF_SOURCE_DIR not set (run through ctest)");
    snprintf(corpus_dir, sizeof corpus_dir, "%s/tests/corpus", src);
    snprintf(tmp_dir, sizeof tmp_dir, "%s", build ? build : "/tmp");
    test_roundtrip_mtx_npy();
    test_roundtrip_smtx();
    test_symmetric_expansion();
    test_duplicates();
    test_npy_dtypes();
    test_npy_pruning();
    test_pattern_values_seeded();
    test_errors_and_atomic_write();
    test_allocation_failures();
    alarm(60); /* a read that blocks on a FIFO would hang: fail instead */
    test_non_regular_inputs();
    alarm(0);
    test_read_limit();
    test_long_paths();
    test_write_safety();
    return check_report();
}
