/* Launches of one plan one after another on the GPU, for a plan that keeps
 * device scratch between its launches (a cuBLASLt workspace, the tc
 * kernels' split-window workspace): each launch waits for an event the
 * previous one recorded, under a lock that keeps wait, launch and record
 * together, so that launches from several threads and streams never share
 * the scratch at once, without a host synchronization. Inside a stream
 * capture the graph's own order holds, and the launch runs as is. */
#ifndef SPF_GPU_LAUNCH_ORDER_H
#define SPF_GPU_LAUNCH_ORDER_H

#include "spforge.h"

#include <pthread.h>

typedef struct launch_order {
    void *done;           /* cudaEvent_t: the last launch; NULL when not made */
    pthread_mutex_t lock; /* orders wait, launch and record of done           */
} launch_order;

/* what: for the message when the lock cannot be made. */
spf_status launch_order_init(launch_order *o, const char *what);
void launch_order_release(launch_order *o); /* accepts a zeroed one */

typedef spf_status (*launch_order_fn)(const void *ctx, void *stream);

/* fn(ctx, stream), ordered after the previous launch through o. */
spf_status launch_ordered(const launch_order *o, launch_order_fn fn, const void *ctx,
                          void *stream);

#endif
