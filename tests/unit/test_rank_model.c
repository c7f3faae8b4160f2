/* The rank model: scores of a hand-written model, the parser's errors on
 * malformed models, top-k order, allocation failures, the C scores of the
 * fixture against LightGBM's (tests/fixtures/rank, written by
 * scripts/train_rank_model.py --write-fixture), the embedded default model
 * and its SPFORGE_RANK_MODEL override, models of another schema. */
#define _POSIX_C_SOURCE 200809L /* setenv, fork, clock_gettime */
#include "check.h"
#include "plan/rank_features.h"
#include "plan/rank_model.h"
#include "strategy/unrolled/tiling.h"
#include "test_util.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* "features 25 f_a_tiles ...": the header line every test model needs. */
static void features_line(char *buf, size_t cap)
{
    int len = snprintf(buf, cap, "features %d", RANK_FEATURE_COUNT);
    for (int f = 0; f < RANK_FEATURE_COUNT; f++)
        len += snprintf(buf + len, cap - (size_t)len, " %s", rank_feature_names[f]);
}

/* The text "spforge-rank-model 1\n<features>\n" + body into buf. */
static size_t model_text(char *buf, size_t cap, const char *body)
{
    char features[1024];
    features_line(features, sizeof features);
    return (size_t)snprintf(buf, cap, "spforge-rank-model 1\n%s\n%s", features, body);
}

/* Two trees: on m1 (feature 6) and, under it, on ksplit (14); a stump on v (12). */
static const char two_trees[] = "# a comment\n"
                                "trees 2\n"
                                "tree 5\n"
                                "0 split 6 8 1 2\n"
                                "1 leaf 1.5\n"
                                "2 split 14 1.5 3 4\n"
                                "   \n"
                                "3 leaf -0.25\n"
                                "4\tleaf 2e-1\n"
                                "tree 3\n"
                                "0 split 12 2 1 2\n"
                                "1 leaf 0.125\n"
                                "2 leaf -1\n"
                                "end\n";

static rank_model *parse_body(const char *body, const char *origin)
{
    char text[8192];
    size_t len = model_text(text, sizeof text, body);
    rank_model *m = NULL;
    CHECK_OK(rank_model_parse(text, len, origin, &m));
    return m;
}

static void test_scores(void)
{
    rank_model *m = parse_body(two_trees, "two");
    if (!m)
        return;
    double x[RANK_FEATURE_COUNT] = {0};
    x[6] = 8, x[14] = 4, x[12] = 4; /* m1 at the threshold goes left */
    CHECK(rank_model_score(m, x) == 1.5 - 1);
    x[6] = 16, x[14] = 1, x[12] = 1;
    CHECK(rank_model_score(m, x) == -0.25 + 0.125);
    x[14] = 2;
    CHECK(rank_model_score(m, x) == 0.2 + 0.125);
    x[6] = NAN; /* a NaN goes right */
    CHECK(rank_model_score(m, x) == 0.2 + 0.125);
    rank_model_free(m);
    rank_model_free(NULL);
}

typedef struct bad_model {
    const char *text;  /* whole text; "@" is replaced by the header's two lines */
    spf_status status;
    const char *detail;
} bad_model;

static void test_malformed(void)
{
    static const bad_model cases[] = {
        {"", SPF_ERR_PARSE, "bad:1: expected 'spforge-rank-model', got end of file"},
        {"# only a comment\n\n", SPF_ERR_PARSE, "expected 'spforge-rank-model', got end of file"},
        {"spforge-rank-mode 1\n", SPF_ERR_PARSE, "bad:1: expected 'spforge-rank-model', got 'spforge-rank-mode'"},
        {"spforge-rank-model 2\n", SPF_ERR_UNSUPPORTED, "bad:1: format version 2; this library reads 1"},
        {"spforge-rank-model one\n", SPF_ERR_PARSE, "expected a format version, got 'one'"},
        {"spforge-rank-model 1 extra\n", SPF_ERR_PARSE, "bad:1: expected end of line, got 'extra'"},
        {"spforge-rank-model 1\nfeatures 24 f_a_tiles\n", SPF_ERR_PARSE, "bad:2: expected the feature count 25, got '24'"},
        {"spforge-rank-model 1\nfeatures 25 f_a_tiles f_b_tiles f_blocks f_nnc_sum\n", SPF_ERR_PARSE,
         "bad:2: expected feature 3 'f_sparsity', got 'f_nnc_sum'"},
        {"spforge-rank-model 1\nfeatures 25 f_a_tiles f_b_tiles\n", SPF_ERR_PARSE, "expected feature 2 'f_blocks', got end of line"},
        {"@", SPF_ERR_PARSE, "bad:3: expected 'trees', got end of file"},
        {"@trees 0\n", SPF_ERR_PARSE, "bad:3: expected a tree count from 1 to 10000, got '0'"},
        {"@trees 10001\n", SPF_ERR_PARSE, "tree count from 1 to 10000, got '10001'"},
        {"@trees 99999999999999999999999\n", SPF_ERR_PARSE, "got '99999999999999999999999'"},
        {"@trees 1\ntree 0\n", SPF_ERR_PARSE, "bad:4: expected a node count from 1 to 127, got '0'"},
        {"@trees 1\ntree 128\n", SPF_ERR_PARSE, "expected a node count from 1 to 127, got '128'"},
        {"@trees 1\ntree 1\n0 leaf 1\n", SPF_ERR_PARSE, "bad:6: expected 'end', got end of file"},
        {"@trees 1\ntree 1\n0 leaf 1\nend\ntree 1\n", SPF_ERR_PARSE, "bad:7: expected end of file after 'end'"},
        {"@trees 2\ntree 1\n0 leaf 1\nend\n", SPF_ERR_PARSE, "bad:6: expected 'tree', got 'end'"},
        {"@trees 1\ntree 3\n0 split 6 8 1 2\n1 leaf 1\n", SPF_ERR_PARSE, "bad:7: expected node 2, got end of file"},
        {"@trees 1\ntree 2\n1 leaf 1\n", SPF_ERR_PARSE, "bad:5: expected node 0, got '1'"},
        {"@trees 1\ntree 1\n0 leaves 1\n", SPF_ERR_PARSE, "expected 'split' or 'leaf', got 'leaves'"},
        {"@trees 1\ntree 1\n0 leaf nan\n", SPF_ERR_PARSE, "expected a finite leaf value, got 'nan'"},
        {"@trees 1\ntree 1\n0 leaf 1e999\n", SPF_ERR_PARSE, "expected a finite leaf value, got '1e999'"},
        {"@trees 1\ntree 1\n0 leaf 1.5x\n", SPF_ERR_PARSE, "expected a finite leaf value, got '1.5x'"},
        {"@trees 1\ntree 1\n0 leaf\n", SPF_ERR_PARSE, "expected a finite leaf value, got end of line"},
        {"@trees 1\ntree 1\n0 leaf 1 2\n", SPF_ERR_PARSE, "bad:5: expected end of line, got '2'"},
        {"@trees 1\ntree 3\n0 split 25 8 1 2\n", SPF_ERR_PARSE, "expected a feature index, got '25'"},
        {"@trees 1\ntree 3\n0 split -1 8 1 2\n", SPF_ERR_PARSE, "expected a feature index, got '-1'"},
        {"@trees 1\ntree 3\n0 split 6 inf 1 2\n", SPF_ERR_PARSE, "expected a finite threshold, got 'inf'"},
        {"@trees 1\ntree 3\n0 split 6 8 0 2\n", SPF_ERR_PARSE, "expected a child index from 1 to 2, got '0'"},
        {"@trees 1\ntree 3\n0 split 6 8 1 3\n", SPF_ERR_PARSE, "expected a child index from 1 to 2, got '3'"},
        {"@trees 1\ntree 3\n0 split 6 8 2 2\n", SPF_ERR_PARSE, "node 0: both children are node 2"},
        {"@trees 1\ntree 5\n0 split 6 8 1 2\n1 split 6 4 3 4\n2 split 6 9 3 4\n", SPF_ERR_PARSE,
         "bad:7: node 2: node 3 already has a parent"},
        {"@trees 1\ntree 3\n0 leaf 1\n1 leaf 2\n2 leaf 3\n", SPF_ERR_PARSE,
         "tree ends with node 1 not a child of any split"},
        {"@trees 1\ntree 2\n0 split 6 8 1\n", SPF_ERR_PARSE, "expected a child index from 1 to 1, got end of line"},
    };
    char text[8192], header[2048];
    features_line(header, sizeof header);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *t = cases[i].text;
        int len = t[0] == '@' ? snprintf(text, sizeof text, "spforge-rank-model 1\n%s\n%s", header, t + 1)
                              : snprintf(text, sizeof text, "%s", t);
        rank_model *m = (rank_model *)&text; /* must come back NULL */
        spf_status st = rank_model_parse(text, (size_t)len, "bad", &m);
        CHECK_MSG(st == cases[i].status && m == NULL, "case %zu: status %d", i, (int)st);
        CHECK_MSG(strstr(spf_last_error(), cases[i].detail) != NULL,
                  "case %zu: detail \"%s\" lacks \"%s\"", i, spf_last_error(), cases[i].detail);
    }
    /* A NUL inside a token, and text that ends without a newline. */
    size_t len = model_text(text, sizeof text, "trees 1\ntree 1\n0 leaf 1\nend");
    rank_model *m = NULL;
    CHECK_OK(rank_model_parse(text, len, "bad", &m));
    rank_model_free(m);
    len = model_text(text, sizeof text, "trees 1\ntree 1\n0 leaf 1X5\nend\n");
    *strchr(text, 'X') = '\0';
    CHECK_STATUS(rank_model_parse(text, len, "bad", &m), SPF_ERR_PARSE);
    CHECK_DETAIL("bad:5: expected a finite leaf value, got '1...'");
    CHECK_STATUS(rank_model_parse(NULL, 3, "bad", &m), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(rank_model_parse(text, len, "bad", NULL), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(rank_model_read("/nonexistent/rank_model.txt", &m), SPF_ERR_IO);
    CHECK_DETAIL("/nonexistent/rank_model.txt");
    /* $SPFORGE_RANK_MODEL naming a FIFO or a folder: refused at once, no
     * hang (the alarm fails the test if the open blocks) */
    char dir[] = "/tmp/spf-test-rank-XXXXXX", fifo[64];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(fifo, sizeof fifo, "%s/model.fifo", dir);
    CHECK(mkfifo(fifo, 0600) == 0);
    alarm(30);
    CHECK_STATUS(rank_model_read(fifo, &m), SPF_ERR_IO);
    CHECK_DETAIL("is a FIFO, expected a regular file");
    CHECK_STATUS(rank_model_read(dir, &m), SPF_ERR_IO);
    CHECK_DETAIL("is a folder, expected a regular file");
    alarm(0);
    unlink(fifo);
    rmdir(dir);
}

static void test_allocation_failure(void)
{
    char text[8192];
    size_t len = model_text(text, sizeof text, two_trees);
    int failed = 0, succeeded = 0;
    for (int left = 0; left < 16 && !succeeded; left++) {
        budget b = {left, 0};
        spf_allocator failing = budget_allocator(&b);
        spf_set_allocator(&failing);
        rank_model *m = NULL;
        spf_status st = rank_model_parse(text, len, "alloc", &m);
        rank_model_free(m);
        spf_set_allocator(NULL);
        CHECK_MSG(st == SPF_OK || st == SPF_ERR_OUT_OF_MEMORY, "budget %d: status %d", left, (int)st);
        CHECK_MSG(b.live == 0, "budget %d: %d blocks leaked", left, b.live);
        failed += st == SPF_ERR_OUT_OF_MEMORY;
        succeeded += st == SPF_OK;
    }
    CHECK(failed >= 3 && succeeded == 1);
}

static void test_top_k(void)
{
    /* Score = −m1 (feature 6) in steps, so smaller m1 ranks first; equal
     * m1 ties by index. */
    rank_model *m = parse_body("trees 2\n"
                               "tree 3\n0 split 6 3 1 2\n1 leaf 0\n2 leaf -1\n"
                               "tree 3\n0 split 6 6 1 2\n1 leaf 0\n2 leaf -1\n"
                               "end\n",
                               "topk");
    if (!m)
        return;
    static const double m1s[] = {8, 2, 4, 2, 16, 4};
    double x[6][RANK_FEATURE_COUNT] = {{0}};
    for (int i = 0; i < 6; i++)
        x[i][6] = m1s[i];
    int best[6] = {-1, -1, -1, -1, -1, -1};
    CHECK_OK(rank_model_top_k(m, &x[0][0], 6, 6, best));
    /* scores: 8 → −2, 2 → 0, 4 → −1, 2 → 0, 16 → −2, 4 → −1 */
    static const int want[6] = {1, 3, 2, 5, 0, 4};
    CHECK(memcmp(best, want, sizeof want) == 0);
    int three[4] = {-1, -1, -1, -1};
    CHECK_OK(rank_model_top_k(m, &x[0][0], 6, 3, three));
    CHECK(three[0] == 1 && three[1] == 3 && three[2] == 2 && three[3] == -1);
    int more[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
    CHECK_OK(rank_model_top_k(m, &x[0][0], 2, 8, more)); /* k beyond count: count written */
    CHECK(more[0] == 1 && more[1] == 0 && more[2] == -1);
    CHECK_OK(rank_model_top_k(m, NULL, 0, 1, more));
    CHECK_STATUS(rank_model_top_k(m, &x[0][0], 6, 0, best), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(rank_model_top_k(m, &x[0][0], -1, 1, best), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(rank_model_top_k(m, NULL, 6, 1, best), SPF_ERR_INVALID_ARGUMENT);
    rank_model_free(m);
}

/* C scores of the fixture's rows against LightGBM's (the last column). */
static void test_fixture(void)
{
    const char *src = getenv("SPF_SOURCE_DIR");
    if (!src) {
        printf("NOTE: SPF_SOURCE_DIR unset; fixture checks skipped\n");
        return;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/fixtures/rank/model.txt", src);
    rank_model *m = NULL;
    CHECK_OK(rank_model_read(path, &m));
    snprintf(path, sizeof path, "%s/tests/fixtures/rank/features.csv", src);
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "cannot open %s", path);
    if (!m || !f) {
        if (f)
            fclose(f);
        rank_model_free(m);
        return;
    }
    char line[8192];
    int header_ok = fgets(line, sizeof line, f) != NULL;
    for (int i = 0; header_ok && i < RANK_FEATURE_COUNT; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s%s,", i ? "," : "", rank_feature_names[i]);
        header_ok = strstr(line, name) != NULL;
    }
    CHECK(header_ok);
    int rows = 0;
    double worst = 0;
    while (fgets(line, sizeof line, f)) {
        double x[RANK_FEATURE_COUNT + 1];
        char *p = line;
        for (int i = 0; i <= RANK_FEATURE_COUNT; i++) {
            x[i] = strtod(p, &p);
            p += *p == ',';
        }
        double diff = fabs(rank_model_score(m, x) - x[RANK_FEATURE_COUNT]);
        worst = diff > worst ? diff : worst;
        rows++;
    }
    fclose(f);
    printf("fixture: %d rows, max |C score - LightGBM| %.3g\n", rows, worst);
    CHECK(rows >= 20);
    CHECK(worst <= 1e-12);
    rank_model_free(m);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The embedded model is models/rank_model.txt byte for byte (same scores)
 * and ranks a FULL space of a real problem; the time is printed, never
 * checked. */
static void test_default(void)
{
    const rank_model *d = NULL;
    CHECK_OK(rank_model_default(&d));
    const rank_model *again = NULL;
    CHECK_OK(rank_model_default(&again));
    CHECK(d != NULL && again == d);
    spf_matrix *a = gen_matrix(SPF_GEN_MAGNITUDE, 512, 512, 0.9, 5);
    tile_space s = {0};
    CHECK_OK(tile_space_create(256, SPF_TUNE_SPACE_FULL, &s));
    double *x = calloc((size_t)s.count * RANK_FEATURE_COUNT, sizeof *x);
    int *best = calloc((size_t)s.count, sizeof *best);
    if (!d || !a || !x || !best || s.count == 0)
        goto done;
    tile_problem p = {.a = a, .n = 256};
    rank_tiles t = {0};
    for (int i = 0; i < s.count; i++) {
        if (t.m1 != s.configs[i].m1)
            CHECK_OK(rank_tiles_compute(&p, s.configs[i].m1, &t));
        rank_features(&t, &p, &s.configs[i], SPF_DTYPE_F32, x + (size_t)i * RANK_FEATURE_COUNT);
    }
    /* The least of 50 runs: the build host is shared. */
    double least = INFINITY;
    for (int r = 0; r < 50; r++) {
        double t0 = now_s();
        CHECK_OK(rank_model_top_k(d, x, s.count, s.count, best));
        least = fmin(least, now_s() - t0);
    }
    printf("rank_model_top_k of %d configurations: %.0f us (least of 50)\n", s.count,
           least * 1e6);
    /* best is a permutation, scores non-increasing along it. */
    int ordered = 1, distinct = 1;
    unsigned char *seen = calloc((size_t)s.count, 1);
    for (int i = 0; seen && i < s.count; i++) {
        distinct &= best[i] >= 0 && best[i] < s.count && !seen[best[i]]++;
        if (i > 0)
            ordered &= rank_model_score(d, x + (size_t)best[i - 1] * RANK_FEATURE_COUNT) >=
                       rank_model_score(d, x + (size_t)best[i] * RANK_FEATURE_COUNT);
    }
    free(seen);
    CHECK(distinct && ordered);
    const char *src = getenv("SPF_SOURCE_DIR");
    if (src) {
        char path[4096];
        snprintf(path, sizeof path, "%s/models/rank_model.txt", src);
        rank_model *file = NULL;
        CHECK_OK(rank_model_read(path, &file));
        int same = file != NULL;
        for (int i = 0; same && i < s.count; i++)
            same = rank_model_score(file, x + (size_t)i * RANK_FEATURE_COUNT) ==
                   rank_model_score(d, x + (size_t)i * RANK_FEATURE_COUNT);
        CHECK_MSG(same, "the embedded model scores differently from %s", path);
        rank_model_free(file);
    }
done:
    free(x);
    free(best);
    tile_space_free(&s);
    spf_matrix_free(a);
}

/* SPFORGE_RANK_MODEL, in a child process: the parent's default model is
 * loaded once and final. A bad path is an error, retried on the next call;
 * a good one is used. Exit status: the child's failed checks. */
static void test_override(void)
{
    const char *src = getenv("SPF_SOURCE_DIR");
    if (!src) {
        printf("NOTE: SPF_SOURCE_DIR unset; override checks skipped\n");
        return;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        check_passed = check_failed = 0;
        const rank_model *d = (const rank_model *)&pid;
        setenv("SPFORGE_RANK_MODEL", "/nonexistent/model.txt", 1);
        CHECK_STATUS(rank_model_default(&d), SPF_ERR_IO);
        CHECK(d == NULL);
        CHECK_DETAIL("/nonexistent/model.txt");
        char path[4096];
        snprintf(path, sizeof path, "%s/tests/fixtures/rank/model.txt", src);
        setenv("SPFORGE_RANK_MODEL", path, 1);
        CHECK_OK(rank_model_default(&d));
        rank_model *fixture = NULL;
        CHECK_OK(rank_model_read(path, &fixture));
        double x[RANK_FEATURE_COUNT] = {0};
        x[RANK_F_M1] = 4, x[RANK_F_NNZ_MAX] = 300, x[RANK_F_BLOCKS] = 2000;
        CHECK(d && fixture && rank_model_score(d, x) == rank_model_score(fixture, x));
        rank_model_free(fixture);
        fflush(stdout);
        fflush(stderr);
        _exit(check_failed > 255 ? 255 : check_failed);
    }
    int wstatus = 0;
    CHECK(pid > 0 && waitpid(pid, &wstatus, 0) == pid);
    CHECK_MSG(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0, "override child: %d failed checks",
              WEXITSTATUS(wstatus));
}

/* A model of another schema: its own feature names, its own count and
 * index range; a model of one schema does not parse as another's. */
static void test_schema(void)
{
    static const char *const names[] = {"x", "y"};
    const rank_schema two = {names, 2};
    const char *text = "spforge-rank-model 1\nfeatures 2 x y\ntrees 1\ntree 3\n"
                       "0 split 1 0.5 1 2\n1 leaf -1\n2 leaf 2\nend\n";
    rank_model *m = NULL;
    CHECK_OK(rank_model_parse_as(&two, text, strlen(text), "two", &m));
    const double low[2] = {9, 0}, high[2] = {0, 1}, both[4] = {9, 0, 0, 1};
    CHECK(rank_model_score(m, low) == -1 && rank_model_score(m, high) == 2);
    int order[2];
    CHECK_OK(rank_model_top_k(m, both, 2, 2, order));
    CHECK(order[0] == 1 && order[1] == 0);
    rank_model_free(m);
    CHECK_STATUS(rank_model_parse(text, strlen(text), "two", &m), SPF_ERR_PARSE);
    CHECK(m == NULL && strstr(spf_last_error(), "feature count") != NULL);
    const char *wide = "spforge-rank-model 1\nfeatures 2 x y\ntrees 1\ntree 3\n"
                       "0 split 2 0.5 1 2\n1 leaf -1\n2 leaf 2\nend\n";
    CHECK_STATUS(rank_model_parse_as(&two, wide, strlen(wide), "two", &m), SPF_ERR_PARSE);
    const char *renamed = "spforge-rank-model 1\nfeatures 2 x z\ntrees 1\ntree 1\n0 leaf 1\nend\n";
    CHECK_STATUS(rank_model_parse_as(&two, renamed, strlen(renamed), "two", &m), SPF_ERR_PARSE);
    CHECK(strstr(spf_last_error(), "feature 1 'y'") != NULL);
}

int main(int argc, char **argv)
{
    test_scores();
    test_malformed();
    test_allocation_failure();
    test_top_k();
    test_fixture();
    test_schema();
    test_override(); /* before any rank_model_default in this process */
    test_default();
    return check_report();
}
