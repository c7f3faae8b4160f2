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
    const uint4 *values;     /* a window's values: 32 pieces of 16 bytes */
    const int32_t *gather;   /* 64 a window */
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

/* A warp's stage is a window of 16 / l steps (256 / l k slots, sp_colvec.h):
 * the window's 512 bytes of values, then B's 256 / l rows × 8·NB columns
 * in 16-byte pieces, row r's piece c at 16·(NB·r + (c ^ ((r / (8 / NB)) &
 * (NB - 1)))): the eight rows an ldmatrix reads lie in distinct banks.
 * A window rather than a step a stage: at l = 4 a step is 128 bytes of
 * values, and a stage's waits and copies a step took about as long as
 * its bytes (H100, colvec4 at 0.75 barely level with cuBLAS). */
template <int NB> struct stage {
    static constexpr int b = 512;
    static constexpr int bytes = SP_COLVEC_STAGE_BYTES(NB);
    __device__ static int kn(int r, int c)
    {
        return b + 16 * (NB * r + (c ^ ((r / (8 / NB)) & (NB - 1))));
    }
};

/* A lane's copies of a window, with what does not change from window to
 * window worked out once: a piece of values, PER_LANE pieces of B by
 * cp.async when B's rows allow, else row lane (and lane + 32) of the
 * columns within N by plain loads. */
template <typename T, int L, int NB> struct copies {
    using S = stage<NB>;
    static constexpr int SLOTS = 256 / L; /* the window's k slots: rows of B */
    static constexpr int PIECES = SLOTS * NB, PER_LANE = (PIECES + 31) / 32;
    static constexpr int FILLS = SLOTS > 32 ? SLOTS / 32 : 1; /* rows a lane fills */
    int b_dst[PER_LANE];   /* the piece's byte in the stage */
    int b_bytes[PER_LANE]; /* bytes within N */
    int b_slot[PER_LANE];  /* the piece's k slot in the window */
    const T *b_src[PER_LANE];
    int rows[PER_LANE];    /* the gathered rows of the window issued next */
    int fill_rows[FILLS];  /* by plain loads: the lane's rows */

    __device__ copies(const args &a, int n0, int lane)
    {
        const T *b = static_cast<const T *>(a.b);
#pragma unroll
        for (int c = 0; c < PER_LANE; c++) { /* piece i: slot i / NB, columns 8·(i % NB) .. */
            const int i = lane + 32 * c, j = n0 + 8 * (i % NB);
            b_slot[c] = i / NB;
            b_dst[c] = i < PIECES ? S::kn(i / NB, i % NB) : -1;
            b_bytes[c] = min(max(a.n - j, 0) * 2, 16);
            b_src[c] = b + static_cast<int64_t>(min(j, a.n - 1)) * a.b_col;
        }
    }

    /* the B rows of window w, a window before their copies */
    __device__ void prefetch(const args &a, int w, bool in, int lane)
    {
        if (!in)
            return;
        const int32_t *gather = a.gather + static_cast<int64_t>(w) * SLOTS;
        if (!a.vector_b) {
#pragma unroll
            for (int h = 0; h < FILLS; h++)
                if (lane + 32 * h < SLOTS)
                    fill_rows[h] = __ldg(gather + lane + 32 * h);
            return;
        }
#pragma unroll
        for (int c = 0; c < PER_LANE; c++)
            if (b_dst[c] >= 0)
                rows[c] = __ldg(gather + b_slot[c]);
    }

    /* window w into stage st */
    __device__ void issue(const args &a, int n0, int w, unsigned char *st, int lane) const
    {
        copy16(st + 16 * lane, a.values + static_cast<int64_t>(w) * 32 + lane, 16);
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

    /* B's stage by plain loads (N not a multiple of 8, or B N×K): the
     * lane's rows, of the columns within N only (the others are never
     * stored), up to 16 columns' loads in flight before their stores. */
    __device__ void fill(const args &a, int n0, unsigned char *st, int lane) const
    {
        if (lane >= SLOTS)
            return;
        const T *b = static_cast<const T *>(a.b);
        const int cols = min(8 * NB, a.n - n0);
        int64_t at[FILLS];
#pragma unroll
        for (int h = 0; h < FILLS; h++)
            at[h] = static_cast<int64_t>(fill_rows[h]) * a.b_row +
                    static_cast<int64_t>(n0) * a.b_col;
        constexpr int kBatch = 8 * NB < 16 ? 8 * NB : 16;
        for (int j0 = 0; j0 < cols; j0 += kBatch) {
            T v[kBatch][FILLS];
#pragma unroll
            for (int j = 0; j < kBatch; j++)
#pragma unroll
                for (int h = 0; h < FILLS; h++)
                    v[j][h] = j0 + j < cols ? __ldg(b + at[h] + (j0 + j) * a.b_col)
                                            : elem<T>::from_float(0.f);
#pragma unroll
            for (int j = 0; j < kBatch; j++)
#pragma unroll
                for (int h = 0; h < FILLS; h++)
                    if (j0 + j < cols)
                        *reinterpret_cast<T *>(st + S::kn(lane + 32 * h, (j0 + j) / 8) +
                                               2 * ((j0 + j) % 8)) = v[j][h];
        }
    }
};

/* The lane's A fragment of step w of the window in stage st
 * (sp_colvec.h): all four words at l = 16, else a0 and a3 with a1 = a2 =
 * 0 (and at l = 4 zeros for the lanes whose rows' blocks hold none of
 * their slots). */
template <int L>
__device__ __forceinline__ void a_fragment(const unsigned char *st, int w, int lane,
                                           uint32_t (&a)[4])
{
    const unsigned char *v = st + 32 * L * w;
    if constexpr (L == 16) {
        const uint4 q = reinterpret_cast<const uint4 *>(v)[lane];
        a[0] = q.x, a[1] = q.y, a[2] = q.z, a[3] = q.w;
    } else {
        const int g = lane >> 2, t = lane & 3;
        const bool live = L == 8 || (t >> 1) == (g >> 2);
        const int slot = L == 8 ? lane : 8 * (g >> 2) + 2 * (g & 3) + (t & 1);
        const uint2 q = live ? reinterpret_cast<const uint2 *>(v)[slot] : make_uint2(0u, 0u);
        a[0] = q.x, a[1] = 0u, a[2] = 0u, a[3] = q.y;
    }
}

/* The warp's products of the window in stage st: W mma steps a column
 * block, B's rows 16·w .. of step w by ldmatrix. */
template <typename T, int L, int NB>
__device__ __forceinline__ void multiply(const unsigned char *st, int lane, float (&acc)[NB][4])
{
    using S = stage<NB>;
#pragma unroll
    for (int w = 0; w < 16 / L; w++) {
        uint32_t af[4];
        a_fragment<L>(st, w, lane, af);
        const int r = 16 * w + (lane & 15);
        if constexpr (NB == 1) { /* matrices: slots 0-7, 8-15 of the step */
            uint32_t bf[2];
            ldsm_x2<true>(st + S::kn(r, 0), bf);
            mma_16816(acc[0], af, bf[0], bf[1], T());
        } else {
#pragma unroll
            for (int nb = 0; nb < NB; nb += 2) { /* slots 0-7, 8-15 of nb, then of nb + 1 */
                uint32_t bf[4];
                ldsm_x4<true>(st + S::kn(r, nb + (lane >> 4)), bf);
                mma_16816(acc[nb], af, bf[0], bf[1], T());
                mma_16816(acc[nb + 1], af, bf[2], bf[3], T());
            }
        }
    }
}

template <typename T, int L, int NB>
__global__ void __launch_bounds__(512) sp_colvec_kernel(const args a)
{
    using S = stage<NB>;
    extern __shared__ __align__(16) unsigned char smem[];
    const int warps = blockDim.x >> 5, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int tile = blockIdx.x, n0 = blockIdx.y * 8 * NB;
    /* the tile's windows of 16 / L steps (whole: the format pads them) */
    const int w0 = a.step_ptr[tile] / (16 / L), windows = a.step_ptr[tile + 1] / (16 / L) - w0;
    float acc[NB][4];
#pragma unroll
    for (int nb = 0; nb < NB; nb++)
#pragma unroll
        for (int j = 0; j < 4; j++)
            acc[nb][j] = 0.f;
    /* warp i takes the tile's windows i, i + warps, ... */
    copies<T, L, NB> cp(a, n0, lane);
    warp_ring(
        smem + warp * a.stages * S::bytes, S::bytes, a.stages, warp, windows, warps,
        [&](int q, unsigned char *st) { cp.issue(a, n0, w0 + q, st, lane); },
        [&](int q) { cp.prefetch(a, w0 + q, q < windows, lane); },
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
