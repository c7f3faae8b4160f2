/* spforge tune: the low-cost search (src/gpu/search.h) of one matrix and N,
 * with the candidates left after each stage, the time of each step, the
 * chosen kernel and its time; --exhaustive also runs the oracle (every
 * configuration of the same space compiled and timed) and reports the
 * search's loss against it and how much cheaper the search was. */
#include "cli/cli.h"
#include "cli/run_backend.h"
#include "core/budget.h"

#include "gpu/host_run.h"
#include "strategy/unrolled/search.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const dtype_names[] = {"f32", "f16", "bf16", NULL};
static const char *const space_names[] = {"compact", "full", NULL};
static const char *const strategy_names[] = {"auto", "unrolled", NULL};

/* The log lines' destination: quiet keeps only the warnings; the lines
 * go above the progress display when it is on. */
typedef struct tune_log_sink {
    int quiet;
    cli_progress *display;
} tune_log_sink;

/* The library's INFO and WARN lines on stderr as they come (DEBUG is per
 * configuration and stays hidden). */
static void log_line(spf_log_level level, const char *message, void *user)
{
    tune_log_sink *sink = user;
    if (level == SPF_LOG_WARN || (level == SPF_LOG_INFO && !sink->quiet))
        cli_progress_print(sink->display, "spforge tune: %s%s",
                           level == SPF_LOG_WARN ? "warning: " : "", message);
}

static void print_config(const spf_plan_info *p)
{
    printf("%s (%s strategy, %s)", p->kernel_name, spf_strategy_name(p->strategy), p->config);
}

/* The stage counts (a cache hit ran no stage); the evaluated candidates
 * ran as proxies or, with --no-proxies, as real kernels. */
static void print_counts(const spf_search_info *s, int proxies)
{
    printf("candidates space %d -> register %d -> utilization %d -> balance %d -> top-K %d -> "
           "%s %d -> final 1\n",
           s->space, s->after_register, s->after_utilization, s->after_balance, s->after_rank,
           proxies ? "proxies" : "real kernels", s->evaluated);
}

static void print_times(const spf_search_info *s, int proxies)
{
    printf("times      analysis %.3f s, reorder %.3f s, rank %.3f ms", s->analysis_s, s->reorder_s,
           1e3 * s->rank_s);
    if (proxies)
        printf(", proxy build %.3f s / compile %.3f s / run %.3f s", s->proxy_build_s,
               s->proxy_compile_s, s->proxy_run_s);
    printf(", %s %.3f s, self-check %.3f s; search %.3f s\n",
           proxies ? "final compile" : "compile (top-K)", s->final_compile_s, s->selfcheck_s,
           s->total_s);
}

static void json_search(json_writer *w, const spf_search_info *s)
{
    json_object_begin(w, "counts");
    json_int(w, "space", s->space);
    json_int(w, "register", s->after_register);
    json_int(w, "utilization", s->after_utilization);
    json_int(w, "balance", s->after_balance);
    json_int(w, "top_k", s->after_rank);
    json_int(w, "evaluated", s->evaluated);
    json_object_end(w);
    json_object_begin(w, "times_s");
    json_double(w, "analysis", s->analysis_s);
    json_double(w, "reorder", s->reorder_s);
    json_double(w, "rank", s->rank_s);
    json_double(w, "proxy_build", s->proxy_build_s);
    json_double(w, "proxy_compile", s->proxy_compile_s);
    json_double(w, "proxy_run", s->proxy_run_s);
    json_double(w, "final_compile", s->final_compile_s);
    json_double(w, "selfcheck", s->selfcheck_s);
    json_double(w, "search", s->total_s);
    json_object_end(w);
}

/* spf_plan_create timed on the host clock; the plan's info in *info. */
/* The plan, its info and its cost: wall seconds and CPU seconds (this
 * process and its ptxas children: the search keeps fewer cores busy than
 * the oracle, so the two ratios differ). */
static spf_status build_plan(const spf_matrix *a, int64_t n, const spf_plan_options *o,
                             spf_plan_info *info, double *wall_s, double *cpu_s, spf_plan **out)
{
    double t0 = cli_now(), c0 = cli_cpu_s();
    spf_status st = spf_plan_create(a, n, o, out);
    *wall_s = cli_now() - t0;
    *cpu_s = cli_cpu_s() - c0;
    if (st == SPF_OK)
        info->size = sizeof *info, st = spf_plan_get_info(*out, info);
    return st;
}

/* Each plan's kernel time as its own build measured it is the least of
 * noisy timings (the oracle's the least of a whole space's), taken minutes
 * apart: on 3-6 us kernels the search's pick came out up to 16 % faster
 * than the oracle's best (H200, bench/results/search-eval/). So the two are
 * timed again, alternating RETIME_ROUNDS times on the same inputs (timing.c
 * protocol each), and the loss is the ratio of the medians. f32 plans only:
 * host_run_plan takes float32 operands. */
enum { RETIME_ROUNDS = 3 };

static int compare_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static spf_status retime(const spf_plan *pick, const spf_plan *oracle, const spf_matrix *a,
                         int64_t n, int bias, int cold, double *pick_us, double *oracle_us)
{
    timing_options topt; /* the rule the plans were chosen by */
    timing_options_init(&topt);
    topt.cold = cold;
    spf_status st = SPF_OK;
    int64_t m = spf_matrix_rows(a), k = spf_matrix_cols(a);
    float *b = NULL, *c = NULL, *bias_v = NULL;
    double times[2][RETIME_ROUNDS];
    st = budget_check("retiming", bytes_mul(bytes_add(bytes_add(bytes_mul(k, n), bytes_mul(m, n)),
                                                      m + 3), sizeof *b),
                      "B, C and the bias");
    if (st != SPF_OK)
        goto done;
    b = malloc((size_t)(k * n + 1) * sizeof *b);
    c = malloc((size_t)(m * n + 1) * sizeof *c);
    bias_v = malloc((size_t)(m + 1) * sizeof *bias_v);
    if (!b || !c || !bias_v) {
        st = SPF_ERR_OUT_OF_MEMORY;
        goto done;
    }
    spf_fill_uniform(b, k * n, 11);
    spf_fill_uniform(bias_v, m, 12);
    for (int r = 0; r < RETIME_ROUNDS && st == SPF_OK; r++)
        for (int which = 0; which < 2 && st == SPF_OK; which++) {
            timing_result t;
            st = host_run_plan(which ? oracle : pick, m, k, n, b, c, bias ? bias_v : NULL, &topt,
                               &t);
            if (st == SPF_OK)
                times[which][r] = t.median_us;
        }
    if (st == SPF_OK) {
        qsort(times[0], RETIME_ROUNDS, sizeof times[0][0], compare_double);
        qsort(times[1], RETIME_ROUNDS, sizeof times[1][0], compare_double);
        *pick_us = times[0][RETIME_ROUNDS / 2];
        *oracle_us = times[1][RETIME_ROUNDS / 2];
    }
done:
    free(b);
    free(c);
    free(bias_v);
    return st;
}

int cmd_tune(const cli_command *cmd, int argc, char **argv)
{
    cli_read_args ra;
    cli_read_args_init(&ra);
    int64_t n = 0, threads = 0, top_k = 0;
    uint64_t seed = 1;
    int dtype = 0, space = SEARCH_DEFAULT_SPACE, strategy = 0, exhaustive = 0, no_proxies = 0;
    int reorder = 0, no_cache = 0, bias = 0, relu = 0, quiet = 0, progress = 0, no_progress = 0;
    int weights = SPF_TIMING_COLD;
    const char *log_path = NULL, *oracle_log_path = NULL;
    char top_k_help[128];
    snprintf(top_k_help, sizeof top_k_help,
             "candidates the rank model passes on (default: %d or %d %% of the constraints' "
             "survivors, whichever is more)",
             SEARCH_DEFAULT_TOP_K, SEARCH_TOP_K_PERCENT);
    const cli_option options[] = {
        {"n", CLI_INT, &n, "N", "columns of B and C (required)", NULL, 1, INT32_MAX, 0},
        {"exhaustive", CLI_FLAG, &exhaustive, NULL,
         "also run the oracle: every configuration of the same space compiled and timed", NULL, 0,
         0, 0},
        {"space", CLI_CHOICE, &space, "compact|full", "the tile space searched (default full)",
         space_names, 0, 0, 0},
        {"top-k", CLI_INT, &top_k, "K", top_k_help, NULL, 1, 100000, 0},
        {"no-proxies", CLI_FLAG, &no_proxies, NULL,
         "evaluate the top-K by compiling and timing their real kernels, not proxies", NULL, 0, 0,
         0},
        {"reorder", CLI_FLAG, &reorder, NULL,
         "rows in LO-SpMM Algorithm 1 order, one order per m1", NULL, 0, 0, 0},
        {"dtype", CLI_CHOICE, &dtype, "f32|f16|bf16", "storage type of B and C (default f32)",
         dtype_names, 0, 0, 0},
        {"strategy", CLI_CHOICE, &strategy, "auto|unrolled",
         "auto (default) keeps the generic CSR kernel when it is faster; unrolled keeps the "
         "searched kernel", strategy_names, 0, 0, 0},
        {"bias", CLI_FLAG, &bias, NULL, "the kernel adds a bias per row", NULL, 0, 0, 0},
        {"relu", CLI_FLAG, &relu, NULL, "the kernel applies max(., 0) last", NULL, 0, 0, 0},
        {"log", CLI_STRING, &log_path, "CSV",
         "write the search's tuning log (one row per candidate evaluated)", NULL, 0, 0, 0},
        {"oracle-log", CLI_STRING, &oracle_log_path, "CSV",
         "with --exhaustive: write the oracle's tuning log (every configuration of the space)",
         NULL, 0, 0, 0},
        {"no-cache", CLI_FLAG, &no_cache, NULL,
         "neither look the plan up in nor store it to the plan cache", NULL, 0, 0, 0},
        {"threads", CLI_INT, &threads, "T", CLI_THREADS_HELP, NULL, 0, 4096, 0},
        {"quiet", CLI_FLAG, &quiet, NULL,
         "no log lines on stderr (warnings still show; the progress display is --no-progress)",
         NULL, 0, 0, 0},
        CLI_WEIGHTS_OPTION(weights),
        CLI_PROGRESS_OPTIONS(progress, no_progress),
        {"seed", CLI_U64, &seed, "S", "seed of pattern-only values (default 1)", NULL, 0, 0, 0},
        CLI_READ_OPTIONS(ra),
    };
    cli_context ctx;
    int rc = cli_parse(&ctx, cmd, options, sizeof options / sizeof options[0], argc, argv);
    if (rc != CLI_CONTINUE)
        return rc;
    if (n == 0)
        return cli_usage_error(&ctx, "--n is required (the number of columns of B)");
    if (oracle_log_path && !exhaustive)
        return cli_usage_error(&ctx, "--oracle-log needs --exhaustive (the oracle it logs)");
    if (progress && no_progress)
        return cli_usage_error(&ctx, "--progress and --no-progress exclude each other");
    cli_progress display;
    cli_progress_init(&display, "tune", cli_progress_wanted(progress, no_progress, ctx.json));

    spf_matrix *a = NULL;
    spf_plan *plan = NULL, *oracle = NULL;
    spf_matrix_stats s;
    spf_status st = cli_read_matrix(&ra, seed, ctx.args[0], &a);
    if (st == SPF_OK)
        st = spf_matrix_stats_compute(a, &s);
    if (st != SPF_OK)
        return cli_fail_status(&ctx, st);
    spf_device_info dev;
    st = spf_device_query(0, &dev);
    if (st != SPF_OK) {
        rc = cli_fail_status(&ctx, st);
        goto done;
    }
    if (!dev.available) {
        rc = cli_fail(&ctx, SPF_ERR_NO_DEVICE, "%s (the search compiles and times "
                      "kernels on a GPU)", dev.reason);
        goto done;
    }

    spf_plan_options o;
    spf_plan_options_init(&o);
    o.strategy = strategy ? SPF_STRATEGY_UNROLLED : SPF_STRATEGY_AUTO;
    o.dtype = (spf_dtype)dtype;
    o.bias = bias;
    o.relu = relu;
    o.host_threads = (int)threads;
    o.reorder = reorder;
    o.search = 1;
    o.tune_space = (spf_tune_space)space;
    o.search_top_k = (int)top_k;
    o.search_proxies = !no_proxies;
    o.timing = (spf_timing)weights;
    o.cache = !no_cache;
    if (display.on) {
        o.progress = cli_progress_event;
        o.progress_user = &display;
    }
    tune_log_sink sink = {quiet, &display};
    spf_set_log_callback(log_line, &sink);
    spf_plan_info info = {.size = sizeof info}, oinfo = {.size = sizeof oinfo};
    double wall_s = 0, oracle_s = 0, cpu_s = 0, oracle_cpu_s = 0;
    cli_progress_label(&display, exhaustive ? "search" : NULL);
    st = build_plan(a, n, &o, &info, &wall_s, &cpu_s, &plan);
    if (st == SPF_OK && log_path) {
        if (info.from_cache)
            cli_progress_print(&display, "spforge tune: warning: --log %s not written: the plan "
                                         "came from the cache, nothing was evaluated (--no-cache "
                                         "searches again)",
                               log_path);
        else
            st = spf_plan_write_tuning_log(plan, log_path);
    }
    if (st == SPF_OK && exhaustive) {
        spf_plan_options e = o;
        e.search = 0;
        e.exhaustive = 1;
        e.cache = 0; /* the oracle is measured, never looked up */
        cli_progress_label(&display, "oracle");
        st = build_plan(a, n, &e, &oinfo, &oracle_s, &oracle_cpu_s, &oracle);
        if (st == SPF_OK && oracle_log_path)
            st = spf_plan_write_tuning_log(oracle, oracle_log_path);
    }
    double pick_us = 0, oracle_us = 0; /* re-timed side by side (f32 only) */
    if (st == SPF_OK && exhaustive && dtype == SPF_DTYPE_F32) {
        cli_progress_label(&display, NULL);
        cli_progress_note(&display, 1, "timing the search's pick and the oracle's best side by side");
        st = retime(plan, oracle, a, n, bias, weights == SPF_TIMING_COLD, &pick_us, &oracle_us);
    }
    cli_progress_finish(&display);
    spf_set_log_callback(NULL, NULL);
    if (st != SPF_OK) {
        rc = cli_fail_status(&ctx, st);
        goto done;
    }

    const spf_search_info *si = &info.search;
    /* The pick's loss against the oracle (re-timed side by side where it
     * could be, else from the builds' own timings), and the cost ratio. */
    double build_loss =
        exhaustive && oinfo.kernel_us > 0 ? info.kernel_us / oinfo.kernel_us - 1.0 : 0;
    double loss = oracle_us > 0 ? pick_us / oracle_us - 1.0 : build_loss;
    double cheaper = exhaustive && wall_s > 0 ? oracle_s / wall_s : 0;
    double cheaper_cpu = exhaustive && cpu_s > 0 ? oracle_cpu_s / cpu_s : 0;
    if (ctx.json) {
        json_writer w;
        cli_json_begin(&w, &ctx);
        json_string(&w, "input", ctx.args[0]);
        cli_json_device(&w, "device", &dev);
        cli_json_stats(&w, "stats", &s);
        json_int(&w, "n", n);
        json_string(&w, "dtype", dtype_names[dtype]);
        json_string(&w, "space", space_names[space]);
        if (top_k)
            json_int(&w, "top_k", top_k);
        else
            json_null(&w, "top_k"); /* the default: counts.top_k says how many went on */
        json_bool(&w, "proxies", !no_proxies);
        json_bool(&w, "reorder", reorder);
        json_bool(&w, "from_cache", info.from_cache);
        if (!info.from_cache)
            json_search(&w, si);
        cli_json_plan(&w, "chosen", &info);
        json_double(&w, "wall_s", wall_s);
        json_double(&w, "cpu_s", cpu_s);
        if (exhaustive) {
            json_object_begin(&w, "exhaustive");
            json_int(&w, "configs_tried", oinfo.configs_tried);
            json_double(&w, "wall_s", oracle_s);
            json_double(&w, "cpu_s", oracle_cpu_s);
            cli_json_plan(&w, "best", &oinfo);
            json_double(&w, "loss", loss);
            json_double(&w, "loss_build_timings", build_loss);
            json_bool(&w, "retimed", oracle_us > 0);
            json_double(&w, "retimed_search_us", pick_us);
            json_double(&w, "retimed_oracle_us", oracle_us);
            json_double(&w, "cost_ratio", cheaper);
            json_double(&w, "cost_ratio_cpu", cheaper_cpu);
            json_object_end(&w);
        }
        rc = cli_json_end(&ctx, &w);
        goto done;
    }
    printf("input      %s\n", ctx.args[0]);
    cli_print_stats(&s);
    printf("device     ");
    cli_print_device(&dev);
    char k_text[24] = "default";
    if (top_k)
        snprintf(k_text, sizeof k_text, "%" PRId64, top_k);
    printf("problem    C = A*B%s%s, N = %" PRId64 ", %s; space %s, top-K %s, %s, %s\n",
           bias ? " + bias" : "", relu ? ", ReLU" : "", n, dtype_names[dtype], space_names[space],
           k_text, no_proxies ? "real kernels" : "proxies", reorder ? "reordered rows" : "rows in order");
    if (info.from_cache) {
        printf("cache      hit: loaded from the plan cache in %.3f s, nothing searched\n", wall_s);
    } else {
        print_counts(si, !no_proxies);
        print_times(si, !no_proxies);
        printf("cache      %s\n", no_cache ? "off" : "miss: searched");
    }
    printf("chosen     ");
    print_config(&info);
    printf(": %.2f us, self-check error %.3g; plan built in %.3f s (%.2f CPU s)\n",
           info.kernel_us, info.verify_error, wall_s, cpu_s);
    if (exhaustive) {
        printf("oracle     %d configurations of the %s space in %.3f s (%.1f CPU s); best ",
               oinfo.configs_tried, space_names[space], oracle_s, oracle_cpu_s);
        print_config(&oinfo);
        printf(": %.2f us\n", oinfo.kernel_us);
        if (oracle_us > 0)
            printf("retimed    side by side, %d rounds each: search's pick %.2f us, oracle's "
                   "best %.2f us\n", RETIME_ROUNDS, pick_us, oracle_us);
        printf("loss       the search's pick is %+.1f%% against the oracle%s; the search was "
               "%.1fx cheaper in wall time, %.1fx in CPU time\n",
               100.0 * loss, oracle_us > 0 ? " (retimed)" : "", cheaper, cheaper_cpu);
    }
    rc = CLI_EXIT_OK;
done:
    cli_progress_destroy(&display);
    spf_plan_free(plan);
    spf_plan_free(oracle);
    spf_matrix_free(a);
    return rc;
}
