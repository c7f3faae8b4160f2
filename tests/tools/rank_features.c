/* spf_rank_features: the rank model's features (src/plan/rank_features.h)
 * of configurations of one matrix, for tuning logs written before the
 * tuner logged them (scripts/train_rank_model.py runs it).
 *
 *   spf_rank_features --uniform M K SPARSITY SEED   (spforge-bench's sparsert20 / large
 *                                                    matrices: the uniform generator)
 *   spf_rank_features --matrix FILE                 (.mtx / .smtx / .npy)
 *
 * reads lines "n dtype m1 n1 v prefetch ksplit" (dtype f32, f16 or bf16) on
 * stdin and writes the names (rank_feature_names, comma-separated), then one
 * line of features per input line, each to 17 significant digits. Rows in
 * identity order (the logs so far come from tuning without reordering). */
#include "plan/rank_features.h"

#include "strategy/unrolled/schedule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void)
{
    fprintf(stderr, "usage: spf_rank_features (--uniform M K SPARSITY SEED | --matrix FILE) "
                    "< lines of \"n dtype m1 n1 v prefetch ksplit\"\n");
    return 2;
}

static int fail(const char *what, spf_status st)
{
    fprintf(stderr, "spf_rank_features: %s: %s (%s)\n", what, spf_status_string(st),
            spf_last_error());
    return 1;
}

static int parse_dtype(const char *name, spf_dtype *out)
{
    static const char *const names[] = {"f32", "f16", "bf16"};
    static const spf_dtype values[] = {SPF_DTYPE_F32, SPF_DTYPE_F16, SPF_DTYPE_BF16};
    for (int i = 0; i < 3; i++)
        if (strcmp(name, names[i]) == 0) {
            *out = values[i];
            return 1;
        }
    return 0;
}

static spf_status load(int argc, char **argv, spf_matrix **a)
{
    if (argc == 6 && strcmp(argv[1], "--uniform") == 0) {
        spf_gen_options o;
        spf_gen_options_init(&o);
        o.kind = SPF_GEN_UNIFORM;
        o.rows = strtoll(argv[2], NULL, 10);
        o.cols = strtoll(argv[3], NULL, 10);
        o.sparsity = strtod(argv[4], NULL);
        o.seed = strtoull(argv[5], NULL, 10);
        return spf_matrix_generate(&o, a);
    }
    return spf_matrix_read(argv[2], NULL, a);
}

int main(int argc, char **argv)
{
    if (!((argc == 6 && strcmp(argv[1], "--uniform") == 0) ||
          (argc == 3 && strcmp(argv[1], "--matrix") == 0)))
        return usage();
    spf_matrix *a = NULL;
    spf_status st = load(argc, argv, &a);
    if (st != SPF_OK)
        return fail("the matrix", st);
    for (int f = 0; f < RANK_FEATURE_COUNT; f++)
        printf("%s%c", rank_feature_names[f], f + 1 < RANK_FEATURE_COUNT ? ',' : '\n');
    tile_problem p = {.a = a, .row_order = NULL};
    rank_tiles tiles = {0};
    char line[256], dtype_name[16];
    long long n;
    int rc = 0;
    for (long line_no = 1; rc == 0 && fgets(line, sizeof line, stdin); line_no++) {
        spf_kernel_config cfg;
        spf_dtype dtype;
        if (sscanf(line, "%lld %15s %d %d %d %d %d", &n, dtype_name, &cfg.m1, &cfg.n1, &cfg.v,
                   &cfg.prefetch, &cfg.ksplit) != 7 || !parse_dtype(dtype_name, &dtype)) {
            fprintf(stderr, "spf_rank_features: stdin:%ld: expected \"n dtype m1 n1 v prefetch "
                            "ksplit\", got %s", line_no, line);
            rc = 1;
            break;
        }
        p.n = n;
        if ((st = schedule_config_check(&cfg, n)) != SPF_OK) {
            rc = fail("configuration", st);
            break;
        }
        /* Logs list a configuration's m1 in runs: one tile pass per run. */
        if (tiles.m1 != cfg.m1 && (st = rank_tiles_compute(&p, cfg.m1, &tiles)) != SPF_OK) {
            rc = fail("tiles", st);
            break;
        }
        double x[RANK_FEATURE_COUNT];
        rank_features(&tiles, &p, &cfg, dtype, x);
        for (int f = 0; f < RANK_FEATURE_COUNT; f++)
            printf("%.17g%c", x[f], f + 1 < RANK_FEATURE_COUNT ? ',' : '\n');
    }
    spf_matrix_free(a);
    return rc;
}
