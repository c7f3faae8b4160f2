/* The structured TMA kernel, Hopper only (sm_90a), for 2:4 at large N: the
 * shape of a Hopper GEMM (warp specialisation, the copy engine, wgmma with
 * a group in flight) on the structured format, where the staged wgmma
 * kernel (sp_wgmma.sm90a.cu) spent its time in per-thread copies
 * (bench/results/structured/README.md, "N ≥ 256").
 *
 * A block of 384 threads takes bm = 128 · MI rows and BN columns of C, and
 * walks K PP step pairs (PP · 64 rows of B) a stage, PP = 2 at bm 128 and
 * 1 at bm 256:
 *
 * - Warpgroup 2, the producer: one thread has the copy engine bring each
 *   stage's B into a ring of `stages` shared-memory stages
 *   (cp.async.bulk.tensor with the 128-byte swizzle), completing on the
 *   stage's `full` mbarrier, and waits on its `empty` mbarrier before it
 *   reuses it. It gives its registers to the consumers (setmaxnreg).
 * - Warpgroups 0 and 1, the consumers: each multiplies MI × 64 rows by BN
 *   columns with wgmma.mma_async.sp m64nBNk32, B from the stage through a
 *   swizzled descriptor, A from registers. A is read by one warp only, so
 *   it skips shared memory: each warp loads its fragments and metadata
 *   (the format's order, one coalesced 16-byte load a lane) into a ring
 *   of four register sets, two stages ahead. A consumer keeps one stage's
 *   group of wgmma in flight while it issues the next; once a group is
 *   done its stage goes back to the producer.
 *   - The loads of stage i + 2 are issued after stage i's multiplies and
 *     before the wait for stage i − 1's: the wgmma.fence before stage
 *     i + 1's multiplies waits for every load in flight, and loads issued
 *     after that wait (a ring of three) left them no time (a build
 *     without them took 42 % less time, H200).
 *   - Four sets, because a wgmma reads its A registers while in flight:
 *     stages i − 1 and i may be, so stage i + 2 takes a third set, and the
 *     fourth is stage i + 1's. A set reused too early (registers declared
 *     in the loop) gave wrong sums on large problems only.
 *   - Two pairs a stage at bm 128 halve the barrier and fence steps per
 *     multiply: the kernel's loop with no copies and no multiplies took
 *     about 0.2 µs a pair (H200), as long as a pair's multiplies.
 * - With A staged (config suffix "a"), the producer also has the copy
 *   engine bring the stage's A fragments and metadata of the block's row
 *   tiles (two 3-D tensor copies), and each warp loads its own from the
 *   stage into two register sets in turn, just before the multiplies: no
 *   global load is in flight at the wgmma.fence. Faster where the stages
 *   still fit (H200: tm128n128s4 23.5 → 19.2 µs on 4096 × 4096 at N = 512,
 *   tm256n128s4 84 → 71 at N = 2048); slower at m128 n256, where only two
 *   stages fit (67 → 92). Nsight Compute had put 35-38 % of the stalls on
 *   A's global loads. The tuner times both.
 * - The epilogue: once both consumers are done with the ring, each writes
 *   its sums (bias, ReLU, the dtype) to a tile in shared memory and stores
 *   C's rows from there 16 bytes a thread (C N×M: from the registers).
 *   Stores from the registers, 4 bytes of a row a lane, took 9-15 % longer.
 *
 * B K×N (rows of N contiguous) is staged MN-major: per 64 columns a box of
 * PP · 64 k × 128 bytes, the boxes PP · 8192 bytes apart (the descriptor's
 * leading offset), 8 k rows of a box 1024 apart (stride offset), as the
 * PTX ISA's canonical 128-byte swizzled MN-major layout has it; step q of
 * the stage starts q · 4096 bytes on. B N×K (torch's X, rows of K
 * contiguous) is staged K-major: a box of BN rows × 64 k a pair, 8 rows
 * 1024 bytes apart; the pair's second step starts 64 bytes on.
 *
 * The copy engine needs B's base and pitch 16-byte aligned: otherwise
 * sp_tma_launch runs the staged wgmma kernel of the same shape. V:2:M is
 * refused (sp_config_refusal): its gathered rows of B, a tensor copy a
 * row, took 7× the time of 2:4 (12443d4, reverted), and by the producer
 * warpgroup's cp.async twice the time (e269541, reverted: about 12 bytes a
 * cycle an SM arrived, against 2:4's copy engine bringing twice the rows in
 * half the time); the strategy runs V:2:M in the 2:4 format at large N
 * instead (sp_strategy.c). */
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "sp_tma.sm90a.cu is built for sm_90a only (CMakeLists.txt)"
#endif

#include <cuda.h>
#include <cuda_runtime.h>

#include <stdint.h>

#include "gpu/cluster.cuh"
#include "gpu/cuda_check.h"
#include "gpu/epilogue.cuh"
#include "gpu/mma_ptx.cuh"
#include "gpu/smem_limit.cuh"
#include "gpu/tensor_map.h"
#include "strategy/structured/kernels/sp_stage.cuh"
#include "strategy/structured/kernels/sp_wgmma.cuh"
#include "strategy/structured/sp_kernel.h"

namespace {

struct tma_args {
    CUtensorMap b_map; /* first: 64-byte aligned in the parameter space */
    CUtensorMap a_map, m_map; /* A staged: its fragments and metadata, [tile][pair][words] */
    const uint4 *values;
    const uint32_t *meta;
    int32_t m, n, tiles, pairs, stages;
    int32_t split_k;   /* blocks of a cluster splitting K (1: not split) */
    int32_t reduce_at; /* split K: the first block's byte of the others' sums */
    void *c;
    int64_t c_row, c_col;
    const float *bias;
    int relu;
    const int32_t *row_map; /* always NULL: the epilogue's argument */
};

/* Split K over a cluster: the blocks of a cluster take consecutive
 * ranges of K's stages; each block other than the first (rank 0) writes
 * its fp32 sums into the first block's shared memory (distributed shared
 * memory: st.shared::cluster at the address mapa gives), then every
 * thread of the cluster passes a cluster barrier (release / acquire), and
 * the first block adds the others' sums to its own in rank order (so
 * every run gives the same sums) and runs the epilogue. The blocks of a
 * cluster also pass a cluster barrier at the start, so that none writes
 * into a block not yet running; the producers wait at the last one too.
 * No workspace, no atomics: launches of a plan on several streams stay
 * independent. (cluster_rank, cluster_sync: gpu/cluster.cuh.) */
/* the address of this block's shared variable p in the first block */
__device__ __forceinline__ uint32_t in_first(const void *p)
{
    uint32_t r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, 0;\n" : "=r"(r) : "r"(smem_addr(p)));
    return r;
}
__device__ __forceinline__ void store_remote(uint32_t at, float x, float y, float z, float w)
{
    asm volatile("st.shared::cluster.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(at), "f"(x),
                 "f"(y), "f"(z), "f"(w)
                 : "memory");
}

template <int MI, int BN, bool MN, bool AS> struct tma_shape {
    static constexpr int pp = SP_TMA_PAIRS(MI * 128); /* step pairs a stage */
    static constexpr int b_bytes = pp * BN * 128;
    /* A staged: [tile][pair] fragments, then [tile][pair] metadata */
    static constexpr int a_at = b_bytes, meta_at = a_at + 8 * MI * pp * SP_TILE_A_BYTES;
    static constexpr int stage_bytes = SP_TMA_STAGE_BYTES(MI * 128, BN, AS);
    static constexpr int leading = MN ? pp * 8192 : 16; /* between boxes of 64 n; unused K-major */
    static constexpr int ring = 4;                      /* A's register sets */
    static constexpr int pitch = BN + 8; /* C's tile in shared memory: elements a row */
    static_assert(stage_bytes == (AS ? meta_at + 8 * MI * pp * SP_TILE_META_BYTES : b_bytes) &&
                      stage_bytes % 1024 == 0,
                  "sp_kernel.h's stage; every stage's B starts on a swizzle atom");
    static_assert(2 * MI * 64 * pitch * 2 == SP_TMA_EPILOGUE_BYTES(MI * 128, BN), "sp_kernel.h");
    /* the byte of step q (of 2 · pp) in a stage */
    static __device__ __forceinline__ int step_at(int q)
    {
        return MN ? q * 4096 : q / 2 * BN * 128 + q % 2 * 64;
    }
};

/* SPLIT: K split over a cluster (a.split_k blocks). A template parameter
 * so that the unsplit kernel carries none of it: with the split read at
 * run time (bd58be5) every unsplit config ran up to twice as slow
 * (bench/results/structured/bisect-tma-h200-bd58be5.txt). */
template <typename T, int MI, int BN, bool MN, bool AS, bool SPLIT>
__global__ void __launch_bounds__(384, 1) sp_tma_kernel(const __grid_constant__ tma_args a)
{
    using S = tma_shape<MI, BN, MN, AS>;
    constexpr int PP = S::pp, R = AS ? 2 : S::ring;
    extern __shared__ __align__(1024) unsigned char dynamic[];
    unsigned char *smem = dynamic + (-smem_addr(dynamic) & 1023); /* the swizzle's atoms */
    __shared__ uint64_t full[SP_TMA_STAGES_MAX], empty[SP_TMA_STAGES_MAX];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int wg = warp / 4, wi = warp % 4;
    const int tile0 = blockIdx.x * 8 * MI, n0 = blockIdx.y * BN, stages = a.stages;
    /* this block's stages of K: [first, first + steps) */
    int rank = 0, first = 0, steps = (a.pairs + PP - 1) / PP;
    if constexpr (SPLIT) {
        const int share = (steps + a.split_k - 1) / a.split_k;
        rank = cluster_rank();
        first = rank * share;
        steps = max(min(steps - first, share), 0);
    }
    if (threadIdx.x == 0) {
        for (int s = 0; s < stages; s++) {
            bar_init(&full[s], 1);
            bar_init(&empty[s], 8); /* lane 0 of each consumer warp */
        }
        bar_init_fence();
    }
    if constexpr (SPLIT)
        cluster_sync();
    else
        __syncthreads();

    /* 384 threads start at 168 registers (launch bounds); the consumers'
     * 128 accumulators and the sets of A need more: the producer keeps
     * 40 and each consumer takes 232 (40 + 2 · 232 = 3 · 168). */
    if (wg == 2) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
        if (threadIdx.x == 256) {
            asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&a.b_map))
                         : "memory");
            for (int i = first, s = 0, round = 0; i < first + steps; i++) {
                if (round > 0)
                    bar_wait(&empty[s], (round - 1) & 1);
                unsigned char *st = smem + s * S::stage_bytes;
                bar_arrive_expect(&full[s], S::stage_bytes);
                if constexpr (MN) {
#pragma unroll
                    for (int j = 0; j < BN / 64; j++)
                        tma_load(st + j * S::leading, &a.b_map, n0 + 64 * j, 64 * PP * i, &full[s]);
                } else {
#pragma unroll
                    for (int h = 0; h < PP; h++)
                        tma_load(st + h * BN * 128, &a.b_map, 64 * (PP * i + h), n0, &full[s]);
                }
                if constexpr (AS) {
                    tma_load_3d(st + S::a_at, &a.a_map, 0, PP * i, tile0, &full[s]);
                    tma_load_3d(st + S::meta_at, &a.m_map, 0, PP * i, tile0, &full[s]);
                }
                if (++s == stages)
                    s = 0, round++;
            }
        }
        if constexpr (SPLIT) { /* the consumers' sums meet */
            __syncwarp();
            cluster_sync();
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");

    /* The warp's A: row tile (wg · MI + mi) · 4 + wi of the block (the last
     * tile again past the end: valid metadata, rows not stored). */
    const uint4 *av[MI];
    const uint32_t *am[MI];
#pragma unroll
    for (int mi = 0; mi < MI; mi++) {
        const int64_t t = min(tile0 + (wg * MI + mi) * 4 + wi, a.tiles - 1);
        av[mi] = a.values + t * a.pairs * 64 + lane;
        am[mi] = a.meta + t * a.pairs * 32 + lane;
    }
    uint4 af[R][MI][2 * PP];
    uint32_t e[R][MI][PP];
    /* stage i's fragments into a set; a pair past the last (K ends inside
     * a stage of two) multiplies zeros, with valid metadata */
    auto load = [&](uint4 (&f)[MI][2 * PP], uint32_t (&m)[MI][PP], int i) {
#pragma unroll
        for (int h = 0; h < PP; h++) {
            const int p = PP * i + h;
#pragma unroll
            for (int mi = 0; mi < MI; mi++) {
                const bool in = p < a.pairs;
                f[mi][2 * h] = in ? __ldg(av[mi] + 64 * p) : make_uint4(0, 0, 0, 0);
                f[mi][2 * h + 1] = in ? __ldg(av[mi] + 64 * p + 32) : make_uint4(0, 0, 0, 0);
                m[mi][h] = in ? __ldg(am[mi] + 32 * p) : 0x44444444u; /* indices 0, 1 */
            }
        }
    };
    if constexpr (!AS) {
        load(af[0], e[0], first);
        load(af[1], e[1], first + 1);
    }

    /* set by the first stage's wgmma (scale-d 0), not by stores: ptxas
     * serialises wgmma whose accumulators other instructions write while
     * a group is in flight (warning C7515) */
    float acc[MI][BN / 2];
    int s = 0, round = 0, last = -1;
    for (int l0 = 0; l0 < steps; l0 += R) {
#pragma unroll
        for (int r = 0; r < R; r++) {
            const int l = l0 + r, i = first + l; /* the block's stage l, K's stage i */
            if (l >= steps)
                break;
            bar_wait(&full[s], round & 1);
            const unsigned char *st = smem + s * S::stage_bytes;
            if constexpr (AS) {
#pragma unroll
                for (int h = 0; h < PP; h++)
#pragma unroll
                    for (int mi = 0; mi < MI; mi++) {
                        const int t = (wg * MI + mi) * 4 + wi;
                        const uint4 *v = reinterpret_cast<const uint4 *>(
                            st + S::a_at + (t * PP + h) * SP_TILE_A_BYTES);
                        af[r][mi][2 * h] = v[lane];
                        af[r][mi][2 * h + 1] = v[32 + lane];
                        const bool in = PP * i + h < a.pairs && tile0 + t < a.tiles;
                        e[r][mi][h] = in ? reinterpret_cast<const uint32_t *>(
                                               st + S::meta_at +
                                               (t * PP + h) * SP_TILE_META_BYTES)[lane]
                                         : 0x44444444u;
                    }
            }
            wgmma_fence();
#pragma unroll
            for (int q = 0; q < 2 * PP; q++) {
                const uint64_t d = descriptor(st + S::step_at(q), S::leading, 1024, true);
#pragma unroll
                for (int mi = 0; mi < MI; mi++) {
                    if (q % 2 == 0)
                        wgmma_sp<BN, 0, MN>(acc[mi], af[r][mi][q], d, e[r][mi][q / 2],
                                            l > 0 || q > 0, T());
                    else
                        wgmma_sp<BN, 1, MN>(acc[mi], af[r][mi][q], d, e[r][mi][q / 2], 1, T());
                }
            }
            wgmma_commit();
            if (!AS && l + 2 < steps) /* set (r + 2) % 4: neither stage i's nor i − 1's */
                load(af[(r + 2) % R], e[(r + 2) % R], i + 2);
            /* stage i − 1's group is done: its stage goes back */
            wgmma_wait<1>();
            __syncwarp();
            if (last >= 0 && lane == 0)
                bar_arrive(&empty[last]);
            last = s;
            if (++s == stages)
                s = 0, round++;
        }
    }
    wgmma_wait<0>();
    /* no pair of K: every sum is 0 (acc was never set) */
    auto own = [&](int mi, int j) { return steps > 0 ? acc[mi][j] : 0.f; };
    /* split K: [rank − 1][quad of sums][consumer thread], 16 bytes each */
    constexpr int quads = MI * BN / 8;
    const float4 *sums = reinterpret_cast<const float4 *>(smem + a.reduce_at);
    if constexpr (SPLIT) {
        if (rank > 0) {
            const uint32_t to = in_first(sums + (rank - 1) * quads * 256 + threadIdx.x);
#pragma unroll
            for (int q = 0; q < quads; q++) {
                const int mi = q / (BN / 8), j = q % (BN / 8) * 4;
                store_remote(to + q * 256 * 16, own(mi, j), own(mi, j + 1), own(mi, j + 2),
                             own(mi, j + 3));
            }
        }
        cluster_sync();
        if (rank > 0)
            return;
    }
    /* the block's sum and the other blocks' of the cluster, in rank order */
    auto sum = [&](int mi, int j) {
        float v = own(mi, j);
        if constexpr (SPLIT) {
            const float *mine = reinterpret_cast<const float *>(
                                    sums + (mi * (BN / 8) + j / 4) * 256 + threadIdx.x) + j % 4;
            for (int k = 1; k < a.split_k; k++)
                v += mine[(k - 1) * quads * 256 * 4];
        }
        return v;
    };

    if (a.c_col != 1) { /* C N×M: from the registers */
#pragma unroll
        for (int mi = 0; mi < MI; mi++) {
            const int row0 = (tile0 + (wg * MI + mi) * 4 + wi) * 16 + (lane >> 2);
#pragma unroll
            for (int j = 0; j < BN / 2; j++) {
                const int row = row0 + 8 * (j % 4 / 2);
                const int col = n0 + 8 * (j / 4) + 2 * (lane & 3) + j % 2;
                if (row < a.m && col < a.n)
                    store<T>(a, row, col, sum(mi, j));
            }
        }
        return;
    }
    /* C M×N through shared memory: the ring is free once both consumers'
     * last groups are done (named barrier 1: the 256 consumer threads) */
    asm volatile("bar.sync 1, 256;\n" ::: "memory");
    T *tile = reinterpret_cast<T *>(smem) + wg * MI * 64 * S::pitch;
    const int row_base = (tile0 + wg * MI * 4) * 16; /* the consumer's first row */
#pragma unroll
    for (int mi = 0; mi < MI; mi++) {
        const int r0 = mi * 64 + wi * 16 + (lane >> 2);
#pragma unroll
        for (int j = 0; j < BN / 2; j += 2) {
            const int rr = r0 + 8 * (j % 4 / 2), cc = 8 * (j / 4) + 2 * (lane & 3);
            /* rows past M are not stored: no bias to read */
            const int row = min(row_base + rr, a.m - 1);
            const T pair[2] = {elem<T>::from_float(epilogue_value(a, row, sum(mi, j))),
                               elem<T>::from_float(epilogue_value(a, row, sum(mi, j + 1)))};
            *reinterpret_cast<uint32_t *>(tile + rr * S::pitch + cc) =
                *reinterpret_cast<const uint32_t *>(pair);
        }
    }
    asm volatile("bar.sync %0, 128;\n" ::"r"(2 + wg) : "memory"); /* the consumer's own tile */
    for (int i = threadIdx.x & 127; i < MI * 64 * (BN / 8); i += 128) {
        const int rr = i / (BN / 8), cc = i % (BN / 8) * 8;
        const int row = row_base + rr, col = n0 + cc;
        if (row >= a.m || col >= a.n)
            continue;
        const T *src = tile + rr * S::pitch + cc;
        T *dst = static_cast<T *>(a.c) + row * a.c_row + col;
        if (col + 8 <= a.n && (reinterpret_cast<uintptr_t>(dst) & 15) == 0)
            *reinterpret_cast<uint4 *>(dst) = *reinterpret_cast<const uint4 *>(src);
        else
            for (int q = 0; q < 8 && col + q < a.n; q++)
                dst[q] = src[q];
    }
}

template <typename T, int MI, int BN, bool AS, bool SPLIT> void *kernel_layout(bool mn)
{
    return mn ? (void *)sp_tma_kernel<T, MI, BN, true, AS, SPLIT>
              : (void *)sp_tma_kernel<T, MI, BN, false, AS, SPLIT>;
}

template <typename T, int MI, int BN, bool SPLIT> void *kernel_staging(const sp_config *c, bool mn)
{
    return c->a_staged ? kernel_layout<T, MI, BN, true, SPLIT>(mn)
                       : kernel_layout<T, MI, BN, false, SPLIT>(mn);
}

/* (m128 n64 and m128 n128 stage A: sp_config_refusal) */
template <typename T, int MI, int BN> void *kernel_split(const sp_config *c, bool mn)
{
    return c->split_k > 1 ? kernel_layout<T, MI, BN, true, true>(mn)
                          : kernel_layout<T, MI, BN, true, false>(mn);
}

/* The shapes sp_config_refusal allows; K split on m128 n64 and n128 only. */
template <typename T> void *kernel_shape(const sp_config *c, bool mn)
{
    switch (c->bm * 1000 + c->bn) {
    case 128128: return kernel_split<T, 1, 128>(c, mn);
    case 128064: return kernel_split<T, 1, 64>(c, mn);
    case 128256: return kernel_staging<T, 1, 256, false>(c, mn);
    case 256128: return kernel_staging<T, 2, 128, false>(c, mn);
    default: return nullptr;
    }
}

void *kernel_for(const sp_config *c, const sp_device *d, bool mn)
{
    if (c->kind != SP_TMA || sp_config_refusal(c, &d->pattern))
        return nullptr;
    if (d->dtype == SPF_DTYPE_F16)
        return kernel_shape<__half>(c, mn);
    if (d->dtype == SPF_DTYPE_BF16)
        return kernel_shape<__nv_bfloat16>(c, mn);
    return nullptr;
}

/* The staged wgmma kernel of c's shape (m64 for n64), for operands the
 * copy engine cannot take; K not split. */
sp_config staged(const sp_config *c)
{
    return sp_config{SP_WGMMA, 0, 0, 0, c->stages < 4 ? c->stages : 4,
                     c->bn == 64 ? 64 : c->bm, c->bn};
}

/* The map of format d's A fragments or metadata (base: d->values or
 * d->meta, `unit` bytes a tile and pair) as [tile][pair][words], copied a
 * box of config c's row tiles × a stage's pairs. Host code. */
spf_status pair_map(CUtensorMap *map, const void *base, uint32_t unit, const sp_device *d,
                    const sp_config *c)
{
    const uint64_t pairs = static_cast<uint64_t>(d->pairs);
    const uint64_t dims[3] = {unit / 4, pairs, static_cast<uint64_t>(d->tiles)};
    const uint64_t strides[2] = {unit, pairs * unit};
    const uint32_t box[3] = {unit / 4, static_cast<uint32_t>(SP_TMA_PAIRS(c->bm)),
                             static_cast<uint32_t>(c->bm / 16)};
    return tensor_map_words_3d(map, base, dims, strides, box);
}

} // namespace

extern "C" spf_status sp_tma_occupancy(const sp_config *c, const sp_device *d, int *blocks)
{
    const void *k = kernel_for(c, d, true);
    if (!k)
        return FAIL(SPF_ERR_UNSUPPORTED, "structured: no TMA kernel for m%d n%d s%d, %s", c->bm,
                    c->bn, c->stages, spf_dtype_name(d->dtype));
    return smem_occupancy(k, sp_config_threads(c), sp_config_smem(c), blocks);
}

extern "C" spf_status sp_tma_launch(const sp_device *d, const sp_config *c,
                                    const spmm_operands *op, void *stream)
{
    const bool mn = op->b_layout == SPF_LAYOUT_N_LAST;
    const int64_t pitch = mn ? op->b_row : op->b_col;
    const int64_t rows = mn ? d->cols : op->n, cols = mn ? op->n : d->cols;
    const bool unit = mn ? op->b_col == 1 : op->b_row == 1;
    if (!unit || !tensor_map_fits(op->b, rows, cols, pitch)) {
        const sp_config w = staged(c);
        return sp_wgmma_launch(d, &w, op, stream);
    }
    const void *k = kernel_for(c, d, mn);
    if (!k)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "structured: no TMA kernel for m%d n%d s%d on a "
                    "format of V = %d", c->bm, c->bn, c->stages, d->pattern.v);
    tma_args a = {};
    spf_status status = tensor_map_2d(&a.b_map, d->dtype, op->b, rows, cols, pitch,
                                      mn ? 64 * SP_TMA_PAIRS(c->bm) : c->bn, 64);
    if (status != SPF_OK)
        return status;
    a.values = reinterpret_cast<const uint4 *>(d->values);
    a.meta = d->meta;
    a.m = static_cast<int32_t>(d->rows);
    a.n = static_cast<int32_t>(op->n);
    a.tiles = static_cast<int32_t>(d->tiles);
    a.pairs = static_cast<int32_t>(d->pairs);
    a.stages = c->stages;
    a.c = op->c;
    a.c_row = op->c_row;
    a.c_col = op->c_col;
    a.bias = op->bias;
    a.relu = op->relu;
    a.split_k = c->split_k > 1 ? c->split_k : 1;
    const int ring = c->stages * SP_TMA_STAGE_BYTES(c->bm, c->bn, c->a_staged);
    a.reduce_at = max(ring, SP_TMA_EPILOGUE_BYTES(c->bm, c->bn));
    if (c->a_staged) {
        status = pair_map(&a.a_map, d->values, SP_TILE_A_BYTES, d, c);
        if (status == SPF_OK)
            status = pair_map(&a.m_map, d->meta, SP_TILE_META_BYTES, d, c);
        if (status != SPF_OK)
            return status;
    }
    return block_launch(k, d, c, op->n, a, stream);
}
