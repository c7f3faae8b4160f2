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
 * opt-in maximum: the same value whichever plan or thread sets it. */
static inline spf_status smem_allow(const void *k, size_t smem)
{
    if (smem <= 48 * 1024)
        return SPF_OK;
    int device = 0, optin = 0;
    spf_status status = CUDA_CHECK(cudaGetDevice(&device));
    if (status == SPF_OK)
        status = CUDA_CHECK(
            cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    if (status == SPF_OK && smem > (size_t)optin)
        return FAIL(SPF_ERR_UNSUPPORTED, "%zu bytes of shared memory a block; the device allows %d",
                    smem, optin);
    if (status == SPF_OK)
        status = CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                 optin));
    return status;
}

#endif
