/* The exhaustive tuner's host-side parts: the configuration space for a
 * given N, the rank features of a list, and the tuning-log CSV the rank
 * model is trained on. (The tuner's runs need a GPU: tests/gpu/test_plan.c
 * and tests/gpu/test_search.c.) */
#define _POSIX_C_SOURCE 200809L

#include "test_util.h"

#include "strategy/unrolled/schedule.h"
#include "core/alloc.h"
#include "strategy/unrolled/tuner.h"

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

static int has(const spf_kernel_config *list, int count, spf_kernel_config want)
{
    for (int i = 0; i < count; i++)
        if (memcmp(&list[i], &want, sizeof want) == 0)
            return 1;
    return 0;
}

/* The compact space: a subset of the full one, with its documented size. */
static void test_compact_space(void)
{
    const int64_t ns[] = {64, 49, 3136};
    for (int t = 0; t < 3; t++) {
        tile_space compact, full;
        CHECK_OK(tile_space_create(ns[t], SPF_TUNE_SPACE_COMPACT, &compact));
        CHECK_OK(tile_space_create(ns[t], SPF_TUNE_SPACE_FULL, &full));
        CHECK(compact.count > 0 && compact.count <= 75 && compact.count < full.count);
        int outside = 0;
        for (int i = 0; i < compact.count; i++)
            outside += !has(full.configs, full.count, compact.configs[i]) ||
                       compact.configs[i].prefetch != 2 || compact.configs[i].m1 < 2;
        CHECK_MSG(outside == 0, "n = %lld: %d compact configurations outside the rules",
                  (long long)ns[t], outside);
        printf("n = %lld: %d compact configurations\n", (long long)ns[t], compact.count);
        tile_space_free(&compact);
        tile_space_free(&full);
    }
    tile_space s;
    CHECK_STATUS(tile_space_create(64, (spf_tune_space)7, &s), SPF_ERR_INVALID_ARGUMENT);
}

static void test_space(void)
{
    const int64_t ns[] = {64, 49, 2, 3136};
    for (int t = 0; t < 4; t++) {
        tile_space s;
        CHECK_OK(tile_space_create(ns[t], SPF_TUNE_SPACE_FULL, &s));
        const spf_kernel_config *list = s.configs;
        int count = s.count;
        CHECK(count > 0 && count <= 6 * 4 * 3 * 4 * 3);
        CHECK_MSG(strcmp(spf_last_error(), "") == 0, "filter left a detail: %s", spf_last_error());
        int bad = 0, dupes = 0, unsorted = 0;
        for (int i = 0; i < count; i++) {
            const spf_kernel_config *c = &list[i];
            int threads = c->n1 / c->v * c->ksplit;
            bad += schedule_config_check(c, ns[t]) != SPF_OK || threads % 32 != 0 ||
                   threads > 1024 || ns[t] % c->v != 0;
            unsorted += i > 0 && list[i - 1].m1 > c->m1; /* grouped by m1 (tiling.h) */
            for (int j = 0; j < i; j++)
                dupes += memcmp(&list[i], &list[j], sizeof *c) == 0;
        }
        CHECK_MSG(bad == 0 && dupes == 0 && unsorted == 0, "n = %lld: %d invalid, %d repeated, "
                  "%d out of m1 order", (long long)ns[t], bad, dupes, unsorted);
        /* Corners of the space survive when valid for this N. */
        CHECK(has(list, count, (spf_kernel_config){1, 32, 1, 0, 1}));
        CHECK(has(list, count, (spf_kernel_config){32, 256, 1, 4, 4}) ==
              (schedule_config_check(&(spf_kernel_config){32, 256, 1, 4, 4}, ns[t]) == SPF_OK));
        if (ns[t] % 4 == 0)
            CHECK(has(list, count, (spf_kernel_config){32, 256, 4, 4, 1}));
        printf("n = %lld: %d configurations\n", (long long)ns[t], count);
        tile_space_free(&s);
    }
}

/* tune_features: rank_features of each configuration on its m1's row
 * order, NaN where the m1 has more tiles than a schedule takes. */
static void test_features(void)
{
    double density[400];
    for (int i = 0; i < 400; i++)
        density[i] = i % 5 == 2 ? 0.0 : 0.03 + 0.02 * (i % 9);
    spf_matrix *a = random_csr(400, 150, density, 9);
    tile_space s;
    CHECK_OK(tile_space_create(96, SPF_TUNE_SPACE_FULL, &s));
    row_orders o;
    CHECK_OK(row_orders_create(a, s.configs, s.count, 0, &o));
    tile_problem p = {a, 96, NULL, &o};
    double *f = malloc((size_t)s.count * RANK_FEATURE_COUNT * sizeof *f);
    CHECK_OK(tune_features(&p, SPF_DTYPE_BF16, s.configs, s.count, f));
    int wrong = 0;
    for (int i = 0; i < s.count; i++) {
        tile_problem one = {a, 96, row_orders_find(&o, s.configs[i].m1), NULL};
        rank_tiles t;
        double want[RANK_FEATURE_COUNT];
        CHECK_OK(rank_tiles_compute(&one, s.configs[i].m1, &t));
        rank_features(&t, &one, &s.configs[i], SPF_DTYPE_BF16, want);
        wrong += memcmp(want, f + (size_t)i * RANK_FEATURE_COUNT, sizeof want) != 0;
    }
    CHECK_MSG(wrong == 0, "%d of %d configurations' features differ", wrong, s.count);
    free(f);
    row_orders_free(&o);
    tile_space_free(&s);
    spf_matrix_free(a);

    /* 70000 tiles of 2 rows: over the limit, NaN; 35 tiles of 4096 rows: fine */
    double *dense = malloc(140000 * sizeof *dense);
    for (int i = 0; i < 140000; i++)
        dense[i] = 0.5;
    a = random_csr(140000, 4, dense, 2);
    free(dense);
    spf_kernel_config list[2] = {{2, 32, 1, 0, 1}, {4096, 32, 1, 0, 1}};
    double g[2 * RANK_FEATURE_COUNT];
    tile_problem big = {a, 32, NULL, NULL};
    CHECK_OK(tune_features(&big, SPF_DTYPE_F32, list, 2, g));
    int nan_first = 1, finite_second = 1;
    for (int j = 0; j < RANK_FEATURE_COUNT; j++) {
        nan_first &= isnan(g[j]);
        finite_second &= isfinite(g[RANK_FEATURE_COUNT + j]);
    }
    CHECK(nan_first && finite_second);
    CHECK_MSG(strcmp(spf_last_error(), "") == 0, "left a detail: %s", spf_last_error());
    spf_matrix_free(a);
}

static void test_csv(void)
{
    tune_row rows[3];
    memset(rows, 0, sizeof rows);
    const char *names[] = {"spf_unrolled_f32_m8_n128_v4_p2_k1", "spf_unrolled_f32_m16_n64_v2_p0_k2",
                           "spf_unrolled_f32_m32_n256_v4_p4_k1"};
    for (int i = 0; i < 3; i++) {
        snprintf(rows[i].kernel_name, sizeof rows[i].kernel_name, "%s", names[i]);
        rows[i].verify_error = -1.0;
    }
    rows[0].cfg = (spf_kernel_config){8, 128, 4, 2, 1};
    rows[0].kernel_us = 12.5;
    rows[0].verify_error = 3.2e-8;
    rows[1].cfg = (spf_kernel_config){16, 64, 2, 0, 2};
    rows[1].kernel_us = 9.75;
    rows[1].verify_error = 2.9e-8;
    rows[0].proxy_us = 3.25;
    rows[0].features[0] = 1;
    rows[0].features[1] = 2.5;
    rows[2].features[RANK_FEATURE_COUNT - 1] = NAN;
    rows[2].cfg = (spf_kernel_config){32, 256, 4, 4, 1};
    rows[2].outcome = TUNE_COMPILE_FAILED;
    snprintf(rows[2].reason, sizeof rows[2].reason, "unit 3: \"bad\" token,\nline 7");
    tune_log log = {.m = 512, .k = 256, .n = 128, .nnz = 13107, .dtype = SPF_DTYPE_BF16,
                    .reorder = 1, .sm = 90, .rows = rows, .count = 3, .best = 1};

    char dir[] = "/tmp/spf-test-tuner-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/log.csv", dir);
    CHECK_OK(tune_log_write_csv(&log, path));
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    char line[1024];
    int n = 0, fields_header = 0;
    while (f && fgets(line, sizeof line, f)) {
        int commas = 0;
        int quoted = 0;
        for (char *c = line; *c; c++) {
            quoted ^= *c == '"';
            commas += *c == ',' && !quoted;
        }
        if (n == 0) {
            fields_header = commas;
            CHECK(strncmp(line, "m,k,n,nnz,dtype,", 16) == 0);
            /* scripts/train_rank_model.py reads these by name */
            CHECK(strstr(line, ",kernel_us,") && strstr(line, ",status,chosen,proxy_us,"));
            for (int j = 0; j < RANK_FEATURE_COUNT; j++) {
                char col[96];
                snprintf(col, sizeof col, ",%s,", rank_feature_names[j]);
                CHECK_MSG(strstr(line, col) != NULL, "header lacks %s", col);
            }
            CHECK(strstr(line, ",reason\n") != NULL);
        } else {
            CHECK_MSG(commas == fields_header, "row %d has %d separators, header %d", n, commas,
                      fields_header);
            CHECK(strncmp(line, "512,256,128,13107,bf16,0,0,0,1,90,", 34) == 0);
            CHECK(strstr(line, names[n - 1]) != NULL);
        }
        if (n == 2)
            CHECK(strstr(line, ",ok,1,0.0000,") != NULL && strstr(line, "9.7500") != NULL);
        if (n == 1)
            CHECK(strstr(line, ",ok,0,3.2500,1,2.5,") != NULL);
        if (n == 3)
            CHECK(strstr(line, ",compile_failed,0,") != NULL &&
                  strstr(line, ",nan,\"unit 3: 'bad' token, line 7\"\n") != NULL);
        n++;
    }
    if (f)
        fclose(f);
    CHECK_EQ_I64(n, 4);
    CHECK(unlink(path) == 0);
    CHECK(rmdir(dir) == 0); /* nothing else (no temporary file) was left */

    snprintf(path, sizeof path, "%s/missing/log.csv", dir);
    CHECK_STATUS(tune_log_write_csv(&log, path), SPF_ERR_IO);
    CHECK_DETAIL("cannot create");
}

static void test_outcome_names(void)
{
    const char *expect[] = {"ok",    "not_generated", "compile_failed", "spills",
                            "load_failed", "wrong", "launch_failed", "proxy_only"};
    for (int o = TUNE_OK; o <= TUNE_PROXY_ONLY; o++)
        CHECK(strcmp(tune_outcome_name((tune_outcome)o), expect[o]) == 0);
}

int main(int argc, char **argv)
{
    test_space();
    test_compact_space();
    test_features();
    test_csv();
    test_outcome_names();
    return check_report();
}
