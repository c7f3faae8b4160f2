/* The self-check of a freshly compiled kernel (DESIGN.md decision 6): run
 * it once on random B (and bias) on the device, with C poisoned with NaN
 * first so an output the kernel forgets to write cannot pass, and compare
 * with the CPU reference accumulated in double. The device buffers stay up
 * for the tuner, which checks and times every configuration on them.
 *
 * The reference costs nnz·n multiply-adds on the host: for a large layer
 * (an 11008×4096 weight at 0.5, N = 2048: 4.6·10^10) it took most of a
 * plan's 17 s. Past SELFCHECK_FULL_MACS the reference covers a sample of
 * rows instead, every column of each: the first and last row (ragged
 * edges) and one random row in each of SELFCHECK_STRATA equal bands, so a
 * wrong band of tiles, a wrong N tail or a wrong K split is caught; every
 * output of C is still checked to be written (no poison left). What a
 * sample can miss is an error confined to unsampled rows (a generated
 * kernel's code is per row): the generator itself is checked row by row
 * on the PTX interpreter in CI (tests/unit/test_unrolled_emulate.c). */
#ifndef SPF_GPU_SELFCHECK_H
#define SPF_GPU_SELFCHECK_H

#include "gpu/l2_flush.h"
#include "gpu/timing.h"
#include "plan/problem.h"
#include "spforge.h"

/* Reference work (multiply-adds, nnz·n) up to which every row is checked,
 * and the bands of the row sample past it. */
enum { SELFCHECK_FULL_MACS = 1 << 27, SELFCHECK_STRATA = 256 };

/* One launch C = A·B (+bias) on `stream`; buffers as spf_plan_execute's. */
typedef spf_status (*selfcheck_launch_fn)(void *ctx, const void *b, void *c, const float *bias,
                                          void *stream);

typedef struct selfcheck {
    int64_t m, k, n;
    spf_dtype dtype;
    spf_layout b_layout, c_layout;
    void *b;      /* device, k × n (N_FIRST: n × k) of dtype: random in [-1, 1] */
    void *c;      /* device, m × n (N_FIRST: n × m) of dtype                    */
    float *bias;  /* device, m float32, or NULL for a plan without bias         */
    int64_t rows_checked; /* rows of C compared with the reference (m if all) */
    int64_t *rows;  /* host, rows_checked ascending: which, or NULL for all      */
    double *ref;  /* host, rows_checked × n: the reference on B as rounded      */
    double bias_norm; /* the bias's norm over the rows checked (ref/spmm.h's)    */
    void *c_host; /* host, m × n of dtype: the download, in C's layout           */
    float *c_f32; /* host, m × n: the download as float, m × n                   */
    float *c_tmp; /* host, n × m: the download as float before the transpose of
                     an N_FIRST C, else NULL                                     */
    int cold;     /* candidates are timed with their weights cold (the default)  */
    l2_flush *flush; /* cold: the flush every timing on these buffers shares (it
                        keeps its measured time), else NULL                      */
} selfcheck;

/* Allocate and fill the buffers of problem p (its matrix, n, dtype,
 * layouts, bias and ReLU) on the current device and compute the reference
 * (threads host threads, 0 = all cores). out is zeroed first. The
 * tolerance of a result is dtype_tolerance (core/dtype.h). */
spf_status selfcheck_prepare(const problem *p, int threads, selfcheck *out);

/* The rule every candidate timed on these buffers is timed by: cold
 * (gpu/timing.h's default, with a flush made here once for the plan) or
 * hot. Called after selfcheck_prepare; fails only to allocate the flush. */
spf_status selfcheck_set_timing(selfcheck *s, int cold);

/* The timing options of that rule, into out (timing_options_init's
 * otherwise), for timing_measure on these buffers. */
void selfcheck_timing(const selfcheck *s, timing_options *out);

/* Poison C, launch once, synchronize, download and compare: *error is the
 * relative error over the rows checked, relative_error_biased's (+inf if
 * any output of C is NaN or infinite). */
spf_status selfcheck_measure(selfcheck *s, selfcheck_launch_fn fn, void *ctx, double *error);

void selfcheck_release(selfcheck *s); /* accepts a zeroed struct */

#endif
