/* Matrices the tests share: generated ones and files read from the
 * extracted data folder (check_data_dir()). A helper that makes a matrix
 * checks that with one CHECK, so pass counts do not depend on the helper. */
#ifndef SPF_TESTS_TEST_UTIL_H
#define SPF_TESTS_TEST_UTIL_H

#include "check.h"

#include <stdint.h>

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

#endif
