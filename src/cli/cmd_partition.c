/* spforge partition: how a matrix splits over P ranks for distributed SpMM
 * (issue 15, dist/partition.h), for each P of --ranks: the balanced row
 * split against an even split by rows (the largest part's work over the
 * mean), and each rank's share: rows, nonzeros of A_own and A_remote, the
 * rows of B it receives (from other hosts too, at --gpus-per-host) and
 * sends (and their bytes at --n columns of --dtype) and the ranks it
 * receives from. With --replicas C the ranks form C layers (the 1.5-D
 * algorithm), each with a copy of B split over its P/C ranks.
 * scripts/dist_model.py turns these volumes into predicted times. */
#include "cli/cli.h"
#include "core/dtype.h"
#include "dist/partition.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_RANK_COUNTS = 32, TABLE_RANKS = 16 };

/* "2,4,8" into counts (each 1 .. DIST_MAX_RANKS); their number, 0 when
 * the text is not such a list. */
static int parse_ranks(const char *text, int *counts)
{
    int n = 0;
    const char *at = text;
    while (*at && n < MAX_RANK_COUNTS) {
        char *end;
        long v = strtol(at, &end, 10);
        if (end == at || v < 1 || v > DIST_MAX_RANKS || (*end && *end != ','))
            return 0;
        counts[n++] = (int)v;
        at = *end ? end + 1 : end;
    }
    return *at ? 0 : n;
}

/* One P: the split, the even split's cost, the volumes. */
typedef struct split_report {
    int ranks;
    int64_t *row_start, *b_start;
    int64_t largest, even_largest;
    double mean, split_ms;
    dist_volume v;
} split_report;

static void split_report_free(split_report *r)
{
    free(r->row_start);
    free(r->b_start);
    dist_volume_free(&r->v);
}

static spf_status split_report_make(const spf_matrix *a, int ranks, int replicas, int b_even,
                                    int per_host, split_report *r)
{
    memset(r, 0, sizeof *r);
    r->ranks = ranks;
    r->row_start = malloc((size_t)(ranks + 1) * sizeof *r->row_start);
    r->b_start = malloc((size_t)(ranks + 1) * sizeof *r->b_start);
    if (!r->row_start || !r->b_start)
        return SPF_ERR_OUT_OF_MEMORY;
    const double t0 = cli_now();
    spf_status st = dist_partition_rows(a, ranks, r->row_start);
    r->split_ms = 1e3 * (cli_now() - t0);
    if (st != SPF_OK)
        return st;
    dist_partition_cost(a, ranks, r->row_start, &r->largest, &r->mean);
    /* for comparison, an even split of A's rows (b_start as scratch) */
    const int64_t m = spf_matrix_rows(a), k = spf_matrix_cols(a);
    double mean;
    for (int p = 0; p <= ranks; p++)
        r->b_start[p] = m * p / ranks;
    dist_partition_cost(a, ranks, r->b_start, &r->even_largest, &mean);
    /* B's rows over a layer's q ranks: as A's (a graph's vertices: a
     * q-way split of A, as spforge.distributed makes it), or evenly */
    const int q = ranks / replicas;
    if (b_even || q != ranks) {
        for (int p = 0; p <= q; p++)
            r->b_start[p] = k * p / q;
        if (!b_even && (st = dist_partition_rows(a, q, r->b_start)) != SPF_OK)
            return st;
    } else {
        memcpy(r->b_start, r->row_start, (size_t)(ranks + 1) * sizeof *r->b_start);
    }
    return dist_volume_make(a, ranks, q, per_host, r->row_start, r->b_start, &r->v);
}

int cmd_partition(const cli_command *cmd, int argc, char **argv)
{
    cli_read_args ra;
    cli_read_args_init(&ra);
    const char *const *dtype_names = cli_dtype_names();
    uint64_t seed = 1;
    const char *ranks_text = NULL;
    int64_t n = 0, per_host = 8, replicas = 1;
    int dtype = SPF_DTYPE_F32, b_split = 0;
    static const char *const splits[] = {"rows", "even", NULL};
    const cli_option options[] = {
        {"ranks", CLI_STRING, &ranks_text, "P[,P...]",
         "rank counts, comma-separated, each 1 to 65536 (required)", NULL, 0, 0, 0},
        {"b-split", CLI_CHOICE, &b_split, "rows|even",
         "B's rows over the ranks: as A's rows (default; a square A, a graph: each rank holds "
         "its vertices' features) or evenly (any shape)", splits, 0, 0, 0},
        {"replicas", CLI_INT, &replicas, "C", "copies of B (default 1): the ranks form C layers, "
         "each with B split over its P/C ranks (the 1.5-D algorithm; C = P: B replicated); C "
         "divides every P", NULL, 1, DIST_MAX_RANKS, 0},
        {"n", CLI_INT, &n, "N", "B's columns: the exchange in bytes too", NULL, 1, 1 << 30, 0},
        {"dtype", CLI_CHOICE, &dtype, "f32|f16|bf16", "B's element type for the bytes (default "
         "f32)", dtype_names, 0, 0, 0},
        {"gpus-per-host", CLI_INT, &per_host, "G", "ranks of one host (default 8): the rows of B "
         "received from other hosts are counted apart", NULL, 1, DIST_MAX_RANKS, 0},
        {"seed", CLI_U64, &seed, "S", "seed of the values of pattern-only files (default 1)",
         NULL, 0, 0, 0},
        CLI_READ_OPTIONS(ra),
    };
    cli_context ctx;
    int rc = cli_parse(&ctx, cmd, options, sizeof options / sizeof options[0], argc, argv);
    if (rc != CLI_CONTINUE)
        return rc;
    int counts[MAX_RANK_COUNTS];
    if (!ranks_text)
        return cli_usage_error(&ctx, "--ranks P[,P...] is required");
    const int ncounts = parse_ranks(ranks_text, counts);
    if (ncounts == 0)
        return cli_usage_error(&ctx, "--ranks \"%s\": expected rank counts from 1 to %d, "
                               "comma-separated (at most %d)", ranks_text, DIST_MAX_RANKS,
                               MAX_RANK_COUNTS);
    for (int i = 0; i < ncounts; i++)
        if (counts[i] % replicas != 0)
            return cli_usage_error(&ctx, "--replicas %lld: expected a divisor of every P of "
                                   "--ranks (%d is not a multiple)", (long long)replicas,
                                   counts[i]);
    spf_matrix *a = NULL;
    spf_status st = cli_read_matrix(&ra, seed, ctx.args[0], &a);
    if (st != SPF_OK)
        return cli_fail_status(&ctx, st);
    const int64_t m = spf_matrix_rows(a), k = spf_matrix_cols(a), nnz = spf_matrix_nnz(a);
    const int b_even = b_split == 1 || m != k;
    const double row_bytes = (double)n * (double)dtype_size((spf_dtype)dtype);
    json_writer w;
    if (ctx.json) {
        cli_json_begin(&w, &ctx);
        json_string(&w, "path", ctx.args[0]);
        json_int(&w, "rows", m);
        json_int(&w, "cols", k);
        json_int(&w, "nnz", nnz);
        json_string(&w, "b_split", b_even ? "even" : "rows");
        json_int(&w, "replicas", replicas);
        json_int(&w, "n", n);
        json_string(&w, "dtype", dtype_name((spf_dtype)dtype));
        json_int(&w, "gpus_per_host", per_host);
        json_array_begin(&w, "splits");
    } else {
        printf("%s: %lld x %lld, %lld nonzeros; B split %s%s", ctx.args[0], (long long)m,
               (long long)k, (long long)nnz, b_even ? "evenly" : "as A's rows",
               m != k && b_split == 0 ? " (A is not square)" : "");
        if (replicas > 1)
            printf(", %lld copies of it (a layer of P/%lld ranks each)", (long long)replicas,
                   (long long)replicas);
        printf("\n");
    }
    for (int i = 0; i < ncounts && st == SPF_OK; i++) {
        split_report r;
        st = split_report_make(a, counts[i], (int)replicas, b_even, (int)per_host, &r);
        if (st != SPF_OK) {
            split_report_free(&r);
            break;
        }
        int64_t recv_total = 0, recv_max = 0;
        for (int p = 0; p < r.ranks; p++) {
            recv_total += r.v.recv_rows[p];
            recv_max = r.v.recv_rows[p] > recv_max ? r.v.recv_rows[p] : recv_max;
        }
        if (ctx.json) {
            json_object_begin(&w, NULL);
            json_int(&w, "ranks", r.ranks);
            json_double(&w, "split_ms", r.split_ms);
            json_int(&w, "largest_work", r.largest);
            json_int(&w, "even_rows_largest_work", r.even_largest);
            json_double(&w, "mean_work", r.mean);
            json_int(&w, "recv_rows_total", recv_total);
            json_int(&w, "recv_rows_max", recv_max);
            json_array_begin(&w, "parts");
            for (int p = 0; p < r.ranks; p++) {
                json_object_begin(&w, NULL);
                json_int(&w, "row0", r.row_start[p]);
                json_int(&w, "rows", r.row_start[p + 1] - r.row_start[p]);
                const int me = p % (r.ranks / (int)replicas); /* p within its layer */
                json_int(&w, "b_row0", r.b_start[me]);
                json_int(&w, "b_rows", r.b_start[me + 1] - r.b_start[me]);
                json_int(&w, "own_nnz", r.v.own_nnz[p]);
                json_int(&w, "remote_nnz", r.v.remote_nnz[p]);
                json_int(&w, "recv_rows", r.v.recv_rows[p]);
                json_int(&w, "recv_rows_other_hosts", r.v.recv_rows_far[p]);
                json_int(&w, "send_rows", r.v.send_rows[p]);
                json_int(&w, "recv_peers", r.v.recv_peers[p]);
                json_object_end(&w);
            }
            json_array_end(&w);
            json_object_end(&w);
        } else {
            printf("\nP = %d: split in %.1f ms; largest part's work (nonzeros + 4 per row) %lld, "
                   "%.3f x the mean (an even split by rows: %.3f x)\n", r.ranks, r.split_ms,
                   (long long)r.largest, r.largest / r.mean, r.even_largest / r.mean);
            printf("  rows of B received: %lld in all, %lld at most by one rank",
                   (long long)recv_total, (long long)recv_max);
            if (n > 0)
                printf(" (%.3g MB at N = %lld %s)", recv_max * row_bytes / 1e6, (long long)n,
                       dtype_name((spf_dtype)dtype));
            printf("\n");
            if (r.ranks <= TABLE_RANKS) {
                printf("  %5s %12s %10s %12s %12s %11s %11s %5s\n", "rank", "row0", "rows",
                       "own nnz", "remote nnz", "recv rows", "send rows", "from");
                for (int p = 0; p < r.ranks; p++)
                    printf("  %5d %12lld %10lld %12lld %12lld %11lld %11lld %5d\n", p,
                           (long long)r.row_start[p],
                           (long long)(r.row_start[p + 1] - r.row_start[p]),
                           (long long)r.v.own_nnz[p], (long long)r.v.remote_nnz[p],
                           (long long)r.v.recv_rows[p], (long long)r.v.send_rows[p],
                           (int)r.v.recv_peers[p]);
            }
        }
        split_report_free(&r);
    }
    spf_matrix_free(a);
    if (st != SPF_OK)
        return cli_fail_status(&ctx, st);
    if (ctx.json) {
        json_array_end(&w);
        return cli_json_end(&ctx, &w);
    }
    return CLI_EXIT_OK;
}
