/* The one option parser of the CLI, --help text and the error convention. */
#include "cli/cli.h"

#include "core/alloc.h"
#include "core/json.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const cli_duplicates_names[] = {"reject", "sum", NULL};

/* --help's width: text is wrapped at spaces to HELP_COLUMNS, an option's
 * help continued under its first line (HELP_INDENT). */
enum { HELP_COLUMNS = 100, HELP_INDENT = 29 };

/* text from column `column` on (the line's first `column` characters
 * printed already), wrapped: each line of text broken at its last space
 * before HELP_COLUMNS and continued `indent` spaces in (a word longer than
 * a line stands alone). */
static void print_wrapped(const char *text, int column, int indent)
{
    while (*text) {
        int room = HELP_COLUMNS - column, len = 0, cut = -1;
        while (text[len] && text[len] != '\n' && (len < room || cut < 0)) {
            if (text[len] == ' ')
                cut = len;
            len++;
        }
        if (((!text[len] || text[len] == '\n') && len <= room) || cut < 0)
            cut = len; /* the rest of this line fits, or a word longer than it */
        printf("%.*s\n", cut, text);
        text += cut;
        if (*text == '\n' || *text == ' ')
            text++;
        column = *text ? printf("%*s", indent, "") : 0;
    }
}

static void print_option(const char *left, const char *help)
{
    int column = printf("  %-26s ", left);
    print_wrapped(help, column, HELP_INDENT);
}

static void print_help(const cli_command *cmd, const cli_option *options, int count)
{
    printf("usage: spforge %s%s%s [options]\n\n", cmd->name, cmd->synopsis[0] ? " " : "",
           cmd->synopsis);
    print_wrapped(cmd->summary, 0, 0);
    if (cmd->details) {
        printf("\n");
        print_wrapped(cmd->details, 0, 0);
    }
    printf("\noptions:\n");
    for (int i = 0; i < count; i++) {
        char left[64];
        snprintf(left, sizeof left, "--%s%s%s", options[i].name, options[i].kind == CLI_FLAG ? "" : " ",
                 options[i].kind == CLI_FLAG ? "" : options[i].metavar);
        print_option(left, options[i].help);
    }
    print_option("--max-bytes BYTES", "the work budget: most host memory one step may take for "
                 "what the input declares (default $SPFORGE_MAX_BYTES, else 4 GiB or half the "
                 "memory; 0: that default; < 0: none)");
    print_option("--json", "print one JSON object on stdout instead of text");
    print_option("--help", "show this help and exit");
}

/* With --json, a failure is also the one JSON object on stdout, unless the
 * command printed its own (ctx->json_done: a run whose result failed its
 * check says so in it): {"command", "error": {"status", "name", "detail"},
 * "exit_code"}, so that a script reading stdout always gets an object. */
static void json_report(const cli_context *ctx, spf_status st, const char *message, int exit_code)
{
    if (!ctx->json || ctx->json_done)
        return;
    json_writer w;
    char *text = NULL;
    json_init(&w);
    json_object_begin(&w, NULL);
    json_string(&w, "command", ctx->cmd->name);
    json_object_begin(&w, "error");
    json_int(&w, "status", st);
    json_string(&w, "name", spf_status_string(st));
    json_string(&w, "detail", message);
    json_object_end(&w);
    json_int(&w, "exit_code", exit_code);
    json_object_end(&w);
    if (json_finish(&w, &text) == SPF_OK)
        puts(text);
    mem_free(text);
}

/* "spforge <cmd>: <status string>: <message>" on stderr, and with --json
 * the object above. */
static void vreport(const cli_context *ctx, spf_status st, int exit_code, const char *fmt,
                    va_list ap)
{
    char fixed[1024], *message = fixed;
    va_list again;
    va_copy(again, ap);
    int len = vsnprintf(fixed, sizeof fixed, fmt, ap);
    if (len >= (int)sizeof fixed && (message = mem_alloc((size_t)len + 1)) != NULL)
        vsnprintf(message, (size_t)len + 1, fmt, again);
    va_end(again);
    if (!message || len < 0)
        message = fixed; /* cut short: the first 1023 bytes */
    fprintf(stderr, "spforge %s: %s: %s\n", ctx->cmd->name, spf_status_string(st), message);
    json_report(ctx, st, message, exit_code);
    if (message != fixed)
        mem_free(message);
}

int cli_usage_error(const cli_context *ctx, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(ctx, SPF_ERR_INVALID_ARGUMENT, CLI_EXIT_USAGE, fmt, ap);
    va_end(ap);
    fprintf(stderr, "(see spforge %s --help)\n", ctx->cmd->name);
    return CLI_EXIT_USAGE;
}

int cli_fail(const cli_context *ctx, spf_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(ctx, st, CLI_EXIT_FAIL, fmt, ap);
    va_end(ap);
    return CLI_EXIT_FAIL;
}

static const char *detail(void) { return spf_last_error()[0] ? spf_last_error() : "(no detail)"; }

int cli_fail_status(const cli_context *ctx, spf_status st) { return cli_fail(ctx, st, "%s", detail()); }

int cli_fail_input(const cli_context *ctx, spf_status st, const char *input)
{
    return cli_fail(ctx, st, "%s: %s", input, detail());
}

/* The work budget option every command takes (spf_set_max_bytes). */
static const cli_option max_bytes_option = {"max-bytes", CLI_INT, NULL, "BYTES", NULL, NULL, 0, 0, 0};

/* An integer option's bound, exact: the table's bounds are integers, and
 * 0..0 (no range) means the whole of int64. */
static long long int_bound(const cli_option *o, int upper)
{
    if (o->min == 0 && o->max == 0)
        return upper ? LLONG_MAX : LLONG_MIN;
    double b = upper ? o->max : o->min;
    return b >= 0x1p63 ? LLONG_MAX : b <= -0x1p63 ? LLONG_MIN : (long long)b;
}

static int in_range(const cli_option *o, double v)
{
    if (o->min == 0 && o->max == 0)
        return 1;
    return v >= o->min && (o->max_open ? v < o->max : v <= o->max);
}

/* A valid number beyond the option's range (integer bounds printed exactly). */
static int range_error(const cli_context *ctx, const cli_option *o, const char *text)
{
    if (o->kind == CLI_INT)
        return cli_usage_error(ctx, "--%s: out of range [%lld, %lld], got '%s'", o->name,
                               int_bound(o, 0), int_bound(o, 1), text);
    if (o->kind == CLI_U64)
        return cli_usage_error(ctx, "--%s: out of range [0, %llu], got '%s'", o->name,
                               ULLONG_MAX, text);
    return cli_usage_error(ctx, "--%s: out of range [%g, %g%s, got '%s'", o->name, o->min,
                           o->max, o->max_open ? ")" : "]", text);
}

/* Store text into o's target; a usage error names the option: "expected an
 * integer" when text is not one, "out of range" when it is one beyond the
 * range (int64 included). */
static int set_value(const cli_context *ctx, const cli_option *o, const char *text)
{
    char *end = NULL;
    errno = 0;
    switch (o->kind) {
    case CLI_FLAG: *(int *)o->target = 1; return CLI_CONTINUE;
    case CLI_STRING: *(const char **)o->target = text; return CLI_CONTINUE;
    case CLI_INT: {
        long long v = strtoll(text, &end, 10);
        if (end == text || *end)
            return cli_usage_error(ctx, "--%s: expected an integer, got '%s'", o->name, text);
        if (errno == ERANGE || v < int_bound(o, 0) || v > int_bound(o, 1))
            return range_error(ctx, o, text);
        *(int64_t *)o->target = v;
        return CLI_CONTINUE;
    }
    case CLI_U64: {
        /* Decimal only: base 0 would read "010" as 8 and refuse "08". */
        unsigned long long v = strtoull(text, &end, 10);
        if (end == text || *end)
            return cli_usage_error(ctx, "--%s: expected an unsigned integer, got '%s'", o->name, text);
        /* strtoull accepts "-1" as a huge value; a seed given negative is a typo. */
        if (errno == ERANGE || strchr(text, '-'))
            return range_error(ctx, o, text);
        *(uint64_t *)o->target = v;
        return CLI_CONTINUE;
    }
    case CLI_DOUBLE: {
        double v = strtod(text, &end);
        if (end == text || *end || errno == ERANGE || !isfinite(v))
            return cli_usage_error(ctx, "--%s: expected a number, got '%s'", o->name, text);
        if (!in_range(o, v))
            return range_error(ctx, o, text);
        *(double *)o->target = v;
        return CLI_CONTINUE;
    }
    case CLI_CHOICE:
        for (int i = 0; o->choices[i]; i++) {
            if (strcmp(o->choices[i], text) == 0) {
                *(int *)o->target = i;
                return CLI_CONTINUE;
            }
        }
        return cli_usage_error(ctx, "--%s: expected %s, got '%s'", o->name, o->metavar, text);
    }
    return cli_usage_error(ctx, "--%s: unknown option kind", o->name);
}

int cli_parse(cli_context *ctx, const cli_command *cmd, const cli_option *options, int count,
              int argc, char **argv)
{
    memset(ctx, 0, sizeof *ctx);
    ctx->cmd = cmd;
    /* --json anywhere: a usage error before it is reported as JSON too */
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        ctx->json |= strcmp(argv[i], "--json") == 0;
    int only_args = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (only_args || arg[0] != '-' || arg[1] == '\0') {
            if (ctx->arg_count == cmd->max_args)
                return cli_usage_error(ctx, "unexpected argument '%s'", arg);
            ctx->args[ctx->arg_count++] = arg;
            continue;
        }
        if (strcmp(arg, "--") == 0) {
            only_args = 1;
            continue;
        }
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            print_help(cmd, options, count);
            return CLI_EXIT_OK;
        }
        if (strcmp(arg, "--json") == 0) {
            ctx->json = 1;
            continue;
        }
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t name_len = eq ? (size_t)(eq - name) : strlen(name);
        const cli_option *o = NULL;
        for (int k = 0; k < count && arg[1] == '-'; k++) {
            if (strlen(options[k].name) == name_len && strncmp(options[k].name, name, name_len) == 0)
                o = &options[k];
        }
        cli_option budget = max_bytes_option;
        budget.target = &ctx->max_bytes;
        if (!o && arg[1] == '-' && name_len == strlen(budget.name) &&
            strncmp(name, budget.name, name_len) == 0) {
            o = &budget;
            ctx->max_bytes_given = 1;
        }
        if (!o)
            return cli_usage_error(ctx, "unknown option '%s'", arg);
        const char *value = NULL;
        if (o->kind == CLI_FLAG) {
            if (eq)
                return cli_usage_error(ctx, "--%s takes no value", o->name);
        } else if (eq) {
            value = eq + 1;
        } else if (i + 1 < argc) {
            value = argv[++i];
        } else {
            return cli_usage_error(ctx, "--%s needs a value (%s)", o->name, o->metavar);
        }
        int rc = set_value(ctx, o, value);
        if (rc != CLI_CONTINUE)
            return rc;
    }
    if (ctx->arg_count < cmd->min_args)
        return cli_usage_error(ctx, "missing argument (usage: spforge %s %s)", cmd->name, cmd->synopsis);
    if (ctx->max_bytes_given)
        spf_set_max_bytes(ctx->max_bytes);
    return CLI_CONTINUE;
}

void cli_read_args_init(cli_read_args *ra)
{
    ra->duplicates = SPF_DUPLICATES_REJECT;
    ra->values = NULL;
    ra->sparsity = -1.0;
    ra->max_read_bytes = 0;
}

spf_status cli_read_matrix(const cli_read_args *ra, uint64_t seed, const char *path, spf_matrix **a)
{
    spf_read_options ro;
    spf_read_options_init(&ro);
    ro.duplicates = ra->duplicates == SPF_DUPLICATES_SUM ? SPF_DUPLICATES_SUM : SPF_DUPLICATES_REJECT;
    ro.values_path = ra->values;
    ro.npy_sparsity = ra->sparsity;
    ro.max_bytes = ra->max_read_bytes;
    ro.seed = seed;
    return spf_matrix_read(path, &ro, a);
}
