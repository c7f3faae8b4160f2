/* Exhaustive tuning in batches: a batch of configurations is generated
 * side by side, all its programs' units go to ptxas in one parallel run
 * (so small and large programs share the cores), then each is linked,
 * loaded, checked and timed on the device in turn. Batches bound the
 * memory held in PTX text and cubins. SparseRT §4.3 grid-searches the same
 * way; LO-SpMM replaces this with a rank model trained on its log. */
#define _POSIX_C_SOURCE 200809L

#include "gpu/tuner.h"

#include "codegen/schedule.h"
#include "codegen/unrolled.h"
#include "core/alloc.h"
#include "core/error.h"
#include "core/log.h"
#include "core/parallel.h"
#include "gpu/dtype.h"
#include "gpu/timing.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The values of each dimension of a space; (v, n1) pairs are listed
 * together so the compact space can keep a warp or two per thread group. */
typedef struct space_axes {
    const int32_t *m1, *vn1, *prefetch, *ksplit; /* vn1: v, n1 pairs */
    int m1_count, vn1_count, prefetch_count, ksplit_count;
} space_axes;

#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const int32_t full_m1[] = {1, 2, 4, 8, 16, 32};
static const int32_t full_vn1[] = {1, 32, 1, 64, 1, 128, 1, 256, 2, 32, 2, 64, 2, 128, 2, 256,
                                   4, 32, 4, 64, 4, 128, 4, 256};
static const int32_t full_prefetch[] = {0, 1, 2, 4};
static const int32_t full_ksplit[] = {1, 2, 4};

static const int32_t compact_m1[] = {2, 4, 8, 16, 32};
static const int32_t compact_vn1[] = {1, 32, 1, 64, 2, 64, 4, 128, 4, 256};
static const int32_t compact_prefetch[] = {2};

static const space_axes spaces[] = {
    [SPF_TUNE_SPACE_COMPACT] = {compact_m1, compact_vn1, compact_prefetch, full_ksplit,
                                LEN(compact_m1), LEN(compact_vn1) / 2, LEN(compact_prefetch),
                                LEN(full_ksplit)},
    [SPF_TUNE_SPACE_FULL] = {full_m1, full_vn1, full_prefetch, full_ksplit, LEN(full_m1),
                             LEN(full_vn1) / 2, LEN(full_prefetch), LEN(full_ksplit)},
};

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
    }
    return "?";
}

spf_status tuner_space(int64_t n, spf_tune_space space, spf_kernel_config **configs, int *count)
{
    if (space != SPF_TUNE_SPACE_COMPACT && space != SPF_TUNE_SPACE_FULL)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "unknown tuning space %d", (int)space);
    const space_axes *s = &spaces[space];
    int cap = s->m1_count * s->vn1_count * s->prefetch_count * s->ksplit_count;
    spf_kernel_config *list = mem_alloc_array((size_t)cap, sizeof *list);
    if (!list)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "%d configurations", cap);
    int k = 0;
    for (int a = 0; a < s->m1_count; a++)
        for (int b = 0; b < s->vn1_count; b++)
            for (int d = 0; d < s->prefetch_count; d++)
                for (int e = 0; e < s->ksplit_count; e++) {
                    spf_kernel_config cfg = {.m1 = s->m1[a], .n1 = s->vn1[2 * b + 1],
                                             .v = s->vn1[2 * b], .prefetch = s->prefetch[d],
                                             .ksplit = s->ksplit[e]};
                    if (schedule_config_check(&cfg, n) == SPF_OK)
                        list[k++] = cfg;
                }
    error_clear(); /* the rejections are the filter, not errors */
    *configs = list;
    *count = k;
    return SPF_OK;
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
        spf_status st = unrolled_generate(q->a, NULL, q->n, &row->cfg, q->dtype,
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
    if (o->status != SPF_OK) {
        set_reason(row, TUNE_COMPILE_FAILED, o->log ? o->log : "ptxas failed");
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
    double tolerance = selfcheck_tolerance(q->dtype, q->f16x2_accumulate);
    timing_options topt;
    timing_options_init(&topt);
    topt.target_round_us = 200.0; /* hundreds of configurations: keep each cheap */
    timing_result tr;
    if (selfcheck_measure(q->check, launch_module, &l, &row->verify_error) != SPF_OK) {
        set_reason(row, TUNE_LAUNCH_FAILED, spf_last_error());
    } else if (!(row->verify_error <= tolerance)) {
        char why[96];
        snprintf(why, sizeof why, "relative error %.3g over the tolerance %.0e", row->verify_error,
                 tolerance);
        set_reason(row, TUNE_WRONG, why);
    } else if (timing_measure(launch_timed, &l, NULL, &topt, &tr) != SPF_OK) {
        set_reason(row, TUNE_LAUNCH_FAILED, spf_last_error());
    } else {
        row->kernel_us = tr.median_us;
        row->outcome = TUNE_OK;
        if (tr.median_us < *best_us) {
            *best_us = tr.median_us;
            jit_module_release(best);
            *best = m;
            return;
        }
    }
    jit_module_release(&m);
}

static spf_status run_batch(const tune_request *q, tune_row *rows, int count, jit_module *best,
                            double *best_us)
{
    spf_status status = SPF_OK;
    ptx_program *programs = mem_calloc((size_t)count, sizeof *programs);
    const ptx_program **compiled = mem_calloc((size_t)count, sizeof *compiled);
    jit_object *objects = mem_calloc((size_t)count, sizeof *objects);
    int *index = mem_calloc((size_t)count, sizeof *index);
    int ncompiled = 0;
    if (!programs || !compiled || !objects || !index)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "a batch of %d configurations", count);

    batch b = {q, rows, programs};
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
    }
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
    int counts[TUNE_LAUNCH_FAILED + 1] = {0};
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
    spf_kernel_config *configs = NULL;
    int count = 0;
    double t0 = timing_now_s(), best_us = INFINITY;
    memset(best, 0, sizeof *best);
    *log = (tune_log){.m = spf_matrix_rows(q->a), .k = spf_matrix_cols(q->a), .n = q->n,
                      .nnz = spf_matrix_nnz(q->a), .dtype = q->dtype,
                      .f16x2_accumulate = q->f16x2_accumulate, .bias = q->bias, .relu = q->relu,
                      .sm = q->sass_sm, .best = -1};

    TRY(tuner_space(q->n, q->space, &configs, &count));
    if (count == 0)
        FAIL_GOTO(SPF_ERR_UNSUPPORTED, "no configuration of the space is valid for n = %lld",
                  (long long)q->n);
    log->rows = mem_calloc((size_t)count, sizeof *log->rows);
    if (!log->rows)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "%d tuning rows", count);
    log->count = count;
    for (int i = 0; i < count; i++) {
        tune_row *row = &log->rows[i];
        row->cfg = configs[i];
        row->threads = configs[i].n1 / configs[i].v * configs[i].ksplit;
        row->verify_error = -1.0;
        unrolled_kernel_name(&configs[i], q->dtype, q->f16x2_accumulate, row->kernel_name);
    }
    /* Enough programs per batch to keep every core on ptxas. */
    int per_batch = 4 * parallel_workers(count, 1, q->threads);
    if (per_batch < 16)
        per_batch = 16;
    for (int first = 0; first < count; first += per_batch) {
        int len = count - first < per_batch ? count - first : per_batch;
        TRY(run_batch(q, log->rows + first, len, best, &best_us));
    }
    for (int i = 0; i < count; i++)
        if (log->rows[i].outcome == TUNE_OK &&
            (log->best < 0 || log->rows[i].kernel_us < log->rows[log->best].kernel_us))
            log->best = i;
    if (log->best < 0)
        TRY(none_passed(log));
fail:
    log->wall_s = timing_now_s() - t0;
    mem_free(configs);
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
    char tmp[4096];
    int len = snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
    if (len < 0 || (size_t)len >= sizeof tmp)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "path too long: %s", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return FAIL(SPF_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
    fprintf(f, "m,k,n,nnz,dtype,f16x2,bias,relu,sm,kernel,m1,n1,v,prefetch,ksplit,threads,units,"
               "registers,spill_bytes,code_bytes,generate_s,compile_s,link_s,load_s,kernel_us,"
               "verify_error,status,chosen,reason\n");
    for (int i = 0; i < log->count; i++) {
        const tune_row *r = &log->rows[i];
        fprintf(f,
                "%lld,%lld,%lld,%lld,%s,%d,%d,%d,%d,%s,%d,%d,%d,%d,%d,%d,%d,%d,%d,%lld,%.6f,%.6f,"
                "%.6f,%.6f,%.4f,%.3e,%s,%d,",
                (long long)log->m, (long long)log->k, (long long)log->n, (long long)log->nnz,
                dtype_name(log->dtype), log->f16x2_accumulate, log->bias, log->relu, log->sm,
                r->kernel_name, r->cfg.m1, r->cfg.n1, r->cfg.v, r->cfg.prefetch, r->cfg.ksplit,
                r->threads, r->units, r->registers, r->spill_bytes, (long long)r->code_bytes,
                r->generate_s, r->compile_s, r->link_s, r->load_s, r->kernel_us, r->verify_error,
                tune_outcome_name(r->outcome), i == log->best);
        put_text(f, r->reason);
        fputc('\n', f);
    }
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        remove(tmp);
        return FAIL(SPF_ERR_IO, "cannot write %s", tmp);
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        return FAIL(SPF_ERR_IO, "cannot rename %s to %s: %s", tmp, path, strerror(e));
    }
    return SPF_OK;
}
