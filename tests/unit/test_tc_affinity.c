/* Acc-SpMM's data-affinity row reordering (src/strategy/tc/affinity.h):
 * the order is a permutation with the empty rows last, the same on any
 * thread count; the permuted matrix holds row order[i] at i and permutes
 * back to the matrix; rows in shuffled clusters that share columns (square
 * and not) come back together, the CONDENSED tiles falling to near the
 * clusters' own; no order has more tiles than the rows' own with the
 * empty rows last (the guard), which is the identity where none is empty;
 * the graphs of the extracted data, when there, print their tiles before
 * and after; empty shapes, one row, only empty rows; bad input and every
 * allocation failure. */
#include "test_util.h"

#include "core/alloc.h"
#include "core/matrix.h"
#include "strategy/tc/affinity.h"
#include "strategy/tc/tc_format.h"

static int64_t condensed_tiles(const spf_matrix *a)
{
    tc_format f;
    CHECK_OK(tc_format_build(a, SPF_DTYPE_F16, TC_FORMAT_CONDENSED, 0, &f));
    int64_t tiles = f.tiles;
    tc_format_free(&f);
    return tiles;
}

/* The order of a on threads, checked: a permutation, the non-empty rows
 * first and the empty ones after them, ascending. Caller mem_frees it. */
static int32_t *checked_order(const char *label, const spf_matrix *a, int threads)
{
    int32_t *order = NULL;
    double s = -1;
    CHECK_OK(tc_affinity_order(a, threads, &order, &s));
    if (!order)
        return NULL;
    CHECK_MSG(s >= 0, "%s: %g seconds", label, s);
    unsigned char *seen = calloc((size_t)a->rows + 1, 1);
    int ok = 1, empty_seen = 0;
    int32_t last_empty = -1;
    for (int64_t i = 0; i < a->rows && ok; i++) {
        int32_t r = order[i];
        ok = r >= 0 && r < a->rows && !seen[r];
        if (!ok)
            break;
        seen[r] = 1;
        int empty = a->row_ptr[r + 1] == a->row_ptr[r];
        ok = empty ? r > last_empty : !empty_seen;
        if (empty)
            empty_seen = 1, last_empty = r;
    }
    CHECK_MSG(ok, "%s: not a permutation with the empty rows last, ascending", label);
    free(seen);
    return order;
}

/* Reordered (threads 0, 1 and 2 agree), permuted, checked row by row and
 * permuted back; the CONDENSED tiles before and after in *before, *after. */
static void check_matrix(const char *label, const spf_matrix *a, int64_t *before, int64_t *after)
{
    int32_t *order = checked_order(label, a, 2);
    int32_t *one = checked_order(label, a, 1), *all = checked_order(label, a, 0);
    if (!order || !one || !all)
        goto done;
    size_t bytes = (size_t)a->rows * sizeof *order;
    CHECK_MSG(!memcmp(order, one, bytes) && !memcmp(order, all, bytes),
              "%s: the order depends on the thread count", label);
    spf_matrix *p = NULL, *back = NULL;
    CHECK_OK(tc_permute_rows(a, order, &p));
    int32_t *inverse = malloc(bytes + 1);
    for (int64_t i = 0; i < a->rows; i++)
        inverse[order[i]] = (int32_t)i;
    int same = 1;
    for (int64_t i = 0; p && i < a->rows && same; i++) {
        int32_t r = order[i];
        int64_t n = a->row_ptr[r + 1] - a->row_ptr[r];
        same = p->row_ptr[i + 1] - p->row_ptr[i] == n &&
               !memcmp(p->col_idx + p->row_ptr[i], a->col_idx + a->row_ptr[r], (size_t)n * 4) &&
               !memcmp(p->values + p->row_ptr[i], a->values + a->row_ptr[r], (size_t)n * 4);
    }
    CHECK_MSG(same, "%s: a permuted row differs from its original", label);
    if (p)
        CHECK_OK(tc_permute_rows(p, inverse, &back));
    if (back)
        CHECK_MSG(back->nnz == a->nnz &&
                      !memcmp(back->row_ptr, a->row_ptr, (size_t)(a->rows + 1) * 8) &&
                      !memcmp(back->col_idx, a->col_idx, (size_t)a->nnz * 4) &&
                      !memcmp(back->values, a->values, (size_t)a->nnz * 4),
                  "%s: permuting back does not give the matrix", label);
    *before = condensed_tiles(a);
    *after = p ? condensed_tiles(p) : -1;
    free(inverse);
    spf_matrix_free(p);
    spf_matrix_free(back);
done:
    mem_free(order);
    mem_free(one);
    mem_free(all);
}

/* clusters × TC_TILE rows (the last short by `short_by`) over cols columns;
 * each cluster draws `width` columns at random, each of its rows keeps
 * each of them with probability 1/2 (at least one); the rows are then
 * shuffled, and every `empty_every`-th row of the result is empty (0:
 * none). cluster (or NULL): each row's cluster, rows of m int32. */
static spf_matrix *shuffled_clusters(int64_t clusters, int64_t short_by, int64_t cols,
                                     int width, int64_t empty_every, uint64_t seed,
                                     int32_t *cluster)
{
    rng r;
    rng_seed(&r, seed);
    int64_t m = clusters * TC_TILE - short_by, nnz = 0;
    int32_t *perm = malloc((size_t)m * sizeof *perm), *own = malloc((size_t)width * 4);
    int32_t *ri = malloc((size_t)(m * width) * 4), *ci = malloc((size_t)(m * width) * 4);
    for (int64_t i = 0; i < m; i++)
        perm[i] = (int32_t)i;
    for (int64_t i = m - 1; i > 0; i--) {
        int64_t j = (int64_t)rng_below(&r, (uint64_t)i + 1);
        int32_t t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    for (int64_t c = 0; c < clusters; c++) {
        for (int k = 0; k < width; k++) { /* distinct columns */
            int fresh;
            do {
                own[k] = (int32_t)rng_below(&r, (uint64_t)cols);
                fresh = 1;
                for (int q = 0; q < k; q++)
                    fresh &= own[q] != own[k];
            } while (!fresh);
        }
        for (int64_t i = c * TC_TILE; i < (c + 1) * TC_TILE && i < m; i++) {
            int32_t row = perm[i];
            if (cluster)
                cluster[row] = (int32_t)c;
            if (empty_every > 0 && row % empty_every == empty_every - 1)
                continue;
            int kept = 0;
            for (int k = 0; k < width; k++)
                if (rng_uniform(&r) < 0.5 || (k == width - 1 && !kept)) {
                    ri[nnz] = row, ci[nnz++] = own[k];
                    kept++;
                }
        }
    }
    spf_matrix *a = NULL;
    CHECK_OK(spf_matrix_create_coo(m, cols, nnz, ri, ci, NULL, SPF_DUPLICATES_REJECT, seed, &a));
    free(perm);
    free(own);
    free(ri);
    free(ci);
    return a;
}

/* The clusters come back together: along the order, the non-empty rows
 * change cluster not much more often than there are clusters (clusters
 * draw their columns independently, so some share a few and a row may
 * follow another cluster), and the tiles fall to those of contiguous
 * clusters. */
static void test_clusters(void)
{
    const struct {
        const char *label;
        int64_t clusters, short_by, cols;
        int width;
        int64_t empty_every;
    } cases[] = {
        {"256 clusters, square", 256, 0, 4096, 24, 0},
        {"250 clusters, 4000 x 2000", 250, 0, 2000, 20, 0},
        {"97 clusters, short last, 1544 x 50000", 97, 8, 50000, 32, 0},
        {"128 clusters, every 5th row empty", 128, 0, 2048, 16, 5},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t m = cases[i].clusters * TC_TILE - cases[i].short_by;
        int32_t *cluster = malloc((size_t)m * sizeof *cluster), *order = NULL;
        spf_matrix *a = shuffled_clusters(cases[i].clusters, cases[i].short_by, cases[i].cols,
                                          cases[i].width, cases[i].empty_every, 40 + i, cluster);
        if (!a)
            continue;
        int64_t before, after, changes = 0;
        check_matrix(cases[i].label, a, &before, &after);
        CHECK_OK(tc_affinity_order(a, 0, &order, NULL));
        for (int64_t k = 1; order && k < m; k++)
            changes += a->row_ptr[order[k] + 1] > a->row_ptr[order[k]] &&
                       cluster[order[k]] != cluster[order[k - 1]];
        /* contiguous clusters: a window meets at most 1 + ceil(15 / live
         * rows of a cluster) of them, each listing at most width columns */
        int64_t live = a->rows, per = TC_TILE, windows;
        if (cases[i].empty_every > 0) {
            live -= a->rows / cases[i].empty_every;
            per = TC_TILE - (TC_TILE + cases[i].empty_every - 1) / cases[i].empty_every - 1;
        }
        windows = (live + TC_TILE - 1) / TC_TILE;
        int64_t met = 1 + (TC_TILE - 1 + per - 1) / per;
        int64_t bound = windows * ((met * cases[i].width + TC_TILE - 1) / TC_TILE);
        printf("%s, %lld nonzeros: %lld tiles in row order, %lld reordered (contiguous "
               "clusters: at most %lld); %lld changes of cluster\n",
               cases[i].label, (long long)a->nnz, (long long)before, (long long)after,
               (long long)bound, (long long)changes);
        CHECK_MSG(changes <= cases[i].clusters + cases[i].clusters / 2,
                  "%s: %lld changes of cluster for %lld clusters", cases[i].label,
                  (long long)changes, (long long)cases[i].clusters);
        CHECK_MSG(after <= before / 3 && after <= bound,
                  "%s: %lld tiles reordered, %lld before, contiguous clusters at most %lld",
                  cases[i].label, (long long)after, (long long)before, (long long)bound);
        mem_free(order);
        free(cluster);
        spf_matrix_free(a);
    }
}

/* The guard: never more tiles than the rows' own order (empty rows last;
 * the band and the layer have none), on matrices already in a good order
 * (a band, a pruned layer) and on others. */
static void test_never_worse(void)
{
    int64_t m = 1000, w = 9, nnz = 0;
    int32_t *ri = malloc((size_t)(m * w) * 4), *ci = malloc((size_t)(m * w) * 4);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = i - w / 2; j <= i + w / 2; j++)
            if (j >= 0 && j < m)
                ri[nnz] = (int32_t)i, ci[nnz++] = (int32_t)j;
    spf_matrix *band = NULL;
    CHECK_OK(spf_matrix_create_coo(m, m, nnz, ri, ci, NULL, SPF_DUPLICATES_REJECT, 1, &band));
    free(ri);
    free(ci);
    spf_matrix *cases[] = {band, gen_matrix(SPF_GEN_MAGNITUDE, 300, 200, 0.9, 2),
                           gen_matrix(SPF_GEN_RMAT, 4096, 4096, 0.999, 3),
                           gen_matrix(SPF_GEN_UNIFORM, 700, 900, 0.99, 4)};
    const char *labels[] = {"band 1000, width 9", "magnitude 300x200", "rmat 4096", "uniform 700x900"};
    for (int i = 0; i < 4; i++) {
        if (!cases[i])
            continue;
        int64_t before, after;
        check_matrix(labels[i], cases[i], &before, &after);
        printf("%s: %lld tiles in row order, %lld reordered\n", labels[i], (long long)before,
               (long long)after);
        CHECK_MSG(after <= before, "%s: %lld tiles reordered, %lld before", labels[i],
                  (long long)after, (long long)before);
        spf_matrix_free(cases[i]);
    }
}

/* Graphs of the extracted data (skipped without it): tiles before and
 * after, never more after. */
static void test_real_graphs(void)
{
    const char *dir = check_data_dir();
    if (!dir)
        return;
    const char *files[] = {"cerespmm/cora.mtx", "cerespmm/citeseer.mtx", "cerespmm/pubmed.mtx",
                           "cerespmm/ca-HepTh.mtx", "cerespmm/lp_fit2p.mtx",
                           "graphdata/delaunay_n16.mtx"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        spf_matrix *a = data_matrix(dir, files[i], 1);
        if (!a)
            continue;
        int64_t before, after;
        double s = 0;
        int32_t *order = NULL;
        CHECK_OK(tc_affinity_order(a, 0, &order, &s));
        mem_free(order);
        check_matrix(files[i], a, &before, &after);
        printf("%s (%lldx%lld, %lld nonzeros): condensed tiles %lld -> %lld (%.3f), reordered "
               "in %.1f ms\n",
               files[i], (long long)a->rows, (long long)a->cols, (long long)a->nnz,
               (long long)before, (long long)after, before ? (double)after / (double)before : 0.0,
               1e3 * s);
        CHECK(after <= before);
        spf_matrix_free(a);
    }
}

static void test_edges(void)
{
    int64_t zeros[40] = {0};
    const int64_t shapes[][2] = {{0, 0}, {0, 7}, {9, 0}, {33, 21}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        spf_matrix *a = NULL;
        CHECK_OK(spf_matrix_create_csr(shapes[i][0], shapes[i][1], 0, zeros, NULL, NULL, 0, &a));
        int32_t *order = checked_order("no nonzeros", a, 0);
        for (int64_t r = 0; order && r < a->rows; r++) /* only empty rows: ascending */
            CHECK_MSG(order[r] == r, "no nonzeros %lldx%lld: order[%lld] = %d",
                      (long long)shapes[i][0], (long long)shapes[i][1], (long long)r,
                      (int)order[r]);
        spf_matrix *p = NULL;
        CHECK_OK(tc_permute_rows(a, order, &p));
        CHECK(p && p->rows == a->rows && p->cols == a->cols && p->nnz == 0);
        mem_free(order);
        spf_matrix_free(p);
        spf_matrix_free(a);
    }
    int64_t before, after;
    spf_matrix *one = gen_matrix(SPF_GEN_UNIFORM, 1, 1000, 0.9, 5);
    check_matrix("one row", one, &before, &after);
    CHECK(before == after);
    spf_matrix_free(one);
    spf_matrix *single = gen_matrix(SPF_GEN_UNIFORM, 1, 1, 0.0, 6);
    check_matrix("1x1", single, &before, &after);
    spf_matrix_free(single);
    spf_matrix *column = gen_matrix(SPF_GEN_UNIFORM, 100, 1, 0.5, 7); /* a hub column */
    check_matrix("one column", column, &before, &after);
    CHECK(after <= before);
    spf_matrix_free(column);
    /* a self-loop on every vertex and nothing else: every row alone */
    int64_t rp[6] = {0, 1, 2, 3, 4, 5};
    int32_t ci[5] = {0, 1, 2, 3, 4};
    spf_matrix *diag = NULL;
    CHECK_OK(spf_matrix_create_csr(5, 5, 5, rp, ci, NULL, 1, &diag));
    check_matrix("diagonal", diag, &before, &after);
    CHECK(after == before);
    spf_matrix_free(diag);
}

static void test_bad_input(void)
{
    spf_matrix *a = gen_matrix(SPF_GEN_UNIFORM, 20, 30, 0.8, 8), *p = NULL;
    int32_t *order = (int32_t *)&order;
    CHECK_STATUS(tc_affinity_order(NULL, 0, &order, NULL), SPF_ERR_INVALID_ARGUMENT);
    CHECK(order == NULL);
    CHECK_STATUS(tc_affinity_order(a, -1, &order, NULL), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(tc_affinity_order(a, 0, NULL, NULL), SPF_ERR_INVALID_ARGUMENT);
    CHECK_OK(tc_affinity_order(a, 0, &order, NULL));

    int32_t bad[20];
    memcpy(bad, order, sizeof bad);
    bad[7] = bad[3];
    p = (spf_matrix *)&p;
    CHECK_STATUS(tc_permute_rows(a, bad, &p), SPF_ERR_INVALID_ARGUMENT);
    CHECK_DETAIL("repeated");
    CHECK(p == NULL);
    bad[7] = 20;
    CHECK_STATUS(tc_permute_rows(a, bad, &p), SPF_ERR_INVALID_ARGUMENT);
    CHECK_DETAIL("order[7] = 20 is out of range");
    bad[7] = -1;
    CHECK_STATUS(tc_permute_rows(a, bad, &p), SPF_ERR_INVALID_ARGUMENT);
    CHECK_DETAIL("out of range");
    CHECK_STATUS(tc_permute_rows(a, NULL, &p), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(tc_permute_rows(NULL, order, &p), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(tc_permute_rows(a, order, NULL), SPF_ERR_INVALID_ARGUMENT);
    mem_free(order);
    spf_matrix_free(a);

    /* a bipartite graph of more vertices than int32 ids hold */
    int64_t rp[3] = {0, 0, 0};
    CHECK_OK(spf_matrix_create_csr(2, INT32_MAX, 0, rp, NULL, NULL, 0, &a));
    CHECK_STATUS(tc_affinity_order(a, 0, &order, NULL), SPF_ERR_OVERFLOW);
    CHECK_DETAIL("int32");
    CHECK(order == NULL);
    spf_matrix_free(a);
}

/* Every allocation failing in turn: SPF_ERR_OUT_OF_MEMORY, nothing handed
 * out, nothing leaked; once none fails, the order of a run that failed
 * nothing. One thread: the budget allocator counts without a lock. */
static void test_alloc_fail(void)
{
    spf_matrix *a = shuffled_clusters(8, 3, 300, 12, 7, 9, NULL), *p = NULL;
    int32_t *want = NULL;
    CHECK_OK(tc_affinity_order(a, 1, &want, NULL));
    int done[2] = {0, 0};
    for (int k = 0; k < 4096 && !(done[0] && done[1]); k++) {
        for (int f = 0; f < 2; f++) {
            if (done[f])
                continue;
            budget b = {k, 0};
            spf_allocator al = budget_allocator(&b);
            int32_t *got = NULL;
            spf_set_allocator(&al);
            spf_status st = f == 0 ? tc_affinity_order(a, 1, &got, NULL)
                                   : tc_permute_rows(a, want, &p);
            spf_set_allocator(NULL);
            CHECK_MSG(st == SPF_OK || st == SPF_ERR_OUT_OF_MEMORY, "k = %d: %s", k,
                      spf_last_error());
            CHECK_MSG(st == SPF_OK || (got == NULL && p == NULL), "k = %d: output on failure", k);
            if (st == SPF_OK && f == 0) {
                CHECK(!memcmp(got, want, (size_t)a->rows * sizeof *got));
                budget_free(got, &b);
            }
            if (st == SPF_OK && f == 1) {
                spf_set_allocator(&al);
                spf_matrix_free(p);
                spf_set_allocator(NULL);
                p = NULL;
            }
            CHECK_MSG(b.live == 0, "k = %d: %d allocations leaked", k, b.live);
            done[f] = st == SPF_OK;
        }
    }
    CHECK(done[0] && done[1]);
    mem_free(want);
    spf_matrix_free(a);
}

int main(int argc, char **argv)
{
    test_clusters();
    test_never_worse();
    test_real_graphs();
    test_edges();
    test_bad_input();
    test_alloc_fail();
    return check_report();
}
