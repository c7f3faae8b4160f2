/* Output shared by the sub-commands: the device line, the statistics block
 * (as text or JSON), the clock and the JSON emission. */
#define _POSIX_C_SOURCE 200809L

#include "cli/cli.h"

#include "core/alloc.h"
#include "plan/info_json.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double rusage_s(int who)
{
    struct rusage u;
    if (getrusage(who, &u) != 0)
        return 0;
    return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           1e-6 * (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double cli_cpu_s(void) { return rusage_s(RUSAGE_SELF) + rusage_s(RUSAGE_CHILDREN); }

/* "13.0" from 13000. */
static void version_text(int v, char *out, size_t cap)
{
    snprintf(out, cap, "%d.%d", v / 1000, (v % 1000) / 10);
}

void cli_print_device(const spf_device_info *d)
{
    char driver[16], runtime[16];
    version_text(d->driver_version, driver, sizeof driver);
    version_text(d->runtime_version, runtime, sizeof runtime);
    if (!d->available) {
        printf("no CUDA device: %s \u2014 using the CPU reference\n", d->reason);
        return;
    }
    printf("device %d: %s (sm_%d%d, %d SMs, %d threads/SM, %.1f GiB, L2 %d MiB, "
           "shared/block %d KiB, driver %s, runtime %s)\n",
           d->device, d->name, d->cc_major, d->cc_minor, d->sm_count, d->max_threads_per_sm,
           (double)d->total_memory / (1024.0 * 1024.0 * 1024.0), d->l2_bytes >> 20,
           d->max_shared_per_block_optin >> 10, driver, runtime);
}

void cli_json_device(json_writer *w, const char *key, const spf_device_info *d)
{
    json_object_begin(w, key);
    json_bool(w, "available", d->available);
    json_int(w, "device", d->device);
    if (d->available) {
        json_string(w, "name", d->name);
        json_int(w, "cc_major", d->cc_major);
        json_int(w, "cc_minor", d->cc_minor);
        json_int(w, "sm_count", d->sm_count);
        json_int(w, "max_threads_per_sm", d->max_threads_per_sm);
        json_int(w, "max_shared_per_block_optin", d->max_shared_per_block_optin);
        json_int(w, "l2_bytes", d->l2_bytes);
        json_int(w, "total_memory", d->total_memory);
    } else {
        json_string(w, "reason", d->reason);
    }
    json_int(w, "driver_version", d->driver_version);
    json_int(w, "runtime_version", d->runtime_version);
    json_object_end(w);
}

void cli_print_stats(const spf_matrix_stats *s)
{
    printf("  shape      %" PRId64 " x %" PRId64 ", nnz %" PRId64 " (density %.6g, sparsity %.6g)\n",
           s->rows, s->cols, s->nnz, s->density, 1.0 - s->density);
    printf("  row nnz    min %" PRId64 ", mean %.4g, max %" PRId64 ", cv %.4g\n", s->row_nnz_min,
           s->row_nnz_mean, s->row_nnz_max, s->row_nnz_cv);
    printf("  empty      %" PRId64 " rows, %" PRId64 " cols\n", s->empty_rows, s->empty_cols);
    printf("  bandwidth  %" PRId64 "\n", s->bandwidth);
    printf("  hashes     pattern %016" PRIx64 ", values %016" PRIx64 "\n", s->pattern_hash,
           s->values_hash);
}

void cli_json_stats(json_writer *w, const char *key, const spf_matrix_stats *s)
{
    char hex[20];
    json_object_begin(w, key);
    json_int(w, "rows", s->rows);
    json_int(w, "cols", s->cols);
    json_int(w, "nnz", s->nnz);
    json_double(w, "density", s->density);
    json_int(w, "row_nnz_min", s->row_nnz_min);
    json_double(w, "row_nnz_mean", s->row_nnz_mean);
    json_int(w, "row_nnz_max", s->row_nnz_max);
    json_double(w, "row_nnz_cv", s->row_nnz_cv);
    json_int(w, "empty_rows", s->empty_rows);
    json_int(w, "empty_cols", s->empty_cols);
    json_int(w, "bandwidth", s->bandwidth);
    /* Hex strings: JSON numbers lose 64-bit integers in most readers. */
    snprintf(hex, sizeof hex, "%016" PRIx64, s->pattern_hash);
    json_string(w, "pattern_hash", hex);
    snprintf(hex, sizeof hex, "%016" PRIx64, s->values_hash);
    json_string(w, "values_hash", hex);
    json_object_end(w);
}

void cli_json_begin(json_writer *w, const cli_context *ctx)
{
    json_init(w);
    json_object_begin(w, NULL);
    json_string(w, "command", ctx->cmd->name);
}

int cli_json_end(cli_context *ctx, json_writer *w)
{
    char *text = NULL;
    json_object_end(w);
    spf_status st = json_finish(w, &text);
    if (st != SPF_OK)
        return cli_fail_status(ctx, st);
    puts(text);
    mem_free(text);
    ctx->json_done = 1;
    return CLI_EXIT_OK;
}

void cli_json_plan(json_writer *w, const char *key, const spf_plan_info *i)
{
    json_object_begin(w, key);
    plan_info_json_fields(w, i);
    json_object_end(w);
}

void cli_print_candidates(const spf_plan_info *i)
{
    for (int c = 0; c < i->candidate_count; c++) {
        const spf_candidate *d = &i->candidates[c];
        printf("candidate  %-9s %-8s", spf_strategy_name(d->strategy), spf_candidate_outcome_name(d->outcome));
        if (d->kernel_us > 0)
            printf(" %10.2f us", d->kernel_us);
        else if (d->estimate_us > 0)
            printf(" (est. %.1f us)", d->estimate_us);
        printf("  %s\n", d->detail);
    }
}

/* names[i] = name(i) for i = 0, 1, ... until name says "?" (or cap - 1). */
static const char *const *names_of(const char **names, int cap, const char *(*name)(int))
{
    if (!names[0])
        for (int i = 0; i < cap - 1 && strcmp(name(i), "?") != 0; i++)
            names[i] = name(i);
    return names;
}

static const char *strategy_name(int i) { return spf_strategy_name((spf_strategy)i); }
static const char *dtype_name(int i) { return spf_dtype_name((spf_dtype)i); }
static const char *math_name(int i) { return spf_math_name((spf_math)i); }
static const char *layout_name(int i) { return spf_layout_name((spf_layout)i); }

/* Filled on first use from the main thread (the CLI is single-threaded). */
static const char *strategy_list[16], *dtype_list[8], *math_list[8], *layout_list[4];

const char *const *cli_strategy_names(void) { return names_of(strategy_list, 16, strategy_name); }
const char *const *cli_dtype_names(void) { return names_of(dtype_list, 8, dtype_name); }
const char *const *cli_math_names(void) { return names_of(math_list, 8, math_name); }
const char *const *cli_layout_names(void) { return names_of(layout_list, 4, layout_name); }
