/* parallel_for: dynamic hand-out of fixed-size ranges through an atomic
 * counter, so uneven work (rows of different lengths, PTX functions of
 * different sizes) balances without a scheduler. */
#include "core/parallel.h"

#include "core/error.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

enum { MAX_THREADS = 1024 };

typedef struct loop {
    int64_t count, grain;
    parallel_body body;
    void *ctx;
    atomic_llong next;     /* first index not yet handed out            */
    atomic_int failed;     /* set once; workers stop taking ranges      */
    pthread_mutex_t lock;  /* guards status and detail of the first failure */
    spf_status status;
    char detail[1024];
} loop;

typedef struct worker_arg {
    loop *l;
    int worker;
} worker_arg;

int parallel_default_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        return 1;
    return n > MAX_THREADS ? MAX_THREADS : (int)n;
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
