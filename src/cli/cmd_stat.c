/* spforge stat: read a matrix, print its statistics and the read time. */
#include "cli/cli.h"

#include <stdio.h>

int cmd_stat(const cli_command *cmd, int argc, char **argv)
{
    cli_read_args ra;
    cli_read_args_init(&ra);
    uint64_t seed = 1;
    const cli_option options[] = {
        {"seed", CLI_U64, &seed, "S", "seed of the values of pattern-only files (default 1)", NULL, 0, 0, 0},
        CLI_READ_OPTIONS(ra),
    };
    cli_context ctx;
    int rc = cli_parse(&ctx, cmd, options, sizeof options / sizeof options[0], argc, argv);
    if (rc != CLI_CONTINUE)
        return rc;
    const char *path = ctx.args[0];

    spf_matrix *a = NULL;
    spf_matrix_stats s;
    double t0 = cli_now();
    spf_status st = cli_read_matrix(&ra, seed, path, &a);
    double t1 = cli_now();
    if (st == SPF_OK)
        st = spf_matrix_stats_compute(a, &s);
    spf_matrix_free(a);
    if (st != SPF_OK)
        return cli_fail_status(&ctx, st);

    if (ctx.json) {
        json_writer w;
        cli_json_begin(&w, &ctx);
        json_string(&w, "path", path);
        json_double(&w, "read_ms", 1e3 * (t1 - t0));
        cli_json_stats(&w, "stats", &s);
        return cli_json_end(&ctx, &w);
    }
    printf("%s (read in %.1f ms)\n", path, 1e3 * (t1 - t0));
    cli_print_stats(&s);
    return CLI_EXIT_OK;
}
