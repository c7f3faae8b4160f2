/* The progress of one spf_plan_create (spforge.h: spf_plan_options.progress,
 * spf_progress): a stack of the stages open and the caller's callback,
 * installed as this thread's reporter for the duration of the call, as
 * the error detail is this thread's. Code anywhere under spf_plan_create
 * reports through the progress_* functions without a handle passed down;
 * code on the library's worker threads finds no reporter, so the callback
 * is only ever called from the thread that called spf_plan_create. Work
 * done by workers is counted by parallel_for_progress (core/parallel.h),
 * whose calling thread reports it.
 *
 * With no callback every function here is a thread-local load and a
 * return: a plan without one takes the same path at the same speed.
 *
 * Each function that begins a stage ends it on its one cleanup path:
 *     TRY(progress_begin(SPF_STAGE_X, total, "what"));
 *     ... TRY(progress_step(SPF_STAGE_X, done)); ...
 * fail:
 *     status = progress_end(SPF_STAGE_X, status);
 * progress_end is due after progress_begin whatever it returned: it does
 * nothing for a stage that is not open. Once the callback has cancelled,
 * nothing is sent until PLAN's END, and every function here returns
 * SPF_ERR_CANCELLED (progress_end: a failure it is given). */
#ifndef SPF_CORE_PROGRESS_H
#define SPF_CORE_PROGRESS_H

#include "spforge.h"

#include <stdint.h>

enum {
    PROGRESS_MAX_DEPTH = 16, /* deeper stages are not reported (none are that deep) */
    PROGRESS_TEXT_CAP = 96
};

/* STEP events are sent at most this often (BEGIN and END always). */
#define PROGRESS_STEP_INTERVAL_S 0.1

typedef struct progress_frame {
    spf_stage stage;
    int64_t done, total;
    double t0;
    char text[PROGRESS_TEXT_CAP];
} progress_frame;

/* One call's reporter: lives on spf_plan_create's stack. */
typedef struct progress {
    spf_progress_fn fn;
    void *user;
    double t0, last_sent;
    int depth;                /* frames open                                     */
    int hidden;               /* stages opened past PROGRESS_MAX_DEPTH, not shown */
    progress_frame frames[PROGRESS_MAX_DEPTH];
    int cancelled;            /* the callback returned nonzero                    */
    char cancel_detail[320];  /* the detail SPF_ERR_CANCELLED carries             */
    struct progress *outer;   /* the reporter installed before (a plan created
                                 inside a callback) or NULL                      */
} progress;

/* Install p as this thread's reporter with the caller's callback (fn NULL:
 * none, so that a plan created inside a callback reports to its own
 * callback or to none) and send PLAN's BEGIN with text (what is planned).
 * SPF_ERR_CANCELLED when the callback cancels at once; progress_leave is
 * due either way. */
spf_status progress_enter(progress *p, spf_progress_fn fn, void *user, const char *text);

/* The call's final status: SPF_ERR_CANCELLED (its detail set) if the
 * callback cancelled, else status. Sends PLAN's END with it (stages left
 * open end without an event) and puts back the reporter p replaced. */
spf_status progress_leave(progress *p, spf_status status);

/* 1 when a callback is installed on this thread. */
int progress_active(void);

/* SPF_ERR_CANCELLED (detail set) once the callback has cancelled, else
 * SPF_OK: the check of a loop that sends no event of its own. */
spf_status progress_check(void);

/* Open a stage of total ≥ 1 units (a smaller total counts as 1) inside the
 * stages open, its text formatted (cut to PROGRESS_TEXT_CAP), and send its
 * BEGIN. Returns progress_check() after the event. */
spf_status progress_begin(spf_stage stage, int64_t total, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The innermost open `stage` has done units (clamped to [its done, its
 * total]: never backwards); a STEP is sent when PROGRESS_STEP_INTERVAL_S
 * has passed since the last event. Returns progress_check(). */
spf_status progress_step(spf_stage stage, int64_t done);

/* Close the innermost open `stage` (and, should any be left open, the
 * stages inside it) and send its END with status; done is its total when
 * status is SPF_OK. Returns status when it is a failure, else
 * progress_check(): so a cleanup path writes status = progress_end(...). */
spf_status progress_end(spf_stage stage, spf_status status);

#endif
