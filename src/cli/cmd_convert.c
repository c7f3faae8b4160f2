/* spforge convert: read one format, write another (by file extension). */
#include "cli/cli.h"

#include <inttypes.h>
#include <stdio.h>

int cmd_convert(const cli_command *cmd, int argc, char **argv)
{
    cli_read_args ra;
    cli_read_args_init(&ra);
    uint64_t seed = 1;
    const cli_option options[] = {
        {"seed", CLI_U64, &seed, "S", "seed of the values of pattern-only inputs (default 1)", NULL, 0, 0, 0},
        CLI_READ_OPTIONS(ra),
    };
    cli_context ctx;
    int rc = cli_parse(&ctx, cmd, options, sizeof options / sizeof options[0], argc, argv);
    if (rc != CLI_CONTINUE)
        return rc;
    const char *in = ctx.args[0], *out = ctx.args[1];

    spf_matrix *a = NULL;
    double t0 = cli_now();
    spf_status st = cli_read_matrix(&ra, seed, in, &a);
    double t1 = cli_now();
    if (st == SPF_OK)
        st = spf_matrix_write(a, out, SPF_FORMAT_AUTO);
    double t2 = cli_now();
    int64_t rows = spf_matrix_rows(a), cols = spf_matrix_cols(a), nnz = spf_matrix_nnz(a);
    spf_matrix_free(a);
    if (st != SPF_OK)
        return cli_fail_status(&ctx, st);

    if (ctx.json) {
        json_writer w;
        cli_json_begin(&w, &ctx);
        json_string(&w, "input", in);
        json_string(&w, "output", out);
        json_int(&w, "rows", rows);
        json_int(&w, "cols", cols);
        json_int(&w, "nnz", nnz);
        json_double(&w, "read_ms", 1e3 * (t1 - t0));
        json_double(&w, "write_ms", 1e3 * (t2 - t1));
        return cli_json_end(&ctx, &w);
    }
    printf("%s -> %s: %" PRId64 " x %" PRId64 ", nnz %" PRId64 " (read %.1f ms, written %.1f ms)\n", in,
           out, rows, cols, nnz, 1e3 * (t1 - t0), 1e3 * (t2 - t1));
    return CLI_EXIT_OK;
}
