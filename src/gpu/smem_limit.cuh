/* The dynamic shared-memory limit of a precompiled kernel (tc, tcfrag). */
#ifndef SPF_GPU_SMEM_LIMIT_CUH
#define SPF_GPU_SMEM_LIMIT_CUH

#include <cuda_runtime.h>

#include <mutex>

#include "gpu/cuda_check.h"

/* Let kernel k launch with smem bytes of dynamic shared memory on the
 * current device. The limit is an attribute of the kernel, shared by every
 * plan that launches it: a plan that set it to its own need lowered it
 * under an earlier plan's feet (a model's layers planned first and run
 * after failed with "invalid argument"). So it only ever rises, under a
 * lock, to the largest need asked so far. (Raising it to the device's
 * opt-in maximum at once made the occupancy query refuse small tcfrag
 * configs on the H100: measured, not explained.) */
static inline spf_status smem_allow(const void *k, size_t smem)
{
    static std::mutex lock;
    if (smem <= 48 * 1024)
        return SPF_OK;
    std::lock_guard<std::mutex> hold(lock);
    struct cudaFuncAttributes attr;
    spf_status status = CUDA_CHECK(cudaFuncGetAttributes(&attr, k));
    if (status == SPF_OK && (size_t)attr.maxDynamicSharedSizeBytes < smem)
        status = CUDA_CHECK(
            cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    return status;
}

#endif
