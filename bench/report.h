/* Results of spforge-bench: JSON and CSV files per problem set
 * (<set>-<device>-<yyyymmdd>.{json,csv}, rewritten after every problem so an
 * interrupted run keeps what it measured; one row per problem and
 * precision), a compact table on stdout and geomean speedups of spforge
 * over each competitor per sparsity and precision. */
#ifndef SPF_BENCH_REPORT_H
#define SPF_BENCH_REPORT_H

#include "bench.h"

typedef struct bench_env {
    char device[256];
    char device_slug[64];  /* "nvidia-h200": lower case, spaces as '-'         */
    int cc_major, cc_minor, sm_count, l2_bytes;
    double fp32_peak_tflops; /* SMs × FP32 lanes × 2 × clock                  */
    int driver_version, runtime_version, cublas_version, cusparse_version;
    char commit[64];
    char date[32];         /* ISO 8601 UTC                                    */
    char ymd[16];          /* yyyymmdd, for file names                        */
    char command[1024];
    int tune, unrolled;
    const precision *precs[PRECISION_COUNT]; /* --dtype, in run order      */
    int prec_count;
} bench_env;

spf_status report_write(const char *dir, const char *set, const bench_env *env,
                        const bench_row *rows, int count);

void report_table_header(void);
void report_table_row(const bench_row *row);
/* Per sparsity and precision: geomean speedups of spforge (AUTO, and
 * generic), and the AUTO plan against cuBLAS of its precision row by row
 * (geomean, worst row, rows where cuBLAS was faster). */
void report_summary(const char *set, const bench_row *rows, int count);

#endif
