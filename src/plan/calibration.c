#include "plan/calibration.h"

#include "strategy/roofline.h"

typedef struct calibration_row {
    spf_strategy strategy;
    int64_t n_max;      /* the row holds for N up to this; 0: any larger N */
    double scale;       /* on the estimate less its launch cost            */
    double constant_us; /* the launch, the ramp, the tail                  */
} calibration_row;

/* scripts/fit_calibration.py on bench/results/plan-time/calibration-nvidia-h200.csv
 * (rms of the log error per row). */
static const calibration_row rows[] = {
    {SPF_STRATEGY_DENSE, 8, 0.71, 5.00},     /* 18 rows, 0.13 */
    {SPF_STRATEGY_DENSE, 64, 0.78, 4.50},    /* 48 rows, 0.19 */
    {SPF_STRATEGY_DENSE, 0, 1.15, 4.50},     /* 30 rows, 0.24 */
    {SPF_STRATEGY_GENERIC, 8, 1.85, 9.00},   /* 18 rows, 0.32 */
    {SPF_STRATEGY_GENERIC, 64, 7.73, 5.75},  /* 48 rows, 0.48 */
    {SPF_STRATEGY_GENERIC, 0, 18.22, 3.50},  /* 30 rows, 0.38 */
    {SPF_STRATEGY_PANEL, 8, 1.85, 7.50},     /* 18 rows, 0.27 */
    {SPF_STRATEGY_PANEL, 64, 1.85, 7.25},    /* 42 rows, 0.35 */
    {SPF_STRATEGY_PANEL, 0, 1.53, 6.50},     /* 24 rows, 0.26 */
    {SPF_STRATEGY_TC, 8, 0.54, 9.25},        /* 18 rows, 0.06 */
    {SPF_STRATEGY_TC, 64, 0.78, 13.50},      /* 48 rows, 0.44 */
    {SPF_STRATEGY_TC, 0, 1.04, 14.00},       /* 30 rows, 0.47 */
    {SPF_STRATEGY_TCFRAG, 8, 0.54, 7.00},    /* 18 rows, 0.06 */
    {SPF_STRATEGY_TCFRAG, 64, 0.65, 10.50},  /* 42 rows, 0.29 */
    {SPF_STRATEGY_TCFRAG, 0, 0.65, 15.25},   /* 24 rows, 0.24 */
    {SPF_STRATEGY_UNROLLED, 64, 18.22, 7.25}, /* 12 rows, 0.71 */
    {SPF_STRATEGY_UNROLLED, 0, 18.22, 3.50}, /* 12 rows, 0.35 */
};

double calibration_us(const strategy *s, const problem *p, double estimate_us)
{
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const calibration_row *r = &rows[i];
        if (r->strategy != s->id || (r->n_max && p->n > r->n_max))
            continue;
        double roofline = estimate_us - ROOFLINE_LAUNCH_US;
        return r->scale * (roofline > 0 ? roofline : 0) + r->constant_us;
    }
    return estimate_us;
}
