/* Proxy-based evaluation (LO-SpMM §5): time a cheap proxy (strategy/unrolled/proxy.h)
 * for each candidate configuration instead of compiling its real kernel.
 * Candidates are grouped by shape (m1, v, prefetch, ksplit); each shape's
 * proxy is generated once for all its n1 values (§5.1), all proxies are
 * assembled in one parallel ptxas batch, then each is linked and loaded and
 * launched once per candidate with that candidate's grid and block and the
 * dynamic shared memory that gives the proxy the real kernel's occupancy
 * (§5.2: NUM_ATB of Eq. 5 from the forecast registers, shared memory of
 * Eq. 6 from the device's shared memory per SM and its reserved amount per
 * block, both queried). Only the ranking of the proxy times means anything. */
#ifndef SPF_STRATEGY_UNROLLED_PROXY_EVAL_H
#define SPF_STRATEGY_UNROLLED_PROXY_EVAL_H

#include "strategy/unrolled/proxy.h"
#include "gpu/selfcheck.h"
#include "strategy/unrolled/row_orders.h"
#include "spforge.h"

typedef struct proxy_candidate {
    spf_status status;     /* SPF_OK when timed; else why not (proxy_us is +inf)        */
    int proxy;             /* index of its shape's proxy within the call               */
    int clusters;          /* tile functions of that proxy                             */
    int active_blocks;     /* NUM_ATB of the real kernel (Eq. 5)                       */
    int occupancy;         /* blocks per SM the proxy launch allows, as the runtime
                              computes it (cudaOccupancyMaxActiveBlocksPerMultiprocessor;
                              -1 if that query failed)                               */
    int64_t shared_bytes;  /* dynamic shared memory per block of the launch            */
    int registers;         /* the proxy's, as loaded                                   */
    int spill_bytes;       /* the proxy's, from ptxas                                  */
    int64_t code_bytes;    /* the proxy's PTX                                          */
} proxy_candidate;

typedef struct proxy_request {
    const spf_matrix *a;         /* borrowed                                            */
    int64_t n;
    spf_dtype dtype;
    int f16x2_accumulate, bias, relu;
    const row_orders *orders;    /* the row order of each m1 (LO-SpMM §4), or NULL for
                                    the identity everywhere; borrowed                    */
    int ptx_sm, sass_sm;         /* PTX .target (80 or 90) and ptxas -arch              */
    int threads;                 /* host threads for generation and ptxas, 0 = all cores */
    selfcheck *check;            /* device buffers on the current device: the proxies read
                                    check->b (k × n of dtype) and, with bias, check->bias,
                                    and write meaningless values inside check->c (m × n) */
    proxy_smem_policy smem;      /* default (0) PROXY_SMEM_EQ6                          */
    void *stream;                /* cudaStream_t for the launches, NULL the default     */
    proxy_candidate *details;    /* NULL, or count entries to fill                      */
} proxy_request;

typedef struct proxy_timings {
    double build_s;   /* generating every proxy's PTX, side by side (wall)            */
    double compile_s; /* ptxas over all proxies in one parallel batch, then linking and
                         loading them (wall)                                          */
    double load_s;    /* the linking and loading part of compile_s                    */
    double run_s;     /* timing every candidate's proxy launch (wall)                 */
    int proxies;      /* proxies generated (distinct shapes)                          */
    int failed;       /* candidates without a time                                    */
} proxy_timings;

/* Time the proxy of each of cands[0 .. count) (valid configurations for
 * q->n) on the current device: proxy_us[i] is the median µs per launch
 * (timing.h), or +inf when that candidate's proxy could not be generated,
 * compiled, loaded or run (its details say why; logged at WARN). Fails
 * only when the machinery does (bad arguments, out of memory, no device);
 * t (may be NULL) is filled either way. */
spf_status proxy_evaluate(const proxy_request *q, const spf_kernel_config *cands, int count,
                          double *proxy_us, proxy_timings *t);

#endif
