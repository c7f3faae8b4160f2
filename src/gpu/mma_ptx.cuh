/* The PTX the tensor-core kernels share (src/strategy/tc, src/strategy/tcfrag):
 * cp.async copies into shared memory, ldmatrix, and mma.sync m16n8k16 with
 * fp32 accumulation (PTX ISA: "Data movement: cp.async", "ldmatrix",
 * "Matrix multiply-accumulate: mma"). Device code, CUDA C++ only. */
#ifndef SPF_GPU_MMA_PTX_CUH
#define SPF_GPU_MMA_PTX_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <stdint.h>

/* What differs between the element types (storage bytes, conversion from
 * the fp32 accumulator and back). */
template <typename T> struct elem;
template <> struct elem<__half> {
    static constexpr int bytes = 2;
    static __device__ __forceinline__ __half from_float(float v) { return __float2half_rn(v); }
    static __device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
};
template <> struct elem<__nv_bfloat16> {
    static constexpr int bytes = 2;
    static __device__ __forceinline__ __nv_bfloat16 from_float(float v)
    {
        return __float2bfloat16_rn(v);
    }
    static __device__ __forceinline__ float to_float(__nv_bfloat16 v)
    {
        return __bfloat162float(v);
    }
};
template <> struct elem<float> {
    static constexpr int bytes = 4;
    static __device__ __forceinline__ float from_float(float v) { return v; }
    static __device__ __forceinline__ float to_float(float v) { return v; }
};

static __device__ __forceinline__ uint32_t smem_addr(const void *p)
{
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

/* 16 bytes global → shared; src_bytes < 16 (a multiple of 2) fills the
 * rest with zeros (0: no read at all). Only whole pieces go by cp.async:
 * compute-sanitizer's memcheck counts a zero-filling cp.async as a read of
 * all 16 bytes (H200: a piece of 8 bytes at a buffer's end was reported
 * out of bounds), so a partial piece is read element by element and
 * stored plainly. Either way the piece is in place once the caller's
 * cp.async wait and barrier are passed. */
/* The plain path: src_bytes (a multiple of 2, at most 16) read element by
 * element, whatever src's alignment, zeros after them. */
static __device__ __forceinline__ void copy16_plain(void *dst, const void *src, int src_bytes)
{
    union {
        uint4 v;
        uint16_t h[8];
    } piece = {};
    for (int i = 0; i < src_bytes / 2; i++)
        piece.h[i] = static_cast<const uint16_t *>(src)[i];
    *static_cast<uint4 *>(dst) = piece.v;
}
static __device__ __forceinline__ void copy16(void *dst, const void *src, int src_bytes)
{
    if (src_bytes == 16) {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(dst)),
                     "l"(src));
        return;
    }
    copy16_plain(dst, src, src_bytes);
}
/* 16 bytes global → shared by cp.async, or 16 zeros where src_bytes is 0
 * (src must still be a readable 16 bytes: memcheck counts the copy as a
 * read, above): a branch-free copy for gathers that meet padding. */
static __device__ __forceinline__ void copy16_or_zero(void *dst, const void *src, int src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)),
                 "l"(src), "r"(src_bytes));
}
static __device__ __forceinline__ void copy_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> static __device__ __forceinline__ void copy_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}
/* wait until at most `pending` groups are in flight (0 ≤ pending ≤ 3) */
static __device__ __forceinline__ void copy_wait_dynamic(int pending)
{
    switch (pending) {
    case 0: copy_wait<0>(); break;
    case 1: copy_wait<1>(); break;
    case 2: copy_wait<2>(); break;
    default: copy_wait<3>(); break;
    }
}

static __device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4],
                                                 uint32_t b0, uint32_t b1, __half)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
static __device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4],
                                                 uint32_t b0, uint32_t b1, __nv_bfloat16)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* ldmatrix of two 8×8 b16 matrices (x2) or four (x4), transposed or not. */
template <bool TRANS>
static __device__ __forceinline__ void ldsm_x4(const void *p, uint32_t (&r)[4])
{
    if (TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(smem_addr(p)));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(smem_addr(p)));
}
template <bool TRANS>
static __device__ __forceinline__ void ldsm_x2(const void *p, uint32_t (&r)[2])
{
    if (TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
                     : "=r"(r[0]), "=r"(r[1])
                     : "r"(smem_addr(p)));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
                     : "=r"(r[0]), "=r"(r[1])
                     : "r"(smem_addr(p)));
}

#endif
