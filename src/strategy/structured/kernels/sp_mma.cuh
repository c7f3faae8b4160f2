/* mma.sp m16n8k32 with fp32 accumulation, the instruction both structured
 * kernels (sp_spmm.cu, sp_tile.cu) issue (PTX ISA "Warp-level matrix
 * multiply-accumulate with sparse matrix A"). Device code only. */
#ifndef SPF_STRATEGY_STRUCTURED_SP_MMA_CUH
#define SPF_STRATEGY_STRUCTURED_SP_MMA_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <stdint.h>

/* Metadata of a run of zeros: indices 0 and 1 in every run. */
constexpr uint32_t kSpFreeMeta = 0x44444444u;

/* c += a·b: a the lane's A fragment (sp_format.h), b its B fragment (rows
 * 8i + 2t, +1 of column g in b[i]), e its metadata word, SEL the sparsity
 * selector (the step of the pair: which thread pair of each quad holds
 * its metadata); TYPE is the PTX name of the element type. */
#define SP_MMA(TYPE)                                                                               \
    asm volatile("mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32." TYPE "." TYPE       \
                 ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9,%10,%11}, {%0,%1,%2,%3}, %12, %13;\n"  \
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])                                 \
                 : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b[0]), "r"(b[1]), "r"(b[2]),       \
                   "r"(b[3]), "r"(e), "n"(SEL))
template <int SEL>
__device__ __forceinline__ void mma_sp(float (&c)[4], const uint4 &a, const uint32_t (&b)[4],
                                       uint32_t e, __half)
{
    SP_MMA("f16");
}
template <int SEL>
__device__ __forceinline__ void mma_sp(float (&c)[4], const uint4 &a, const uint32_t (&b)[4],
                                       uint32_t e, __nv_bfloat16)
{
    SP_MMA("bf16");
}
#undef SP_MMA

#endif
