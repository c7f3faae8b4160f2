/* A progress callback for tests (spf_progress_fn) that records every event
 * and can cancel at a chosen one, and the check of a recorded sequence
 * against spforge.h's contract: PLAN's BEGIN first and its END last (with
 * the call's status), stages opened and closed as a stack, each event at
 * its stage's depth, done never backwards and within [0, total], an END
 * that succeeded at done = total, STEP events at least
 * PROGRESS_STEP_INTERVAL_S after the event before, elapsed time never
 * backwards, every call on the thread that created the plan, and nothing
 * after a cancellation but PLAN's END. Shared by tests/unit/test_progress.c
 * and tests/gpu/test_progress.c. */
#ifndef SPF_TESTS_PROGRESS_EVENTS_H
#define SPF_TESTS_PROGRESS_EVENTS_H

#include "check.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { RECORD_CAP = 8192 };

typedef struct recorded {
    spf_stage stage;
    spf_progress_phase phase;
    int depth;
    int64_t done, total;
    double elapsed_s, stage_s;
    spf_status status;
    uint32_t size;
    char text[96];
    int other_thread; /* called from a thread other than the recorder's owner */
} recorded;

typedef struct recorder {
    recorded ev[RECORD_CAP];
    int count, dropped;
    int cancel_at;           /* return nonzero at this event (index), -1: never */
    int cancel_stage;        /* or at the first event of this stage (-1: none) */
    spf_progress_phase cancel_phase;
    int cancelled_at;        /* the index it returned nonzero at, or -1        */
    pthread_t owner;
    void (*hook)(const spf_progress *e, void *user); /* called first, or NULL */
    void *hook_user;
} recorder;

static inline void recorder_init(recorder *r)
{
    memset(r, 0, sizeof *r);
    r->cancel_at = -1;
    r->cancel_stage = -1;
    r->cancelled_at = -1;
    r->owner = pthread_self();
}

static inline int recorder_fn(const spf_progress *e, void *user)
{
    recorder *r = user;
    if (r->hook)
        r->hook(e, r->hook_user);
    int index = r->count + r->dropped;
    if (r->count < RECORD_CAP) {
        recorded *d = &r->ev[r->count++];
        *d = (recorded){.stage = e->stage, .phase = e->phase, .depth = e->depth, .done = e->done,
                        .total = e->total, .elapsed_s = e->elapsed_s, .stage_s = e->stage_s,
                        .status = e->status, .size = e->size,
                        .other_thread = !pthread_equal(pthread_self(), r->owner)};
        snprintf(d->text, sizeof d->text, "%s", e->text ? e->text : "(null)");
    } else {
        r->dropped++;
    }
    int cancel = index == r->cancel_at ||
                 ((int)e->stage == r->cancel_stage && e->phase == r->cancel_phase);
    if (cancel && r->cancelled_at < 0)
        r->cancelled_at = index;
    return cancel;
}

/* Index of the first event of stage in phase, or -1. */
static inline int recorder_find(const recorder *r, spf_stage stage, spf_progress_phase phase)
{
    for (int i = 0; i < r->count; i++)
        if (r->ev[i].stage == stage && r->ev[i].phase == phase)
            return i;
    return -1;
}

static inline void recorder_print(const recorder *r, FILE *to)
{
    for (int i = 0; i < r->count; i++) {
        const recorded *e = &r->ev[i];
        static const char *const phases[] = {"begin", "step", "end"};
        fprintf(to, "  %3d %7.3fs %*s%s %s %lld/%lld status %d: %s\n", i, e->elapsed_s,
                2 * e->depth, "", spf_stage_name(e->stage),
                (unsigned)e->phase < 3 ? phases[e->phase] : "?", (long long)e->done,
                (long long)e->total, (int)e->status, e->text);
    }
}

/* Check r's events against the contract; final is what spf_plan_create
 * returned. Returns the number of problems found (each one CHECK). */
static inline int recorder_check(const recorder *r, spf_status final, const char *label)
{
    int before = check_failed;
    struct {
        spf_stage stage;
        int64_t done, total;
    } stack[32];
    int depth = 0;
    double last_t = 0;
    CHECK_MSG(r->count >= 2 && r->dropped == 0, "%s: %d events (%d dropped)", label, r->count,
              r->dropped);
    for (int i = 0; i < r->count && check_failed == before; i++) {
        const recorded *e = &r->ev[i];
        int last = i == r->count - 1;
        CHECK_MSG(e->size == sizeof(spf_progress) && !e->other_thread && strcmp(e->text, "(null)"),
                  "%s: event %d: size %u, thread %s, text %s", label, i, e->size,
                  e->other_thread ? "another" : "the caller's", e->text);
        CHECK_MSG(e->elapsed_s >= last_t && e->stage_s >= 0 && e->stage_s <= e->elapsed_s + 1e-9,
                  "%s: event %d: elapsed %.6f after %.6f, stage %.6f", label, i, e->elapsed_s,
                  last_t, e->stage_s);
        CHECK_MSG(e->total >= 1 && e->done >= 0 && e->done <= e->total,
                  "%s: event %d: %lld of %lld", label, i, (long long)e->done,
                  (long long)e->total);
        CHECK_MSG((i == 0) == (e->stage == SPF_STAGE_PLAN && e->phase == SPF_PROGRESS_BEGIN) ||
                      (last && e->stage == SPF_STAGE_PLAN),
                  "%s: event %d: PLAN's BEGIN must be the first event and only it", label, i);
        if (e->phase == SPF_PROGRESS_STEP)
            CHECK_MSG(i == 0 || e->elapsed_s - last_t >= 0.1 - 2e-3,
                      "%s: event %d: a STEP %.4f s after the event before", label, i,
                      e->elapsed_s - last_t);
        last_t = e->elapsed_s;
        if (last) {
            CHECK_MSG(e->stage == SPF_STAGE_PLAN && e->phase == SPF_PROGRESS_END && e->depth == 0 &&
                          e->status == final && e->done == (final == SPF_OK),
                      "%s: the last event must be PLAN's END with status %d, got %s phase %d "
                      "depth %d status %d done %lld",
                      label, (int)final, spf_stage_name(e->stage), (int)e->phase, e->depth,
                      (int)e->status, (long long)e->done);
            /* stages left open only when cancelled */
            CHECK_MSG(depth == 1 || final == SPF_ERR_CANCELLED,
                      "%s: %d stages open at PLAN's END", label, depth - 1);
            break;
        }
        CHECK_MSG(r->cancelled_at < 0 || i <= r->cancelled_at,
                  "%s: event %d after the cancellation at %d", label, i, r->cancelled_at);
        switch (e->phase) {
        case SPF_PROGRESS_BEGIN:
            CHECK_MSG(e->depth == depth && e->done == 0 && e->status == SPF_OK && depth < 32,
                      "%s: event %d: BEGIN of %s at depth %d (open: %d), done %lld", label, i,
                      spf_stage_name(e->stage), e->depth, depth, (long long)e->done);
            if (depth < 32)
                stack[depth].stage = e->stage, stack[depth].done = 0,
                stack[depth].total = e->total, depth++;
            break;
        case SPF_PROGRESS_STEP:
            CHECK_MSG(e->depth < depth && stack[e->depth].stage == e->stage &&
                          e->done >= stack[e->depth].done && e->total == stack[e->depth].total &&
                          e->status == SPF_OK,
                      "%s: event %d: STEP of %s at depth %d: done %lld after %lld", label, i,
                      spf_stage_name(e->stage), e->depth, (long long)e->done,
                      (long long)(e->depth < depth ? stack[e->depth].done : -1));
            if (e->depth < depth)
                stack[e->depth].done = e->done;
            break;
        case SPF_PROGRESS_END:
            CHECK_MSG(e->depth == depth - 1 && depth > 1 && stack[e->depth].stage == e->stage &&
                          e->done >= stack[e->depth].done &&
                          (e->status != SPF_OK || e->done == e->total),
                      "%s: event %d: END of %s at depth %d (open: %d), done %lld of %lld", label,
                      i, spf_stage_name(e->stage), e->depth, depth, (long long)e->done,
                      (long long)e->total);
            depth--;
            break;
        default:
            CHECK_MSG(0, "%s: event %d: phase %d", label, i, (int)e->phase);
        }
    }
    if (check_failed != before || getenv("SPF_PRINT_PROGRESS")) {
        fprintf(stderr, "%s: the events:\n", label);
        recorder_print(r, stderr);
    }
    return check_failed - before;
}

#endif
