/* The pieces every sub-command of the spforge CLI shares: one option parser
 * (long options only: --name VALUE, --name=VALUE, flags; --help and --json
 * on every command), the error convention and the output helpers that print
 * the same facts as text or as one JSON object.
 *
 * Exit codes: 0 success (and --help), 1 an input or runtime error, 2 a
 * usage error (unknown option, missing value, bad number: the option is
 * named; "expected an integer" for a value that is none, "out of range
 * [lo, hi]" with the exact bounds for one beyond them). Errors go to stderr as "spforge <cmd>: <status string>: <detail>". */
#ifndef SPF_CLI_CLI_H
#define SPF_CLI_CLI_H

#include "core/json.h"
#include "spforge.h"

#include <pthread.h>
#include <stdint.h>

enum { CLI_EXIT_OK = 0, CLI_EXIT_FAIL = 1, CLI_EXIT_USAGE = 2, CLI_CONTINUE = -1 };
enum { CLI_MAX_ARGS = 4 };

typedef enum cli_kind {
    CLI_FLAG,   /* int, set to 1                                  */
    CLI_INT,    /* int64_t, in [min, max]                          */
    CLI_U64,    /* uint64_t, any value (seeds)                     */
    CLI_DOUBLE, /* double, in [min, max] (or [min, max) if max_open) */
    CLI_STRING, /* const char *, borrowed from argv                */
    CLI_CHOICE  /* int, the index of the value in choices          */
} cli_kind;

typedef struct cli_option {
    const char *name;           /* long name without the dashes                  */
    cli_kind kind;
    void *target;               /* written when the option is given               */
    const char *metavar;        /* the value's name in --help ("N")               */
    const char *help;
    const char *const *choices; /* CLI_CHOICE: NULL-terminated names              */
    double min, max;            /* CLI_INT, CLI_DOUBLE: the accepted range        */
    int max_open;               /* CLI_DOUBLE: max itself is not accepted         */
} cli_option;

typedef struct cli_command {
    const char *name;
    const char *synopsis; /* positional arguments, e.g. "IN OUT" */
    const char *summary;  /* one line                            */
    const char *details;  /* more --help text, or NULL           */
    int min_args, max_args;
    int (*main)(const struct cli_command *cmd, int argc, char **argv);
} cli_command;

/* What cli_parse found besides the options' targets. */
typedef struct cli_context {
    const cli_command *cmd;
    int json;                       /* --json given                         */
    int json_done;                  /* the command's JSON object printed    */
    const char *args[CLI_MAX_ARGS]; /* positional arguments, borrowed        */
    int arg_count;
    int64_t max_bytes;              /* --max-bytes (every command takes it:  */
    int max_bytes_given;            /* spf_set_max_bytes; 0 means none)      */
} cli_context;

/* Parse argv (argv[0] is the command name) against options. Returns
 * CLI_CONTINUE to go on, CLI_EXIT_OK after printing --help, or
 * CLI_EXIT_USAGE after printing what was wrong. */
int cli_parse(cli_context *ctx, const cli_command *cmd, const cli_option *options, int count,
              int argc, char **argv);

/* Print "spforge <cmd>: invalid argument: <message>" and return CLI_EXIT_USAGE. */
int cli_usage_error(const cli_context *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Print "spforge <cmd>: <status string>: <message>" and return CLI_EXIT_FAIL. */
int cli_fail(const cli_context *ctx, spf_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* cli_fail with the library's detail message (spf_last_error). */
int cli_fail_status(const cli_context *ctx, spf_status st);
/* The same with the input first ("<input>: <detail>"), for a step after the
 * read whose message does not name the file. */
int cli_fail_input(const cli_context *ctx, spf_status st, const char *input);

/* The read options of stat, convert, run and tune (--duplicates, --values,
 * --sparsity, --max-read-bytes); --seed is each command's own. */
typedef struct cli_read_args {
    int duplicates;         /* index into {"reject", "sum"} = spf_duplicates */
    const char *values;     /* .npy values for a .smtx pattern, or NULL       */
    double sparsity;        /* .npy magnitude pruning, < 0 keeps every nonzero */
    int64_t max_read_bytes; /* spf_read_options.max_bytes (0: default)        */
} cli_read_args;

extern const char *const cli_duplicates_names[];
#define CLI_READ_OPTIONS(ra)                                                                      \
    {"duplicates", CLI_CHOICE, &(ra).duplicates, "sum|reject",                                    \
     "repeated entries: reject (default) or sum", cli_duplicates_names, 0, 0, 0},                 \
    {"values", CLI_STRING, &(ra).values, "FILE.npy",                                              \
     ".smtx only: nnz float32 values in file order instead of seeded random ones", NULL, 0, 0, 0}, \
    {"sparsity", CLI_DOUBLE, &(ra).sparsity, "S",                                                 \
     ".npy only: prune by magnitude to sparsity S in [0, 1) (default: keep every nonzero)", NULL, \
     0, 1, 1},                                                                                    \
    {"max-read-bytes", CLI_INT, &(ra).max_read_bytes, "BYTES",                                    \
     "most memory reading the input may take (default $SPFORGE_READ_MAX_BYTES, else 4 GiB; "     \
     "< 0: no limit)", NULL, 0, 0, 0}

void cli_read_args_init(cli_read_args *ra);
/* spf_matrix_read of path with the read options of ra and seed (the values
 * of pattern-only files). */
spf_status cli_read_matrix(const cli_read_args *ra, uint64_t seed, const char *path, spf_matrix **a);

/* Monotonic wall time in seconds. */
double cli_now(void);
/* CPU seconds (user + system) of this process's threads and of its
 * waited-for children (ptxas), for the cost of a search or tuning. */
double cli_cpu_s(void);

/* The --threads help of run, conv and tune. */
#define CLI_THREADS_HELP                                                                           \
    "host threads (default 0: $SPFORGE_THREADS, else $OMP_NUM_THREADS, else the CPUs this "       \
    "process may use)"

/* One line about the device, or "no CUDA device: <reason> — using the CPU
 * reference"; and the same as a JSON object under key. */
void cli_print_device(const spf_device_info *d);

/* A plan's strategy, kernel, configuration and the planner's candidates
 * (what was considered, timed with what result, refused and why). */
void cli_json_plan(json_writer *w, const char *key, const spf_plan_info *info);
void cli_print_candidates(const spf_plan_info *info);

/* NULL-terminated name lists for CLI_CHOICE, indexed by the enum value,
 * from the library's own lists (spf_strategy_name, spf_dtype_name,
 * spf_math_name, spf_layout_name). */
const char *const *cli_strategy_names(void);
const char *const *cli_dtype_names(void);
const char *const *cli_math_names(void);
const char *const *cli_layout_names(void);

void cli_json_device(json_writer *w, const char *key, const spf_device_info *d);

/* The pattern statistics as indented text lines, and as a JSON object. */
void cli_print_stats(const spf_matrix_stats *s);
void cli_json_stats(json_writer *w, const char *key, const spf_matrix_stats *s);

/* Start w as the command's one JSON object, {"command": "<name>", ...};
 * cli_json_end closes that object, prints it as one line on stdout (noted
 * in ctx: a failure after it prints no second object) and returns the exit
 * code. */
void cli_json_begin(json_writer *w, const cli_context *ctx);
int cli_json_end(cli_context *ctx, json_writer *w);

/* The progress display of run and tune (cli_progress.c) on stderr: the
 * plan's progress events and the command's own steps, one line redrawn in
 * place on a terminal, a line per stage elsewhere. */
enum { CLI_PROGRESS_LEVELS = 8 };

typedef struct cli_progress_level {
    spf_stage stage;
    int64_t done, total;
    char text[64];
} cli_progress_level;

typedef struct cli_progress {
    pthread_mutex_t lock; /* log lines may come from the library's workers    */
    const char *cmd;     /* "run", "tune"                                     */
    int on;              /* show anything                                     */
    int tty;             /* stderr is a terminal: one line, redrawn           */
    int width;           /* its columns                                       */
    int shown;           /* a line is on the terminal, to erase before output */
    double t0, last_line;
    char label[32];      /* which plan ("search", "oracle"), or ""            */
    char note[160];      /* the command's own step, shown instead of stages   */
    int depth;           /* levels open (the plan's stages)                   */
    cli_progress_level levels[CLI_PROGRESS_LEVELS];
} cli_progress;

/* --progress: on (also off a terminal, and with --json, whose output is on
 * stdout); --no-progress: off; neither: on when stderr is a terminal and
 * --json was not given. */
int cli_progress_wanted(int progress, int no_progress, int json);
void cli_progress_init(cli_progress *p, const char *cmd, int on);
/* Name the plan the next events belong to ("" or NULL: none). */
void cli_progress_label(cli_progress *p, const char *label);
/* An spf_progress_fn (user: the cli_progress); never cancels. */
int cli_progress_event(const spf_progress *e, void *user);
/* The command's own step ("timing 3/5"): shown now when begin, else at
 * most ten times a second (once a second off a terminal). */
void cli_progress_note(cli_progress *p, int begin, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A line of text on stderr (a log line) above the progress line; from any
 * thread (the display's functions take its lock). */
void cli_progress_print(cli_progress *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Erase the progress line, before the results. */
void cli_progress_finish(cli_progress *p);
/* Finish and release the display. */
void cli_progress_destroy(cli_progress *p);

/* The options of the display (run, tune). */
#define CLI_PROGRESS_OPTIONS(progress, no_progress)                                               \
    {"progress", CLI_FLAG, &(progress), NULL,                                                     \
     "show progress on stderr even when it is not a terminal, and with --json (one line per "    \
     "stage off a terminal)", NULL, 0, 0, 0},                                                     \
    {"no-progress", CLI_FLAG, &(no_progress), NULL,                                               \
     "no progress display (default: a line on stderr, redrawn in place, when stderr is a "       \
     "terminal and --json is not given)", NULL, 0, 0, 0}

/* The sub-commands (cmd_<name>.c). */
int cmd_info(const cli_command *cmd, int argc, char **argv);
int cmd_gen(const cli_command *cmd, int argc, char **argv);
int cmd_stat(const cli_command *cmd, int argc, char **argv);
int cmd_convert(const cli_command *cmd, int argc, char **argv);
int cmd_run(const cli_command *cmd, int argc, char **argv);
int cmd_conv(const cli_command *cmd, int argc, char **argv);
int cmd_tune(const cli_command *cmd, int argc, char **argv);
int cmd_partition(const cli_command *cmd, int argc, char **argv);

#endif
