/* The tensor-core SpMM kernel over the tc format (tc_kernel.h says what it
 * computes and how the work is cut). Instantiated for fp16, bf16 (mma
 * m16n8k16) and f32 under TF32 (two mma m16n8k8 per tile) × NT ∈ {1, 2, 4,
 * 8} n8 column tiles per warp × B's layout: 24 kernels.
 *
 * A warp's shared memory holds `stages` stages, each one tile: its four
 * masks (32 bytes), its packed values (at most 256) and the 16 rows of B it
 * multiplies, staged as B's layout has them so that cp.async copies 16-byte
 * pieces: B K×N as [k][n] (row pitch NP), B N×K as [n][k] (pitch KP).
 * Pitches are odd multiples of 16 bytes (or of 8 words for TF32's scalar
 * reads), so ldmatrix and the fragment reads hit distinct banks.
 * When B's rows are not 16-byte aligned the same stage is filled by plain
 * loads and stores instead (slower, same result). */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdint.h>

#include "gpu/cuda_check.h"
#include "gpu/epilogue.cuh"
#include "gpu/mma_ptx.cuh"
#include "gpu/smem_limit.cuh"
#include "strategy/tc/tc_kernel.h"

namespace {

struct args {
    const tc_unit *unit;
    int32_t units;
    const int32_t *tile_col;
    const int64_t *tile_value;
    const uint64_t *tile_mask;
    const void *values;
    const int64_t *window_col; /* CONDENSED, else NULL */
    const int32_t *col_list;
    const int32_t *row_map;
    int32_t m, k, n;
    const void *b;
    int64_t b_row, b_col; /* element (kk, j) at b[kk·b_row + j·b_col] */
    void *c;
    int64_t c_row, c_col;
    const float *bias;
    int relu;
    float *workspace;
    int32_t *counters;
    int32_t col_blocks;
    int64_t windows;
    const int64_t *window_tile;
    int32_t kblocks; /* group kernel: column blocks of 16 of K, and its K parts */
    int32_t ksplit;
    int stages;
    int vector_b; /* B's rows allow 16-byte copies */
};

/* A stage's shape (TC_STAGE_BYTES in tc_kernel.h), in elements and bytes. */
template <typename T, int NT, bool BNK> struct stage_shape {
    static constexpr int nb = 8 * NT; /* columns of C per warp */
    static constexpr int np = TC_PITCH_KN(nb);
    static constexpr int kp = TC_PITCH_NK(elem<T>::bytes);
    static constexpr int values_bytes = 256 * elem<T>::bytes;
    static constexpr int bytes = TC_STAGE_BYTES(elem<T>::bytes, nb, BNK);
    static constexpr int b_bytes = TC_B_BYTES(elem<T>::bytes, nb, BNK);
};

/* The row of B the tile's r-th place refers to. */
__device__ __forceinline__ int32_t place_row(const args &a, int64_t list, int32_t col, int r)
{
    return a.window_col ? a.col_list[list + col + r] : col + r;
}

/* Copy tile t's masks and values to at (32 + 256·es bytes): the lanes of
 * one warp. */
template <typename T>
__device__ __forceinline__ void issue_tile(const args &a, int64_t t, unsigned char *at, int lane)
{
    constexpr int es = elem<T>::bytes;
    const unsigned char *vals = static_cast<const unsigned char *>(a.values);
    if (lane < 2)
        copy16(at + 16 * lane, a.tile_mask + 4 * t + 2 * lane, 16);
    int64_t v0 = __ldg(a.tile_value + t), v1 = __ldg(a.tile_value + t + 1);
    int pieces = static_cast<int>((v1 - v0) * es / 16);
    for (int i = lane; i < pieces; i += 32)
        copy16(at + 32 + 16 * i, vals + v0 * es + 16 * i, 16);
}

/* Copy the 16 rows of B at places col.. (list: the window's column list,
 * CONDENSED) to bs: threads `id` of `count` share the pieces. */
template <typename T, int NT, bool BNK>
__device__ __forceinline__ void issue_b(const args &a, int64_t list, int32_t col, int n0, T *bs,
                                        int id, int count)
{
    using S = stage_shape<T, NT, BNK>;
    constexpr int es = elem<T>::bytes;
    const T *b = static_cast<const T *>(a.b);
    if (!BNK) { /* 16 rows of B (K×N), nb columns each, as [k][np] */
        if (a.vector_b) {
            constexpr int per_row = S::nb * es / 16;
            for (int i = id; i < 16 * per_row; i += count) {
                int r = i / per_row, piece = i % per_row;
                int32_t kk = place_row(a, list, col, r);
                int j = n0 + piece * (16 / es);
                int bytes = kk < a.k ? min(max(a.n - j, 0) * es, 16) : 0;
                const T *src = bytes ? b + kk * a.b_row + j : b;
                copy16(bs + r * S::np + piece * (16 / es), src, bytes);
            }
        } else {
            for (int i = id; i < 16 * S::nb; i += count) {
                int r = i / S::nb, jj = i % S::nb, j = n0 + jj;
                int32_t kk = place_row(a, list, col, r);
                bs[r * S::np + jj] =
                    kk < a.k && j < a.n ? b[kk * a.b_row + j * a.b_col] : elem<T>::from_float(0.f);
            }
        }
    } else { /* nb rows of B (N×K), 16 columns each (BLOCKED only), as [n][kp] */
        if (a.vector_b) {
            constexpr int per_row = 16 * es / 16;
            for (int i = id; i < S::nb * per_row; i += count) {
                int r = i / per_row, piece = i % per_row;
                int j = n0 + r, kk = col + piece * (16 / es);
                int bytes = j < a.n ? min(max(a.k - kk, 0) * es, 16) : 0;
                const T *src = bytes ? b + j * a.b_col + kk : b;
                copy16(bs + r * S::kp + piece * (16 / es), src, bytes);
            }
        } else {
            for (int i = id; i < S::nb * 16; i += count) {
                int r = i / 16, kk = col + i % 16, j = n0 + r;
                bs[r * S::kp + i % 16] =
                    kk < a.k && j < a.n ? b[kk * a.b_row + j * a.b_col] : elem<T>::from_float(0.f);
            }
        }
    }
}

/* Issue the copies of tile t into a warp's own stage st (tile, then B). */
template <typename T, int NT, bool BNK>
__device__ __forceinline__ void issue(const args &a, int64_t list, int64_t t, int n0,
                                      unsigned char *st, int lane)
{
    using S = stage_shape<T, NT, BNK>;
    issue_tile<T>(a, t, st, lane);
    issue_b<T, NT, BNK>(a, list, __ldg(a.tile_col + t), n0,
                        reinterpret_cast<T *>(st + 32 + S::values_bytes), lane, 32);
}

/* The A fragments of one tile from its stage: per quadrant q, the lane's
 * two values v0 (bit p0) and v1 (bit p1) (fp16: p1 = p0 + 1, adjacent
 * columns; TF32: p1 = p0 + 4), each at its tile offset = the popcount of
 * the bits before it. below_lo / below_hi mask the bits below p0. */
template <int ES>
__device__ __forceinline__ void decode(const unsigned char *st, uint32_t below_lo, uint32_t below_hi,
                                       int word_hi, int shift, uint32_t (&v)[4][2])
{
    const uint64_t *masks = reinterpret_cast<const uint64_t *>(st);
    int base = 0;
#pragma unroll
    for (int q = 0; q < 4; q++) {
        uint64_t m = masks[q];
        uint32_t lo = static_cast<uint32_t>(m), hi = static_cast<uint32_t>(m >> 32);
        int at = base + __popc(lo & below_lo) + __popc(hi & below_hi);
        uint32_t bits = (word_hi ? hi : lo) >> shift;
        if (ES == 2) {
            const uint16_t *vals = reinterpret_cast<const uint16_t *>(st + 32);
            v[q][0] = bits & 1 ? vals[at] : 0u;
            v[q][1] = bits & 2 ? vals[at + (bits & 1)] : 0u;
        } else {
            const uint32_t *vals = reinterpret_cast<const uint32_t *>(st + 32);
            v[q][0] = bits & 1 ? vals[at] : 0u;
            v[q][1] = bits & 16 ? vals[at + __popc(bits & 15)] : 0u;
        }
        base += __popc(lo) + __popc(hi);
    }
}

__device__ __forceinline__ void mma_1688_tf32(float (&c)[4], uint32_t a0, uint32_t a1,
                                              uint32_t a2, uint32_t a3, uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
__device__ __forceinline__ uint32_t to_tf32(float x)
{
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
    return r;
}

/* One tile's products into acc. fp16 / bf16: A registers a0..a3 are the
 * quadrants in fragment order (tc_format.h), B by ldmatrix: [k][n] staging
 * transposed, [n][k] as is. */
template <typename T, int NT, bool BNK>
__device__ __forceinline__ void multiply(const T *bs, const uint32_t (&v)[4][2], int lane,
                                         float (&acc)[NT][4])
{
    using S = stage_shape<T, NT, BNK>;
    if constexpr (elem<T>::bytes == 2) {
        uint32_t a[4];
#pragma unroll
        for (int q = 0; q < 4; q++)
            a[q] = v[q][0] | v[q][1] << 16;
#pragma unroll
        for (int j = 0; j < NT; j += 2) {
            /* lanes 0-15 address the matrices of column tile j, 16-31 of j + 1 */
            int tile = j + (NT > 1 ? lane >> 4 : 0);
            const T *p = BNK ? bs + (8 * tile + (lane & 7)) * S::kp + (lane >> 3 & 1) * 8
                             : bs + (lane & 15) * S::np + 8 * tile;
            if (NT > 1) {
                uint32_t r[4];
                ldsm_x4<!BNK>(p, r);
                mma_16816(acc[j], a, r[0], r[1], T());
                mma_16816(acc[j + 1], a, r[2], r[3], T());
            } else {
                uint32_t r[2];
                ldsm_x2<!BNK>(p, r);
                mma_16816(acc[j], a, r[0], r[1], T());
            }
        }
    } else {
        int g = lane >> 2, t = lane & 3;
#pragma unroll
        for (int s = 0; s < 2; s++) {
            /* k-step s covers columns 8s..8s+7: quadrants 2s (rows 0-7)
             * and 2s + 1 (rows 8-15) */
            uint32_t a0 = v[2 * s][0], a1 = v[2 * s + 1][0], a2 = v[2 * s][1], a3 = v[2 * s + 1][1];
#pragma unroll
            for (int j = 0; j < NT; j++) {
                float b0, b1;
                if (BNK) {
                    b0 = bs[(8 * j + g) * S::kp + 8 * s + t];
                    b1 = bs[(8 * j + g) * S::kp + 8 * s + t + 4];
                } else {
                    b0 = bs[(8 * s + t) * S::np + 8 * j + g];
                    b1 = bs[(8 * s + t + 4) * S::np + 8 * j + g];
                }
                mma_1688_tf32(acc[j], a0, a1, a2, a3, to_tf32(b0), to_tf32(b1));
            }
        }
    }
}

/* A lane's place in the mma fragments: its bits in a quadrant (fp16 p0 =
 * 8g + 2t, TF32 p0 = 8g + t; PTX ISA "Matrix fragments" of mma m16n8k16 /
 * m16n8k8) and the masks of the bits below p0. */
struct lane_bits {
    uint32_t below_lo, below_hi;
    int word_hi, shift;
};

template <typename T> __device__ __forceinline__ lane_bits lane_bits_of(int lane)
{
    int g = lane >> 2, t = lane & 3;
    int p0 = elem<T>::bytes == 2 ? 8 * g + 2 * t : 8 * g + t;
    return {p0 >= 32 ? ~0u : (1u << p0) - 1, p0 >= 32 ? (1u << (p0 - 32)) - 1 : 0u, p0 >= 32,
            p0 & 31};
}

/* The end of a warp's part of window w: the epilogue straight from the
 * accumulators (rows g and g + 8, columns 2t and 2t + 1 of each n8 tile)
 * when the window is whole (parts 1); else its sums added into the
 * workspace, and the last of the window's parts to arrive (a counter per
 * window and column block) applies the epilogue and leaves workspace and
 * counter zeroed. */
template <typename T, int NT>
__device__ __forceinline__ void finish(const args &a, float (&acc)[NT][4], int64_t w, int parts,
                                       int n0, int lane)
{
    constexpr int nb = 8 * NT;
    int g = lane >> 2, t = lane & 3;
    const int64_t row0 = w * 16;
    if (parts == 1) {
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int64_t row = row0 + g + 8 * (e >> 1);
                int col = n0 + 8 * j + 2 * t + (e & 1);
                if (row < a.m && col < a.n)
                    store<T>(a, row, col, acc[j][e]);
            }
        return;
    }
    int64_t slot = w * a.col_blocks + blockIdx.y;
    float *ws = a.workspace + slot * 16 * nb;
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            atomicAdd(ws + (g + 8 * (e >> 1)) * nb + 8 * j + 2 * t + (e & 1), acc[j][e]);
    __threadfence();
    __syncwarp();
    int last = 0;
    if (lane == 0)
        last = atomicAdd(a.counters + slot, 1) == parts - 1;
    last = __shfl_sync(0xffffffffu, last, 0);
    if (!last)
        return;
    __threadfence();
    for (int i = lane; i < 16 * nb; i += 32) {
        float v = __ldcg(ws + i);
        ws[i] = 0.f;
        int64_t row = row0 + i / nb;
        int col = n0 + i % nb;
        if (row < a.m && col < a.n)
            store<T>(a, row, col, v);
    }
    if (lane == 0)
        a.counters[slot] = 0;
}

/* The unit kernel: each warp its own unit (any format), B staged per warp. */
template <typename T, int NT, bool BNK>
__global__ void __launch_bounds__(256) tc_spmm_kernel(const args a)
{
    using S = stage_shape<T, NT, BNK>;
    extern __shared__ __align__(16) unsigned char smem[];
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int32_t u = blockIdx.x * (blockDim.x >> 5) + warp;
    if (u >= a.units)
        return; /* no block barrier below: warps are independent */
    const tc_unit unit = a.unit[u];
    const int n0 = blockIdx.y * S::nb;
    unsigned char *stages = smem + static_cast<size_t>(warp) * a.stages * S::bytes;
    const int64_t list = a.window_col ? a.window_col[unit.window] : 0;
    const lane_bits lb = lane_bits_of<T>(lane);

    float acc[NT][4];
#pragma unroll
    for (int j = 0; j < NT; j++)
        acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;

    const int sb = S::bytes;
    for (int s = 0; s < a.stages - 1; s++) {
        int64_t tile = unit.tile_begin + s;
        if (tile < unit.tile_end)
            issue<T, NT, BNK>(a, list, tile, n0, stages + s * sb, lane);
        copy_commit();
    }
    /* stage indices advance by one (no division by the run-time stage
     * count): `use` holds tile i, `fill` the stage of tile i - 1 */
    int use = 0, fill = a.stages - 1;
    for (int64_t tile = unit.tile_begin; tile < unit.tile_end; tile++) {
        copy_wait_dynamic(a.stages - 2);
        __syncwarp();
        /* the stage of tile i - 1 is free now: refill it S - 1 tiles ahead */
        int64_t ahead = tile + a.stages - 1;
        if (ahead < unit.tile_end)
            issue<T, NT, BNK>(a, list, ahead, n0, stages + fill * sb, lane);
        copy_commit();
        const unsigned char *st = stages + use * sb;
        uint32_t v[4][2];
        decode<elem<T>::bytes>(st, lb.below_lo, lb.below_hi, lb.word_hi, lb.shift, v);
        multiply<T, NT, BNK>(reinterpret_cast<const T *>(st + 32 + S::values_bytes), v, lane, acc);
        __syncwarp();
        use = use + 1 == a.stages ? 0 : use + 1;
        fill = fill + 1 == a.stages ? 0 : fill + 1;
    }
    copy_wait<0>();
    finish<T, NT>(a, acc, unit.window, unit.parts, n0, lane);
}

/* The group kernel (BLOCKED formats): a block's warps take consecutive
 * windows and walk the same column blocks of a K range together, so the
 * 16 rows of B of each column block are staged once per block, by all its
 * threads, and read by every warp (the unit kernel stages them per warp:
 * as many bytes of B through L2 as a dense fp16 A would take). A warp
 * whose window has no tile at a column block skips its products there.
 * Stage s: B's rows, then each warp's tile (masks and values). K ranges
 * are a.ksplit parts of the column blocks; parts of a window meet in the
 * workspace as split units do. */
template <typename T, int NT, bool BNK>
__global__ void __launch_bounds__(256) tc_spmm_group_kernel(const args a)
{
    using S = stage_shape<T, NT, BNK>;
    extern __shared__ __align__(16) unsigned char smem[];
    const int warps = blockDim.x >> 5, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int64_t w = static_cast<int64_t>(blockIdx.x / a.ksplit) * warps + warp;
    const int part = blockIdx.x % a.ksplit;
    const int32_t kb0 = static_cast<int32_t>(static_cast<int64_t>(a.kblocks) * part / a.ksplit);
    const int32_t kb1 = static_cast<int32_t>(static_cast<int64_t>(a.kblocks) * (part + 1) / a.ksplit);
    const int n0 = blockIdx.y * S::nb;
    const int tile_bytes = 32 + S::values_bytes;
    const int sb = S::b_bytes + warps * tile_bytes;
    const lane_bits lb = lane_bits_of<T>(lane);

    /* this warp's tiles from the first at or past column kb0 · 16 */
    int64_t cur = 0, end = 0;
    if (w < a.windows) {
        cur = a.window_tile[w], end = a.window_tile[w + 1];
        int64_t hi = end;
        while (cur < hi) {
            int64_t mid = (cur + hi) / 2;
            if (__ldg(a.tile_col + mid) < kb0 * 16)
                cur = mid + 1;
            else
                hi = mid;
        }
    }
    uint32_t present = 0; /* bit s: this warp has a tile in stage s */
    auto issue_stage = [&](int32_t kb, int s) {
        unsigned char *st = smem + static_cast<size_t>(s) * sb;
        issue_b<T, NT, BNK>(a, 0, kb * 16, n0, reinterpret_cast<T *>(st), threadIdx.x, blockDim.x);
        present &= ~(1u << s);
        if (cur < end && __ldg(a.tile_col + cur) == kb * 16) {
            issue_tile<T>(a, cur, st + S::b_bytes + warp * tile_bytes, lane);
            cur++;
            present |= 1u << s;
        }
    };

    float acc[NT][4];
#pragma unroll
    for (int j = 0; j < NT; j++)
        acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
    for (int s = 0; s < a.stages - 1; s++) {
        if (kb0 + s < kb1)
            issue_stage(kb0 + s, s);
        copy_commit();
    }
    int use = 0, fill = a.stages - 1; /* as in the unit kernel */
    for (int32_t kb = kb0; kb < kb1; kb++) {
        copy_wait_dynamic(a.stages - 2);
        __syncthreads(); /* every thread's copies of stage i landed; stage i - 1 is read */
        if (kb + a.stages - 1 < kb1)
            issue_stage(kb + a.stages - 1, fill);
        copy_commit();
        if (present >> use & 1) {
            const unsigned char *st = smem + static_cast<size_t>(use) * sb;
            uint32_t v[4][2];
            decode<elem<T>::bytes>(st + S::b_bytes + warp * tile_bytes, lb.below_lo, lb.below_hi,
                                   lb.word_hi, lb.shift, v);
            multiply<T, NT, BNK>(reinterpret_cast<const T *>(st), v, lane, acc);
        }
        use = use + 1 == a.stages ? 0 : use + 1;
        fill = fill + 1 == a.stages ? 0 : fill + 1;
    }
    copy_wait<0>();
    if (w < a.windows)
        finish<T, NT>(a, acc, w, a.ksplit, n0, lane);
}

template <typename T, int NT, bool BNK> void *kernel_of(int group)
{
    return group ? (void *)tc_spmm_group_kernel<T, NT, BNK> : (void *)tc_spmm_kernel<T, NT, BNK>;
}

template <typename T, bool BNK> void *kernel_nt(int nt, int group)
{
    switch (nt) {
    case 1: return kernel_of<T, 1, BNK>(group);
    case 2: return kernel_of<T, 2, BNK>(group);
    case 4: return kernel_of<T, 4, BNK>(group);
    default: return kernel_of<T, 8, BNK>(group);
    }
}

template <typename T> void *kernel_layout(int nt, int bnk, int group)
{
    return bnk ? kernel_nt<T, true>(nt, group) : kernel_nt<T, false>(nt, group);
}

void *kernel_for(const tc_config *c, spf_dtype dtype, spf_layout b_layout)
{
    int bnk = b_layout == SPF_LAYOUT_N_FIRST;
    switch (dtype) {
    case SPF_DTYPE_F16: return kernel_layout<__half>(c->nt, bnk, c->group);
    case SPF_DTYPE_BF16: return kernel_layout<__nv_bfloat16>(c->nt, bnk, c->group);
    default: return kernel_layout<float>(c->nt, bnk, c->group);
    }
}

} // namespace

extern "C" spf_status tc_config_occupancy(const tc_config *c, spf_dtype dtype, spf_layout b_layout,
                                          int *blocks)
{
    const void *k = kernel_for(c, dtype, b_layout);
    size_t smem = tc_config_smem(c, dtype, b_layout);
    return smem_occupancy(k, 32 * c->warps, smem, blocks);
}

extern "C" spf_status tc_launch(const tc_device *d, const tc_schedule *s, const tc_config *c,
                                const spmm_operands *op, void *stream)
{
    int es = d->dtype == SPF_DTYPE_F32 ? 4 : 2;
    int nb = 8 * c->nt;
    int64_t col_blocks = (op->n + nb - 1) / nb;
    args a = {};
    a.unit = s->unit;
    a.units = s->units;
    a.tile_col = d->tile_col;
    a.tile_value = d->tile_value;
    a.tile_mask = d->tile_mask;
    a.values = d->values;
    a.window_col = d->mode == TC_FORMAT_CONDENSED ? d->window_col : nullptr;
    a.col_list = d->col_list;
    a.row_map = d->row_map;
    a.m = static_cast<int32_t>(d->rows);
    a.k = static_cast<int32_t>(d->cols);
    a.n = static_cast<int32_t>(op->n);
    take_operands(a, op, es);
    a.workspace = s->workspace;
    a.counters = s->counters;
    a.col_blocks = static_cast<int32_t>(col_blocks);
    a.windows = d->windows;
    a.window_tile = d->window_tile;
    a.kblocks = static_cast<int32_t>((d->cols + 15) / 16);
    a.ksplit = s->ksplit > 0 ? s->ksplit : 1;
    a.stages = c->stages;
    int64_t blocks = c->group ? (d->windows + c->warps - 1) / c->warps * a.ksplit
                              : (s->units + c->warps - 1) / c->warps;
    if (blocks == 0)
        return SPF_OK;
    dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(col_blocks));
    size_t smem = tc_config_smem(c, d->dtype, op->b_layout);
    return smem_launch(kernel_for(c, d->dtype, op->b_layout), grid, 32 * c->warps, smem, &a,
                       stream);
}
