/* The dynamic shared-memory limit of a precompiled kernel (tc, tcfrag,
 * panel), and the occupancy query and launch that set it first. */
#ifndef SPF_GPU_SMEM_LIMIT_CUH
#define SPF_GPU_SMEM_LIMIT_CUH

#include <cuda_runtime.h>

#include "gpu/cuda_check.h"

/* Set kernel k's dynamic shared-memory limit to smem bytes, the need of
 * the config about to be queried or launched. The limit is an attribute of
 * the kernel, shared by every plan that launches it, so it is set before
 * each occupancy query and again before each launch: a plan that set it
 * only when it was made had it lowered under its feet by a later plan of
 * the same kernel (a model's layers planned first and run after failed
 * with "invalid argument"). Set to the exact need, not to the largest
 * one: with the limit left higher than a config's need, the occupancy
 * query refused small tcfrag configs on the H100 (test_strategies). */
static inline spf_status smem_allow(const void *k, size_t smem)
{
    return CUDA_CHECK(
        cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
}

/* Blocks of `threads` threads of kernel k an SM holds with smem bytes of
 * dynamic shared memory (the limit set first). */
static inline spf_status smem_occupancy(const void *k, int threads, size_t smem, int *blocks)
{
    spf_status status = smem_allow(k, smem);
    if (status != SPF_OK)
        return status;
    return CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, k, threads, smem));
}

/* Launch kernel k, whose one parameter is the struct at args, with smem
 * bytes of dynamic shared memory (the limit set first). */
static inline spf_status smem_launch(const void *k, dim3 grid, int threads, size_t smem,
                                     void *args, void *stream)
{
    spf_status status = smem_allow(k, smem);
    if (status != SPF_OK)
        return status;
    void *params[] = {args};
    return CUDA_CHECK(cudaLaunchKernel(k, grid, dim3(threads), params, smem,
                                       static_cast<cudaStream_t>(stream)));
}

/* The launch of grid × threads blocks with smem bytes, in clusters of
 * `cluster` blocks along z (grid.z a multiple of it); *attr, the caller's,
 * holds the cluster's size. */
static inline cudaLaunchConfig_t cluster_config(dim3 grid, int threads, size_t smem, int cluster,
                                                void *stream, cudaLaunchAttribute *attr)
{
    attr->id = cudaLaunchAttributeClusterDimension;
    attr->val.clusterDim.x = 1;
    attr->val.clusterDim.y = 1;
    attr->val.clusterDim.z = static_cast<unsigned>(cluster);
    cudaLaunchConfig_t config = {};
    config.gridDim = grid;
    config.blockDim = dim3(threads);
    config.dynamicSmemBytes = smem;
    config.stream = static_cast<cudaStream_t>(stream);
    config.attrs = attr;
    config.numAttrs = 1;
    return config;
}

/* smem_launch with the grid's blocks in clusters of `cluster` along z
 * (grid.z a multiple of it; 1: no clusters). */
static inline spf_status smem_launch_clustered(const void *k, dim3 grid, int threads, size_t smem,
                                               void *args, int cluster, void *stream)
{
    if (cluster <= 1)
        return smem_launch(k, grid, threads, smem, args, stream);
    spf_status status = smem_allow(k, smem);
    if (status != SPF_OK)
        return status;
    cudaLaunchAttribute attr;
    const cudaLaunchConfig_t config = cluster_config(grid, threads, smem, cluster, stream, &attr);
    void *params[] = {args};
    return CUDA_CHECK(cudaLaunchKernelExC(&config, k, params));
}

#endif
