/* Distributed SpMM's layout on the CPU (src/dist/partition.h): the
 * balanced row split against the exact optimum of a brute-force dynamic
 * programme on small matrices (its largest part's cost equal), its
 * invariants on R-MAT graphs (every row in one part, no empty part while
 * rows last; the largest part no costlier than an equal split by rows),
 * and every rank's exchange simulated end to end: each rank's rows of
 * A·B rebuilt as A_own·(its shard of B) + A_remote·(the rows the other
 * ranks' send lists give it, in rank order), against the reference, for
 * 1 to 7 ranks and B split evenly or as A's rows; the send and receive
 * counts of every pair agree; the one-pass volumes (dist_volume_make) and
 * the public layout (spf_dist_layout_*) say what the exchanges hold; in
 * layers (the 1.5-D algorithm) the volumes are each layer's own, as its
 * block of A's rows on its ranks alone gives them. Then the argument
 * errors. */
#include "test_util.h"

#include "core/matrix.h"
#include "dist/partition.h"

#include <stdlib.h>

static int64_t cost(const spf_matrix *a, int64_t from, int64_t to)
{
    return a->row_ptr[to] - a->row_ptr[from] + DIST_ROW_COST * (to - from);
}

/* The least largest-part cost of any split of a into `parts` contiguous
 * parts (empty ones allowed): best[p][i] over the first i rows. */
static int64_t brute_optimum(const spf_matrix *a, int parts)
{
    const int64_t m = a->rows;
    int64_t *best = malloc((size_t)(parts + 1) * (size_t)(m + 1) * sizeof *best);
    for (int64_t i = 0; i <= m; i++)
        best[i] = i == 0 ? 0 : INT64_MAX;
    for (int p = 1; p <= parts; p++)
        for (int64_t i = 0; i <= m; i++) {
            int64_t b = INT64_MAX;
            for (int64_t j = 0; j <= i; j++) {
                const int64_t prev = best[(p - 1) * (m + 1) + j];
                if (prev == INT64_MAX)
                    continue;
                const int64_t c = cost(a, j, i) > prev ? cost(a, j, i) : prev;
                b = c < b ? c : b;
            }
            best[p * (m + 1) + i] = b;
        }
    const int64_t out = best[parts * (m + 1) + m];
    free(best);
    return out;
}

static void check_split(const spf_matrix *a, int parts, const int64_t *row_start)
{
    CHECK(row_start[0] == 0 && row_start[parts] == a->rows);
    for (int p = 0; p < parts; p++) {
        CHECK(row_start[p + 1] >= row_start[p]);
        if (a->rows >= parts)
            CHECK_MSG(row_start[p + 1] > row_start[p], "part %d of %d empty (%lld rows)", p,
                      parts, (long long)a->rows);
    }
}

static void check_optimal_small(void)
{
    static const int part_counts[] = {1, 2, 3, 5};
    for (uint64_t seed = 1; seed <= 24; seed++) {
        const int64_t m = 5 + (int64_t)(seed * 7 % 30), k = 40;
        double *density = malloc((size_t)m * sizeof *density);
        for (int64_t i = 0; i < m; i++) /* skewed: a few long rows, some empty */
            density[i] = (i * seed) % 7 == 0 ? 0.9 : (i * seed) % 5 == 0 ? 0.0 : 0.1;
        spf_matrix *a = random_csr(m, k, density, seed);
        free(density);
        for (size_t t = 0; t < sizeof part_counts / sizeof *part_counts; t++) {
            const int parts = part_counts[t];
            int64_t row_start[8], largest;
            double mean;
            CHECK_OK(dist_partition_rows(a, parts, row_start));
            check_split(a, parts, row_start);
            dist_partition_cost(a, parts, row_start, &largest, &mean);
            CHECK_MSG(largest == brute_optimum(a, parts), "seed %llu, %d parts: largest part %lld, "
                      "optimum %lld", (unsigned long long)seed, parts, (long long)largest,
                      (long long)brute_optimum(a, parts));
        }
        spf_matrix_free(a);
    }
}

static void check_graphs(void)
{
    static const int part_counts[] = {2, 4, 8, 64};
    spf_matrix *a = gen_matrix(SPF_GEN_RMAT, 4096, 4096, 0.995, 7);
    for (size_t t = 0; a && t < sizeof part_counts / sizeof *part_counts; t++) {
        const int parts = part_counts[t];
        int64_t *row_start = malloc((size_t)(parts + 1) * sizeof *row_start);
        int64_t *even = malloc((size_t)(parts + 1) * sizeof *even);
        CHECK_OK(dist_partition_rows(a, parts, row_start));
        check_split(a, parts, row_start);
        for (int p = 0; p <= parts; p++)
            even[p] = a->rows * p / parts;
        int64_t balanced, by_rows;
        double mean;
        dist_partition_cost(a, parts, row_start, &balanced, &mean);
        dist_partition_cost(a, parts, even, &by_rows, &mean);
        CHECK_MSG(balanced <= by_rows && balanced >= mean, "%d parts: largest %lld, by rows "
                  "%lld, mean %.1f", parts, (long long)balanced, (long long)by_rows, mean);
        free(row_start);
        free(even);
    }
    spf_matrix_free(a);
}

/* Every rank's exchange for a split of B's rows, simulated. */
static void check_exchange(const spf_matrix *a, int ranks, const int64_t *row_start,
                           const int64_t *b_start, int64_t n, uint64_t seed)
{
    dist_exchange *x = calloc((size_t)ranks, sizeof *x);
    for (int r = 0; r < ranks; r++)
        CHECK_OK(dist_exchange_make(a, ranks, r, row_start, b_start, &x[r]));
    float *b = malloc((size_t)(a->cols * n > 0 ? a->cols * n : 1) * sizeof *b);
    spf_fill_uniform(b, a->cols * n, seed);
    double *want = malloc((size_t)(a->rows * n > 0 ? a->rows * n : 1) * sizeof *want);
    CHECK_OK(spf_reference_spmm_f64(a, n, b, want, NULL, 0, 1));
    for (int r = 0; r < ranks; r++) {
        const dist_exchange *e = &x[r];
        CHECK(e->row0 == row_start[r] && e->rows == row_start[r + 1] - row_start[r]);
        CHECK(e->own && spf_matrix_rows(e->own) == e->rows &&
              spf_matrix_cols(e->own) == b_start[r + 1] - b_start[r]);
        CHECK((e->remote != NULL) == (e->recv_rows > 0) && e->recv_count[r] == 0);
        int64_t total = spf_matrix_nnz(e->own) + (e->remote ? spf_matrix_nnz(e->remote) : 0);
        CHECK_EQ_I64(total, a->row_ptr[e->row0 + e->rows] - a->row_ptr[e->row0]);
        /* the receive buffer, from each sender's list for r, in rank order */
        float *recv = malloc((size_t)(e->recv_rows * n > 0 ? e->recv_rows * n : 1) * sizeof *recv);
        for (int s = 0; s < ranks; s++) {
            CHECK_MSG(x[s].send_count[r] == e->recv_count[s], "rank %d sends %lld rows to %d, "
                      "which expects %lld", s, (long long)x[s].send_count[r], r,
                      (long long)e->recv_count[s]);
            for (int64_t i = 0; i < e->recv_count[s] && i < x[s].send_count[r]; i++) {
                const int64_t row = b_start[s] + x[s].send_index[x[s].send_offset[r] + i];
                memcpy(recv + (e->recv_offset[s] + i) * n, b + row * n, (size_t)n * sizeof *b);
            }
        }
        double *got = calloc((size_t)(e->rows * n > 0 ? e->rows * n : 1), sizeof *got);
        double *part = malloc((size_t)(e->rows * n > 0 ? e->rows * n : 1) * sizeof *part);
        CHECK_OK(spf_reference_spmm_f64(e->own, n, b + b_start[r] * n, got, NULL, 0, 1));
        if (e->remote) {
            CHECK_OK(spf_reference_spmm_f64(e->remote, n, recv, part, NULL, 0, 1));
            for (int64_t i = 0; i < e->rows * n; i++)
                got[i] += part[i];
        }
        double worst = 0;
        for (int64_t i = 0; i < e->rows * n; i++) {
            const double d = fabs(got[i] - want[e->row0 * n + i]);
            worst = d > worst ? d : worst;
        }
        CHECK_MSG(worst < 1e-9, "%d ranks, rank %d: rows of A·B off by %g", ranks, r, worst);
        free(recv);
        free(got);
        free(part);
    }
    dist_volume v;
    const int group = 2; /* hosts of two GPUs */
    CHECK_OK(dist_volume_make(a, ranks, ranks, group, row_start, b_start, &v));
    for (int r = 0; v.own_nnz && r < ranks; r++) {
        int32_t peers = 0;
        int64_t far = 0;
        for (int s = 0; s < ranks; s++) {
            peers += x[r].recv_count[s] > 0;
            far += s / group != r / group ? x[r].recv_count[s] : 0;
        }
        CHECK(v.own_nnz[r] == spf_matrix_nnz(x[r].own) &&
              v.remote_nnz[r] == (x[r].remote ? spf_matrix_nnz(x[r].remote) : 0) &&
              v.recv_rows[r] == x[r].recv_rows && v.send_rows[r] == x[r].send_rows &&
              v.recv_peers[r] == peers && v.recv_rows_far[r] == far);
        spf_dist_layout *l = NULL;
        spf_dist_layout_info info = {.size = sizeof info};
        CHECK_OK(spf_dist_layout_create(a, ranks, r, row_start, b_start, &l));
        CHECK_OK(spf_dist_layout_get_info(l, &info));
        CHECK(info.rank == r && info.row0 == x[r].row0 && info.b_row0 == b_start[r] &&
              info.b_rows == b_start[r + 1] - b_start[r] && info.own_nnz == v.own_nnz[r] &&
              info.remote_nnz == v.remote_nnz[r] && info.recv_rows == v.recv_rows[r] &&
              info.send_rows == v.send_rows[r]);
        CHECK(spf_matrix_nnz(spf_dist_layout_own(l)) == info.own_nnz &&
              (spf_dist_layout_remote(l) != NULL) == (info.recv_rows > 0));
        int64_t *recv = malloc((size_t)ranks * sizeof *recv);
        int64_t *send = malloc((size_t)ranks * sizeof *send);
        int32_t *index = malloc((size_t)(info.send_rows + 1) * sizeof *index);
        CHECK_OK(spf_dist_layout_lists(l, recv, send, index));
        CHECK(memcmp(recv, x[r].recv_count, (size_t)ranks * sizeof *recv) == 0 &&
              memcmp(send, x[r].send_count, (size_t)ranks * sizeof *send) == 0 &&
              memcmp(index, x[r].send_index, (size_t)info.send_rows * sizeof *index) == 0);
        free(recv);
        free(send);
        free(index);
        spf_dist_layout_free(l);
    }
    dist_volume_free(&v);
    for (int r = 0; r < ranks; r++)
        dist_exchange_free(&x[r]);
    free(x);
    free(b);
    free(want);
}

static void check_exchanges(void)
{
    spf_matrix *graph = gen_matrix(SPF_GEN_RMAT, 512, 512, 0.98, 3);
    spf_matrix *wide = gen_matrix(SPF_GEN_UNIFORM, 97, 300, 0.95, 4);
    for (int ranks = 1; ranks <= 7; ranks++) {
        int64_t row_start[8], b_start[8];
        /* a graph: B's rows (its vertices' features) split as A's rows */
        CHECK_OK(dist_partition_rows(graph, ranks, row_start));
        check_exchange(graph, ranks, row_start, row_start, 5, 11 + (uint64_t)ranks);
        /* K ≠ M: B split evenly */
        CHECK_OK(dist_partition_rows(wide, ranks, row_start));
        for (int r = 0; r <= ranks; r++)
            b_start[r] = spf_matrix_cols(wide) * r / ranks;
        check_exchange(wide, ranks, row_start, b_start, 3, 21 + (uint64_t)ranks);
    }
    spf_matrix_free(graph);
    spf_matrix_free(wide);
}

/* Rows row0 .. row0 + rows - 1 of a, all its columns. */
static spf_matrix *row_block(const spf_matrix *a, int64_t row0, int64_t rows)
{
    const int64_t base = a->row_ptr[row0], nnz = a->row_ptr[row0 + rows] - base;
    spf_matrix *m = NULL;
    CHECK_OK(matrix_alloc(rows, a->cols, nnz, &m));
    for (int64_t i = 0; i <= rows; i++)
        m->row_ptr[i] = a->row_ptr[row0 + i] - base;
    memcpy(m->col_idx, a->col_idx + base, (size_t)nnz * sizeof *m->col_idx);
    memcpy(m->values, a->values + base, (size_t)nnz * sizeof *m->values);
    return m;
}

/* 6 ranks in layers of q: each layer's volumes are those of its block of
 * A's rows split over its q ranks alone, B split q ways. */
static void check_layers(void)
{
    enum { P = 6 };
    spf_matrix *graph = gen_matrix(SPF_GEN_RMAT, 512, 512, 0.98, 5);
    int64_t row_start[P + 1], b_start[P + 1], parts[P + 1];
    CHECK_OK(dist_partition_rows(graph, P, row_start));
    for (int q = 1; q <= P; q++) {
        if (P % q != 0)
            continue;
        CHECK_OK(dist_partition_rows(graph, q, b_start));
        dist_volume v, lv;
        CHECK_OK(dist_volume_make(graph, P, q, 1, row_start, b_start, &v));
        for (int layer = 0; layer < P / q; layer++) {
            const int64_t top = row_start[layer * q];
            for (int i = 0; i <= q; i++)
                parts[i] = row_start[layer * q + i] - top;
            spf_matrix *block = row_block(graph, top, parts[q]);
            CHECK_OK(dist_volume_make(block, q, q, 1, parts, b_start, &lv));
            for (int i = 0; i < q; i++) {
                const int r = layer * q + i;
                CHECK_MSG(v.own_nnz[r] == lv.own_nnz[i] && v.remote_nnz[r] == lv.remote_nnz[i] &&
                          v.recv_rows[r] == lv.recv_rows[i] &&
                          v.recv_rows_far[r] == lv.recv_rows_far[i] &&
                          v.send_rows[r] == lv.send_rows[i] && v.recv_peers[r] == lv.recv_peers[i],
                          "layers of %d, rank %d: its layer's volumes differ", q, r);
            }
            dist_volume_free(&lv);
            spf_matrix_free(block);
        }
        if (q == 1) /* B whole on every rank: nothing is exchanged */
            for (int r = 0; r < P; r++)
                CHECK(v.recv_rows[r] == 0 && v.send_rows[r] == 0 &&
                      v.own_nnz[r] == graph->row_ptr[row_start[r + 1]] -
                                          graph->row_ptr[row_start[r]]);
        dist_volume_free(&v);
    }
    spf_matrix_free(graph);
}

static void check_errors(void)
{
    spf_matrix *a = gen_matrix(SPF_GEN_UNIFORM, 10, 12, 0.5, 1);
    int64_t row_start[4] = {0, 5, 10, 10}, b_start[4] = {0, 4, 8, 12};
    dist_exchange x;
    CHECK_STATUS(dist_partition_rows(a, 0, row_start), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(dist_partition_rows(a, DIST_MAX_RANKS + 1, row_start), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(dist_exchange_make(a, 3, 3, row_start, b_start, &x), SPF_ERR_INVALID_ARGUMENT);
    row_start[3] = 9; /* does not reach the last row */
    CHECK_STATUS(dist_exchange_make(a, 3, 0, row_start, b_start, &x), SPF_ERR_INVALID_ARGUMENT);
    CHECK(strstr(spf_last_error(), "10 rows") != NULL);
    row_start[3] = 10;
    b_start[1] = 9; /* goes down */
    CHECK_STATUS(dist_exchange_make(a, 3, 0, row_start, b_start, &x), SPF_ERR_INVALID_ARGUMENT);
    dist_volume v;
    CHECK_STATUS(dist_volume_make(a, 3, 3, 1, row_start, b_start, &v), SPF_ERR_INVALID_ARGUMENT);
    row_start[3] = 10;
    CHECK_STATUS(dist_volume_make(a, 3, 3, 0, row_start, (const int64_t[]){0, 4, 8, 12}, &v),
                 SPF_ERR_INVALID_ARGUMENT);
    /* layers of 2 ranks do not divide 3 */
    CHECK_STATUS(dist_volume_make(a, 3, 2, 1, row_start, (const int64_t[]){0, 6, 12}, &v),
                 SPF_ERR_INVALID_ARGUMENT);
    spf_dist_layout *l = (spf_dist_layout *)&x; /* set to NULL by the failing create */
    CHECK_STATUS(spf_dist_layout_create(a, 3, 0, row_start, b_start, &l), SPF_ERR_INVALID_ARGUMENT);
    CHECK(l == NULL);
    spf_dist_layout_free(NULL);
    CHECK_STATUS(spf_partition_rows(NULL, 2, row_start), SPF_ERR_INVALID_ARGUMENT);
    spf_matrix_free(a);
}

int main(int argc, char **argv)
{
    check_optimal_small();
    check_graphs();
    check_exchanges();
    check_layers();
    check_errors();
    return check_report();
}
