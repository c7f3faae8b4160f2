/* The tensor-core sparse format (issue 11 item 1): A cut into row windows
 * of TC_TILE rows, each window into TC_TILE×TC_TILE tiles, the empty ones
 * skipped; a tile is four 64-bit masks, one per 8×8 quadrant, and its
 * nonzeros packed in the plan's dtype. A tile is the A operand of one
 * mma.m16n8k16 (fp16 / bf16) or two m16n8k8 (TF32), so a kernel expands it
 * into fragments in registers without a column index per nonzero: the
 * bitmap idea of SpInfer / Flash-LLM and of Acc-SpMM's BitTCF (paper 002
 * §3, there with 8×8 blocks).
 *
 * Two ways to place tiles along K:
 *   - BLOCKED: a tile covers TC_TILE consecutive columns starting at a
 *     multiple of TC_TILE (pruned weights: most blocks hold nonzeros).
 *   - CONDENSED: a window's distinct columns are listed once, in order,
 *     and a tile covers TC_TILE consecutive entries of that list (graphs:
 *     a window touches few columns, scattered; TC-GNN, DTC-SpMM and
 *     Acc-SpMM condense the same way). The list is padded to a multiple of
 *     TC_TILE with column 0, whose mask bits are 0.
 * TC_FORMAT_AUTO takes the one with fewer bytes.
 *
 * Bytes per weight decide the small-N regime (the kernel streams the
 * format): values dtype·nnz plus each tile's padding to 16 bytes (7 bytes
 * on average), masks 32 bytes and 12 bytes of offsets per tile, and for
 * CONDENSED 4 bytes per listed column. At 50 % density with fp16 values
 * that is 2·0.5 + 51/256 ≈ 1.2 bytes per weight against dense fp16's 2. */
#ifndef SPF_STRATEGY_TC_TC_FORMAT_H
#define SPF_STRATEGY_TC_TC_FORMAT_H

#include "spforge.h"

#include <stddef.h>
#include <stdint.h>

enum { TC_TILE = 16, TC_QUADRANTS = 4 };

typedef enum tc_format_mode {
    TC_FORMAT_AUTO = 0,
    TC_FORMAT_BLOCKED = 1,
    TC_FORMAT_CONDENSED = 2
} tc_format_mode;

typedef struct tc_format {
    int64_t rows, cols, nnz;
    spf_dtype dtype;          /* the values' storage                                  */
    tc_format_mode mode;      /* BLOCKED or CONDENSED (never AUTO once built)          */
    int64_t windows;          /* ceil(rows / TC_TILE)                                  */
    int64_t tiles;            /* non-empty tiles                                       */
    int64_t *window_tile;     /* windows + 1: the first tile of each window            */
    int32_t *tile_col;        /* tiles: BLOCKED: the first column; CONDENSED: the
                                 offset of its first column in the window's list       */
    uint64_t *tile_mask;      /* tiles × TC_QUADRANTS: quadrants in mma fragment order
                                 (rows 0-7 / cols 0-7, rows 8-15 / cols 0-7, rows 0-7 /
                                 cols 8-15, rows 8-15 / cols 8-15); bit 8·r + c        */
    int64_t *tile_value;      /* tiles + 1: the first value of each tile, a multiple of
                                 tc_value_align (16 bytes)                             */
    void *values;             /* tile_value[tiles] of dtype: per tile, quadrant by
                                 quadrant, in bit order, then zeros to the next tile    */
    int64_t *window_col;      /* CONDENSED: windows + 1 offsets into col_list, else NULL */
    int32_t *col_list;        /* CONDENSED: each window's distinct columns, ascending,
                                 padded with 0 to a multiple of TC_TILE                 */
    int64_t bytes;            /* what a kernel reads of the format: values, masks,
                                 offsets, columns                                      */
    double build_s;           /* wall time of tc_format_build                          */
} tc_format;

/* Build the format of a (CSR, float values) with values rounded to dtype
 * (round to nearest even), on threads host threads (0 = all cores).
 * SPF_ERR_OVERFLOW for a matrix whose column offsets do not fit int32.
 * out is zeroed first and owns its arrays (tc_format_free). */
spf_status tc_format_build(const spf_matrix *a, spf_dtype dtype, tc_format_mode mode, int threads,
                           tc_format *out);

void tc_format_free(tc_format *f); /* accepts a zeroed format */

/* Elements of dtype in 16 bytes: every tile's values start at a multiple
 * (a kernel copies them in 16-byte pieces). */
int64_t tc_value_align(spf_dtype dtype);

/* Bytes per weight of the format: bytes / (rows · cols), 0 for an empty
 * shape. */
double tc_format_bytes_per_weight(const tc_format *f);

/* The format expanded back to a dense rows × cols float matrix (row-major,
 * dense has rows · cols floats): what a kernel would compute with, for
 * tests and checks. */
void tc_format_to_dense(const tc_format *f, float *dense);

/* The f32 values of f rounded to TF32, 10 mantissa bits (to nearest,
 * ties away from zero, as cvt.rna.tf32.f32 rounds B in the kernel). */
void tc_format_round_tf32(tc_format *f);

/* "blocked", "condensed". */
const char *tc_format_mode_name(tc_format_mode mode);

#endif
