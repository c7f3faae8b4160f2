/* The warpgroup MMA of the structured Hopper kernels (sp_wgmma.sm90a.cu,
 * sp_tma.sm90a.cu): wgmma.mma_async.sp m64nNk32 with A from registers in
 * the format's fragment order (sp_format.h) and B through a shared-memory
 * matrix descriptor (PTX ISA "Asynchronous warpgroup level matrix
 * multiply-accumulate"); the mbarrier steps their stages pass on are
 * gpu/bulk_copy.cuh's.
 * Device code for sm_90a only. */
#ifndef SPF_STRATEGY_STRUCTURED_SP_WGMMA_CUH
#define SPF_STRATEGY_STRUCTURED_SP_WGMMA_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <stdint.h>

#include "gpu/bulk_copy.cuh"
#include "gpu/mma_ptx.cuh"

#define SP_D8(i)                                                                                   \
    "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]),    \
        "+f"(d[i + 6]), "+f"(d[i + 7])
#define SP_D32(i) SP_D8(i), SP_D8(i + 8), SP_D8(i + 16), SP_D8(i + 24)
#define SP_D64(i) SP_D32(i), SP_D32(i + 32)
#define SP_D128(i) SP_D64(i), SP_D64(i + 64)

/* d = a·B + (scale_d ? d : 0): a the warp's A fragment (sp_format.h), B
 * by desc, e the metadata word, SEL the sparsity selector (the step of the
 * pair), MN the transpose bit (B MN-major). */
/* m64n64k32: 32 accumulators a thread. */
#define SP_WGMMA_64(TYPE)                                                                          \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %38, 0;\n"                                      \
                 "wgmma.mma_async.sp.sync.aligned.m64n64k32.f32." TYPE "." TYPE " "                \
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,"                 \
                 "%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, "                      \
                 "{%32,%33,%34,%35}, %36, %37, %39, p, 1, 1, %40;\n}\n"                            \
                 : SP_D32(0)                                                                       \
                 : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "l"(desc), "r"(e), "r"(scale_d),         \
                   "n"(SEL), "n"(MN))

/* m64n128k32: 64 accumulators a thread. */
#define SP_WGMMA_128(TYPE)                                                                         \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %70, 0;\n"                                      \
                 "wgmma.mma_async.sp.sync.aligned.m64n128k32.f32." TYPE "." TYPE " "               \
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,"                 \
                 "%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,"                \
                 "%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,"                \
                 "%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, "                      \
                 "{%64,%65,%66,%67}, %68, %69, %71, p, 1, 1, %72;\n}\n"                            \
                 : SP_D64(0)                                                                       \
                 : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "l"(desc), "r"(e), "r"(scale_d),         \
                   "n"(SEL), "n"(MN))

/* m64n256k32: 128 accumulators a thread. */
#define SP_WGMMA_256(TYPE)                                                                         \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %134, 0;\n"                                     \
                 "wgmma.mma_async.sp.sync.aligned.m64n256k32.f32." TYPE "." TYPE " "               \
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,"                 \
                 "%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,"                \
                 "%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,"                \
                 "%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,"                \
                 "%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,"                \
                 "%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,"                \
                 "%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,"                 \
                 "%111,%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,"                    \
                 "%123,%124,%125,%126,%127}, "                                                     \
                 "{%128,%129,%130,%131}, %132, %133, %135, p, 1, 1, %136;\n}\n"                    \
                 : SP_D128(0)                                                                      \
                 : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "l"(desc), "r"(e), "r"(scale_d),         \
                   "n"(SEL), "n"(MN))

template <int BN, int SEL, int MN>
__device__ __forceinline__ void wgmma_sp(float (&d)[BN / 2], const uint4 &a, uint64_t desc,
                                         uint32_t e, int scale_d, __half)
{
    if constexpr (BN == 64)
        SP_WGMMA_64("f16");
    else if constexpr (BN == 128)
        SP_WGMMA_128("f16");
    else
        SP_WGMMA_256("f16");
}
template <int BN, int SEL, int MN>
__device__ __forceinline__ void wgmma_sp(float (&d)[BN / 2], const uint4 &a, uint64_t desc,
                                         uint32_t e, int scale_d, __nv_bfloat16)
{
    if constexpr (BN == 64)
        SP_WGMMA_64("bf16");
    else if constexpr (BN == 128)
        SP_WGMMA_128("bf16");
    else
        SP_WGMMA_256("bf16");
}

/* A matrix descriptor (PTX ISA "Matrix Descriptor Format"): start
 * address, leading and stride byte offsets, each in 16-byte units, and
 * the swizzle mode (bits 62-63: 0 none, 1 the 128-byte swizzle, whose
 * atoms must start 1024-byte aligned). */
__device__ __forceinline__ uint64_t descriptor(const void *p, uint32_t leading, uint32_t stride,
                                               bool swizzle128 = false)
{
    const uint32_t addr = smem_addr(p);
    return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) |
           static_cast<uint64_t>((leading >> 4) & 0x3FFF) << 16 |
           static_cast<uint64_t>((stride >> 4) & 0x3FFF) << 32 |
           static_cast<uint64_t>(swizzle128) << 62;
}

__device__ __forceinline__ void wgmma_fence()
{
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit()
{
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

#endif
