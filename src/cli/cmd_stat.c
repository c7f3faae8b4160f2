/* spforge stat: read a matrix, print its statistics and the read time;
 * with --tiles M1 also its A_tiles' statistics without and with LO-SpMM
 * Algorithm 1 row reordering (plan/reorder.h) and the reorder time; with
 * --tc-format its tensor-core format without and with Acc-SpMM's
 * data-affinity row reordering (strategy/tc/affinity.h). */
#include "cli/cli.h"
#include "core/alloc.h"
#include "strategy/tc/affinity.h"
#include "strategy/tc/tc_format.h"
#include "strategy/unrolled/reorder.h"
#include "strategy/unrolled/tile_stats.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct tile_report {
    tile_stats identity, reordered;
    double reorder_ms;
} tile_report;

static spf_status tile_report_compute(const spf_matrix *a, int m1, tile_report *out)
{
    int64_t m = spf_matrix_rows(a);
    int32_t *order = malloc((size_t)(m ? m : 1) * sizeof *order);
    if (!order)
        return SPF_ERR_OUT_OF_MEMORY;
    spf_status st = tile_nnc_stats(a, NULL, m1, &out->identity);
    double t0 = cli_now();
    if (st == SPF_OK)
        st = reorder_rows(a, m1, REORDER_NNZ_SLACK, order);
    out->reorder_ms = 1e3 * (cli_now() - t0);
    if (st == SPF_OK)
        st = tile_nnc_stats(a, order, m1, &out->reordered);
    free(order);
    return st;
}

/* The format in the rows' order and after affinity reordering, the latter
 * in the placement the former took, so that their tiles compare. */
typedef struct tc_report {
    tc_format identity, reordered;
    double reorder_ms;
} tc_report;

static spf_status tc_report_compute(const spf_matrix *a, tc_format_mode mode, tc_report *out)
{
    int32_t *order = NULL;
    spf_matrix *p = NULL;
    double s = 0.0;
    spf_status st = tc_format_build(a, SPF_DTYPE_F16, mode, 0, &out->identity);
    if (st == SPF_OK)
        st = tc_affinity_order(a, 0, &order, &s);
    out->reorder_ms = 1e3 * s;
    if (st == SPF_OK)
        st = tc_permute_rows(a, order, &p);
    if (st == SPF_OK)
        st = tc_format_build(p, SPF_DTYPE_F16, out->identity.mode, 0, &out->reordered);
    mem_free(order);
    spf_matrix_free(p);
    return st;
}

static void tc_report_free(tc_report *r)
{
    tc_format_free(&r->identity);
    tc_format_free(&r->reordered);
}

static void json_tc_format(json_writer *w, const tc_format *f)
{
    json_string(w, "placement", tc_format_mode_name(f->mode));
    json_int(w, "tiles", f->tiles);
    json_int(w, "bytes", f->bytes);
    json_double(w, "bytes_per_weight", tc_format_bytes_per_weight(f));
    json_double(w, "build_ms", 1e3 * f->build_s);
}

static void json_tile_stats(json_writer *w, const char *key, const tile_stats *s)
{
    json_object_begin(w, key);
    json_int(w, "max_nnc", s->max_nnc);
    json_double(w, "mean_nnc", s->mean_nnc);
    json_double(w, "cov_row", s->cov_row);
    json_object_end(w);
}

int cmd_stat(const cli_command *cmd, int argc, char **argv)
{
    cli_read_args ra;
    cli_read_args_init(&ra);
    uint64_t seed = 1;
    int64_t m1 = 0;
    int tc = 0, placement = -1;
    static const char *const placements[] = {"auto", "blocked", "condensed", NULL};
    const cli_option options[] = {
        {"seed", CLI_U64, &seed, "S", "seed of the values of pattern-only files (default 1)", NULL, 0, 0, 0},
        {"tiles", CLI_INT, &m1, "M1",
         "also the A_tiles of M1 rows: max / mean non-empty columns per tile and COV_row, in row "
         "order and after LO-SpMM row reordering, and the reorder time", NULL, 1, 1024, 0},
        {"tc-format", CLI_FLAG, &tc, NULL,
         "also the tensor-core format with fp16 values (16x16 bitmap tiles): placement, tiles, "
         "bytes per weight against dense fp16's 2, build time; and the same in that placement "
         "after Acc-SpMM data-affinity row reordering, with the reorder time", NULL, 0, 0, 0},
        {"tc-placement", CLI_CHOICE, &placement, "auto|blocked|condensed",
         "the tensor-core format's placement of tiles along K (implies --tc-format; default "
         "auto: the one of fewer bytes)", placements, 0, 0, 0},
        CLI_READ_OPTIONS(ra),
    };
    cli_context ctx;
    int rc = cli_parse(&ctx, cmd, options, sizeof options / sizeof options[0], argc, argv);
    if (rc != CLI_CONTINUE)
        return rc;
    const char *path = ctx.args[0];
    tc |= placement >= 0;

    spf_matrix *a = NULL;
    spf_matrix_stats s;
    tile_report tr = {0};
    tc_report tcr = {0};
    double t0 = cli_now();
    spf_status st = cli_read_matrix(&ra, seed, path, &a);
    double t1 = cli_now();
    if (st != SPF_OK)
        return cli_fail_status(&ctx, st); /* the read's message names the file */
    st = spf_matrix_stats_compute(a, &s);
    if (st == SPF_OK && m1 > 0)
        st = tile_report_compute(a, (int)m1, &tr);
    if (st == SPF_OK && tc)
        st = tc_report_compute(a, placement > 0 ? (tc_format_mode)placement : TC_FORMAT_AUTO,
                               &tcr);
    spf_matrix_free(a);
    if (st != SPF_OK) {
        tc_report_free(&tcr);
        return cli_fail_input(&ctx, st, path);
    }

    if (ctx.json) {
        json_writer w;
        cli_json_begin(&w, &ctx);
        json_string(&w, "path", path);
        json_double(&w, "read_ms", 1e3 * (t1 - t0));
        cli_json_stats(&w, "stats", &s);
        if (m1 > 0) {
            json_object_begin(&w, "tiles");
            json_int(&w, "m1", m1);
            json_int(&w, "count", tr.identity.tiles);
            json_tile_stats(&w, "identity", &tr.identity);
            json_tile_stats(&w, "reordered", &tr.reordered);
            json_double(&w, "reorder_ms", tr.reorder_ms);
            json_object_end(&w);
        }
        if (tc) {
            json_object_begin(&w, "tc_format");
            json_tc_format(&w, &tcr.identity);
            json_object_begin(&w, "affinity");
            json_double(&w, "reorder_ms", tcr.reorder_ms);
            json_tc_format(&w, &tcr.reordered);
            json_object_end(&w);
            json_object_end(&w);
            tc_report_free(&tcr);
        }
        return cli_json_end(&ctx, &w);
    }
    printf("%s (read in %.1f ms)\n", path, 1e3 * (t1 - t0));
    cli_print_stats(&s);
    if (m1 > 0) {
        printf("  A_tiles of %lld rows: %lld\n", (long long)m1, (long long)tr.identity.tiles);
        printf("    row order:  max nnc %lld, mean nnc %.1f, COV_row %.3f\n",
               (long long)tr.identity.max_nnc, tr.identity.mean_nnc, tr.identity.cov_row);
        printf("    reordered:  max nnc %lld, mean nnc %.1f, COV_row %.3f (reorder %.1f ms)\n",
               (long long)tr.reordered.max_nnc, tr.reordered.mean_nnc, tr.reordered.cov_row,
               tr.reorder_ms);
    }
    if (tc) {
        const tc_format *f = &tcr.identity, *g = &tcr.reordered;
        printf("  tc format (fp16 values): %s, %lld tiles of 16x16, %lld bytes: %.3f bytes per "
               "weight (dense fp16 2), built in %.1f ms\n",
               tc_format_mode_name(f->mode), (long long)f->tiles, (long long)f->bytes,
               tc_format_bytes_per_weight(f), 1e3 * f->build_s);
        printf("    after affinity reordering: %lld tiles, %lld bytes: %.3f bytes per weight "
               "(reordered in %.1f ms, built in %.1f ms)\n",
               (long long)g->tiles, (long long)g->bytes, tc_format_bytes_per_weight(g),
               tcr.reorder_ms, 1e3 * g->build_s);
        tc_report_free(&tcr);
    }
    return CLI_EXIT_OK;
}
