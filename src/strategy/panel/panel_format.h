/* The panel format of the panel strategy: pruned weights for CUDA cores at
 * small N and high sparsity, where a tensor-core tile is mostly zeros and
 * costs the same to decode as a full one (tcfrag's time is flat in the
 * sparsity: bench/results/tcfrag/README.md).
 *
 * K is cut into panels of `width` columns (the rows of B a block stages in
 * shared memory at a time); within a panel each row's nonzeros are one run
 * of 32-bit entries, in bank order:
 *     bits  0-15  the column within the panel (width ≤ 65536);
 *     bits 16-31  the value in the dtype (fp16 or bf16 bits).
 * Bank order: the run is cut into groups of eight from its start, and each
 * group takes one entry from each of the residues of the column mod 8 that
 * have the most entries left (a residue twice in a group only when fewer
 * than eight residues are left), ascending columns within a residue. The
 * kernels gather a group's rows of the staged B at once (eight lanes of
 * a 16-byte load, or an 8×8 ldmatrix), and a staged row's place in the
 * banks follows its column mod 8 (panel_spmm.cu's swizzle): in bank order
 * the eight land on distinct banks, where random columns collide about
 * twice as often.
 * Four bytes a nonzero, against CSR's 8 (fp32 value, int32 column) and
 * dense fp16's 2 a weight: below dense from 50 % sparsity, 0.4 bytes a
 * weight at 90 %. A bf16 value is an fp32 with the low half cleared, so
 * the kernel gets it with one AND; fp16 with one conversion.
 *
 * The runs are panel-major: the run of (panel p, row r) is entries
 * ptr[p·rows + r] .. ptr[p·rows + r + 1] - 1, so a block walking its rows
 * panel by panel reads consecutive runs. */
#ifndef SPF_STRATEGY_PANEL_PANEL_FORMAT_H
#define SPF_STRATEGY_PANEL_PANEL_FORMAT_H

#include "spforge.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { PANEL_MAX_WIDTH = 65536 };

typedef struct panel_format {
    int64_t rows, cols, nnz;
    spf_dtype dtype;  /* F16 or BF16                                       */
    int32_t width;    /* columns of a panel, 1 .. PANEL_MAX_WIDTH           */
    int32_t panels;   /* ceil(cols / width); 0 when cols is 0               */
    int32_t *ptr;     /* panels · rows + 1 entry offsets                    */
    uint32_t *entry;  /* nnz entries (above)                                */
    int64_t bytes;    /* what a kernel reads: entries and offsets           */
    double build_s;   /* wall time of panel_format_build                    */
} panel_format;

/* Build the format of a (CSR, float values) with values rounded to dtype
 * (F16 or BF16, to nearest even) in panels of width columns, on threads
 * host threads (0 = all cores). out is zeroed first and owns its arrays
 * (panel_format_free). SPF_ERR_INVALID_ARGUMENT for another dtype or a
 * width outside 1 .. PANEL_MAX_WIDTH; SPF_ERR_OVERFLOW when the nonzeros
 * or panels · rows reach 2^31 (the kernel's int32 offsets). */
spf_status panel_format_build(const spf_matrix *a, spf_dtype dtype, int32_t width, int threads,
                              panel_format *out);

void panel_format_free(panel_format *f); /* accepts a zeroed format */

/* Bytes per weight: bytes / (rows · cols), 0 for an empty shape. */
double panel_format_bytes_per_weight(const panel_format *f);

/* The format read back into a dense rows × cols float matrix (row-major),
 * run by run as the kernel reads it, for tests and checks. SPF_ERR_PARSE,
 * naming the panel and row, when the offsets are not ascending or leave
 * the entries, or an entry's column is outside its panel or twice in its
 * run. */
spf_status panel_format_to_dense(const panel_format *f, float *dense);

#ifdef __cplusplus
}
#endif

#endif
