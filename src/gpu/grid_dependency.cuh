/* Programmatic dependent launch (sm_90; CUDA programming guide §4.5): a
 * kernel launched with it may start while the stream's previous kernel is
 * still running, and runs the part of its work that does not read what
 * that kernel wrote (its own weights' copies, zeroing shared memory)
 * before waiting for it. At batch 1 a convolution's kernel is a few µs,
 * of which the start and such a preamble are a large share
 * (bench/results/conv/ncu-tc-b1-h200-3d345d7.txt: 19 % of the stall
 * samples at the start, 15 % zeroing the weights' tile).
 *
 * The device side: grid_dependency_wait() before the first read of
 * anything a previous kernel may write (the input, the bias, the
 * residual) and before the first write of anything it may read (the
 * output, a workspace); grid_dependents_launch() lets the stream's next
 * kernel, if launched with the attribute, start once every block of this
 * one has said so or exited. Both do nothing before sm_90.
 *
 * The host side: early_start_allowed() says whether launches may ask for
 * it: on a device of compute capability 9.0 or newer, unless the
 * environment sets SPFORGE_PDL=0 (to measure without it). */
#ifndef SPF_GPU_GRID_DEPENDENCY_CUH
#define SPF_GPU_GRID_DEPENDENCY_CUH

#include <cuda_runtime.h>

#include <stdlib.h>
#include <string.h>

#include "gpu/cuda_check.h"

__device__ __forceinline__ void grid_dependency_wait()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void grid_dependents_launch()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

/* *allowed: 1 where launches on the current device may start early. */
static inline spf_status early_start_allowed(int *allowed)
{
    *allowed = 0;
    const char *env = getenv("SPFORGE_PDL");
    if (env && strcmp(env, "0") == 0)
        return SPF_OK;
    int device = 0, major = 0;
    spf_status status = CUDA_CHECK(cudaGetDevice(&device));
    if (status == SPF_OK)
        status = CUDA_CHECK(
            cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    *allowed = status == SPF_OK && major >= 9;
    return status;
}

#endif
