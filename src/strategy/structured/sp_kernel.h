/* The structured kernel (kernels/sp_spmm.cu), precompiled by nvcc for sm_80
 * and sm_90, over the structured format (sp_format.h). C-callable.
 *
 * A block takes rt row tiles of 16 rows (grid.x) and 8·nb columns of B and
 * C (grid.y); its warps split the step pairs of K (warp w takes pairs w,
 * w + warps, ...). Per step pair a warp loads its A fragments and metadata
 * straight from the format (one 16-byte load per step and tile, one
 * 4-byte load of metadata for both steps: the format is in register
 * order), loads its B fragments from global memory (B is small at the
 * sizes this is for; L1 and L2 serve the rows the other blocks read too),
 * gathering the kept rows for V:2:M, and issues mma.sp m16n8k32 per tile
 * and 8 columns, the next pair's A loads in flight. The warps' sums meet
 * in shared memory; the block applies the epilogue (+ bias[row], ReLU,
 * the dtype, C's layout by its strides).
 *
 * No workspace and no atomics: every row's sums are added in one block,
 * in a fixed order, so results do not change from run to run and launches
 * of one plan may run on several streams at once. */
#ifndef SPF_STRATEGY_STRUCTURED_SP_KERNEL_H
#define SPF_STRATEGY_STRUCTURED_SP_KERNEL_H

#include "plan/problem.h"
#include "spforge.h"
#include "strategy/structured/sp_format.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A kernel configuration; nb and rt are template parameters. */
typedef struct sp_config {
    int nb;    /* 8-column blocks of B and C per block: 1, 2, 4 or 8      */
    int rt;    /* row tiles of 16 per block: 1 or 2 (≤ V / 16 for V:2:M)  */
    int warps; /* warps per block, splitting K: 1 to 16 (8 for nb ≥ 4)    */
} sp_config;

/* The format on the device. */
typedef struct sp_device {
    int64_t rows, cols, tiles, pairs;
    spf_dtype dtype;
    sp_pattern pattern;
    uint32_t *values, *meta;
    int32_t *gather; /* NULL for 2:4 */
    int64_t bytes;   /* device bytes held */
} sp_device;

spf_status sp_device_upload(const sp_format *f, sp_device *out);
void sp_device_release(sp_device *d);

/* The narrowest nb whose 8·nb columns hold min(n, 64). */
int sp_nb_for(int64_t n);

/* Why config c cannot run on pattern p (NULL when it can). */
const char *sp_config_refusal(const sp_config *c, const sp_pattern *p);

/* Dynamic shared memory of a block of c: the warps' sums, bytes. */
size_t sp_config_smem(const sp_config *c);

/* "nb2_rt2_w8", for plan info, logs and the cache. */
void sp_config_name(const sp_config *c, char *buf, size_t size);
spf_status sp_config_from_name(const char *name, sp_config *out);

/* Blocks of c an SM holds (registers, shared memory), 0 when it cannot
 * launch; needs a device. */
spf_status sp_config_occupancy(const sp_config *c, const sp_device *d, int *blocks);

/* C = A·B (+ bias[row]) (ReLU) with op's B and C (plan/problem.h) in the
 * format's dtype. No allocation, no synchronization. */
spf_status sp_launch(const sp_device *d, const sp_config *c, const spmm_operands *op,
                     void *stream);

#ifdef __cplusplus
}
#endif

#endif
