/* device_upload.h. */
#include "gpu/device_upload.h"

#ifdef SPF_HAVE_CUDA
#include "gpu/cuda_check.h"

spf_status device_upload(void **dst, const void *src, int64_t count, size_t elem, int64_t *bytes)
{
    size_t size = (size_t)(count > 0 ? count : 1) * elem;
    spf_status status = CUDA_CHECK(cudaMalloc(dst, size));
    if (status != SPF_OK)
        return status;
    *bytes += (int64_t)size;
    if (count > 0 && src)
        return CUDA_CHECK(cudaMemcpy(*dst, src, (size_t)count * elem, cudaMemcpyHostToDevice));
    return CUDA_CHECK(cudaMemset(*dst, 0, size));
}
#endif
