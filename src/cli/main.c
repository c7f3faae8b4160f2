/* spforge: the command-line front end. Dispatches to one file per
 * sub-command (cmd_<name>.c); the shared parser and output live in
 * cli_args.c and cli_output.c. */
#define _POSIX_C_SOURCE 200809L

#include "cli/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const cli_command commands[] = {
    {"info", "", "Print the version, the CUDA device (or why there is none) and the host cores.",
     NULL, 0, 0, cmd_info},
    {"gen", "OUT", "Write a synthetic sparse matrix to OUT (.mtx, .smtx or .npy) and print its statistics.",
     "kinds: uniform (random pruning), magnitude (Gaussian, smallest |w| pruned), colvec (column\n"
     "vectors of --vector-length rows), vnm (V:N:M with V = --vector-length, N:M = --nm), 2:4, rmat\n"
     "(R-MAT power-law graph; the shape is rounded to a power of two).",
     1, 1, cmd_gen},
    {"stat", "FILE", "Read a sparse matrix (.mtx, .smtx or .npy) and print its statistics and the read time.",
     "Pattern-only files (.smtx, pattern .mtx) get values uniform in [-1, 1] drawn from --seed.", 1, 1,
     cmd_stat},
    {"convert", "IN OUT", "Read IN and write it to OUT; formats follow the file extensions.",
     "Writing .smtx keeps the pattern only; .npy writes the dense float32 matrix.", 2, 2, cmd_convert},
    {"run", "[FILE]", "Run C = A*B (+bias, +ReLU) on the best available backend, time it and check it.",
     "Without FILE, A is the embedded default input: a seeded synthetic pruned layer, uniform\n"
     "768x768 at sparsity 0.9, seed 1. B (K x N) and the bias are uniform in [-1, 1] from --seed,\n"
     "which also seeds the values of pattern-only files. The result is checked against the CPU\n"
     "reference accumulated in double (on B rounded to --dtype); a relative error above the\n"
     "tolerance fails (exit 1): 1e-6 on the CPU; on the GPU 1e-5 for f32, 5e-3 with TF32, 1e-2\n"
     "for f16 / bf16, 5e-2 with f16x2 accumulation (BENCHMARKS.md). The GPU plan's output names\n"
     "the strategies the planner considered, their times, and why the others were refused.\n"
     "Progress (the plan's stages: candidates, build, compile, ...; the timed runs) shows on\n"
     "stderr in one line redrawn in place when stderr is a terminal and --json is not given;\n"
     "--progress shows it anyway (a line per stage off a terminal), --no-progress never.",
     0, 1, cmd_run},
    {"conv", "WEIGHTS", "Run a sparse 2-D convolution (WEIGHTS: K_out x C*R*S) on the best available backend, time it and check it.",
     "WEIGHTS' columns are ordered (c, r, s), c slowest: torch's conv.weight.reshape(K_out, -1).\n"
     "The input (--input-shape N,C,H,W, in --layout), the bias and the residual are uniform in\n"
     "[-1, 1] from --seed. 1x1 convolutions with stride 1 and no padding take the input as the\n"
     "SpMM's B; the others gather it (im2col) into the plan's workspace first. The output is\n"
     "checked against the CPU reference (sums in double) with the tolerances of `run`.",
     1, 1, cmd_conv},
    {"tune", "FILE", "Search the fastest generated kernel for FILE and N (LO-SpMM's low-cost search) on the GPU.",
     "Stages: the tile space, pruned by the register, utilization and balance constraints, ranked\n"
     "by the rank model, the top K evaluated through proxies (or as real kernels with\n"
     "--no-proxies), the winner compiled, checked against the CPU reference and timed. Prints the\n"
     "candidates left after each stage, the time of each step and the chosen kernel; the plan is\n"
     "kept in the plan cache ($SPFORGE_CACHE_DIR) unless --no-cache. --exhaustive also times every\n"
     "configuration of the same space (the oracle) and prints the search's loss against it.\n"
     "Log lines (stages, tuner batches, fall-back warnings) go to stderr as they come, TTY or\n"
     "not, so they also show in logs; --quiet keeps only the warnings. On a terminal a progress\n"
     "line below them shows the stage running and its count (--progress: also off a terminal and\n"
     "with --json; --no-progress: never). Needs a CUDA device.",
     1, 1, cmd_tune},
    {"partition", "FILE", "Split FILE's rows over P ranks for distributed SpMM and print each rank's share and exchange.",
     "The split balances each rank's work (nonzeros + 4 per row) and minimises the largest exactly.\n"
     "Rank r computes C's rows of its part; B is split by rows too (--b-split), and rank r\n"
     "receives the rows of B that its part's columns name from the ranks holding them. Per P of\n"
     "--ranks: the largest part's work against the mean and against an even split by rows, and\n"
     "each rank's rows, nonzeros on its own rows of B and on received ones, rows of B received\n"
     "and sent, and the ranks it receives from (a table up to 16 ranks; --json for all).",
     1, 1, cmd_partition},
};
enum { COMMAND_COUNT = sizeof commands / sizeof commands[0] };

static void print_usage(FILE *to)
{
    fprintf(to, "spforge %s: sparse x dense matrix multiplication kernels for NVIDIA GPUs\n\n"
                "usage: spforge <command> [options]   (spforge <command> --help for more)\n\ncommands:\n",
            spf_version());
    for (int i = 0; i < COMMAND_COUNT; i++)
        fprintf(to, "  %-8s %s\n", commands[i].name, commands[i].summary);
}

/* A closed standard stream (started with 1>&-) is opened on /dev/null,
 * stdout read-only so that every write to it fails and is reported: else the
 * next file opened would take its number and printf would write into it. */
static void hold_standard_streams(void)
{
    static const int modes[] = {O_RDONLY, O_RDONLY, O_WRONLY};
    for (int fd = 0; fd <= 2; fd++)
        if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
            int held = open("/dev/null", modes[fd]);
            if (held >= 0 && held != fd) /* lower numbers are held already */
                close(held);
        }
}

/* The command's output is only delivered once stdout took it all: a full
 * disk, a closed pipe or a closed stdout is an error (exit 1), never a
 * silent loss. */
static int finish_output(int rc, const char *command)
{
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout))
        return rc;
    int err = errno ? errno : EIO;
    fprintf(stderr, "spforge%s%s: I/O error: writing standard output: %s\n", command ? " " : "",
            command ? command : "", strerror(err));
    return CLI_EXIT_FAIL;
}

int main(int argc, char **argv)
{
    hold_standard_streams();
    if (argc < 2) {
        print_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        print_usage(stdout);
        return finish_output(CLI_EXIT_OK, NULL);
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("spforge %s\n", spf_version());
        return finish_output(CLI_EXIT_OK, NULL);
    }
    for (int i = 0; i < COMMAND_COUNT; i++) {
        if (strcmp(argv[1], commands[i].name) == 0)
            return finish_output(commands[i].main(&commands[i], argc - 1, argv + 1),
                                 commands[i].name);
    }
    fprintf(stderr, "spforge: invalid argument: unknown command '%s'\n", argv[1]);
    print_usage(stderr);
    return CLI_EXIT_USAGE;
}
