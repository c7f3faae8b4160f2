/* spforge gen: write a synthetic matrix and print its statistics. */
#include "cli/cli.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

/* The --kind names, in this order; 2:4 is V:N:M with V = 1, N:M = 2:4. */
enum { KIND_UNIFORM, KIND_MAGNITUDE, KIND_COLVEC, KIND_VNM, KIND_2_4, KIND_RMAT };
static const char *const kind_names[] = {"uniform", "magnitude", "colvec", "vnm", "2:4", "rmat", NULL};
static const spf_generator kind_generators[] = {SPF_GEN_UNIFORM, SPF_GEN_MAGNITUDE,
                                                SPF_GEN_COLUMN_VECTOR, SPF_GEN_VNM,
                                                SPF_GEN_VNM, SPF_GEN_RMAT};

/* "N:M" with 1 <= N <= M. */
static int parse_nm(const char *text, int32_t *n, int32_t *m)
{
    char *end = NULL;
    long a = strtol(text, &end, 10);
    if (end == text || *end != ':')
        return 0;
    const char *rest = end + 1;
    long b = strtol(rest, &end, 10);
    if (end == rest || *end || a < 1 || b < a || b > 1024)
        return 0;
    *n = (int32_t)a;
    *m = (int32_t)b;
    return 1;
}

int cmd_gen(const cli_command *cmd, int argc, char **argv)
{
    spf_gen_options g;
    spf_gen_options_init(&g);
    int kind = KIND_UNIFORM;
    int64_t rows = g.rows, cols = g.cols, vector_length = g.vector_length;
    const char *nm = NULL;
    const cli_option options[] = {
        {"kind", CLI_CHOICE, &kind, "uniform|magnitude|colvec|vnm|2:4|rmat",
         "the sparsity pattern (default uniform)", kind_names, 0, 0, 0},
        {"rows", CLI_INT, &rows, "M", "rows (default 768)", NULL, 1, INT32_MAX, 0},
        {"cols", CLI_INT, &cols, "K", "columns (default 768)", NULL, 1, INT32_MAX, 0},
        {"sparsity", CLI_DOUBLE, &g.sparsity, "S", "fraction of zeros in [0, 1) (default 0.9)", NULL,
         0, 1, 1},
        {"seed", CLI_U64, &g.seed, "S", "random seed (default 1)", NULL, 0, 0, 0},
        {"vector-length", CLI_INT, &vector_length, "L",
         "colvec: vector length; vnm: V (default 4)", NULL, 1, 1 << 20, 0},
        {"nm", CLI_STRING, &nm, "N:M", "vnm: keep N of every M columns (default 2:4)", NULL, 0, 0, 0},
    };
    cli_context ctx;
    int rc = cli_parse(&ctx, cmd, options, sizeof options / sizeof options[0], argc, argv);
    if (rc != CLI_CONTINUE)
        return rc;
    if (nm && !parse_nm(nm, &g.n, &g.m))
        return cli_usage_error(&ctx, "--nm: expected N:M with 1 <= N <= M <= 1024, got '%s'", nm);
    g.kind = kind_generators[kind];
    g.rows = rows;
    g.cols = cols;
    g.vector_length = (int32_t)vector_length;
    if (kind == KIND_2_4) {
        g.vector_length = 1;
        g.n = 2;
        g.m = 4;
    }
    const char *out = ctx.args[0];

    spf_matrix *a = NULL;
    spf_matrix_stats s;
    double t0 = cli_now();
    spf_status st = spf_matrix_generate(&g, &a);
    double t1 = cli_now();
    if (st == SPF_OK)
        st = spf_matrix_write(a, out, SPF_FORMAT_AUTO);
    double t2 = cli_now();
    if (st == SPF_OK)
        st = spf_matrix_stats_compute(a, &s);
    spf_matrix_free(a);
    if (st != SPF_OK)
        return cli_fail_status(&ctx, st);

    if (ctx.json) {
        json_writer w;
        cli_json_begin(&w, &ctx);
        json_string(&w, "path", out);
        json_string(&w, "kind", kind_names[kind]);
        json_uint(&w, "seed", g.seed);
        if (kind == KIND_COLVEC || kind == KIND_VNM)
            json_int(&w, "vector_length", g.vector_length);
        if (kind == KIND_VNM || kind == KIND_2_4) {
            json_int(&w, "n", g.n);
            json_int(&w, "m", g.m);
        }
        json_double(&w, "generate_ms", 1e3 * (t1 - t0));
        json_double(&w, "write_ms", 1e3 * (t2 - t1));
        cli_json_stats(&w, "stats", &s);
        return cli_json_end(&ctx, &w);
    }
    printf("wrote %s: %s, seed %" PRIu64 " (generated in %.1f ms, written in %.1f ms)\n", out,
           kind_names[kind], g.seed, 1e3 * (t1 - t0), 1e3 * (t2 - t1));
    cli_print_stats(&s);
    return CLI_EXIT_OK;
}
