/* spf_matrix construction, COO conversion, validation and the error paths. */
#include "check.h"

#include "core/matrix.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void test_csr_roundtrip(void)
{
    const int64_t rp[] = {0, 2, 2, 3};
    const int32_t ci[] = {0, 3, 1};
    const float v[] = {1.5f, -2.0f, 0.25f};
    spf_matrix *a = NULL;
    CHECK_OK(spf_matrix_create_csr(3, 4, 3, rp, ci, v, 0, &a));
    CHECK_EQ_I64(spf_matrix_rows(a), 3);
    CHECK_EQ_I64(spf_matrix_cols(a), 4);
    CHECK_EQ_I64(spf_matrix_nnz(a), 3);
    CHECK(spf_matrix_values(a)[1] == -2.0f);
    int32_t r[3], c[3];
    float w[3];
    CHECK_OK(spf_matrix_to_coo(a, r, c, w));
    CHECK(r[0] == 0 && r[1] == 0 && r[2] == 2 && c[1] == 3 && w[2] == 0.25f);
    spf_matrix *b = NULL;
    CHECK_OK(spf_matrix_create_coo(3, 4, 3, r, c, w, SPF_DUPLICATES_REJECT, 0, &b));
    CHECK(memcmp(spf_matrix_row_ptr(a), spf_matrix_row_ptr(b), sizeof rp) == 0);
    CHECK(memcmp(spf_matrix_col_idx(a), spf_matrix_col_idx(b), sizeof ci) == 0);
    CHECK_OK(spf_matrix_validate(b));
    spf_matrix_free(a);
    spf_matrix_free(b);
}

static void test_csr_rejects(void)
{
    spf_matrix *a = (spf_matrix *)1;
    const int64_t rp[] = {0, 2, 3};
    const int32_t unsorted[] = {2, 1, 0};
    CHECK_STATUS(spf_matrix_create_csr(2, 3, 3, rp, unsorted, NULL, 1, &a), SPF_ERR_INVALID_MATRIX);
    CHECK(a == NULL);
    CHECK_DETAIL("row 0, entry 1");
    const int32_t dup[] = {1, 1, 0};
    CHECK_STATUS(spf_matrix_create_csr(2, 3, 3, rp, dup, NULL, 1, &a), SPF_ERR_INVALID_MATRIX);
    CHECK_DETAIL("repeats");
    const int32_t range[] = {0, 1, 3};
    CHECK_STATUS(spf_matrix_create_csr(2, 3, 3, rp, range, NULL, 1, &a), SPF_ERR_INVALID_MATRIX);
    CHECK_DETAIL("out of range");
    const int64_t bad_end[] = {0, 2, 2};
    CHECK_STATUS(spf_matrix_create_csr(2, 3, 3, bad_end, range, NULL, 1, &a), SPF_ERR_INVALID_MATRIX);
    CHECK_STATUS(spf_matrix_create_csr(-1, 3, 0, rp, range, NULL, 1, &a), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(spf_matrix_create_csr((int64_t)1 << 31, 3, 0, rp, range, NULL, 1, &a), SPF_ERR_OVERFLOW);
    CHECK_STATUS(spf_matrix_create_csr(2, 3, 3, rp, range, NULL, 1, NULL), SPF_ERR_INVALID_ARGUMENT);
}

/* A matrix past spf_matrix_create_csr's grain is checked and copied in row
 * ranges on several threads: the copy is whole, and of several faults the
 * message names the first row's, as the one-thread check does. */
static void test_csr_in_ranges(void)
{
    enum { ROWS = 3000, COLS = 2048, PER_ROW = 1000 };
    const int64_t nnz = (int64_t)ROWS * PER_ROW;
    int64_t *rp = malloc((ROWS + 1) * sizeof *rp);
    int32_t *ci = malloc((size_t)nnz * sizeof *ci);
    float *v = malloc((size_t)nnz * sizeof *v);
    CHECK(rp && ci && v);
    if (!rp || !ci || !v)
        goto done;
    for (int64_t r = 0; r <= ROWS; r++)
        rp[r] = r * PER_ROW;
    for (int64_t e = 0; e < nnz; e++)
        ci[e] = (int32_t)(2 * (e % PER_ROW) + (e / PER_ROW) % 2), v[e] = (float)(e % 977) - 488;
    spf_matrix *a = NULL;
    CHECK_OK(spf_matrix_create_csr(ROWS, COLS, nnz, rp, ci, v, 0, &a));
    if (a) {
        CHECK(memcmp(a->row_ptr, rp, (ROWS + 1) * sizeof *rp) == 0);
        CHECK(memcmp(a->col_idx, ci, (size_t)nnz * sizeof *ci) == 0);
        CHECK(memcmp(a->values, v, (size_t)nnz * sizeof *v) == 0);
        spf_matrix_free(a);
    }
    v[(int64_t)2900 * PER_ROW + 5] = NAN;
    CHECK_STATUS(spf_matrix_create_csr(ROWS, COLS, nnz, rp, ci, v, 0, &a), SPF_ERR_INVALID_MATRIX);
    CHECK(a == NULL);
    CHECK_DETAIL("row 2900, column 10: value NaN");
    int32_t saved = ci[(int64_t)1500 * PER_ROW + 7];
    ci[(int64_t)1500 * PER_ROW + 7] = 0;
    CHECK_STATUS(spf_matrix_create_csr(ROWS, COLS, nnz, rp, ci, v, 0, &a), SPF_ERR_INVALID_MATRIX);
    CHECK_DETAIL("row 1500, entry 1500007");
    ci[(int64_t)1500 * PER_ROW + 7] = saved;
    rp[201] = rp[200] - 1;
    CHECK_STATUS(spf_matrix_create_csr(ROWS, COLS, nnz, rp, ci, v, 0, &a), SPF_ERR_INVALID_MATRIX);
    CHECK_DETAIL("row 200: row_ptr");
done:
    free(rp);
    free(ci);
    free(v);
}

static void test_coo_duplicates(void)
{
    const int32_t r[] = {1, 0, 1};
    const int32_t c[] = {2, 0, 2};
    const float v[] = {1.0f, 3.0f, 0.5f};
    spf_matrix *a = NULL;
    CHECK_STATUS(spf_matrix_create_coo(2, 3, 3, r, c, v, SPF_DUPLICATES_REJECT, 0, &a),
                 SPF_ERR_INVALID_MATRIX);
    CHECK_DETAIL("(1, 2)");
    CHECK_OK(spf_matrix_create_coo(2, 3, 3, r, c, v, SPF_DUPLICATES_SUM, 0, &a));
    CHECK_EQ_I64(spf_matrix_nnz(a), 2);
    CHECK(spf_matrix_values(a)[1] == 1.5f);
    spf_matrix_free(a);
    const int32_t out_r[] = {2};
    CHECK_STATUS(spf_matrix_create_coo(2, 3, 1, out_r, c, v, SPF_DUPLICATES_SUM, 0, &a),
                 SPF_ERR_INVALID_MATRIX);
}

static void test_random_values_seeded(void)
{
    const int64_t rp[] = {0, 3};
    const int32_t ci[] = {0, 1, 2};
    spf_matrix *a = NULL, *b = NULL;
    CHECK_OK(spf_matrix_create_csr(1, 3, 3, rp, ci, NULL, 42, &a));
    CHECK_OK(spf_matrix_create_csr(1, 3, 3, rp, ci, NULL, 42, &b));
    CHECK(memcmp(spf_matrix_values(a), spf_matrix_values(b), 3 * sizeof(float)) == 0);
    int distinct = spf_matrix_values(a)[0] != spf_matrix_values(a)[1];
    CHECK(distinct);
    for (int i = 0; i < 3; i++)
        CHECK(spf_matrix_values(a)[i] >= -1.0f && spf_matrix_values(a)[i] <= 1.0f);
    spf_matrix_free(a);
    spf_matrix_free(b);
}

/* NaN and infinities are refused by both constructors, by validate after
 * an edit in place, and when summed duplicates overflow; the detail names
 * the (row, column). */
static void test_non_finite_values(void)
{
    const int64_t rp[] = {0, 1, 3};
    const int32_t ci[] = {2, 0, 1};
    const float bad[][3] = {{1.0f, NAN, 2.0f}, {1.0f, 2.0f, INFINITY}, {-INFINITY, 1.0f, 2.0f}};
    const char *detail[] = {"row 1, column 0: value NaN", "row 1, column 1: value inf",
                            "row 0, column 2: value -inf"};
    spf_matrix *a = (spf_matrix *)1;
    for (int t = 0; t < 3; t++) {
        CHECK_STATUS(spf_matrix_create_csr(2, 3, 3, rp, ci, bad[t], 0, &a), SPF_ERR_INVALID_MATRIX);
        CHECK(a == NULL);
        CHECK_DETAIL(detail[t]);
    }
    const int32_t r[] = {1, 1, 0};
    CHECK_STATUS(spf_matrix_create_coo(2, 3, 3, r, ci, bad[0], SPF_DUPLICATES_SUM, 0, &a),
                 SPF_ERR_INVALID_MATRIX);
    CHECK_DETAIL("row 1, column 0: value NaN");
    const int32_t same_r[] = {0, 0}, same_c[] = {1, 1};
    const float huge[] = {3e38f, 3e38f};
    CHECK_STATUS(spf_matrix_create_coo(1, 2, 2, same_r, same_c, huge, SPF_DUPLICATES_SUM, 0, &a),
                 SPF_ERR_INVALID_MATRIX);
    CHECK_DETAIL("row 0, column 1: the sum of duplicates inf");

    const float good[] = {1.0f, 2.0f, 3.0f};
    CHECK_OK(spf_matrix_create_csr(2, 3, 3, rp, ci, good, 0, &a));
    a->values[1] = NAN;
    CHECK_STATUS(spf_matrix_validate(a), SPF_ERR_INVALID_MATRIX);
    CHECK_DETAIL("row 1, column 0: value NaN");
    spf_matrix_free(a);
}

/* Every allocation failure point returns OUT_OF_MEMORY, never crashes. */
static void test_allocation_failures(void)
{
    const int32_t r[] = {1, 0, 1};
    const int32_t c[] = {2, 0, 1};
    for (int k = 0; k < 8; k++) {
        budget b = {k, 0};
        spf_allocator failing = budget_allocator(&b);
        spf_set_allocator(&failing);
        spf_matrix *a = NULL;
        spf_status st = spf_matrix_create_coo(2, 3, 3, r, c, NULL, SPF_DUPLICATES_REJECT, 1, &a);
        spf_set_allocator(NULL);
        CHECK_MSG(st == SPF_OK || st == SPF_ERR_OUT_OF_MEMORY, "k=%d status %d", k, (int)st);
        CHECK((st == SPF_OK) == (a != NULL));
        spf_matrix_free(a);
        CHECK_MSG(st == SPF_OK || b.live == 0, "k=%d: %d allocations leaked", k, b.live);
    }
}

int main(int argc, char **argv)
{
    test_csr_roundtrip();
    test_csr_rejects();
    test_csr_in_ranges();
    test_coo_duplicates();
    test_random_values_seeded();
    test_non_finite_values();
    test_allocation_failures();
    return check_report();
}
