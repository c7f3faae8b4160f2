/* Proxy evaluation on the GPU (gpu/proxy_eval.h, LO-SpMM §5): for a few
 * problems, the proxies of every configuration of the compact space run
 * without errors and give positive times, under both shared-memory
 * policies; C stays in bounds (guard regions before and after it, poisoned,
 * are checked untouched); the occupancy the runtime allows each proxy
 * launch is compared with the real kernel's NUM_ATB (Eq. 5). Then, as a
 * report and not an assertion, the real kernels of the same configurations
 * are compiled and timed (the exhaustive tuner over the list) and the
 * Spearman rank correlation between proxy and real times is printed, with
 * the loss of the proxy's pick against the fastest real kernel and the
 * cost of each. `test_proxy quick` runs the first problem only. */
#define _POSIX_C_SOURCE 200809L

#include "test_util.h"

#ifndef SPF_HAVE_CUDA
int main(int argc, char **argv) { SKIP("no CUDA device: built without CUDA"); }
#else

#include "strategy/unrolled/proxy_eval.h"
#include "strategy/unrolled/tuner.h"
#include "strategy/unrolled/row_orders.h"
#include "strategy/unrolled/tiling.h"

#include <cuda_runtime_api.h>
#include <stdint.h>

enum { GUARD = 4096, POISON = 0xA5 };

/* Ranks 1 .. n of x (ties: the mean of their ranks). */
static void ranks(const double *x, int n, double *r)
{
    for (int i = 0; i < n; i++) {
        int less = 0, equal = 0;
        for (int j = 0; j < n; j++) {
            less += x[j] < x[i];
            equal += x[j] == x[i];
        }
        r[i] = less + (equal + 1) / 2.0;
    }
}

static double spearman(const double *x, const double *y, int n)
{
    double *rx = malloc((size_t)n * sizeof *rx), *ry = malloc((size_t)n * sizeof *ry);
    ranks(x, n, rx);
    ranks(y, n, ry);
    double mx = 0, my = 0, sxy = 0, sxx = 0, syy = 0;
    for (int i = 0; i < n; i++)
        mx += rx[i] / n, my += ry[i] / n;
    for (int i = 0; i < n; i++) {
        sxy += (rx[i] - mx) * (ry[i] - my);
        sxx += (rx[i] - mx) * (rx[i] - mx);
        syy += (ry[i] - my) * (ry[i] - my);
    }
    free(rx);
    free(ry);
    return sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : 0.0;
}

typedef struct proxy_case {
    const char *name;
    const char *dlmc; /* a DLMC pattern under the data folder, or NULL: random */
    int64_t m, k;
    double sparsity;
    int64_t n;
    int bias, relu, reorder;
} proxy_case;

/* The guard bytes before and after C that are no longer POISON. */
static long guard_damage(const unsigned char *base, size_t c_bytes)
{
    unsigned char *h = malloc(2 * GUARD);
    long bad = 0;
    CUDA_OK(cudaMemcpy(h, base, GUARD, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(h + GUARD, base + GUARD + c_bytes, GUARD, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 2 * GUARD; i++)
        bad += h[i] != POISON;
    free(h);
    return bad;
}

/* Proxies of every configuration under one policy; returns 1 if all ran. */
static int run_proxies(const proxy_request *base, const spf_kernel_config *configs, int count,
                       proxy_smem_policy policy, double *us, const char *label)
{
    proxy_request q = *base;
    proxy_candidate *d = calloc((size_t)count, sizeof *d);
    proxy_timings t;
    q.smem = policy;
    q.details = d;
    spf_status st = proxy_evaluate(&q, configs, count, us, &t);
    CHECK_MSG(st == SPF_OK, "%s: proxy_evaluate: %s", label, spf_last_error());
    int ok = st == SPF_OK, mismatched = 0;
    for (int i = 0; i < count && ok; i++) {
        CHECK_MSG(d[i].status == SPF_OK && isfinite(us[i]) && us[i] > 0,
                  "%s: m1 %d n1 %d v %d p %d k %d: status %d, %.3g us", label, configs[i].m1,
                  configs[i].n1, configs[i].v, configs[i].prefetch, configs[i].ksplit,
                  (int)d[i].status, us[i]);
        ok &= d[i].status == SPF_OK;
        mismatched += d[i].occupancy != d[i].active_blocks;
    }
    CHECK_EQ_I64(t.failed, 0);
    printf("  proxies (%s): %d shapes for %d configurations; build %.3f s, compile %.3f s "
           "(load %.3f), run %.3f s; occupancy ≠ NUM_ATB for %d\n",
           policy == PROXY_SMEM_EQ6 ? "Eq. 6" : "least shared", t.proxies, count, t.build_s,
           t.compile_s, t.load_s, t.run_s, mismatched);
    for (int i = 0; i < count && mismatched; i++)
        if (d[i].occupancy != d[i].active_blocks)
            printf("    m1 %2d n1 %3d v %d p %d k %d: NUM_ATB %2d, proxy occupancy %2d, "
                   "%lld B shared, %d registers\n",
                   configs[i].m1, configs[i].n1, configs[i].v, configs[i].prefetch,
                   configs[i].ksplit, d[i].active_blocks, d[i].occupancy,
                   (long long)d[i].shared_bytes, d[i].registers);
    free(d);
    return ok;
}

static void run_problem(const proxy_case *p)
{
    int64_t m = p->m, k = p->k;
    spf_matrix *a = p->dlmc ? data_case_matrix(p->dlmc, &m, &k)
                            : gen_matrix(SPF_GEN_UNIFORM, m, k, p->sparsity, 17);
    if (!a)
        return;
    printf("%s: %lld × %lld, nnz %lld, N %lld%s\n", p->name, (long long)m, (long long)k,
           (long long)spf_matrix_nnz(a), (long long)p->n, p->reorder ? ", reordered" : "");
    tile_space space = {0};
    row_orders orders = {0};
    selfcheck sc = {0};
    tune_log log = {0};
    jit_module best = {0};
    unsigned char *guarded = NULL;
    double *eq6 = NULL, *least = NULL;
    CHECK_OK(tile_space_create(p->n, SPF_TUNE_SPACE_COMPACT, &space));
    if (p->reorder)
        CHECK_OK(row_orders_create(a, space.configs, space.count, 0, &orders));
    problem prob = {.a = a, .m = spf_matrix_rows(a), .k = spf_matrix_cols(a), .n = p->n,
                    .dtype = SPF_DTYPE_F32, .bias = p->bias, .relu = p->relu};
    CHECK_OK(selfcheck_prepare(&prob, 0, &sc));
    if (!sc.b)
        goto done;

    /* C inside poisoned guards. */
    size_t c_bytes = (size_t)(m * p->n) * sizeof(float);
    CUDA_OK(cudaMalloc((void **)&guarded, c_bytes + 2 * GUARD));
    CUDA_OK(cudaMemset(guarded, POISON, c_bytes + 2 * GUARD));
    selfcheck pc = sc;
    pc.c = guarded + GUARD;
    spf_device_info dev;
    CHECK_OK(spf_device_query(0, &dev));
    int sm = dev.cc_major >= 9 ? 90 : 80;
    proxy_request q = {.a = a, .n = p->n, .dtype = SPF_DTYPE_F32, .bias = p->bias,
                       .relu = p->relu, .orders = p->reorder ? &orders : NULL, .ptx_sm = sm,
                       .sass_sm = dev.cc_major * 10 + dev.cc_minor, .check = &pc};
    eq6 = calloc((size_t)space.count, sizeof *eq6);
    least = calloc((size_t)space.count, sizeof *least);
    int ok = run_proxies(&q, space.configs, space.count, PROXY_SMEM_EQ6, eq6, p->name);
    ok &= run_proxies(&q, space.configs, space.count, PROXY_SMEM_LEAST, least, p->name);
    CUDA_OK(cudaDeviceSynchronize());
    long damage = guard_damage(guarded, c_bytes);
    CHECK_MSG(damage == 0, "%s: %ld guard bytes around C overwritten", p->name, damage);
    if (!ok)
        goto done;

    /* The real kernels of the same list: compiled, checked and timed. */
    tune_request tq = {.a = a, .n = p->n, .configs = space.configs,
                       .config_count = space.count, .reorder = p->reorder,
                       .orders = p->reorder ? &orders : NULL, .dtype = SPF_DTYPE_F32,
                       .bias = p->bias, .relu = p->relu, .ptx_sm = sm,
                       .sass_sm = dev.cc_major * 10 + dev.cc_minor, .check = &sc};
    spf_status st = tuner_run(&tq, &best, &log);
    CHECK_MSG(st == SPF_OK, "%s: tuner: %s", p->name, spf_last_error());
    if (st != SPF_OK)
        goto done;
    double *real = calloc((size_t)log.count, sizeof *real);
    double *px = calloc((size_t)log.count, sizeof *px), *pl = calloc((size_t)log.count, sizeof *pl);
    int used = 0, pick = -1, pick_least = -1;
    for (int i = 0; i < log.count; i++) {
        if (log.rows[i].outcome != TUNE_OK)
            continue;
        real[used] = log.rows[i].kernel_us;
        px[used] = eq6[i];
        pl[used++] = least[i];
        if (pick < 0 || eq6[i] < eq6[pick])
            pick = i;
        if (pick_least < 0 || least[i] < least[pick_least])
            pick_least = i;
    }
    double oracle = log.rows[log.best].kernel_us;
    printf("  real kernels: %d of %d timed, tuner %.1f s; fastest %s %.2f us\n", used, log.count,
           log.wall_s, log.rows[log.best].kernel_name, oracle);
    printf("  Spearman (proxy, real): Eq. 6 %.3f, least shared %.3f over %d configurations\n",
           spearman(px, real, used), spearman(pl, real, used), used);
    if (pick >= 0 && pick_least >= 0)
        printf("  proxy pick: Eq. 6 %s %.2f us (loss %.1f %%), least shared %s %.2f us "
               "(loss %.1f %%)\n",
               log.rows[pick].kernel_name, log.rows[pick].kernel_us,
               100.0 * (log.rows[pick].kernel_us / oracle - 1.0), log.rows[pick_least].kernel_name,
               log.rows[pick_least].kernel_us,
               100.0 * (log.rows[pick_least].kernel_us / oracle - 1.0));
    free(real);
    free(px);
    free(pl);
done:
    if (guarded)
        cudaFree(guarded);
    free(eq6);
    free(least);
    jit_module_release(&best);
    tune_log_free(&log);
    selfcheck_release(&sc);
    row_orders_free(&orders);
    tile_space_free(&space);
    spf_matrix_free(a);
}

int main(int argc, char **argv)
{
    spf_device_info dev;
    if (spf_device_query(0, &dev) != SPF_OK || !dev.available)
        SKIP("no CUDA device: %s", dev.reason);
    int quick = argc > 1 && strcmp(argv[1], "quick") == 0;
    static const proxy_case problems[] = {
        {"uniform 512×512 at 0.9, bias + ReLU", NULL, 512, 512, 0.9, 256, 1, 1, 0},
        {"DLMC transformer k 0.9",
         "dlmc/transformer/magnitude_pruning/0.9/body_encoder_layer_0_self_attention_"
         "multihead_attention_k_fully_connected.smtx",
         0, 0, 0, 256, 0, 0, 1},
        {"DLMC rn50 3×3 stage 4 0.9", "dlmc/rn50/magnitude_pruning/0.9/"
                                      "bottleneck_2_block_group3_5_1.smtx",
         0, 0, 0, 196, 0, 0, 0},
        /* a grid of many blocks per SM: NUM_ATB, and so Eq. 6, at work */
        {"uniform 1024×512 at 0.9, N 1024", NULL, 1024, 512, 0.9, 1024, 0, 0, 0},
    };
    int count = quick ? 1 : (int)(sizeof problems / sizeof problems[0]);
    for (int i = 0; i < count; i++)
        run_problem(&problems[i]);
    return check_report();
}

#endif
