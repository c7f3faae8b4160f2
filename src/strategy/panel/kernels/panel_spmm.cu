/* The panel kernel (panel_kernel.h says how the work is cut, panel_format.h
 * what the entries hold). Instantiated for fp16 and bf16 × B's layout × the
 * engines' nc (CUDA cores: 8, 16, 32; tensor cores: 16, 32, 64).
 *
 * Per entry a lane does nc/8 shared loads of 16 bytes (the entry's row of
 * the staged B), nc conversions to fp32 and nc FMAs: about 2.2·nc
 * instructions, with the shared-memory gathers of random rows (bank
 * conflicts of about 2×) as the other limit. That is why the strategy is
 * for high sparsity and small N: a tensor-core tile costs the same
 * whatever its sparsity (bench/results/tcfrag/README.md), this kernel
 * costs per nonzero.
 *
 * The tensor-core engine (panel_mma_kernel, panel_kernel.h) pays per
 * nonzero too, but issues far less: per 16 entries one 16-byte load, three
 * shuffles, one ldmatrix.x4 and one mma per 16 columns. Nsight Compute on
 * the CUDA-core engine (4096 × 11008 at 90 %, N = 16, H100): 65 % of the
 * issue slots taken, DRAM idle, about 3.9 warp instructions a nonzero. */
#include <cuda_runtime.h>

#include <stdint.h>

#include "gpu/cuda_check.h"
#include "gpu/epilogue.cuh"
#include "gpu/mma_ptx.cuh"
#include "gpu/smem_limit.cuh"
#include "strategy/panel/panel_kernel.h"

namespace {

constexpr int kMaxThreads = 512;

struct args {
    const uint32_t *entry;
    const int32_t *ptr;
    int32_t m, k, n;
    int32_t width, panels, rows; /* rows: of A per block */
    const void *b;
    int64_t b_row, b_col; /* element (kk, j) at b[kk·b_row + j·b_col] */
    void *c;
    int64_t c_row, c_col;
    const float *bias;
    int relu;
    const int32_t *row_map; /* always NULL: the epilogue's argument */
    int vector_b;           /* B's rows allow 16-byte loads          */
};

/* The two 16-bit elements of a word as floats (low half first). */
template <typename T> __device__ __forceinline__ float2 pair_floats(uint32_t w);
template <> __device__ __forceinline__ float2 pair_floats<__half>(uint32_t w)
{
    return __half22float2(*reinterpret_cast<const __half2 *>(&w));
}
template <> __device__ __forceinline__ float2 pair_floats<__nv_bfloat16>(uint32_t w)
{
    return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u));
}

/* An entry's value (its high half) as a float. */
template <typename T> __device__ __forceinline__ float entry_value(uint32_t e);
template <> __device__ __forceinline__ float entry_value<__half>(uint32_t e)
{
    return __half2float(__ushort_as_half(static_cast<unsigned short>(e >> 16)));
}
template <> __device__ __forceinline__ float entry_value<__nv_bfloat16>(uint32_t e)
{
    return __uint_as_float(e & 0xffff0000u);
}

/* Where element jj of staged row r sits: the row's 16-byte pieces are
 * permuted by bits of r so that the first piece of 32 random rows falls on
 * all eight 16-byte bank groups, not on the 8/(NC/8) that the plain layout
 * gives (rows of 32 bytes start on even groups only): the gathers of
 * random rows are what bounds the kernel (the note above). */
template <int NC> __device__ __forceinline__ int piece_swizzle(int r)
{
    constexpr int pieces = NC / 8, rows_per_line = 8 / pieces; /* 128-byte lines */
    return pieces == 1 ? 0 : (r / rows_per_line) & (pieces - 1);
}
template <int NC> __device__ __forceinline__ int slot(int r, int jj)
{
    return r * NC + (((jj >> 3) ^ piece_swizzle<NC>(r)) << 3) + (jj & 7);
}

/* Copy panel p's rows of B, columns n0 .. n0 + NC - 1, into bs ([kk][NC],
 * pieces swizzled);
 * columns past N as zeros. Rows past K are not copied: no entry of the
 * panel points there. K×N rows go by cp.async; N×K ones are read along K
 * (coalesced) and written transposed. */
template <typename T, int NC, bool BNK>
__device__ __forceinline__ void stage(const args &a, int p, int n0, T *bs)
{
    const int k0 = p * a.width, rows = min(a.width, a.k - k0);
    const T *b = static_cast<const T *>(a.b);
    unsigned short *out = reinterpret_cast<unsigned short *>(bs);
    const unsigned short *in = reinterpret_cast<const unsigned short *>(b);
    if (!BNK && a.vector_b) {
        constexpr int pieces = NC / 8;
        for (int i = threadIdx.x; i < rows * pieces; i += blockDim.x) {
            int r = i / pieces, j = n0 + i % pieces * 8;
            int bytes = min(max(a.n - j, 0) * 2, 16);
            copy16(bs + slot<NC>(r, i % pieces * 8), bytes ? b + (k0 + r) * a.b_row + j : b, bytes);
        }
    } else if (BNK && a.vector_b) {
        const int pieces = (rows + 7) / 8;
        /* adjacent threads take adjacent columns, so that a warp's stores
         * of one k fill a row of the stage (with k adjacent they hit one
         * bank 32 times: the N×K plans ran 2.4× slower than K×N ones) */
        for (int i = threadIdx.x; i < NC * pieces; i += blockDim.x) {
            int jj = i % NC, kk = i / NC * 8, j = n0 + jj;
            const unsigned short *src = in + j * a.b_col + k0 + kk;
            if (j < a.n && kk + 8 <= rows) {
                const uint4 v = __ldg(reinterpret_cast<const uint4 *>(src));
                const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
                for (int u = 0; u < 8; u++)
                    out[slot<NC>(kk + u, jj)] = static_cast<unsigned short>(w[u / 2] >> (16 * (u & 1)));
            } else {
#pragma unroll
                for (int u = 0; u < 8; u++)
                    if (kk + u < rows)
                        out[slot<NC>(kk + u, jj)] = j < a.n ? src[u] : 0;
            }
        }
    } else {
        for (int i = threadIdx.x; i < rows * NC; i += blockDim.x) {
            /* K×N: along a row of B; N×K: along K */
            int r = BNK ? i % rows : i / NC, jj = BNK ? i / rows : i % NC, j = n0 + jj;
            out[slot<NC>(r, jj)] = j < a.n ? in[(k0 + r) * a.b_row + j * a.b_col] : 0;
        }
    }
}

/* The sums of v[0..NC) over the 32 lanes: each exchange step keeps half
 * (H) of the values and swaps the other half with the lane M apart, so NC
 * values become one in log2(NC) steps of NC/2, NC/4, ... shuffles; lanes
 * that still hold partial sums of one column add them last. After it
 * v[0] is the sum of column *col; every 32/NC-th lane holds a distinct
 * column. (Templates, so that every index is a constant and v stays in
 * registers.) */
template <int NC, int H, int M> struct halving {
    static __device__ __forceinline__ void run(float (&v)[NC], int lane, int *col)
    {
        const bool upper = lane & M;
#pragma unroll
        for (int i = 0; i < H; i++) {
            float send = upper ? v[i] : v[i + H];
            float keep = upper ? v[i + H] : v[i];
            v[i] = keep + __shfl_xor_sync(0xffffffffu, send, M);
        }
        *col += upper ? H : 0;
        halving<NC, H / 2, M / 2>::run(v, lane, col);
    }
};
template <int NC, int M> struct halving<NC, 0, M> {
    static __device__ __forceinline__ void run(float (&)[NC], int, int *) {}
};

template <int NC> __device__ __forceinline__ float reduce_columns(float (&v)[NC], int lane, int *col)
{
    *col = 0;
    halving<NC, NC / 2, 16>::run(v, lane, col);
#pragma unroll
    for (int m = 16 / NC; m >= 1; m /= 2)
        v[0] += __shfl_xor_sync(0xffffffffu, v[0], m);
    return v[0];
}

/* The CUDA-core engine's work on one staged panel (bs): the warp's rows
 * r = warp, warp + warps, ... of the block, lanes over a row's entries,
 * the lanes' sums added into the row's sums by halving exchanges. */
template <typename T, int NC>
__device__ __forceinline__ void fma_panel(const args &a, const T *bs, const int32_t *ptr, int rows,
                                          float *sums)
{
    constexpr int U = NC == 32 ? 2 : 4; /* entries a lane has in flight */
    const int warps = blockDim.x >> 5, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    /* The warp's rows r = warp, warp + warps, ... in batches of 32·U
     * entries; the next batch's entries (and the next row's offsets, a
     * row ahead) are loaded before the current batch is multiplied, so
     * that a warp has a batch of DRAM loads in flight while it computes
     * (with one row at a time the loads' latency was exposed). */
    int r = warp;
    int32_t b0 = 0, b1 = 0, nb0 = 0, nb1 = 0;
    if (r < rows)
        b0 = ptr[r], b1 = ptr[r + 1];
    if (r + warps < rows)
        nb0 = ptr[r + warps], nb1 = ptr[r + warps + 1];
    int32_t e = b0;
    uint32_t x[U];
#pragma unroll
    for (int u = 0; u < U; u++)
        x[u] = e + lane + 32 * u < b1 ? __ldg(a.entry + e + lane + 32 * u) : 0u;
    float acc[NC];
#pragma unroll
    for (int j = 0; j < NC; j++)
        acc[j] = 0.f;
    while (r < rows) {
        const bool same = e + 32 * U < b1; /* the next batch is of this row */
        const int rn = same ? r : r + warps;
        const int32_t en = same ? e + 32 * U : nb0, endn = same ? b1 : nb1;
        uint32_t xn[U];
#pragma unroll
        for (int u = 0; u < U; u++)
            xn[u] = rn < rows && en + lane + 32 * u < endn
                        ? __ldg(a.entry + en + lane + 32 * u)
                        : 0u;
        int32_t nnb0 = 0, nnb1 = 0;
        if (!same && rn + warps < rows)
            nnb0 = ptr[rn + warps], nnb1 = ptr[rn + warps + 1];
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (e + lane + 32 * u >= b1)
                break;
            const float v = entry_value<T>(x[u]);
            const int col = static_cast<int>(x[u] & 0xffffu);
            const uint4 *brow = reinterpret_cast<const uint4 *>(bs + col * NC);
            const int sw = piece_swizzle<NC>(col);
#pragma unroll
            for (int q = 0; q < NC / 8; q++) {
                const uint4 w = brow[q ^ sw];
                const uint32_t words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
                for (int h = 0; h < 4; h++) {
                    float2 f = pair_floats<T>(words[h]);
                    acc[8 * q + 2 * h] = fmaf(v, f.x, acc[8 * q + 2 * h]);
                    acc[8 * q + 2 * h + 1] = fmaf(v, f.y, acc[8 * q + 2 * h + 1]);
                }
            }
        }
        if (!same) { /* row r is done */
            if (b0 < b1) {
                int col = 0;
                const float sum = reduce_columns<NC>(acc, lane, &col);
                if ((lane & (32 / NC - 1)) == 0)
                    sums[r * NC + col] += sum; /* one warp owns row r */
#pragma unroll
                for (int j = 0; j < NC; j++)
                    acc[j] = 0.f;
            }
            b0 = nb0, b1 = nb1, nb0 = nnb0, nb1 = nnb1;
        }
        r = rn, e = en;
#pragma unroll
        for (int u = 0; u < U; u++)
            x[u] = xn[u];
    }
}

/* The tensor-core engine's walk over a unit's rows j, j + shares, ... < 8
 * of an octet (run: the runs' offsets in lanes 0-8): past the end of row
 * j's run, on to the next row that has entries. The same in every lane. */
__device__ __forceinline__ void settle(int32_t run, int shares, int &j, int32_t &pos,
                                       int32_t &end)
{
    while (pos >= end && j < 8) {
        j += shares;
        if (j < 8) {
            pos = __shfl_sync(0xffffffffu, run, j);
            end = __shfl_sync(0xffffffffu, run, j + 1);
        }
    }
}

/* A batch: up to U chunks of 16 entries of row j from pos on, the entry
 * this lane points at in each (0, that is row 0 of B times 0, past the
 * run's end); then pos and j move past the batch (settle). */
template <int U>
__device__ __forceinline__ void fill(const args &a, int32_t run, int shares, int kk, int &j,
                                     int32_t &pos, int32_t &end, uint32_t (&x)[U], int &row,
                                     int &chunks)
{
    row = j < 8 ? j : -1;
    chunks = j < 8 ? min(U, (end - pos + 15) / 16) : 0;
#pragma unroll
    for (int c = 0; c < U; c++)
        x[c] = c < chunks && pos + 16 * c + kk < end ? __ldg(a.entry + pos + 16 * c + kk) : 0u;
    if (j < 8) {
        pos += 16 * chunks;
        settle(run, shares, j, pos, end);
    }
}

/* The tensor-core engine's work on one staged panel (bs): units (octet o,
 * share s) of the block's rows, warp by warp; a unit takes the rows
 * j ≡ s (mod shares) of its octet, 16 entries of one row an mma (the
 * note at the top, panel_kernel.h), a batch of up to U chunks of one row
 * loaded while the previous batch is multiplied, and adds its
 * accumulator into those rows' sums. */
template <typename T, int NC>
__device__ __forceinline__ void mma_panel(const args &a, const T *bs, const int32_t *ptr, int rows,
                                          float *sums)
{
    constexpr int MT = NC / 16; /* mma tiles of 16 columns of B */
    constexpr int U = NC == 16 ? 8 : 2; /* chunks in flight (even; no spills at 64 registers) */
    const int warps = blockDim.x >> 5, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    /* ldmatrix.x4.trans: lane i points at matrix i / 8's row i % 8;
     * matrices (entries 0-7, columns 0-7), (0-7, 8-15), (8-15, 0-7),
     * (8-15, 8-15) of the mma tile are the A fragment's four registers */
    const int kk = (lane & 7) + 8 * (lane >> 4), piece = lane >> 3 & 1;
    const int octets = (rows + 7) / 8;
    const int shares = min(8, max(1, warps / max(octets, 1)));
    for (int u = warp; u < octets * shares; u += warps) {
        const int o = u / shares, s = u % shares;
        /* lanes 0-8: the offsets of the octet's runs (rows past the block's
         * are empty) */
        const int32_t run = lane <= 8 ? ptr[min(8 * o + lane, rows)] : 0;
        int j = s;
        int32_t pos = __shfl_sync(0xffffffffu, run, j), end = __shfl_sync(0xffffffffu, run, j + 1);
        settle(run, shares, j, pos, end);
        /* two accumulators, even and odd chunks: consecutive mmas do not
         * wait for each other */
        float d[2][MT][4];
#pragma unroll
        for (int m = 0; m < 2 * MT; m++)
            d[m / MT][m % MT][0] = d[m / MT][m % MT][1] = d[m / MT][m % MT][2] =
                d[m / MT][m % MT][3] = 0.f;
        uint32_t x[U];
        int row, chunks;
        fill<U>(a, run, shares, kk, j, pos, end, x, row, chunks);
        while (chunks > 0) {
            uint32_t xn[U];
            int row_next, chunks_next;
            fill<U>(a, run, shares, kk, j, pos, end, xn, row_next, chunks_next);
            const bool mine = g == row;
#pragma unroll
            for (int c = 0; c < U; c++) {
                if (c == chunks)
                    break;
                /* B operand: the 16 values as (k, k + 1) pairs in column
                 * row: lane 2i holds the pair of entries kk(2i), kk(2i) + 1 */
                const uint32_t other = __shfl_xor_sync(0xffffffffu, x[c], 1);
                const uint32_t pair = __byte_perm(x[c], other, 0x7632);
                const uint32_t lo = __shfl_sync(0xffffffffu, pair, 2 * t);
                const uint32_t hi = __shfl_sync(0xffffffffu, pair, 2 * t + 16);
                const uint32_t b0 = mine ? lo : 0u, b1 = mine ? hi : 0u;
                const int col = static_cast<int>(x[c] & 0xffffu); /* padding: row 0, value 0 */
#pragma unroll
                for (int m = 0; m < MT; m++) {
                    uint32_t af[4];
                    ldsm_x4<true>(bs + slot<NC>(col, 16 * m + 8 * piece), af);
                    mma_16816(d[c & 1][m], af, b0, b1, T());
                }
            }
#pragma unroll
            for (int c = 0; c < U; c++)
                x[c] = xn[c];
            row = row_next, chunks = chunks_next;
        }
        /* d[m][e]: column 16m + g + 8·(e >> 1) of B, octet row 2t + (e & 1) */
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int jj = 2 * t + (e & 1), r = 8 * o + jj;
            if (r < rows && jj % shares == s)
#pragma unroll
                for (int m = 0; m < MT; m++)
                    sums[r * NC + 16 * m + g + 8 * (e >> 1)] += d[0][m][e] + d[1][m][e];
        }
    }
}

/* The block's sums through the epilogue, along C's contiguous dimension. */
template <typename T, int NC>
__device__ __forceinline__ void write_sums(const args &a, const float *sums, int row0, int rows,
                                           int n0)
{
    const bool rows_fast = a.c_row == 1;
    for (int i = threadIdx.x; i < rows * NC; i += blockDim.x) {
        int r = rows_fast ? i % rows : i / NC, jj = rows_fast ? i / rows : i % NC;
        if (n0 + jj < a.n)
            store<T>(a, row0 + r, n0 + jj, sums[r * NC + jj]);
    }
}

template <typename T, int NC, bool BNK, bool MMA>
__global__ void __launch_bounds__(kMaxThreads) panel_spmm_kernel(const args a)
{
    extern __shared__ __align__(16) unsigned char smem[];
    T *const buf0 = reinterpret_cast<T *>(smem);
    T *const buf1 = buf0 + a.width * NC;
    float *const sums = reinterpret_cast<float *>(buf1 + a.width * NC); /* [rows][NC] */
    const int row0 = blockIdx.x * a.rows, n0 = blockIdx.y * NC;
    const int rows = min(a.rows, a.m - row0);
    for (int i = threadIdx.x; i < rows * NC; i += blockDim.x)
        sums[i] = 0.f;

    if (a.panels > 0)
        stage<T, NC, BNK>(a, 0, n0, buf0);
    copy_commit();
    for (int p = 0; p < a.panels; p++) {
        if (p + 1 < a.panels) { /* its buffer was freed by the barrier ending p - 1 */
            stage<T, NC, BNK>(a, p + 1, n0, (p & 1) ? buf0 : buf1);
            copy_commit();
            copy_wait<1>();
        } else {
            copy_wait<0>();
        }
        __syncthreads(); /* panel p landed for every thread */
        const T *bs = (p & 1) ? buf1 : buf0;
        const int32_t *ptr = a.ptr + static_cast<int64_t>(p) * a.m + row0;
        if constexpr (MMA)
            mma_panel<T, NC>(a, bs, ptr, rows, sums);
        else
            fma_panel<T, NC>(a, bs, ptr, rows, sums);
        __syncthreads(); /* panel p's buffer is free; the sums are complete at the end */
    }

    write_sums<T, NC>(a, sums, row0, rows, n0);
}

template <typename T, bool BNK> void *kernel_nc(const panel_config *c)
{
    if (c->mma)
        switch (c->nc) {
        case 16: return (void *)panel_spmm_kernel<T, 16, BNK, true>;
        case 32: return (void *)panel_spmm_kernel<T, 32, BNK, true>;
        case 64: return (void *)panel_spmm_kernel<T, 64, BNK, true>;
        default: return nullptr;
        }
    switch (c->nc) {
    case 8: return (void *)panel_spmm_kernel<T, 8, BNK, false>;
    case 16: return (void *)panel_spmm_kernel<T, 16, BNK, false>;
    case 32: return (void *)panel_spmm_kernel<T, 32, BNK, false>;
    default: return nullptr;
    }
}

void *kernel_for(const panel_config *c, spf_dtype dtype, spf_layout b_layout)
{
    bool bnk = b_layout == SPF_LAYOUT_N_FIRST;
    if (dtype == SPF_DTYPE_F16)
        return bnk ? kernel_nc<__half, true>(c) : kernel_nc<__half, false>(c);
    if (dtype == SPF_DTYPE_BF16)
        return bnk ? kernel_nc<__nv_bfloat16, true>(c) : kernel_nc<__nv_bfloat16, false>(c);
    return nullptr;
}

} // namespace

extern "C" spf_status panel_config_occupancy(const panel_config *c, spf_dtype dtype,
                                             spf_layout b_layout, int *blocks)
{
    const void *k = kernel_for(c, dtype, b_layout);
    if (!k)
        return FAIL(SPF_ERR_UNSUPPORTED, "panel: no kernel for nc %d%s, %s", c->nc,
                    c->mma ? " on tensor cores" : "", spf_dtype_name(dtype));
    size_t smem = panel_config_smem(c);
    int device = 0, most = 0;
    spf_status status = CUDA_CHECK(cudaGetDevice(&device));
    if (status == SPF_OK)
        status = CUDA_CHECK(
            cudaDeviceGetAttribute(&most, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    if (status != SPF_OK)
        return status;
    if (smem > static_cast<size_t>(most)) { /* two panels of B do not fit */
        *blocks = 0;
        return SPF_OK;
    }
    return smem_occupancy(k, 32 * c->warps, smem, blocks);
}

extern "C" spf_status panel_launch(const panel_device *d, const panel_config *c,
                                   const spmm_operands *op, void *stream)
{
    const void *k = kernel_for(c, d->dtype, op->b_layout);
    if (!k || c->width != d->width)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "panel: config nc %d, width %d for a format of "
                    "width %d", c->nc, c->width, d->width);
    int64_t col_blocks = (op->n + c->nc - 1) / c->nc;
    int64_t row_blocks = (d->rows + c->rows - 1) / c->rows;
    if (row_blocks == 0 || col_blocks == 0)
        return SPF_OK;
    if (col_blocks > 65535 || row_blocks > INT32_MAX)
        return FAIL(SPF_ERR_UNSUPPORTED, "panel: %lld × %lld blocks exceed the grid",
                    (long long)row_blocks, (long long)col_blocks);
    args a = {};
    a.entry = d->entry;
    a.ptr = d->ptr;
    a.m = static_cast<int32_t>(d->rows);
    a.k = static_cast<int32_t>(d->cols);
    a.n = static_cast<int32_t>(op->n);
    a.width = d->width;
    a.panels = d->panels;
    a.rows = c->rows;
    take_operands(a, op, 2);
    dim3 grid(static_cast<unsigned>(row_blocks), static_cast<unsigned>(col_blocks));
    size_t smem = panel_config_smem(c);
    return smem_launch(k, grid, 32 * c->warps, smem, &a, stream);
}
