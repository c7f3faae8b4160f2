/* The column-vector kernel (sp_kernel.h says how the work is cut,
 * sp_colvec.h what the format holds). Instantiated for fp16 and bf16 ×
 * l ∈ {4, 8, 16} × nb ∈ {1, 2, 4, 8}.
 *
 * A step is one dense mma.m16n8k16 a column block: the 16 k slots are the
 * tile's blocks' next columns side by side, B's 16 gathered rows staged in
 * shared memory and read by ldmatrix, the A operand block-diagonal (a
 * block's rows against its own slots). The zeros of the diagonal's
 * outside are made in registers, not stored: blocks of 4 rows use a
 * quarter of the tensor core's products, but at the N this kernel is for
 * the bytes bound the time (2 a stored value and 4 a column of a block,
 * against dense's 2 a weight), and B's gathered rows are shared by l rows
 * (STuning-DL §II: what column vectors buy over unstructured sparsity). */
#include <cuda_runtime.h>

#include <stdint.h>

#include "gpu/cuda_check.h"
#include "gpu/epilogue.cuh"
#include "gpu/mma_ptx.cuh"
#include "gpu/smem_limit.cuh"
#include "strategy/structured/kernels/sp_stage.cuh"
#include "strategy/structured/sp_kernel.h"

namespace {

struct args {
    const uint4 *values;     /* a step's values: 2·l pieces of 16 bytes */
    const int32_t *gather;   /* 16 a step */
    const int32_t *step_ptr; /* tiles + 1 */
    const int32_t *row_map;  /* NULL: the identity */
    int32_t m, k, n;
    const void *b;
    int64_t b_row, b_col;
    void *c;
    int64_t c_row, c_col;
    const float *bias;
    int relu;
    int vector_b; /* B's rows allow 16-byte copies (take_operands) */
    int stages;
};

/* A warp's stage: the step's 32·l bytes of values, then B's 16 rows ×
 * 8·NB columns in 16-byte pieces, row r's piece c at
 * 16·(NB·r + (c ^ ((r / (8 / NB)) & (NB - 1)))): the eight rows an
 * ldmatrix reads lie in distinct banks. */
template <int L, int NB> struct stage {
    static constexpr int b = 32 * L;
    static constexpr int bytes = SP_COLVEC_STAGE_BYTES(NB);
    __device__ static int kn(int r, int c) { return b + 16 * (NB * r + (c ^ ((r / (8 / NB)) & (NB - 1)))); }
};

/* A lane's copies of a step, with what does not change from step to step
 * worked out once: a piece of values (lanes below 2·l), PER_LANE pieces
 * of B by cp.async when B's rows allow, else row lane % 16 of the columns
 * within N by plain loads. */
template <typename T, int L, int NB> struct copies {
    using S = stage<L, NB>;
    static constexpr int PER_LANE = (16 * NB + 31) / 32;
    int b_dst[PER_LANE];   /* the piece's byte in the stage; -1: none */
    int b_bytes[PER_LANE]; /* bytes within N */
    int b_slot[PER_LANE];  /* the piece's k slot */
    const T *b_src[PER_LANE];
    int rows[PER_LANE]; /* the gathered rows of the step issued next */
    int fill_row;       /* by plain loads: the lane's row */

    __device__ copies(const args &a, int n0, int lane)
    {
        const T *b = static_cast<const T *>(a.b);
#pragma unroll
        for (int c = 0; c < PER_LANE; c++) { /* piece i: slot i / NB, columns 8·(i % NB) .. */
            const int i = lane + 32 * c, j = n0 + 8 * (i % NB);
            b_slot[c] = i / NB;
            b_dst[c] = i < 16 * NB ? S::kn(i / NB, i % NB) : -1;
            b_bytes[c] = min(max(a.n - j, 0) * 2, 16);
            b_src[c] = b + static_cast<int64_t>(min(j, a.n - 1)) * a.b_col;
        }
    }

    /* the B rows of step g, a step before their copies */
    __device__ void prefetch(const args &a, int g, bool in, int lane)
    {
        if (!in)
            return;
        if (!a.vector_b) {
            fill_row = __ldg(a.gather + 16 * g + (lane & 15));
            return;
        }
#pragma unroll
        for (int c = 0; c < PER_LANE; c++)
            if (b_dst[c] >= 0)
                rows[c] = __ldg(a.gather + 16 * g + b_slot[c]);
    }

    /* step g into stage st */
    __device__ void issue(const args &a, int n0, int g, unsigned char *st, int lane) const
    {
        if (lane < 2 * L)
            copy16(st + 16 * lane, a.values + static_cast<int64_t>(g) * 2 * L + lane, 16);
        if (!a.vector_b) {
            fill(a, n0, st, lane);
            return;
        }
#pragma unroll
        for (int c = 0; c < PER_LANE; c++)
            if (b_dst[c] >= 0)
                copy16(st + b_dst[c],
                       b_src[c] + (b_bytes[c] ? static_cast<int64_t>(rows[c]) * a.b_row : 0),
                       b_bytes[c]);
    }

    /* B's stage by plain loads (N not a multiple of 8, or B N×K): lanes l
     * and l + 16 fill row l's even and odd columns within N (the others
     * are never stored), eight loads in flight before their stores. */
    __device__ void fill(const args &a, int n0, unsigned char *st, int lane) const
    {
        const T *b = static_cast<const T *>(a.b);
        const int cols = min(8 * NB, a.n - n0), half = lane >> 4;
        const int64_t at = static_cast<int64_t>(fill_row) * a.b_row + static_cast<int64_t>(n0) * a.b_col;
        constexpr int kBatch = 8 * NB < 16 ? 4 * NB : 8;
        for (int j0 = 0; j0 < cols; j0 += 2 * kBatch) {
            T v[kBatch];
#pragma unroll
            for (int i = 0; i < kBatch; i++) {
                const int j = j0 + 2 * i + half;
                v[i] = j < cols ? __ldg(b + at + j * a.b_col) : elem<T>::from_float(0.f);
            }
#pragma unroll
            for (int i = 0; i < kBatch; i++) {
                const int j = j0 + 2 * i + half;
                if (j < cols)
                    *reinterpret_cast<T *>(st + S::kn(lane & 15, j / 8) + 2 * (j % 8)) = v[i];
            }
        }
    }
};

/* The lane's A fragment of the step in stage st (sp_colvec.h): all four
 * words at l = 16, else a0 and a3 with a1 = a2 = 0 (and at l = 4 zeros
 * for the lanes whose rows' blocks hold none of their slots). */
template <int L> __device__ __forceinline__ void a_fragment(const unsigned char *st, int lane, uint32_t (&a)[4])
{
    if constexpr (L == 16) {
        const uint4 v = reinterpret_cast<const uint4 *>(st)[lane];
        a[0] = v.x, a[1] = v.y, a[2] = v.z, a[3] = v.w;
    } else {
        const int g = lane >> 2, t = lane & 3;
        const bool live = L == 8 || (t >> 1) == (g >> 2);
        const int slot = L == 8 ? lane : 8 * (g >> 2) + 2 * (g & 3) + (t & 1);
        const uint2 v = live ? reinterpret_cast<const uint2 *>(st)[slot] : make_uint2(0u, 0u);
        a[0] = v.x, a[1] = 0u, a[2] = 0u, a[3] = v.y;
    }
}

template <typename T, int L, int NB>
__device__ __forceinline__ void multiply(const unsigned char *st, int lane, float (&acc)[NB][4])
{
    using S = stage<L, NB>;
    uint32_t af[4];
    a_fragment<L>(st, lane, af);
    if constexpr (NB == 1) { /* matrices: slots 0-7, 8-15 */
        uint32_t bf[2];
        ldsm_x2<true>(st + S::kn(lane & 15, 0), bf);
        mma_16816(acc[0], af, bf[0], bf[1], T());
    } else {
#pragma unroll
        for (int nb = 0; nb < NB; nb += 2) { /* matrices: slots 0-7, 8-15 of nb, then of nb + 1 */
            uint32_t bf[4];
            ldsm_x4<true>(st + S::kn(lane & 15, nb + (lane >> 4)), bf);
            mma_16816(acc[nb], af, bf[0], bf[1], T());
            mma_16816(acc[nb + 1], af, bf[2], bf[3], T());
        }
    }
}

template <typename T, int L, int NB>
__global__ void __launch_bounds__(512) sp_colvec_kernel(const args a)
{
    using S = stage<L, NB>;
    extern __shared__ __align__(16) unsigned char smem[];
    const int warps = blockDim.x >> 5, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int tile = blockIdx.x, n0 = blockIdx.y * 8 * NB;
    const int s0 = a.step_ptr[tile], steps = a.step_ptr[tile + 1] - s0;
    float acc[NB][4];
#pragma unroll
    for (int nb = 0; nb < NB; nb++)
#pragma unroll
        for (int j = 0; j < 4; j++)
            acc[nb][j] = 0.f;
    /* warp w takes the tile's steps w, w + warps, ... */
    copies<T, L, NB> cp(a, n0, lane);
    warp_ring(
        smem + warp * a.stages * S::bytes, S::bytes, a.stages, warp, steps, warps,
        [&](int q, unsigned char *st) { cp.issue(a, n0, s0 + q, st, lane); },
        [&](int q) { cp.prefetch(a, s0 + q, q < steps, lane); },
        [&](const unsigned char *st) { multiply<T, L, NB>(st, lane, acc); });
    warp_sums<NB * 4>(
        smem, [&](int e) { return acc[e / 4][e % 4]; },
        [&](int e, int l, float v) {
            const int row = tile * 16 + (l >> 2) + 8 * ((e & 3) >> 1);
            const int col = n0 + 8 * (e / 4) + 2 * (l & 3) + (e & 1);
            if (row < a.m && col < a.n)
                store<T>(a, row, col, v);
        });
}

template <typename T, int L> void *kernel_nb(int nb)
{
    switch (nb) {
    case 1: return (void *)sp_colvec_kernel<T, L, 1>;
    case 2: return (void *)sp_colvec_kernel<T, L, 2>;
    case 4: return (void *)sp_colvec_kernel<T, L, 4>;
    case 8: return (void *)sp_colvec_kernel<T, L, 8>;
    default: return nullptr;
    }
}

template <typename T> void *kernel_l(int l, int nb)
{
    switch (l) {
    case 4: return kernel_nb<T, 4>(nb);
    case 8: return kernel_nb<T, 8>(nb);
    case 16: return kernel_nb<T, 16>(nb);
    default: return nullptr;
    }
}

void *kernel_for(const sp_config *c, const sp_device *d)
{
    if (c->kind != SP_COLVEC || sp_config_refusal(c, &d->pattern))
        return nullptr;
    if (d->dtype == SPF_DTYPE_F16)
        return kernel_l<__half>(d->pattern.vec, c->nb);
    if (d->dtype == SPF_DTYPE_BF16)
        return kernel_l<__nv_bfloat16>(d->pattern.vec, c->nb);
    return nullptr;
}

} // namespace

extern "C" spf_status sp_colvec_occupancy(const sp_config *c, const sp_device *d, int *blocks)
{
    const void *k = kernel_for(c, d);
    if (!k)
        return FAIL(SPF_ERR_UNSUPPORTED, "structured: no column-vector kernel for nb %d, %d "
                    "warps, l %d, %s", c->nb, c->warps, d->pattern.vec, spf_dtype_name(d->dtype));
    return smem_occupancy(k, sp_config_threads(c), sp_config_smem(c), blocks);
}

extern "C" spf_status sp_colvec_launch(const sp_device *d, const sp_config *c,
                                       const spmm_operands *op, void *stream)
{
    const void *k = kernel_for(c, d);
    if (!k)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "structured: config nb %d, %d warps, %d stages for "
                    "column vectors of %d", c->nb, c->warps, c->stages, d->pattern.vec);
    const int64_t col_blocks = (op->n + 8 * c->nb - 1) / (8 * c->nb);
    if (d->tiles == 0 || col_blocks == 0)
        return SPF_OK;
    if (col_blocks > 65535 || d->tiles > INT32_MAX)
        return FAIL(SPF_ERR_UNSUPPORTED, "structured: %lld × %lld blocks exceed the grid",
                    (long long)d->tiles, (long long)col_blocks);
    args a = {};
    take_operands(a, op, 2);
    if (op->b_layout == SPF_LAYOUT_N_FIRST)
        a.vector_b = 0; /* gathered k is strided: plain loads */
    a.values = reinterpret_cast<const uint4 *>(d->values);
    a.gather = d->gather;
    a.step_ptr = d->step_ptr;
    a.row_map = d->row_map;
    a.m = static_cast<int32_t>(d->rows);
    a.k = static_cast<int32_t>(d->cols);
    a.n = static_cast<int32_t>(op->n);
    a.stages = c->stages;
    dim3 grid(static_cast<unsigned>(d->tiles), static_cast<unsigned>(col_blocks));
    return smem_launch(k, grid, sp_config_threads(c), sp_config_smem(c), &a, stream);
}
