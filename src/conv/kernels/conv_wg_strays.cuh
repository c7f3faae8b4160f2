/* The sparse warpgroup conv kernel's own device code (conv_wg.h,
 * CONV_WG_SPARSE): the 2:4 part's wgmma.sp, the strays on the CUDA cores,
 * the barriers between its two kinds of warpgroup. Device code for sm_90a
 * only. */
#ifndef SPF_CONV_KERNELS_CONV_WG_STRAYS_CUH
#define SPF_CONV_KERNELS_CONV_WG_STRAYS_CUH

#include "conv/kernels/conv_wg_device.cuh"

/* A barrier of the whole block that its two warpgroups reach from their
 * own code (the sparse kernel's): barrier.sync without .aligned, which
 * __syncthreads' bar.sync asks all threads to execute at one place. */
__device__ __forceinline__ void wg_split_sync()
{
    asm volatile("barrier.sync 1;\n" ::: "memory");
}

/* Barrier 2 of the sparse kernel: the strays' warps arrive when done with
 * the stage that takes the wgmma's sums (conv_wg_sums_in_stage), whose
 * warps wait for them there. */
__device__ __forceinline__ void wg_stage_free(bool wait)
{
    if (wait)
        asm volatile("barrier.sync 2, %0;\n" ::"r"((int)CONV_WG_SP_THREADS) : "memory");
    else
        asm volatile("barrier.arrive 2, %0;\n" ::"r"((int)CONV_WG_SP_THREADS) : "memory");
}

/* d += one chunk of the sparse weights (w: its block, conv_wg.h) by the
 * stage's input rows (b), every tap's two k32 steps by wgmma.sp, the A
 * fragments and metadata from w; committed, not waited for. Every tap's
 * fragments are loaded first, then one fence (the PTX ISA asks for one
 * between registers written and a wgmma reading them): a fence a tap
 * drains the tensor cores' queue each time (4238d9c). */
template <typename T, int BN>
__device__ __forceinline__ void wg_sparse_chunk(float (&d)[BN / 2], const uint8_t *w,
                                                const uint8_t *b, const conv_wg_geom &g)
{
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, taps = g.r * g.s;
    const uint32_t *meta = reinterpret_cast<const uint32_t *>(w + taps * CONV_WG_SP_VALUES);
    uint4 a0[CONV_WG_SP_MAX_TAPS], a1[CONV_WG_SP_MAX_TAPS];
    uint32_t e[CONV_WG_SP_MAX_TAPS];
#pragma unroll
    for (int t = 0; t < CONV_WG_SP_MAX_TAPS; t++)
        if (t < taps) {
            const uint4 *v =
                reinterpret_cast<const uint4 *>(w + (t * 4 + warp) * (CONV_WG_SP_VALUES / 4));
            a0[t] = v[lane];
            a1[t] = v[32 + lane];
            e[t] = meta[(t * 4 + warp) * 32 + lane];
        }
    wgmma_fence();
    int r = 0, s = 0; /* tap t's (r, s), without dividing by S */
#pragma unroll
    for (int t = 0; t < CONV_WG_SP_MAX_TAPS; t++)
        if (t < taps) {
            const uint8_t *bt = b + conv_wg_row(&g, 0, r, s) * CONV_WG_ROW;
            if (++s == g.s)
                s = 0, r++;
            wgmma_sp<BN, 0, 0>(d, a0[t], wg_desc(bt), e[t], 1, T());
            wgmma_sp<BN, 1, 0>(d, a1[t], wg_desc(bt + 64), e[t], 1, T());
        }
    wgmma_commit();
}

/* The sparse weights' stray_ptr (conv_wg.h). */
__device__ __forceinline__ const int32_t *wg_stray_ptr(const wg_args &a)
{
    return reinterpret_cast<const int32_t *>(a.sparse + conv_wg_stray_ptr_at(&a.g));
}

/* The strays of block `at` (output channel m, channel c, the tap's stage
 * row shift, value v) into the sums: sums[p][m] += v · B[p + shift][c]
 * for position p = tid of the strays' warpgroups (one a thread, so no two
 * threads write one sum), B read from the stage (1024-byte aligned)
 * through its 128-byte swizzle. A group's inputs and sums are all read
 * before any sum is written, a channel's once at the end of its run in
 * the group (conv_wg.h): two waits for shared memory a group, not two a
 * stray. */
template <typename T, int BN>
__device__ __forceinline__ void wg_strays(float *sums, const uint8_t *b, const wg_args &a, int at,
                                          int tid)
{
    constexpr int G8 = CONV_WG_STRAY_GROUP;
    static_assert(BN <= CONV_WG_STRAY_THREADS, "a position a thread");
    const int32_t *stray_ptr = wg_stray_ptr(a);
    /* two entries (key, value) each */
    const uint4 *pairs = reinterpret_cast<const uint4 *>(a.sparse + conv_wg_strays_at(&a.g));
    if (tid >= BN) /* past the stage's rows */
        return;
    float *mine = sums + tid * CONV_WG_SP_SUMS_ROW;
    const uint32_t row = tid * CONV_WG_ROW; /* the thread's position's */
    const int end = stray_ptr[at + 1] / 2;
    int h = stray_ptr[at] / 2;
    if (h == end)
        return;
    /* the next group's entries loaded while this one's are summed: loaded
     * just before their use, their wait (L1 or L2) was a quarter of the
     * strays' samples (ncu at 4bb890f); the last group loads itself again */
    uint4 next[G8 / 2];
#pragma unroll
    for (int j = 0; j < G8 / 2; j++)
        next[j] = __ldg(pairs + h + j);
    for (; h < end; h += G8 / 2) {
        uint32_t key[G8];
        float v[G8];
#pragma unroll
        for (int j = 0; j < G8 / 2; j++) {
            key[2 * j] = next[j].x, v[2 * j] = __uint_as_float(next[j].y);
            key[2 * j + 1] = next[j].z, v[2 * j + 1] = __uint_as_float(next[j].w);
        }
        const int after = h + G8 / 2 < end ? h + G8 / 2 : h;
#pragma unroll
        for (int j = 0; j < G8 / 2; j++)
            next[j] = __ldg(pairs + after + j);
        float x[G8], sum[G8];
#pragma unroll
        for (int j = 0; j < G8; j++)
            x[j] = elem<T>::to_float(*reinterpret_cast<const T *>(
                b + conv_wg_swizzle(row + (key[j] & CONV_WG_STRAY_AT))));
#pragma unroll
        for (int j = 0; j < G8; j++)
            sum[j] = mine[conv_wg_stray_m(key[j])];
        /* a run's sum so far: from the sum read, through its entries */
#pragma unroll
        for (int j = 0; j < G8; j++) {
            sum[j] = fmaf(v[j], x[j],
                          j > 0 && (key[j - 1] & CONV_WG_STRAY_MORE) ? sum[j - 1] : sum[j]);
            if (!(key[j] & CONV_WG_STRAY_MORE)) /* the same for every thread */
                mine[conv_wg_stray_m(key[j])] = sum[j];
        }
    }
}

/* Every chunk's stray entries of the block's output channels (blocks
 * `first`.. of `count`, contiguous) into L1 at the start, a 128-byte line
 * a thread (t of the strays' warpgroup) at a time: else each group's
 * loads, all four warps' at once, wait on L2 (a few KB a block: ~45-70
 * strays a chunk at 0.9). */
__device__ __forceinline__ void wg_strays_prefetch(const wg_args &a, int first, int count, int t)
{
    const int32_t *stray_ptr = wg_stray_ptr(a);
    const uint8_t *strays = a.sparse + conv_wg_strays_at(&a.g);
    const uintptr_t from =
        reinterpret_cast<uintptr_t>(strays + (size_t)stray_ptr[first] * 8) / 128 * 128;
    const uintptr_t to = reinterpret_cast<uintptr_t>(strays + (size_t)stray_ptr[first + count] * 8);
    for (uintptr_t at = from + t * 128; at < to; at += CONV_WG_STRAY_THREADS * 128)
        asm volatile("prefetch.global.L1 [%0];\n" ::"l"(at));
}

#endif
