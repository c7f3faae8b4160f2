/* What the structured strategy's tests share (tests/unit/test_sp_format.c,
 * tests/unit/test_sp_colvec.c, tests/gpu/test_structured.c): an odd
 * column-vector case and the check that a format reads back to its
 * matrix. Include after test_util.h. */
#ifndef SPF_TESTS_SP_CASES_H
#define SPF_TESTS_SP_CASES_H

#include "strategy/structured/sp_format.h"

/* 20 × 3 with empty rows: rows 0-7 use columns 0 and 2, rows 8-15 none,
 * rows 16-19 column 1 (column vectors, and 2:4 as well, which detection
 * takes first). One check. */
static inline spf_matrix *sp_case_k3_empty_rows(uint64_t seed)
{
    int64_t rp[21];
    int32_t ci[20];
    int64_t at = 0;
    rp[0] = 0;
    for (int r = 0; r < 20; r++) {
        if (r < 8)
            ci[at++] = 0, ci[at++] = 2;
        else if (r >= 16)
            ci[at++] = 1;
        rp[r + 1] = at;
    }
    spf_matrix *a = NULL;
    CHECK_OK(spf_matrix_create_csr(20, 3, at, rp, ci, NULL, seed, &a));
    return a;
}

/* Format f of a, read back as the kernels read it, equals a with its
 * values rounded to f's dtype, cell for cell. */
static inline void sp_case_check_readback(const char *label, const spf_matrix *a,
                                          const sp_format *f)
{
    const int64_t cells = spf_matrix_rows(a) * spf_matrix_cols(a);
    float *want = dense_rounded(a, f->dtype);
    float *got = malloc((size_t)(cells + 1) * sizeof *got);
    CHECK_OK(sp_format_to_dense(f, got));
    int64_t diff = 0;
    for (int64_t i = 0; i < cells; i++)
        diff += got[i] != want[i];
    CHECK_MSG(diff == 0, "%s %s: %lld cells read back differ", label, dtype_name(f->dtype),
              (long long)diff);
    free(want);
    free(got);
}

#endif
