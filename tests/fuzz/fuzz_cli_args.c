/* Fuzz target of the CLI option parser (cli_parse, src/cli/cli_args.c),
 * called directly: main would run the command. The input is split into
 * arguments at its NUL bytes and parsed as the arguments of three command
 * shapes — no positional argument allowed, exactly one, and zero to two —
 * against one table holding every option kind (flag, bounded integer,
 * unsigned, half-open real, string, choice) and the shared read options.
 * A parse that lets the command go on must leave the positional count and
 * every bounded value in range. cli_parse prints its usage errors and
 * --help: scripts/fuzz.sh runs this target with -close_fd_mask=3. */
#include "cli/cli.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_ARGV = 64 };

static const char *const colors[] = {"red", "green", "blue", NULL};

static int main_unused(const cli_command *cmd, int argc, char **argv) { return 0; }

static const cli_command shapes[] = {
    {"none", "", "no positional argument", NULL, 0, 0, main_unused},
    {"one", "FILE", "exactly one", NULL, 1, 1, main_unused},
    {"upto2", "[IN] [OUT]", "zero to two", NULL, 0, 2, main_unused},
};

static void parse(const cli_command *cmd, int argc, char **argv)
{
    cli_read_args ra;
    cli_read_args_init(&ra);
    int flag = 0, color = 0;
    int64_t n = 0;
    uint64_t seed = 1;
    double ratio = 0.5;
    const char *name = NULL;
    const cli_option options[] = {
        {"flag", CLI_FLAG, &flag, NULL, "a flag", NULL, 0, 0, 0},
        {"n", CLI_INT, &n, "N", "an integer in [1, 2^31 - 1]", NULL, 1, INT32_MAX, 0},
        {"seed", CLI_U64, &seed, "S", "an unsigned integer", NULL, 0, 0, 0},
        {"ratio", CLI_DOUBLE, &ratio, "R", "a real in [0, 1)", NULL, 0, 1, 1},
        {"name", CLI_STRING, &name, "NAME", "a string", NULL, 0, 0, 0},
        {"color", CLI_CHOICE, &color, "red|green|blue", "a choice", colors, 0, 0, 0},
        CLI_READ_OPTIONS(ra),
    };
    cli_context ctx;
    int rc = cli_parse(&ctx, cmd, options, sizeof options / sizeof options[0], argc, argv);
    if (rc != CLI_CONTINUE && rc != CLI_EXIT_OK && rc != CLI_EXIT_USAGE)
        abort();
    if (rc != CLI_CONTINUE)
        return;
    if (ctx.arg_count < cmd->min_args || ctx.arg_count > cmd->max_args)
        abort();
    for (int i = 0; i < ctx.arg_count; i++)
        if (!ctx.args[i])
            abort();
    if (n < 0 || n > INT32_MAX || !(ratio >= 0 && ratio < 1) || color < 0 || color > 2 ||
        (flag != 0 && flag != 1) || ra.duplicates < 0 || ra.duplicates > 1 ||
        !(ra.sparsity == -1.0 || (ra.sparsity >= 0 && ra.sparsity < 1)))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A terminated copy, so the last argument ends too. */
    char *text = malloc(size + 1);
    if (!text)
        abort();
    memcpy(text, data, size);
    text[size] = '\0';
    char *argv[MAX_ARGV + 1];
    int argc = 1;
    for (size_t i = 0; i < size && argc < MAX_ARGV; i += strlen(text + i) + 1)
        argv[argc++] = text + i;
    argv[argc] = NULL;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        argv[0] = (char *)shapes[s].name;
        parse(&shapes[s], argc, argv);
    }
    free(text);
    return 0;
}
