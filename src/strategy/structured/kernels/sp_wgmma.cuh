/* The warpgroup MMA of the structured Hopper kernels (sp_wgmma.sm90a.cu,
 * sp_tma.sm90a.cu): wgmma.mma_async.sp m64nNk32 with A from registers in
 * the format's fragment order (sp_format.h) and B through a shared-memory
 * matrix descriptor (PTX ISA "Asynchronous warpgroup level matrix
 * multiply-accumulate"); the mbarrier steps their stages pass on are
 * gpu/bulk_copy.cuh's.
 * Device code for sm_90a only. */
#ifndef SPF_STRATEGY_STRUCTURED_SP_WGMMA_CUH
#define SPF_STRATEGY_STRUCTURED_SP_WGMMA_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <stdint.h>

#include "gpu/bulk_copy.cuh"
#include "gpu/mma_ptx.cuh"
#include "gpu/wgmma_shapes.cuh" /* wgmma_sp<N, SEL, MN> */

/* A matrix descriptor (PTX ISA "Matrix Descriptor Format"): start
 * address, leading and stride byte offsets, each in 16-byte units, and
 * the swizzle mode (bits 62-63: 0 none, 1 the 128-byte swizzle, whose
 * atoms must start 1024-byte aligned). */
__device__ __forceinline__ uint64_t descriptor(const void *p, uint32_t leading, uint32_t stride,
                                               bool swizzle128 = false)
{
    const uint32_t addr = smem_addr(p);
    return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) |
           static_cast<uint64_t>((leading >> 4) & 0x3FFF) << 16 |
           static_cast<uint64_t>((stride >> 4) & 0x3FFF) << 32 |
           static_cast<uint64_t>(swizzle128) << 62;
}

__device__ __forceinline__ void wgmma_fence()
{
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit()
{
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

#endif
