/* Column vectors (sp_pattern.h) on the dense tensor cores: their
 * detection and their format, gathered for mma.m16n8k16 (issue 13;
 * STuning-DL §II's vector-wise pattern, the gathered rows of B of
 * Shfl-BW / VectorSparse).
 *
 * The rows, in the pattern's order (row_map: the row of A and C of each
 * row of the format), are cut into tiles of 16 and a tile into 16 / l
 * blocks of l rows. A block is dense over the union U of its rows'
 * columns (ascending), cut into steps of l columns; a tile's blocks are
 * padded to its longest with column 0 and zero values, and its steps to
 * whole windows of 16 / l steps (64 slots, the kernel's stage), so tile t
 * has step_ptr[t + 1] - step_ptr[t] steps. A step is one mma.m16n8k16 whose
 * 16 k slots are the blocks' next l columns side by side (slot j: block
 * j / l), the A operand block-diagonal: block b's rows against slots
 * l·b .. l·b + l - 1, zeros elsewhere, which the kernel makes itself. For
 * the step s (counted over all tiles):
 *   gather[16·s + j]      the column of A (row of B) of slot j;
 *   values[8·l·s + ...]   the A fragment words that are not zero
 *                         (PTX ISA "Matrix fragments for mma.m16n8k16":
 *                         lane 4g + t holds a0 (row g, k 2t, 2t+1), a1
 *                         (row g+8, k 2t ..), a2 (row g, k 2t+8 ..), a3
 *                         (row g+8, k 2t+8 ..), low half first):
 *       l = 16: a0..a3 of lane L at 4·L;
 *       l = 8:  a0 and a3 of lane L at 2·L (a1 and a2 cross blocks);
 *       l = 4:  a0 and a3 of the lanes with t/2 = g/4 (the others hold
 *               no slot of their rows' blocks) at 2·(8·(g/4) + 2·(g%4) + t%2).
 * Bytes a weight (fp16): 2·fill + 4/l per stored value, against dense's
 * 2 / density: at 0.9 sparsity and l = 4 about 6× fewer. */
#ifndef SPF_STRATEGY_STRUCTURED_SP_COLVEC_H
#define SPF_STRATEGY_STRUCTURED_SP_COLVEC_H

#include "spforge.h"
#include "strategy/structured/sp_format.h"
#include "strategy/structured/sp_pattern.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Whether a has column vectors: the l (4, 8 or 16) whose format moves the
 * fewest bytes among those within SP_COLVEC_FILL, in the rows' order or
 * else permuted (sp_pattern.h). On success out->vec, out->permuted and
 * out->fill; 0 with a reason otherwise (or on running out of memory). */
int sp_colvec_detect(const spf_matrix *a, sp_pattern *out, char *reason, size_t cap);

/* The rows' order of the format: the identity, or when permuted the rows
 * grouped by their columns (the largest groups first, then by a hash of
 * the columns and the row), so that rows of the same columns are
 * neighbours. *order holds a->rows entries (mem_free). */
spf_status sp_colvec_order(const spf_matrix *a, int permuted, int32_t **order);

/* sp_format_build and sp_format_to_dense for a pattern of column vectors. */
spf_status sp_colvec_build(const spf_matrix *a, const sp_pattern *p, spf_dtype dtype,
                           sp_format *out);
spf_status sp_colvec_to_dense(const sp_format *f, float *dense);

#ifdef __cplusplus
}
#endif

#endif
