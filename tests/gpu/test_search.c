/* The low-cost search on the GPU (spf_plan_options.search, gpu/search.h):
 * on random and DLMC problems, with proxies and with real kernels, with
 * and without reordering, the plan computes C = A·B (+ bias, ReLU) within
 * tolerance on fresh random B (odd N: 49, 127), the stage counts never
 * grow, every time is recorded and the tuning log is written; then the
 * exhaustive oracle over the same space, whose best must not be slower
 * than the search's pick beyond timing noise. The loss of the pick against
 * the oracle is printed, not asserted (bench/ measures it). */
#define _POSIX_C_SOURCE 200809L

#include "test_util.h"

#include "plan_error.h"
#include "strategy/unrolled/search.h"

#include <stdlib.h>
#include <unistd.h>

#ifndef SPF_HAVE_CUDA
int main(int argc, char **argv) { SKIP("no CUDA device: built without CUDA"); }
#else

static uint64_t next_seed = 7000;


static spf_plan_options search_options(spf_tune_space space, int proxies, int reorder, int top_k)
{
    spf_plan_options o;
    spf_plan_options_init(&o);
    o.strategy = SPF_STRATEGY_UNROLLED; /* the searched kernel itself, not AUTO's pick */
    o.search = 1;
    o.tune_space = space;
    o.search_proxies = proxies;
    o.reorder = reorder;
    o.search_top_k = top_k;
    o.bias = 1;
    o.relu = 1;
    return o;
}

/* One search: the plan must exist and compute the product; the counts,
 * times and log must hold together. The plan's kernel time, or 0. */
static double check_search(const char *label, const spf_matrix *a, int64_t n,
                           const spf_plan_options *o)
{
    spf_plan *p = NULL;
    spf_status st = spf_plan_create(a, n, o, &p);
    CHECK_MSG(st == SPF_OK, "%s N=%lld: %s: %s", label, (long long)n, spf_status_string(st),
              spf_last_error());
    if (!p)
        return 0;
    spf_plan_info info = {.size = sizeof info};
    CHECK_OK(spf_plan_get_info(p, &info));
    const spf_search_info *s = &info.search;
    int k = o->search_top_k ? o->search_top_k : SEARCH_DEFAULT_TOP_K;
    CHECK_MSG(s->space >= s->after_register && s->after_register >= s->after_utilization &&
                  s->after_utilization >= s->after_balance && s->after_balance >= s->after_rank &&
                  s->after_rank >= 1 && s->after_rank <= k && s->evaluated == s->after_rank,
              "%s: counts %d %d %d %d %d %d", label, s->space, s->after_register,
              s->after_utilization, s->after_balance, s->after_rank, s->evaluated);
    CHECK_MSG(s->analysis_s > 0 && s->final_compile_s > 0 && s->selfcheck_s > 0 &&
                  s->total_s >= s->analysis_s + s->final_compile_s &&
                  (s->reorder_s > 0) == (o->reorder != 0) &&
                  (s->proxy_run_s > 0 || !o->search_proxies),
              "%s: times analysis %g reorder %g rank %g proxy %g/%g/%g final %g check %g total %g",
              label, s->analysis_s, s->reorder_s, s->rank_s, s->proxy_build_s, s->proxy_compile_s,
              s->proxy_run_s, s->final_compile_s, s->selfcheck_s, s->total_s);
    CHECK_MSG(info.strategy == SPF_STRATEGY_UNROLLED && info.kernel_us > 0 &&
                  info.verify_error >= 0 && info.verify_error <= 1e-5,
              "%s: strategy %d, %g us, self-check %g", label, (int)info.strategy, info.kernel_us,
              info.verify_error);
    CHECK(info.configs_tried == s->evaluated && !info.from_cache);
    double err = plan_product_error(p, a, n, o, &next_seed);
    CHECK_MSG(err <= 1e-5, "%s N=%lld %s: error %.3g", label, (long long)n, info.kernel_name, err);

    char dir[] = "/tmp/spf-test-search-XXXXXX", path[64];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/log.csv", dir);
    CHECK_OK(spf_plan_write_tuning_log(p, path));
    size_t size = 0;
    unsigned char *text = file_slurp(path, &size);
    int lines = 0;
    for (size_t i = 0; text && i < size; i++)
        lines += text[i] == '\n';
    CHECK_MSG(lines == 1 + s->evaluated, "%s: log of %d lines for %d candidates", label, lines,
              s->evaluated);
    free(text);
    unlink(path);
    rmdir(dir);

    printf("%-26s N=%-4lld %s%s space %d -> reg %d -> util %d -> bal %d -> top %d: %s %.2f us, "
           "err %.2e; analysis %.3f reorder %.3f rank %.4f proxy %.3f/%.3f/%.3f final %.3f "
           "check %.3f total %.3f s\n",
           label, (long long)n, o->search_proxies ? "proxies" : "real", o->reorder ? "+reorder" : "",
           s->space, s->after_register, s->after_utilization, s->after_balance, s->after_rank,
           info.kernel_name, info.kernel_us, err, s->analysis_s, s->reorder_s, s->rank_s,
           s->proxy_build_s, s->proxy_compile_s, s->proxy_run_s, s->final_compile_s,
           s->selfcheck_s, s->total_s);
    double us = info.kernel_us;
    spf_plan_free(p);
    return us;
}

/* The oracle over the same space (and row orders): never slower than the
 * pick beyond noise, since the pick is one of its configurations. */
static void check_oracle(const char *label, const spf_matrix *a, int64_t n,
                         const spf_plan_options *searched, double search_us)
{
    spf_plan_options o = *searched;
    o.search = 0;
    o.exhaustive = 1;
    spf_plan *p = NULL;
    spf_status st = spf_plan_create(a, n, &o, &p);
    CHECK_MSG(st == SPF_OK, "%s oracle: %s: %s", label, spf_status_string(st), spf_last_error());
    if (!p)
        return;
    spf_plan_info info = {.size = sizeof info};
    CHECK_OK(spf_plan_get_info(p, &info));
    CHECK(plan_product_error(p, a, n, &o, &next_seed) <= 1e-5);
    /* The tuner's timings of one kernel vary by a few percent run to run. */
    CHECK_MSG(info.kernel_us <= 1.25 * search_us + 0.5,
              "%s: the oracle's best %.2f us is slower than the search's pick %.2f us", label,
              info.kernel_us, search_us);
    printf("%-26s N=%-4lld oracle: %d configurations in %.2f s, best %s %.2f us; the search's "
           "pick loses %+.1f%%\n",
           label, (long long)n, info.configs_tried, info.tune_s, info.kernel_name, info.kernel_us,
           100.0 * (search_us / info.kernel_us - 1.0));
    spf_plan_free(p);
}

static void test_random(void)
{
    /* uneven rows with empty ones, M not a multiple of 32 */
    spf_matrix *a = gen_matrix(SPF_GEN_MAGNITUDE, 300, 256, 0.9, 31);
    const int64_t ns[] = {49, 127};
    for (int i = 0; i < 2; i++) {
        spf_plan_options o = search_options(SEARCH_DEFAULT_SPACE, 1, 0, 0);
        check_search("random300x256", a, ns[i], &o);
        o = search_options(SEARCH_DEFAULT_SPACE, 0, 0, 3);
        check_search("random300x256", a, ns[i], &o);
        o = search_options(SEARCH_DEFAULT_SPACE, 1, 1, 0);
        check_search("random300x256", a, ns[i], &o);
    }
    /* The oracle over the compact space (the full one takes minutes). */
    spf_plan_options o = search_options(SPF_TUNE_SPACE_COMPACT, 1, 0, 0);
    double us = check_search("random300x256 compact", a, 127, &o);
    if (us > 0)
        check_oracle("random300x256 compact", a, 127, &o, us);
    spf_matrix_free(a);
}

/* AUTO still compares the searched kernel with the generic one. */
static void test_auto(void)
{
    spf_matrix *a = gen_matrix(SPF_GEN_UNIFORM, 512, 512, 0.95, 33);
    spf_plan_options o = search_options(SEARCH_DEFAULT_SPACE, 1, 0, 0);
    o.strategy = SPF_STRATEGY_AUTO;
    spf_plan *p = NULL;
    CHECK_OK(spf_plan_create(a, 256, &o, &p));
    if (p) {
        spf_plan_info info = {.size = sizeof info};
        CHECK_OK(spf_plan_get_info(p, &info));
        CHECK(info.strategy == SPF_STRATEGY_UNROLLED || info.strategy == SPF_STRATEGY_GENERIC);
        CHECK(info.search.after_rank >= 1 && info.kernel_us > 0);
        CHECK(plan_product_error(p, a, 256, &o, &next_seed) <= 1e-5);
        printf("auto 512x512 N=256: %s %.2f us\n", info.kernel_name, info.kernel_us);
    }
    spf_plan_free(p);
    spf_matrix_free(a);
}

static void test_dlmc(void)
{
    const char *dir = check_data_dir();
    if (!dir)
        return;
    struct {
        const char *file, *label;
        int64_t n;
    } cases[] = {
        {"dlmc/rn50/magnitude_pruning/0.9/bottleneck_2_block_group2_3_1.smtx",
         "dlmc rn50 3x3 128x1152", 49},
        {"dlmc/transformer/magnitude_pruning/0.9/"
         "body_encoder_layer_0_self_attention_multihead_attention_k_fully_connected.smtx",
         "dlmc transformer 512x512", 127},
    };
    for (int i = 0; i < 2; i++) {
        spf_matrix *a = data_matrix(dir, cases[i].file, 7);
        if (!a)
            continue;
        spf_plan_options o = search_options(SEARCH_DEFAULT_SPACE, 1, 0, 0);
        check_search(cases[i].label, a, cases[i].n, &o);
        o.reorder = 1;
        double us = check_search(cases[i].label, a, cases[i].n, &o);
        if (i == 0 && us > 0) {
            o.tune_space = SPF_TUNE_SPACE_COMPACT;
            us = check_search(cases[i].label, a, cases[i].n, &o);
            if (us > 0)
                check_oracle(cases[i].label, a, cases[i].n, &o, us);
        }
        spf_matrix_free(a);
    }
}

/* The library's INFO and WARN lines: the stages and any fall-back. */
static void print_log(spf_log_level level, const char *message, void *user)
{
    (void)user;
    if (level != SPF_LOG_DEBUG)
        printf("  [library %d] %s\n", (int)level, message);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0); /* progress survives a timeout */
    setenv("SPFORGE_CACHE_DIR", "off", 1); /* every search runs */
    spf_set_log_callback(print_log, NULL);
    spf_device_info dev;
    if (spf_device_query(0, &dev) != SPF_OK || !dev.available)
        SKIP("no CUDA device: %s", dev.reason);
    printf("device: %s (sm_%d%d, %d SMs)\n", dev.name, dev.cc_major, dev.cc_minor, dev.sm_count);
    test_random();
    test_auto();
    test_dlmc();
    return check_report();
}

#endif /* SPF_HAVE_CUDA */
