/* The panel kernel (kernels/panel_spmm.cu), precompiled by nvcc for sm_80
 * and sm_90, over the panel format (panel_format.h). C-callable.
 *
 * A block takes `rows` consecutive rows of A and a column block of nc
 * columns of B and C (grid.y), and walks K panel by panel: all its threads
 * copy the panel's rows of B (nc columns) into shared memory, the next
 * panel's copy in flight (cp.async) while the warps multiply the current
 * one. A warp takes one row at a time: its lanes take the row's entries of
 * the panel 32 apart, each multiplying its entries' B rows into nc fp32
 * sums, and the warp then adds the lanes' sums across lanes by halving
 * exchanges (nc values to one a lane in log2(nc) shuffles of halves) into
 * a per-block fp32 accumulator of rows × nc in shared memory. After the
 * last panel the block applies the epilogue (+ bias[row], ReLU, the dtype,
 * C's layout by its strides).
 *
 * The tensor-core engine (mma = 1) walks the same panels with the same
 * staging, but a warp takes eight rows (an octet) and multiplies 16
 * entries of one row at a time with one mma.m16n8k16: the A operand is the
 * 16 entries' rows of the staged B, transposed and gathered by ldmatrix
 * (each lane points at one entry's row), the B operand holds the 16
 * values in the octet column of the row and zeros in the other seven, so
 * that the accumulator's column j sums row j of the octet. Per 16 entries
 * that is about 20 warp instructions against the CUDA-core engine's 45 a
 * lane per entry over 32 entries (about 1.4 a nonzero in all, measured
 * with Nsight Compute at 3.9). When a block has more warps than octets,
 * the octet's rows are shared among warps (rows j ≡ s mod shares), so no
 * two warps add into one row's sums. A zero in the B operand still
 * multiplies the gathered rows: an inf or NaN in a row of B spreads to
 * the other rows of the octet, as in a dense product.
 *
 * No workspace and no atomics: every row's panels are summed by one block,
 * so launches of one plan may run on several streams at once. */
#ifndef SPF_STRATEGY_PANEL_PANEL_KERNEL_H
#define SPF_STRATEGY_PANEL_PANEL_KERNEL_H

#include "plan/problem.h"
#include "spforge.h"
#include "strategy/panel/panel_format.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A kernel configuration. nc and mma are template parameters. */
typedef struct panel_config {
    int nc;    /* columns of B and C per block: 8, 16 or 32 on CUDA cores,
                  16, 32 or 64 on tensor cores                             */
    int warps; /* warps per block: 4, 8 or 16                              */
    int width; /* the format's panel width: a multiple of 8, ≤ 65536      */
    int rows;  /* rows of A per block: 1 .. PANEL_MAX_ROWS                 */
    int mma;   /* 1: the tensor-core engine, 0: CUDA cores                 */
} panel_config;

enum { PANEL_MAX_ROWS = 512 };

/* The format on the device. */
typedef struct panel_device {
    int64_t rows, cols;
    spf_dtype dtype;
    int32_t width, panels;
    int32_t *ptr;
    uint32_t *entry;
    int64_t bytes; /* device bytes held */
} panel_device;

spf_status panel_device_upload(const panel_format *f, panel_device *out);
void panel_device_release(panel_device *d);

/* The narrowest column block of the engine that holds n columns: 8, 16,
 * then 32 on CUDA cores; 16, 32, then 64 on tensor cores (an mma takes 16
 * columns of B). */
int panel_nc_for(int mma, int64_t n);

/* Why config c cannot run (NULL when it can) with a format of `width`. */
const char *panel_config_refusal(const panel_config *c, int32_t width);

/* Dynamic shared memory of a block of config c: two panels of B and the
 * accumulator, bytes. */
size_t panel_config_smem(const panel_config *c);

/* Rows per block for an m-row matrix: one wave of sms × blocks_per_sm
 * blocks over the column blocks of n, at most PANEL_MAX_ROWS. Host only. */
int panel_rows_for(int64_t m, int64_t n, int nc, int sms, int blocks_per_sm);

/* "nc16_w8_p2048_r32" (CUDA cores), "mma_nc16_w8_p2048_r32" (tensor
 * cores), for plan info, logs and the cache. */
void panel_config_name(const panel_config *c, char *buf, size_t size);
spf_status panel_config_from_name(const char *name, panel_config *out);

/* Blocks of config c an SM holds (registers, shared memory), 0 when it
 * cannot launch; needs a device. */
spf_status panel_config_occupancy(const panel_config *c, spf_dtype dtype, spf_layout b_layout,
                                  int *blocks);

/* C = A·B (+ bias[row]) (ReLU) with op's B and C (plan/problem.h) in
 * fp16 or bf16 as the format. No allocation, no synchronization. */
spf_status panel_launch(const panel_device *d, const panel_config *c, const spmm_operands *op,
                        void *stream);

#ifdef __cplusplus
}
#endif

#endif
