/* The warpgroup conv kernels' device code that all three kinds use
 * (conv_wg.h): the stage's descriptors and copies, a chunk's wgmma, the
 * epilogue. Device code for sm_90a only. */
#ifndef SPF_CONV_KERNELS_CONV_WG_DEVICE_CUH
#define SPF_CONV_KERNELS_CONV_WG_DEVICE_CUH

#include "conv/kernels/conv_wg_args.cuh"

#include "gpu/bulk_copy.cuh"
#include "gpu/cluster.cuh"
#include "gpu/grid_dependency.cuh"
#include "gpu/mma_ptx.cuh"
#include "gpu/wgmma_shapes.cuh"
#include "strategy/structured/kernels/sp_wgmma.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

/* A K-major operand at p (rows of 128 bytes, 8-row atoms 1024 bytes apart,
 * the 128-byte swizzle), from any row of an atom (conv_wg_launch). */
__device__ __forceinline__ uint64_t wg_desc(const uint8_t *p)
{
    return descriptor(p, 16, 1024, true);
}

/* The block's tile `tile` of positions: its first image and first output
 * row. */
__device__ __forceinline__ void wg_tile(const conv_wg_geom &g, int tile, int *image0, int *oh0)
{
    const int along = tile / g.row_tiles;
    *image0 = along * g.images;
    *oh0 = (tile - along * g.row_tiles) * g.rows;
}

/* Zeros over the slack past each plane's box in a stage (b: the stage's
 * input rows): read by the taps of positions that are never stored, zeroed
 * once so that they read numbers. Every thread; a proxy fence and a
 * barrier to follow. */
__device__ __forceinline__ void wg_zero_slack(uint8_t *b, const conv_wg_geom &g)
{
    const int box_rows = g.images * g.halo * g.wp, plane_rows = conv_wg_plane_rows(&g);
    for (int plane = 0; plane < conv_wg_planes(&g); plane++) {
        uint4 *slack = reinterpret_cast<uint4 *>(b + (plane * plane_rows + box_rows) * CONV_WG_ROW);
        for (int u = threadIdx.x; u < (plane_rows - box_rows) * (CONV_WG_ROW / 16); u += blockDim.x)
            slack[u] = make_uint4(0, 0, 0, 0);
    }
}

/* Bytes of a chunk's input boxes, one a plane. */
__device__ __forceinline__ uint32_t wg_box_bytes(const conv_wg_geom &g)
{
    return conv_wg_planes(&g) * g.images * g.halo * g.wp * CONV_WG_ROW;
}

/* Tile (image0, oh0)'s boxes of chunk ch into b, completing on bar, whose
 * bytes the caller expects: plane (a, c)'s from input row stride·oh0 + a −
 * pad, pixel c − pad, the map stepping `stride` rows and pixels
 * (conv_wg_row). Thread 0, past grid_dependency_wait: the input is what
 * the stream's previous kernel may write. */
__device__ __forceinline__ void wg_load_input(uint8_t *b, const CUtensorMap *in_map,
                                              const conv_wg_geom &g, int ch, int image0, int oh0,
                                              uint64_t *bar)
{
    const int across = conv_wg_planes_w(&g), plane_bytes = conv_wg_plane_rows(&g) * CONV_WG_ROW;
    for (int plane = 0; plane < conv_wg_planes(&g); plane++) {
        const int a = across > 1 ? plane >> 1 : plane, c = across > 1 ? plane & 1 : 0;
        tma_load_4d(b + plane * plane_bytes, in_map, ch * CONV_WG_CHUNK, c - g.pad,
                    g.stride * oh0 + a - g.pad, image0, bar);
    }
}

/* Chunk ch's weights of every tap (output channels m0..) into w, on bar.
 * Thread 0. */
__device__ __forceinline__ void wg_load_weights(uint8_t *w, const CUtensorMap *w_map,
                                                const conv_wg_geom &g, int ch, int m0,
                                                uint64_t *bar)
{
    for (int t = 0; t < g.r * g.s; t++)
        tma_load(w + t * CONV_WG_A_TAP, w_map, t * g.c + ch * CONV_WG_CHUNK, m0, bar);
}

/* d += one chunk: every tap's weights (w) by the stage's input rows (b)
 * from the tap's later start, 16 channels a wgmma; committed, not waited
 * for. */
template <typename T, int BN>
__device__ __forceinline__ void wg_chunk(float (&d)[BN / 2], const uint8_t *w, const uint8_t *b,
                                         const conv_wg_geom &g)
{
    /* one fence: a fence a tap made the kernel 10-15 % slower on the H200
     * (4238d9c: layer3 at batch 32 22.1 µs against 20.0). ptxas (12.x)
     * serializes these wgmma (C7520) in the staged kernel where wg_args is
     * past 128 bytes (fd19ffa: 27.6 µs), hence the sparse weights' one
     * pointer */
    const int plane_rows = conv_wg_plane_rows(&g);
    wgmma_fence();
    /* ptxas adds a warpgroup.arrive at the head of this loop and of each
     * copy it unrolls (info C7519, every kernel of the three kinds): the
     * taps are a run-time count, and at a branch target it cannot prove the
     * accumulators untouched; a 30-line kernel of one runtime loop of
     * wgmma does the same (bench/results/kernel-budget/). Without it the
     * tap count would be a template argument, twice the kernels (1×1 and
     * 3×3) or more; the arrive is one instruction a tap's four wgmma. */
    int r = 0, s = 0; /* tap t's (r, s), without dividing by S: a division a
                         tap sat between the wgmma (ncu at 98023aa) */
    for (int t = 0; t < g.r * g.s; t++) {
        const int shift = conv_wg_tap_row(&g, plane_rows, r, s);
        if (++s == g.s)
            s = 0, r++;
#pragma unroll
        for (int kk = 0; kk < CONV_WG_CHUNK / 16; kk++)
            wgmma_ss<BN>(d, wg_desc(w + t * CONV_WG_A_TAP + kk * 32),
                         wg_desc(b + shift * CONV_WG_ROW + kk * 32), 1, T());
    }
    wgmma_commit();
}

/* The epilogue of a tile, in two phases. First the sums (plus bias, where
 * not null) by position into shared memory (the accumulators of m64nN:
 * row 16·warp + lane / 4 (+ 8), column 8·(i / 4) + 2·(lane % 4) (+ 1)),
 * added to what is there with ADD (the strays' products); the warpgroup
 * holding d. Then,
 * after a barrier, each thread of the block (THREADS) 8 channels (tid mod
 * 8) of positions tid / 8 + THREADS / 8 · k for the k of `part` mod
 * `parts`: the sums (where parts > 1, the tile's chunks split over a
 * cluster, its slots' in rank order, wg_split_send; plus `more`'s, the
 * same layout, where not null), residual, ReLU, one 16-byte store. Rows
 * of ROW floats (conv_wg_sums_row).
 * With one warp a scheduler nothing hides a chain of dependent
 * instructions, so both loops are unrolled: ADD's reads 32 at a time
 * before their writes (the compiler keeps a read after every earlier
 * write it cannot tell apart, so one by one each waited for shared
 * memory). At 47494d1 the epilogue was a fifth of the sparse kernel's
 * samples on layer3 (ncu), mostly such waits. The store's instructions
 * are what the dense kernel waits for (ncu at 98023aa: a third of its
 * samples, every instruction one warp's turn), so there are few: the
 * position's place stepped, not divided, and its 8 sums read in two
 * 16-byte loads where the rows are aligned. */
template <int BN, int ROW, bool ADD>
__device__ __forceinline__ void wg_epilogue_sums(const float (&d)[BN / 2], float *sums,
                                                 const float *bias, int m0)
{
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int row0 = 16 * warp + lane / 4;
    const float bias0 = bias ? bias[m0 + row0] : 0.0f;
    const float bias8 = bias ? bias[m0 + row0 + 8] : 0.0f;
    auto at = [&](int i) { /* accumulator i's place in sums */
        return (8 * (i / 4) + 2 * (lane % 4) + i % 2) * ROW + row0 + 8 * ((i / 2) % 2);
    };
    /* runs of 32, the last cut short where BN / 2 is no multiple of 32
     * (after unrolling the bound is a constant) */
    constexpr int RUN = ADD ? 32 : BN / 2;
#pragma unroll
    for (int i0 = 0; i0 < BN / 2; i0 += RUN) {
        float before[RUN];
#pragma unroll
        for (int i = 0; i < RUN && i0 + i < BN / 2; i++)
            before[i] = ADD ? sums[at(i0 + i)] : 0.0f;
#pragma unroll
        for (int i = 0; i < RUN && i0 + i < BN / 2; i++)
            sums[at(i0 + i)] = before[i] + d[i0 + i] + ((i0 + i) / 2 % 2 ? bias8 : bias0);
    }
}

/* The 8 floats at p: two 16-byte loads where rows of ROW floats keep them
 * aligned (a quarter warp's, 8 floats apart, 2-way conflicted; ordering
 * the halves to even that out took a dozen more instructions a position,
 * in a loop bound by its instructions). */
template <int ROW>
__device__ __forceinline__ void wg_load8(float (&v)[8], const float *p)
{
    if constexpr (ROW % 4 == 0) {
        const float4 lo = *reinterpret_cast<const float4 *>(p);
        const float4 hi = *reinterpret_cast<const float4 *>(p + 4);
        v[0] = lo.x, v[1] = lo.y, v[2] = lo.z, v[3] = lo.w;
        v[4] = hi.x, v[5] = hi.y, v[6] = hi.z, v[7] = hi.w;
    } else {
#pragma unroll
        for (int e = 0; e < 8; e++)
            v[e] = p[e];
    }
}

/* v += the 8 floats at p */
template <int ROW>
__device__ __forceinline__ void wg_add8(float (&v)[8], const float *p)
{
    float w[8];
    wg_load8<ROW>(w, p);
#pragma unroll
    for (int e = 0; e < 8; e++)
        v[e] += w[e];
}

template <typename T, int BN, int THREADS, int ROW>
__device__ __forceinline__ void wg_epilogue_store(const float *sums, const float *more,
                                                  const wg_args &a, int image0, int oh0, int m0,
                                                  int part, int parts)
{
    const conv_wg_geom &g = a.g;
    const int tid = threadIdx.x;
    constexpr int pass = THREADS / 8; /* positions the threads store at once */
    const int group = tid % 8;
    const int slot = parts > 1 ? conv_wg_slot_floats(&g) : 0;
    /* position tid / 8 + pass·k's image m of the tile, its row i (of the
     * image's halo rows) and column j (of the padded width) */
    const int image_rows = g.halo * g.wp;
    int m = tid / 8 / image_rows, i = (tid / 8 - m * image_rows) / g.wp;
    int j = tid / 8 - m * image_rows - i * g.wp;
    int turn = part, runs = 0; /* k's turn (this block's at 0); this block's runs before k */
#pragma unroll
    for (int k = 0; k < (BN + pass - 1) / pass; k++) {
        const int pos = tid / 8 + pass * k, run = runs;
        if (k > 0)
            for (j += pass; j >= g.wp; j -= g.wp)
                if (++i == g.halo)
                    i = 0, m++;
        const bool mine = turn == 0;
        runs += mine;
        if (--turn < 0)
            turn = parts - 1;
        if (!mine || (BN % pass != 0 && pos >= BN))
            continue;
        const int oh = oh0 + i, image = image0 + m;
        if (m >= g.images || image >= g.n || i >= g.rows || j >= g.q || oh >= g.p)
            continue;
        /* the output pixel in 32 bits: n·p·q (the gather's cols) is below 2^31 */
        const int64_t out_at = (int64_t)((image * g.p + oh) * g.q + j) * g.k + m0 + group * 8;
        const float *at = sums + (parts > 1 ? run * pass + tid / 8 : pos) * ROW + group * 8;
        float v[8];
        wg_load8<ROW>(v, at);
        for (int r = 1; r < parts; r++)
            wg_add8<ROW>(v, at + r * slot);
        if (more)
            wg_add8<ROW>(v, more + pos * ROW + group * 8);
        if (a.residual) {
            const uint4 raw16 =
                *reinterpret_cast<const uint4 *>(static_cast<const T *>(a.residual) + out_at);
            const T *r = reinterpret_cast<const T *>(&raw16);
#pragma unroll
            for (int e = 0; e < 8; e++)
                v[e] += elem<T>::to_float(r[e]);
        }
        uint4 packed;
        T *o = reinterpret_cast<T *>(&packed);
#pragma unroll
        for (int e = 0; e < 8; e++)
            o[e] = elem<T>::from_float(a.relu ? fmaxf(v[e], 0.0f) : v[e]);
        *reinterpret_cast<uint4 *>(static_cast<T *>(a.out) + out_at) = packed;
    }
}

/* The dense kernels' epilogue: barriers before (the sums may reuse a
 * stage), between the phases and after (the next tile's sums). */
template <typename T, int BN>
__device__ __forceinline__ void wg_epilogue(const float (&d)[BN / 2], float *sums,
                                            const wg_args &a, int image0, int oh0, int m0)
{
    __syncthreads();
    wg_epilogue_sums<BN, CONV_WG_SUMS_ROW, false>(d, sums, a.bias, m0);
    __syncthreads();
    wg_epilogue_store<T, BN, CONV_WG_THREADS, CONV_WG_SUMS_ROW>(sums, nullptr, a, image0, oh0, m0,
                                                                0, 1);
    __syncthreads();
}

/* Split over a cluster (conv_wg_split; the block's rank blockIdx.z, the
 * cluster grid z). Each block's sums go to the block that stores their
 * positions: accumulator i's position 8·(i / 4) + 2·(lane % 4) + i % 2 is
 * in run u = i / 8 of CONV_WG_PASS positions, block u mod splits's, at
 * row (u / splits)·16 + the position mod 16 of a slot of
 * conv_wg_share_rows rows. The sums hold `splits` slots received (by
 * sender) and `splits` to send (by receiver). First every thread writes
 * its accumulators (plus the bias, block 0's) into this block's shared
 * memory: its own share into its received slot `rank`, the rest into the
 * slot to send to their block. Then one thread sends each other block its
 * slot, one bulk copy each, into that block's received slot `rank`,
 * completing on that block's mbarrier `in`, which expects the others'
 * bytes (wg_split_expect). Plain stores into the other blocks' shared
 * memory and a cluster barrier that published them (5ec51ab) took layer3
 * at batch 1 from a block's 7 900 cycles active unsplit on two chunks
 * (layer2) to 11 900 split two ways on the same two chunks (ncu at
 * bed19d7), their stalls on the barrier's memory fence and the remote
 * stores. The caller has waited for the cluster: every block has started
 * and set up `in` (CUDA programming guide, distributed shared memory). */
template <int BN>
__device__ __forceinline__ void wg_split_send(const float (&d)[BN / 2], float *sums, uint64_t *in,
                                              const wg_args &a, int m0)
{
    constexpr int ROW = CONV_WG_SUMS_ROW;
    const int lane = threadIdx.x % 32, row0 = 16 * (threadIdx.x / 32) + lane / 4;
    const int rank = (int)blockIdx.z, slot = conv_wg_slot_floats(&a.g);
    const float *bias = rank == 0 ? a.bias : nullptr;
    const float bias0 = bias ? bias[m0 + row0] : 0.0f, bias8 = bias ? bias[m0 + row0 + 8] : 0.0f;
    float *sent = sums + a.g.splits * slot; /* the slots to send, by receiver */
    int owner = 0, row = 0; /* run u's block and first row in its slot */
#pragma unroll
    for (int u = 0; u < (BN / 2 + 7) / 8; u++) {
        float *to = (owner == rank ? sums + rank * slot : sent + owner * slot) + row * ROW + row0;
#pragma unroll
        for (int i = 8 * u; i < 8 * u + 8 && i < BN / 2; i++)
            to[(8 * (i / 4 % 2) + 2 * (lane % 4) + i % 2) * ROW + 8 * (i / 2 % 2)] =
                d[i] + (i / 2 % 2 ? bias8 : bias0);
        if (++owner == a.g.splits)
            owner = 0, row += CONV_WG_PASS;
    }
    /* the writes, seen by the copy engine once every thread is past them */
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    if (threadIdx.x == 0)
        for (int peer = 0; peer < a.g.splits; peer++)
            if (peer != rank)
                bulk_copy_to_peer(sums + rank * slot, sent + peer * slot, slot * 4, in, peer);
}

/* The bytes the other blocks send a block (thread 0, once `in` is set up). */
__device__ __forceinline__ void wg_split_expect(uint64_t *in, const conv_wg_geom &g)
{
    bar_arrive_expect(in, (uint32_t)((g.splits - 1) * conv_wg_slot_floats(&g) * 4));
}

/* The split epilogue's store, once `in` has completed: each block adds
 * its share's slots in rank order and stores them. Inlined, so that its
 * reads of the sums are shared-memory loads, not generic ones (not
 * inlined at 5ec51ab: with the remote stores then, ptxas serialized the
 * staged kernel's wgmma at N = 8, C7520; since wg_split_send, no N). */
template <typename T, int BN>
__device__ __forceinline__ void wg_split_store(const float *sums, const wg_args &a, int image0,
                                               int oh0, int m0)
{
    wg_epilogue_store<T, BN, CONV_WG_THREADS, CONV_WG_SUMS_ROW>(sums, nullptr, a, image0, oh0, m0,
                                                                (int)blockIdx.z, a.g.splits);
}

/* The 1024-byte aligned start of the dynamic shared memory. */
__device__ __forceinline__ uint8_t *wg_smem(uint8_t *raw)
{
    return raw + ((CONV_WG_ALIGN - smem_addr(raw) % CONV_WG_ALIGN) % CONV_WG_ALIGN);
}

/* KIND<T, BN>::kernel() for BN = bn, one of conv_wg.h's CONV_WG_MMA_NS;
 * NULL for another. */
template <template <typename, int> class KIND, typename T>
const void *wg_kernel_of(int bn)
{
    switch (bn) {
#define CONV_WG_N_CASE(n) \
    case n: return KIND<T, n>::kernel();
        CONV_WG_MMA_NS(CONV_WG_N_CASE)
#undef CONV_WG_N_CASE
    }
    return nullptr;
}
template <template <typename, int> class KIND>
const void *wg_kernel_of(spf_dtype dtype, int bn)
{
    return dtype == SPF_DTYPE_F16 ? wg_kernel_of<KIND, __half>(bn)
                                  : wg_kernel_of<KIND, __nv_bfloat16>(bn);
}

#endif
