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
 * The host side: the launch's programmatic-serialization attribute
 * (smem_limit.cuh's launch_config, `early`), asked for only on compute
 * capability 9.0 or newer, and left off where the environment sets
 * SPFORGE_PDL=0, to measure without it (gpu/early_start.h: the conv TC
 * and warpgroup plans). */
#ifndef SPF_GPU_GRID_DEPENDENCY_CUH
#define SPF_GPU_GRID_DEPENDENCY_CUH

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

#endif
