/* ptxas's C7519 ("warpgroup.arrive is injected ... to allow use of
 * registers in GMMA") on the smallest kernel that shows it: one runtime
 * loop of wgmma over accumulators that a fence precedes. Not built with the
 * library; for the record (README.md here):
 *   nvcc -std=c++17 -O3 -Isrc -gencode=arch=compute_90a,code=sm_90a \
 *        -c bench/results/kernel-budget/c7519_loop.cu -DVARIANT=0
 * VARIANT 0: the fence before the loop (as conv_wg_device.cuh's wg_chunk):
 * ptxas (13.0.88) injects five arrives, at the loop head and at each copy
 * it unrolled. 1: a fence at each iteration: one. 2: the loop not
 * unrolled: eight. 3: the accumulators fenced as operands before the
 * fence and after the wait (CUTLASS's warpgroup_fence_operand): five. */
#include "gpu/wgmma_shapes.cuh"

#include <cuda_fp16.h>

#ifndef VARIANT
#define VARIANT 0
#endif

__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void commit()
{
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wait0()
{
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void fence_operand(float (&d)[N])
{
#pragma unroll
    for (int i = 0; i < N; i++)
        asm volatile("" : "+f"(d[i])::"memory");
}

__global__ void loop_kernel(float *out, int taps, uint64_t da, uint64_t db, int tiles)
{
    float d[32];
    for (int it = 0; it < tiles; it++) {
#pragma unroll
        for (int i = 0; i < 32; i++)
            d[i] = 0.0f;
        for (int ch = 0; ch < 4; ch++) {
#if VARIANT == 3
            fence_operand(d);
#endif
            fence();
#if VARIANT == 2
#pragma unroll 1
#endif
            for (int t = 0; t < taps; t++) {
#if VARIANT == 1
                fence();
#endif
#pragma unroll
                for (int kk = 0; kk < 4; kk++)
                    wgmma_ss<64>(d, da + t * 64 + kk, db + t * 7 + kk, 1, __half());
            }
            commit();
            wait0();
#if VARIANT == 3
            fence_operand(d);
#endif
            __syncthreads();
        }
#pragma unroll
        for (int i = 0; i < 32; i++)
            out[threadIdx.x * 32 + i + it] = d[i];
    }
}
