/* The tile space and its three constraints (LO-SpMM §3.1–3.4) on cases
 * whose answer is known by hand, space_reduce's counts, adjustable
 * thresholds and options, errors; then the counts after each constraint on
 * the sparsert20 shapes at 0.9 and on DLMC layers (when extracted). */
#include "test_util.h"

#include "strategy/unrolled/schedule.h"
#include "strategy/unrolled/constraints.h"
#include "strategy/unrolled/tiling.h"

#include <stdint.h>
#include <stdlib.h>

/* LO-SpMM Fig. 3's 8-row example: rows of 4, 4, 4, 3, 4, 3, 4, 4 nonzeros,
 * so m1 = 6 makes tiles of 22 and 8 nonzeros and m1 = 4 two of 15. */
static spf_matrix *figure3_matrix(void)
{
    static const int64_t row_ptr[] = {0, 4, 8, 12, 15, 19, 22, 26, 30};
    int32_t col_idx[30];
    for (int r = 0; r < 8; r++)
        for (int64_t j = row_ptr[r]; j < row_ptr[r + 1]; j++)
            col_idx[j] = (int32_t)(j - row_ptr[r] + r % 3); /* ascending, under 8 columns */
    spf_matrix *a = NULL;
    CHECK_OK(spf_matrix_create_csr(8, 8, 30, row_ptr, col_idx, NULL, 5, &a));
    return a;
}

static void test_geometry(void)
{
    spf_kernel_config c = {.m1 = 8, .n1 = 128, .v = 4, .prefetch = 2, .ksplit = 2};
    CHECK_EQ_I64(tiling_threads(&c), 64);
    CHECK_EQ_I64(tiling_blocks(1000, 300, &c), 125 * 3);
    CHECK_EQ_I64(tiling_blocks(1024, 256, &c), 128 * 2);
    /* WASTE_col = ceil(n / n1) · n1 / n − 1 */
    CHECK_NEAR(tiling_col_waste(256, 64), 0.0, 1e-15);
    CHECK_NEAR(tiling_col_waste(49, 32), 64.0 / 49 - 1, 1e-15);
    CHECK_NEAR(tiling_col_waste(196, 32), 224.0 / 196 - 1, 1e-15);
    CHECK_NEAR(tiling_col_waste(784, 256), 1024.0 / 784 - 1, 1e-15);
    CHECK_NEAR(tiling_col_waste(3, 256), 256.0 / 3 - 1, 1e-12);

    spf_matrix *a = figure3_matrix();
    if (!a)
        return;
    tile_problem p = {.a = a, .n = 8, .row_order = NULL};
    CHECK_NEAR(tiling_row_cov(&p, 4), 0.0, 1e-15);      /* 15, 15            */
    CHECK_NEAR(tiling_row_cov(&p, 6), 7.0 / 15, 1e-12);  /* 22, 8: σ 7, mean 15 */
    CHECK_NEAR(tiling_row_cov(&p, 8), 0.0, 1e-15);      /* one tile          */
    /* m1 = 3: 12, 10, 8 → mean 10, σ = sqrt((4 + 0 + 4) / 3) */
    CHECK_NEAR(tiling_row_cov(&p, 3), sqrt(8.0 / 3) / 10, 1e-12);
    /* the row order decides the tiles: rows 0 1 2 4 | 6 7 3 5 hold 16 and 14 */
    const int32_t order[] = {0, 1, 2, 4, 6, 7, 3, 5};
    p.row_order = order;
    CHECK_NEAR(tiling_row_cov(&p, 4), 1.0 / 15, 1e-12);
    spf_matrix_free(a);
}

static void test_space(void)
{
    tile_space s;
    CHECK_OK(tile_space_create(256, SPF_TUNE_SPACE_FULL, &s));
    CHECK(s.count > 100 && s.count <= 864);
    int valid = 1;
    for (int i = 0; i < s.count; i++)
        valid &= schedule_config_check(&s.configs[i], 256) == SPF_OK;
    CHECK(valid);
    tile_space_free(&s);
    CHECK(s.configs == NULL && s.count == 0);
    tile_space_free(&s);
    tile_space_free(NULL);
    /* v = 4 and 2 do not divide 49: only v = 1 survives */
    CHECK_OK(tile_space_create(49, SPF_TUNE_SPACE_FULL, &s));
    int v1 = 1;
    for (int i = 0; i < s.count; i++)
        v1 &= s.configs[i].v == 1;
    CHECK(v1 && s.count > 0);
    tile_space_free(&s);
    CHECK_STATUS(tile_space_create(0, SPF_TUNE_SPACE_FULL, &s), SPF_ERR_INVALID_ARGUMENT);
    CHECK(s.configs == NULL && s.count == 0);
    CHECK_STATUS(tile_space_create(64, (spf_tune_space)7, &s), SPF_ERR_INVALID_ARGUMENT);
    budget nothing = {0, 0};
    spf_allocator none = budget_allocator(&nothing);
    spf_set_allocator(&none);
    spf_status st = tile_space_create(64, SPF_TUNE_SPACE_FULL, &s);
    spf_set_allocator(NULL);
    CHECK(st == SPF_ERR_OUT_OF_MEMORY && s.configs == NULL && s.count == 0);
}

static void test_register(void)
{
    constraint_options o;
    constraint_options_init(&o);
    CHECK(o.max_registers == 255 && o.block_registers == 65536 && o.sm_count == 132);
    CHECK(o.th_row == 0.25 && o.th_col == 0.25);
    tile_problem p = {0};
    /* the forecast grows with every register-holding dimension */
    spf_kernel_config c = {.m1 = 8, .n1 = 128, .v = 2, .prefetch = 1, .ksplit = 1};
    int base = register_forecast(&c, SPF_DTYPE_F32);
    spf_kernel_config more_m1 = c, more_v = c, more_p = c;
    more_m1.m1 = 16;
    more_v.v = 4;
    more_p.prefetch = 4;
    CHECK(base >= 32 && base <= 255);
    CHECK(register_forecast(&more_m1, SPF_DTYPE_F32) > base);
    CHECK(register_forecast(&more_v, SPF_DTYPE_F32) > base);
    CHECK(register_forecast(&more_p, SPF_DTYPE_F32) > base);
    CHECK(register_forecast(&c, SPF_DTYPE_F16) > base);
    CHECK(register_forecast(&c, SPF_DTYPE_F16) == register_forecast(&c, SPF_DTYPE_BF16));
    /* a requested maximum: the forecast itself passes, one less does not */
    o.max_registers = base;
    CHECK(constraint_register(&p, &c, &o) == 1);
    o.max_registers = base - 1;
    CHECK(constraint_register(&p, &c, &o) == 0);
    o.max_registers = 1000; /* beyond the ISA: still 255 */
    spf_kernel_config huge = {.m1 = 64, .n1 = 128, .v = 4, .prefetch = 2, .ksplit = 1};
    CHECK(register_forecast(&huge, SPF_DTYPE_F32) > 255);
    CHECK(constraint_register(&p, &huge, &o) == 0);
    constraint_options_init(&o);
    /* the block's register file: 1024 threads (n1 256, v 1, ksplit 4) hold
     * 64 registers each at most */
    spf_kernel_config wide = {.m1 = 1, .n1 = 256, .v = 1, .prefetch = 0, .ksplit = 4};
    CHECK(register_forecast(&wide, SPF_DTYPE_F32) <= 64);
    CHECK(constraint_register(&p, &wide, &o) == 1);
    wide.m1 = 32;
    CHECK(register_forecast(&wide, SPF_DTYPE_F32) > 64);
    CHECK(constraint_register(&p, &wide, &o) == 0);
    o.block_registers = 1 << 20;
    CHECK(constraint_register(&p, &wide, &o) == 1);
}

static void test_utilization(void)
{
    spf_matrix *a = gen_matrix(SPF_GEN_UNIFORM, 1024, 256, 0.9, 3);
    if (!a)
        return;
    constraint_options o;
    constraint_options_init(&o);
    tile_problem p = {.a = a, .n = 256};
    spf_kernel_config c = {.m1 = 32, .n1 = 256, .v = 4, .prefetch = 1, .ksplit = 2};
    CHECK(constraint_utilization(&p, &c, &o) == 0); /* 32 blocks, 64 < 132     */
    c.m1 = 16;
    CHECK(constraint_utilization(&p, &c, &o) == 0); /* 64 blocks: 128 < 132    */
    c.m1 = 8;
    CHECK(constraint_utilization(&p, &c, &o) == 1); /* 128 blocks              */
    c = (spf_kernel_config){.m1 = 16, .n1 = 128, .v = 4, .prefetch = 1, .ksplit = 1};
    CHECK(constraint_utilization(&p, &c, &o) == 1); /* 64 × 2 = 128 blocks     */
    c.m1 = 32;
    o.sm_count = 128; /* 64 blocks are half of 128 SMs */
    CHECK(constraint_utilization(&p, &c, &o) == 1);
    o.sm_count = 129; /* half of an odd count rounds up */
    CHECK(constraint_utilization(&p, &c, &o) == 0);
    constraint_options_init(&o);
    /* 8 threads: not a whole warp, whatever the block count */
    c = (spf_kernel_config){.m1 = 1, .n1 = 32, .v = 4, .prefetch = 0, .ksplit = 1};
    CHECK(constraint_utilization(&p, &c, &o) == 0);
    c.ksplit = 4; /* 32 threads */
    CHECK(constraint_utilization(&p, &c, &o) == 1);
    spf_matrix_free(a);
}

static void test_balance(void)
{
    spf_matrix *a = figure3_matrix();
    if (!a)
        return;
    constraint_options o;
    constraint_options_init(&o);
    tile_problem p = {.a = a, .n = 256};
    spf_kernel_config c = {.m1 = 4, .n1 = 32, .v = 1, .prefetch = 0, .ksplit = 1};
    CHECK(constraint_balance(&p, &c, &o) == 1);
    c.m1 = 6; /* COV_row 0.467 */
    CHECK(constraint_balance(&p, &c, &o) == 0);
    o.th_row = 0.5;
    CHECK(constraint_balance(&p, &c, &o) == 1);
    o.th_row = 0.46;
    CHECK(constraint_balance(&p, &c, &o) == 0);
    constraint_options_init(&o);
    c.m1 = 4;
    p.n = 196; /* n1 32: waste 0.143; n1 64: 0.306 */
    CHECK(constraint_balance(&p, &c, &o) == 1);
    c.n1 = 64;
    CHECK(constraint_balance(&p, &c, &o) == 0);
    o.th_col = 0.31;
    CHECK(constraint_balance(&p, &c, &o) == 1);
    o.th_col = 0.0; /* only exact tilings */
    CHECK(constraint_balance(&p, &c, &o) == 0);
    p.n = 256;
    CHECK(constraint_balance(&p, &c, &o) == 1);
    spf_matrix_free(a);
}

static int monotone(const int counts[CONSTRAINT_STAGES])
{
    for (int s = 1; s < CONSTRAINT_STAGES; s++)
        if (counts[s] > counts[s - 1] || counts[s] < 0)
            return 0;
    return 1;
}

/* Reduce the FULL space of (a, n) and check what survived and what not,
 * against the constraint functions with the balance thresholds raised (with
 * balance_floor) to the least COV_row and WASTE_col among the survivors of
 * the first two. */
static void reduce_and_check(const tile_problem *p, const constraint_options *o,
                             int counts[CONSTRAINT_STAGES])
{
    tile_space s, all;
    constraint_options defaults, t;
    constraint_options_init(&defaults);
    CHECK_OK(tile_space_create(p->n, SPF_TUNE_SPACE_FULL, &s));
    CHECK_OK(tile_space_create(p->n, SPF_TUNE_SPACE_FULL, &all));
    CHECK_OK(space_reduce(p, o, &s, counts));
    if (!o)
        o = &defaults;
    CHECK(counts[CONSTRAINT_STAGE_SPACE] == all.count);
    CHECK(counts[CONSTRAINT_STAGE_BALANCE] == s.count);
    CHECK(monotone(counts));
    double least_row = INFINITY, least_col = INFINITY;
    int early = 0;
    for (int i = 0; i < all.count; i++) {
        const spf_kernel_config *c = &all.configs[i];
        if (constraint_register(p, c, o) && constraint_utilization(p, c, o)) {
            early++;
            least_row = fmin(least_row, tiling_row_cov(p, c->m1));
            least_col = fmin(least_col, tiling_col_waste(p->n, c->n1));
        }
    }
    t = *o;
    if (o->balance_floor && early > 0) {
        t.th_row = fmax(o->th_row, least_row);
        t.th_col = fmax(o->th_col, least_col);
    }
    CHECK(counts[CONSTRAINT_STAGE_UTILIZATION] == early);
    /* survivors pass all three, in their original order; the dropped fail one */
    int k = 0, ok = 1;
    for (int i = 0; i < all.count; i++) {
        const spf_kernel_config *c = &all.configs[i];
        int pass = constraint_register(p, c, o) && constraint_utilization(p, c, o) &&
                   constraint_balance(p, c, &t);
        if (pass)
            ok &= k < s.count && memcmp(&s.configs[k++], c, sizeof *c) == 0;
    }
    CHECK(ok && k == s.count);
    tile_space_free(&s);
    tile_space_free(&all);
}

static void test_reduce(void)
{
    spf_matrix *a = gen_matrix(SPF_GEN_MAGNITUDE, 512, 512, 0.9, 11);
    if (!a)
        return;
    constraint_options o;
    constraint_options_init(&o);
    tile_problem p = {.a = a, .n = 784};
    int counts[CONSTRAINT_STAGES], loose[CONSTRAINT_STAGES];
    reduce_and_check(&p, &o, counts);
    CHECK(counts[CONSTRAINT_STAGE_BALANCE] > 0);
    CHECK(counts[CONSTRAINT_STAGE_REGISTER] < counts[CONSTRAINT_STAGE_SPACE]);
    CHECK(counts[CONSTRAINT_STAGE_BALANCE] < counts[CONSTRAINT_STAGE_UTILIZATION]);
    /* looser thresholds keep at least as many; a register maximum for
     * occupancy and more SMs keep fewer */
    o.th_row = o.th_col = 1.0;
    reduce_and_check(&p, &o, loose);
    CHECK(loose[CONSTRAINT_STAGE_BALANCE] > counts[CONSTRAINT_STAGE_BALANCE]);
    constraint_options_init(&o);
    o.max_registers = 64;
    reduce_and_check(&p, &o, loose);
    CHECK(loose[CONSTRAINT_STAGE_REGISTER] < counts[CONSTRAINT_STAGE_REGISTER]);
    constraint_options_init(&o);
    o.sm_count = 1024;
    reduce_and_check(&p, &o, loose);
    CHECK(loose[CONSTRAINT_STAGE_UTILIZATION] < counts[CONSTRAINT_STAGE_UTILIZATION]);
    /* NULL options are the defaults */
    int defaults[CONSTRAINT_STAGES];
    reduce_and_check(&p, NULL, defaults);
    CHECK(memcmp(defaults, counts, sizeof counts) == 0);
    printf("512x512 magnitude 0.9, n 784:");
    for (int s = 0; s < CONSTRAINT_STAGES; s++)
        printf(" %s %d", constraint_stage_name(s), counts[s]);
    printf("\n");

    /* n = 49: every n1 ≥ 32 pads 15 of 49 columns or more, so the paper's
     * 0.25 leaves nothing; the floor keeps the least padding, n1 32 and 64 */
    spf_matrix *wide = gen_matrix(SPF_GEN_UNIFORM, 2048, 512, 0.9, 4);
    if (wide) {
        tile_problem q = {.a = wide, .n = 49};
        int strict[CONSTRAINT_STAGES];
        constraint_options_init(&o);
        o.balance_floor = 0;
        reduce_and_check(&q, &o, strict);
        CHECK(strict[CONSTRAINT_STAGE_UTILIZATION] > 0 && strict[CONSTRAINT_STAGE_BALANCE] == 0);
        tile_space kept;
        CHECK_OK(tile_space_create(49, SPF_TUNE_SPACE_FULL, &kept));
        CHECK_OK(space_reduce(&q, NULL, &kept, loose));
        CHECK(kept.count > 0 && kept.count == loose[CONSTRAINT_STAGE_BALANCE]);
        int least = 1;
        for (int i = 0; i < kept.count; i++)
            least &= kept.configs[i].n1 == 32 || kept.configs[i].n1 == 64;
        CHECK(least);
        tile_space_free(&kept);
        spf_matrix_free(wide);
    }

    /* errors */
    tile_space s;
    CHECK_OK(tile_space_create(784, SPF_TUNE_SPACE_FULL, &s));
    CHECK_STATUS(space_reduce(NULL, NULL, &s, counts), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(space_reduce(&p, NULL, NULL, counts), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(space_reduce(&p, NULL, &s, NULL), SPF_ERR_INVALID_ARGUMENT);
    tile_problem bad = {.a = a, .n = 0};
    CHECK_STATUS(space_reduce(&bad, NULL, &s, counts), SPF_ERR_INVALID_ARGUMENT);
    constraint_options_init(&o);
    o.th_row = -0.1;
    CHECK_STATUS(space_reduce(&p, &o, &s, counts), SPF_ERR_INVALID_ARGUMENT);
    CHECK_DETAIL("th_row");
    constraint_options_init(&o);
    o.sm_count = 0;
    CHECK_STATUS(space_reduce(&p, &o, &s, counts), SPF_ERR_INVALID_ARGUMENT);
    s.configs[1].v = 3; /* a configuration the schedule rejects */
    CHECK_STATUS(space_reduce(&p, NULL, &s, counts), SPF_ERR_INVALID_ARGUMENT);
    CHECK_DETAIL("configuration 1");
    CHECK_DETAIL("v = 3");
    tile_space_free(&s);
    spf_matrix_free(a);
}

static void print_counts(const char *name, int64_t m, int64_t k, int64_t n,
                         const int counts[CONSTRAINT_STAGES])
{
    printf("%-58s %5lldx%-5lld n %5lld:", name, (long long)m, (long long)k, (long long)n);
    for (int s = 0; s < CONSTRAINT_STAGES; s++)
        printf(" %s %3d", constraint_stage_name(s), counts[s]);
    printf("\n");
}

/* SparseRT Table 1's shapes (bench/problems.c, sparsert20) at 0.9, uniform. */
static void test_sparsert20(void)
{
    static const int64_t shapes[][3] = {
        {64, 256, 3136},   {256, 64, 3136},   {128, 512, 784},  {512, 128, 784},
        {256, 1024, 196},  {1024, 256, 196},  {512, 2048, 49},  {2048, 512, 49},
        {2048, 512, 256},  {512, 2048, 256},  {512, 512, 256},  {64, 32, 12544},
        {128, 64, 3136},   {128, 128, 3136},  {256, 128, 784},  {256, 256, 784},
        {512, 256, 196},   {512, 512, 196},   {1024, 512, 49},  {1024, 1024, 49},
    };
    printf("sparsert20 at 0.9 (uniform), FULL space, default options:\n");
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        spf_matrix *a = gen_matrix(SPF_GEN_UNIFORM, shapes[i][0], shapes[i][1], 0.9, 1 + i);
        if (!a)
            continue;
        tile_problem p = {.a = a, .n = shapes[i][2]};
        constraint_options o;
        constraint_options_init(&o);
        int counts[CONSTRAINT_STAGES];
        reduce_and_check(&p, &o, counts);
        print_counts("sparsert20", shapes[i][0], shapes[i][1], shapes[i][2], counts);
        spf_matrix_free(a);
    }
}

static void test_dlmc(void)
{
    const char *dir = check_data_dir();
    if (!dir)
        return;
    static const struct {
        const char *rel;
        int64_t n[3];
    } layers[] = {
        {"dlmc/rn50/magnitude_pruning/0.9/bottleneck_1_block_group1_1_1.smtx", {3136, 784, 196}},
        {"dlmc/rn50/magnitude_pruning/0.9/bottleneck_2_block_group3_5_1.smtx", {196, 49, 1568}},
        {"dlmc/rn50/random_pruning/0.9/bottleneck_1_block_group2_1_1.smtx", {784, 256, 49}},
        {"dlmc/transformer/magnitude_pruning/0.9/"
         "body_encoder_layer_0_ffn_conv1_fully_connected.smtx",
         {256, 2048, 100}},
    };
    printf("DLMC at 0.9, FULL space, default options:\n");
    for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++) {
        spf_matrix *a = data_matrix(dir, layers[i].rel, 1);
        if (!a)
            continue;
        for (int j = 0; j < 3; j++) {
            tile_problem p = {.a = a, .n = layers[i].n[j]};
            int counts[CONSTRAINT_STAGES];
            reduce_and_check(&p, NULL, counts);
            CHECK(counts[CONSTRAINT_STAGE_SPACE] > 0);
            const char *name = strrchr(layers[i].rel, '/') + 1;
            print_counts(name, spf_matrix_rows(a), spf_matrix_cols(a), p.n, counts);
        }
        spf_matrix_free(a);
    }
}

int main(int argc, char **argv)
{
    test_geometry();
    test_space();
    test_register();
    test_utilization();
    test_balance();
    test_reduce();
    test_sparsert20();
    test_dlmc();
    return check_report();
}
