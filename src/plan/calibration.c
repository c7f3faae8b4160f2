#include "plan/calibration.h"

#include "strategy/roofline.h"

typedef struct calibration_row {
    spf_strategy strategy;
    int64_t n_max;      /* the row holds for N up to this; 0: any larger N */
    double scale;       /* on the estimate less its launch cost            */
    double constant_us; /* the launch, the ramp, the tail                  */
    double rms_log;     /* the fit's rms error of log(time) on its rows    */
} calibration_row;

/* scripts/fit_calibration.py on bench/results/plan-time/calibration-nvidia-h200.csv
 * (the rows each fit is on). */
static const calibration_row rows[] = {
    {SPF_STRATEGY_DENSE, 8, 0.71, 5.00, 0.13},     /* 18 rows */
    {SPF_STRATEGY_DENSE, 64, 0.78, 4.50, 0.19},    /* 48 rows */
    {SPF_STRATEGY_DENSE, 0, 1.15, 4.50, 0.24},     /* 30 rows */
    {SPF_STRATEGY_GENERIC, 8, 1.85, 9.00, 0.32},   /* 18 rows */
    {SPF_STRATEGY_GENERIC, 64, 7.73, 5.75, 0.48},  /* 48 rows */
    {SPF_STRATEGY_GENERIC, 0, 18.22, 3.50, 0.38},  /* 30 rows */
    {SPF_STRATEGY_PANEL, 8, 1.85, 7.50, 0.27},     /* 18 rows */
    {SPF_STRATEGY_PANEL, 64, 1.85, 7.25, 0.35},    /* 42 rows */
    {SPF_STRATEGY_PANEL, 0, 1.53, 6.50, 0.26},     /* 24 rows */
    {SPF_STRATEGY_TC, 8, 0.54, 9.25, 0.06},        /* 18 rows */
    {SPF_STRATEGY_TC, 64, 0.78, 13.50, 0.44},      /* 48 rows */
    {SPF_STRATEGY_TC, 0, 1.04, 14.00, 0.47},       /* 30 rows */
    {SPF_STRATEGY_TCFRAG, 8, 0.54, 7.00, 0.06},    /* 18 rows */
    {SPF_STRATEGY_TCFRAG, 64, 0.65, 10.50, 0.29},  /* 42 rows */
    {SPF_STRATEGY_TCFRAG, 0, 0.65, 15.25, 0.24},   /* 24 rows */
    {SPF_STRATEGY_UNROLLED, 64, 18.22, 7.25, 0.71}, /* 12 rows */
    {SPF_STRATEGY_UNROLLED, 0, 18.22, 3.50, 0.35}, /* 12 rows */
};

static const calibration_row *row_of(const strategy *s, const problem *p)
{
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const calibration_row *r = &rows[i];
        if (r->strategy == s->id && (!r->n_max || p->n <= r->n_max))
            return r;
    }
    return NULL;
}

double calibration_us(const strategy *s, const problem *p, double estimate_us)
{
    const calibration_row *r = row_of(s, p);
    if (!r)
        return estimate_us;
    double roofline = estimate_us - ROOFLINE_LAUNCH_US;
    return r->scale * (roofline > 0 ? roofline : 0) + r->constant_us;
}

double calibration_rms_log(const strategy *s, const problem *p)
{
    const calibration_row *r = row_of(s, p);
    return r ? r->rms_log : -1.0;
}
