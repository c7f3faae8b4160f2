/* The reporter of spf_plan_create's progress (core/progress.h). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include "core/progress.h"

#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* The reporter of the spf_plan_create running on this thread, if it has a
 * callback. Worker threads start with none. */
static _Thread_local progress *current;

const char *spf_stage_name(spf_stage stage)
{
    static const char *const names[] = {"plan",    "candidates",  "build", "time",
                                        "reference", "reorder",   "constraints", "rank",
                                        "proxies", "final",       "tune",  "compile",
                                        "verify"};
    return (unsigned)stage < sizeof names / sizeof names[0] ? names[stage] : "?";
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Call the callback with frame f's event. The thread's error detail is
 * kept across it: the callback may call the library, which clears it, in
 * the middle of a failure being reported. */
static void send(progress *p, int f, spf_progress_phase phase, spf_status status, double t)
{
    const progress_frame *fr = &p->frames[f];
    spf_progress e = {.size = sizeof e, .stage = fr->stage, .phase = phase, .depth = f,
                      .done = fr->done, .total = fr->total, .elapsed_s = t - p->t0,
                      .stage_s = t - fr->t0, .status = status, .text = fr->text};
    char saved[ERROR_DETAIL_CAP];
    error_save(saved);
    int rc = p->fn(&e, p->user);
    error_restore(saved);
    p->last_sent = t;
    if (rc != 0 && !p->cancelled && !(f == 0 && phase == SPF_PROGRESS_END)) {
        p->cancelled = 1;
        snprintf(p->cancel_detail, sizeof p->cancel_detail,
                 "cancelled by the progress callback (it returned %d) at %s %s %lld/%lld (%s) "
                 "after %.3f s",
                 rc, spf_stage_name(fr->stage),
                 phase == SPF_PROGRESS_BEGIN ? "begin" : phase == SPF_PROGRESS_END ? "end" : "step",
                 (long long)fr->done, (long long)fr->total, fr->text, t - p->t0);
    }
}

static spf_status cancelled(const progress *p)
{
    return error_set(SPF_ERR_CANCELLED, "spf_plan_create", "%s", p->cancel_detail);
}

spf_status progress_check(void)
{
    progress *p = current;
    return p && p->cancelled ? cancelled(p) : SPF_OK;
}

int progress_active(void) { return current != NULL; }

static void frame_open(progress *p, spf_stage stage, int64_t total, double t, const char *fmt,
                       va_list ap)
{
    progress_frame *fr = &p->frames[p->depth++];
    fr->stage = stage;
    fr->done = 0;
    fr->total = total < 1 ? 1 : total;
    fr->t0 = t;
    vsnprintf(fr->text, sizeof fr->text, fmt, ap);
}

spf_status progress_enter(progress *p, spf_progress_fn fn, void *user, const char *text)
{
    memset(p, 0, sizeof *p);
    p->outer = current;
    current = fn ? p : NULL;
    if (!fn)
        return SPF_OK;
    p->fn = fn;
    p->user = user;
    p->t0 = now_s();
    progress_frame *fr = &p->frames[p->depth++];
    fr->stage = SPF_STAGE_PLAN;
    fr->total = 1;
    fr->t0 = p->t0;
    snprintf(fr->text, sizeof fr->text, "%s", text);
    send(p, 0, SPF_PROGRESS_BEGIN, SPF_OK, p->t0);
    return p->cancelled ? cancelled(p) : SPF_OK;
}

spf_status progress_leave(progress *p, spf_status status)
{
    if (p->fn) {
        if (p->cancelled)
            status = cancelled(p);
        p->depth = 1;
        p->frames[0].done = status == SPF_OK;
        send(p, 0, SPF_PROGRESS_END, status, now_s());
    }
    current = p->outer;
    return status;
}

spf_status progress_begin(spf_stage stage, int64_t total, const char *fmt, ...)
{
    progress *p = current;
    if (!p)
        return SPF_OK;
    if (p->cancelled)
        return cancelled(p);
    if (p->depth == PROGRESS_MAX_DEPTH) {
        p->hidden++;
        return SPF_OK;
    }
    double t = now_s();
    va_list ap;
    va_start(ap, fmt);
    frame_open(p, stage, total, t, fmt, ap);
    va_end(ap);
    send(p, p->depth - 1, SPF_PROGRESS_BEGIN, SPF_OK, t);
    return p->cancelled ? cancelled(p) : SPF_OK;
}

/* The innermost open frame of stage, or -1. */
static int find(const progress *p, spf_stage stage)
{
    for (int f = p->depth - 1; f > 0; f--)
        if (p->frames[f].stage == stage)
            return f;
    return -1;
}

spf_status progress_step(spf_stage stage, int64_t done)
{
    progress *p = current;
    if (!p)
        return SPF_OK;
    if (p->cancelled)
        return cancelled(p);
    int f = find(p, stage);
    if (f < 0)
        return SPF_OK;
    progress_frame *fr = &p->frames[f];
    if (done > fr->total)
        done = fr->total;
    if (done <= fr->done)
        return SPF_OK;
    fr->done = done;
    double t = now_s();
    if (t - p->last_sent >= PROGRESS_STEP_INTERVAL_S)
        send(p, f, SPF_PROGRESS_STEP, SPF_OK, t);
    return p->cancelled ? cancelled(p) : SPF_OK;
}

spf_status progress_end(spf_stage stage, spf_status status)
{
    progress *p = current;
    if (!p)
        return status;
    if (p->hidden > 0) {
        p->hidden--;
        return status != SPF_OK ? status : progress_check();
    }
    int f = find(p, stage);
    if (f < 0)
        return status != SPF_OK ? status : progress_check();
    p->depth = f + 1; /* stages left open inside it end with it, unreported */
    if (!p->cancelled) {
        if (status == SPF_OK)
            p->frames[f].done = p->frames[f].total;
        send(p, f, SPF_PROGRESS_END, status, now_s());
    }
    p->depth = f;
    return status != SPF_OK ? status : progress_check();
}
