/* The precompiled generic CSR SpMM kernel (strategy S2): Sputnik-class
 * row-split kernel for any matrix, compiled by nvcc at build time for sm_80
 * and sm_90 (src/strategy/generic/kernels/csr_generic.cu). C-callable. */
#ifndef SPF_STRATEGY_GENERIC_GENERIC_H
#define SPF_STRATEGY_GENERIC_GENERIC_H

#include "plan/problem.h"
#include "spforge.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Device-resident CSR copy of A, plus the row order used for load balance
 * (rows sorted by length, "row swizzle"). */
typedef struct generic_csr {
    int32_t rows, cols, nnz;
    int32_t *row_ptr;    /* device, rows + 1 (int32: plans need nnz < 2^31) */
    int32_t *col_idx;    /* device, nnz                                     */
    float *values;       /* device, nnz                                     */
    int32_t *row_order;  /* device, rows: the swizzle                       */
    int32_t ordered;     /* the rows of row_order a launch computes: rows,
                            or its first (generic_csr_upload_nonempty)      */
    /* Long rows cut into pieces (generic_csr_cut_long_rows; 0 and NULL
     * otherwise): row_order's first long_rows, each summed from its pieces */
    int32_t long_rows, pieces;
    int32_t partial_n;    /* the N partial is sized for                     */
    int32_t *long_row;    /* device, long_rows: the row of A of each        */
    int32_t *piece_first; /* device, long_rows + 1: each one's first piece  */
    int32_t *piece_range; /* device, 2·pieces: begin, end in A's arrays     */
    float *partial;       /* device, pieces × partial_n: the pieces' sums   */
} generic_csr;

/* Upload a (host) matrix; frees nothing on failure (the struct is zeroed). */
spf_status generic_csr_upload(const spf_matrix *a, generic_csr *out);
/* The same, but a launch computes only the rows of a that hold nonzeros
 * (the swizzle puts them first) and leaves C's other rows as they are:
 * the structured strategy's rows outside its pattern. */
spf_status generic_csr_upload_nonempty(const spf_matrix *a, generic_csr *out);
void generic_csr_release(generic_csr *g);

/* C = A·B (+bias[row] when bias is not NULL, ReLU when p->relu) for p's n,
 * dtype and layouts (p->a is not read), on stream. No allocation, no
 * synchronization. */
spf_status generic_csr_launch(const generic_csr *g, const problem *p, const void *b, void *c,
                              const float *bias, void *stream);

/* Long rows (beyond Sputnik). A power-law graph has a few rows of tens of
 * thousands of nonzeros (R-MAT, 2^22 vertices: one of 82 481 against a
 * mean of 12.6), and the one sub-warp that owns such a row walks it long
 * after the rest of the launch is done: on the H200 that graph's product
 * at N = 128 took 10.0 ms, and the half of its rows without the hubs 4.2.
 * Rows longer than an average resident sub-warp's share of the launch
 * are cut into pieces of about that length, a sub-warp each, whose fp32
 * partial sums a second kernel adds in order (the same sum every run),
 * then bias and ReLU. */
typedef struct generic_pieces {
    int32_t long_rows, count;
    int32_t *row;   /* long_rows: the rows cut, longest first (ties: lower row first) */
    int32_t *first; /* long_rows + 1: each row's first piece                   */
    int32_t *range; /* 2·count: each piece's begin and end in A's arrays        */
} generic_pieces;

/* The pieces of a's rows longer than `longest` nonzeros (longest ≥ 1), each
 * row cut into the fewest pieces of at most `longest`, of equal lengths
 * within one. Host memory; out is zeroed first. */
spf_status generic_pieces_build(const spf_matrix *a, int64_t longest, generic_pieces *out);
void generic_pieces_free(generic_pieces *p); /* accepts a zeroed one */

struct generic_launch;
/* The longest row a launch of shape l leaves whole (the rest are cut), or
 * 0 to cut none: B as N×K (its lanes already share a row), a row split
 * chosen (few rows: the split serves them), or no row long enough. */
int64_t generic_long_threshold(const generic_csr *g, const struct generic_launch *l);

/* Cut g's rows longer than generic_long_threshold(g, l) (a is the matrix g
 * was uploaded from) and hold a partial-sum buffer for l->n; nothing when
 * none is. A launch then shares that buffer: the caller orders its
 * launches (gpu/launch_order.h). */
spf_status generic_csr_cut_long_rows(generic_csr *g, const spf_matrix *a,
                                     const struct generic_launch *l);

/* The launch shape chosen for one (problem, B and C addresses).
 * B N_LAST (K×N): V elements of B per vector load along N (4, 2 or 1: as N
 * and the buffers' alignment allow), the sub-warp width SW (4 .. 32
 * threads per row; narrow for small N) and the row split RS (sub-warps
 * sharing one row; > 1 for few, long rows).
 * B N_FIRST (N×K): the sub-warp's lanes share a row's nonzeros instead, so
 * SW follows the mean row length, V is the columns of C a thread
 * accumulates (4, 2 or 1) and RS is 1 (the lanes already split a row). */
typedef struct generic_launch {
    int32_t n;
    spf_dtype dtype;
    spf_layout b_layout, c_layout;
    int vec;     /* V                                           */
    int subwarp; /* SW                                          */
    int split;   /* RS: a power of two, SW · RS ≤ 128 (a block) */
} generic_launch;

/* Choose the launch shape and check every int32 bound the kernel relies on
 * (K·N and M·N element offsets in either layout, the grid size). g's shape
 * is the one that counts (p->m and p->k are not read). */
spf_status generic_launch_choose(const generic_csr *g, const problem *p, const void *b,
                                 const void *c, generic_launch *out);

/* A name for the chosen shape, e.g. "generic_f32_v4_sw32", with "_rs4" for a
 * row split and "_bnk" / "_cnm" for B as N×K / C as N×M (bench and plan
 * info). */
void generic_launch_name(const generic_launch *l, char *buf, size_t size);

/* The kernel launch itself (src/strategy/generic/kernels/csr_generic.cu), after
 * generic_launch_choose; generic_csr_launch is the two together. */
spf_status generic_csr_dispatch(const generic_csr *g, const generic_launch *l, const void *b,
                                void *c, const float *bias, int relu, void *stream);

/* B as the implicit im2col of a convolution's input (issue 14; the conv
 * plan's IMPLICIT path, conv/conv_implicit.c): column j of B is output
 * position j of the launch, row kk the filter column of nonzero q, whose
 * tap the host encoded as taps[2q] = the input offset from the window's
 * corner and taps[2q + 1] = dy << 16 | dx (dy, dx < 2^15). The input holds
 * fewer than 2^31 elements. */
typedef struct generic_im2col {
    const int32_t *taps;  /* device, 2 per nonzero of A, 8-byte aligned     */
    int32_t c, h, w;      /* input channels, height, width                 */
    int32_t p, q;         /* output height and width                       */
    int32_t stride, pad;
    int32_t nhwc;         /* input N×H×W×C, else N×C×H×W                    */
} generic_im2col;

/* C = A·im2col(in) as generic_csr_dispatch does for B, with l as chosen
 * for B N_FIRST (N×K: the lanes of a sub-warp share a row's nonzeros). */
spf_status generic_csr_im2col_dispatch(const generic_csr *g, const generic_launch *l,
                                       const generic_im2col *x, const void *in, void *c,
                                       const float *bias, int relu, void *stream);

#ifdef __cplusplus
}
#endif

#endif
