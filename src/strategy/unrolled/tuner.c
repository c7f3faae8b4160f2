/* Exhaustive tuning in batches: a batch of configurations is generated
 * side by side, all its programs' units go to ptxas in one parallel run
 * (so small and large programs share the cores), then each is linked,
 * loaded, checked and timed on the device in turn. Batches bound the
 * memory held in PTX text and cubins. SparseRT §4.3 grid-searches the same
 * way; LO-SpMM replaces this with a rank model trained on its log
 * (src/gpu/search.c). */
#define _POSIX_C_SOURCE 200809L

#include "strategy/unrolled/tuner.h"

#include "strategy/unrolled/schedule.h"
#include "strategy/unrolled/unrolled.h"
#include "core/alloc.h"
#include "core/error.h"
#include "core/file.h"
#include "core/log.h"
#include "core/parallel.h"
#include "core/progress.h"
#include "core/dtype.h"
#include "gpu/timing.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

const char *tune_outcome_name(tune_outcome o)
{
    switch (o) {
    case TUNE_OK: return "ok";
    case TUNE_NOT_GENERATED: return "not_generated";
    case TUNE_COMPILE_FAILED: return "compile_failed";
    case TUNE_SPILLS: return "spills";
    case TUNE_LOAD_FAILED: return "load_failed";
    case TUNE_WRONG: return "wrong";
    case TUNE_LAUNCH_FAILED: return "launch_failed";
    case TUNE_PROXY_ONLY: return "proxy_only";
    }
    return "?";
}

void tune_row_init(tune_row *row, const spf_kernel_config *cfg, spf_dtype dtype,
                   int f16x2_accumulate)
{
    memset(row, 0, sizeof *row);
    row->cfg = *cfg;
    row->threads = (int)tiling_threads(cfg);
    row->verify_error = -1.0;
    unrolled_kernel_name(cfg, dtype, f16x2_accumulate, row->kernel_name);
}

spf_status tune_features(const tile_problem *p, spf_dtype dtype, const spf_kernel_config *configs,
                         int count, double *out)
{
    spf_status status = SPF_OK;
    /* One summary per distinct m1; a list holds a handful of them. */
    rank_tiles *tiles = mem_calloc((size_t)(count ? count : 1), sizeof *tiles);
    int *usable = mem_calloc((size_t)(count ? count : 1), sizeof *usable);
    int distinct = 0;
    if (!tiles || !usable)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "tile summaries of %d configurations", count);
    for (int i = 0; i < count; i++) {
        int t = 0;
        while (t < distinct && tiles[t].m1 != configs[i].m1)
            t++;
        if (t == distinct) {
            /* rank_tiles_compute reads p->row_order: give it this m1's. */
            tile_problem one = {p->a, p->n, tile_problem_row_order(p, configs[i].m1), NULL};
            spf_status st = rank_tiles_compute(&one, configs[i].m1, &tiles[t]);
            if (st == SPF_ERR_UNSUPPORTED) { /* over the tile limit */
                error_clear();
            } else if (st != SPF_OK) {
                TRY(st);
            } else {
                usable[t] = 1;
            }
            tiles[t].m1 = configs[i].m1;
            distinct++;
        }
        double *f = out + (size_t)i * RANK_FEATURE_COUNT;
        if (usable[t]) {
            tile_problem one = {p->a, p->n, tile_problem_row_order(p, configs[i].m1), NULL};
            rank_features(&tiles[t], &one, &configs[i], dtype, f);
        } else {
            for (int j = 0; j < RANK_FEATURE_COUNT; j++)
                f[j] = NAN;
        }
    }
fail:
    mem_free(tiles);
    mem_free(usable);
    return status;
}

void tune_log_free(tune_log *log)
{
    if (!log)
        return;
    mem_free(log->rows);
    memset(log, 0, sizeof *log);
}

static void set_reason(tune_row *row, tune_outcome outcome, const char *why)
{
    row->outcome = outcome;
    snprintf(row->reason, sizeof row->reason, "%s", why);
}

/* ------------------------------------------------------------ a batch */

typedef struct batch {
    const tune_request *req;
    const row_orders *orders; /* with reorder: one per m1, else NULL   */
    tune_row *rows;        /* the batch's rows                        */
    ptx_program *programs; /* one per row; zeroed if not generated    */
} batch;

static spf_status generate_range(void *ctx, int64_t begin, int64_t end, int worker)
{
    (void)worker;
    batch *b = ctx;
    const tune_request *q = b->req;
    for (int64_t i = begin; i < end; i++) {
        tune_row *row = &b->rows[i];
        double t0 = timing_now_s();
        spf_status st = unrolled_generate(q->a, row_orders_find(b->orders, row->cfg.m1), q->n,
                                          &row->cfg, q->dtype,
                                          q->f16x2_accumulate, q->bias, q->relu, q->ptx_sm,
                                          q->code_budget, &b->programs[i]);
        row->generate_s = timing_now_s() - t0;
        if (st == SPF_ERR_OUT_OF_MEMORY)
            return st;
        if (st != SPF_OK) {
            set_reason(row, TUNE_NOT_GENERATED, spf_last_error());
            continue;
        }
        row->units = b->programs[i].unit_count;
        for (int u = 0; u < b->programs[i].unit_count; u++)
            row->code_bytes += (int64_t)b->programs[i].units[u].size;
    }
    return SPF_OK;
}

typedef struct launch_ctx {
    const jit_module *module;
    const void *b;
    void *c;
    const float *bias;
} launch_ctx;

static spf_status launch_module(void *ctx, const void *b, void *c, const float *bias, void *stream)
{
    return jit_launch(((launch_ctx *)ctx)->module, b, c, bias, stream);
}

static spf_status launch_timed(void *ctx, void *stream)
{
    launch_ctx *l = ctx;
    return jit_launch(l->module, l->b, l->c, l->bias, stream);
}

/* Self-check, then time, the loaded kernel of l on the request's buffers;
 * 1 when it passed (row->outcome TUNE_OK, kernel_us set). */
static int check_and_time(const tune_request *q, launch_ctx *l, tune_row *row)
{
    double tolerance =
        dtype_tolerance(q->dtype, q->f16x2_accumulate ? SPF_MATH_F16X2 : SPF_MATH_DEFAULT);
    double t0 = timing_now_s();
    spf_status st = selfcheck_measure(q->check, launch_module, l, &row->verify_error);
    row->check_s = timing_now_s() - t0;
    if (st != SPF_OK) {
        set_reason(row, TUNE_LAUNCH_FAILED, spf_last_error());
        return 0;
    }
    if (!(row->verify_error <= tolerance)) {
        char why[96];
        snprintf(why, sizeof why, "relative error %.3g over the tolerance %.0e", row->verify_error,
                 tolerance);
        set_reason(row, TUNE_WRONG, why);
        return 0;
    }
    timing_options topt;
    selfcheck_timing(q->check, &topt);
    topt.target_round_us = 200.0; /* hundreds of configurations: keep each cheap */
    timing_result tr;
    t0 = timing_now_s();
    st = timing_measure(launch_timed, l, NULL, &topt, &tr);
    row->time_s = timing_now_s() - t0;
    if (st != SPF_OK) {
        set_reason(row, TUNE_LAUNCH_FAILED, spf_last_error());
        return 0;
    }
    row->kernel_us = tr.median_us;
    row->outcome = TUNE_OK;
    return 1;
}

/* Link, load, check and time one compiled configuration; keep it in *best
 * if it is the fastest so far. Only CUDA errors that leave the context
 * unusable would matter beyond this row, and those surface in the next
 * row's calls too; each row records its own failure. */
static void evaluate(const tune_request *q, const ptx_program *p, const jit_object *o,
                     tune_row *row, jit_module *best, double *best_us)
{
    jit_module m;
    jit_timings t = {0};
    row->registers = o->registers;
    row->spill_bytes = o->spill_bytes;
    row->compile_s = o->compile_s;
    row->assembler = o->assembler;
    if (o->status != SPF_OK) {
        set_reason(row, TUNE_COMPILE_FAILED, o->log ? o->log : "the assembler failed");
        return;
    }
    if (o->spill_bytes > 0) {
        char why[64];
        snprintf(why, sizeof why, "%d bytes of register spills", o->spill_bytes);
        set_reason(row, TUNE_SPILLS, why);
        return;
    }
    if (jit_link_load(p, o, &m, &t) != SPF_OK) {
        set_reason(row, TUNE_LOAD_FAILED, spf_last_error());
        return;
    }
    row->link_s = t.link_s;
    row->load_s = t.load_s;
    row->registers = m.registers;
    launch_ctx l = {&m, q->check->b, q->check->c, q->check->bias};
    if (check_and_time(q, &l, row) && row->kernel_us < *best_us) {
        *best_us = row->kernel_us;
        jit_module_release(best);
        *best = m;
        return;
    }
    jit_module_release(&m);
}

/* The progress stage of q's configurations. */
static spf_stage stage_of(const tune_request *q)
{
    return q->search_final ? SPF_STAGE_FINAL : SPF_STAGE_TUNE;
}

/* The batch of count configurations from index first of the whole list
 * (for the progress count). */
static spf_status run_batch(const tune_request *q, const row_orders *orders, tune_row *rows,
                            int first, int count, jit_module *best, double *best_us)
{
    spf_status status = SPF_OK;
    ptx_program *programs = mem_calloc((size_t)count, sizeof *programs);
    const ptx_program **compiled = mem_calloc((size_t)count, sizeof *compiled);
    jit_object *objects = mem_calloc((size_t)count, sizeof *objects);
    int *index = mem_calloc((size_t)count, sizeof *index);
    int ncompiled = 0;
    if (!programs || !compiled || !objects || !index)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "a batch of %d configurations", count);

    batch b = {q, orders, rows, programs};
    TRY(parallel_for(count, 1, q->threads, generate_range, &b));
    for (int i = 0; i < count; i++)
        if (rows[i].outcome == TUNE_OK) {
            index[ncompiled] = i;
            compiled[ncompiled++] = &programs[i];
        }
    TRY(jit_compile(compiled, ncompiled, q->sass_sm, q->threads, objects));
    for (int j = 0; j < ncompiled; j++) {
        /* The progress hook: one DEBUG line per configuration, before its
         * kernel first runs (a kernel that never returns is named). */
        log_msg(SPF_LOG_DEBUG, "tuner: %s", rows[index[j]].kernel_name);
        evaluate(q, compiled[j], &objects[j], &rows[index[j]], best, best_us);
        jit_object_release(&objects[j]);
        TRY(progress_step(stage_of(q), first + index[j] + 1));
    }
    TRY(progress_step(stage_of(q), first + count));
fail:
    for (int j = 0; objects && j < ncompiled; j++)
        jit_object_release(&objects[j]);
    for (int i = 0; programs && i < count; i++)
        ptx_program_free(&programs[i]);
    mem_free(programs);
    mem_free(compiled);
    mem_free(objects);
    mem_free(index);
    return status;
}

/* Why nothing passed: the counts per outcome and the first reason seen. */
static spf_status none_passed(const tune_log *log)
{
    int counts[TUNE_PROXY_ONLY + 1] = {0};
    const char *first = "";
    for (int i = 0; i < log->count; i++) {
        counts[log->rows[i].outcome]++;
        if (!first[0])
            first = log->rows[i].reason;
    }
    /* Nothing generated (the code budget, say) is "unsupported", so that
     * AUTO falls back to the generic kernel as for one configuration. */
    spf_status st = counts[TUNE_WRONG]                     ? SPF_ERR_VERIFY
                    : counts[TUNE_NOT_GENERATED] == log->count ? SPF_ERR_UNSUPPORTED
                                                           : SPF_ERR_COMPILE;
    return FAIL(st,
                "none of %d configurations passed (not generated %d, compile failed %d, spills "
                "%d, load failed %d, wrong %d, launch failed %d); first reason: %s",
                log->count, counts[TUNE_NOT_GENERATED], counts[TUNE_COMPILE_FAILED],
                counts[TUNE_SPILLS], counts[TUNE_LOAD_FAILED], counts[TUNE_WRONG],
                counts[TUNE_LAUNCH_FAILED], first);
}

spf_status tuner_run(const tune_request *q, jit_module *best, tune_log *log)
{
    spf_status status = SPF_OK;
    tile_space space = {0};
    row_orders own = {0};
    double *features = NULL;
    int staged = 0;
    double t0 = timing_now_s(), best_us = INFINITY;
    memset(best, 0, sizeof *best);
    *log = (tune_log){.m = spf_matrix_rows(q->a), .k = spf_matrix_cols(q->a), .n = q->n,
                      .nnz = spf_matrix_nnz(q->a), .dtype = q->dtype,
                      .f16x2_accumulate = q->f16x2_accumulate, .bias = q->bias, .relu = q->relu,
                      .reorder = q->reorder, .sm = q->sass_sm, .best = -1};

    const spf_kernel_config *configs = q->configs;
    int count = q->config_count;
    if (!configs) {
        TRY(tile_space_create(q->n, q->space, &space));
        configs = space.configs;
        count = space.count;
    }
    if (count <= 0)
        FAIL_GOTO(SPF_ERR_UNSUPPORTED, "no configuration to tune for n = %lld",
                  (long long)q->n);
    const row_orders *orders = NULL;
    if (q->reorder) {
        orders = q->orders;
        if (!orders) {
            TRY(row_orders_create(q->a, configs, count, q->threads, &own));
            orders = &own;
        }
    }
    TRY(progress_begin(stage_of(q), count, "%d configurations%s", count,
                       q->search_final ? ", compiled, checked and timed" : ""));
    staged = 1;
    log->rows = mem_calloc((size_t)count, sizeof *log->rows);
    features = mem_alloc_array((size_t)count * RANK_FEATURE_COUNT, sizeof *features);
    if (!log->rows || !features)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "%d tuning rows", count);
    log->count = count;
    tile_problem tiles = {q->a, q->n, NULL, orders};
    TRY(tune_features(&tiles, q->dtype, configs, count, features));
    for (int i = 0; i < count; i++) {
        tune_row_init(&log->rows[i], &configs[i], q->dtype, q->f16x2_accumulate);
        memcpy(log->rows[i].features, features + (size_t)i * RANK_FEATURE_COUNT,
               sizeof log->rows[i].features);
    }
    /* Enough programs per batch to keep every core on ptxas. */
    int per_batch = 4 * parallel_workers(count, 1, q->threads);
    if (per_batch < 16)
        per_batch = 16;
    for (int first = 0; first < count; first += per_batch) {
        int len = count - first < per_batch ? count - first : per_batch;
        TRY(run_batch(q, orders, log->rows + first, first, len, best, &best_us));
        /* The progress line of long tunings (spforge tune shows it). */
        log_msg(SPF_LOG_INFO, "tuner: %d of %d configurations run, best %.2f us, %.1f s",
                first + len, count, isfinite(best_us) ? best_us : 0.0, timing_now_s() - t0);
    }
    for (int i = 0; i < count; i++)
        if (log->rows[i].outcome == TUNE_OK &&
            (log->best < 0 || log->rows[i].kernel_us < log->rows[log->best].kernel_us))
            log->best = i;
    if (log->best < 0)
        TRY(none_passed(log));
fail:
    if (staged)
        status = progress_end(stage_of(q), status);
    log->wall_s = timing_now_s() - t0;
    tile_space_free(&space);
    row_orders_free(&own);
    mem_free(features);
    if (status != SPF_OK)
        jit_module_release(best);
    return status;
}

/* ---------------------------------------------------------- the CSV */

/* A free-text field: quoted, with quotes and line breaks made harmless. */
static void put_text(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++)
        fputc(*s == '"' ? '\'' : (*s == '\n' || *s == '\r') ? ' ' : *s, f);
    fputc('"', f);
}

spf_status tune_log_write_csv(const tune_log *log, const char *path)
{
    file_replace w;
    spf_status status = file_replace_begin(&w, path, 0666);
    if (status != SPF_OK)
        return status;
    FILE *f = w.file;
    fprintf(f, "m,k,n,nnz,dtype,f16x2,bias,relu,reorder,sm,kernel,m1,n1,v,prefetch,ksplit,threads,"
               "units,registers,spill_bytes,code_bytes,generate_s,compile_s,link_s,load_s,kernel_us,"
               "verify_error,status,chosen,proxy_us");
    for (int j = 0; j < RANK_FEATURE_COUNT; j++)
        fprintf(f, ",%s", rank_feature_names[j]);
    fprintf(f, ",reason\n");
    for (int i = 0; i < log->count; i++) {
        const tune_row *r = &log->rows[i];
        fprintf(f,
                "%lld,%lld,%lld,%lld,%s,%d,%d,%d,%d,%d,%s,%d,%d,%d,%d,%d,%d,%d,%d,%d,%lld,%.6f,"
                "%.6f,%.6f,%.6f,%.4f,%.3e,%s,%d,%.4f",
                (long long)log->m, (long long)log->k, (long long)log->n, (long long)log->nnz,
                dtype_name(log->dtype), log->f16x2_accumulate, log->bias, log->relu, log->reorder,
                log->sm, r->kernel_name, r->cfg.m1, r->cfg.n1, r->cfg.v, r->cfg.prefetch,
                r->cfg.ksplit, r->threads, r->units, r->registers, r->spill_bytes,
                (long long)r->code_bytes, r->generate_s, r->compile_s, r->link_s, r->load_s,
                r->kernel_us, r->verify_error, tune_outcome_name(r->outcome), i == log->best,
                r->proxy_us);
        /* %.17g: the features are the model's inputs, kept exact */
        for (int j = 0; j < RANK_FEATURE_COUNT; j++)
            fprintf(f, ",%.17g", r->features[j]);
        fputc(',', f);
        put_text(f, r->reason);
        fputc('\n', f);
    }
    return file_replace_commit(&w);
}
