/* The thread-block cluster's steps (sm_90): a block's rank in its
 * cluster, and the cluster barrier, whose arrival releases the block's
 * shared stores and whose wait acquires the other blocks', and a peer's
 * shared memory. Shared by the structured Hopper kernels and the
 * warpgroup conv kernels (sm_90a) and the tensor-core conv kernel, which
 * is also built for sm_80: there a rank is 0 and the barrier does
 * nothing, and the host never launches a cluster on a device older than
 * 9.0. */
#ifndef SPF_GPU_CLUSTER_CUH
#define SPF_GPU_CLUSTER_CUH

#include <stdint.h>

__device__ __forceinline__ int cluster_rank()
{
    uint32_t r = 0;
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
#endif
    return static_cast<int>(r);
}
__device__ __forceinline__ void cluster_arrive()
{
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void cluster_wait()
{
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#endif
}
/* an arrival that publishes nothing (no fence before it): for a barrier
 * that only says where the blocks are */
__device__ __forceinline__ void cluster_arrive_relaxed()
{
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
#endif
}
/* every thread of the cluster, here */
__device__ __forceinline__ void cluster_sync()
{
    cluster_arrive();
    cluster_wait();
}

/* The generic address of this block's shared p in block `rank` of the
 * cluster: read through it by plain loads, which the compiler may issue
 * several at a time (an asm load each, volatile to stay after the
 * barrier, went one round trip at a time: 11 in a row at 11 slices, in
 * the conv TC kernel), and which the barriers' memory clobbers keep in
 * place. */
__device__ __forceinline__ const float *cluster_peer(const float *p, int rank)
{
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
    uint64_t at;
    asm("mapa.u64 %0, %1, %2;\n" : "=l"(at) : "l"(reinterpret_cast<uint64_t>(p)), "r"(rank));
    return reinterpret_cast<const float *>(at);
#else
    (void)rank;
    return p;
#endif
}

#endif
