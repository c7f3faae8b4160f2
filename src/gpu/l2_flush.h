/* What makes a timed launch find its operands cold: a read of a buffer
 * twice the size of the device's L2 (src/gpu/kernels/l2_flush.cu) evicts
 * whatever the previous launch left there, as the other layers of a model
 * do between two calls of one layer. A read, not a memset: a write would
 * leave the L2 full of dirty lines that the timed kernel's own misses then
 * write back to HBM, a cost no model pays. C-callable. */
#ifndef SPF_GPU_L2_FLUSH_H
#define SPF_GPU_L2_FLUSH_H

#include "spforge.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct l2_flush {
    void *buffer; /* device, bytes long, zeroed; NULL when not made */
    size_t bytes;
    int blocks;   /* the read's grid: a few blocks per SM */
    double us;    /* its time per launch in graph replays, once timing_measure has
                     measured it (0 before): the same for every launch it precedes */
} l2_flush;

/* A flush for the current device: twice its L2. Fails on allocation. */
spf_status l2_flush_make(l2_flush *out);

/* Queue the read on stream (capturable: one kernel). */
spf_status l2_flush_launch(const l2_flush *f, void *stream);

void l2_flush_release(l2_flush *f); /* accepts a zeroed struct */

#ifdef __cplusplus
}
#endif

#endif
