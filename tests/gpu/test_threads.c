/* The thread-safety promises of include/spforge.h on the GPU: plans created
 * at once from several threads on different matrices (the generic and the
 * unrolled strategies, the plan cache off, each self-checked), and one plan
 * of each strategy executed at once from several threads, each on a stream
 * of its own. Every run takes fresh random inputs, finds C poisoned with
 * NaN and is checked against the CPU reference accumulated in double. The
 * results are gathered per thread and checked on the main thread (the CHECK
 * counters are not atomic). */
#define _POSIX_C_SOURCE 200809L

#include "test_util.h"

#include <pthread.h>

#ifndef SPF_HAVE_CUDA
int main(int argc, char **argv) { SKIP("no CUDA device: built without CUDA"); }
#else

#include <cuda_runtime_api.h>

enum { THREADS = 4, ROUNDS = 6, N = 48 };
static const double TOLERANCE = 1e-5; /* float32 storage and accumulation */

/* What one thread saw: the first failure in words, and the worst error. */
typedef struct worker {
    int id;
    const spf_matrix *a;     /* create: the matrix; execute: the shared plan's */
    const spf_plan *plan;    /* execute: the plan all threads run            */
    spf_strategy strategy;   /* create: the strategy to build                */
    int bias_relu;
    int failures;
    char first[2048];
    double worst;            /* the largest relative error over its runs     */
    spf_plan_info info;      /* create: the plan's info                      */
} worker;

static pthread_barrier_t barrier;

static void fail(worker *w, const char *what, const char *detail)
{
    if (w->failures++ == 0)
        snprintf(w->first, sizeof w->first, "%s: %s", what, detail);
}

static int cuda_ok(worker *w, cudaError_t e, const char *what)
{
    if (e != cudaSuccess)
        fail(w, what, cudaGetErrorString(e));
    return e == cudaSuccess;
}

/* Run plan p of matrix a once on `stream` with inputs from seed and C
 * poisoned; record the relative error against the double reference. */
static void run_checked(worker *w, const spf_plan *p, const spf_matrix *a, int bias_relu,
                        cudaStream_t stream, uint64_t seed)
{
    int64_t m = spf_matrix_rows(a), k = spf_matrix_cols(a);
    float *b = malloc((size_t)(k * N + 1) * sizeof *b), *bias = malloc((size_t)(m + 1) * sizeof *bias);
    float *c = malloc((size_t)(m * N + 1) * sizeof *c);
    double *ref = malloc((size_t)(m * N + 1) * sizeof *ref);
    void *db = NULL, *dc = NULL, *dbias = NULL;
    if (!b || !bias || !c || !ref) {
        fail(w, "host buffers", "out of memory");
        goto done;
    }
    spf_fill_uniform(b, k * N, seed);
    spf_fill_uniform(bias, m, seed + 1);
    if (spf_reference_spmm_f64(a, N, b, ref, bias_relu ? bias : NULL, bias_relu, 1) != SPF_OK) {
        fail(w, "reference", spf_last_error());
        goto done;
    }
    if (!cuda_ok(w, cudaMalloc(&db, (size_t)(k * N + 1) * sizeof *b), "cudaMalloc B") ||
        !cuda_ok(w, cudaMalloc(&dc, (size_t)(m * N + 1) * sizeof *c), "cudaMalloc C") ||
        !cuda_ok(w, cudaMalloc(&dbias, (size_t)(m + 1) * sizeof *bias), "cudaMalloc bias") ||
        !cuda_ok(w, cudaMemcpyAsync(db, b, (size_t)(k * N) * sizeof *b, cudaMemcpyHostToDevice, stream),
                 "copy B") ||
        !cuda_ok(w, cudaMemcpyAsync(dbias, bias, (size_t)m * sizeof *bias, cudaMemcpyHostToDevice,
                                    stream), "copy bias") ||
        !cuda_ok(w, cudaMemsetAsync(dc, 0xff, (size_t)(m * N) * sizeof *c, stream), "poison C"))
        goto done;
    if (spf_plan_execute(p, db, dc, bias_relu ? dbias : NULL, stream) != SPF_OK) {
        fail(w, "spf_plan_execute", spf_last_error());
        goto done;
    }
    if (!cuda_ok(w, cudaMemcpyAsync(c, dc, (size_t)(m * N) * sizeof *c, cudaMemcpyDeviceToHost,
                                    stream), "copy C") ||
        !cuda_ok(w, cudaStreamSynchronize(stream), "cudaStreamSynchronize"))
        goto done;
    double err = spf_relative_error(c, ref, m * N);
    if (isnan(err) || err > w->worst) /* a NaN stays the worst */
        w->worst = err;
done:
    cudaFree(db);
    cudaFree(dc);
    cudaFree(dbias);
    free(b);
    free(bias);
    free(c);
    free(ref);
}

/* Phase 1: each thread builds a plan of its own matrix while the others
 * build theirs, then runs it on a stream of its own. */
static void *create_main(void *arg)
{
    worker *w = arg;
    cudaStream_t stream = NULL;
    if (!cuda_ok(w, cudaSetDevice(0), "cudaSetDevice") ||
        !cuda_ok(w, cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream"))
        stream = NULL;
    spf_plan_options o;
    spf_plan_options_init(&o);
    o.strategy = w->strategy;
    o.cache = 0;
    o.bias = o.relu = w->bias_relu;
    o.host_threads = 2;
    spf_plan *p = NULL;
    pthread_barrier_wait(&barrier); /* the creates overlap */
    if (spf_plan_create(w->a, N, &o, &p) != SPF_OK)
        fail(w, "spf_plan_create", spf_last_error());
    else if ((w->info.size = sizeof w->info, spf_plan_get_info(p, &w->info)) != SPF_OK)
        fail(w, "spf_plan_get_info", spf_last_error());
    if (p && stream)
        run_checked(w, p, w->a, w->bias_relu, stream, 500 + (uint64_t)w->id);
    spf_plan_free(p);
    if (stream)
        cudaStreamDestroy(stream);
    return NULL;
}

/* Phase 2: every thread runs the one shared plan, ROUNDS times, on its own
 * stream, all at once. */
static void *execute_main(void *arg)
{
    worker *w = arg;
    cudaStream_t stream = NULL;
    int ok = cuda_ok(w, cudaSetDevice(0), "cudaSetDevice") &&
             cuda_ok(w, cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
    pthread_barrier_wait(&barrier);
    for (int r = 0; ok && r < ROUNDS; r++) {
        run_checked(w, w->plan, w->a, w->bias_relu, stream, 1000 + 100 * (uint64_t)w->id + (uint64_t)r);
        spf_plan_info info = {.size = sizeof info};
        if (spf_plan_get_info(w->plan, &info) != SPF_OK)
            fail(w, "spf_plan_get_info", spf_last_error());
    }
    if (stream)
        cudaStreamDestroy(stream);
    return NULL;
}

static void run_threads(void *(*body)(void *), worker *workers)
{
    pthread_t tid[THREADS];
    pthread_barrier_init(&barrier, NULL, THREADS);
    for (int t = 0; t < THREADS; t++)
        if (pthread_create(&tid[t], NULL, body, &workers[t]) != 0) {
            /* a thread short: the barrier would never open */
            fprintf(stderr, "cannot start thread %d\n", t);
            exit(1);
        }
    for (int t = 0; t < THREADS; t++)
        pthread_join(tid[t], NULL);
    pthread_barrier_destroy(&barrier);
}

static const char *strategy_name(spf_strategy s) { return s == SPF_STRATEGY_GENERIC ? "generic" : "unrolled"; }

static void report(const char *phase, const worker *workers)
{
    for (int t = 0; t < THREADS; t++) {
        const worker *w = &workers[t];
        printf("%s thread %d: %-8s %-40s %lld×%lld err %.2e%s%s\n", phase, t,
               strategy_name(w->strategy), w->info.kernel_name, (long long)spf_matrix_rows(w->a),
               (long long)spf_matrix_cols(w->a), w->worst, w->failures ? " FAILED: " : "",
               w->failures ? w->first : "");
        CHECK_MSG(w->failures == 0, "%s thread %d: %d failures, the first: %s", phase, t,
                  w->failures, w->first);
        CHECK_MSG(w->worst <= TOLERANCE, "%s thread %d: relative error %.3g over %.0e", phase, t,
                  w->worst, TOLERANCE);
    }
}

static void test_concurrent_create(void)
{
    spf_matrix *mats[THREADS] = {
        gen_matrix(SPF_GEN_UNIFORM, 96, 80, 0.9, 1),
        gen_matrix(SPF_GEN_MAGNITUDE, 70, 64, 0.95, 2),
        gen_matrix(SPF_GEN_COLUMN_VECTOR, 128, 96, 0.8, 3),
        gen_matrix(SPF_GEN_UNIFORM, 33, 200, 0.85, 4),
    };
    worker workers[THREADS];
    for (int t = 0; t < THREADS; t++)
        workers[t] = (worker){.id = t, .a = mats[t], .bias_relu = t % 2,
                              .strategy = t < THREADS / 2 ? SPF_STRATEGY_UNROLLED
                                                          : SPF_STRATEGY_GENERIC};
    int all = 1;
    for (int t = 0; t < THREADS; t++)
        all = all && mats[t];
    if (all) {
        run_threads(create_main, workers);
        report("create", workers);
        for (int t = 0; t < THREADS; t++)
            CHECK_MSG(workers[t].info.strategy == workers[t].strategy &&
                          workers[t].info.verify_error >= 0 && !workers[t].info.from_cache,
                      "create thread %d: strategy %d, self-check %g, from cache %d", t,
                      (int)workers[t].info.strategy, workers[t].info.verify_error,
                      workers[t].info.from_cache);
    }
    for (int t = 0; t < THREADS; t++)
        spf_matrix_free(mats[t]);
}

static void test_shared_plan(spf_strategy strategy)
{
    spf_matrix *a = gen_matrix(SPF_GEN_MAGNITUDE, 257, 192, 0.9, 9);
    if (!a)
        return;
    spf_plan_options o;
    spf_plan_options_init(&o);
    o.strategy = strategy;
    o.cache = 0;
    o.bias = o.relu = 1;
    spf_plan *p = NULL;
    CHECK_OK(spf_plan_create(a, N, &o, &p));
    if (p) {
        worker workers[THREADS];
        spf_plan_info info = {.size = sizeof info};
        CHECK_OK(spf_plan_get_info(p, &info));
        for (int t = 0; t < THREADS; t++)
            workers[t] = (worker){.id = t, .a = a, .plan = p, .strategy = strategy, .bias_relu = 1,
                                  .info = info};
        run_threads(execute_main, workers);
        report(strategy == SPF_STRATEGY_GENERIC ? "shared generic" : "shared unrolled", workers);
    }
    spf_plan_free(p);
    spf_matrix_free(a);
}

static void print_log(spf_log_level level, const char *message, void *user)
{
    (void)user;
    fprintf(stderr, "[spforge %d] %s\n", (int)level, message); /* one fprintf: whole lines */
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    setenv("SPFORGE_CACHE_DIR", "off", 1); /* before any thread: setenv is not thread-safe */
    spf_set_log_callback(print_log, NULL);
    spf_device_info dev;
    if (spf_device_query(0, &dev) != SPF_OK || !dev.available)
        SKIP("no CUDA device: %s", dev.reason);
    printf("device: %s (sm_%d%d), %d threads\n", dev.name, dev.cc_major, dev.cc_minor, THREADS);
    test_concurrent_create();
    test_shared_plan(SPF_STRATEGY_UNROLLED);
    test_shared_plan(SPF_STRATEGY_GENERIC);
    return check_report();
}

#endif /* SPF_HAVE_CUDA */
