/* The one checking path for CUDA runtime calls (STYLE.md 10, after ggml's
 * CUDA_CHECK, but returning a status instead of aborting: the library never
 * aborts). A failing call records "file:line: statement: CUDA error string"
 * as the thread's detail message and yields SPF_ERR_CUDA.
 *
 *   TRY(CUDA_CHECK(cudaMalloc(&p, bytes)));     // in a function with `fail:`
 *   return CUDA_CHECK(cudaStreamSynchronize(s));
 *
 * Usable from C and from CUDA C++ (.cu) sources. Only for builds with
 * SPF_HAVE_CUDA. */
#ifndef SPF_GPU_CUDA_CHECK_H
#define SPF_GPU_CUDA_CHECK_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif
#include "core/error.h"
#ifdef __cplusplus
}
#endif

static inline spf_status cuda_status(cudaError_t err, const char *stmt, const char *file, int line,
                                     const char *func)
{
    if (err == cudaSuccess)
        return SPF_OK;
    /* The runtime keeps the last error until read; clear it so a later,
     * unrelated check does not see this one again. */
    (void)cudaGetLastError();
    return error_set(SPF_ERR_CUDA, func, "%s:%d: %s: %s", file, line, stmt, cudaGetErrorString(err));
}

#define CUDA_CHECK(call) cuda_status((call), #call, __FILE__, __LINE__, __func__)

/* cudaFree on a release path: NULL is skipped, and an error is dropped, not
 * recorded, so that the detail message of the failure that led here stays. */
static inline void cuda_free_quiet(void *p)
{
    if (p)
        (void)cudaFree(p);
}

#endif
