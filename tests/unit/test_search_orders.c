/* The search's row orders (plan/row_orders.h): one LO-SpMM Algorithm 1
 * order per m1 of a configuration list, the identity for m1 = 1 and past
 * the schedule's tile limit, and the balance constraint's COV_row measured
 * on the order of each m1 (tiling.h's tile_problem.orders). */
#include "test_util.h"

#include "strategy/unrolled/reorder.h"
#include "strategy/unrolled/row_orders.h"
#include "strategy/unrolled/tiling.h"

#include <stdlib.h>
#include <string.h>

static int is_permutation(const int32_t *order, int64_t m)
{
    char *seen = calloc((size_t)m + 1, 1);
    int ok = seen != NULL;
    for (int64_t i = 0; ok && i < m; i++) {
        ok = order[i] >= 0 && order[i] < m && !seen[order[i]];
        if (ok)
            seen[order[i]] = 1;
    }
    free(seen);
    return ok;
}

/* Rows of uneven density, so that reordering changes the tiles. */
static spf_matrix *uneven_matrix(int64_t m, int64_t k, uint64_t seed)
{
    double *density = malloc((size_t)m * sizeof *density);
    for (int64_t i = 0; i < m; i++)
        density[i] = i % 7 == 3 ? 0.0 : 0.02 + 0.3 * (double)((i * 37) % 11) / 11.0;
    spf_matrix *a = random_csr(m, k, density, seed);
    free(density);
    return a;
}

static void test_orders(void)
{
    spf_matrix *a = uneven_matrix(300, 200, 11);
    tile_space s;
    CHECK_OK(tile_space_create(64, SPF_TUNE_SPACE_FULL, &s));
    row_orders o;
    CHECK_OK(row_orders_create(a, s.configs, s.count, 0, &o));
    CHECK_EQ_I64(o.count, 6); /* m1 ∈ {1, 2, 4, 8, 16, 32} */
    int ascending = 1;
    for (int i = 1; i < o.count; i++)
        ascending &= o.m1[i - 1] < o.m1[i];
    CHECK(ascending && o.m1[0] == 1 && o.m1[5] == 32);
    CHECK(o.order[0] == NULL && row_orders_find(&o, 1) == NULL); /* m1 = 1: the identity */
    int32_t *want = malloc(300 * sizeof *want);
    int moved = 0;
    for (int i = 1; i < o.count; i++) {
        CHECK_MSG(o.order[i] && is_permutation(o.order[i], 300), "m1 = %d: not a permutation",
                  (int)o.m1[i]);
        CHECK_OK(reorder_rows(a, o.m1[i], REORDER_NNZ_SLACK, want));
        CHECK_MSG(o.order[i] && memcmp(o.order[i], want, 300 * sizeof *want) == 0,
                  "m1 = %d: not reorder_rows's order", (int)o.m1[i]);
        CHECK(row_orders_find(&o, o.m1[i]) == o.order[i]);
        for (int64_t r = 0; o.order[i] && r < 300; r++)
            moved += o.order[i][r] != r;
    }
    CHECK_MSG(moved > 0, "no row moved in any order: the test matrix does not exercise reordering");
    CHECK(row_orders_find(&o, 3) == NULL && row_orders_find(NULL, 8) == NULL);

    /* tile_problem_row_order: the m1's order first, then row_order. */
    const int32_t *fixed = want;
    tile_problem p = {a, 64, fixed, &o};
    CHECK(tile_problem_row_order(&p, 8) == row_orders_find(&o, 8));
    CHECK(tile_problem_row_order(&p, 1) == fixed); /* identity slot: row_order stands */
    CHECK(tile_problem_row_order(&p, 5) == fixed);
    p.orders = NULL;
    CHECK(tile_problem_row_order(&p, 8) == fixed);

    /* COV_row of each m1 is its own order's: as if row_order were that order. */
    int differs = 0;
    for (int i = 1; i < o.count; i++) {
        tile_problem by_set = {a, 64, NULL, &o}, by_one = {a, 64, o.order[i], NULL},
                     plain = {a, 64, NULL, NULL};
        double c = tiling_row_cov(&by_set, o.m1[i]);
        CHECK_NEAR(c, tiling_row_cov(&by_one, o.m1[i]), 1e-15);
        differs += fabs(c - tiling_row_cov(&plain, o.m1[i])) > 1e-9;
    }
    CHECK_MSG(differs > 0, "reordering changed no COV_row");
    printf("%d of %d m1 values change COV_row when reordered\n", differs, o.count - 1);

    row_orders_free(&o);
    CHECK(o.count == 0 && o.m1 == NULL && o.order == NULL);
    row_orders_free(&o);
    row_orders_free(NULL);
    free(want);
    tile_space_free(&s);
    spf_matrix_free(a);
}

/* A list of one m1, repeated, gives one order; an empty list none. */
static void test_lists(void)
{
    spf_matrix *a = uneven_matrix(64, 50, 5);
    spf_kernel_config list[3] = {{16, 64, 1, 2, 1}, {16, 128, 1, 0, 2}, {16, 32, 1, 1, 4}};
    row_orders o;
    CHECK_OK(row_orders_create(a, list, 3, 1, &o));
    CHECK(o.count == 1 && o.m1[0] == 16 && o.order[0] != NULL);
    row_orders_free(&o);
    CHECK_OK(row_orders_create(a, list, 0, 1, &o));
    CHECK(o.count == 0 && row_orders_find(&o, 16) == NULL);
    row_orders_free(&o);
    list[1].m1 = 0;
    CHECK_STATUS(row_orders_create(a, list, 3, 1, &o), SPF_ERR_INVALID_ARGUMENT);
    CHECK_DETAIL("m1 = 0");
    CHECK(o.count == 0 && o.m1 == NULL);
    CHECK_STATUS(row_orders_create(NULL, list, 3, 1, &o), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(row_orders_create(a, NULL, 3, 1, &o), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(row_orders_create(a, list, 3, 1, NULL), SPF_ERR_INVALID_ARGUMENT);
    spf_matrix_free(a);
}

/* More tiles than a schedule takes (65535): no order, no error, and
 * Algorithm 1 is not run (it would take minutes at one tile per 2 rows). */
static void test_tile_limit(void)
{
    const int64_t m = 140000;
    double *density = malloc((size_t)m * sizeof *density);
    for (int64_t i = 0; i < m; i++)
        density[i] = 0.25;
    spf_matrix *a = random_csr(m, 8, density, 3);
    free(density);
    spf_kernel_config list[2] = {{2, 32, 1, 0, 1}, {4096, 32, 1, 0, 1}};
    row_orders o;
    CHECK_OK(row_orders_create(a, list, 2, 0, &o));
    CHECK(o.count == 2 && o.order[0] == NULL && o.order[1] != NULL); /* 70000 / 35 tiles */
    CHECK_MSG(strcmp(spf_last_error(), "") == 0, "left a detail: %s", spf_last_error());
    row_orders_free(&o);
    spf_matrix_free(a);
}

/* Every allocation failing in turn: out of memory, nothing leaked, out
 * zeroed. One thread: the counting allocator is not thread-safe. */
static void test_allocation_failure(void)
{
    spf_matrix *a = uneven_matrix(120, 90, 7);
    tile_space s;
    CHECK_OK(tile_space_create(64, SPF_TUNE_SPACE_COMPACT, &s));
    int failures = 0, leaks = 0, unzeroed = 0;
    for (int left = 0; left < 1000; left++) {
        budget b = {left, 0};
        spf_allocator al = budget_allocator(&b);
        spf_set_allocator(&al);
        row_orders o;
        spf_status st = row_orders_create(a, s.configs, s.count, 1, &o);
        if (st == SPF_OK)
            row_orders_free(&o);
        spf_set_allocator(NULL);
        if (st == SPF_OK)
            break;
        failures += st != SPF_ERR_OUT_OF_MEMORY;
        unzeroed += o.count != 0 || o.m1 != NULL || o.order != NULL;
        leaks += b.live != 0;
    }
    CHECK_MSG(failures == 0 && leaks == 0 && unzeroed == 0,
              "%d wrong statuses, %d leaks, %d outputs not zeroed", failures, leaks, unzeroed);
    tile_space_free(&s);
    spf_matrix_free(a);
}

int main(int argc, char **argv)
{
    test_orders();
    test_lists();
    test_tile_limit();
    test_allocation_failure();
    return check_report();
}
