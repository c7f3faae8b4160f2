/* The tcfrag kernel (kernels/frag_spmm.cu), precompiled by nvcc for sm_80
 * and sm_90, over the fragment stream (frag_format.h). C-callable.
 *
 * A block of `warps` warps takes `warps` consecutive groups of windows
 * (a row block) and one part of K; grid.y walks column blocks of 8·nt
 * columns of B and C. Chunk by chunk, each warp copies its group's
 * records into its own shared-memory stage, and all threads copy the
 * chunk's rows of B into the block's stage, both with cp.async, `stages`
 * chunks in flight (the multi-stage pipeline of Acc-SpMM §3.3, one block
 * barrier a chunk). Per k-step a warp loads its B fragments with ldmatrix
 * once and multiplies every window of its group with them: the B traffic
 * of a tile is 1/group of a k-step's.
 *
 * K parts (split-K for small N: a 4096 × 4096 layer has 256 windows, too
 * few warps to cover 132 SMs) meet in an fp32 workspace: each block adds
 * its sums (red.global.add; .v2 on sm_90), and the last block of a row
 * block and column block to arrive (a counter) applies the epilogue and
 * leaves workspace and counter zeroed. The plan's launches are ordered on
 * one stream (gpu/launch_order.h).
 *
 * Epilogue: + bias[row], ReLU, conversion to the dtype, C's layout by its
 * strides, rows and columns predicated. */
#ifndef SPF_STRATEGY_TCFRAG_FRAG_KERNEL_H
#define SPF_STRATEGY_TCFRAG_FRAG_KERNEL_H

#include "spforge.h"
#include "plan/problem.h"
#include "strategy/tcfrag/frag_format.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A kernel configuration. group and nt are template parameters. */
typedef struct frag_config {
    int group;  /* windows a warp multiplies with one B fragment: 1, 2, 4   */
    int nt;     /* n8 column tiles per block: 2, 4 or 8 (group · nt ≤ 16)  */
    int warps;  /* warps per block: 4 or 8                                 */
    int stages; /* chunks in flight: 2 or 3                                */
} frag_config;

/* Shared-memory pitches of B's stage, in elements: odd multiples of 16
 * bytes, so ldmatrix's eight row addresses hit distinct banks. B K×N is
 * staged [k][n] (FRAG_CHUNK_STEPS·16 rows), B N×K as [n][k] (8·nt rows). */
#define FRAG_PITCH_KN(nb) ((nb) + 8)
#define FRAG_PITCH_NK (FRAG_CHUNK_STEPS * 16 + 8)

/* The format and a launch's fixed arrays on the device. */
typedef struct frag_device {
    int64_t rows, cols, groups;
    spf_dtype dtype;
    int group;
    int32_t chunks;
    int64_t largest;       /* the format's largest group chunk, bytes   */
    unsigned char *data;
    int64_t *offset;
    int32_t *chunk_step;
    int32_t *row_map;      /* C row of each format row, or NULL        */
    int64_t bytes;         /* device bytes held                        */
} frag_device;

/* How a launch cuts K, and the workspace the parts meet in. */
typedef struct frag_schedule {
    int32_t ksplit;        /* K parts (1: none)                         */
    float *workspace;      /* device, zeroed: row blocks · warps · group ·
                              16 rows × column blocks · 8·nt            */
    int32_t *counters;     /* device, zeroed: row blocks × column blocks */
    int64_t bytes;
} frag_schedule;

spf_status frag_device_upload(const frag_format *f, const int32_t *row_map, frag_device *out);
void frag_device_release(frag_device *d);

/* K parts for config c: the most that keep row blocks × column blocks ×
 * parts within one wave of sms × blocks_per_sm, each part at least one
 * chunk. Host only. */
int32_t frag_parts(int64_t groups, int32_t chunks, int64_t n, const frag_config *c, int sms,
                   int blocks_per_sm);

/* The schedule of config c for n columns (frag_parts); a workspace only
 * when K is cut. */
spf_status frag_schedule_make(const frag_device *d, const frag_config *c, int64_t n, int sms,
                              int blocks_per_sm, frag_schedule *out);
void frag_schedule_release(frag_schedule *s);

/* Why config c cannot run (NULL when it can) with a format of `group`. */
const char *frag_config_refusal(const frag_config *c, int group);

/* Dynamic shared memory of a block of config c, bytes. */
size_t frag_config_smem(const frag_config *c, spf_layout b_layout);

/* "g2_nt2_w4_s3", for plan info, logs and the cache. */
void frag_config_name(const frag_config *c, char *buf, size_t size);
spf_status frag_config_from_name(const char *name, frag_config *out);

/* Blocks of config c an SM holds (registers, shared memory), 0 when it
 * cannot launch; needs a device. */
spf_status frag_config_occupancy(const frag_config *c, spf_dtype dtype, spf_layout b_layout,
                                 int *blocks);

/* C = A·B (+ bias[row]) (ReLU) with op's B and C (plan/problem.h) in
 * fp16 or bf16 as the format. No allocation, no synchronization. */
spf_status frag_launch(const frag_device *d, const frag_schedule *s, const frag_config *c,
                       const spmm_operands *op, void *stream);

#ifdef __cplusplus
}
#endif

#endif
