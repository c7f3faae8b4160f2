/* The tensor-core SpMM kernels over the tc format (issue 11 item 2),
 * precompiled by nvcc for sm_80 and sm_90 (kernels/tc_spmm.cu). C-callable.
 *
 * One warp computes one unit: a row window's tiles from tile_begin to
 * tile_end against 8·NT columns of B (grid.y walks the column blocks). Per
 * tile it copies the masks, the packed values and the 16 rows of B the
 * tile needs into a shared-memory stage with cp.async, `stages` tiles
 * ahead (the multi-stage pipeline of Acc-SpMM §3.3, per warp so that no
 * block barrier is needed); expands the tile into mma A fragments in
 * registers from the bitmap (each lane's two values of a quadrant are at
 * the popcount of the mask bits below its own: SpInfer's TCA-BME decode,
 * Acc-SpMM's BitTCF); and issues mma.sync m16n8k16 (fp16, bf16) or two
 * m16n8k8 (TF32) per n8 column tile, accumulating in fp32.
 *
 * A window whose tiles were split over several units (load balancing:
 * tc_units_build) adds its partial sums into an fp32 workspace; the last
 * unit of the window to finish (a counter per window and column block)
 * applies the epilogue and leaves workspace and counter zeroed for the
 * next launch. Launches of one plan must therefore not overlap: they are
 * ordered on one stream, like every plan's launches.
 *
 * Epilogue: + bias[row], ReLU, conversion to the dtype, stores through the
 * strides of C's layout, predicated on M and N. */
#ifndef SPF_STRATEGY_TC_TC_KERNEL_H
#define SPF_STRATEGY_TC_TC_KERNEL_H

#include "spforge.h"
#include "plan/problem.h"
#include "strategy/tc/tc_format.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A launch configuration: the template and run-time parameters. */
typedef struct tc_config {
    int nt;     /* n8 column tiles per warp: 1, 2, 4 or 8 (template)  */
    int stages; /* tiles in flight per warp: 2 .. TC_MAX_STAGES      */
    int warps;  /* warps per block: 2, 4 or 8                         */
    int split;  /* 1: windows split (unit kernel: into units by
                   tc_units_build's cost model; group kernel: K into
                   parts); 0: a window whole                           */
    int group;  /* 1: the group kernel (BLOCKED formats: a block's warps
                   share B's staged rows); 0: the unit kernel            */
} tc_config;

enum { TC_MAX_STAGES = 4 };

/* A warp's shared-memory stage, one tile, for elements of ES bytes and NB
 * = 8·nt columns: the masks (32 bytes), up to 256 values, and B's 16 rows
 * staged [k][n] with pitch TC_PITCH_KN (B K×N) or its NB rows [n][k] with
 * pitch TC_PITCH_NK (B N×K). Pitches are odd multiples of 16 bytes (8
 * words for TF32) so that ldmatrix and the fragment reads hit distinct
 * banks. Shared by the kernels and the host's occupancy model. */
#define TC_PITCH_KN(nb) ((nb) % 16 == 0 ? (nb) + 8 : (nb))
#define TC_PITCH_NK(es) ((es) == 2 ? 24 : 20)
#define TC_TILE_BYTES(es) (32 + 256 * (es))
#define TC_B_BYTES(es, nb, bnk) (((bnk) ? (nb) * TC_PITCH_NK(es) : 16 * TC_PITCH_KN(nb)) * (es))
#define TC_STAGE_BYTES(es, nb, bnk) (TC_TILE_BYTES(es) + TC_B_BYTES(es, nb, bnk))
/* The group kernel's stage: B's rows once, then a tile per warp. */
#define TC_GROUP_STAGE_BYTES(es, nb, bnk, warps)                                              \
    (TC_B_BYTES(es, nb, bnk) + (warps) * TC_TILE_BYTES(es))

/* One unit of work (16 bytes on the device). parts > 1: the window was
 * split and the unit adds into the workspace. */
typedef struct tc_unit {
    int32_t window, parts, tile_begin, tile_end;
} tc_unit;

/* The format on the device, with what a launch needs besides B and C. */
typedef struct tc_device {
    int64_t rows, cols, windows, tiles;
    spf_dtype dtype;
    tc_format_mode mode;
    int64_t *window_tile;   /* windows + 1 */
    int32_t *tile_col;      /* device copies of the format's arrays */
    int64_t *tile_value;
    uint64_t *tile_mask;
    void *values;
    int64_t *window_col;    /* CONDENSED only */
    int32_t *col_list;
    int32_t *row_map;       /* rows: C row of each row of the format (a reordering), or NULL */
    int64_t bytes;          /* device bytes held (format, map, units, workspace) */
} tc_device;

/* The units of one split policy on the device, and the workspace and
 * counters they need. */
typedef struct tc_schedule {
    int split;              /* as asked: 0 or 1 */
    int32_t ksplit;         /* group kernel: parts of K (1: none) */
    int32_t units;          /* unit kernel */
    int32_t max_parts;      /* the most units of one window */
    tc_unit *unit;          /* device, units */
    float *workspace;       /* device, zeroed: windows·16 × n rounded up to the
                               column block (only when max_parts > 1) */
    int32_t *counters;      /* device, zeroed: windows × column blocks */
    int64_t bytes;
} tc_schedule;

/* Upload f (row_map: f->rows C rows of the format's rows, or NULL for the
 * identity). Zeroes *out first; releases what it made on failure. */
spf_status tc_device_upload(const tc_format *f, const int32_t *row_map, tc_device *out);
void tc_device_release(tc_device *d);

/* The units of the load-balancing cost model (Acc-SpMM §3.4): windows
 * with more tiles than a target are split into equal parts, so that the
 * units fill sms × resident warps about `waves` times over, then sorted by
 * decreasing tiles (heavy units start first, light ones fill the tail).
 * split = 0: one unit per window, in window order. Host only; units is
 * allocated (mem_free). */
spf_status tc_units_build(const tc_format *f, int split, int sms, int resident_warps,
                          tc_unit **units, int32_t *count, int32_t *max_parts);

/* The cuts of the load-balancing cost model, shared by the schedules and
 * the rank model (tc_rank.h) so that the model ranks what launches.
 * tc_unit_chunk: the most tiles of a split unit, so that the units fill
 * sms × resident_warps slots once (at least 8). tc_group_parts: the K
 * parts of the group kernel, so that its blocks (windows / warps groups ×
 * col_blocks × parts) fill the device once, at least 8 column blocks of 16
 * a part. */
int64_t tc_unit_chunk(int64_t tiles, int sms, int resident_warps);
int32_t tc_group_parts(int64_t windows, int64_t cols, int64_t col_blocks, int warps, int sms,
                       int resident_warps);

/* The schedule of config c for f on the device for n columns, on sms SMs
 * holding resident_warps warps of c each. The group kernel splits K into
 * parts so that its blocks fill the device about once (at least 8 column
 * blocks a part). */
spf_status tc_schedule_make(const tc_format *f, const tc_config *c, int64_t n, int sms,
                            int resident_warps, tc_schedule *out);
void tc_schedule_release(tc_schedule *s);

/* Why config c cannot run problems of this dtype, math and layouts (NULL
 * when it can): bad parameters, CONDENSED format with B as N×K or with
 * the group kernel. */
const char *tc_config_refusal(const tc_config *c, spf_dtype dtype, spf_layout b_layout,
                              tc_format_mode mode);

/* Dynamic shared memory of a block of config c, bytes. */
size_t tc_config_smem(const tc_config *c, spf_dtype dtype, spf_layout b_layout);

/* "nt2_s3_w4_split", "nt2_s3_w8_group": for plan info, logs and the
 * cache. */
void tc_config_name(const tc_config *c, char *buf, size_t size);
spf_status tc_config_from_name(const char *name, tc_config *out);

/* Blocks of config c an SM can hold (occupancy from registers and shared
 * memory), 0 when it cannot launch; needs a device. */
spf_status tc_config_occupancy(const tc_config *c, spf_dtype dtype, spf_layout b_layout,
                               int *blocks);

/* C = A·B (+ bias[row]) (ReLU) with A on the device and op's B and C in
 * their layouts (plan/problem.h); math TF32 for f32, DEFAULT for f16 /
 * bf16. No allocation, no synchronization. */
spf_status tc_launch(const tc_device *d, const tc_schedule *s, const tc_config *c,
                     const spmm_operands *op, void *stream);

#ifdef __cplusplus
}
#endif

#endif
