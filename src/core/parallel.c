/* parallel_for: dynamic hand-out of fixed-size ranges through an atomic
 * counter, so uneven work (rows of different lengths, PTX functions of
 * different sizes) balances without a scheduler. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT; pthread_condattr_setclock, clock_gettime */

#include "core/parallel.h"

#include "core/error.h"
#include "core/log.h"
#include "core/progress.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { MAX_THREADS = 1024 };

typedef struct loop {
    int64_t count, grain;
    parallel_body body;
    void *ctx;
    atomic_llong next;     /* first index not yet handed out            */
    atomic_int failed;     /* set once; workers stop taking ranges      */
    pthread_mutex_t lock;  /* guards status and detail of the first failure,
                              and running                                  */
    spf_status status;
    char detail[1024];
    /* parallel_for_progress only */
    atomic_llong done;     /* items finished                               */
    int running;           /* worker threads not yet returned              */
    int watched;           /* a thread returning signals `ended`           */
    pthread_cond_t ended;
} loop;

typedef struct worker_arg {
    loop *l;
    int worker;
} worker_arg;

/* A thread count from the environment variable name: its value if it is a
 * positive integer (OMP_NUM_THREADS: the first of its list), else 0, with
 * a warning for a value that is not one. */
static long threads_from_env(const char *name)
{
    const char *text = getenv(name);
    if (!text || !text[0])
        return 0;
    char *end = NULL;
    long n = strtol(text, &end, 10);
    if (n >= 1 && end != text && (*end == '\0' || (*end == ',' && strcmp(name, "OMP_NUM_THREADS") == 0)))
        return n;
    log_msg(SPF_LOG_WARN, "%s=%s: not a positive thread count, ignored", name, text);
    return 0;
}

/* The CPUs a cgroup's quota gives (cgroup v2's cpu.max "QUOTA PERIOD", v1's
 * cfs_quota_us and cfs_period_us), rounded up; 0 for no quota. */
static long cgroup_cpus(void)
{
    long long quota = -1, period = 0;
    FILE *f = fopen("/sys/fs/cgroup/cpu.max", "r");
    if (f) {
        if (fscanf(f, "%lld %lld", &quota, &period) != 2)
            quota = -1; /* "max PERIOD": no quota */
        fclose(f);
    } else if ((f = fopen("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "r")) != NULL) {
        if (fscanf(f, "%lld", &quota) != 1)
            quota = -1;
        fclose(f);
        if ((f = fopen("/sys/fs/cgroup/cpu/cpu.cfs_period_us", "r")) != NULL) {
            if (fscanf(f, "%lld", &period) != 1)
                period = 0;
            fclose(f);
        }
    }
    if (quota <= 0 || period <= 0)
        return 0;
    return (long)((quota + period - 1) / period);
}

/* The default, worked out once: $SPFORGE_THREADS, else $OMP_NUM_THREADS,
 * else the CPUs this process may run on (its affinity mask, within a
 * cgroup's CPU quota), else the online cores. */
static int default_threads;
static pthread_once_t default_once = PTHREAD_ONCE_INIT;

static void default_threads_find(void)
{
    long n = threads_from_env("SPFORGE_THREADS");
    if (!n)
        n = threads_from_env("OMP_NUM_THREADS");
    if (!n) {
        cpu_set_t set;
        n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set)
                                                        : sysconf(_SC_NPROCESSORS_ONLN);
        long quota = cgroup_cpus();
        if (quota > 0 && quota < n)
            n = quota;
    }
    default_threads = n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (int)n;
}

int parallel_default_threads(void)
{
    pthread_once(&default_once, default_threads_find);
    return default_threads;
}

int parallel_workers(int64_t count, int64_t grain, int threads)
{
    if (threads <= 0)
        threads = parallel_default_threads();
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    if (grain < 1)
        grain = 1;
    int64_t grains = count / grain + (count % grain != 0);
    if (grains < threads)
        threads = grains < 1 ? 1 : (int)grains;
    return threads;
}

static void run_worker(loop *l, int worker)
{
    while (!atomic_load(&l->failed)) {
        int64_t begin = atomic_fetch_add(&l->next, l->grain);
        if (begin >= l->count)
            return;
        int64_t end = l->count - begin < l->grain ? l->count : begin + l->grain;
        spf_status st = l->body(l->ctx, begin, end, worker);
        if (st == SPF_OK)
            atomic_fetch_add(&l->done, end - begin);
        if (st != SPF_OK) {
            /* The detail message is thread-local: copy it for the caller. */
            pthread_mutex_lock(&l->lock);
            if (!atomic_load(&l->failed)) {
                l->status = st;
                snprintf(l->detail, sizeof l->detail, "%s", spf_last_error());
                atomic_store(&l->failed, 1);
            }
            pthread_mutex_unlock(&l->lock);
            return;
        }
    }
}

static void *thread_main(void *p)
{
    worker_arg *w = p;
    run_worker(w->l, w->worker);
    if (w->l->watched) {
        pthread_mutex_lock(&w->l->lock);
        w->l->running--;
        pthread_cond_signal(&w->l->ended);
        pthread_mutex_unlock(&w->l->lock);
    }
    return NULL;
}

spf_status parallel_for(int64_t count, int64_t grain, int threads, parallel_body body, void *ctx)
{
    if (count <= 0)
        return SPF_OK;
    if (grain < 1)
        grain = 1;
    int workers = parallel_workers(count, grain, threads);
    loop l = {.count = count, .grain = grain, .body = body, .ctx = ctx, .status = SPF_OK};
    atomic_init(&l.next, 0);
    atomic_init(&l.failed, 0);
    atomic_init(&l.done, 0);
    pthread_mutex_init(&l.lock, NULL);

    pthread_t tid[MAX_THREADS];
    worker_arg args[MAX_THREADS];
    int started = 0;
    for (int w = 1; w < workers; w++) {
        args[w] = (worker_arg){&l, w};
        if (pthread_create(&tid[started], NULL, thread_main, &args[w]) != 0)
            break; /* fewer threads: the ranges are shared out among those running */
        started++;
    }
    run_worker(&l, 0);
    for (int t = 0; t < started; t++)
        pthread_join(tid[t], NULL);
    pthread_mutex_destroy(&l.lock);
    if (l.status != SPF_OK)
        return FAIL(l.status, "%s", l.detail);
    return SPF_OK;
}

/* The calling thread's watch over `started` workers: wake when one
 * returns or PROGRESS_STEP_INTERVAL_S has passed, report the items done;
 * a cancellation stops the hand-out. Returns the cancellation, or SPF_OK. */
static spf_status watch(loop *l, spf_stage stage)
{
    spf_status cancel = SPF_OK;
    pthread_mutex_lock(&l->lock);
    while (l->running > 0) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        long ns = until.tv_nsec + (long)(PROGRESS_STEP_INTERVAL_S * 1e9);
        until.tv_sec += ns / 1000000000L;
        until.tv_nsec = ns % 1000000000L;
        pthread_cond_timedwait(&l->ended, &l->lock, &until);
        pthread_mutex_unlock(&l->lock);
        spf_status st = progress_step(stage, (int64_t)atomic_load(&l->done));
        if (st != SPF_OK && cancel == SPF_OK) {
            cancel = st;
            atomic_store(&l->failed, 1); /* workers take no more ranges */
        }
        pthread_mutex_lock(&l->lock);
    }
    pthread_mutex_unlock(&l->lock);
    return cancel;
}

spf_status parallel_for_progress(spf_stage stage, int64_t count, int64_t grain, int threads,
                                 parallel_body body, void *ctx)
{
    if (count <= 0 || !progress_active())
        return parallel_for(count, grain, threads, body, ctx);
    if (grain < 1)
        grain = 1;
    int workers = parallel_workers(count, grain, threads);
    loop l = {.count = count, .grain = grain, .body = body, .ctx = ctx, .status = SPF_OK,
              .watched = 1};
    atomic_init(&l.next, 0);
    atomic_init(&l.failed, 0);
    atomic_init(&l.done, 0);
    pthread_mutex_init(&l.lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&l.ended, &attr);
    pthread_condattr_destroy(&attr);

    pthread_t tid[MAX_THREADS];
    worker_arg args[MAX_THREADS];
    int started = 0;
    for (int w = 0; w < workers; w++) {
        args[w] = (worker_arg){&l, w};
        pthread_mutex_lock(&l.lock);
        l.running++;
        pthread_mutex_unlock(&l.lock);
        if (pthread_create(&tid[started], NULL, thread_main, &args[w]) != 0) {
            pthread_mutex_lock(&l.lock);
            l.running--;
            pthread_mutex_unlock(&l.lock);
            break; /* fewer threads: the ranges are shared out among those running */
        }
        started++;
    }
    spf_status cancel = SPF_OK;
    if (started == 0) {
        l.watched = 0;
        run_worker(&l, 0); /* no thread at all: the work itself, reported at its end */
    } else {
        cancel = watch(&l, stage);
    }
    for (int t = 0; t < started; t++)
        pthread_join(tid[t], NULL);
    pthread_cond_destroy(&l.ended);
    pthread_mutex_destroy(&l.lock);
    if (cancel != SPF_OK)
        return progress_check();
    if (l.status != SPF_OK)
        return FAIL(l.status, "%s", l.detail);
    return progress_step(stage, (int64_t)atomic_load(&l.done));
}
