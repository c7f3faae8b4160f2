/* The dynamic shared-memory limit of a precompiled kernel (tc, tcfrag). */
#ifndef SPF_GPU_SMEM_LIMIT_CUH
#define SPF_GPU_SMEM_LIMIT_CUH

#include <cuda_runtime.h>

#include "gpu/cuda_check.h"

/* Let kernel k launch with smem bytes of dynamic shared memory on the
 * current device. The limit is an attribute of the kernel, shared by every
 * plan that launches it: a plan that set it to its own need lowered it
 * under an earlier plan's feet (a model's layers planned first and run
 * after failed with "invalid argument"). So it is raised to the device's
 * opt-in maximum less the kernel's static shared memory: the same value
 * whichever plan or thread sets it. */
static inline spf_status smem_allow(const void *k, size_t smem)
{
    if (smem <= 48 * 1024)
        return SPF_OK;
    int device = 0, optin = 0;
    struct cudaFuncAttributes attr;
    spf_status status = CUDA_CHECK(cudaGetDevice(&device));
    if (status == SPF_OK)
        status = CUDA_CHECK(
            cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    if (status == SPF_OK)
        status = CUDA_CHECK(cudaFuncGetAttributes(&attr, k));
    if (status != SPF_OK)
        return status;
    int dynamic = optin - (int)attr.sharedSizeBytes;
    if (smem > (size_t)dynamic)
        return FAIL(SPF_ERR_UNSUPPORTED, "%zu bytes of dynamic shared memory a block; the device "
                    "allows %d beside the kernel's %zu static bytes", smem, dynamic,
                    attr.sharedSizeBytes);
    return CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, dynamic));
}

#endif
