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
