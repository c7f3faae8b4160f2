#include "plan/planner.h"

#include "plan/calibration.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int by_estimate(const void *pa, const void *pb)
{
    const planner_candidate *a = pa, *b = pb;
    if (a->supported != b->supported)
        return b->supported - a->supported;
    if (!a->supported)
        return 0;
    return (a->estimate_us > b->estimate_us) - (a->estimate_us < b->estimate_us);
}

int planner_rank(const problem *p, const spf_device_info *dev, const spf_plan_options *o,
                 planner_candidate *out)
{
    int count = 0;
    for (int i = 0; i < strategy_count && count < SPF_MAX_CANDIDATES; i++) {
        const strategy *s = strategy_table[i];
        int wanted = o->strategy == SPF_STRATEGY_AUTO ? s->on_device : o->strategy == s->id;
        if (!wanted)
            continue;
        planner_candidate *c = &out[count++];
        memset(c, 0, sizeof *c);
        c->s = s;
        c->supported = s->supports(p, dev, o, c->reason, sizeof c->reason);
        if (c->supported) {
            c->estimate_us = calibration_us(s, p, s->estimate_us(p, dev));
            double rms = calibration_rms_log(s, p);
            c->reach = rms < 0 ? PLANNER_SLACK : fmax(PLANNER_REACH_MIN, exp(2.0 * rms));
        }
        else if (!c->reason[0])
            snprintf(c->reason, sizeof c->reason, "not supported");
    }
    /* Insertion sort: stable, and the list is a handful long. */
    for (int i = 1; i < count; i++)
        for (int j = i; j > 0 && by_estimate(&out[j - 1], &out[j]) > 0; j--) {
            planner_candidate t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    int others = 0;
    double best = count && out[0].supported ? out[0].estimate_us : 0;
    for (int i = 0; i < count && out[i].supported; i++) {
        planner_candidate *c = &out[i];
        if (c->s->floor) {
            c->build = 1;
        } else if (c->estimate_us <= PLANNER_SLACK * best && others < PLANNER_OTHERS_MAX) {
            c->build = 1;
            others++;
        } else if (c->estimate_us > PLANNER_SLACK * best) {
            snprintf(c->reason, sizeof c->reason,
                     "estimated %.1f us, over %.0f× the best estimate (%.1f us)", c->estimate_us,
                     PLANNER_SLACK, best);
        } else {
            snprintf(c->reason, sizeof c->reason, "estimated %.1f us; %d faster ones built",
                     c->estimate_us, PLANNER_OTHERS_MAX);
        }
    }
    return count;
}

static int within_reach(planner_candidate *c, double best_measured_us)
{
    if (c->estimate_us <= c->reach * best_measured_us)
        return 1;
    snprintf(c->reason, sizeof c->reason,
             "estimated %.1f us, over %.2f× the best measured time (%.1f us)", c->estimate_us,
             c->reach, best_measured_us);
    return 0;
}

int planner_build_late(planner_candidate *c, double best_measured_us, int others)
{
    if (!c->supported || c->build || c->s->floor || !(best_measured_us > 0) ||
        others >= PLANNER_OTHERS_MAX)
        return 0;
    return within_reach(c, best_measured_us);
}

int planner_still_worth(planner_candidate *c, double best_measured_us)
{
    if (c->s->floor || !(best_measured_us > 0))
        return 1;
    return within_reach(c, best_measured_us);
}
