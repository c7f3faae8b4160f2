/* The generated kernel's schedule, run step by step on the host
 * (schedule_execute_cpu) against a dense double reference: random and DLMC
 * patterns, permuted row orders, odd N, short last tiles, empty rows and
 * all-empty tiles, every v / ksplit / prefetch, bias and ReLU. */
#include "test_util.h"

#include "strategy/unrolled/schedule.h"
#include "core/rng.h"

#include <stdint.h>

/* A random m×k CSR matrix: each row keeps a column with probability
 * density; rows in [empty_from, empty_to) are empty. Values are uniform in
 * [-1, 1] and never zero. */
static spf_matrix *random_matrix(int64_t m, int64_t k, double density, int64_t empty_from,
                                 int64_t empty_to, uint64_t seed)
{
    double *p = malloc((size_t)m * sizeof *p);
    for (int64_t i = 0; i < m; i++)
        p[i] = i >= empty_from && i < empty_to ? 0.0 : density;
    spf_matrix *a = random_csr(m, k, p, seed);
    free(p);
    return a;
}

static void random_permutation(int32_t *p, int64_t m, uint64_t seed)
{
    rng r;
    rng_seed(&r, seed);
    for (int64_t i = 0; i < m; i++)
        p[i] = (int32_t)i;
    for (int64_t i = m - 1; i > 0; i--) {
        int64_t j = (int64_t)rng_below(&r, (uint64_t)i + 1);
        int32_t t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
}

/* The schedule's product against the dense double reference, element by
 * element, within fp32 accumulation error (relative to Σ|a·b|). */
static int run_case(const spf_matrix *a, const int32_t *order, int64_t n, spf_kernel_config cfg,
                    int with_bias, int relu, uint64_t seed)
{
    int64_t m = spf_matrix_rows(a), k = spf_matrix_cols(a);
    float *b = malloc((size_t)(k * n + 1) * sizeof *b);
    float *c = malloc((size_t)(m * n) * sizeof *c);
    float *bias = malloc((size_t)m * sizeof *bias);
    spf_fill_uniform(b, k * n, seed);
    spf_fill_uniform(bias, m, seed + 1);
    for (int64_t i = 0; i < m * n; i++)
        c[i] = NAN; /* poison: every element must be written */
    schedule s;
    spf_status st = schedule_create(a, order, n, &cfg, &s);
    CHECK_MSG(st == SPF_OK, "schedule_create: %s", spf_last_error());
    int bad = 0;
    if (st == SPF_OK) {
        CHECK_OK(schedule_execute_cpu(&s, b, c, with_bias ? bias : NULL, relu));
        const int64_t *rp = spf_matrix_row_ptr(a);
        const int32_t *ci = spf_matrix_col_idx(a);
        const float *val = spf_matrix_values(a);
        for (int64_t i = 0; i < m && !bad; i++)
            for (int64_t j = 0; j < n && !bad; j++) {
                double ref = with_bias ? bias[i] : 0.0, mag = fabs(ref);
                for (int64_t e = rp[i]; e < rp[i + 1]; e++) {
                    ref += (double)val[e] * b[(int64_t)ci[e] * n + j];
                    mag += fabs((double)val[e] * b[(int64_t)ci[e] * n + j]);
                }
                if (relu && ref < 0)
                    ref = 0;
                double got = c[i * n + j];
                if (!(fabs(got - ref) <= 1e-6 * mag + 1e-7)) {
                    bad = 1;
                    CHECK_MSG(0, "m1=%d n1=%d v=%d p=%d k=%d n=%lld: C[%lld][%lld] = %.9g, ref %.9g",
                              cfg.m1, cfg.n1, cfg.v, cfg.prefetch, cfg.ksplit, (long long)n,
                              (long long)i, (long long)j, got, ref);
                }
            }
        if (!bad)
            check_passed++;
        schedule_free(&s);
    }
    free(b);
    free(c);
    free(bias);
    return !bad;
}

/* Thread shapes that satisfy the block constraints: (n1, v, ksplit). */
static const int shapes[][3] = {{32, 1, 1}, {64, 2, 1}, {128, 4, 1}, {32, 1, 2}, {16, 1, 2},
                                {64, 4, 2}, {32, 4, 4}, {64, 2, 3}, {8, 1, 4}};
enum { SHAPES = sizeof shapes / sizeof shapes[0] };

static void test_random_sweep(void)
{
    /* 45 rows: not divisible by m1 = 4 or 8; rows 8..23 empty makes whole
     * tiles empty for m1 ≤ 8. */
    spf_matrix *a = random_matrix(45, 70, 0.12, 8, 24, 11);
    int32_t perm[45];
    random_permutation(perm, 45, 5);
    const int64_t ns[] = {1, 3, 49, 127, 256, 6, 132};
    const int m1s[] = {1, 4, 8, 13};
    int cases = 0;
    for (size_t in = 0; in < sizeof ns / sizeof ns[0]; in++)
        for (int sh = 0; sh < SHAPES; sh++) {
            spf_kernel_config cfg = {0, shapes[sh][0], shapes[sh][1], 0, shapes[sh][2]};
            if (cfg.v > 1 && ns[in] % cfg.v)
                continue;
            for (int im = 0; im < 4; im++)
                for (int p = 0; p <= 3; p += 3 - im % 2 * 2) {
                    cfg.m1 = m1s[im];
                    cfg.prefetch = p;
                    int variant = cases++;
                    run_case(a, variant % 2 ? perm : NULL, ns[in], cfg, variant % 3 != 0,
                             variant % 4 == 1, 100 + (uint64_t)variant);
                }
        }
    printf("random sweep: %d cases\n", cases);
    spf_matrix_free(a);
}

static void test_dlmc(void)
{
    const char *dir = check_data_dir();
    if (!dir)
        return;
    const char *files[] = {"dlmc/rn50/magnitude_pruning/0.9/bottleneck_1_block_group1_1_1.smtx",
                           "dlmc/transformer/magnitude_pruning/0.9/body_encoder_layer_0_self_"
                           "attention_multihead_attention_k_fully_connected.smtx"};
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        spf_matrix *a = data_matrix(dir, files[f], 7);
        if (!a)
            continue;
        int64_t m = spf_matrix_rows(a);
        int32_t *perm = malloc((size_t)m * sizeof *perm);
        random_permutation(perm, m, 9);
        run_case(a, NULL, 49, (spf_kernel_config){8, 32, 1, 2, 1}, 1, 1, 21);
        run_case(a, perm, 64, (spf_kernel_config){16, 64, 4, 1, 2}, 1, 0, 22);
        run_case(a, perm, 96, (spf_kernel_config){4, 64, 2, 3, 4}, 0, 1, 23);
        free(perm);
        spf_matrix_free(a);
    }
}

static void test_structure(void)
{
    spf_matrix *a = random_matrix(50, 300, 0.08, 16, 32, 3);
    spf_kernel_config cfg = {8, 64, 2, 2, 4};
    schedule s;
    CHECK_OK(schedule_create(a, NULL, 100, &cfg, &s));
    CHECK_EQ_I64(s.tile_count, 7);
    CHECK_EQ_I64(s.tiles[6].rows, 2);
    CHECK_EQ_I64(s.tiles[2].col_count, 0); /* rows 16..23 are empty */
    CHECK_EQ_I64(s.col_tiles, 2);
    CHECK(s.grid[0] == 2 && s.grid[1] == 7 && s.grid[2] == 1);
    CHECK(s.block[0] == 128 && s.block[1] == 1);
    CHECK_EQ_I64(s.shared_bytes, 3 * 8 * 64 * 4);
    const int64_t *rp = spf_matrix_row_ptr(a);
    const int32_t *ci = spf_matrix_col_idx(a);
    for (int32_t t = 0; t < s.tile_count; t++) {
        const sched_tile *tile = &s.tiles[t];
        /* nnc: distinct columns of the tile's rows; columns ascending */
        uint8_t seen[300] = {0};
        int64_t distinct = 0;
        for (int32_t r = tile->first_row; r < tile->first_row + tile->rows; r++)
            for (int64_t e = rp[r]; e < rp[r + 1]; e++)
                distinct += !seen[ci[e]]++;
        CHECK_EQ_I64(tile->col_count, distinct);
        int64_t sum = 0, largest = 0;
        for (int32_t c = 0; c < tile->col_count; c++) {
            const sched_column *col = &s.cols[tile->first_col + c];
            CHECK(c == 0 || col->col > s.cols[tile->first_col + c - 1].col);
            sum += col->count;
            largest = col->count > largest ? col->count : largest;
        }
        CHECK_EQ_I64(sum, tile->nnz);
        /* SparseRT §3.4 balance: each group within one column of its share */
        const int32_t *gs = &s.group_start[t * 5];
        CHECK(gs[0] == 0 && gs[4] == tile->col_count);
        for (int g = 0; g < 4; g++) {
            int64_t gnnz = 0;
            CHECK(gs[g] <= gs[g + 1]);
            for (int32_t c = gs[g]; c < gs[g + 1]; c++)
                gnnz += s.cols[tile->first_col + c].count;
            CHECK_MSG(llabs(gnnz * 4 - tile->nnz) <= 4 * 2 * largest + 4,
                      "tile %d group %d: %lld of %lld", t, g, (long long)gnnz, (long long)tile->nnz);
        }
    }
    CHECK(schedule_instructions(&s, 2, 1, 1) > spf_matrix_nnz(a) * 2);
    schedule_free(&s);
    spf_matrix_free(a);
}

static void test_config_errors(void)
{
    spf_matrix *a = random_matrix(10, 10, 0.3, 0, 0, 1);
    schedule s;
    struct {
        spf_kernel_config cfg;
        int64_t n;
        const char *field;
    } bad[] = {
        {{8, 128, 3, 0, 1}, 128, "v = 3"},
        {{0, 128, 4, 0, 1}, 128, "m1 = 0"},
        {{8, 128, 4, -1, 1}, 128, "prefetch = -1"},
        {{8, 128, 4, 0, 0}, 128, "ksplit = 0"},
        {{8, 130, 4, 0, 1}, 128, "n1 = 130"},
        {{8, 96, 4, 0, 1}, 128, "threads"},
        {{8, 2048, 1, 0, 1}, 128, "threads"},
        {{8, 128, 4, 0, 1}, 130, "does not divide n"},
        {{64, 256, 4, 0, 4}, 256, "shared memory"},
        {{8, 128, 4, 0, 1}, 0, "n = 0"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_STATUS(schedule_create(a, NULL, bad[i].n, &bad[i].cfg, &s), SPF_ERR_INVALID_ARGUMENT);
        CHECK_DETAIL(bad[i].field);
    }
    int32_t not_perm[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 8};
    spf_kernel_config ok = {4, 32, 1, 0, 1};
    CHECK_STATUS(schedule_create(a, not_perm, 32, &ok, &s), SPF_ERR_INVALID_ARGUMENT);
    CHECK_DETAIL("row_order[9]");
    spf_matrix_free(a);
}

int main(int argc, char **argv)
{
    test_config_errors();
    test_structure();
    test_random_sweep();
    test_dlmc();
    return check_report();
}
