/* Fuzz target of the CLI's shape arithmetic: the sub-commands that turn
 * numbers from the command line into sizes (gen, conv, run, partition),
 * called as main calls them. The first byte picks the command, the rest is
 * its options separated by NUL bytes; the positional arguments are fixed
 * (a small weight file, an output file in a private folder), so the
 * options alone reach the arithmetic, and `--repeat 1 --threads 1` and the
 * CPU backend are appended (the last value of an option wins) so that an
 * input costs work in proportion to its sizes, not to a repeat count. The
 * work budget is 16 MiB: a size past it must be refused before it is
 * allocated, and the fuzzer's -malloc_limit_mb / -rss_limit_mb make any
 * allocation that slipped through a finding, as do a crash and a hang.
 * Commands print: scripts/fuzz.sh runs this with -close_fd_mask=3. */
#define _POSIX_C_SOURCE 200809L

#include "cli/cli.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MAX_ARGV = 48, BUDGET = 16 << 20 };

typedef struct command {
    const char *name;
    int (*main)(const cli_command *cmd, int argc, char **argv);
    int min_args, max_args;
    int fixed; /* 0: the weights, 1: the output file */
    int backend;
} command;

static const command commands[] = {
    {"gen", cmd_gen, 1, 1, 1, 0},
    {"conv", cmd_conv, 1, 1, 0, 1},
    {"run", cmd_run, 0, 1, 0, 1},
    {"partition", cmd_partition, 1, 1, 0, 0},
};

static char folder[64], weights[128], output[128];

static void setup(void)
{
    snprintf(folder, sizeof folder, "/tmp/spf_fuzz_shapes_XXXXXX");
    if (!mkdtemp(folder))
        abort();
    snprintf(weights, sizeof weights, "%s/w.smtx", folder);
    snprintf(output, sizeof output, "%s/out.smtx", folder);
    /* 4 x 9: a 3x3 filter on one channel (conv), a 4 x 9 A (run, partition) */
    FILE *f = fopen(weights, "w");
    if (!f)
        abort();
    fputs("4, 9, 12\n0 3 6 9 12\n0 4 8 1 3 5 0 2 7 4 6 8\n", f);
    fclose(f);
    spf_set_max_bytes(BUDGET);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!folder[0])
        setup();
    if (size < 1)
        return 0;
    const command *c = &commands[data[0] % (sizeof commands / sizeof *commands)];
    char *text = malloc(size);
    if (!text)
        abort();
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    static char repeat[] = "--repeat", one[] = "1", threads[] = "--threads", backend[] = "--backend",
                cpu[] = "cpu";
    char *argv[MAX_ARGV + 8];
    int argc = 0;
    argv[argc++] = (char *)c->name;
    argv[argc++] = c->fixed ? output : weights;
    /* the budget and the read limit stay the harness's: raising them is
     * the user's right, not a finding */
    int skip = 0;
    for (size_t i = 0; i + 1 < size && argc < MAX_ARGV; i += strlen(text + i) + 1) {
        if (skip-- > 0 || !text[i])
            continue;
        if (strncmp(text + i, "--max-bytes", 11) == 0 || strncmp(text + i, "--max-read-bytes", 16) == 0) {
            skip = strchr(text + i, '=') ? 0 : 1;
            continue;
        }
        argv[argc++] = text + i;
    }
    if (c->backend) {
        argv[argc++] = repeat, argv[argc++] = one;
        argv[argc++] = threads, argv[argc++] = one;
        argv[argc++] = backend, argv[argc++] = cpu;
    }
    argv[argc] = NULL;
    const cli_command cmd = {c->name, "", "fuzzed", NULL, c->min_args, c->max_args, c->main};
    int rc = c->main(&cmd, argc, argv);
    spf_set_max_bytes(BUDGET); /* --max-bytes may have changed it */
    if (rc != CLI_EXIT_OK && rc != CLI_EXIT_FAIL && rc != CLI_EXIT_USAGE)
        abort();
    unlink(output);
    free(text);
    return 0;
}
