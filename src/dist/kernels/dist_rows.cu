/* The distributed plan's kernels (dist/dist_rows.h). */
#include <cuda_runtime.h>

#include "dist/dist_rows.h"
#include "gpu/cuda_check.h"

namespace {

constexpr int kThreads = 256;

/* A block a row: its bytes in W-byte words (W divides row_bytes and the
 * buffers' alignment). */
template <typename W>
__global__ void pack_rows(const W *__restrict__ b, const int32_t *__restrict__ index,
                          int64_t count, int64_t words, W *__restrict__ out)
{
    for (int64_t i = blockIdx.x; i < count; i += gridDim.x) {
        const W *src = b + index[i] * words;
        W *dst = out + i * words;
        for (int64_t w = threadIdx.x; w < words; w += blockDim.x)
            dst[w] = src[w];
    }
}

unsigned grid_for(int64_t items)
{
    const int64_t most = 65535LL * 16; /* the loops stride past it */
    return (unsigned)(items < 1 ? 1 : items > most ? most : items);
}

template <typename W>
spf_status pack_as(const void *b, const int32_t *index, int64_t count, int64_t row_bytes, void *out,
                   cudaStream_t s)
{
    pack_rows<W><<<grid_for(count), kThreads, 0, s>>>(static_cast<const W *>(b), index, count,
                                                      row_bytes / (int64_t)sizeof(W),
                                                      static_cast<W *>(out));
    return CUDA_CHECK(cudaGetLastError());
}

} // namespace

extern "C" spf_status dist_pack_rows(const void *b, const int32_t *index, int64_t count,
                                     int64_t row_bytes, void *out, void *stream)
{
    if (count == 0)
        return SPF_OK;
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    const uintptr_t bits = (uintptr_t)b | (uintptr_t)out | (uintptr_t)row_bytes;
    if (bits % 16 == 0)
        return pack_as<uint4>(b, index, count, row_bytes, out, s);
    if (bits % 4 == 0)
        return pack_as<uint32_t>(b, index, count, row_bytes, out, s);
    return pack_as<uint16_t>(b, index, count, row_bytes, out, s); /* 2-byte elements at least */
}
