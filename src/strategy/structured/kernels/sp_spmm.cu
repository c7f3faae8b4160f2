/* The structured stream kernel (sp_kernel.h says how the work is cut,
 * sp_format.h what the format holds). Instantiated for fp16 and bf16 × nb ∈ {1, 2, 4,
 * 8} × rt ∈ {1, 2} × gathered (V:2:M) or not (2:4).
 *
 * At the small N this is for, the bytes of A bound the time: 2:4 moves
 * 1.125 bytes a weight against dense fp16's 2 (PTX ISA "Sparse matrix
 * storage"), so a warp keeps the next step pair's A loads in flight while
 * it multiplies, and A is read past L1 (it is read once; L1 keeps B). */
#include <cuda_runtime.h>

#include <stdint.h>

#include "gpu/cuda_check.h"
#include "gpu/epilogue.cuh"
#include "gpu/mma_ptx.cuh"
#include "gpu/smem_limit.cuh"
#include "strategy/structured/kernels/sp_mma.cuh"
#include "strategy/structured/sp_kernel.h"

namespace {

struct args {
    const uint4 *values;
    const uint32_t *meta;
    const int32_t *gather; /* V:2:M: [block of v rows][kc]; NULL for 2:4 */
    int32_t m, k, n, tiles, pairs, v, kc;
    const void *b;
    int64_t b_row, b_col; /* element (kk, j) at b[kk·b_row + j·b_col] */
    void *c;
    int64_t c_row, c_col;
    const float *bias;
    int relu;
    const int32_t *row_map; /* always NULL: the epilogue's argument */
    int vector_b;           /* B's rows allow 16-byte loads (take_operands) */
    int pair_b;             /* B is N×K and two adjacent k are one aligned word */
    int kn_pairs;           /* B is K×N and two adjacent columns are one aligned word */
};

/* Read once: past L1, which keeps the rows of B. */
__device__ __forceinline__ uint4 load_stream(const uint4 *p)
{
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}
__device__ __forceinline__ uint32_t load_stream(const uint32_t *p)
{
    uint32_t v;
    asm volatile("ld.global.nc.L1::no_allocate.u32 %0, [%1];\n" : "=r"(v) : "l"(p));
    return v;
}

/* Step pair p's A fragments and metadata of the block's rt tiles; zeros
 * (with valid metadata) past the last tile or pair. */
template <int RT>
__device__ __forceinline__ void load_a(const args &a, int tile0, int p, int lane, uint4 (&v)[RT][2],
                                       uint32_t (&e)[RT])
{
#pragma unroll
    for (int r = 0; r < RT; r++) {
        if (tile0 + r < a.tiles && p < a.pairs) {
            const int64_t frag = static_cast<int64_t>(tile0 + r) * a.pairs + p;
            v[r][0] = load_stream(a.values + frag * 64 + lane);
            v[r][1] = load_stream(a.values + frag * 64 + 32 + lane);
            e[r] = load_stream(a.meta + frag * 32 + lane);
        } else {
            v[r][0] = v[r][1] = make_uint4(0, 0, 0, 0);
            e[r] = kSpFreeMeta;
        }
    }
}

/* B rows k0 and k1 of column j as one word (k0 in the low half); zeros
 * past K and N. Every lane of the warp calls it (a shuffle). */
template <bool GATHER>
__device__ __forceinline__ uint32_t b_pair(const args &a, const unsigned short *b, int k0, int k1,
                                           int j, int lane)
{
    if (a.kn_pairs) {
        /* B K×N: the lanes of columns j and j ^ 1 (4 apart) load one word
         * each, both columns of row k0 (j even) or k1 (j odd), and swap
         * halves: one load a lane where two 16-bit ones were (the K×N
         * plans ran 1.6× slower than the N×K ones at N = 16) */
        const bool odd = lane & 4;
        const int jj = j & ~1, kk = odd ? k1 : k0;
        uint32_t w = 0u;
        if ((GATHER || kk < a.k) && jj < a.n) /* N even: jj + 1 < N too */
            w = __ldg(reinterpret_cast<const uint32_t *>(b + static_cast<int64_t>(kk) * a.b_row + jj));
        const uint32_t other = __shfl_xor_sync(0xffffffffu, w, 4);
        return odd ? __byte_perm(other, w, 0x7632) : __byte_perm(w, other, 0x5410);
    }
    if (j >= a.n)
        return 0u;
    const unsigned short *col = b + static_cast<int64_t>(j) * a.b_col;
    if (!GATHER && a.pair_b && k1 < a.k) /* k0 even, k1 = k0 + 1 */
        return __ldg(reinterpret_cast<const uint32_t *>(col + k0));
    uint32_t lo = GATHER || k0 < a.k ? __ldg(col + static_cast<int64_t>(k0) * a.b_row) : 0u;
    uint32_t hi = GATHER || k1 < a.k ? __ldg(col + static_cast<int64_t>(k1) * a.b_row) : 0u;
    return lo | hi << 16;
}

/* The rows of B that lane 4g + t multiplies in step h of pair p: k = 8i +
 * 2t and k + 1 (i = 0 .. 3), gathered for V:2:M. */
template <bool GATHER>
__device__ __forceinline__ void b_rows(const int32_t *gather, int p, int h, int lane,
                                       int (&ks)[4][2])
{
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int k = (2 * p + h) * 32 + 8 * i + 2 * (lane & 3);
        if constexpr (GATHER) {
            const int2 kk = __ldg(reinterpret_cast<const int2 *>(gather + k));
            ks[i][0] = kk.x, ks[i][1] = kk.y;
        } else {
            ks[i][0] = k, ks[i][1] = k + 1;
        }
    }
}

/* The B fragment of rows ks, column j. */
template <bool GATHER>
__device__ __forceinline__ void b_frag(const args &a, const unsigned short *b, const int (&ks)[4][2],
                                       int j, int lane, uint32_t (&bf)[4])
{
#pragma unroll
    for (int i = 0; i < 4; i++)
        bf[i] = b_pair<GATHER>(a, b, ks[i][0], ks[i][1], j, lane);
}

/* Both steps' B fragments of pair p, every column block; zeros past the
 * last pair. */
template <int NB, bool GATHER>
__device__ __forceinline__ void load_b(const args &a, const unsigned short *b,
                                       const int32_t *gather, int p, int n0, int lane,
                                       uint32_t (&bf)[2][NB][4])
{
#pragma unroll
    for (int h = 0; h < 2; h++) {
        int ks[4][2];
        if (p < a.pairs)
            b_rows<GATHER>(gather, p, h, lane, ks);
#pragma unroll
        for (int nb = 0; nb < NB; nb++)
#pragma unroll
            for (int i = 0; i < 4; i++)
                bf[h][nb][i] = p < a.pairs ? b_pair<GATHER>(a, b, ks[i][0], ks[i][1],
                                                           n0 + 8 * nb + (lane >> 2), lane)
                                           : 0u;
    }
}

/* Sum e of the block (tile r, column block nb, accumulator j, packed as
 * (r·NB + nb)·4 + j) of lane to C. */
template <typename T, int NB>
__device__ __forceinline__ void store_sum(const args &a, int tile0, int n0, int e, int lane,
                                          float v)
{
    const int r = e / (NB * 4), nb = e / 4 % NB, j = e % 4;
    const int row = (tile0 + r) * 16 + (lane >> 2) + 8 * (j >> 1);
    const int col = n0 + 8 * nb + 2 * (lane & 3) + (j & 1);
    if (row < a.m && col < a.n)
        store<T>(a, row, col, v);
}

template <typename T, int NB, int RT, bool GATHER>
__global__ void __launch_bounds__(NB >= 4 ? 256 : 512) sp_spmm_kernel(const args a)
{
    extern __shared__ float sums[]; /* [warp][RT·NB·4][32 lanes] */
    constexpr int E = RT * NB * 4;
    const int warps = blockDim.x >> 5, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int tile0 = blockIdx.x * RT, n0 = blockIdx.y * 8 * NB;
    const unsigned short *b = static_cast<const unsigned short *>(a.b);
    const int32_t *gather = nullptr;
    if constexpr (GATHER)
        gather = a.gather + static_cast<int64_t>(tile0 * 16 / a.v) * a.kc;

    float acc[RT][NB][4];
#pragma unroll
    for (int r = 0; r < RT; r++)
#pragma unroll
        for (int nb = 0; nb < NB; nb++)
#pragma unroll
            for (int j = 0; j < 4; j++)
                acc[r][nb][j] = 0.f;

    /* A (and, at nb ≤ 2, B) of the next step pair load while this one
     * multiplies: with B loaded in the same pair its L2 latency was
     * exposed once a pair. Wider column blocks load B a fragment at a
     * time (the registers of a whole pair's would spill). */
    constexpr bool kPrefetchB = NB <= 2;
    uint4 cur[RT][2], nxt[RT][2];
    uint32_t cm[RT], nm[RT], bcur[2][kPrefetchB ? NB : 1][4], bnxt[2][kPrefetchB ? NB : 1][4];
    load_a<RT>(a, tile0, warp, lane, cur, cm);
    if constexpr (kPrefetchB)
        load_b<NB, GATHER>(a, b, gather, warp, n0, lane, bcur);
    for (int p = warp; p < a.pairs; p += warps) {
        load_a<RT>(a, tile0, p + warps, lane, nxt, nm);
        if constexpr (kPrefetchB)
            load_b<NB, GATHER>(a, b, gather, p + warps, n0, lane, bnxt);
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int ks[4][2];
            if constexpr (!kPrefetchB)
                b_rows<GATHER>(gather, p, h, lane, ks);
#pragma unroll
            for (int nb = 0; nb < NB; nb++) {
                uint32_t bf[4];
                if constexpr (kPrefetchB)
#pragma unroll
                    for (int i = 0; i < 4; i++)
                        bf[i] = bcur[h][nb][i];
                else
                    b_frag<GATHER>(a, b, ks, n0 + 8 * nb + (lane >> 2), lane, bf);
#pragma unroll
                for (int r = 0; r < RT; r++) {
                    if (h == 0)
                        mma_sp<0>(acc[r][nb], cur[r][0], bf, cm[r], T());
                    else
                        mma_sp<1>(acc[r][nb], cur[r][1], bf, cm[r], T());
                }
            }
        }
#pragma unroll
        for (int r = 0; r < RT; r++)
            cur[r][0] = nxt[r][0], cur[r][1] = nxt[r][1], cm[r] = nm[r];
        if constexpr (kPrefetchB)
#pragma unroll
            for (int h = 0; h < 2; h++)
#pragma unroll
                for (int nb = 0; nb < NB; nb++)
#pragma unroll
                    for (int i = 0; i < 4; i++)
                        bcur[h][nb][i] = bnxt[h][nb][i];
    }

    if (warps == 1) {
#pragma unroll
        for (int r = 0; r < RT; r++)
#pragma unroll
            for (int nb = 0; nb < NB; nb++)
#pragma unroll
                for (int j = 0; j < 4; j++)
                    store_sum<T, NB>(a, tile0, n0, (r * NB + nb) * 4 + j, lane, acc[r][nb][j]);
        return;
    }
#pragma unroll
    for (int r = 0; r < RT; r++)
#pragma unroll
        for (int nb = 0; nb < NB; nb++)
#pragma unroll
            for (int j = 0; j < 4; j++)
                sums[(warp * E + (r * NB + nb) * 4 + j) * 32 + lane] = acc[r][nb][j];
    __syncthreads();
    for (int i = threadIdx.x; i < E * 32; i += blockDim.x) {
        float s = 0.f;
        for (int w = 0; w < warps; w++) /* a fixed order: the same sums every run */
            s += sums[w * E * 32 + i];
        store_sum<T, NB>(a, tile0, n0, i / 32, i % 32, s);
    }
}

template <typename T, int NB> void *kernel_rt(const sp_config *c, bool gather)
{
    if (c->rt == 1)
        return gather ? (void *)sp_spmm_kernel<T, NB, 1, true> : (void *)sp_spmm_kernel<T, NB, 1, false>;
    if (c->rt == 2)
        return gather ? (void *)sp_spmm_kernel<T, NB, 2, true> : (void *)sp_spmm_kernel<T, NB, 2, false>;
    return nullptr;
}

template <typename T> void *kernel_nb(const sp_config *c, bool gather)
{
    switch (c->nb) {
    case 1: return kernel_rt<T, 1>(c, gather);
    case 2: return kernel_rt<T, 2>(c, gather);
    case 4: return kernel_rt<T, 4>(c, gather);
    case 8: return kernel_rt<T, 8>(c, gather);
    default: return nullptr;
    }
}

void *kernel_for(const sp_config *c, const sp_device *d)
{
    bool gather = d->pattern.v != 0;
    if (c->kind != SP_STREAM || sp_config_refusal(c, &d->pattern))
        return nullptr;
    if (d->dtype == SPF_DTYPE_F16)
        return kernel_nb<__half>(c, gather);
    if (d->dtype == SPF_DTYPE_BF16)
        return kernel_nb<__nv_bfloat16>(c, gather);
    return nullptr;
}

} // namespace

extern "C" spf_status sp_stream_occupancy(const sp_config *c, const sp_device *d, int *blocks)
{
    const void *k = kernel_for(c, d);
    if (!k)
        return FAIL(SPF_ERR_UNSUPPORTED, "structured: no kernel for nb %d, rt %d, %d warps, %s",
                    c->nb, c->rt, c->warps, spf_dtype_name(d->dtype));
    return smem_occupancy(k, sp_config_threads(c), sp_config_smem(c), blocks);
}

extern "C" spf_status sp_stream_launch(const sp_device *d, const sp_config *c,
                                       const spmm_operands *op, void *stream)
{
    const void *k = kernel_for(c, d);
    if (!k)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "structured: config nb %d, rt %d, %d warps for a "
                    "format of V = %d", c->nb, c->rt, c->warps, d->pattern.v);
    int64_t col_blocks = (op->n + 8 * c->nb - 1) / (8 * c->nb);
    int64_t row_blocks = (d->tiles + c->rt - 1) / c->rt;
    if (row_blocks == 0 || col_blocks == 0)
        return SPF_OK;
    if (col_blocks > 65535 || row_blocks > INT32_MAX)
        return FAIL(SPF_ERR_UNSUPPORTED, "structured: %lld × %lld blocks exceed the grid",
                    (long long)row_blocks, (long long)col_blocks);
    args a = {};
    a.values = reinterpret_cast<const uint4 *>(d->values);
    a.meta = d->meta;
    a.gather = d->gather;
    a.m = static_cast<int32_t>(d->rows);
    a.k = static_cast<int32_t>(d->cols);
    a.n = static_cast<int32_t>(op->n);
    a.tiles = static_cast<int32_t>(d->tiles);
    a.pairs = static_cast<int32_t>(d->pairs);
    a.v = d->pattern.v;
    a.kc = static_cast<int32_t>(d->pairs * 64);
    take_operands(a, op, 2);
    a.kn_pairs = op->b_layout == SPF_LAYOUT_N_LAST && op->b_col == 1 && op->b_row % 2 == 0 &&
                 reinterpret_cast<uintptr_t>(op->b) % 4 == 0;
    a.pair_b = op->b_layout == SPF_LAYOUT_N_FIRST && op->b_row == 1 &&
               reinterpret_cast<uintptr_t>(op->b) % 4 == 0 && op->b_col % 2 == 0;
    dim3 grid(static_cast<unsigned>(row_blocks), static_cast<unsigned>(col_blocks));
    return smem_launch(k, grid, sp_config_threads(c), sp_config_smem(c), &a, stream);
}
