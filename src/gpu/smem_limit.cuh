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
 * `cluster` blocks along z (grid.z a multiple of it; 1: no clusters), and
 * allowed to start before the stream's previous kernel ends where `early`
 * (gpu/grid_dependency.cuh: the kernel waits for it itself). attrs, the
 * caller's, holds the two attributes. */
static inline cudaLaunchConfig_t launch_config(dim3 grid, int threads, size_t smem, int cluster,
                                               int early, void *stream,
                                               cudaLaunchAttribute attrs[2])
{
    cudaLaunchConfig_t config = {};
    config.gridDim = grid;
    config.blockDim = dim3(threads);
    config.dynamicSmemBytes = smem;
    config.stream = static_cast<cudaStream_t>(stream);
    config.attrs = attrs;
    if (cluster > 1) {
        cudaLaunchAttribute &a = attrs[config.numAttrs++];
        a.id = cudaLaunchAttributeClusterDimension;
        a.val.clusterDim.x = 1;
        a.val.clusterDim.y = 1;
        a.val.clusterDim.z = static_cast<unsigned>(cluster);
    }
    if (early) {
        cudaLaunchAttribute &a = attrs[config.numAttrs++];
        a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
        a.val.programmaticStreamSerializationAllowed = 1;
    }
    return config;
}

/* Whether the current device launches thread-block clusters (*yes). */
static inline spf_status cluster_launch_supported(int *yes)
{
    int device = 0;
    *yes = 0;
    spf_status status = CUDA_CHECK(cudaGetDevice(&device));
    if (status != SPF_OK)
        return status;
    return CUDA_CHECK(cudaDeviceGetAttribute(yes, cudaDevAttrClusterLaunch, device));
}

/* Clusters of `cluster` blocks (along z) of kernel k, threads and smem
 * bytes each, the device can place at once (*fit; the limit set first):
 * a cluster's blocks share a GPC, so one may not fit where its blocks
 * would one by one. */
static inline spf_status cluster_fit(const void *k, dim3 grid, int threads, size_t smem,
                                     int cluster, int *fit)
{
    *fit = 0;
    spf_status status = smem_allow(k, smem);
    if (status != SPF_OK)
        return status;
    cudaLaunchAttribute attrs[2];
    const cudaLaunchConfig_t config =
        launch_config(grid, threads, smem, cluster, 0, nullptr, attrs);
    return CUDA_CHECK(cudaOccupancyMaxActiveClusters(fit, k, &config));
}

/* The launch of kernel k with launch_config's clusters and early start,
 * its parameters at params (the limit set first). */
static inline spf_status smem_launch_params(const void *k, dim3 grid, int threads, size_t smem,
                                            void **params, int cluster, int early, void *stream)
{
    spf_status status = smem_allow(k, smem);
    if (status != SPF_OK)
        return status;
    cudaLaunchAttribute attrs[2];
    const cudaLaunchConfig_t config =
        launch_config(grid, threads, smem, cluster, early, stream, attrs);
    return CUDA_CHECK(cudaLaunchKernelExC(&config, k, params));
}

/* smem_launch with launch_config's clusters and early start. */
static inline spf_status smem_launch_ex(const void *k, dim3 grid, int threads, size_t smem,
                                        void *args, int cluster, int early, void *stream)
{
    if (cluster <= 1 && !early)
        return smem_launch(k, grid, threads, smem, args, stream);
    void *params[] = {args};
    return smem_launch_params(k, grid, threads, smem, params, cluster, early, stream);
}

#endif
