/* Proxies (src/codegen/proxy.h, LO-SpMM §5) without a GPU: the clustering
 * of tiles (the bound, a partition, the centroids, the same partition as a
 * brute-force greedy Ward agglomeration, the grid pre-merge of many
 * points), NNC_P, the arithmetic of Eq. 5 and 6, the proxy's code (one B
 * load per proxy iteration, the centroid's fmas per load, the cluster
 * table, n1 as a parameter, stores relative to the block's rows), and
 * proxies of a spread of shapes and of DLMC patterns assembled with ptxas
 * for sm_90 and sm_80 in one jit_compile batch, with their code size
 * against the real kernel's (printed). ptxas checks skip visibly without
 * a ptxas. */
#define _POSIX_C_SOURCE 200809L

#include "test_util.h"

#include "strategy/unrolled/proxy.h"
#include "strategy/unrolled/schedule.h"
#include "strategy/unrolled/unrolled.h"
#include "gpu/jit.h"
#include "strategy/unrolled/constraints.h"

#include <stdint.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ------------------------------------------------------------ clusters */

/* A partition: every tile in one cluster, sizes ≥ 1 summing to the tiles,
 * centroids the members' means. */
static void check_partition(const proxy_clusters *c, const int32_t *nnc, const int64_t *nnz,
                            int32_t tiles, int32_t max_clusters)
{
    CHECK(c->count >= 1 && c->count <= max_clusters && c->tiles == tiles);
    double *sc = calloc((size_t)c->count, sizeof *sc), *sz = calloc((size_t)c->count, sizeof *sz);
    int32_t *size = calloc((size_t)c->count, sizeof *size);
    int bad = 0;
    for (int32_t t = 0; t < tiles; t++) {
        int32_t k = c->of_tile[t];
        if (k < 0 || k >= c->count) {
            bad++;
            continue;
        }
        size[k]++;
        sc[k] += nnc[t];
        sz[k] += (double)nnz[t];
    }
    CHECK_MSG(bad == 0, "%d tiles outside 0 .. %d", bad, (int)c->count - 1);
    int64_t total = 0;
    for (int32_t k = 0; k < c->count && bad == 0; k++) {
        CHECK_MSG(size[k] >= 1 && size[k] == c->size[k], "cluster %d: %d tiles, says %d", (int)k,
                  (int)size[k], (int)c->size[k]);
        total += c->size[k];
        if (size[k] > 0) {
            CHECK_NEAR(c->nnc[k], sc[k] / size[k], 1e-9 * (1 + sc[k]));
            CHECK_NEAR(c->nnz[k], sz[k] / size[k], 1e-9 * (1 + sz[k]));
        }
    }
    CHECK_EQ_I64(total, tiles);
    free(sc);
    free(sz);
    free(size);
}

/* Greedy Ward by brute force (O(P³)) on distinct points with the
 * features divided by their means: the labels of each point after
 * P − clusters merges. */
static void greedy_ward(const int32_t *nnc, const int64_t *nnz, int32_t n, int32_t clusters,
                        int32_t *label)
{
    double mc = 0, mz = 0;
    for (int32_t i = 0; i < n; i++)
        mc += nnc[i], mz += (double)nnz[i];
    mc /= n, mz /= n;
    double *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    double *w = malloc((size_t)n * sizeof *w);
    for (int32_t i = 0; i < n; i++) {
        x[i] = nnc[i] / mc, y[i] = (double)nnz[i] / mz, w[i] = 1;
        label[i] = i;
    }
    for (int32_t left = n; left > clusters; left--) {
        int32_t bi = -1, bj = -1;
        double best = INFINITY;
        for (int32_t i = 0; i < n; i++)
            for (int32_t j = i + 1; j < n && w[i] > 0; j++) {
                if (w[j] == 0)
                    continue;
                double d = w[i] * w[j] / (w[i] + w[j]) *
                           ((x[i] - x[j]) * (x[i] - x[j]) + (y[i] - y[j]) * (y[i] - y[j]));
                if (d < best)
                    best = d, bi = i, bj = j;
            }
        x[bi] = (w[bi] * x[bi] + w[bj] * x[bj]) / (w[bi] + w[bj]);
        y[bi] = (w[bi] * y[bi] + w[bj] * y[bj]) / (w[bi] + w[bj]);
        w[bi] += w[bj];
        w[bj] = 0;
        for (int32_t i = 0; i < n; i++)
            if (label[i] == bj)
                label[i] = bi;
    }
    free(x);
    free(y);
    free(w);
}

/* Two labelings are the same partition. */
static int same_partition(const int32_t *a, const int32_t *b, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        for (int32_t j = i + 1; j < n; j++)
            if ((a[i] == a[j]) != (b[i] == b[j]))
                return 0;
    return 1;
}

static void test_clusters(void)
{
    rng r;
    rng_seed(&r, 42);
    /* Five separated groups of tiles are found as five clusters. */
    enum { T = 200 };
    int32_t nnc[T];
    int64_t nnz[T];
    static const int32_t centre[5][2] = {{10, 20}, {40, 200}, {80, 90}, {150, 600}, {300, 320}};
    for (int t = 0; t < T; t++) {
        int g = t % 5;
        nnc[t] = centre[g][0] + (int32_t)(rng_uniform(&r) * 3);
        nnz[t] = centre[g][1] + (int64_t)(rng_uniform(&r) * 5);
    }
    proxy_clusters c;
    CHECK_OK(proxy_cluster(nnc, nnz, T, 5, &c));
    check_partition(&c, nnc, nnz, T, 5);
    CHECK_EQ_I64(c.count, 5);
    int grouped = 1;
    for (int t = 5; t < T; t++)
        grouped &= c.of_tile[t] == c.of_tile[t % 5];
    CHECK_MSG(grouped, "tiles of one group split across clusters");
    CHECK(c.nnc[0] < c.nnc[1]); /* ids in the order of the smallest features */
    proxy_clusters_free(&c);

    /* One cluster: the global mean. Fewer distinct points than allowed:
     * one cluster per point. */
    CHECK_OK(proxy_cluster(nnc, nnz, T, 1, &c));
    check_partition(&c, nnc, nnz, T, 1);
    proxy_clusters_free(&c);
    int32_t few_c[] = {3, 3, 9, 3, 9, 3};
    int64_t few_z[] = {5, 5, 12, 5, 12, 7};
    CHECK_OK(proxy_cluster(few_c, few_z, 6, 96, &c));
    check_partition(&c, few_c, few_z, 6, 96);
    CHECK_EQ_I64(c.count, 3);
    CHECK(c.of_tile[0] == c.of_tile[1] && c.of_tile[1] == c.of_tile[3] &&
          c.of_tile[2] == c.of_tile[4] && c.of_tile[5] != c.of_tile[0]);
    proxy_clusters_free(&c);

    /* The nearest-neighbour chain agrees with the greedy agglomeration on
     * random distinct points (wide ranges: no ties). */
    int agree = 0, trials = 20;
    for (int trial = 0; trial < trials; trial++) {
        enum { P = 40 };
        int32_t pc[P], label[P];
        int64_t pz[P];
        for (int i = 0; i < P; i++) {
            pc[i] = 1 + (int32_t)(rng_uniform(&r) * 100000);
            pz[i] = pc[i] + (int64_t)(rng_uniform(&r) * 3000000);
        }
        int32_t k = 1 + trial % 12;
        CHECK_OK(proxy_cluster(pc, pz, P, k, &c));
        check_partition(&c, pc, pz, P, k);
        greedy_ward(pc, pz, P, k, label);
        agree += c.count == k && same_partition(c.of_tile, label, P);
        proxy_clusters_free(&c);
    }
    CHECK_MSG(agree == trials, "chain and greedy Ward agree on %d of %d", agree, trials);

    /* Many distinct points: merged on the grid first, still bounded. */
    enum { BIG = 30000 };
    int32_t *bc = malloc(BIG * sizeof *bc);
    int64_t *bz = malloc(BIG * sizeof *bz);
    for (int t = 0; t < BIG; t++) {
        bc[t] = (int32_t)(rng_uniform(&r) * 5000);
        bz[t] = bc[t] + (int64_t)(rng_uniform(&r) * 50000);
    }
    double t0 = now_s();
    CHECK_OK(proxy_cluster(bc, bz, BIG, 24, &c));
    double secs = now_s() - t0;
    check_partition(&c, bc, bz, BIG, 24);
    CHECK_EQ_I64(c.count, 24);
    printf("clustering of %d distinct tiles into %d: %.3f s\n", BIG, (int)c.count, secs);
    CHECK_MSG(secs < 5.0, "%.2f s", secs);
    proxy_clusters_free(&c);
    free(bc);
    free(bz);

    CHECK_STATUS(proxy_cluster(nnc, nnz, 0, 4, &c), SPF_ERR_INVALID_ARGUMENT);
    CHECK(c.of_tile == NULL && c.count == 0);
    CHECK_STATUS(proxy_cluster(nnc, nnz, T, 0, &c), SPF_ERR_INVALID_ARGUMENT);
    proxy_clusters_free(NULL);
}

/* ------------------------------------------------------ Eq. 5, 6, NNC_P */

static void test_arithmetic(void)
{
    /* §5.1.3 */
    CHECK_EQ_I64(proxy_truncated_columns(100, 0.9), 100);
    CHECK_EQ_I64(proxy_truncated_columns(5000, 0.9), 3000);
    CHECK_EQ_I64(proxy_truncated_columns(3000, 0.9), 3000);
    CHECK_EQ_I64(proxy_truncated_columns(7000, 0.95), 6000);
    CHECK_EQ_I64(proxy_truncated_columns(301, 0.0), 300);
    CHECK_EQ_I64(proxy_truncated_columns(40, 1.0), 40);

    proxy_device d;
    proxy_device_default(&d);
    /* Eq. 5. m 2048, n 256, (8, 128, 4, 2, 1): 32 threads, 512 blocks:
     * ceil(512 / 132) = 4; registers 94 → 96 · 32 = 3072: 21 per SM. */
    spf_kernel_config a = {8, 128, 4, 2, 1};
    CHECK_EQ_I64(register_forecast(&a, SPF_DTYPE_F32), 94);
    CHECK_EQ_I64(proxy_active_blocks(&d, 2048, 256, &a, SPF_DTYPE_F32), 4);
    /* A large grid: the register term, 65536 / 3072 = 21. */
    CHECK_EQ_I64(proxy_active_blocks(&d, 8192, 4096, &a, SPF_DTYPE_F32), 21);
    /* (32, 64, 1, 2, 4): 256 threads, forecast 86 → 88 · 256 = 22528: 2. */
    spf_kernel_config b = {32, 64, 1, 2, 4};
    CHECK_EQ_I64(register_forecast(&b, SPF_DTYPE_F32), 86);
    CHECK_EQ_I64(proxy_active_blocks(&d, 8192, 4096, &b, SPF_DTYPE_F32), 2);
    /* 1024 threads of 46 → 48 registers: 49152 of 65536, one block. The
     * limits Eq. 5 leaves implicit, with registers plentiful: threads per
     * SM (1024-thread blocks: 2), blocks per SM (32), and the K split's
     * shared memory. */
    spf_kernel_config c = {1, 256, 1, 0, 4};
    CHECK_EQ_I64(proxy_active_blocks(&d, 65535, 65536, &c, SPF_DTYPE_F32), 1);
    d.regs_per_sm = 1 << 30;
    CHECK_EQ_I64(proxy_active_blocks(&d, 65535, 65536, &c, SPF_DTYPE_F32), 2);
    spf_kernel_config e = {1, 32, 1, 0, 1};
    CHECK_EQ_I64(proxy_active_blocks(&d, 65535, 65536, &e, SPF_DTYPE_F32), 32);
    spf_kernel_config f = {16, 256, 4, 0, 4}; /* 3 · 16 · 256 · 4 = 48 KiB + 1 KiB */
    CHECK_EQ_I64(proxy_active_blocks(&d, 65535, 65536, &f, SPF_DTYPE_F32), 233472 / (49152 + 1024));
    proxy_device_default(&d);
    CHECK_EQ_I64(proxy_active_blocks(&d, 1, 1, &a, SPF_DTYPE_F32), 1); /* one block */

    /* Eq. 6 and the least-shared variant. */
    CHECK_EQ_I64(proxy_shared_bytes(&d, 4, 0, PROXY_SMEM_EQ6), 233472 / 4 - 1024);
    CHECK_EQ_I64(proxy_shared_bytes(&d, 3, 0, PROXY_SMEM_EQ6), 76800);
    CHECK_EQ_I64(proxy_shared_bytes(&d, 1, 0, PROXY_SMEM_EQ6), 232448);
    CHECK_EQ_I64(proxy_shared_bytes(&d, 4, 0, PROXY_SMEM_LEAST), 45696);
    CHECK_EQ_I64(proxy_shared_bytes(&d, 4, 60000, PROXY_SMEM_EQ6), 60000);
    CHECK_EQ_I64(proxy_shared_bytes(&d, 1, 300000, PROXY_SMEM_EQ6), 232448);
    /* Either way exactly NUM_ATB blocks fit on an SM by shared memory. */
    int exact = 0;
    for (int x = 1; x <= 32; x++)
        for (int p = 0; p < 2; p++) {
            int64_t s = proxy_shared_bytes(&d, x, 0, p ? PROXY_SMEM_LEAST : PROXY_SMEM_EQ6);
            exact += s % 128 == 0 && d.smem_per_sm / (s + d.smem_reserved) == x;
        }
    CHECK_EQ_I64(exact, 64);
    CHECK(proxy_shared_bytes(&d, 4, 0, PROXY_SMEM_LEAST) <
          proxy_shared_bytes(&d, 4, 0, PROXY_SMEM_EQ6));
}

/* ------------------------------------------------------------ the proxy */

static int64_t count_in(const char *text, const char *what)
{
    int64_t n = 0;
    for (const char *p = text; (p = strstr(p, what)) != NULL; p += strlen(what))
        n++;
    return n;
}

/* The largest immediate offset in "[<base>+N]" or "[<base>]" operands of
 * text, -1 if none. */
static int64_t largest_offset(const char *text, const char *base)
{
    char open[32];
    snprintf(open, sizeof open, "[%s", base);
    int64_t most = -1;
    for (const char *p = text; (p = strstr(p, open)) != NULL; p += strlen(open)) {
        const char *q = p + strlen(open);
        int64_t off = *q == '+' ? strtoll(q + 1, NULL, 10) : *q == ']' ? 0 : -1;
        most = off > most ? off : most;
    }
    return most;
}

/* The proxy's code follows its clusters: one B load per proxy iteration
 * (NNC_P per function), v fmas per entry, entries the centroid's fmas per
 * load × NNC_P, a table of the tiles' clusters, n1 a parameter, stores at
 * rows 0 .. rows − 1 of the block, B loads inside B. Checked against the clusters of the
 * real schedule computed here. */
static void test_structure(void)
{
    /* K 40000 at 0.9: about 4000 columns per 1-row tile, over the 3000 of
     * NNC_P; rows of varied density, so the tiles differ. */
    enum { M = 48, K = 40000 };
    double dens[M];
    for (int i = 0; i < M; i++)
        dens[i] = 0.05 + 0.1 * (i % 4) / 3.0;
    spf_matrix *a = random_csr(M, K, dens, 7);
    int32_t n1[] = {32, 64};
    proxy_spec q = {.a = a, .n = 128, .shape = {2, 0, 1, 2, 1}, .n1 = n1, .n1_count = 2,
                    .dtype = SPF_DTYPE_F32, .sm = 90};
    ptx_program p;
    proxy_info info;
    CHECK_OK(proxy_generate(&q, &p, &info));
    proxy_device d;
    proxy_device_default(&d);
    spf_kernel_config c32 = {2, 32, 1, 2, 1}, c64 = {2, 64, 1, 2, 1};
    int atb = proxy_active_blocks(&d, M, 128, &c32, SPF_DTYPE_F32);
    int atb64 = proxy_active_blocks(&d, M, 128, &c64, SPF_DTYPE_F32);
    atb = atb64 > atb ? atb64 : atb;
    CHECK_EQ_I64(info.max_active_blocks, atb);
    CHECK_EQ_I64(info.max_clusters, 3 * atb);
    CHECK_EQ_I64(info.tiles, M / 2);
    CHECK(info.clusters >= 1 && info.clusters <= info.max_clusters);
    CHECK_EQ_I64(info.rows, 2);
    CHECK_EQ_I64(info.n1_max, 64);
    double sparsity = 1.0 - (double)spf_matrix_nnz(a) / ((double)M * K);
    CHECK_MSG(info.nnc_max > 3000 && info.nnc_p_max < info.nnc_max &&
                  info.nnc_p_max == proxy_truncated_columns(info.nnc_max, sparsity),
              "NNC %d → NNC_P %d at sparsity %.4f", (int)info.nnc_max, (int)info.nnc_p_max,
              sparsity);

    /* The same clusters from the real schedule's tiles. */
    schedule s;
    CHECK_OK(schedule_create(a, NULL, 128, &c64, &s));
    int32_t nnc[M / 2];
    int64_t nnz[M / 2];
    for (int t = 0; t < s.tile_count; t++)
        nnc[t] = s.tiles[t].col_count, nnz[t] = s.tiles[t].nnz;
    proxy_clusters cl;
    CHECK_OK(proxy_cluster(nnc, nnz, s.tile_count, info.max_clusters, &cl));
    CHECK_EQ_I64(cl.count, info.clusters);
    int64_t loads = 0, fmas = 0;
    for (int k = 0; k < cl.count; k++) {
        int32_t cols = proxy_truncated_columns((int32_t)llround(cl.nnc[k]), sparsity);
        loads += cols;
        fmas += llround(cols * cl.nnz[k] / cl.nnc[k]);
    }
    /* Stores at rows 0 and 1 of the block (n = 128 floats a row), predicated. */
    int64_t got_loads = 0, got_fmas = 0, functions = 0, row0 = 0, row1 = 0, stores = 0;
    for (int u = 1; u < p.unit_count; u++) {
        got_loads += count_in(p.units[u].text, "ld.global.nc");
        got_fmas += count_in(p.units[u].text, "fma.rn.f32");
        got_fmas += count_in(p.units[u].text, "mul.rn.f32");
        functions += count_in(p.units[u].text, ".visible .func");
        row0 += count_in(p.units[u].text, "@%p0 st.global.f32 [%rd1], ");
        row1 += count_in(p.units[u].text, "@%p0 st.global.f32 [%rd1+512], ");
        stores += count_in(p.units[u].text, "st.global");
    }
    CHECK_EQ_I64(row0, info.clusters);
    CHECK_EQ_I64(row1, info.clusters);
    CHECK_EQ_I64(stores, 2 * info.clusters);
    CHECK_EQ_I64(functions, info.clusters);
    CHECK_EQ_I64(got_loads, loads);
    CHECK_EQ_I64(got_fmas, fmas); /* v = 1 */
    const char *entry = p.units[0].text;
    CHECK(strstr(entry, ".entry spf_proxy_f32_m2_v1_p2_k1") != NULL);
    CHECK(strstr(entry, ".param .u32 n1") != NULL);
    char table[128];
    snprintf(table, sizeof table, ".u16 spf_proxy_f32_m2_v1_p2_k1_cluster[%d] = {", M / 2);
    CHECK(strstr(entry, table) != NULL);
    snprintf(table, sizeof table, "min.u32 %%r10, %%r10, %d", M - 2);
    CHECK(strstr(entry, table) != NULL); /* the last rows a block may store from */
    CHECK(p.grid[1] == (unsigned)(M / 2) && p.block[0] == 64);
    /* In bounds: B loads (base %rd0, the thread's column) within the k rows
     * of B, stores (base %rd1) within the function's 2 rows of C. */
    for (int u = 1; u < p.unit_count; u++) {
        int64_t b_most = largest_offset(p.units[u].text, "%rd0");
        int64_t c_most = largest_offset(p.units[u].text, "%rd1");
        CHECK_MSG(b_most >= 0 && b_most + 4 <= (int64_t)K * 128 * 4, "B offset %lld",
                  (long long)b_most);
        CHECK_MSG(c_most == 512, "C offset %lld", (long long)c_most);
    }
    proxy_clusters_free(&cl);
    schedule_free(&s);
    ptx_program_free(&p);

    /* Invalid requests. */
    int32_t bad_n1[] = {48};
    q.n1 = bad_n1;
    q.n1_count = 1;
    CHECK_STATUS(proxy_generate(&q, &p, &info), SPF_ERR_INVALID_ARGUMENT);
    CHECK(p.units == NULL && info.clusters == 0);
    q.n1 = n1;
    q.sm = 75;
    CHECK_STATUS(proxy_generate(&q, &p, NULL), SPF_ERR_INVALID_ARGUMENT);
    q.sm = 90;
    q.f16x2_accumulate = 1;
    CHECK_STATUS(proxy_generate(&q, &p, NULL), SPF_ERR_INVALID_ARGUMENT);
    spf_matrix_free(a);
}

/* Every allocation failure is reported as such, leaks nothing and leaves
 * a zeroed program. */
static void test_allocation_failures(void)
{
    spf_matrix *a = gen_matrix(SPF_GEN_UNIFORM, 64, 96, 0.8, 11);
    int32_t n1[] = {64};
    proxy_spec q = {.a = a, .n = 64, .shape = {8, 0, 2, 1, 2}, .n1 = n1, .n1_count = 1,
                    .dtype = SPF_DTYPE_F16, .bias = 1, .sm = 90};
    int failures = 0;
    for (int k = 0; k < 10000; k++) {
        ptx_program p;
        budget b = {k, 0};
        spf_allocator fail = budget_allocator(&b);
        spf_set_allocator(&fail);
        spf_status st = proxy_generate(&q, &p, NULL);
        spf_set_allocator(NULL);
        if (st == SPF_OK) {
            ptx_program_free(&p);
            break;
        }
        failures++;
        CHECK_MSG(st == SPF_ERR_OUT_OF_MEMORY, "after %d allocations: %s", k, spf_last_error());
        CHECK(p.units == NULL && p.unit_count == 0);
        CHECK_MSG(b.live == 0, "after %d allocations: %d blocks leaked", k, b.live);
    }
    CHECK(failures > 10);
    spf_matrix_free(a);
}

/* ------------------------------------------- ptxas, against the real kernel */

typedef struct proxy_case {
    const char *dlmc;  /* a DLMC pattern, or NULL for a random m × k */
    int64_t m, k;
    double sparsity;
    int64_t n;
    spf_kernel_config shape;
    int32_t n1[3];
    spf_dtype dtype;
    int f16x2, bias, relu;
} proxy_case;

static void test_assemble(void)
{
    static const proxy_case cases[] = {
        {NULL, 512, 512, 0.9, 256, {8, 0, 4, 2, 1}, {128, 256}, SPF_DTYPE_F32, 0, 1, 1},
        {NULL, 512, 512, 0.9, 256, {16, 0, 2, 2, 2}, {64, 128, 256}, SPF_DTYPE_F32, 0, 0, 0},
        {NULL, 1024, 256, 0.95, 512, {4, 0, 1, 1, 4}, {32, 64}, SPF_DTYPE_F32, 0, 1, 0},
        {NULL, 2048, 512, 0.9, 128, {32, 0, 4, 2, 1}, {128}, SPF_DTYPE_F32, 0, 0, 1},
        {NULL, 300, 700, 0.8, 49, {2, 0, 1, 0, 1}, {32, 64}, SPF_DTYPE_F32, 0, 1, 1},
        {NULL, 2048, 512, 0.9, 1024, {4, 0, 2, 2, 1}, {64, 128, 256}, SPF_DTYPE_F32, 0, 0, 0},
        {NULL, 512, 512, 0.9, 256, {8, 0, 4, 2, 2}, {128, 256}, SPF_DTYPE_F16, 0, 1, 1},
        {NULL, 512, 512, 0.9, 256, {8, 0, 2, 1, 2}, {64, 128}, SPF_DTYPE_BF16, 0, 1, 0},
        {NULL, 512, 512, 0.9, 256, {16, 0, 4, 2, 1}, {128, 256}, SPF_DTYPE_F16, 1, 0, 1},
        {"dlmc/rn50/magnitude_pruning/0.9/bottleneck_2_block_group3_5_1.smtx", 0, 0, 0, 196,
         {8, 0, 4, 2, 1}, {128}, SPF_DTYPE_F32, 0, 1, 1},
        {"dlmc/transformer/magnitude_pruning/0.9/body_encoder_layer_0_ffn_conv1_fully_"
         "connected.smtx", 0, 0, 0, 256, {16, 0, 2, 2, 2}, {64, 128, 256}, SPF_DTYPE_F32, 0, 0, 0},
    };
    enum { CASES = sizeof cases / sizeof cases[0], PROGRAMS = 2 * CASES };
    ptx_program progs[PROGRAMS];
    const ptx_program *list[PROGRAMS];
    jit_object objs[PROGRAMS];
    int64_t real_bytes[CASES] = {0};
    proxy_info infos[CASES];
    int count = 0, made[CASES] = {0};
    memset(progs, 0, sizeof progs);
    for (int i = 0; i < CASES; i++) {
        const proxy_case *c = &cases[i];
        spf_matrix *a = NULL;
        int64_t m = c->m, k = c->k;
        if (c->dlmc)
            a = data_case_matrix(c->dlmc, &m, &k);
        else
            a = gen_matrix(SPF_GEN_UNIFORM, m, k, c->sparsity, (uint64_t)i + 1);
        if (!a)
            continue;
        int n1s = c->n1[2] ? 3 : c->n1[1] ? 2 : 1;
        for (int sm = 0; sm < 2; sm++) {
            proxy_spec q = {.a = a, .n = c->n, .shape = c->shape, .n1 = c->n1, .n1_count = n1s,
                            .dtype = c->dtype, .f16x2_accumulate = c->f16x2, .bias = c->bias,
                            .relu = c->relu, .sm = sm ? 80 : 90};
            CHECK_OK(proxy_generate(&q, &progs[count], &infos[i]));
            list[count] = &progs[count];
            count++;
        }
        /* The real kernel of the largest n1, for the code size (generated,
         * not assembled: that takes minutes). */
        spf_kernel_config cfg = c->shape;
        cfg.n1 = c->n1[n1s - 1];
        ptx_program real;
        CHECK_OK(unrolled_generate(a, NULL, c->n, &cfg, c->dtype, c->f16x2, c->bias, c->relu, 90, 0,
                                   &real));
        for (int u = 0; u < real.unit_count; u++)
            real_bytes[i] += (int64_t)real.units[u].size;
        ptx_program_free(&real);
        made[i] = 1;
        spf_matrix_free(a);
    }
    char ptxas[4096];
    int have_ptxas = ptxas_locate(ptxas, sizeof ptxas);
    if (!have_ptxas)
        printf("NOTE: no ptxas: proxies generated, not assembled\n");
    /* All proxies of one target in one batch, as proxy_evaluate does. */
    double secs[2] = {0, 0};
    for (int sm = 0; sm < 2 && have_ptxas; sm++) {
        const ptx_program *batch[PROGRAMS];
        int nb = 0;
        for (int j = 0; j < count; j++)
            if (strstr(list[j]->units[0].text, sm ? ".target sm_80" : ".target sm_90"))
                batch[nb++] = list[j];
        double t0 = now_s();
        CHECK_OK(jit_compile(batch, nb, sm ? 80 : 90, 0, objs));
        secs[sm] = now_s() - t0;
        for (int b = 0; b < nb; b++) {
            CHECK_MSG(objs[b].status == SPF_OK, "%s sm_%d: %s", batch[b]->entry, sm ? 80 : 90,
                      objs[b].log ? objs[b].log : "");
            printf("  %-30s sm_%d  units %d  registers %3d  spill %d  ptxas %5.2f s (summed)\n",
                   batch[b]->entry, sm ? 80 : 90, batch[b]->unit_count, objs[b].registers,
                   objs[b].spill_bytes, objs[b].compile_s);
            jit_object_release(&objs[b]);
        }
        printf("sm_%d batch of %d proxies: %.2f s wall\n", sm ? 80 : 90, nb, secs[sm]);
    }
    /* Code size: well below the real kernel's wherever there are several
     * tiles per cluster. */
    for (int i = 0, j = 0; i < CASES; i++) {
        if (!made[i])
            continue;
        const proxy_info *in = &infos[i];
        double ratio = (double)in->code_bytes / (double)real_bytes[i];
        printf("%-34s tiles %5d clusters %3d (≤ %3d)  NNC max %5d → %5d  proxy %8lld B  real "
               "%9lld B  ratio %.3f\n",
               list[j]->entry, (int)in->tiles, (int)in->clusters, (int)in->max_clusters,
               (int)in->nnc_max, (int)in->nnc_p_max, (long long)in->code_bytes,
               (long long)real_bytes[i], ratio);
        if (in->tiles >= 4 * in->clusters)
            CHECK_MSG(ratio < 0.5, "%s: proxy code %.3f of the real kernel's", list[j]->entry,
                      ratio);
        j += 2;
    }
    for (int j = 0; j < count; j++)
        ptx_program_free(&progs[j]);
}

int main(int argc, char **argv)
{
    test_clusters();
    test_arithmetic();
    test_structure();
    test_allocation_failures();
    test_assemble();
    return check_report();
}
