/* What the warpgroup conv kernels' host code (conv_wg.sm90a.cu) and the
 * kernels (conv_wg_staged / _resident / _sparse.sm90a.cu) share: the
 * weights on the device, the kernels' arguments, and each kind's kernel of
 * a dtype and a wgmma N. The accumulators are registers, so N is a
 * template argument: a kernel for each N conv_wg_mma_n gives (conv_wg.h's
 * bn, CONV_WG_MMA_NS), a translation unit a kind so that they build in
 * parallel. */
#ifndef SPF_CONV_KERNELS_CONV_WG_ARGS_CUH
#define SPF_CONV_KERNELS_CONV_WG_ARGS_CUH

#include "conv/conv_wg.h"

#include <cuda.h>

#include <stdint.h>

struct conv_wg {
    conv_wg_geom geom;
    spf_dtype dtype;
    int relu;
    void *weights;      /* device, owned: K × R·S·C of the dtype, dense, or
                           the sparse weights' one buffer (conv_wg.h)      */
    CUtensorMap w_map;  /* dense: its 64 × 64 boxes                        */
    int64_t bytes;
    int early;          /* launched to start before the stream's previous
                           kernel ends (gpu/early_start.h)                 */
};

struct wg_args {
    conv_wg_geom g;
    int relu;              /* beside the geometry's 23 words: no padding   */
    const float *bias;
    const void *residual;
    void *out;
    const uint8_t *sparse; /* sparse: the weights' one buffer (conv_wg.h);
                              with it the struct is 128 bytes, the most
                              before ptxas serializes the staged dense
                              kernel's wgmma (C7520)                       */
};
static_assert(sizeof(wg_args) <= 128, "ptxas serializes the staged kernel's wgmma past 128 "
              "bytes of arguments (C7520)");

/* The kernel of each kind for dtype (f16 or bf16) and wgmma's N = bn;
 * NULL where conv_wg_mma_n gives no such N. */
const void *conv_wg_kernel_staged(spf_dtype dtype, int bn);
const void *conv_wg_kernel_resident(spf_dtype dtype, int bn);
const void *conv_wg_kernel_sparse(spf_dtype dtype, int bn);

#endif
