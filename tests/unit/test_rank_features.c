/* The rank model's features (LO-SpMM §3.5 Table 1 and ours) against values
 * computed by hand on a small matrix, and against a brute-force recount of
 * the tiles on generated matrices. */
#include "check.h"
#include "strategy/unrolled/constraints.h"
#include "plan/rank_features.h"
#include "strategy/unrolled/row_orders.h"
#include "test_util.h"

/* 7×6 with two empty rows:
 *   r0 {0, 2}  r1 {}  r2 {2, 5}  r3 {1}  r4 {0, 1, 3, 4}  r5 {}  r6 {5}
 * 10 nonzeros; with m1 = 3 the last tile holds one row. */
static spf_matrix *small_matrix(void)
{
    const int64_t rp[] = {0, 2, 2, 4, 5, 9, 9, 10};
    const int32_t ci[] = {0, 2, 2, 5, 1, 0, 1, 3, 4, 5};
    spf_matrix *a = NULL;
    CHECK_OK(spf_matrix_create_csr(7, 6, 10, rp, ci, NULL, 3, &a));
    return a;
}

static void test_small_identity(void)
{
    spf_matrix *a = small_matrix();
    if (!a)
        return;
    tile_problem p = {.a = a, .n = 100, .row_order = NULL};
    rank_tiles t;
    CHECK_OK(rank_tiles_compute(&p, 3, &t));
    /* Tiles {r0, r1, r2}: columns {0, 2, 5}, 4 nonzeros; {r3, r4, r5}:
     * {0, 1, 3, 4}, 5; {r6}: {5}, 1. */
    CHECK_EQ_I64(t.tiles, 3);
    CHECK_EQ_I64(t.nnc_sum, 8);
    CHECK_EQ_I64(t.nnc_max, 4);
    CHECK_EQ_I64(t.nnz_max, 5);
    CHECK_NEAR(t.cov_row, sqrt(26.0) / 10.0, 1e-12); /* deviations 2/3, 5/3, −7/3 of 10/3 */

    spf_kernel_config cfg = {.m1 = 3, .n1 = 64, .v = 2, .prefetch = 1, .ksplit = 2};
    double x[RANK_FEATURE_COUNT];
    rank_features(&t, &p, &cfg, SPF_DTYPE_F32, x);
    CHECK(x[RANK_F_A_TILES] == 3);
    CHECK(x[RANK_F_B_TILES] == 2); /* ceil(100 / 64) */
    CHECK(x[RANK_F_BLOCKS] == 6);
    CHECK_NEAR(x[RANK_F_SPARSITY], 1.0 - 10.0 / 42.0, 1e-15);
    CHECK(x[RANK_F_NNC_SUM] == 8);
    CHECK(x[RANK_F_NNZ_MAX] == 5);
    CHECK(x[RANK_F_M1] == 3 && x[RANK_F_N1] == 64 && x[RANK_F_K] == 6);
    CHECK(x[RANK_F_M] == 7 && x[RANK_F_N] == 100 && x[RANK_F_NNZ] == 10);
    CHECK(x[RANK_F_V] == 2 && x[RANK_F_PREFETCH] == 1 && x[RANK_F_KSPLIT] == 2);
    CHECK(x[RANK_F_THREADS] == 64); /* 64 / 2 per group × 2 groups */
    CHECK(x[RANK_F_REGISTERS] == register_forecast(&cfg, SPF_DTYPE_F32));
    CHECK(x[RANK_F_REGISTERS] > 0);
    CHECK(x[RANK_F_DTYPE_BYTES] == 4);
    CHECK(x[RANK_F_NNC_MAX] == 4);
    CHECK_NEAR(x[RANK_F_ROW_NNZ_MEAN], 10.0 / 7.0, 1e-15);
    CHECK_NEAR(x[RANK_F_COV_ROW], sqrt(26.0) / 10.0, 1e-12);
    CHECK_NEAR(x[RANK_F_WASTE_COL], 0.28, 1e-15); /* 128 / 100 − 1 */
    CHECK(x[RANK_F_FMA_PER_THREAD] == 5);         /* 5 · 2 / 2 */
    CHECK(x[RANK_F_LOADS_PER_THREAD] == 2);       /* 4 / 2 */
    CHECK(x[RANK_F_WARPS] == 12);                 /* 6 blocks × 64 / 32 */

    /* The dtype reaches the forecast and the element size only. */
    double h[RANK_FEATURE_COUNT];
    rank_features(&t, &p, &cfg, SPF_DTYPE_F16, h);
    CHECK(h[RANK_F_DTYPE_BYTES] == 2);
    CHECK(h[RANK_F_REGISTERS] == register_forecast(&cfg, SPF_DTYPE_F16));
    int others_equal = 1;
    for (int f = 0; f < RANK_FEATURE_COUNT; f++)
        if (f != RANK_F_DTYPE_BYTES && f != RANK_F_REGISTERS && h[f] != x[f])
            others_equal = 0;
    CHECK(others_equal);
    spf_matrix_free(a);
}

static void test_small_row_order(void)
{
    spf_matrix *a = small_matrix();
    if (!a)
        return;
    /* Tiles {r4, r3, r0}: columns {0, 1, 2, 3, 4}, 7 nonzeros; {r2, r6, r1}:
     * {2, 5}, 3; {r5}: none. */
    int32_t order[] = {4, 3, 0, 2, 6, 1, 5};
    tile_problem p = {.a = a, .n = 32, .row_order = order};
    rank_tiles t;
    CHECK_OK(rank_tiles_compute(&p, 3, &t));
    CHECK_EQ_I64(t.tiles, 3);
    CHECK_EQ_I64(t.nnc_sum, 7);
    CHECK_EQ_I64(t.nnc_max, 5);
    CHECK_EQ_I64(t.nnz_max, 7);
    CHECK_NEAR(t.cov_row, sqrt(74.0) / 10.0, 1e-12); /* deviations 11/3, −1/3, −10/3 */
    CHECK_NEAR(t.cov_row, tiling_row_cov(&p, 3), 1e-12);
    /* The same order given for m1 = 3 through tile_problem.orders. */
    int32_t m1_three = 3, *orders_of[1] = {order};
    row_orders per_m1 = {.count = 1, .m1 = &m1_three, .order = orders_of};
    tile_problem q = {.a = a, .n = 32, .row_order = NULL, .orders = &per_m1};
    rank_tiles u;
    CHECK_OK(rank_tiles_compute(&q, 3, &u));
    CHECK(u.nnc_sum == 7 && u.nnc_max == 5 && u.nnz_max == 7 && u.cov_row == t.cov_row);
    /* m1 = 7: one tile, every column but none empty; m1 = 1: a tile per row. */
    CHECK_OK(rank_tiles_compute(&p, 7, &t));
    CHECK(t.tiles == 1 && t.nnc_sum == 6 && t.nnc_max == 6 && t.nnz_max == 10 && t.cov_row == 0);
    CHECK_OK(rank_tiles_compute(&p, 1, &t));
    CHECK(t.tiles == 7 && t.nnc_sum == 10 && t.nnc_max == 4 && t.nnz_max == 4);
    spf_kernel_config cfg = {.m1 = 1, .n1 = 32, .v = 1, .prefetch = 2, .ksplit = 1};
    double x[RANK_FEATURE_COUNT];
    rank_features(&t, &p, &cfg, SPF_DTYPE_BF16, x);
    CHECK(x[RANK_F_B_TILES] == 1 && x[RANK_F_BLOCKS] == 7 && x[RANK_F_WASTE_COL] == 0);
    CHECK(x[RANK_F_THREADS] == 32 && x[RANK_F_WARPS] == 7 && x[RANK_F_DTYPE_BYTES] == 2);
    spf_matrix_free(a);
}

static void test_errors(void)
{
    spf_matrix *a = small_matrix();
    if (!a)
        return;
    tile_problem p = {.a = a, .n = 32};
    rank_tiles t = {.m1 = 9};
    CHECK_STATUS(rank_tiles_compute(&p, 0, &t), SPF_ERR_INVALID_ARGUMENT);
    CHECK(t.m1 == 0); /* cleared on failure */
    CHECK_DETAIL("m1 = 0");
    CHECK_STATUS(rank_tiles_compute(NULL, 4, &t), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(rank_tiles_compute(&p, 4, NULL), SPF_ERR_INVALID_ARGUMENT);
    spf_matrix_free(a);
}

/* Tile sums recounted directly from the CSR arrays for every m1 of the
 * FULL space, on a matrix with per-row densities that vary (so COV_row and
 * NNZ_max are not trivial) and a shuffled row order. */
static void test_brute_force(void)
{
    spf_gen_options o = gen_options(SPF_GEN_MAGNITUDE, 203, 150, 0.9, 11);
    spf_matrix *a = NULL;
    CHECK_OK(spf_matrix_generate(&o, &a));
    if (!a)
        return;
    int64_t m = spf_matrix_rows(a);
    const int64_t *rp = spf_matrix_row_ptr(a);
    const int32_t *ci = spf_matrix_col_idx(a);
    int32_t order[203];
    for (int32_t i = 0; i < m; i++)
        order[i] = (int32_t)((i * 37) % m); /* 37 is prime to 203 */
    static const int32_t m1s[] = {1, 2, 4, 8, 16, 32};
    for (int s = 0; s < 2; s++) {
        tile_problem p = {.a = a, .n = 256, .row_order = s ? order : NULL};
        for (int j = 0; j < 6; j++) {
            int32_t m1 = m1s[j];
            rank_tiles t;
            CHECK_OK(rank_tiles_compute(&p, m1, &t));
            int64_t nnc_sum = 0, nnc_max = 0, nnz_max = 0;
            for (int64_t first = 0; first < m; first += m1) {
                unsigned char seen[150] = {0};
                int64_t nnc = 0, nnz = 0;
                for (int64_t i = first; i < first + m1 && i < m; i++) {
                    int64_t r = s ? order[i] : i;
                    nnz += rp[r + 1] - rp[r];
                    for (int64_t e = rp[r]; e < rp[r + 1]; e++)
                        nnc += !seen[ci[e]]++;
                }
                nnc_sum += nnc;
                nnc_max = nnc > nnc_max ? nnc : nnc_max;
                nnz_max = nnz > nnz_max ? nnz : nnz_max;
            }
            CHECK_MSG(t.tiles == (m + m1 - 1) / m1 && t.nnc_sum == nnc_sum &&
                          t.nnc_max == nnc_max && t.nnz_max == nnz_max,
                      "m1 %d order %d: tiles %d nnc_sum %lld/%lld nnc_max %lld/%lld nnz_max "
                      "%lld/%lld", (int)m1, s, (int)t.tiles, (long long)t.nnc_sum,
                      (long long)nnc_sum, (long long)t.nnc_max, (long long)nnc_max,
                      (long long)t.nnz_max, (long long)nnz_max);
            CHECK_NEAR(t.cov_row, tiling_row_cov(&p, m1), 1e-12);
        }
    }
    spf_matrix_free(a);
}

int main(int argc, char **argv)
{
    test_small_identity();
    test_small_row_order();
    test_errors();
    test_brute_force();
    return check_report();
}
