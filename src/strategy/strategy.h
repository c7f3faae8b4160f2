/* The strategy table (DESIGN.md decision 7): the one interface every
 * execution strategy implements, and the list of them. A strategy lives in
 * src/strategy/<name>/ and is one row of strategy_table (table.c); nothing
 * outside its folder and the table switches on which strategy a plan
 * holds. The planner (plan/planner.h) asks every row whether it supports a
 * problem and what it would cost; the plan (plan/plan.c) builds, times,
 * self-checks, caches and launches through the row it kept.
 *
 * Adding a strategy: a value in spf_strategy (include/spforge.h), a folder
 * src/strategy/<name>/ whose C file defines `const strategy strategy_<name>`
 * (and its kernels/ folder of .cu files, compiled by nvcc when CUDA is
 * there), and its row in
 * table.c. */
#ifndef SPF_STRATEGY_STRATEGY_H
#define SPF_STRATEGY_STRATEGY_H

#include "gpu/selfcheck.h"
#include "plan/problem.h"
#include "spforge.h"

#include <stddef.h>

struct tune_log;

/* What a build may use besides the problem. */
typedef struct strategy_env {
    const spf_plan_options *options; /* the request, checked (a strategy reads its own
                                        options: the unrolled one its search and tuning) */
    const spf_device_info *device;   /* the plan's device (current); NULL for host ones */
    selfcheck *check;                /* the problem's device buffers, prepared, for a
                                        strategy that times or tunes while it builds;
                                        NULL when none were prepared                    */
    struct tune_log *log;            /* where a tuning strategy leaves its log, or NULL  */
} strategy_env;

/* A strategy's built state is its own type behind void *. */
typedef struct strategy {
    spf_strategy id;
    const char *name;  /* spf_strategy_name: lower case, one word            */
    int on_device;     /* 1: launches on a CUDA stream with device buffers;
                          0: runs on the host with host buffers (cpu)         */
    int floor;         /* 1: AUTO builds and times it whenever it is supported,
                          whatever the estimates say: the dense computation a
                          plan must never be slower than (DESIGN.md 7)        */

    /* 1 when the strategy can run on this machine at all, whatever the
     * problem: the libraries it loads are there (spforge info lists it);
     * else 0 with why in reason. NULL: it needs nothing but a device (when
     * on_device), which strategy_available checks for every row. */
    int (*available)(char *reason, size_t cap);

    /* 1 when the strategy can compute p on dev (NULL: no device) under o;
     * else 0 with a reason a user can read in reason (never empty). */
    int (*supports)(const problem *p, const spf_device_info *dev, const spf_plan_options *o,
                    char *reason, size_t cap);

    /* The planner's estimate of one launch, microseconds (> 0), from the
     * problem and the device only: CPU work, no GPU. */
    double (*estimate_us)(const problem *p, const spf_device_info *dev);

    /* Build for p: compile / load / upload, choose its own configuration,
     * fill what it knows of info (kernel_name, config, registers,
     * code_bytes, the compile and tune times, kernel_us and verify_error
     * when it measured them, device_bytes). On failure *state is NULL and
     * everything is released; SPF_ERR_UNSUPPORTED or SPF_ERR_COMPILE mean
     * "not this problem" (the planner goes on with the next candidate). */
    spf_status (*build)(const problem *p, const strategy_env *env, void **state,
                        spf_plan_info *info);

    /* C = A·B (+ bias) (ReLU) on stream with the buffers of spf_plan_execute:
     * no allocation, no synchronization (graph-capturable). */
    spf_status (*launch)(const void *state, const void *b, void *c, const float *bias,
                         void *stream);

    void (*release)(void *state); /* accepts NULL */

    /* The plan cache (plan/cache.h): encode what decode needs to rebuild the
     * state without searching or compiling (*bytes owned by the caller,
     * mem_free; NULL with size 0 when nothing is needed). decode gets info
     * as it was stored (kernel_name, config) and p with its matrix. NULL
     * encode: the strategy is not cached. */
    spf_status (*encode)(const void *state, unsigned char **bytes, size_t *size);
    spf_status (*decode)(const problem *p, const strategy_env *env, const spf_plan_info *info,
                         const unsigned char *bytes, size_t size, void **state);
} strategy;

/* The cache entry of a strategy that keeps only its config's name (tc,
 * tcfrag): encode copies the name into fresh bytes (mem_free); decode
 * copies the bytes back into name (cap bytes) as a string, SPF_ERR_PARSE
 * naming `what` when they cannot be one. */
spf_status strategy_encode_name(const char *name, unsigned char **bytes, size_t *size);
spf_status strategy_decode_name(const unsigned char *bytes, size_t size, const char *what,
                                char *name, size_t cap);

/* The rows of a strategy in a build without CUDA, where its supports()
 * refuses and none of them runs: build and launch fail with
 * SPF_ERR_NO_DEVICE, release does nothing. */
spf_status strategy_build_without_cuda(const problem *p, const strategy_env *env, void **state,
                                       spf_plan_info *info);
spf_status strategy_launch_without_cuda(const void *state, const void *b, void *c,
                                        const float *bias, void *stream);
void strategy_release_nothing(void *state);

/* Whether s can run here (dev: the device plans would use, NULL for
 * none): a device row needs an available device of compute capability 8.0
 * or later, then its own available(). 0 with why in reason. */
int strategy_available(const strategy *s, const spf_device_info *dev, char *reason, size_t cap);

/* The refusals the 16-bit tensor-core and cp.async rows share, in this
 * order: a build without CUDA, no device, a device older than compute
 * capability 8.0 ("<needs> needs compute capability 8.0 or later"), B and
 * C neither f16 nor bf16 ("f16 and bf16 only (<why_16>)"), a math other
 * than fp32 accumulation. 1 when none applies, else 0 with the reason. */
int strategy_supports_16bit(const problem *p, const spf_device_info *dev, const char *needs,
                            const char *why_16, char *reason, size_t cap);

/* Every strategy, in the order the planner lists them. */
extern const strategy *const strategy_table[];
extern const int strategy_count;

/* The row of id, or NULL (AUTO, unknown). */
const strategy *strategy_find(spf_strategy id);

#endif
