/* Which semi-structured pattern a matrix has, as the sparse tensor cores
 * (mma.sp, 2:4 along K) can take it (issue 13; STuning-DL §II, VENOM).
 *
 *   2:4     every run of four columns 4q .. 4q+3 of a row holds at most
 *           two nonzeros: the operand of mma.sp as it is.
 *   V:2:M   (M = 8, 16, 32) the rows in blocks of V (16 .. 128), the
 *           columns in groups of M; the nonzeros of a V×M block lie in at
 *           most four of its columns, and a row of the block holds at most
 *           two. Condensing each group to its four columns makes a 2:4
 *           matrix of K·4/M columns, whose rows of B the kernel gathers.
 *           N:M with N = 1 is the same with at most one a row.
 *
 * A last group cut short by K, and a last block of rows cut short by M,
 * count like whole ones. A V:2:M matrix is 2:4 as well (two nonzeros in
 * M columns are at most two in any four), but condensed it moves 4/M of
 * the bytes. So detection takes the first that holds in the order M = 32,
 * 16, 8, each with the largest V that holds (the widest reuse of a
 * gathered row of B), then 2:4.
 *
 *   colvec  (l = 4, 8, 16) column vectors (STuning-DL §II, Shfl-BW): the
 *           rows in blocks of l share their columns, so a block is a dense
 *           l × |U| matrix over the union U of its rows' columns, gathered
 *           (sp_colvec.h). A few stray nonzeros only widen a block's U by
 *           a column of zeros each; the format stores l·|U| values a block,
 *           so the pattern holds while they are at most SP_COLVEC_FILL
 *           times the nonzeros. When no l holds in the given row order,
 *           the rows are taken in the order that brings rows of the same
 *           columns together (permuted; C is stored through the order).
 *           The sparse tensor cores' patterns are tried first.
 *
 * Strays. When no pattern holds exactly, 2:4 and V:2:M are tried again in
 * the same order, leaving out the rows a stray breaks (outside), at most
 * rows / SP_OUTSIDE_SHARE. The strategy takes the strays themselves out
 * (sp_pattern_strays), keeps the rest of those rows in the pattern and
 * adds the strays' products after the structured kernel; with ReLU,
 * which does not add, it multiplies the rows outside whole by a CSR
 * kernel that overwrites their rows of C. Column vectors come after
 * that. */
#ifndef SPF_STRATEGY_STRUCTURED_SP_PATTERN_H
#define SPF_STRATEGY_STRUCTURED_SP_PATTERN_H

#include "spforge.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sp_pattern {
    int32_t group;    /* M: 4 for 2:4 (no gather); 8, 16 or 32 for V:2:M; 0 for
                         column vectors                                        */
    int32_t v;        /* rows sharing a group's four columns; 0 otherwise      */
    int32_t vec;      /* column vectors: their length l (4, 8, 16); 0 otherwise */
    int32_t permuted; /* column vectors: in the rows' order of sp_colvec_order */
    int32_t outside;  /* 2:4 and V:2:M with strays: rows left out of the
                         pattern (sp_pattern_outside), computed apart     */
    double fill;      /* column vectors: values stored over the nonzeros   */
} sp_pattern;

/* 2:4 and V:2:M hold with strays while at most rows / SP_OUTSIDE_SHARE
 * rows are left out. */
#define SP_OUTSIDE_SHARE 16

/* Column vectors hold while the values stored (l·|U| a block) are at most
 * this many times the nonzeros. */
#define SP_COLVEC_FILL 1.25

/* The pattern of a (CSR), or 0 with a reason in reason (cap bytes) naming
 * the first row and group that no pattern allows. */
int sp_pattern_detect(const spf_matrix *a, sp_pattern *out, char *reason, size_t cap);

/* The rows of a outside pattern p (2:4 or V:2:M): for 2:4 a row with more
 * than two nonzeros in a run; for V:2:M a row with more than two in a
 * group, or a nonzero in a column that is not among the four of its group
 * the most rows of its block use (ties to the smaller column). out[r] = 1
 * for those when out is not NULL (a->rows entries). Returns how many; 0
 * for column vectors; -1 when out of memory. */
int64_t sp_pattern_outside(const spf_matrix *a, const sp_pattern *p, uint8_t *out);

/* The strays of a under pattern p (2:4 or V:2:M): stray[i] = 1 for each
 * nonzero i (a's nnz entries) that the pattern cannot hold. For V:2:M
 * those in a column its block does not keep (as sp_pattern_outside
 * chooses them); then in each run of four (2:4) or group of M, all but
 * the two largest in magnitude. The rest has pattern p exactly. Returns
 * how many; 0 for column vectors; -1 when out of memory. */
int64_t sp_pattern_strays(const spf_matrix *a, const sp_pattern *p, uint8_t *stray);

/* "2:4", "V128:2:8", "colvec8" or "colvec8p" (permuted). */
void sp_pattern_name(const sp_pattern *p, char *buf, size_t cap);
/* The pattern sp_pattern_name writes ("2:4", "V64:2:8"; V 16 to 128, M 8,
 * 16 or 32; "colvec<l>[p]", l 4, 8 or 16); 0 for any other name. */
int sp_pattern_from_name(const char *name, sp_pattern *out);

/* Columns of the condensed 2:4 matrix: K for 2:4, K·4/M (the last group
 * rounded up) for V:2:M; for column vectors, K. */
int64_t sp_pattern_condensed_cols(const sp_pattern *p, int64_t k);

#ifdef __cplusplus
}
#endif

#endif
