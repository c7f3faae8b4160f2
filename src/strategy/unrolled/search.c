/* The low-cost search: search.h gives the stages and the fall-backs;
 * search_shortlist.c holds the CPU stages. */
#include "strategy/unrolled/search.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/matrix.h"
#include "strategy/unrolled/proxy_eval.h"
#include "gpu/timing.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The search's log: one row per shortlisted candidate, before anything ran. */
static spf_status log_begin(const search_request *q, const search_shortlist *s, tune_log *log)
{
    *log = (tune_log){.m = spf_matrix_rows(q->a), .k = spf_matrix_cols(q->a), .n = q->n,
                      .nnz = spf_matrix_nnz(q->a), .dtype = q->dtype,
                      .f16x2_accumulate = q->f16x2_accumulate, .bias = q->bias, .relu = q->relu,
                      .reorder = q->reorder, .sm = q->sass_sm, .best = -1};
    log->rows = mem_calloc((size_t)(s->count ? s->count : 1), sizeof *log->rows);
    if (!log->rows)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "%d log rows", s->count);
    log->count = s->count;
    for (int i = 0; i < s->count; i++) {
        tune_row_init(&log->rows[i], &s->configs[i], q->dtype, q->f16x2_accumulate);
        memcpy(log->rows[i].features, s->features + (size_t)i * RANK_FEATURE_COUNT,
               sizeof log->rows[i].features);
    }
    return SPF_OK;
}

/* Compile, check and time the candidates pick[0 .. count) of s with the
 * tuner; their rows in log take the tuner's results (proxy_us and the
 * features stay), and *best the fastest kernel when one passed. The
 * seconds spent outside the self-checks and the timing (generation,
 * ptxas, link, load) go to *compile_s, the self-checks to *check_s. */
static spf_status run_real(const search_request *q, const search_shortlist *s, const int *pick,
                           int count, jit_module *best, tune_log *log, double *compile_s,
                           double *check_s)
{
    spf_status status = SPF_OK;
    tune_log part = {0};
    spf_kernel_config *list = mem_alloc_array((size_t)(count ? count : 1), sizeof *list);
    if (!list)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "%d candidates", count);
    for (int i = 0; i < count; i++)
        list[i] = s->configs[pick[i]];
    tune_request tq = {.a = q->a, .n = q->n, .configs = list, .config_count = count,
                       .space = q->space, .reorder = q->reorder,
                       .orders = q->reorder ? &s->orders : NULL, .dtype = q->dtype,
                       .f16x2_accumulate = q->f16x2_accumulate, .bias = q->bias,
                       .relu = q->relu, .ptx_sm = q->ptx_sm, .sass_sm = q->sass_sm,
                       .threads = q->threads, .code_budget = q->code_budget, .check = q->check,
                       .search_final = 1};
    status = tuner_run(&tq, best, &part);
    double outside = 0;
    for (int i = 0; i < part.count; i++) {
        tune_row *row = &log->rows[pick[i]];
        double proxy_us = row->proxy_us;
        double features[RANK_FEATURE_COUNT];
        memcpy(features, row->features, sizeof features);
        *row = part.rows[i];
        row->proxy_us = proxy_us;
        memcpy(row->features, features, sizeof features);
        *check_s += part.rows[i].check_s;
        outside += part.rows[i].check_s + part.rows[i].time_s;
    }
    *compile_s += part.wall_s - outside;
    if (status == SPF_OK)
        log->best = pick[part.best];
    tune_log_free(&part);
    mem_free(list);
    return status;
}

/* Whether a tuner failure means only that no candidate passed (the next
 * candidate may), not that the machinery failed. */
static int none_passed(spf_status st)
{
    return st == SPF_ERR_VERIFY || st == SPF_ERR_UNSUPPORTED || st == SPF_ERR_COMPILE;
}

/* §5: time the proxies of the shortlist, then build the fastest few
 * (SEARCH_PROXY_FINALISTS) and keep the fastest real kernel; see search.h
 * for what happens when proxies or finalists fail. Sets *fallback when the
 * proxies failed as a whole (nothing built then). */
static spf_status evaluate_proxies(const search_request *q, const search_shortlist *s,
                                   jit_module *best, tune_log *log, spf_search_info *info,
                                   int *fallback)
{
    spf_status status = SPF_OK;
    int count = s->count;
    double *proxy_us = mem_calloc((size_t)count, sizeof *proxy_us);
    int *order = mem_alloc_array((size_t)count, sizeof *order);
    int *failed = mem_alloc_array((size_t)count, sizeof *failed);
    int *pick = mem_alloc_array((size_t)count, sizeof *pick);
    if (!proxy_us || !order || !failed || !pick)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "proxies of %d candidates", count);
    proxy_request pq = {.a = q->a, .n = q->n, .dtype = q->dtype,
                        .f16x2_accumulate = q->f16x2_accumulate, .bias = q->bias, .relu = q->relu,
                        .orders = q->reorder ? &s->orders : NULL, .ptx_sm = q->ptx_sm,
                        .sass_sm = q->sass_sm, .threads = q->threads, .check = q->check};
    proxy_timings pt = {0};
    TRY(progress_begin(SPF_STAGE_PROXIES, count, "%d candidates", count));
    spf_status st = progress_end(SPF_STAGE_PROXIES,
                                 proxy_evaluate(&pq, s->configs, count, proxy_us, &pt));
    info->proxy_build_s = pt.build_s;
    info->proxy_compile_s = pt.compile_s;
    info->proxy_run_s = pt.run_s;
    if (st == SPF_ERR_OUT_OF_MEMORY || st == SPF_ERR_CANCELLED)
        TRY(st); /* not a reason to fall back: the detail says why */
    int good = st == SPF_OK ? search_proxy_order(proxy_us, count, order, failed) : 0;
    if (good == 0) {
        log_msg(SPF_LOG_WARN, "search: proxies failed (%s); compiling and timing the %d "
                              "candidates' real kernels instead",
                st != SPF_OK ? spf_last_error() : "no proxy gave a time", count);
        error_clear();
        *fallback = 1;
        goto fail;
    }
    for (int i = 0; i < count; i++) {
        log->rows[i].proxy_us = proxy_us[i] > 0 && isfinite(proxy_us[i]) ? proxy_us[i] : 0;
        log->rows[i].outcome = TUNE_PROXY_ONLY;
    }
    int extra = count - good;
    if (extra > 0)
        log_msg(SPF_LOG_WARN, "search: %d of %d proxies failed; their real kernels are compiled "
                              "and timed beside the finalists",
                extra, count);
    log_msg(SPF_LOG_INFO,
            "search: proxies: %d run (build %.3f s, compile %.3f s, run %.3f s); fastest %s at "
            "%.2f us",
            good, pt.build_s, pt.compile_s, pt.run_s, log->rows[order[0]].kernel_name,
            proxy_us[order[0]]);
    /* The finalists (and the failed ones); down the proxy order while
     * every finalist's real kernel fails. */
    for (int next = 0; next < good; next += SEARCH_PROXY_FINALISTS) {
        int finalists =
            good - next < SEARCH_PROXY_FINALISTS ? good - next : SEARCH_PROXY_FINALISTS;
        memcpy(pick, order + next, (size_t)finalists * sizeof *pick);
        memcpy(pick + finalists, failed, (size_t)extra * sizeof *pick);
        status = run_real(q, s, pick, finalists + extra, best, log, &info->final_compile_s,
                          &info->selfcheck_s);
        if (status == SPF_OK || !none_passed(status))
            break;
        log_msg(SPF_LOG_WARN, "search: the %d finalists from %s on failed as real kernels (%s); "
                              "building the next by proxy time",
                finalists, log->rows[order[next]].kernel_name, spf_last_error());
        extra = 0; /* the failed proxies' kernels ran once */
    }
fail:
    mem_free(proxy_us);
    mem_free(order);
    mem_free(failed);
    mem_free(pick);
    return status;
}

spf_status search_run(const search_request *q, jit_module *best, spf_search_info *info,
                      tune_log *log)
{
    spf_status status = SPF_OK;
    search_shortlist s = {0};
    int *all = NULL;
    double t0 = timing_now_s();
    memset(best, 0, sizeof *best);
    memset(log, 0, sizeof *log);
    TRY(search_shortlist_create(q, &s, info));
    TRY(log_begin(q, &s, log));
    if (s.count == 0)
        FAIL_GOTO(SPF_ERR_UNSUPPORTED,
                  "no configuration of the space survives the constraints (space %d, register "
                  "%d, utilization %d, balance %d)",
                  info->space, info->after_register, info->after_utilization,
                  info->after_balance);
    int real = !q->proxies;
    if (q->proxies)
        TRY(evaluate_proxies(q, &s, best, log, info, &real));
    if (real) {
        all = mem_alloc_array((size_t)s.count, sizeof *all);
        if (!all)
            FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "%d candidates", s.count);
        for (int i = 0; i < s.count; i++)
            all[i] = i;
        log_msg(SPF_LOG_INFO, "search: compiling and timing %d real kernels", s.count);
        TRY(run_real(q, &s, all, s.count, best, log, &info->final_compile_s,
                     &info->selfcheck_s));
    }
    const tune_row *r = &log->rows[log->best];
    log_msg(SPF_LOG_INFO, "search: chose %s: %.2f us, self-check error %.2g", r->kernel_name,
            r->kernel_us, r->verify_error);
fail:
    info->total_s = timing_now_s() - t0;
    log->wall_s = info->total_s;
    search_shortlist_free(&s);
    mem_free(all);
    if (status != SPF_OK)
        jit_module_release(best);
    return status;
}
