/* The device side of conv/conv_gather.h: the explicit im2col gather and
 * the residual add of a conv plan. Memory-bound copies: one thread an
 * element of B in B's order, so the stores are coalesced and the loads
 * follow the filter's taps. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "conv/conv_gather.h"
#include "gpu/cuda_check.h"

namespace {

constexpr int kThreads = 128;

/* a block a row of B (grid-stride), its threads along the row: the
 * stores are coalesced, and so are the loads of NHWC's channels. A thread
 * copies a word W of one or several elements: 16 bytes where an NHWC
 * plan's runs of C channels are whole words (conv_gather.h: a word then
 * never straddles two taps), one element otherwise. */
template <typename E, typename W>
__global__ void __launch_bounds__(kThreads) gather_kernel(conv_gather g, const E *__restrict__ in,
                                                          E *__restrict__ cols)
{
    constexpr int32_t kPer = sizeof(W) / sizeof(E);
    const int32_t outer = conv_gather_outer(&g), inner = conv_gather_inner(&g);
    for (int32_t o = blockIdx.x; o < outer; o += gridDim.x)
        for (int32_t i = threadIdx.x * kPer; i < inner; i += kThreads * kPer) {
            const int64_t from = conv_gather_at(&g, o, i);
            W v{};
            if (from >= 0)
                v = __ldg(reinterpret_cast<const W *>(in + from));
            *reinterpret_cast<W *>(cols + static_cast<int64_t>(o) * inner + i) = v;
        }
}

template <typename E>
void gather_typed(const conv_gather *g, const void *in, void *cols, unsigned blocks, cudaStream_t s)
{
    const bool wide = g->nhwc && g->c * sizeof(E) % sizeof(uint4) == 0 &&
                      reinterpret_cast<uintptr_t>(in) % sizeof(uint4) == 0 &&
                      reinterpret_cast<uintptr_t>(cols) % sizeof(uint4) == 0;
    auto kernel = wide ? gather_kernel<E, uint4> : gather_kernel<E, E>;
    kernel<<<blocks, kThreads, 0, s>>>(*g, static_cast<const E *>(in), static_cast<E *>(cols));
}

} // namespace

extern "C" spf_status conv_gather_launch(const conv_gather *g, const void *in, void *cols,
                                         size_t elem, void *stream)
{
    const int32_t rows = conv_gather_outer(g);
    const unsigned blocks = static_cast<unsigned>(rows < (1 << 20) ? (rows > 0 ? rows : 1) : 1 << 20);
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    if (elem == 4)
        gather_typed<uint32_t>(g, in, cols, blocks, s);
    else
        gather_typed<uint16_t>(g, in, cols, blocks, s);
    return CUDA_CHECK(cudaGetLastError());
}
