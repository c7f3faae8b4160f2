/* The structured strategy's format: a 2:4 matrix (or a V:2:M one condensed
 * to 2:4, sp_pattern.h) in the register order of the sparse tensor-core
 * operand, so that a warp loads each of its mma.sp operands with one
 * coalesced load and decodes nothing (PTX ISA "Sparse matrix storage" and
 * the fragments of mma.sp m16n8k32 for f16 / bf16).
 *
 * Rows are cut into tiles of 16, the condensed columns into steps of 32
 * (an mma.sp m16n8k32), steps in pairs. A step's 16×32 block keeps two
 * values of each run of four columns: 16×16 values and a 2-bit index for
 * each. For tile T and step pair P:
 *   values[((T·pairs + P)·2 + h)·32 + lane], h = 0, 1 the step 2P + h:
 *       16 bytes, the A fragment of lane = 4g + t: words
 *       (row g, run t), (row g+8, run t), (row g, run t+4), (row g+8,
 *       run t+4), a run's two values in the low then the high half;
 *   meta[(T·pairs + P)·32 + lane]: the metadata word of lane 4g + t for
 *       step 2P + t/2 (sparsity selector 0 takes lanes t = 0, 1 and
 *       selector 1 lanes 2, 3, so one load serves both steps): its low
 *       16 bits row g, its high 16 bits row g+8, runs 4(t%2) .. 4(t%2)+3
 *       of the step in 4 bits each, index of the first value | index of the
 *       second << 2 (first < second: the ordered metadata of sm_90).
 * A run with fewer than two nonzeros is filled with zeros at free indices;
 * rows past M and columns past the condensed K are zeros.
 *
 * For V:2:M, gather[b·kc + j] is the column of A (the row of B) of
 * condensed column j in the block of V rows b: the four kept columns of
 * each group, ascending (a group with fewer repeats its first column, with
 * zero values), columns past the last group 0. kc = steps · 32.
 *
 * Bytes a weight, 2:4 in fp16: 1 + 1/8 against dense's 2, the bound of
 * 1.78× at small N; V:2:8: 0.56 (3.6×).
 *
 * Column vectors have a format of their own in the same struct
 * (sp_colvec.h): values, gather, steps, step_ptr and row_map; no
 * metadata. */
#ifndef SPF_STRATEGY_STRUCTURED_SP_FORMAT_H
#define SPF_STRATEGY_STRUCTURED_SP_FORMAT_H

#include "spforge.h"
#include "strategy/structured/sp_pattern.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sp_format {
    int64_t rows, cols;  /* M, K of A                                       */
    spf_dtype dtype;     /* F16 or BF16                                     */
    sp_pattern pattern;
    int64_t tiles;       /* ceil(M / 16)                                     */
    int64_t pairs;       /* step pairs: ceil(condensed K / 64)               */
    uint32_t *values;    /* tiles · pairs · 2 · 32 · 4 words                 */
    uint32_t *meta;      /* tiles · pairs · 32 words                         */
    int32_t *gather;     /* V:2:M: ceil(M / V) · pairs · 64; NULL for 2:4    */
    int64_t steps;       /* column vectors: steps of all tiles               */
    int32_t *step_ptr;   /* column vectors: tile t's steps from step_ptr[t]  */
    int32_t *row_map;    /* column vectors: the row of A of each format row  */
    int64_t bytes;       /* what a kernel reads of A                         */
    double build_s;
} sp_format;

/* Build the format of a (CSR, float values; its pattern p, as
 * sp_pattern_detect gave it) with the values rounded to dtype (F16 or
 * BF16), rows in parallel on threads host threads (0 = all cores). out is
 * zeroed first and owns its arrays (sp_format_free). SPF_ERR_INVALID_ARGUMENT
 * when a does not have pattern p (naming the row and columns) or for
 * another dtype; SPF_ERR_OVERFLOW when a word index reaches 2^31 (the
 * kernel's int32 offsets). */
spf_status sp_format_build(const spf_matrix *a, const sp_pattern *p, spf_dtype dtype, int threads,
                           sp_format *out);

void sp_format_free(sp_format *f); /* accepts a zeroed format */

double sp_format_bytes_per_weight(const sp_format *f);

/* The format read back into a dense rows × cols float matrix (row-major),
 * fragment by fragment as the kernel reads it, for tests. SPF_ERR_PARSE,
 * naming the tile and step, for a metadata nibble that is not an ordered
 * pair or a gathered column outside K. */
spf_status sp_format_to_dense(const sp_format *f, float *dense);

#ifdef __cplusplus
}
#endif

#endif
