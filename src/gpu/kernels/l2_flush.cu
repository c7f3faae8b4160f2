/* gpu/l2_flush.h's read. */
#include <cuda_runtime.h>

#include <string.h>

#include "gpu/cuda_check.h"
#include "gpu/l2_flush.h"

namespace {

constexpr int kThreads = 512;
constexpr int kBlocksPerSm = 4;
constexpr int kUnroll = 4; /* loads in flight per thread */

/* Every 16 bytes of the buffer but the last read once through the L2;
 * the last word is written only if the xor of the zeroed buffer were the
 * constant, which it never is, so the reads cannot be removed. */
__global__ void __launch_bounds__(kThreads) flush_kernel(const uint4 *buffer, size_t count,
                                                          unsigned *sink)
{
    unsigned acc = 0;
    size_t stride = static_cast<size_t>(gridDim.x) * kThreads;
    size_t i = blockIdx.x * static_cast<size_t>(kThreads) + threadIdx.x;
    for (; i + (kUnroll - 1) * stride < count; i += kUnroll * stride) {
        uint4 v[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; u++)
            v[u] = buffer[i + u * stride];
#pragma unroll
        for (int u = 0; u < kUnroll; u++)
            acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    for (; i < count; i += stride) {
        uint4 v = buffer[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u)
        *sink = acc;
}

} // namespace

extern "C" spf_status l2_flush_make(l2_flush *out)
{
    memset(out, 0, sizeof *out);
    int device = 0, l2 = 0, sms = 0;
    spf_status st = CUDA_CHECK(cudaGetDevice(&device));
    if (st == SPF_OK)
        st = CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
    if (st == SPF_OK)
        st = CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    if (st != SPF_OK)
        return st;
    size_t bytes = 2 * static_cast<size_t>(l2 > 0 ? l2 : 64 << 20);
    void *buffer = nullptr;
    if (cudaMalloc(&buffer, bytes) != cudaSuccess) {
        (void)cudaGetLastError();
        return FAIL(SPF_ERR_OUT_OF_MEMORY,
                    "%zu MiB of device memory to flush the L2 between timed launches (cold "
                    "weights); SPF_TIMING_HOT times without it",
                    bytes >> 20);
    }
    st = CUDA_CHECK(cudaMemset(buffer, 0, bytes));
    if (st != SPF_OK) {
        (void)cudaFree(buffer);
        return st;
    }
    out->buffer = buffer;
    out->bytes = bytes;
    out->blocks = (sms > 0 ? sms : 1) * kBlocksPerSm;
    return SPF_OK;
}

extern "C" spf_status l2_flush_launch(const l2_flush *f, void *stream)
{
    if (!f->buffer)
        return FAIL(SPF_ERR_INTERNAL, "L2 flush launched before it was made");
    size_t count = f->bytes / sizeof(uint4) - 1;
    flush_kernel<<<f->blocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const uint4 *>(f->buffer), count,
        reinterpret_cast<unsigned *>(static_cast<uint4 *>(f->buffer) + count));
    return CUDA_CHECK(cudaGetLastError());
}

extern "C" void l2_flush_release(l2_flush *f)
{
    if (!f)
        return;
    if (f->buffer)
        (void)cudaFree(f->buffer);
    memset(f, 0, sizeof *f);
}
