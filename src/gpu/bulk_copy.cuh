/* The copy engine of Hopper (cp.async.bulk.tensor: a box of a tensor map
 * into shared memory) and the mbarrier its copies complete on (PTX ISA
 * "Tensors", "cp.async.bulk.tensor", "mbarrier"). Shared by the structured
 * Hopper kernels (sm_90a) and the tensor-core conv kernel, which is also
 * built for sm_80: there these steps compile to a trap, and the host never
 * launches a kernel that takes them on a device older than 9.0. */
#ifndef SPF_GPU_BULK_COPY_CUH
#define SPF_GPU_BULK_COPY_CUH

#include <cuda.h>
#include <stdint.h>

#include "gpu/mma_ptx.cuh"

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
#define SPF_BULK_COPY(...) asm volatile(__VA_ARGS__)
#else
#define SPF_BULK_COPY(...) __trap()
#endif

/* The mbarrier of a stage, phases counted by parity. */
__device__ __forceinline__ void bar_init(uint64_t *b, int count)
{
    SPF_BULK_COPY("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(b)), "r"(count));
}
/* after the inits: they are seen by the copy engine and the cluster */
__device__ __forceinline__ void bar_init_fence()
{
    SPF_BULK_COPY("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
/* a plain arrival, releasing this thread's earlier accesses */
__device__ __forceinline__ void bar_arrive(uint64_t *b)
{
    SPF_BULK_COPY("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(b)) : "memory");
}
/* an arrival that also announces `bytes` of copies to complete on b */
__device__ __forceinline__ void bar_arrive_expect(uint64_t *b, uint32_t bytes)
{
    SPF_BULK_COPY("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(b)),
                  "r"(bytes)
                  : "memory");
}
/* until the phase of this parity has completed */
__device__ __forceinline__ void bar_wait(uint64_t *b, int parity)
{
    SPF_BULK_COPY("{\n.reg .pred done;\nwait:\n"
                  "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                  "@!done bra wait;\n}\n" ::"r"(smem_addr(b)),
                  "r"(parity)
                  : "memory");
}

/* bytes (a multiple of 16) of this block's shared src into the shared
 * memory of block `rank` of the cluster at the place of this block's dst,
 * completing on that block's mbarrier at the place of this block's bar
 * (all 16-byte aligned). The block must not exit before the copy has
 * read src: the receiver's wait on its bar says so, so a cluster barrier
 * after every block's wait does. */
__device__ __forceinline__ void bulk_copy_to_peer(void *dst, const void *src, uint32_t bytes,
                                                  uint64_t *bar, int rank)
{
    SPF_BULK_COPY("{\n.reg .b32 to, at;\n"
                  "mapa.shared::cluster.u32 to, %0, %4;\n"
                  "mapa.shared::cluster.u32 at, %3, %4;\n"
                  "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes"
                  " [to], [%1], %2, [at];\n}\n" ::"r"(smem_addr(dst)),
                  "r"(smem_addr(src)), "r"(bytes), "r"(smem_addr(bar)), "r"(rank)
                  : "memory");
}

/* bytes (a multiple of 16) from global src into dst, both 16-byte
 * aligned, completing on bar: a copy of contiguous bytes, no tensor map. */
__device__ __forceinline__ void bulk_load(void *dst, const void *src, uint32_t bytes, uint64_t *bar)
{
    SPF_BULK_COPY("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
                  " [%0], [%1], %2, [%3];\n" ::"r"(smem_addr(dst)),
                  "l"(reinterpret_cast<uint64_t>(src)), "r"(bytes), "r"(smem_addr(bar))
                  : "memory");
}

/* The box at (c0, c1) of a 2-D map (c0 the contiguous dimension) into
 * dst, completing on bar. */
__device__ __forceinline__ void tma_load(void *dst, const CUtensorMap *map, int c0, int c1,
                                         uint64_t *bar)
{
    SPF_BULK_COPY("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                  " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(smem_addr(dst)),
                  "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(smem_addr(bar))
                  : "memory");
}

/* The box at (c0, c1, c2) of a 3-D map. */
__device__ __forceinline__ void tma_load_3d(void *dst, const CUtensorMap *map, int c0, int c1,
                                            int c2, uint64_t *bar)
{
    SPF_BULK_COPY("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
                  " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(smem_addr(dst)),
                  "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2),
                  "r"(smem_addr(bar))
                  : "memory");
}

/* The box at (c0, c1, c2, c3) of a 4-D map (an NHWC tensor's tiled map:
 * channel, pixel, row, image; a box may start outside the tensor). */
__device__ __forceinline__ void tma_load_4d(void *dst, const CUtensorMap *map, int c0, int c1,
                                            int c2, int c3, uint64_t *bar)
{
    SPF_BULK_COPY("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
                  " [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(smem_addr(dst)),
                  "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3),
                  "r"(smem_addr(bar))
                  : "memory");
}

/* An im2col box of an NHWC map (PTX ISA "Im2col mode"): the map's pixels
 * per column from the pixel at (x, y) of image n (the first output
 * position's window corner, padding included), channels c.. of each, each
 * pixel moved by the filter tap (dx, dy); pixels outside the input read as
 * zeros. */
__device__ __forceinline__ void tma_load_im2col(void *dst, const CUtensorMap *map, int c, int x,
                                                int y, int n, int dx, int dy, uint64_t *bar)
{
    SPF_BULK_COPY(
        "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8};\n" ::"r"(smem_addr(dst)),
        "l"(reinterpret_cast<uint64_t>(map)), "r"(c), "r"(x), "r"(y), "r"(n), "r"(smem_addr(bar)),
        "h"(static_cast<uint16_t>(dx)), "h"(static_cast<uint16_t>(dy))
        : "memory");
}

#endif
