/* The thread-safety promises of include/spforge.h on the CPU: several
 * threads at once read matrices from files (.mtx, .smtx with and without a
 * values .npy, .npy), compute their statistics, run the reference (float
 * and double accumulation), create and execute CPU plans on their own
 * matrices and on one shared const matrix, execute one shared plan, write
 * matrices (their own files, and all of them one same file), log while
 * another thread swaps the log callback, and fail a read each; every result is compared bit for bit with a single-threaded
 * run, and each thread's spf_last_error() must name its own failure after
 * every thread has failed. The results are gathered per thread and checked
 * on the main thread (the CHECK counters are not atomic). Built with
 * -fsanitize=thread it is the race detector's workload as well. */
#define _POSIX_C_SOURCE 200809L

#include "check.h"
#include "test_util.h"
#include "core/log.h"

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

enum { THREADS = 6, ROUNDS = 3, N = 16, INNER_THREADS = 2 };

static char corpus_dir[4096], work_dir[4096];

/* ------------------------------------------------------------- the jobs */

/* One file and what a single-threaded run made of it. */
typedef struct job {
    char path[4200];
    spf_read_options read;
    char values[4200];  /* .smtx values file, or "" */
    spf_matrix *a;      /* the matrix a clean read gave       */
    spf_matrix_stats stats;
    float *b;           /* K×N, from the job's seed            */
    double *ref64;      /* spf_reference_spmm_f64              */
    float *ref32;       /* spf_reference_spmm, float accumulate */
    float *plan_c;      /* a CPU plan's execute                */
} job;

static job jobs[16];
static int job_count;

static const spf_matrix *shared_a; /* the const matrix every thread plans on */
static const spf_plan *shared_plan;
static float *shared_b, *shared_c;  /* its input and single-threaded output */

/* Everything a job computes, into fresh buffers (the caller frees them). */
typedef struct outcome {
    spf_status status;
    char detail[512];
    const char *step;
    spf_matrix *a;
    spf_matrix_stats stats;
    double *ref64;
    float *ref32, *plan_c;
} outcome;

static void outcome_free(outcome *o)
{
    spf_matrix_free(o->a);
    free(o->ref64);
    free(o->ref32);
    free(o->plan_c);
    memset(o, 0, sizeof *o);
}

#define STEP(name, call)                                                                   \
    do {                                                                                   \
        o->step = (name);                                                                  \
        if ((o->status = (call)) != SPF_OK) {                                              \
            snprintf(o->detail, sizeof o->detail, "%s", spf_last_error());                 \
            return;                                                                        \
        }                                                                                  \
    } while (0)

/* Read, stats, the references, a CPU plan: what one thread does per job. */
static void job_run(const job *j, const float *b, outcome *o)
{
    memset(o, 0, sizeof *o);
    STEP("read", spf_matrix_read(j->path, &j->read, &o->a));
    STEP("stats", spf_matrix_stats_compute(o->a, &o->stats));
    int64_t m = spf_matrix_rows(o->a);
    o->ref64 = malloc((size_t)(m * N + 1) * sizeof *o->ref64);
    o->ref32 = malloc((size_t)(m * N + 1) * sizeof *o->ref32);
    o->plan_c = malloc((size_t)(m * N + 1) * sizeof *o->plan_c);
    STEP("reference f64", spf_reference_spmm_f64(o->a, N, b, o->ref64, NULL, 0, INNER_THREADS));
    STEP("reference f32",
         spf_reference_spmm(o->a, N, b, o->ref32, NULL, 1, SPF_ACCUMULATE_F32, INNER_THREADS));
    spf_plan_options po;
    spf_plan_options_init(&po);
    po.strategy = SPF_STRATEGY_CPU;
    po.host_threads = INNER_THREADS;
    spf_plan *p = NULL;
    STEP("plan create", spf_plan_create(o->a, N, &po, &p));
    o->status = spf_plan_execute(p, b, o->plan_c, NULL, NULL);
    if (o->status != SPF_OK)
        snprintf(o->detail, sizeof o->detail, "%s", spf_last_error());
    o->step = "plan execute";
    spf_plan_free(p);
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

/* "" if o matches the job's single-threaded results, else what differs. */
static const char *outcome_differs(const job *j, const outcome *o)
{
    if (o->status != SPF_OK)
        return o->step;
    size_t cells = (size_t)(spf_matrix_rows(j->a) * N);
    if (!same_matrix(o->a, j->a))
        return "matrix read";
    if (memcmp(&o->stats, &j->stats, sizeof o->stats) != 0)
        return "stats";
    if (memcmp(o->ref64, j->ref64, cells * sizeof *o->ref64) != 0)
        return "reference f64";
    if (memcmp(o->ref32, j->ref32, cells * sizeof *o->ref32) != 0)
        return "reference f32";
    if (memcmp(o->plan_c, j->plan_c, cells * sizeof *o->plan_c) != 0)
        return "plan execute";
    return "";
}

/* ---------------------------------------------------------- the threads */

typedef struct worker {
    int id;
    int mismatches;
    char first[8192];  /* the first mismatch, for the report */
    int own_error_ok;  /* spf_last_error named this thread's own failure */
    char own_error[600];
} worker;

static pthread_barrier_t barrier;

/* The log callback swapped between two (function, user) pairs while the
 * workers log: a callback must always get its own user pointer. */
static int tag_a, tag_b;
static atomic_int log_calls, log_torn, log_stop;

static void log_a(spf_log_level level, const char *message, void *user)
{
    (void)level, (void)message;
    atomic_fetch_add(&log_calls, 1);
    if (user != &tag_a)
        atomic_fetch_add(&log_torn, 1);
}

static void log_b(spf_log_level level, const char *message, void *user)
{
    (void)level, (void)message;
    atomic_fetch_add(&log_calls, 1);
    if (user != &tag_b)
        atomic_fetch_add(&log_torn, 1);
}

static void *log_swapper(void *arg)
{
    (void)arg;
    for (int i = 0; !atomic_load(&log_stop); i++)
        spf_set_log_callback(i % 2 ? log_b : log_a, i % 2 ? &tag_b : &tag_a);
    return NULL;
}

/* Count a mismatch; keep the first one's description. */
static void mismatch(worker *w, const char *what, const char *detail)
{
    if (w->mismatches++ == 0)
        snprintf(w->first, sizeof w->first, "%s: %s", what, detail);
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    char path[4300];

    /* Each thread fails a read of its own missing file, waits until every
     * thread has failed, then finds its own file in its detail. */
    snprintf(path, sizeof path, "%s/missing-%d.mtx", work_dir, w->id);
    spf_matrix *none = NULL;
    spf_status st = spf_matrix_read(path, NULL, &none);
    pthread_barrier_wait(&barrier);
    snprintf(w->own_error, sizeof w->own_error, "%s", spf_last_error());
    w->own_error_ok = st == SPF_ERR_IO && none == NULL && strstr(w->own_error, path) != NULL;

    for (int i = 0; i < 2000; i++)
        log_msg(SPF_LOG_DEBUG, "thread %d, message %d", w->id, i);

    int64_t sm = spf_matrix_rows(shared_a);
    float *c = malloc((size_t)(sm * N) * sizeof *c);
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < job_count; i++) {
            const job *j = &jobs[(i + w->id) % job_count]; /* threads start at different jobs */
            outcome o;
            job_run(j, j->b, &o);
            const char *what = outcome_differs(j, &o);
            if (what[0])
                mismatch(w, what, j->path); /* differs from the single-threaded run */
            outcome_free(&o);
        }

        /* The shared plan, executed by every thread at once. */
        for (int64_t i = 0; i < sm * N; i++)
            c[i] = NAN;
        if (spf_plan_execute(shared_plan, shared_b, c, NULL, NULL) != SPF_OK)
            mismatch(w, "shared plan execute", spf_last_error());
        else if (memcmp(c, shared_c, (size_t)(sm * N) * sizeof *c) != 0)
            mismatch(w, "shared plan", "C differs from the single-threaded run");

        /* A plan of its own on the shared const matrix. */
        spf_plan_options po;
        spf_plan_options_init(&po);
        po.strategy = SPF_STRATEGY_CPU;
        spf_plan *p = NULL;
        for (int64_t i = 0; i < sm * N; i++)
            c[i] = NAN;
        if (spf_plan_create(shared_a, N, &po, &p) != SPF_OK ||
            spf_plan_execute(p, shared_b, c, NULL, NULL) != SPF_OK)
            mismatch(w, "plan on the shared matrix", spf_last_error());
        else if (memcmp(c, shared_c, (size_t)(sm * N) * sizeof *c) != 0)
            mismatch(w, "plan on the shared matrix", "C differs from the single-threaded run");
        spf_plan_free(p);
        spf_plan_info info = {.size = sizeof info};
        if (spf_plan_get_info(shared_plan, &info) != SPF_OK || info.strategy != SPF_STRATEGY_CPU)
            mismatch(w, "spf_plan_get_info on the shared plan", spf_last_error());

        /* Writes: its own file, and the one file every thread replaces. */
        static const char *const ext[] = {"mtx", "smtx", "npy"};
        snprintf(path, sizeof path, "%s/own-%d.%s", work_dir, w->id, ext[round % 3]);
        spf_matrix *back = NULL;
        spf_read_options ro;
        spf_read_options_init(&ro);
        if (spf_matrix_write(shared_a, path, SPF_FORMAT_AUTO) != SPF_OK ||
            spf_matrix_read(path, &ro, &back) != SPF_OK)
            mismatch(w, "own write and read back", spf_last_error());
        else if (round % 3 != 1 && !same_matrix(back, shared_a)) /* .smtx keeps the pattern only */
            mismatch(w, "own write: read back differs", path);
        spf_matrix_free(back);
        unlink(path);
        snprintf(path, sizeof path, "%s/shared.mtx", work_dir);
        if (spf_matrix_write(shared_a, path, SPF_FORMAT_MTX) != SPF_OK)
            mismatch(w, "shared write", spf_last_error());
    }
    free(c);
    return NULL;
}

/* ------------------------------------------------------------ the setup */

static job *job_add(const char *dir, const char *name)
{
    job *j = &jobs[job_count++];
    CHECK(snprintf(j->path, sizeof j->path, "%s/%s", dir, name) < (int)sizeof j->path);
    spf_read_options_init(&j->read);
    return j;
}

/* The single-threaded results every thread's are compared with. */
static void job_baseline(job *j, uint64_t seed)
{
    spf_matrix *a = NULL;
    CHECK_MSG(spf_matrix_read(j->path, &j->read, &a) == SPF_OK, "%s: %s", j->path,
              spf_last_error());
    if (!a)
        return;
    int64_t m = spf_matrix_rows(a), k = spf_matrix_cols(a);
    j->b = malloc((size_t)(k * N + 1) * sizeof *j->b);
    spf_fill_uniform(j->b, k * N, seed);
    outcome o;
    job_run(j, j->b, &o);
    CHECK_MSG(o.status == SPF_OK, "%s: %s: %s", j->path, o.step, o.detail);
    CHECK(o.a && same_matrix(o.a, a));
    j->a = a;
    j->stats = o.stats;
    j->ref64 = o.ref64, j->ref32 = o.ref32, j->plan_c = o.plan_c;
    o.ref64 = NULL, o.ref32 = NULL, o.plan_c = NULL;
    outcome_free(&o);
    /* The plan's C is the double reference rounded: a baseline that is
     * itself wrong would make the comparisons meaningless. */
    double err = spf_relative_error(j->plan_c, j->ref64, m * N);
    CHECK_MSG(err < 1e-6, "%s: plan against the double reference: %g", j->path, err);
}

int main(int argc, char **argv)
{
    const char *src = getenv("SPF_SOURCE_DIR"), *build = getenv("SPF_BUILD_DIR");
    if (!src)
        SKIP("SPF_SOURCE_DIR not set (run through ctest)");
    snprintf(corpus_dir, sizeof corpus_dir, "%s/tests/corpus", src);
    snprintf(work_dir, sizeof work_dir, "%s/threads_XXXXXX", build ? build : "/tmp");
    if (!mkdtemp(work_dir))
        SKIP("cannot create a scratch folder %s", work_dir);

    static const char *const corpus_files[] = {"good_general.mtx", "good_symmetric.mtx",
                                               "good_pattern.mtx", "good_integer.mtx",
                                               "good.smtx", "good_f32.npy", "good_f16.npy",
                                               "good_f64.npy"};
    for (size_t i = 0; i < sizeof corpus_files / sizeof *corpus_files; i++)
        job_add(corpus_dir, corpus_files[i]);
    job_add(corpus_dir, "good_f32.npy")->read.npy_sparsity = 0.5;

    /* Bigger files, so that reads and products overlap in time. */
    spf_gen_options g;
    spf_gen_options_init(&g);
    g.rows = 300, g.cols = 200, g.sparsity = 0.9, g.seed = 11;
    spf_matrix *big = NULL;
    CHECK_OK(spf_matrix_generate(&g, &big));
    if (!big)
        return check_report();
    static const char *const big_files[] = {"big.mtx", "big.smtx", "big.npy"};
    for (int f = 0; f < 3; f++) {
        job *j = job_add(work_dir, big_files[f]);
        CHECK_OK(spf_matrix_write(big, j->path, SPF_FORMAT_AUTO));
    }
    job *jv = job_add(work_dir, "big.smtx");
    snprintf(jv->values, sizeof jv->values, "%s/big_values.npy", work_dir);
    write_values_npy(jv->values, spf_matrix_values(big), spf_matrix_nnz(big));
    jv->read.values_path = jv->values;
    for (int i = 0; i < job_count; i++)
        job_baseline(&jobs[i], 100 + (uint64_t)i);
    CHECK(jv->a && same_matrix(jv->a, big));

    shared_a = big;
    spf_plan_options po;
    spf_plan_options_init(&po);
    po.strategy = SPF_STRATEGY_CPU;
    po.host_threads = INNER_THREADS;
    spf_plan *plan = NULL;
    CHECK_OK(spf_plan_create(big, N, &po, &plan));
    shared_plan = plan;
    int64_t m = spf_matrix_rows(big), k = spf_matrix_cols(big);
    shared_b = malloc((size_t)(k * N) * sizeof *shared_b);
    shared_c = malloc((size_t)(m * N) * sizeof *shared_c);
    spf_fill_uniform(shared_b, k * N, 7);
    CHECK_OK(spf_plan_execute(plan, shared_b, shared_c, NULL, NULL));
    int files_before = dir_entry_count(work_dir);

    worker workers[THREADS];
    pthread_t tid[THREADS];
    pthread_barrier_init(&barrier, NULL, THREADS);
    pthread_t swapper;
    CHECK(pthread_create(&swapper, NULL, log_swapper, NULL) == 0);
    int started = 0;
    for (int t = 0; t < THREADS; t++) {
        workers[t] = (worker){.id = t};
        CHECK(pthread_create(&tid[t], NULL, worker_main, &workers[t]) == 0);
        started++;
    }
    for (int t = 0; t < started; t++)
        pthread_join(tid[t], NULL);
    pthread_barrier_destroy(&barrier);
    atomic_store(&log_stop, 1);
    pthread_join(swapper, NULL);
    spf_set_log_callback(NULL, NULL);
    CHECK_MSG(atomic_load(&log_torn) == 0 && atomic_load(&log_calls) > 0,
              "%d of %d log calls got the other callback's user pointer", atomic_load(&log_torn),
              atomic_load(&log_calls));

    for (int t = 0; t < THREADS; t++) {
        CHECK_MSG(workers[t].mismatches == 0, "thread %d: %d mismatches, the first: %s", t,
                  workers[t].mismatches, workers[t].first);
        CHECK_MSG(workers[t].own_error_ok, "thread %d: spf_last_error() \"%s\" does not name its "
                  "own failed read", t, workers[t].own_error);
    }
    /* The file every thread replaced holds one whole matrix, and no
     * thread's temporary file is left beside it. */
    char path[4300];
    snprintf(path, sizeof path, "%s/shared.mtx", work_dir);
    spf_matrix *back = NULL;
    CHECK_OK(spf_matrix_read(path, NULL, &back));
    CHECK(back && same_matrix(back, big));
    spf_matrix_free(back);
    CHECK_MSG(dir_entry_count(work_dir) == files_before + 1, "%d files in %s, expected %d",
              dir_entry_count(work_dir), work_dir, files_before + 1);
    printf("%d threads × %d rounds × %d files, one shared plan: all results bit-identical to "
           "the single-threaded run\n", THREADS, ROUNDS, job_count);

    unlink(path);
    for (int i = 0; i < job_count; i++) {
        if (strncmp(jobs[i].path, work_dir, strlen(work_dir)) == 0)
            unlink(jobs[i].path);
        if (jobs[i].values[0])
            unlink(jobs[i].values);
        spf_matrix_free(jobs[i].a);
        free(jobs[i].b);
        free(jobs[i].ref64);
        free(jobs[i].ref32);
        free(jobs[i].plan_c);
    }
    rmdir(work_dir);
    spf_plan_free(plan);
    spf_matrix_free(big);
    free(shared_b);
    free(shared_c);
    return check_report();
}
