/* The generic CSR SpMM kernel (strategy S2), after Sputnik (Gale et al.,
 * "Sparse GPU Kernels for Deep Learning", SC'20), by the names that paper
 * gives its techniques:
 *   - 1-D tiling, row split: a sub-warp of SW threads owns one row of A and
 *     a tile of SW·V columns of C; a block of 128 threads holds 128/SW rows;
 *   - A's row is staged through shared memory in chunks of 32 nonzeros,
 *     loaded cooperatively by the sub-warp, column indices scaled once to
 *     element offsets into B;
 *   - vector memory instructions: V = 4, 2 or 1 elements of B and C per
 *     thread (float4 / float2 / scalar for fp32) as N and alignment allow;
 *   - subwarp tiling for small N: SW ∈ {4, 8, 16, 32};
 *   - row splitting (beyond Sputnik) for few, long rows: RS sub-warps of a
 *     block share one row, each takes a contiguous 1/RS of its nonzeros, and
 *     the parts are summed through shared memory. A thread's loads form a
 *     dependent chain per batch, so with too few threads in flight to hide
 *     the latency (small N, few rows: DLMC ResNet-50 stage 4 at N = 49 ran
 *     at half cuSPARSE's speed) a shorter chain per thread is the fix;
 *   - row swizzle load balancing: blocks take rows in order of decreasing
 *     length (g->row_order), so the long rows start first and the short
 *     ones fill the tail.
 * fp32 accumulation for every storage type; bias and ReLU in the epilogue.
 *
 * The N×K kernel also reads B as the implicit im2col of a convolution's
 * input (issue 14; SparseRT, paper 004 §4.3, gathers the same way: B's
 * element is an offset per nonzero from a base per output position), so
 * a conv needs no im2col in memory: generic_csr_im2col_dispatch.
 *
 * Layouts (spf_layout): the kernel above reads B as K×N. C as N×M (CNM) is
 * the same kernel storing each of its V columns as one element at
 * c[j·M + row]: stores of a sub-warp are strided by M, which costs M·N
 * scattered stores once, against nnz·N loads of B. B as N×K (X of a Linear
 * layer) gets a kernel of its own, csr_generic_bnk_kernel: there the
 * elements of one column j of B are a contiguous row of X, so lanes over N
 * would read addresses K apart; instead the lanes of a sub-warp take a
 * row's nonzeros (coalesced col_idx / values, and gathers from one row of X
 * that stay within a few sectors at DNN sparsities, column indices being
 * sorted), each accumulating V columns of C, then sum across the sub-warp
 * by shuffles (the CSR-vector scheme of Bell & Garland, SC'09).
 *
 * The host side (choice of V and SW, argument and int32 checks) lives in
 * src/strategy/generic/generic.c; this file only instantiates and launches. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <type_traits>

#include "gpu/cuda_check.h"
#include "strategy/generic/generic.h"

namespace {

constexpr int kThreads = 128; /* per block                                  */
constexpr int kChunk = 32;    /* nonzeros of a row staged per round trip    */
constexpr int kBatch = 8;     /* B loads in flight per thread               */
/* Blocks per SM the register budget must allow: 8 × 128 threads leaves 64
 * registers a thread, room for kBatch float4 loads in flight (without the
 * bound ptxas held the kernel to 32-40 registers and spilled). */
constexpr int kMinBlocks = 8;

/* Load V consecutive elements of B (read-only path) as floats; store V
 * floats to C in the storage type. p is aligned to V elements. */
template <typename T, int V> struct vec_io;

template <> struct vec_io<float, 4> {
    static __device__ __forceinline__ void load(const float *p, float *f)
    {
        float4 v = __ldg(reinterpret_cast<const float4 *>(p));
        f[0] = v.x, f[1] = v.y, f[2] = v.z, f[3] = v.w;
    }
    static __device__ __forceinline__ void store(float *p, const float *f)
    {
        *reinterpret_cast<float4 *>(p) = make_float4(f[0], f[1], f[2], f[3]);
    }
};
template <> struct vec_io<float, 2> {
    static __device__ __forceinline__ void load(const float *p, float *f)
    {
        float2 v = __ldg(reinterpret_cast<const float2 *>(p));
        f[0] = v.x, f[1] = v.y;
    }
    static __device__ __forceinline__ void store(float *p, const float *f)
    {
        *reinterpret_cast<float2 *>(p) = make_float2(f[0], f[1]);
    }
};
template <> struct vec_io<float, 1> {
    static __device__ __forceinline__ void load(const float *p, float *f) { f[0] = __ldg(p); }
    static __device__ __forceinline__ void store(float *p, const float *f) { *p = f[0]; }
};

/* 16-bit storage: pairs travel as one 32-bit word (__half2 /
 * __nv_bfloat162), four as one 64-bit word. */
template <typename T> struct pair_of;
template <> struct pair_of<__half> {
    using type = __half2;
    static __device__ __forceinline__ float2 to_float2(type v) { return __half22float2(v); }
    static __device__ __forceinline__ type from_floats(float a, float b)
    {
        return __floats2half2_rn(a, b);
    }
    static __device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
    static __device__ __forceinline__ __half from_float(float v) { return __float2half_rn(v); }
};
template <> struct pair_of<__nv_bfloat16> {
    using type = __nv_bfloat162;
    static __device__ __forceinline__ float2 to_float2(type v) { return __bfloat1622float2(v); }
    static __device__ __forceinline__ type from_floats(float a, float b)
    {
        return __floats2bfloat162_rn(a, b);
    }
    static __device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
    static __device__ __forceinline__ __nv_bfloat16 from_float(float v)
    {
        return __float2bfloat16_rn(v);
    }
};

template <typename T, int V> struct vec_io {
    using P = pair_of<T>;
    using pair = typename P::type;
    static __device__ __forceinline__ void load(const T *p, float *f)
    {
        if constexpr (V == 4) {
            uint2 raw = __ldg(reinterpret_cast<const uint2 *>(p));
            float2 lo = P::to_float2(*reinterpret_cast<const pair *>(&raw.x));
            float2 hi = P::to_float2(*reinterpret_cast<const pair *>(&raw.y));
            f[0] = lo.x, f[1] = lo.y, f[2] = hi.x, f[3] = hi.y;
        } else if constexpr (V == 2) {
            unsigned raw = __ldg(reinterpret_cast<const unsigned *>(p));
            float2 v = P::to_float2(*reinterpret_cast<const pair *>(&raw));
            f[0] = v.x, f[1] = v.y;
        } else {
            unsigned short raw = __ldg(reinterpret_cast<const unsigned short *>(p));
            f[0] = P::to_float(*reinterpret_cast<const T *>(&raw));
        }
    }
    static __device__ __forceinline__ void store(T *p, const float *f)
    {
        if constexpr (V == 4) {
            pair lo = P::from_floats(f[0], f[1]), hi = P::from_floats(f[2], f[3]);
            uint2 raw;
            raw.x = *reinterpret_cast<const unsigned *>(&lo);
            raw.y = *reinterpret_cast<const unsigned *>(&hi);
            *reinterpret_cast<uint2 *>(p) = raw;
        } else if constexpr (V == 2) {
            *reinterpret_cast<pair *>(p) = P::from_floats(f[0], f[1]);
        } else {
            *p = P::from_float(f[0]);
        }
    }
};

/* The lanes of this thread's sub-warp of SW, for __syncwarp / shuffles. */
template <int SW> __device__ __forceinline__ unsigned subwarp_mask()
{
    return SW == 32 ? 0xffffffffu : ((1u << SW) - 1u) << ((threadIdx.x & 31) / SW * SW);
}

/* acc += A's nonzeros begin .. end - 1 times B's rows they name, columns
 * col .. col + V - 1 (a thread's share of a sub-warp's row or piece):
 * the nonzeros are staged through this sub-warp's shared buffers in chunks
 * of kChunk, column indices scaled once to element offsets into B; every
 * lane of the sub-warp calls it (the staging is cooperative), `active`
 * ones load and accumulate. */
template <typename T, int V, int SW>
__device__ __forceinline__ void range_sum(int begin, int end, int n, int col, bool active,
                                          unsigned mask, int lane, float (&s_val)[kChunk],
                                          int (&s_off)[kChunk], const int *__restrict__ col_idx,
                                          const float *__restrict__ values,
                                          const T *__restrict__ b, float (&acc)[V])
{
    for (int base = begin; base < end; base += kChunk) {
        const int len = min(kChunk, end - base);
        for (int k = lane; k < len; k += SW) {
            s_val[k] = values[base + k];
            s_off[k] = col_idx[base + k] * n; /* host checked K·N < 2^31 */
        }
        __syncwarp(mask);
        if (active) {
            const T *bcol = b + col;
            /* B loads issue in batches of kBatch ahead of the FMAs that
             * consume them (memory-level parallelism per thread); the last
             * batch of a short chunk is predicated, which keeps rows shorter
             * than a chunk (most DNN rows at 0.9 sparsity) on the same path. */
#pragma unroll 1
            for (int k0 = 0; k0 < len; k0 += kBatch) {
                float bv[kBatch][V];
#pragma unroll
                for (int k = 0; k < kBatch; ++k) {
                    if (k0 + k < len) {
                        vec_io<T, V>::load(bcol + s_off[k0 + k], bv[k]);
                    } else {
#pragma unroll
                        for (int j = 0; j < V; ++j)
                            bv[k][j] = 0.0f;
                    }
                }
#pragma unroll
                for (int k = 0; k < kBatch; ++k) {
                    const float a = k0 + k < len ? s_val[k0 + k] : 0.0f;
#pragma unroll
                    for (int j = 0; j < V; ++j)
                        acc[j] = fmaf(a, bv[k][j], acc[j]);
                }
            }
        }
        /* The next chunk overwrites the staging buffer. */
        __syncwarp(mask);
    }
}

/* bias, ReLU and the store of a thread's V sums of row `row`, columns col
 * .. col + V - 1, into C (M×N, or N×M when CNM). */
template <typename T, int V, bool CNM>
__device__ __forceinline__ void store_row(float (&acc)[V], int row, int col, int rows, int n,
                                          T *__restrict__ c, const float *__restrict__ bias,
                                          int relu)
{
    const float add = bias ? bias[row] : 0.0f;
#pragma unroll
    for (int j = 0; j < V; ++j) {
        float v = acc[j] + add;
        acc[j] = relu ? fmaxf(v, 0.0f) : v;
    }
    /* host checked M·N < 2^31 */
    if constexpr (CNM) {
#pragma unroll
        for (int j = 0; j < V; ++j)
            vec_io<T, 1>::store(c + (col + j) * rows + row, &acc[j]);
    } else {
        vec_io<T, V>::store(c + row * n + col, acc);
    }
}

/* The pieces of the long rows (generic.h, generic_csr_cut_long_rows), as
 * the row kernel takes them: count ranges of A's nonzeros, each summed
 * into one row of partial (count × N, fp32). */
struct pieces_arg {
    int count;
    const int2 *range;
    float *partial;
};

/* Piece p's sums for columns col .. col + V - 1 into row p of partial;
 * csr_generic_long_sum adds each long row's pieces. */
template <typename T, int V, int SW>
__device__ __forceinline__ void piece_sum(const pieces_arg &cut, int p, int n, int lane,
                                          float (&s_val)[kChunk], int (&s_off)[kChunk],
                                          const int *__restrict__ col_idx,
                                          const float *__restrict__ values,
                                          const T *__restrict__ b)
{
    if (p >= cut.count) /* the whole sub-warp leaves together */
        return;
    const int col = (blockIdx.y * SW + lane) * V;
    const bool active = col < n;
    float acc[V];
#pragma unroll
    for (int j = 0; j < V; ++j)
        acc[j] = 0.0f;
    const int2 range = cut.range[p];
    range_sum<T, V, SW>(range.x, range.y, n, col, active, subwarp_mask<SW>(), lane, s_val, s_off,
                        col_idx, values, b, acc);
    if (active)
        vec_io<float, V>::store(cut.partial + static_cast<size_t>(p) * n + col, acc);
}

/* SPLIT instantiates the row-split path; its split (RS) is then a launch
 * argument, a power of two with SW · RS ≤ kThreads. Without SPLIT split is
 * 1 and the kernel is the plain row-per-sub-warp one: the split path's
 * bookkeeping cost that one 12-14 % on DLMC ResNet-50 stage 4 at N = 392
 * (H200), so it stays out of it. CNM: C is N×M (only the store differs). */
template <typename T, int V, int SW, bool SPLIT, bool CNM>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    csr_generic_kernel(int rows, int count, int n, int split_arg, const int *__restrict__ row_ptr,
                       const int *__restrict__ col_idx, const float *__restrict__ values,
                       const int *__restrict__ row_order, const T *__restrict__ b,
                       T *__restrict__ c, const float *__restrict__ bias, int relu,
                       pieces_arg cut)
{
    constexpr int kSubwarps = kThreads / SW;
    __shared__ float s_val[kSubwarps][kChunk];
    __shared__ int s_off[kSubwarps][kChunk];

    const int split = SPLIT ? split_arg : 1;
    const int sub = threadIdx.x / SW, lane = threadIdx.x % SW;
    const int part = sub % split;
    int block = blockIdx.x;
    if constexpr (!SPLIT) {
        /* The long rows' pieces take the launch's first blocks, so the
         * longest work starts first (as the swizzle orders the rows). */
        const int piece_blocks = (cut.count + kSubwarps - 1) / kSubwarps;
        if (block < piece_blocks) {
            piece_sum<T, V, SW>(cut, block * kSubwarps + sub, n, lane, s_val[sub], s_off[sub],
                                col_idx, values, b);
            return;
        }
        block -= piece_blocks;
    }
    const int slot = block * (kSubwarps / split) + sub / split;
    /* The whole sub-warp leaves together, so the masks below stay exact;
     * with a split every thread must reach the block barrier instead. */
    if (!SPLIT && slot >= count)
        return;
    const bool has_row = slot < count;
    const unsigned mask = subwarp_mask<SW>();
    const int row = has_row ? row_order[slot] : 0;
    const int col = (blockIdx.y * SW + lane) * V;
    /* N is a multiple of V, so a thread's vector is wholly in or out. */
    const bool active = has_row && col < n;

    float acc[V];
#pragma unroll
    for (int j = 0; j < V; ++j)
        acc[j] = 0.0f;

    /* This part's contiguous share of the row's nonzeros. */
    const int row_begin = has_row ? row_ptr[row] : 0, row_end = has_row ? row_ptr[row + 1] : 0;
    const int share = (row_end - row_begin + split - 1) / split;
    const int begin = min(row_end, row_begin + part * share);
    const int end = min(row_end, begin + share);
    range_sum<T, V, SW>(begin, end, n, col, active, mask, lane, s_val[sub], s_off[sub], col_idx,
                        values, b, acc);

    if constexpr (SPLIT) {
        __shared__ float s_part[kThreads][V]; /* the parts' sums */
#pragma unroll
        for (int j = 0; j < V; ++j)
            s_part[threadIdx.x][j] = acc[j];
        __syncthreads();
        /* The first part of each row sums the others: the sub-warps of a row
         * are consecutive, so part p of this lane sits p · SW threads on. */
        if (part != 0)
            return;
        for (int p = 1; p < split; ++p)
#pragma unroll
            for (int j = 0; j < V; ++j)
                acc[j] += s_part[threadIdx.x + p * SW][j];
    }
    if (!active)
        return;
    store_row<T, V, CNM>(acc, row, col, rows, n, c, bias, relu);
}

/* Thread t: long row t / (N / V), columns V · (t mod N / V) onward: its
 * pieces' partial sums added in piece order (the same sum every run), then
 * bias, ReLU and the store. */
template <typename T, int V, bool CNM>
__global__ void csr_generic_long_sum(int long_rows, int rows, int n, const int *__restrict__ long_row,
                                     const int *__restrict__ piece_first,
                                     const float *__restrict__ partial, T *__restrict__ c,
                                     const float *__restrict__ bias, int relu)
{
    const int vectors = n / V; /* N is a multiple of V */
    const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (t >= static_cast<long long>(long_rows) * vectors)
        return;
    const int i = static_cast<int>(t / vectors), col = static_cast<int>(t % vectors) * V;
    float acc[V];
#pragma unroll
    for (int j = 0; j < V; ++j)
        acc[j] = 0.0f;
    for (int p = piece_first[i]; p < piece_first[i + 1]; ++p) {
        float part[V];
        vec_io<float, V>::load(partial + static_cast<size_t>(p) * n + col, part);
#pragma unroll
        for (int j = 0; j < V; ++j)
            acc[j] += part[j];
    }
    store_row<T, V, CNM>(acc, long_row[i], col, rows, n, c, bias, relu);
}

/* Where the N×K kernel reads B: per column j of C a handle (column()),
 * per nonzero q of A a handle (nonzero()), and the element of B under the
 * two (load()).
 * dense_nk: B is an N×K array (X of a Linear layer, an explicit im2col). */
template <typename T> struct dense_nk {
    const T *b;
    const int *col_idx;
    int k;
    __device__ __forceinline__ int column(int j) const { return j * k; } /* K·N < 2^31 */
    __device__ __forceinline__ int nonzero(int q) const { return col_idx[q]; }
    __device__ __forceinline__ float load(int column, int nonzero) const
    {
        float v;
        vec_io<T, 1>::load(b + column + nonzero, &v);
        return v;
    }
};

/* im2col_nk: B is the implicit im2col of a convolution's input (generic.h,
 * generic_im2col): column j is an output position, whose window's corner
 * (y0, x0) and base offset are found once; nonzero q is a filter tap,
 * {offset from the corner, dy << 16 | dx} from the host; the element is
 * the input there, or 0 in the padding. The lanes of a sub-warp take
 * consecutive nonzeros, which in NHWC's (r, s, c) order are neighbouring
 * channels: the gathers stay within a few sectors. */
struct im2col_column {
    int base, y0, x0;
};
template <typename T> struct im2col_nk {
    const T *in;
    generic_im2col x;
    __device__ __forceinline__ im2col_column column(int j) const
    {
        const int pq = x.p * x.q, image = j / pq, at = j - image * pq, p = at / x.q;
        const int y0 = p * x.stride - x.pad, x0 = (at - p * x.q) * x.stride - x.pad;
        /* the input has < 2^31 elements (host checked): the corner's offset
         * fits, negative where the window starts in the padding */
        const int base = x.nhwc ? ((image * x.h + y0) * x.w + x0) * x.c
                                : ((image * x.c) * x.h + y0) * x.w + x0;
        return {base, y0, x0};
    }
    __device__ __forceinline__ int2 nonzero(int q) const
    {
        return __ldg(reinterpret_cast<const int2 *>(x.taps) + q);
    }
    __device__ __forceinline__ float load(im2col_column column, int2 tap) const
    {
        const unsigned y = column.y0 + (tap.y >> 16), xx = column.x0 + (tap.y & 0xffff);
        float v = 0.0f;
        if (y < static_cast<unsigned>(x.h) && xx < static_cast<unsigned>(x.w))
            vec_io<T, 1>::load(in + column.base + tap.x, &v);
        return v;
    }
};

/* B N×K (see the top of the file): sub-warp `sub` owns one row of A and V
 * consecutive columns j0 .. j0 + V - 1 of C (blockIdx.y); lane l takes the
 * row's nonzeros l, l + SW, ... and gathers B's element of each of its V
 * columns (from B, a dense_nk, or from a convolution's input, an
 * im2col_nk), so each of its loads is independent of the others (unrolled
 * for loads in flight). A row's nonzeros are already spread over the
 * lanes, so there is no row split; the row swizzle still orders the rows. */
template <typename T, int V, int SW, bool CNM, typename B>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    csr_generic_bnk_kernel(int rows, int count, int n, const int *__restrict__ row_ptr,
                           const float *__restrict__ values, const int *__restrict__ row_order,
                           B b, T *__restrict__ c, const float *__restrict__ bias, int relu)
{
    const int sub = threadIdx.x / SW, lane = threadIdx.x % SW;
    const int slot = blockIdx.x * (kThreads / SW) + sub;
    /* The whole sub-warp leaves together, so the shuffles' mask stays exact. */
    if (slot >= count)
        return;
    const unsigned mask = subwarp_mask<SW>();
    const int row = row_order[slot];
    const int j0 = blockIdx.y * V;
    const int cols = min(V, n - j0); /* ≥ 1: the grid has ceil(N / V) tiles */
    decltype(b.column(0)) column[V];
#pragma unroll
    for (int j = 0; j < V; ++j)
        column[j] = b.column(j0 + min(j, cols - 1));

    float acc[V];
#pragma unroll
    for (int j = 0; j < V; ++j)
        acc[j] = 0.0f;
    const int end = row_ptr[row + 1];
#pragma unroll 4
    for (int q = row_ptr[row] + lane; q < end; q += SW) {
        const float a = values[q];
        const auto nz = b.nonzero(q);
#pragma unroll
        for (int j = 0; j < V; ++j)
            if (j < cols)
                acc[j] = fmaf(a, b.load(column[j], nz), acc[j]);
    }
    /* Butterfly sum: every lane ends with the sub-warp's totals. */
#pragma unroll
    for (int off = SW / 2; off > 0; off /= 2)
#pragma unroll
        for (int j = 0; j < V; ++j)
            acc[j] += __shfl_xor_sync(mask, acc[j], off, SW);
    /* Lane j stores column j0 + j (V ≤ 4 ≤ SW), picked without indexing
     * the register array dynamically. */
    float v = acc[0];
#pragma unroll
    for (int j = 1; j < V; ++j)
        if (lane == j)
            v = acc[j];
    if (lane >= cols)
        return;
    v += bias ? bias[row] : 0.0f;
    v = relu ? fmaxf(v, 0.0f) : v;
    const int j = j0 + lane;
    vec_io<T, 1>::store(CNM ? c + j * rows + row : c + row * n + j, &v); /* M·N < 2^31 */
}

template <typename T, int V, int SW>
spf_status launch_typed(const generic_csr *g, const generic_launch *l, const void *b, void *c,
                        const float *bias, int relu, cudaStream_t stream)
{
    const int split = l->split;
    if (split < 1 || split * SW > kThreads || (split & (split - 1)) != 0)
        return FAIL(SPF_ERR_INTERNAL, "row split %d with sub-warps of %d", split, SW);
    /* Rows cut into pieces (g->pieces > 0) are the swizzle's first
     * g->long_rows: the pieces take the launch's first blocks, the other
     * rows the rest (csr_generic_kernel), then csr_generic_long_sum adds
     * the pieces. The host cuts rows only where it chose no row split. */
    if (g->pieces > 0 && (split != 1 || l->n > g->partial_n))
        return FAIL(SPF_ERR_INTERNAL, "long-row pieces sized for N = %d, launched with N = %d "
                    "and a row split of %d", g->partial_n, l->n, split);
    const int skip = g->pieces > 0 ? g->long_rows : 0, count = g->ordered - skip;
    const pieces_arg cut = {g->pieces, reinterpret_cast<const int2 *>(g->piece_range), g->partial};
    const int rows_per_block = kThreads / SW / split;
    const long long blocks = (count + rows_per_block - 1) / rows_per_block +
                             (cut.count + kThreads / SW - 1) / (kThreads / SW);
    const bool cnm = l->c_layout == SPF_LAYOUT_N_FIRST;
    if (blocks == 0)
        return SPF_OK;
    const dim3 grid((unsigned)blocks, (unsigned)((l->n + SW * V - 1) / (SW * V)));
    auto kernel = split > 1 ? (cnm ? csr_generic_kernel<T, V, SW, true, true>
                                   : csr_generic_kernel<T, V, SW, true, false>)
                            : (cnm ? csr_generic_kernel<T, V, SW, false, true>
                                   : csr_generic_kernel<T, V, SW, false, false>);
    kernel<<<grid, kThreads, 0, stream>>>(g->rows, count, l->n, split, g->row_ptr, g->col_idx,
                                          g->values, g->row_order + skip,
                                          static_cast<const T *>(b), static_cast<T *>(c), bias,
                                          relu, cut);
    const spf_status st = CUDA_CHECK(cudaGetLastError());
    if (st != SPF_OK || g->pieces == 0)
        return st;
    constexpr int kSumThreads = 256;
    const long long sums = static_cast<long long>(g->long_rows) * (l->n / V);
    auto sum = cnm ? csr_generic_long_sum<T, V, true> : csr_generic_long_sum<T, V, false>;
    sum<<<(unsigned)((sums + kSumThreads - 1) / kSumThreads), kSumThreads, 0, stream>>>(
        g->long_rows, g->rows, l->n, g->long_row, g->piece_first, g->partial, static_cast<T *>(c),
        bias, relu);
    return CUDA_CHECK(cudaGetLastError());
}

template <typename T, int V, int SW, typename B>
spf_status launch_nk(const generic_csr *g, const generic_launch *l, const B &from, void *c,
                     const float *bias, int relu, cudaStream_t stream)
{
    if (l->split != 1)
        return FAIL(SPF_ERR_INTERNAL, "row split %d with B as N×K", l->split);
    const int rows_per_block = kThreads / SW;
    const dim3 grid((unsigned)((g->ordered + rows_per_block - 1) / rows_per_block),
                    (unsigned)((l->n + V - 1) / V));
    auto kernel = l->c_layout == SPF_LAYOUT_N_FIRST ? csr_generic_bnk_kernel<T, V, SW, true, B>
                                                    : csr_generic_bnk_kernel<T, V, SW, false, B>;
    kernel<<<grid, kThreads, 0, stream>>>(g->rows, g->ordered, l->n, g->row_ptr, g->values,
                                          g->row_order, from, static_cast<T *>(c), bias, relu);
    return CUDA_CHECK(cudaGetLastError());
}

template <typename T, int V, int SW>
spf_status launch_bnk(const generic_csr *g, const generic_launch *l, const void *b, void *c,
                      const float *bias, int relu, cudaStream_t stream)
{
    const dense_nk<T> from{static_cast<const T *>(b), g->col_idx, g->cols};
    return launch_nk<T, V, SW>(g, l, from, c, bias, relu, stream);
}

template <typename T, int V, int SW>
spf_status launch_layout(const generic_csr *g, const generic_launch *l, const void *b, void *c,
                         const float *bias, int relu, cudaStream_t stream)
{
    return l->b_layout == SPF_LAYOUT_N_FIRST ? launch_bnk<T, V, SW>(g, l, b, c, bias, relu, stream)
                                             : launch_typed<T, V, SW>(g, l, b, c, bias, relu, stream);
}

/* fn(tag<T>, V, SW) with l's dtype, vector width and sub-warp width as
 * compile-time constants: the one ladder every entry point instantiates
 * its kernels through. */
template <typename T> struct tag {
    using type = T;
};
template <int X> using int_ = std::integral_constant<int, X>;

template <typename T, int V, typename F> spf_status by_subwarp(const generic_launch *l, F &&fn)
{
    switch (l->subwarp) {
    case 4: return fn(tag<T>(), int_<V>(), int_<4>());
    case 8: return fn(tag<T>(), int_<V>(), int_<8>());
    case 16: return fn(tag<T>(), int_<V>(), int_<16>());
    case 32: return fn(tag<T>(), int_<V>(), int_<32>());
    default: return FAIL(SPF_ERR_INTERNAL, "unsupported sub-warp width %d", l->subwarp);
    }
}

template <typename T, typename F> spf_status by_vec(const generic_launch *l, F &&fn)
{
    switch (l->vec) {
    case 4: return by_subwarp<T, 4>(l, fn);
    case 2: return by_subwarp<T, 2>(l, fn);
    case 1: return by_subwarp<T, 1>(l, fn);
    default: return FAIL(SPF_ERR_INTERNAL, "unsupported vector width %d", l->vec);
    }
}

template <typename F> spf_status by_shape(const generic_launch *l, F &&fn)
{
    switch (l->dtype) {
    case SPF_DTYPE_F32: return by_vec<float>(l, fn);
    case SPF_DTYPE_F16: return by_vec<__half>(l, fn);
    case SPF_DTYPE_BF16: return by_vec<__nv_bfloat16>(l, fn);
    }
    return FAIL(SPF_ERR_INTERNAL, "unknown dtype %d", (int)l->dtype);
}

} // namespace

extern "C" spf_status generic_csr_dispatch(const generic_csr *g, const generic_launch *l,
                                           const void *b, void *c, const float *bias, int relu,
                                           void *stream)
{
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    return by_shape(l, [&](auto t, auto v, auto sw) {
        return launch_layout<typename decltype(t)::type, decltype(v)::value, decltype(sw)::value>(
            g, l, b, c, bias, relu, s);
    });
}

extern "C" spf_status generic_csr_im2col_dispatch(const generic_csr *g, const generic_launch *l,
                                                  const generic_im2col *x, const void *in,
                                                  void *c, const float *bias, int relu,
                                                  void *stream)
{
    if (l->b_layout != SPF_LAYOUT_N_FIRST)
        return FAIL(SPF_ERR_INTERNAL, "an implicit im2col is read as N×K only");
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    return by_shape(l, [&](auto t, auto v, auto sw) {
        using T = typename decltype(t)::type;
        const im2col_nk<T> from{static_cast<const T *>(in), *x};
        return launch_nk<T, decltype(v)::value, decltype(sw)::value>(g, l, from, c, bias, relu, s);
    });
}
