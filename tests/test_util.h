/* Matrices the tests share: generated ones and files read from the
 * extracted data folder (check_data_dir()). A helper that makes a matrix
 * checks that with one CHECK, so pass counts do not depend on the helper. */
#ifndef SPF_TESTS_TEST_UTIL_H
#define SPF_TESTS_TEST_UTIL_H

#include "check.h"
#include "core/dtype.h"
#include "core/rng.h"
#include "core/strays.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifdef SPF_HAVE_CUDA
#include <cuda_runtime_api.h>

/* A CUDA runtime call in a GPU test: one check, naming the call and error. */
#define CUDA_OK(call)                                                                      \
    do {                                                                                   \
        cudaError_t e_ = (call);                                                           \
        CHECK_MSG(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_));             \
    } while (0)
#endif

/* The generator defaults (spf_gen_options_init) with kind, shape,
 * sparsity and seed set; other fields (vector_length, n:m, R-MAT
 * quadrants) stay at their defaults for the caller to change. */
static inline spf_gen_options gen_options(spf_generator kind, int64_t rows, int64_t cols,
                                          double sparsity, uint64_t seed)
{
    spf_gen_options o;
    spf_gen_options_init(&o);
    o.kind = kind;
    o.rows = rows;
    o.cols = cols;
    o.sparsity = sparsity;
    o.seed = seed;
    return o;
}

/* A generated matrix (one check), or NULL if generation failed. */
static inline spf_matrix *gen_matrix(spf_generator kind, int64_t rows, int64_t cols,
                                     double sparsity, uint64_t seed)
{
    spf_gen_options o = gen_options(kind, rows, cols, sparsity, seed);
    spf_matrix *a = NULL;
    CHECK_OK(spf_matrix_generate(&o, &a));
    return a;
}

/* A V:N:M matrix from the generator (V = v, N:M = n:m; v = 1 is plain
 * N:M), one check; NULL if generation failed. */
static inline spf_matrix *gen_vnm(int64_t rows, int64_t cols, int v, int n, int m, uint64_t seed)
{
    spf_gen_options o = gen_options(SPF_GEN_VNM, rows, cols, 0, seed);
    o.vector_length = v, o.n = n, o.m = m;
    spf_matrix *a = NULL;
    CHECK_OK(spf_matrix_generate(&o, &a));
    return a;
}

/* a as a dense row-major float matrix (caller frees), its values rounded
 * to dtype. */
static inline float *dense_rounded(const spf_matrix *a, spf_dtype dtype)
{
    const int64_t m = spf_matrix_rows(a), k = spf_matrix_cols(a);
    const int64_t *rp = spf_matrix_row_ptr(a);
    const int32_t *ci = spf_matrix_col_idx(a);
    const float *v = spf_matrix_values(a);
    float *d = calloc((size_t)(m * k) + 1, sizeof *d);
    for (int64_t r = 0; r < m; r++)
        for (int64_t i = rp[r]; i < rp[r + 1]; i++)
            d[r * k + ci[i]] = v ? v[i] : 1.0f;
    dtype_round(dtype, d, m * k);
    return d;
}

/* Column vectors of l rows at sparsity (the generator's COLUMN_VECTOR),
 * one check; NULL if generation failed. */
static inline spf_matrix *gen_colvec(int64_t rows, int64_t cols, int l, double sparsity,
                                     uint64_t seed)
{
    spf_gen_options o = gen_options(SPF_GEN_COLUMN_VECTOR, rows, cols, sparsity, seed);
    o.vector_length = l;
    spf_matrix *a = NULL;
    CHECK_OK(spf_matrix_generate(&o, &a));
    return a;
}

/* a with its rows in a random order (shuffle) and `strays` nonzeros added
 * at random places that held none, drawn from seed; one check. */
static inline spf_matrix *shuffled_with_strays(const spf_matrix *a, int shuffle, int strays,
                                               uint64_t seed)
{
    const int64_t m = spf_matrix_rows(a), k = spf_matrix_cols(a);
    const int64_t *arp = spf_matrix_row_ptr(a);
    const int32_t *aci = spf_matrix_col_idx(a);
    const float *av = spf_matrix_values(a);
    rng r;
    rng_seed(&r, seed);
    float *d = calloc((size_t)(m * k + 1), sizeof *d);
    int64_t *perm = malloc((size_t)(m + 1) * sizeof *perm);
    for (int64_t i = 0; i < m; i++)
        perm[i] = i;
    for (int64_t i = m - 1; shuffle && i > 0; i--) {
        int64_t j = (int64_t)rng_below(&r, (uint64_t)i + 1), t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    for (int64_t i = 0; i < m; i++)
        for (int64_t e = arp[perm[i]]; e < arp[perm[i] + 1]; e++)
            d[i * k + aci[e]] = av ? av[e] : 1.0f;
    for (int s = 0; s < strays && m * k > 0; s++) {
        int64_t at = (int64_t)rng_below(&r, (uint64_t)(m * k));
        while (d[at] != 0.0f)
            at = (at + 1) % (m * k);
        d[at] = (float)(rng_uniform(&r) * 1.9 - 0.95) + 0.05f;
    }
    int64_t *rp = malloc((size_t)(m + 1) * sizeof *rp), nnz = 0;
    int32_t *ci = malloc((size_t)(m * k + 1) * sizeof *ci);
    float *val = malloc((size_t)(m * k + 1) * sizeof *val);
    rp[0] = 0;
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < k; j++)
            if (d[i * k + j] != 0.0f)
                ci[nnz] = (int32_t)j, val[nnz++] = d[i * k + j];
        rp[i + 1] = nnz;
    }
    spf_matrix *out = NULL;
    CHECK_OK(spf_matrix_create_csr(m, k, nnz, rp, ci, val, 0, &out));
    free(d), free(perm), free(rp), free(ci), free(val);
    return out;
}

/* a with `count` rows crowded (core/strays.h: a third nonzero in a run,
 * breaking 2:4 and V:2:M for those rows only). a is freed; one check. */
static inline spf_matrix *crowded(spf_matrix *a, int64_t count)
{
    spf_matrix *out = NULL;
    CHECK_OK(matrix_crowd_rows(a, count, &out));
    spf_matrix_free(a);
    return out;
}

/* The file rel (e.g. "dlmc/rn50/...smtx") under the data folder dir, with
 * the values of a pattern-only file drawn from seed (spf_read_options seed;
 * 1 is the default). One check; NULL if the read failed. */
static inline spf_matrix *data_matrix(const char *dir, const char *rel, uint64_t seed)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    spf_read_options o;
    spf_read_options_init(&o);
    o.seed = seed;
    spf_matrix *a = NULL;
    spf_status st = spf_matrix_read(path, &o, &a);
    CHECK_MSG(st == SPF_OK, "%s: %s (%s)", path, spf_status_string(st), spf_last_error());
    return a;
}

/* For a test case naming a data file: rel under the extracted data folder,
 * read with the default options, its shape stored in *rows and *cols. NULL
 * without extracted data (nothing checked, check_data_dir says so) or when
 * the read failed (one failed check). */
static inline spf_matrix *data_case_matrix(const char *rel, int64_t *rows, int64_t *cols)
{
    const char *dir = check_data_dir();
    if (!dir)
        return NULL;
    spf_matrix *a = data_matrix(dir, rel, 1);
    if (a) {
        *rows = spf_matrix_rows(a);
        *cols = spf_matrix_cols(a);
    }
    return a;
}

/* 1 when the folder at path exists and holds nothing but . and .. (the
 * compilers' temporary folders left clean). */
static inline int dir_is_empty(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return 0;
    int entries = 0;
    for (struct dirent *e; (e = readdir(d));)
        entries += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return entries == 0;
}

/* 3 × 1000 with one nonzero, 0.75 at row 1, column 998 (the last tile of
 * a row of tiles, the last panel): the kernel tests' single-nonzero case. */
static inline spf_matrix *one_nonzero_csr(void)
{
    int64_t rp[4] = {0, 0, 1, 1};
    int32_t ci[1] = {998};
    float v[1] = {0.75f};
    spf_matrix *a = NULL;
    CHECK_OK(spf_matrix_create_csr(3, 1000, 1, rp, ci, v, 0, &a));
    return a;
}

/* A random m×k CSR matrix whose row i keeps each column with probability
 * row_density[i] (0: an empty row, which draws nothing from the stream).
 * Values are uniform in ±[0.05, 1], never zero. One CHECK. */
static inline spf_matrix *random_csr(int64_t m, int64_t k, const double *row_density, uint64_t seed)
{
    rng r;
    rng_seed(&r, seed);
    int64_t *rp = malloc((size_t)(m + 1) * sizeof *rp);
    int32_t *ci = malloc((size_t)(m * k + 1) * sizeof *ci);
    float *val = malloc((size_t)(m * k + 1) * sizeof *val);
    int64_t nnz = 0;
    rp[0] = 0;
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < k && row_density[i] > 0; j++)
            if (rng_uniform(&r) < row_density[i]) {
                ci[nnz] = (int32_t)j;
                val[nnz++] = (float)(rng_uniform(&r) * 1.9 - 0.95) + 0.05f;
            }
        rp[i + 1] = nnz;
    }
    spf_matrix *a = NULL;
    CHECK_OK(spf_matrix_create_csr(m, k, nnz, rp, ci, val, 0, &a));
    free(rp);
    free(ci);
    free(val);
    return a;
}

/* 1500×3000 with a few long rows among short ones, as a power-law graph
 * has: rows 7 and 500 full (3000), row 900 at half (~1500), row 1200 at
 * ~1110 and row 1300 at ~930 (either side of the generic kernel's 1024,
 * where it starts cutting rows into pieces), every 97th row empty, the
 * rest ~6. */
static inline spf_matrix *matrix_long_rows(uint64_t seed)
{
    enum { ROWS = 1500, COLS = 3000 };
    double *density = malloc(ROWS * sizeof *density);
    for (int i = 0; i < ROWS; i++)
        density[i] = i % 97 == 0 ? 0.0 : 0.002;
    density[7] = density[500] = 1.0;
    density[900] = 0.5;
    density[1200] = 0.37;
    density[1300] = 0.31;
    spf_matrix *a = random_csr(ROWS, COLS, density, seed);
    free(density);
    return a;
}

/* A whole file into a new buffer (caller frees; *size its length), or
 * NULL if it cannot be read. */
static inline unsigned char *file_slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    long n = -1;
    *size = 0;
    if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0)
        buf = malloc((size_t)n + 1);
    if (buf)
        *size = fread(buf, 1, (size_t)n, f);
    if (f)
        fclose(f);
    return buf;
}

/* Replace a file's content with size bytes of buf (one CHECK). */
static inline void file_spit(const char *path, const unsigned char *buf, size_t size)
{
    FILE *f = fopen(path, "wb");
    int ok = f != NULL && fwrite(buf, 1, size, f) == size;
    if (f)
        ok = fclose(f) == 0 && ok;
    CHECK_MSG(ok, "cannot write %zu bytes to %s", size, path);
}


/* A 1-D float32 .npy of n values (a values file for an .smtx pattern),
 * written by hand: the library writes 2-D arrays only. */
static inline void write_values_npy(const char *path, const float *v, int64_t n)
{
    char dict[128];
    int len = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': "
                       "(%lld,), }", (long long)n);
    int header = 128 - 10;
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f)
        return;
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)header, 0};
    fwrite(pre, 1, 10, f);
    fprintf(f, "%s%*s\n", dict, header - len - 1, "");
    fwrite(v, sizeof *v, (size_t)n, f); /* the test hosts are little-endian */
    CHECK(fclose(f) == 0);
}


/* Entries of a folder other than . and .. (-1 if it cannot be opened):
 * tests check that a failed write leaves no temporary file behind. */
static inline int dir_entry_count(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

#endif
