/* Device detection (DESIGN.md decision 2): the CUDA runtime is linked
 * statically, so this runs on a machine without a driver or a GPU and
 * reports why there is no device instead of failing. */
#include "core/error.h"

#include <stdio.h>
#include <string.h>

#ifdef SPF_HAVE_CUDA
#include "gpu/cuda_check.h"
#endif

static spf_status unavailable(spf_device_info *out, const char *reason)
{
    out->available = 0;
    snprintf(out->reason, sizeof out->reason, "%s", reason);
    return SPF_OK;
}

#ifdef SPF_HAVE_CUDA
/* The first two probes are checked by hand rather than through CUDA_CHECK:
 * their errors are the answer ("no driver", "no device"), not a failure, so
 * they must leave no detail message behind. */
static spf_status query_cuda(int device, spf_device_info *out)
{
    (void)cudaRuntimeGetVersion(&out->runtime_version);
    if (cudaDriverGetVersion(&out->driver_version) != cudaSuccess || out->driver_version == 0) {
        out->driver_version = 0;
        return unavailable(out, "no CUDA driver");
    }
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        if (err == cudaErrorNoDevice)
            return unavailable(out, "no CUDA device");
        if (err == cudaErrorInsufficientDriver)
            return unavailable(out, "CUDA driver older than the runtime");
        return unavailable(out, cudaGetErrorString(err));
    }
    if (count == 0)
        return unavailable(out, "no CUDA device");
    if (device >= count) {
        char reason[sizeof out->reason];
        snprintf(reason, sizeof reason, "no CUDA device %d (%d present)", device, count);
        return unavailable(out, reason);
    }
    struct cudaDeviceProp prop;
    if (CUDA_CHECK(cudaGetDeviceProperties(&prop, device)) != SPF_OK) {
        /* A device that exists but cannot be queried is still "not usable":
         * report the recorded statement and error as the reason. */
        spf_status st = unavailable(out, spf_last_error());
        error_clear();
        return st;
    }
#if SPF_CUDA_MIN_ARCH > 0
    /* a kernel launch there would fail with "no kernel image" */
    if (prop.major * 10 + prop.minor < SPF_CUDA_MIN_ARCH) {
        char reason[sizeof out->reason];
        snprintf(reason, sizeof reason, "%.96s is sm_%d%d; this build's kernels need sm_%d or later "
                 "(configure with -DSPF_CUDA_ARCHITECTURES=\"%d%d;90\")", prop.name, prop.major,
                 prop.minor, SPF_CUDA_MIN_ARCH, prop.major, prop.minor);
        return unavailable(out, reason);
    }
#endif
    out->available = 1;
    snprintf(out->name, sizeof out->name, "%s", prop.name);
    out->cc_major = prop.major;
    out->cc_minor = prop.minor;
    out->sm_count = prop.multiProcessorCount;
    out->max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
    out->max_shared_per_block_optin = (int)prop.sharedMemPerBlockOptin;
    out->l2_bytes = prop.l2CacheSize;
    out->total_memory = (int64_t)prop.totalGlobalMem;
    return SPF_OK;
}
#endif

spf_status spf_device_query(int device, spf_device_info *out)
{
    error_clear();
    CHECK_ARG(out != NULL);
    memset(out, 0, sizeof *out);
    out->device = device;
    CHECK_ARG(device >= 0);
#ifdef SPF_HAVE_CUDA
    return query_cuda(device, out);
#else
    return unavailable(out, "built without CUDA");
#endif
}
