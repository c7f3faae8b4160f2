/* Allocation failure everywhere (STYLE.md 13): with an injected allocator
 * that refuses the k-th allocation, for k = 1, 2, ... until a run needs no
 * more than k - 1, every read (.mtx, .smtx with and without a values .npy,
 * .npy), every generator, spf_matrix_stats_compute, a CPU plan's create + execute and
 * spf_matrix_write (each format) either succeeds with the result of a run
 * that failed nothing, or returns SPF_ERR_OUT_OF_MEMORY with no object
 * handed out, no file left behind, and no block of memory still live once
 * the objects made are freed (the allocator counts live blocks and bytes). */
#define _POSIX_C_SOURCE 200809L

#include "check.h"
#include "test_util.h"

#include <dirent.h>
#include <pthread.h>
#include <stdalign.h>
#include <stddef.h>
#include <unistd.h>

/* ---------------------------------------------------- counting allocator */

/* Each block carries its size in a header, so that frees count bytes too. */
enum { HEADER = alignof(max_align_t) > sizeof(size_t) ? alignof(max_align_t) : sizeof(size_t) };

typedef struct counter {
    pthread_mutex_t lock; /* the reference's worker threads may allocate */
    long calls;           /* allocations (alloc and realloc) since arm()  */
    long fail_at;         /* refuse the fail_at-th one (0: none)          */
    int refused;          /* 1 once it was refused                        */
    long live_blocks;
    long long live_bytes;
} counter;

static counter cnt = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* 1 if this call is the one to refuse. */
static int refuse_now(void)
{
    pthread_mutex_lock(&cnt.lock);
    int refuse = ++cnt.calls == cnt.fail_at;
    cnt.refused |= refuse;
    pthread_mutex_unlock(&cnt.lock);
    return refuse;
}

static void account(long blocks, long long bytes)
{
    pthread_mutex_lock(&cnt.lock);
    cnt.live_blocks += blocks;
    cnt.live_bytes += bytes;
    pthread_mutex_unlock(&cnt.lock);
}

static void *count_alloc(size_t size, void *user)
{
    (void)user;
    if (refuse_now() || size > SIZE_MAX - HEADER)
        return NULL;
    unsigned char *p = malloc(HEADER + size);
    if (!p)
        return NULL;
    memcpy(p, &size, sizeof size);
    account(1, (long long)size);
    return p + HEADER;
}

static void count_free(void *ptr, void *user)
{
    (void)user;
    if (!ptr)
        return;
    unsigned char *p = (unsigned char *)ptr - HEADER;
    size_t size;
    memcpy(&size, p, sizeof size);
    account(-1, -(long long)size);
    free(p);
}

static void *count_realloc(void *ptr, size_t size, void *user)
{
    if (!ptr)
        return count_alloc(size, user);
    if (refuse_now() || size > SIZE_MAX - HEADER)
        return NULL; /* the old block stays live, as realloc leaves it */
    unsigned char *old = (unsigned char *)ptr - HEADER;
    size_t old_size;
    memcpy(&old_size, old, sizeof old_size);
    unsigned char *p = realloc(old, HEADER + size);
    if (!p)
        return NULL;
    memcpy(p, &size, sizeof size);
    account(0, (long long)size - (long long)old_size);
    return p + HEADER;
}

static void arm(long fail_at)
{
    pthread_mutex_lock(&cnt.lock);
    cnt.calls = 0;
    cnt.fail_at = fail_at;
    cnt.refused = 0;
    pthread_mutex_unlock(&cnt.lock);
}

/* ------------------------------------------------------------ scenarios */

static char corpus_dir[4096], work_dir[4096];

static void join(char *out, size_t cap, const char *dir, const char *name)
{
    CHECK(snprintf(out, cap, "%s/%s", dir, name) < (int)cap);
}

static int same_matrix(const spf_matrix *a, const spf_matrix *b)
{
    int64_t rows = spf_matrix_rows(a), nnz = spf_matrix_nnz(a);
    return rows == spf_matrix_rows(b) && spf_matrix_cols(a) == spf_matrix_cols(b) &&
           nnz == spf_matrix_nnz(b) &&
           memcmp(spf_matrix_row_ptr(a), spf_matrix_row_ptr(b), (size_t)(rows + 1) * 8) == 0 &&
           (nnz == 0 || (memcmp(spf_matrix_col_idx(a), spf_matrix_col_idx(b), (size_t)nnz * 4) == 0 &&
                         memcmp(spf_matrix_values(a), spf_matrix_values(b), (size_t)nnz * 4) == 0));
}

/* One operation under test. run() makes its objects, checks a successful
 * result against expect (1 if equal), frees them and returns the status. */
typedef struct scenario {
    const char *label;
    spf_status (*run)(const struct scenario *s, int *equal);
    const char *path;               /* read: the file; write: the target   */
    const spf_read_options *read;   /* read                                */
    const spf_gen_options *gen;     /* generate                            */
    const spf_matrix *a;            /* stats, plan, write: the input       */
    const spf_matrix *expect;       /* read: the matrix of a clean read     */
    const void *expect_bytes;       /* stats: the struct; plan: C; write: the file */
    size_t expect_size;
    spf_format format;              /* write                               */
} scenario;

static spf_status run_read(const scenario *s, int *equal)
{
    spf_matrix *a = (spf_matrix *)1;
    spf_status st = spf_matrix_read(s->path, s->read, &a);
    if (st != SPF_OK)
        *equal = a == NULL; /* a failed read hands out nothing */
    else
        *equal = same_matrix(a, s->expect);
    if (st == SPF_OK)
        spf_matrix_free(a);
    return st;
}

static spf_status run_generate(const scenario *s, int *equal)
{
    spf_matrix *a = (spf_matrix *)1;
    spf_status st = spf_matrix_generate(s->gen, &a);
    *equal = st != SPF_OK ? a == NULL : same_matrix(a, s->expect);
    if (st == SPF_OK)
        spf_matrix_free(a);
    return st;
}

static spf_status run_stats(const scenario *s, int *equal)
{
    spf_matrix_stats st;
    spf_status status = spf_matrix_stats_compute(s->a, &st);
    *equal = status != SPF_OK || memcmp(&st, s->expect_bytes, sizeof st) == 0;
    return status;
}

enum { PLAN_N = 7 };

static spf_status run_plan(const scenario *s, int *equal)
{
    int64_t m = spf_matrix_rows(s->a), k = spf_matrix_cols(s->a);
    float *b = malloc((size_t)(k * PLAN_N) * sizeof *b), *c = malloc((size_t)(m * PLAN_N) * sizeof *c);
    spf_fill_uniform(b, k * PLAN_N, 17);
    for (int64_t i = 0; i < m * PLAN_N; i++)
        c[i] = NAN;
    spf_plan_options o;
    spf_plan_options_init(&o);
    o.strategy = SPF_STRATEGY_CPU;
    o.host_threads = 2;
    spf_plan *p = (spf_plan *)1;
    spf_status st = spf_plan_create(s->a, PLAN_N, &o, &p);
    *equal = st != SPF_OK ? p == NULL : 1;
    if (st == SPF_OK)
        st = spf_plan_execute(p, b, c, NULL, NULL);
    if (st == SPF_OK)
        *equal = memcmp(c, s->expect_bytes, s->expect_size) == 0;
    if (p != (spf_plan *)1)
        spf_plan_free(p);
    free(b);
    free(c);
    return st;
}

static spf_status run_write(const scenario *s, int *equal)
{
    unlink(s->path);
    int before = dir_entry_count(work_dir);
    spf_status st = spf_matrix_write(s->a, s->path, s->format);
    if (st != SPF_OK) {
        /* nothing under the target name, no temporary file beside it */
        *equal = access(s->path, F_OK) != 0 && dir_entry_count(work_dir) == before;
        return st;
    }
    FILE *f = fopen(s->path, "rb");
    unsigned char *got = malloc(s->expect_size + 1);
    size_t n = f && got ? fread(got, 1, s->expect_size + 1, f) : 0;
    *equal = n == s->expect_size && memcmp(got, s->expect_bytes, n) == 0;
    if (f)
        fclose(f);
    free(got);
    unlink(s->path);
    return st;
}

/* k = 1, 2, ...: refuse the k-th allocation and check the outcome, until a
 * run makes fewer than k allocations. */
static void sweep(const scenario *s)
{
    enum { MAX_RUNS = 20000 };
    long k = 1, refused_runs = 0;
    for (; k <= MAX_RUNS; k++) {
        long base_blocks = cnt.live_blocks; /* the inputs, made before */
        long long base_bytes = cnt.live_bytes;
        arm(k);
        int equal = 0;
        spf_status st = s->run(s, &equal);
        int refused = cnt.refused;
        arm(0);
        CHECK_MSG(cnt.live_blocks == base_blocks && cnt.live_bytes == base_bytes,
                  "%s, allocation %ld%s: %ld blocks, %lld bytes leaked", s->label, k,
                  refused ? " refused" : "", cnt.live_blocks - base_blocks,
                  cnt.live_bytes - base_bytes);
        /* count each leak once */
        cnt.live_blocks = base_blocks, cnt.live_bytes = base_bytes;
        if (st == SPF_OK) {
            CHECK_MSG(equal, "%s, allocation %ld%s: SPF_OK with a wrong result", s->label, k,
                      refused ? " refused" : "");
        } else {
            CHECK_MSG(refused && st == SPF_ERR_OUT_OF_MEMORY,
                      "%s, allocation %ld%s: %s (%s), expected out of memory", s->label, k,
                      refused ? " refused" : " (none refused)", spf_status_string(st),
                      spf_last_error());
            CHECK_MSG(equal, "%s, allocation %ld refused: an object handed out or a file left "
                             "behind", s->label, k);
        }
        refused_runs += refused;
        if (!refused)
            break;
    }
    CHECK_MSG(k <= MAX_RUNS, "%s: still allocating after %d runs", s->label, MAX_RUNS);
    printf("%-28s %ld allocations, each refused once\n", s->label, refused_runs);
}

/* --------------------------------------------------------------- cases */

static spf_matrix *read_clean(const char *path, const spf_read_options *o)
{
    spf_matrix *a = NULL;
    CHECK_MSG(spf_matrix_read(path, o, &a) == SPF_OK, "%s: %s", path, spf_last_error());
    return a;
}

static void sweep_read(const char *label, const char *path, const spf_read_options *o)
{
    spf_matrix *expect = read_clean(path, o);
    if (!expect)
        return;
    scenario s = {.label = label, .run = run_read, .path = path, .read = o, .expect = expect};
    sweep(&s);
    spf_matrix_free(expect);
}

static void test_reads(const spf_matrix *big)
{
    static const char *const corpus_files[] = {"good_general.mtx", "good_symmetric.mtx",
                                               "good_pattern.mtx", "good_skew.mtx",
                                               "good.smtx", "good_f32.npy", "good_f16.npy",
                                               "good_f64.npy", "good_empty.mtx"};
    char path[8192];
    for (size_t i = 0; i < sizeof corpus_files / sizeof *corpus_files; i++) {
        join(path, sizeof path, corpus_dir, corpus_files[i]);
        sweep_read(corpus_files[i], path, NULL);
    }
    spf_read_options o;
    spf_read_options_init(&o);
    o.npy_sparsity = 0.5; /* pruning by magnitude allocates a rule */
    join(path, sizeof path, corpus_dir, "good_f32.npy");
    sweep_read("good_f32.npy pruned", path, &o);

    /* A bigger matrix in each format, so readers grow their buffers. */
    static const char *const names[] = {"big.mtx", "big.smtx", "big.npy"};
    for (int f = 0; f < 3; f++) {
        join(path, sizeof path, work_dir, names[f]);
        CHECK_OK(spf_matrix_write(big, path, SPF_FORMAT_AUTO));
        sweep_read(names[f], path, NULL);
    }
    char values[8192];
    join(values, sizeof values, work_dir, "big_values.npy");
    write_values_npy(values, spf_matrix_values(big), spf_matrix_nnz(big));
    spf_read_options_init(&o);
    o.values_path = values;
    join(path, sizeof path, work_dir, "big.smtx");
    sweep_read("big.smtx + values .npy", path, &o);
    for (int f = 0; f < 3; f++) {
        join(path, sizeof path, work_dir, names[f]);
        unlink(path);
    }
    unlink(values);
}

static void test_generators(void)
{
    static const char *const names[] = {"generate uniform", "generate magnitude",
                                        "generate column vector", "generate V:N:M",
                                        "generate R-MAT"};
    for (int kind = SPF_GEN_UNIFORM; kind <= SPF_GEN_RMAT; kind++) {
        spf_gen_options g;
        spf_gen_options_init(&g);
        g.kind = (spf_generator)kind;
        g.rows = 64, g.cols = 48, g.sparsity = 0.7, g.seed = 5;
        spf_matrix *expect = NULL;
        CHECK_OK(spf_matrix_generate(&g, &expect));
        if (!expect)
            continue;
        scenario s = {.label = names[kind], .run = run_generate, .gen = &g, .expect = expect};
        sweep(&s);
        spf_matrix_free(expect);
    }
}

static void test_stats_and_plan(const spf_matrix *a)
{
    spf_matrix_stats expect;
    CHECK_OK(spf_matrix_stats_compute(a, &expect));
    scenario s = {.label = "stats", .run = run_stats, .a = a, .expect_bytes = &expect};
    sweep(&s);

    /* C of a clean run: the same plan's output, bit for bit. */
    int64_t m = spf_matrix_rows(a), k = spf_matrix_cols(a);
    float *b = malloc((size_t)(k * PLAN_N) * sizeof *b), *c = malloc((size_t)(m * PLAN_N) * sizeof *c);
    spf_fill_uniform(b, k * PLAN_N, 17);
    spf_plan_options o;
    spf_plan_options_init(&o);
    o.strategy = SPF_STRATEGY_CPU;
    spf_plan *p = NULL;
    CHECK_OK(spf_plan_create(a, PLAN_N, &o, &p));
    CHECK_OK(spf_plan_execute(p, b, c, NULL, NULL));
    spf_plan_free(p);
    s = (scenario){.label = "CPU plan create + execute", .run = run_plan, .a = a,
                   .expect_bytes = c, .expect_size = (size_t)(m * PLAN_N) * sizeof *c};
    sweep(&s);
    free(b);
    free(c);
}

static void test_writes(const spf_matrix *a)
{
    static const char *const names[] = {"out.mtx", "out.smtx", "out.npy"};
    static const spf_format formats[] = {SPF_FORMAT_MTX, SPF_FORMAT_SMTX, SPF_FORMAT_NPY};
    for (int f = 0; f < 3; f++) {
        char path[8192];
        join(path, sizeof path, work_dir, names[f]);
        CHECK_OK(spf_matrix_write(a, path, formats[f]));
        FILE *file = fopen(path, "rb");
        unsigned char *expect = malloc(1 << 20);
        size_t size = file && expect ? fread(expect, 1, 1 << 20, file) : 0;
        CHECK(size > 0 && size < (1 << 20));
        if (file)
            fclose(file);
        unlink(path);
        char label[64];
        snprintf(label, sizeof label, "write %s", names[f]);
        scenario s = {.label = label, .run = run_write, .path = path, .a = a,
                      .expect_bytes = expect, .expect_size = size, .format = formats[f]};
        sweep(&s);
        free(expect);
    }
}

int main(int argc, char **argv)
{
    const char *src = getenv("SPF_SOURCE_DIR"), *build = getenv("SPF_BUILD_DIR");
    if (!src)
        SKIP("SPF_SOURCE_DIR not set (run through ctest)");
    snprintf(corpus_dir, sizeof corpus_dir, "%s/tests/corpus", src);
    snprintf(work_dir, sizeof work_dir, "%s/alloc_fail_XXXXXX", build ? build : "/tmp");
    if (!mkdtemp(work_dir))
        SKIP("cannot create a scratch folder %s", work_dir);

    spf_allocator counting = {count_alloc, count_realloc, count_free, NULL};
    spf_set_allocator(&counting);
    spf_gen_options g;
    spf_gen_options_init(&g);
    g.rows = 150, g.cols = 90, g.sparsity = 0.8, g.seed = 3;
    spf_matrix *a = NULL;
    CHECK_OK(spf_matrix_generate(&g, &a));
    if (a) {
        test_reads(a);
        test_generators();
        test_stats_and_plan(a);
        test_writes(a);
    }
    spf_matrix_free(a);
    CHECK_MSG(cnt.live_blocks == 0 && cnt.live_bytes == 0, "%ld blocks, %lld bytes live at the end",
              cnt.live_blocks, cnt.live_bytes);
    spf_set_allocator(NULL);
    rmdir(work_dir);
    return check_report();
}
