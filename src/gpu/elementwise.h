/* The one pass after a product that did not add the bias, the residual or
 * the ReLU itself (src/gpu/kernels/elementwise.cu): the dense strategy's
 * (cuBLASLt without that epilogue), the conv plans' (the residual; cuDNN's
 * path), the distributed plans' (the product on the received rows).
 * C-callable; a launch only (no allocation, no synchronization). */
#ifndef SPF_GPU_ELEMENTWISE_H
#define SPF_GPU_ELEMENTWISE_H

#include "spforge.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* out[i] = out[i] + bias[(i / inner) mod channels] + addend[i], then
 * max(·, 0) when relu, for i < count device elements of dtype (bias: float32,
 * NULL for none; addend: dtype, NULL for none); the sum in fp32, rounded
 * once. A row-major M×N C's row i / N is channels M, inner N; an N×M one's
 * i mod M is channels M, inner 1. */
spf_status elementwise_epilogue(spf_dtype dtype, void *out, const float *bias, int64_t channels,
                                int64_t inner, const void *addend, int64_t count, int relu,
                                void *stream);

#ifdef __cplusplus
}
#endif

#endif
