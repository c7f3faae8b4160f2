/* The warpgroup conv kernel (conv_wg.h): Hopper only, built for sm_90a
 * (wgmma). */
#include "conv/conv_wg.h"

extern "C" {
#include "core/alloc.h"
#include "core/error.h"
#include "core/matrix.h"
#include "gpu/host_run.h"
}
#include "gpu/bulk_copy.cuh"
#include "gpu/cuda_check.h"
#include "gpu/early_start.h"
#include "gpu/grid_dependency.cuh"
#include "gpu/mma_ptx.cuh"
#include "gpu/smem_limit.cuh"
#include "gpu/tensor_map.h"
#include "strategy/structured/kernels/sp_wgmma.cuh"

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdint.h>

/* d = A·B + d, A (64 × 16) and B (16 × N) both K-major through their
 * shared-memory descriptors da and db (PTX ISA "wgmma.mma_async"); scale_d
 * 0 ignores d. */
/* m64n64k16: 32 accumulators a thread. */
#define WG_MMA_64(TYPE)                                                                            \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                                      \
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32." TYPE "." TYPE " {"                  \
                 "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"                          \
                 "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31"                 \
                 "}, %32, %33, p, 1, 1, 0, 0;\n}\n"                                                \
                 : SP_D32(0)                                                                       \
                 : "l"(da), "l"(db), "r"(scale_d))

/* m64n128k16: 64 accumulators a thread. */
#define WG_MMA_128(TYPE)                                                                           \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                      \
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32." TYPE "." TYPE " {"                 \
                 "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"                          \
                 "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"                \
                 "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"                \
                 "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63"                 \
                 "}, %64, %65, p, 1, 1, 0, 0;\n}\n"                                                \
                 : SP_D64(0)                                                                       \
                 : "l"(da), "l"(db), "r"(scale_d))

/* m64n256k16: 128 accumulators a thread. */
#define WG_MMA_256(TYPE)                                                                           \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"                                     \
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32." TYPE "." TYPE " {"                 \
                 "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"                          \
                 "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"                \
                 "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"                \
                 "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,"                \
                 "%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,"                \
                 "%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,"                \
                 "%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,"    \
                 "%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127" \
                 "}, %128, %129, p, 1, 1, 0, 0;\n}\n"                                              \
                 : SP_D128(0)                                                                      \
                 : "l"(da), "l"(db), "r"(scale_d))

template <int BN>
__device__ __forceinline__ void wg_mma(float (&d)[BN / 2], uint64_t da, uint64_t db, int scale_d,
                                       __half)
{
    if constexpr (BN == 64)
        WG_MMA_64("f16");
    else if constexpr (BN == 128)
        WG_MMA_128("f16");
    else
        WG_MMA_256("f16");
}
template <int BN>
__device__ __forceinline__ void wg_mma(float (&d)[BN / 2], uint64_t da, uint64_t db, int scale_d,
                                       __nv_bfloat16)
{
    if constexpr (BN == 64)
        WG_MMA_64("bf16");
    else if constexpr (BN == 128)
        WG_MMA_128("bf16");
    else
        WG_MMA_256("bf16");
}

struct conv_wg {
    conv_wg_geom geom;
    spf_dtype dtype;
    int relu;
    void *weights;      /* device, owned: K × R·S·C of the dtype, dense, or
                           the sparse weights' one buffer (conv_wg.h)      */
    CUtensorMap w_map;  /* dense: its 64 × 64 boxes                        */
    int64_t bytes;
    int early;          /* launched to start before the stream's previous
                           kernel ends (gpu/early_start.h)                 */
};

/* dst (device, owned) = count bytes of src; status on failure */
static spf_status upload(void **dst, const void *src, size_t count, int64_t *bytes)
{
    spf_status status = CUDA_CHECK(cudaMalloc(dst, count ? count : 1));
    if (status == SPF_OK && count)
        status = CUDA_CHECK(cudaMemcpy(*dst, src, count, cudaMemcpyHostToDevice));
    *bytes += (int64_t)count;
    return status;
}

/* The sparse weights packed on the host (conv_wg_sparse_pack), uploaded
 * as one buffer. */
static spf_status create_sparse(conv_wg *x, const spf_matrix *w)
{
    conv_wg_sparse sp;
    uint8_t *flat = NULL;
    size_t bytes = 0;
    spf_status status = conv_wg_sparse_pack(w, &x->geom, x->dtype, &sp);
    if (status != SPF_OK)
        return status;
    status = conv_wg_sparse_flatten(&sp, &x->geom, &flat, &bytes);
    if (status == SPF_OK)
        status = upload(&x->weights, flat, bytes, &x->bytes);
    mem_free(flat);
    conv_wg_sparse_free(&sp);
    return status;
}

extern "C" spf_status conv_wg_create(const spf_matrix *w, const conv_wg_geom *g, spf_dtype dtype,
                                     int relu, conv_wg **out)
{
    CHECK_ARG(w != NULL && g != NULL && out != NULL);
    CHECK_ARG(dtype == SPF_DTYPE_F16 || dtype == SPF_DTYPE_BF16);
    CHECK_ARG(w->rows == g->k && w->cols == (int64_t)g->c * g->r * g->s);
    *out = NULL;
    int device = 0, major = 0;
    spf_status status = CUDA_CHECK(cudaGetDevice(&device));
    if (status == SPF_OK)
        status = CUDA_CHECK(
            cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    if (status != SPF_OK)
        return status;
    if (major < 9)
        return FAIL(SPF_ERR_UNSUPPORTED, "conv wg: wgmma on a device of compute capability %d "
                    "(9.0 or newer)", major);
    conv_wg *x = static_cast<conv_wg *>(mem_calloc(1, sizeof *x));
    float *dense = NULL;
    if (!x)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "conv wg: a kernel");
    x->geom = *g;
    x->dtype = dtype;
    x->relu = relu;
    x->early = early_start_wanted(major);
    if (g->weights == CONV_WG_SPARSE) {
        status = create_sparse(x, w);
        if (status != SPF_OK)
            goto fail;
        *out = x;
        return SPF_OK;
    }
    dense = matrix_dense(w);
    if (!dense) {
        status = FAIL(SPF_ERR_OUT_OF_MEMORY, "conv wg: the weights expanded dense (%lld values)",
                      (long long)(w->rows * w->cols));
        goto fail;
    }
    status = host_stage(dtype, dense, w->rows * w->cols, &x->weights, NULL);
    if (status == SPF_OK)
        status = tensor_map_2d(&x->w_map, dtype, x->weights, w->rows, w->cols, w->cols,
                               CONV_WG_BM, CONV_WG_CHUNK);
    if (status != SPF_OK)
        goto fail;
    x->bytes = w->rows * w->cols * 2;
    mem_free(dense);
    *out = x;
    return SPF_OK;
fail:
    mem_free(dense);
    conv_wg_free(x);
    return status;
}

extern "C" void conv_wg_free(conv_wg *x)
{
    if (!x)
        return;
    (void)cudaFree(x->weights);
    mem_free(x);
}

extern "C" int64_t conv_wg_bytes(const conv_wg *x)
{
    return x ? x->bytes : 0;
}

extern "C" const conv_wg_geom *conv_wg_geometry_of(const conv_wg *x)
{
    return &x->geom;
}

struct wg_args {
    conv_wg_geom g;
    const float *bias;
    const void *residual;
    void *out;
    int relu;
    const uint8_t *sparse; /* sparse: the weights' one buffer (conv_wg.h);
                              with it the struct is 128 bytes, the most
                              before ptxas serializes the staged dense
                              kernel's wgmma (C7520)                       */
};

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

/* Zeros over the slack past a stage's box (b: the stage's input rows):
 * read by the taps of positions that are never stored, zeroed once so that
 * they read numbers. Every thread; a proxy fence and a barrier to follow. */
__device__ __forceinline__ void wg_zero_slack(uint8_t *b, const conv_wg_geom &g)
{
    const int box_rows = g.images * g.halo * g.wp;
    uint4 *slack = reinterpret_cast<uint4 *>(b + box_rows * CONV_WG_ROW);
    for (int u = threadIdx.x; u < (g.stage_rows - box_rows) * (CONV_WG_ROW / 16);
         u += blockDim.x)
        slack[u] = make_uint4(0, 0, 0, 0);
}

/* Bytes of a chunk's input box. */
__device__ __forceinline__ uint32_t wg_box_bytes(const conv_wg_geom &g)
{
    return g.images * g.halo * g.wp * CONV_WG_ROW;
}

/* Tile (image0, oh0)'s box of chunk ch into b, completing on bar, whose
 * bytes the caller expects. Thread 0, past grid_dependency_wait: the
 * input is what the stream's previous kernel may write. */
__device__ __forceinline__ void wg_load_input(uint8_t *b, const CUtensorMap *in_map,
                                              const conv_wg_geom &g, int ch, int image0, int oh0,
                                              uint64_t *bar)
{
    tma_load_4d(b, in_map, ch * CONV_WG_CHUNK, -g.pad, oh0 - g.pad, image0, bar);
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
    wgmma_fence();
    int r = 0, s = 0; /* tap t's (r, s), without dividing by S: a division a
                         tap sat between the wgmma (ncu at 98023aa) */
    for (int t = 0; t < g.r * g.s; t++) {
        const int shift = conv_wg_row(&g, 0, r, s);
        if (++s == g.s)
            s = 0, r++;
#pragma unroll
        for (int kk = 0; kk < CONV_WG_CHUNK / 16; kk++)
            wg_mma<BN>(d, wg_desc(w + t * CONV_WG_A_TAP + kk * 32),
                       wg_desc(b + shift * CONV_WG_ROW + kk * 32), 1, T());
    }
    wgmma_commit();
}

/* The epilogue of a tile, in two phases. First the sums (plus bias) by
 * position into shared memory (the accumulators of m64nN: row 16·warp +
 * lane / 4 (+ 8), column 8·(i / 4) + 2·(lane % 4) (+ 1)), added to what is
 * there with ADD (the strays' products); the warpgroup holding d. Then,
 * after a barrier, each thread of the block (THREADS) 8 channels (tid mod
 * 8) of positions tid / 8 + THREADS / 8 · k: the sums (plus `more`'s, the
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
                                                 const wg_args &a, int m0)
{
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int row0 = 16 * warp + lane / 4;
    const float bias0 = a.bias ? a.bias[m0 + row0] : 0.0f;
    const float bias8 = a.bias ? a.bias[m0 + row0 + 8] : 0.0f;
    auto at = [&](int i) { /* accumulator i's place in sums */
        return (8 * (i / 4) + 2 * (lane % 4) + i % 2) * ROW + row0 + 8 * ((i / 2) % 2);
    };
    constexpr int RUN = ADD ? 32 : BN / 2;
#pragma unroll
    for (int i0 = 0; i0 < BN / 2; i0 += RUN) {
        float before[RUN];
#pragma unroll
        for (int i = 0; i < RUN; i++)
            before[i] = ADD ? sums[at(i0 + i)] : 0.0f;
#pragma unroll
        for (int i = 0; i < RUN; i++)
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

template <typename T, int BN, int THREADS, int ROW>
__device__ __forceinline__ void wg_epilogue_store(const float *sums, const float *more,
                                                  const wg_args &a, int image0, int oh0, int m0)
{
    const conv_wg_geom &g = a.g;
    const int tid = threadIdx.x;
    constexpr int pass = THREADS / 8; /* positions the threads store at once */
    const int group = tid % 8;
    /* position tid / 8 + pass·k's image m of the tile, its row i (of the
     * image's halo rows) and column j (of the padded width) */
    const int image_rows = g.halo * g.wp;
    int m = tid / 8 / image_rows, i = (tid / 8 - m * image_rows) / g.wp;
    int j = tid / 8 - m * image_rows - i * g.wp;
#pragma unroll
    for (int k = 0; k < (BN + pass - 1) / pass; k++) {
        const int pos = tid / 8 + pass * k;
        if (k > 0)
            for (j += pass; j >= g.wp; j -= g.wp)
                if (++i == g.halo)
                    i = 0, m++;
        if (BN % pass != 0 && pos >= BN)
            continue;
        const int oh = oh0 + i, image = image0 + m;
        if (m >= g.images || image >= g.n || i >= g.rows || j >= g.q || oh >= g.p)
            continue;
        /* the output pixel in 32 bits: n·p·q (the gather's cols) is below 2^31 */
        const int64_t out_at = (int64_t)((image * g.p + oh) * g.q + j) * g.k + m0 + group * 8;
        float v[8];
        wg_load8<ROW>(v, sums + pos * ROW + group * 8);
        if (more) {
            float w[8];
            wg_load8<ROW>(w, more + pos * ROW + group * 8);
#pragma unroll
            for (int e = 0; e < 8; e++)
                v[e] += w[e];
        }
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
    wg_epilogue_sums<BN, CONV_WG_SUMS_ROW, false>(d, sums, a, m0);
    __syncthreads();
    wg_epilogue_store<T, BN, CONV_WG_THREADS, CONV_WG_SUMS_ROW>(sums, nullptr, a, image0, oh0, m0);
    __syncthreads();
}

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

/* The 1024-byte aligned start of the dynamic shared memory. */
__device__ __forceinline__ uint8_t *wg_smem(uint8_t *raw)
{
    return raw + ((CONV_WG_ALIGN - smem_addr(raw) % CONV_WG_ALIGN) % CONV_WG_ALIGN);
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

/* One tile a block, each stage bringing its chunk's input and weights:
 * dense boxes, or (SPARSE) the chunk's sparse block, whose strays a second
 * warpgroup adds from the same stage while the first issues its wgmma.sp
 * and waits for them. One warpgroup doing both took the sum of the two
 * (ncu at 47494d1: 39 % of the samples the strays, 27 % the chunk's
 * fragments and wgmma.sp, one warp a scheduler). */
template <typename T, int BN, bool SPARSE>
__global__ void __launch_bounds__(SPARSE ? CONV_WG_SP_THREADS : CONV_WG_THREADS, 1)
    conv_wg_kernel(const __grid_constant__ CUtensorMap in_map,
                   const __grid_constant__ CUtensorMap w_map, const wg_args a)
{
    extern __shared__ uint8_t raw[];
    const conv_wg_geom &g = a.g;
    uint8_t *smem = wg_smem(raw);
    const size_t stage_bytes = conv_wg_stage_bytes(&g);
    uint64_t *full = reinterpret_cast<uint64_t *>(smem + conv_wg_body_bytes(&g));
    const int tid = threadIdx.x, m0 = blockIdx.y * CONV_WG_BM;
    /* bytes of a chunk's weights: its sparse block, or its taps' boxes */
    const uint32_t weights =
        (uint32_t)(SPARSE ? conv_wg_sparse_block(&g) : conv_wg_chunk_weights(&g));
    /* the sums: past the stages where the strays add to them as the stages
     * turn, else over the stages */
    float *sums = reinterpret_cast<float *>(SPARSE ? smem + g.stages * stage_bytes : smem);
    int image0, oh0;
    wg_tile(g, blockIdx.x, &image0, &oh0);

    if (tid == 0) {
        for (int st = 0; st < g.stages; st++)
            bar_init(&full[st], 1);
        bar_init_fence();
    }
    for (int st = 0; st < g.stages; st++)
        wg_zero_slack(smem + st * stage_bytes, g);
    if constexpr (SPARSE)
        for (int u = tid; u < BN * CONV_WG_SP_SUMS_ROW; u += CONV_WG_SP_THREADS)
            sums[u] = 0.0f;
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();

    /* chunk ch's weights into stage st, its bytes and its input box's
     * expected; then its input box */
    auto issue_weights = [&](int ch, int st) {
        uint8_t *b = smem + st * stage_bytes;
        bar_arrive_expect(&full[st], wg_box_bytes(g) + weights);
        if constexpr (SPARSE)
            bulk_load(b + (size_t)g.stage_rows * CONV_WG_ROW,
                      a.sparse + ((size_t)blockIdx.y * g.chunks + ch) * weights, weights,
                      &full[st]);
        else
            wg_load_weights(b + (size_t)g.stage_rows * CONV_WG_ROW, &w_map, g, ch, m0, &full[st]);
    };
    auto issue_input = [&](int ch, int st) {
        wg_load_input(smem + st * stage_bytes, &in_map, g, ch, image0, oh0, &full[st]);
    };
    auto issue = [&](int ch, int st) {
        issue_weights(ch, st);
        issue_input(ch, st);
    };
    /* the first stages' weights (two thirds of a dense stage's bytes)
     * while the stream's previous kernel ends; their input boxes once it
     * has, and every thread's reads of the bias and residual and writes of
     * the output after it too (gpu/grid_dependency.cuh): the first chunk's
     * wait was a seventh of the dense kernel's samples (ncu at 184680b),
     * and more at full clocks */
    grid_dependents_launch();
    const int first = g.stages < g.chunks ? g.stages : g.chunks;
    if (tid == 0)
        for (int ch = 0; ch < first; ch++)
            issue_weights(ch, ch);
    grid_dependency_wait();
    if (tid == 0)
        for (int ch = 0; ch < first; ch++)
            issue_input(ch, ch);
    /* every chunk in turn: its stage waited for, `work` on it, then (every
     * warp past `sync`) the stage of chunk ch − lag, which `work` is done
     * with, refilled: lag 0, its own; lag 1 (two stages), the one before's,
     * whose wgmma `work` waited for with this chunk's in flight */
    auto each_chunk = [&](int lag, auto work, auto sync) {
        int st = 0, phase = 0; /* chunk ch's stage ch mod stages, its phase */
        for (int ch = 0; ch < g.chunks; ch++) {
            bar_wait(&full[st], phase);
            work(ch, smem + st * stage_bytes);
            const int done = ch - lag, next = done + g.stages;
            if (done >= 0 && next < g.chunks) {
                sync();
                if (tid == 0)
                    issue(next, lag ? st ^ 1 : st);
            }
            if (++st == g.stages)
                st = 0, phase ^= 1;
        }
    };
    const size_t a_at = (size_t)g.stage_rows * CONV_WG_ROW; /* a stage's weights */
    if constexpr (SPARSE) {
        /* the warpgroups apart, so that the strays' code does not hold
         * registers for the accumulators (it spilled at 255 when it did);
         * 384 threads get 168 registers each at launch, so the wgmma's
         * warpgroup takes more of the SM's from the strays' two
         * (128·240 + 256·104 ≤ 65 536); the wgmma's sums apart in the
         * stage of chunk chunks − 2 once the strays are past it (barrier
         * 2), or added to the strays' */
        const bool apart = conv_wg_sums_in_stage(&g);
        float *wgmma_sums =
            apart ? reinterpret_cast<float *>(smem + (g.chunks - 2) % 2 * stage_bytes) : nullptr;
        if (tid < CONV_WG_THREADS) {
            asm volatile("setmaxnreg.inc.sync.aligned.u32 240;\n" ::: "memory");
            float d[BN / 2] = {};
            each_chunk(
                0,
                [&](int, const uint8_t *b) {
                    wg_sparse_chunk<T, BN>(d, b + a_at, b, g);
                    wgmma_wait<0>();
                },
                [] { wg_split_sync(); });
            if (apart) {
                wg_stage_free(true);
                wg_epilogue_sums<BN, CONV_WG_SP_SUMS_ROW, false>(d, wgmma_sums, a, m0);
                wg_split_sync();
            } else {
                wg_split_sync(); /* the strays are in the sums */
                wg_epilogue_sums<BN, CONV_WG_SP_SUMS_ROW, true>(d, sums, a, m0);
            }
        } else {
            asm volatile("setmaxnreg.dec.sync.aligned.u32 104;\n" ::: "memory");
            const int t = tid - CONV_WG_THREADS;
            wg_strays_prefetch(a, (int)blockIdx.y * g.chunks, g.chunks, t);
            each_chunk(
                0,
                [&](int ch, const uint8_t *b) {
                    wg_strays<T, BN>(sums, b, a, (int)blockIdx.y * g.chunks + ch, t);
                    if (apart && ch == g.chunks - 2) /* done with its stage */
                        wg_stage_free(false);
                },
                [] { wg_split_sync(); });
            wg_split_sync();
        }
        __syncthreads();
        wg_epilogue_store<T, BN, CONV_WG_SP_THREADS, CONV_WG_SP_SUMS_ROW>(sums, wgmma_sums, a,
                                                                        image0, oh0, m0);
    } else {
        /* a chunk's wgmma in flight while the one before's are waited for
         * and its stage refilled: waiting for each chunk's own drained the
         * tensor cores at every chunk (ncu at 98023aa: an eighth of the
         * samples at that wait) */
        float d[BN / 2] = {};
        const int lag = g.stages > 1;
        each_chunk(
            lag,
            [&](int, const uint8_t *b) {
                wg_chunk<T, BN>(d, b + a_at, b, g);
                if (lag)
                    wgmma_wait<1>();
                else
                    wgmma_wait<0>();
            },
            [] { __syncthreads(); });
        wgmma_wait<0>();
        wg_epilogue<T, BN>(d, sums, a, image0, oh0, m0);
    }
}

/* The weights resident: a block loads every chunk's once, then walks the
 * tiles blockIdx.x, + gridDim.x, ...; its steps (tile, chunk) cycle
 * through two input stages, the step two ahead loading while one is
 * multiplied. */
template <typename T, int BN>
__global__ void __launch_bounds__(CONV_WG_THREADS, 1)
    conv_wg_resident_kernel(const __grid_constant__ CUtensorMap in_map,
                            const __grid_constant__ CUtensorMap w_map, const wg_args a)
{
    extern __shared__ uint8_t raw[];
    const conv_wg_geom &g = a.g;
    uint8_t *smem = wg_smem(raw);
    const size_t weights = (size_t)g.chunks * conv_wg_chunk_weights(&g);
    const size_t stage_bytes = conv_wg_stage_bytes(&g);
    uint8_t *stage = smem + weights;
    float *sums = reinterpret_cast<float *>(stage + 2 * stage_bytes);
    uint64_t *full = reinterpret_cast<uint64_t *>(smem + conv_wg_body_bytes(&g));
    uint64_t *weights_in = full + 2;
    const int tid = threadIdx.x, m0 = blockIdx.y * CONV_WG_BM;
    const int mine = (g.tiles - (int)blockIdx.x + (int)gridDim.x - 1) / (int)gridDim.x;
    const int steps = mine * g.chunks;

    if (tid == 0) {
        bar_init(&full[0], 1);
        bar_init(&full[1], 1);
        bar_init(weights_in, 1);
        bar_init_fence();
    }
    wg_zero_slack(stage, g);
    wg_zero_slack(stage + stage_bytes, g);
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();

    /* step s's input (tile blockIdx.x + (s / chunks)·gridDim.x, chunk
     * s mod chunks) into stage s mod 2 */
    auto issue = [&](int step) {
        int image0, oh0;
        wg_tile(g, (int)blockIdx.x + step / g.chunks * (int)gridDim.x, &image0, &oh0);
        bar_arrive_expect(&full[step % 2], wg_box_bytes(g));
        wg_load_input(stage + (step % 2) * stage_bytes, &in_map, g, step % g.chunks, image0, oh0,
                      &full[step % 2]);
    };
    /* the weights while the stream's previous kernel ends; the input, and
     * every thread's reads of the bias and residual and writes of the
     * output, once it has (gpu/grid_dependency.cuh) */
    grid_dependents_launch();
    if (tid == 0) {
        bar_arrive_expect(weights_in, (uint32_t)weights);
        for (int ch = 0; ch < g.chunks; ch++)
            wg_load_weights(smem + ch * conv_wg_chunk_weights(&g), &w_map, g, ch, m0,
                            weights_in);
    }
    grid_dependency_wait();
    if (tid == 0)
        for (int step = 0; step < 2 && step < steps; step++)
            issue(step);
    bar_wait(weights_in, 0);

    float d[BN / 2];
    for (int it = 0; it < mine; it++) {
#pragma unroll
        for (int i = 0; i < BN / 2; i++)
            d[i] = 0.0f;
        for (int ch = 0; ch < g.chunks; ch++) {
            const int step = it * g.chunks + ch;
            bar_wait(&full[step % 2], (step / 2) & 1);
            wg_chunk<T, BN>(d, smem + ch * conv_wg_chunk_weights(&g),
                                         stage + (step % 2) * stage_bytes, g);
            wgmma_wait<0>();
            __syncthreads(); /* every warp is done with the stage */
            if (tid == 0 && step + 2 < steps)
                issue(step + 2);
        }
        int image0, oh0;
        wg_tile(g, (int)blockIdx.x + it * (int)gridDim.x, &image0, &oh0);
        wg_epilogue<T, BN>(d, sums, a, image0, oh0, m0);
    }
}

template <typename T, int BN>
static spf_status wg_launch(const conv_wg *x, const CUtensorMap &in_map, const wg_args &a,
                            cudaStream_t stream)
{
    const conv_wg_geom &g = x->geom;
    auto kernel = g.weights == CONV_WG_RESIDENT ? conv_wg_resident_kernel<T, BN>
                  : g.weights == CONV_WG_SPARSE ? conv_wg_kernel<T, BN, true>
                                                : conv_wg_kernel<T, BN, false>;
    const size_t smem = conv_wg_smem(&g);
    const void *k = reinterpret_cast<const void *>(kernel);
    int blocks = 1, device = 0, sms = 1;
    const int threads = g.weights == CONV_WG_SPARSE ? CONV_WG_SP_THREADS : CONV_WG_THREADS;
    spf_status status = smem_occupancy(k, threads, smem, &blocks);
    if (status == SPF_OK)
        status = CUDA_CHECK(cudaGetDevice(&device));
    if (status == SPF_OK)
        status = CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    if (status != SPF_OK)
        return status;
    if (blocks < 1)
        return FAIL(SPF_ERR_UNSUPPORTED, "conv wg: no block of %zu bytes of shared memory fits "
                    "an SM", smem);
    const int channel_tiles = g.k / CONV_WG_BM;
    /* resident: as many blocks as the GPU holds at once, each walking tiles */
    int along = g.tiles;
    if (g.weights == CONV_WG_RESIDENT) {
        const int held = (sms * blocks + channel_tiles - 1) / channel_tiles;
        along = held < along ? held : along;
    }
    const dim3 grid((unsigned)along, (unsigned)channel_tiles);
    void *params[] = {const_cast<CUtensorMap *>(&in_map), const_cast<CUtensorMap *>(&x->w_map),
                      const_cast<wg_args *>(&a)};
    return smem_launch_params(k, grid, threads, smem, params, 1, x->early, stream);
}

template <typename T>
static spf_status wg_launch_bn(const conv_wg *x, const CUtensorMap &in_map, const wg_args &a,
                               cudaStream_t stream)
{
    switch (x->geom.bn) {
    case 64:
        return wg_launch<T, 64>(x, in_map, a, stream);
    case 128:
        return wg_launch<T, 128>(x, in_map, a, stream);
    default:
        return wg_launch<T, 256>(x, in_map, a, stream);
    }
}

extern "C" spf_status conv_wg_launch(const conv_wg *x, const void *in, void *out,
                                     const float *bias, const void *residual, void *stream)
{
    CHECK_ARG(x != NULL && in != NULL && out != NULL);
    const conv_wg_geom &g = x->geom;
    if ((uintptr_t)out % 16 != 0 || (residual && (uintptr_t)residual % 16 != 0))
        return FAIL(SPF_ERR_UNSUPPORTED, "conv wg: its 16-byte stores take the output and "
                    "residual 16-byte aligned, and the %s is at %p",
                    (uintptr_t)out % 16 ? "output" : "residual",
                    (uintptr_t)out % 16 ? (const void *)out : residual);
    CUtensorMap in_map;
    const int64_t nhwc[4] = {g.n, g.h, g.w, g.c};
    const spf_status status =
        tensor_map_nhwc(&in_map, x->dtype, in, nhwc, CONV_WG_CHUNK, g.wp, g.halo, g.images);
    if (status != SPF_OK)
        return status;
    const wg_args a = {g,
                       bias,
                       residual,
                       out,
                       x->relu,
                       static_cast<const uint8_t *>(x->weights)};
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    if (x->dtype == SPF_DTYPE_F16)
        return wg_launch_bn<__half>(x, in_map, a, s);
    return wg_launch_bn<__nv_bfloat16>(x, in_map, a, s);
}
