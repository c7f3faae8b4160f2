/* The tcfrag kernel (frag_kernel.h says how the work is cut, frag_format.h
 * what the stream holds). Instantiated for fp16 and bf16 × (group, nt) ∈
 * {(1,2), (1,4), (1,8), (2,2), (2,4), (2,8), (4,2), (4,4)} × B's layout.
 *
 * Decoding a tile, per lane (quad q = lane / 4, t = lane % 4):
 *   w    = mask word q (the quad's four bytes), bits = byte t of it;
 *   run  = pre[q] + popcount(w's bytes below t): where the lane's values
 *          start;
 *   P    = the eight slots' byte offsets in the run, a nibble each, by
 *          four multiplies (frag_places.h);
 *   register r = two loads at run + nibble 2r of P (and 2 bytes on),
 *          merged by one PRMT chosen by the register's two mask bits.
 * About thirty integer instructions and eight shared loads a tile for the
 * decode (a first version, with a predicated load per slot, kept the ALU
 * pipe half busy); Nsight Compute counts about 120 warp instructions issued
 * a tile in all, with the staging and the split-K epilogue, against some
 * 430 for the tc kernel (bench/results/tcfrag/README.md). */
#include <cuda_runtime.h>

#include <stdint.h>

#include "gpu/cuda_check.h"
#include "gpu/epilogue.cuh"
#include "gpu/mma_ptx.cuh"
#include "gpu/smem_limit.cuh"
#include "strategy/tcfrag/frag_kernel.h"
#include "strategy/tcfrag/frag_places.h"

namespace {

struct args {
    const unsigned char *data;
    const int64_t *offset;
    const int32_t *chunk_step;
    int32_t chunks, ksplit;
    int64_t groups;
    int32_t m, k, n;
    int32_t capacity; /* bytes of a warp's stage */
    const void *b;
    int64_t b_row, b_col; /* element (kk, j) at b[kk·b_row + j·b_col] */
    void *c;
    int64_t c_row, c_col;
    const float *bias;
    int relu;
    const int32_t *row_map;
    float *workspace;
    int32_t *counters;
    int64_t ws_pitch; /* columns of the workspace: column blocks · 8·nt */
    int stages;
    int vector_b; /* B's rows allow 16-byte copies */
};

template <int NT, bool BNK> struct b_stage {
    static constexpr int nb = 8 * NT;
    static constexpr int np = FRAG_PITCH_KN(nb);
    static constexpr int kp = FRAG_PITCH_NK;
    static constexpr int elems = BNK ? nb * kp : FRAG_CHUNK_STEPS * 16 * np;
};

/* Copy rows k0 .. k0 + rows - 1 of B, columns n0 .. n0 + nb - 1, into bs:
 * threads `id` of `count`. Past K or N: zeros. */
template <typename T, int NT, bool BNK>
__device__ __forceinline__ void stage_b(const args &a, int32_t k0, int rows, int n0, T *bs, int id,
                                        int count)
{
    using S = b_stage<NT, BNK>;
    constexpr int per16 = 16 / static_cast<int>(sizeof(T));
    const T *b = static_cast<const T *>(a.b);
    if (!BNK) { /* [k][np] */
        constexpr int pieces = S::nb / per16;
        if (a.vector_b) {
            for (int i = id; i < rows * pieces; i += count) {
                int r = i / pieces, piece = i % pieces;
                int32_t kk = k0 + r;
                int j = n0 + piece * per16;
                int bytes = kk < a.k ? min(max(a.n - j, 0) * 2, 16) : 0;
                copy16(bs + r * S::np + piece * per16, bytes ? b + kk * a.b_row + j : b, bytes);
            }
        } else {
            for (int i = id; i < rows * S::nb; i += count) {
                int r = i / S::nb, jj = i % S::nb, j = n0 + jj;
                int32_t kk = k0 + r;
                bs[r * S::np + jj] = kk < a.k && j < a.n ? b[kk * a.b_row + j * a.b_col]
                                                         : elem<T>::from_float(0.f);
            }
        }
    } else { /* [n][kp] */
        const int pieces = rows / per16;
        if (a.vector_b) {
            for (int i = id; i < S::nb * pieces; i += count) {
                int r = i / pieces, piece = i % pieces;
                int j = n0 + r, kk = k0 + piece * per16;
                int bytes = j < a.n ? min(max(a.k - kk, 0) * 2, 16) : 0;
                copy16(bs + r * S::kp + piece * per16, bytes ? b + j * a.b_col + kk : b, bytes);
            }
        } else {
            for (int i = id; i < S::nb * rows; i += count) {
                int r = i / rows, kk = k0 + i % rows, j = n0 + r;
                bs[r * S::kp + i % rows] = kk < a.k && j < a.n ? b[kk * a.b_row + j * a.b_col]
                                                               : elem<T>::from_float(0.f);
            }
        }
    }
}

__device__ __forceinline__ uint32_t lds_u16(uint32_t addr)
{
    uint16_t v;
    asm volatile("ld.shared.u16 %0, [%1];\n" : "=h"(v) : "r"(addr));
    return v;
}

/* PRMT selectors that make a register from two zero-extended halves x
 * (bytes 0-1) and y (bytes 4-5) by the register's two mask bits (hi, lo):
 * 00 → 0 (x's zero bytes), 01 → (x, 0), 10 → (0, x), 11 → (x, y); 16 bits
 * each, indexed by 2·hi + lo. */
#define FRAG_PAIR_SELECTORS 0x5410103232103232ull

/* Tile at h (header) with values from vals: the lane's A fragments, and the
 * tile's count. Register r holds slots 2r and 2r + 1: the value of slot 2r
 * (if set) is at its place in the run, and the next value right after it,
 * so two loads from one address (+2) and a PRMT chosen by the two bits
 * make the register, with no predicate and no second address. */
__device__ __forceinline__ int decode(const unsigned char *h, uint32_t vals, int q,
                                      uint32_t quad_sel, uint32_t lane_sel, uint32_t below,
                                      uint32_t (&a)[4])
{
    const uint32_t w = *reinterpret_cast<const uint32_t *>(h + 4 * q);
    const uint2 pre = *reinterpret_cast<const uint2 *>(h + 32);
    uint32_t start = __byte_perm(q < 4 ? pre.x : pre.y, 0, quad_sel);
    start = q ? start : 0u;
    const uint32_t bits = __byte_perm(w, 0, lane_sel);
    const uint32_t run = vals + 2 * (start + __popc(w & below));
    const uint32_t even = frag_slot_places(bits) & 0x0f0f0f0fu; /* byte r: slot 2r's offset */
#pragma unroll
    for (int r = 0; r < 4; r++) {
        const uint32_t at = run + __byte_perm(even, 0, 0x4440u | r);
        const uint32_t x = lds_u16(at), y = lds_u16(at + 2);
        const uint32_t shift = (r < 2 ? bits << (4 - 2 * r) : bits >> (2 * r - 4)) & 0x30u;
        const uint32_t sel = static_cast<uint32_t>(FRAG_PAIR_SELECTORS >> shift);
        a[r] = __byte_perm(x, y, sel);
    }
    return static_cast<int>((pre.y >> 24) + (pre.x & 0xffu));
}

/* Two adjacent floats added into the workspace. */
__device__ __forceinline__ void add2(float *p, float x, float y)
{
#if __CUDA_ARCH__ >= 900
    asm volatile("red.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(p), "f"(x), "f"(y) : "memory");
#else
    atomicAdd(p, x);
    atomicAdd(p + 1, y);
#endif
}

template <typename T, int G, int NT, bool BNK>
__global__ void __launch_bounds__(256) frag_spmm_kernel(const args a)
{
    using S = b_stage<NT, BNK>;
    constexpr int nb = 8 * NT;
    extern __shared__ __align__(16) unsigned char smem[];
    __shared__ int last_part;
    __shared__ int stage_steps[4]; /* k-steps of the chunk each stage holds */
    const int warps = blockDim.x >> 5, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int64_t row_block = blockIdx.x / a.ksplit;
    const int part = blockIdx.x % a.ksplit;
    const int64_t group = row_block * warps + warp;
    const bool active = group < a.groups;
    const int32_t c0 = static_cast<int32_t>(static_cast<int64_t>(a.chunks) * part / a.ksplit);
    const int32_t c1 = static_cast<int32_t>(static_cast<int64_t>(a.chunks) * (part + 1) / a.ksplit);
    const int n0 = blockIdx.y * nb;
    const int a_bytes = warps * a.capacity;
    const int stage_bytes = a_bytes + S::elems * static_cast<int>(sizeof(T));

    const int q = lane >> 2, t = lane & 3;
    const uint32_t quad_sel = 0x4440u | (q & 3), lane_sel = 0x4440u | t;
    const uint32_t below = (1u << (8 * t)) - 1u;

    /* What a chunk's copies need, read from global memory one chunk ahead
     * of its copies so that the warp does not wait for them. */
    struct chunk_meta {
        int64_t from, to;
        int32_t s0, s1;
    };
    auto meta_of = [&](int32_t c) {
        chunk_meta m = {0, 0, 0, 0};
        if (c < c1) {
            if (active)
                m.from = a.offset[group * a.chunks + c], m.to = a.offset[group * a.chunks + c + 1];
            m.s0 = a.chunk_step[c], m.s1 = a.chunk_step[c + 1];
        }
        return m;
    };
    auto issue = [&](const chunk_meta &m, int st) {
        unsigned char *base = smem + static_cast<size_t>(st) * stage_bytes;
        const int pieces = static_cast<int>((m.to - m.from) / 16);
        unsigned char *dst = base + warp * a.capacity;
        for (int i = lane; i < pieces; i += 32)
            copy16(dst + 16 * i, a.data + m.from + 16 * i, 16);
        if (threadIdx.x == 0)
            stage_steps[st] = m.s1 - m.s0;
        stage_b<T, NT, BNK>(a, 16 * m.s0, 16 * (m.s1 - m.s0), n0,
                            reinterpret_cast<T *>(base + a_bytes), threadIdx.x, blockDim.x);
    };

    float acc[G][NT][4];
#pragma unroll
    for (int g = 0; g < G; g++)
#pragma unroll
        for (int j = 0; j < NT; j++)
            acc[g][j][0] = acc[g][j][1] = acc[g][j][2] = acc[g][j][3] = 0.f;

    for (int s = 0; s < a.stages - 1; s++) {
        if (c0 + s < c1)
            issue(meta_of(c0 + s), s);
        copy_commit();
    }
    chunk_meta next = meta_of(c0 + a.stages - 1);
    int use = 0, fill = a.stages - 1;
    for (int32_t c = c0; c < c1; c++) {
        copy_wait_dynamic(a.stages - 2);
        __syncthreads(); /* chunk c landed for every thread; the stage of c - 1 is read */
        if (c + a.stages - 1 < c1) {
            issue(next, fill);
            next = meta_of(c + a.stages);
        }
        copy_commit();
        if (active) {
            const unsigned char *rec = smem + static_cast<size_t>(use) * stage_bytes +
                                       warp * a.capacity;
            const T *bs = reinterpret_cast<const T *>(smem + static_cast<size_t>(use) * stage_bytes +
                                                      a_bytes);
            const int steps = stage_steps[use];
            for (int st = 0; st < steps; st++) {
                uint32_t bf[NT / 2][4];
#pragma unroll
                for (int j = 0; j < NT / 2; j++) {
                    /* lanes 0-15 address the matrices of column tile 2j, 16-31 of 2j + 1 */
                    int tile = 2 * j + (lane >> 4);
                    const T *p = BNK ? bs + (8 * tile + (lane & 7)) * S::kp + 16 * st +
                                           (lane >> 3 & 1) * 8
                                     : bs + (16 * st + (lane & 15)) * S::np + 8 * tile;
                    ldsm_x4<!BNK>(p, bf[j]);
                }
                int vbytes = 0;
#pragma unroll
                for (int g = 0; g < G; g++) {
                    uint32_t af[4];
                    int count = decode(rec + FRAG_HEADER * g,
                                       smem_addr(rec + FRAG_HEADER * G + vbytes), q, quad_sel,
                                       lane_sel, below, af);
#pragma unroll
                    for (int j = 0; j < NT; j++)
                        mma_16816(acc[g][j], af, bf[j / 2][2 * (j & 1)],
                                  bf[j / 2][2 * (j & 1) + 1], T());
                    vbytes += 2 * count;
                }
                rec += (FRAG_HEADER * G + vbytes + 15) & ~15;
            }
        }
        use = use + 1 == a.stages ? 0 : use + 1;
        fill = fill + 1 == a.stages ? 0 : fill + 1;
    }
    copy_wait<0>();

    /* rows of acc[g][j][e]: window row0 + 16g, + q (e < 2) or q + 8 */
    const int64_t row0 = group * G * 16;
    if (a.ksplit == 1) {
        if (!active)
            return;
#pragma unroll
        for (int g = 0; g < G; g++)
#pragma unroll
            for (int j = 0; j < NT; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    int64_t row = row0 + 16 * g + q + 8 * (e >> 1);
                    int col = n0 + 8 * j + 2 * t + (e & 1);
                    if (row < a.m && col < a.n)
                        store<T>(a, row, col, acc[g][j][e]);
                }
        return;
    }
    if (active) {
#pragma unroll
        for (int g = 0; g < G; g++)
#pragma unroll
            for (int j = 0; j < NT; j++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    int64_t row = row0 + 16 * g + q + 8 * h;
                    add2(a.workspace + row * a.ws_pitch + n0 + 8 * j + 2 * t, acc[g][j][2 * h],
                         acc[g][j][2 * h + 1]);
                }
    }
    __threadfence();
    __syncthreads();
    const int64_t slot = row_block * gridDim.y + blockIdx.y;
    if (threadIdx.x == 0)
        last_part = atomicAdd(a.counters + slot, 1) == a.ksplit - 1;
    __syncthreads();
    if (!last_part)
        return;
    __threadfence();
    /* the row block's sums, four columns a thread at a time (nb and the
     * workspace's pitch are multiples of 4), all loads in flight at once */
    const int64_t first = row_block * warps * G * 16;
    const int quads = warps * G * 16 * nb / 4;
    for (int i = threadIdx.x; i < quads; i += blockDim.x) {
        int64_t row = first + 4 * i / nb;
        int col = n0 + 4 * i % nb;
        float4 *p = reinterpret_cast<float4 *>(a.workspace + row * a.ws_pitch + col);
        float4 v = __ldcg(p);
        *p = make_float4(0.f, 0.f, 0.f, 0.f);
        if (row < a.m) {
            const float e[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
            for (int u = 0; u < 4; u++)
                if (col + u < a.n)
                    store<T>(a, row, col + u, e[u]);
        }
    }
    if (threadIdx.x == 0)
        a.counters[slot] = 0;
}

template <typename T, int G, int NT, bool BNK> void *kernel_of()
{
    return (void *)frag_spmm_kernel<T, G, NT, BNK>;
}

template <typename T, bool BNK> void *kernel_shape(int group, int nt)
{
    switch (group * 16 + nt) {
    case 16 + 2: return kernel_of<T, 1, 2, BNK>();
    case 16 + 4: return kernel_of<T, 1, 4, BNK>();
    case 16 + 8: return kernel_of<T, 1, 8, BNK>();
    case 32 + 2: return kernel_of<T, 2, 2, BNK>();
    case 32 + 4: return kernel_of<T, 2, 4, BNK>();
    case 32 + 8: return kernel_of<T, 2, 8, BNK>();
    case 64 + 2: return kernel_of<T, 4, 2, BNK>();
    case 64 + 4: return kernel_of<T, 4, 4, BNK>();
    default: return nullptr;
    }
}

void *kernel_for(const frag_config *c, spf_dtype dtype, spf_layout b_layout)
{
    bool bnk = b_layout == SPF_LAYOUT_N_FIRST;
    if (dtype == SPF_DTYPE_F16)
        return bnk ? kernel_shape<__half, true>(c->group, c->nt)
                   : kernel_shape<__half, false>(c->group, c->nt);
    if (dtype == SPF_DTYPE_BF16)
        return bnk ? kernel_shape<__nv_bfloat16, true>(c->group, c->nt)
                   : kernel_shape<__nv_bfloat16, false>(c->group, c->nt);
    return nullptr;
}

} // namespace

extern "C" spf_status frag_config_occupancy(const frag_config *c, spf_dtype dtype,
                                            spf_layout b_layout, int *blocks)
{
    const void *k = kernel_for(c, dtype, b_layout);
    if (!k)
        return FAIL(SPF_ERR_UNSUPPORTED, "tcfrag: no kernel for group %d, nt %d, %s", c->group,
                    c->nt, spf_dtype_name(dtype));
    size_t smem = frag_config_smem(c, b_layout);
    return smem_occupancy(k, 32 * c->warps, smem, blocks);
}

extern "C" spf_status frag_launch(const frag_device *d, const frag_schedule *s,
                                  const frag_config *c, const spmm_operands *op, void *stream)
{
    const void *k = kernel_for(c, d->dtype, op->b_layout);
    if (!k || c->group != d->group)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "tcfrag: config group %d, nt %d for a format of "
                    "group %d", c->group, c->nt, d->group);
    int nb = 8 * c->nt;
    int64_t col_blocks = (op->n + nb - 1) / nb;
    int64_t row_blocks = (d->groups + c->warps - 1) / c->warps;
    args a = {};
    a.data = d->data;
    a.offset = d->offset;
    a.chunk_step = d->chunk_step;
    a.chunks = d->chunks;
    a.ksplit = s->ksplit > 0 ? s->ksplit : 1;
    a.groups = d->groups;
    a.m = static_cast<int32_t>(d->rows);
    a.k = static_cast<int32_t>(d->cols);
    a.n = static_cast<int32_t>(op->n);
    a.capacity = static_cast<int32_t>(frag_capacity(c->group));
    take_operands(a, op, 2);
    a.row_map = d->row_map;
    a.workspace = s->workspace;
    a.counters = s->counters;
    a.ws_pitch = col_blocks * nb;
    a.stages = c->stages;
    if (row_blocks == 0 || col_blocks == 0)
        return SPF_OK; /* K = 0 still launches: the epilogue writes bias or zeros */
    if (a.ksplit > 1 && !s->workspace)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "tcfrag: %d K parts without a workspace", a.ksplit);
    dim3 grid(static_cast<unsigned>(row_blocks * a.ksplit), static_cast<unsigned>(col_blocks));
    size_t smem = frag_config_smem(c, op->b_layout);
    return smem_launch(k, grid, 32 * c->warps, smem, &a, stream);
}
