/* The structured wgmma kernel, Hopper only (sm_90a): the tile kernel's
 * blocks (sp_tile.cu: a block walks K a step pair at a time) with the
 * warpgroup MMA, wgmma.mma_async.sp m64nNk32, in place of mma.sp: on
 * Hopper mma.sp takes the older, slower path of the tensor cores
 * (HOPPER.md: a matrix kernel whose SASS shows only HMMA). Warp-
 * specialised (sp_wgmma_kernel): a producer warpgroup copies the stages
 * by cp.async, the consumers only multiply. It is correct and still
 * 2.6-2.9x slower than dense fp16 at N >= 256; the producer's per-thread
 * copies set its time (bench/results/structured/README.md, "N >= 256").
 *
 * A warpgroup (4 warps) multiplies 64 rows per instruction: warp w of the
 * group takes row tile w, and its A operand, from registers, is exactly
 * the mma.sp m16n8k32 fragment the format stores, with its metadata word
 * and sparsity selector (checked on the H100: the format serves both
 * kernels unchanged). B comes from the shared-memory stage through a
 * matrix descriptor: MN-major with the 128-byte swizzle for B K×N, K-major
 * unswizzled core matrices for B N×K (struct shape below; PTX ISA "Matrix
 * Descriptor Format").
 *
 * Block shapes: bm 64 (one consumer warpgroup, one m64 instruction), 128
 * (two) or 256 (two, two instructions each) by bn 64, 128 or 256 (the
 * instruction's N). */
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "sp_wgmma.sm90a.cu is built for sm_90a only (CMakeLists.txt)"
#endif

#include <cuda_runtime.h>

#include <stdint.h>

#include "gpu/cuda_check.h"
#include "gpu/epilogue.cuh"
#include "gpu/mma_ptx.cuh"
#include "gpu/smem_limit.cuh"
#include "strategy/structured/kernels/sp_stage.cuh"
#include "strategy/structured/sp_kernel.h"

namespace {

using args = sp_stage_args;

#define SP_D8(i)                                                                                   \
    "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]),    \
        "+f"(d[i + 6]), "+f"(d[i + 7])
#define SP_D32(i) SP_D8(i), SP_D8(i + 8), SP_D8(i + 16), SP_D8(i + 24)
#define SP_D64(i) SP_D32(i), SP_D32(i + 32)
#define SP_D128(i) SP_D64(i), SP_D64(i + 64)

/* d += a·B: a the warp's A fragment (sp_format.h), B by desc, e the
 * metadata word, SEL the sparsity selector (the step of the pair), MN the
 * transpose bit (B MN-major). Scale-d is 1: d accumulates. */
/* m64n64k32: 32 accumulators a thread. */
#define SP_WGMMA_64(TYPE)                                                                          \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %38, 0;\n"                                      \
                 "wgmma.mma_async.sp.sync.aligned.m64n64k32.f32." TYPE "." TYPE " "                \
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,"                 \
                 "%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, "                      \
                 "{%32,%33,%34,%35}, %36, %37, %39, p, 1, 1, %40;\n}\n"                            \
                 : SP_D32(0)                                                                       \
                 : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "l"(desc), "r"(e), "r"(scale), "n"(SEL),    \
                   "n"(MN))

/* m64n128k32: 64 accumulators a thread. */
#define SP_WGMMA_128(TYPE)                                                                         \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %70, 0;\n"                                      \
                 "wgmma.mma_async.sp.sync.aligned.m64n128k32.f32." TYPE "." TYPE " "               \
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,"                 \
                 "%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,"                \
                 "%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,"                \
                 "%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, "                      \
                 "{%64,%65,%66,%67}, %68, %69, %71, p, 1, 1, %72;\n}\n"                            \
                 : SP_D64(0)                                                                       \
                 : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "l"(desc), "r"(e), "r"(scale), "n"(SEL),    \
                   "n"(MN))

/* m64n256k32: 128 accumulators a thread. */
#define SP_WGMMA_256(TYPE)                                                                         \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %134, 0;\n"                                     \
                 "wgmma.mma_async.sp.sync.aligned.m64n256k32.f32." TYPE "." TYPE " "               \
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,"                 \
                 "%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,"                \
                 "%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,"                \
                 "%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,"                \
                 "%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,"                \
                 "%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,"                \
                 "%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,"                 \
                 "%111,%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,"                    \
                 "%123,%124,%125,%126,%127}, "                                                     \
                 "{%128,%129,%130,%131}, %132, %133, %135, p, 1, 1, %136;\n}\n"                    \
                 : SP_D128(0)                                                                      \
                 : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "l"(desc), "r"(e), "r"(scale), "n"(SEL),    \
                   "n"(MN))

template <int BN, int SEL, int MN>
__device__ __forceinline__ void wgmma_sp(float (&d)[BN / 2], const uint4 &a, uint64_t desc,
                                         uint32_t e, int scale, __half)
{
    if constexpr (BN == 64)
        SP_WGMMA_64("f16");
    else if constexpr (BN == 128)
        SP_WGMMA_128("f16");
    else
        SP_WGMMA_256("f16");
}
template <int BN, int SEL, int MN>
__device__ __forceinline__ void wgmma_sp(float (&d)[BN / 2], const uint4 &a, uint64_t desc,
                                         uint32_t e, int scale, __nv_bfloat16)
{
    if constexpr (BN == 64)
        SP_WGMMA_64("bf16");
    else if constexpr (BN == 128)
        SP_WGMMA_128("bf16");
    else
        SP_WGMMA_256("bf16");
}

/* A matrix descriptor (PTX ISA "Matrix Descriptor Format"): start
 * address, leading and stride byte offsets, each in 16-byte units, and
 * the swizzle mode (bits 62-63: 0 none, 1 128-byte). */
__device__ __forceinline__ uint64_t descriptor(const void *p, uint32_t leading, uint32_t stride,
                                               bool swizzle)
{
    const uint32_t addr = smem_addr(p);
    return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) |
           static_cast<uint64_t>((leading >> 4) & 0x3FFF) << 16 |
           static_cast<uint64_t>((stride >> 4) & 0x3FFF) << 32 |
           static_cast<uint64_t>(swizzle) << 62;
}

/* The stages' barriers (sp_wgmma_kernel): the PTX ISA's mbarrier, phases
 * counted by parity. */
__device__ __forceinline__ void bar_init(uint64_t *b, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(b)), "r"(count));
}
/* a plain arrival, releasing this thread's earlier writes */
__device__ __forceinline__ void bar_arrive(uint64_t *b)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(b)) : "memory");
}
/* an arrival once this thread's cp.async copies so far have landed */
__device__ __forceinline__ void bar_arrive_copies(uint64_t *b)
{
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(smem_addr(b))
                 : "memory");
}
/* until the phase of this parity has completed */
__device__ __forceinline__ void bar_wait(uint64_t *b, int parity)
{
    asm volatile("{\n.reg .pred done;\nwait:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra wait;\n}\n" ::"r"(smem_addr(b)),
                 "r"(parity)
                 : "memory");
}

/* WG consumer warpgroups, MI instructions of 64 rows each, BN columns; MN:
 * B staged MN-major. One more warpgroup, the producer, fills the stages.
 *
 * A stage: B's 64 rows of the step pair first (1024-byte aligned), then
 * per row tile the A fragments and the metadata (sp_kernel.h).
 *
 * B MN-major (B K×N by cp.async) takes the 128-byte swizzle: atoms of 8 k
 * × 64 n, a k's 64 n in 128 bytes whose 16-byte chunks are permuted by
 * chunk ^ k % 8, so that the tensor cores' reads of 8 k of one chunk, and
 * the copies of one k's chunks, fall in distinct banks. Unswizzled (8 k
 * of one chunk 128 bytes apart, all in one bank group), the tensor cores
 * read B at an eighth of the rate: the wgmma kernel was 2.9× slower than
 * cuBLAS at N = 2048 (H200, 257 µs against 88). The 8-k groups are 1024
 * bytes apart (stride offset), the 64-n atoms 8192 (leading offset; the
 * PTX ISA's canonical MN-major layout, as CUTLASS's make_gmma_desc writes
 * it). B K-major (B N×K) keeps the unswizzled core matrices of 8 × 16
 * bytes: cores along k 128 bytes apart (leading), along n 1024
 * (stride). */
template <int WG, int MI, int BN, bool MN> struct shape {
    static constexpr int tiles = 4 * WG * MI;
    static constexpr int threads = 128; /* the producer's, sharing the copies */
    static constexpr int b_at = 0;
    static constexpr int a_at = BN * 128;
    static constexpr int meta_at = a_at + tiles * SP_TILE_A_BYTES;
    static constexpr int stage_bytes = SP_WGMMA_STAGE_BYTES(16 * tiles, BN);
    static constexpr int leading = MN ? 8192 : 128;
    static constexpr int stride = 1024;
    static constexpr int k32 = MN ? 4096 : 512; /* the second step's B: 32 k on */
    static_assert(meta_at + tiles * SP_TILE_META_BYTES <= stage_bytes, "the stage holds A");
    /* the byte of B element (k, n) of the stage's 64 × BN */
    static __device__ __forceinline__ int at(int k, int n)
    {
        if (MN)
            return n / 64 * leading + k / 8 * stride + k % 8 * 128 +
                   ((n % 64 / 8) ^ (k % 8)) * 16 + n % 8 * 2;
        return k / 8 * leading + n / 8 * stride + n % 8 * 16 + k % 8 * 2;
    }
};

/* Producer thread t's B pieces (sp_stage.cuh): MN-major, a piece 8 columns
 * of one row of B K×N; K-major, 8 k of one column of B N×K. */
template <class S, int BN, bool MN>
__device__ __forceinline__ b_plan<8 * BN, S::threads> plan_b(int n0, int t)
{
    b_plan<8 * BN, S::threads> bp;
    constexpr int per_row = MN ? BN / 8 : 8;
#pragma unroll
    for (int c = 0; c < bp.count; c++) {
        const int i = t + c * S::threads, r = i / per_row, piece = i % per_row;
        bp.k[c] = MN ? r : 8 * piece;
        bp.j[c] = n0 + (MN ? 8 * piece : r);
        bp.dst[c] = i < 8 * BN ? S::b_at + (MN ? S::at(r, 8 * piece) : S::at(8 * piece, r)) : -1;
    }
    return bp;
}

/* Producer thread t fills stage st's K-major B of step pair p by plain
 * loads and stores: B's rows not 16-byte aligned, or B N×K and gathered. */
template <typename T, class S, int BN, bool GATHER>
__device__ __forceinline__ void fill_b(const args &a, int n0, const int32_t *gather, int p,
                                       unsigned char *st, int t)
{
    const T *b = static_cast<const T *>(a.b);
    for (int i = t; i < 64 * BN; i += S::threads) {
        const int r = i / BN, jj = i % BN, j = n0 + jj;
        const int kk = GATHER ? __ldg(gather + 64 * p + r) : 64 * p + r;
        *reinterpret_cast<T *>(st + S::b_at + S::at(r, jj)) =
            (GATHER || kk < a.k) && j < a.n ? b[kk * a.b_row + j * a.b_col]
                                            : elem<T>::from_float(0.f);
    }
}

/* Warp-specialised: warpgroup WG (the last) only copies, the others only
 * multiply, so that neither waits on the other's instructions (the
 * earlier plan, every thread copying and multiplying with a block barrier
 * and a full wgmma wait each step pair, left the tensor cores mostly idle:
 * bench/results/structured/README.md, N = 256). Stage s of the ring
 * passes between them by two barriers: full[s] completes when the
 * producer's copies into it have landed (each producer thread arrives
 * twice: once plainly, after its plain stores, and once by cp.async when
 * its copies land), empty[s] when every consumer warp is done reading it.
 * A consumer keeps one step pair's wgmma in flight while it waits for
 * the next stage. */
template <typename T, int WG, int MI, int BN, bool GATHER, bool MN>
__global__ void __launch_bounds__(128 * (WG + 1), 1) sp_wgmma_kernel(const args a)
{
    using S = shape<WG, MI, BN, MN>;
    extern __shared__ __align__(128) unsigned char dynamic[];
    /* the swizzle's atoms want 1024-byte alignment (sp_config_smem adds
     * the room) */
    unsigned char *smem = dynamic + (-smem_addr(dynamic) & 1023);
    __shared__ uint64_t full[SP_WGMMA_STAGES_MAX], empty[SP_WGMMA_STAGES_MAX];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int wg = warp / 4, wi = warp % 4;
    const int tile0 = blockIdx.x * S::tiles, n0 = blockIdx.y * BN, stages = a.stages;
    if (threadIdx.x == 0) {
        for (int s = 0; s < stages; s++) {
            bar_init(&full[s], 2 * S::threads);
            bar_init(&empty[s], 4 * WG);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    /* With two consumers the block's 384 threads start at 168 registers
     * each (launch bounds), too few for 128 accumulators with a group in
     * flight (ptxas warning C7512): the producer keeps 72 and each
     * consumer takes 216 (2 · 216 + 72 = 3 · 168). */
    if (wg == WG) { /* the producer */
        if constexpr (WG == 2)
            asm volatile("setmaxnreg.dec.sync.aligned.u32 72;\n" ::: "memory");
        const int t = threadIdx.x - 128 * WG;
        const int32_t *gather = nullptr;
        if constexpr (GATHER) /* the block's rows lie in one block of V rows (bm divides V) */
            gather = a.gather + static_cast<int64_t>(tile0 * 16 / a.v) * a.kc;
        const a_plan<S::tiles, S::threads> ap(a, tile0, t);
        const auto bp = plan_b<S, BN, MN>(n0, t);
        for (int p = 0, s = 0, round = 0; p < a.pairs; p++) {
            if (round > 0)
                bar_wait(&empty[s], (round - 1) & 1);
            unsigned char *st = smem + s * S::stage_bytes;
            ap.issue(a, p, st + S::a_at);
            if (MN || a.vector_b)
                bp.template issue<T, MN, GATHER>(a, gather, p, st);
            else
                fill_b<T, S, BN, GATHER>(a, n0, gather, p, st, t);
            bar_arrive(&full[s]);
            bar_arrive_copies(&full[s]);
            if (++s == stages)
                s = 0, round++;
        }
        copy_wait<0>(); /* no copy outlives its thread */
        return;
    }

    /* set by the first pair's wgmma (scale-d 0), not by stores: ptxas
     * serialises wgmma whose accumulators other instructions write while
     * a group is in flight (warning C7515) */
    float acc[MI][BN / 2];
    if constexpr (WG == 2)
        asm volatile("setmaxnreg.inc.sync.aligned.u32 216;\n" ::: "memory");
    for (int p = 0, s = 0, round = 0, last = -1; p < a.pairs; p++) {
        bar_wait(&full[s], round & 1);
        /* bytes written through the generic proxy (cp.async, stores), read
         * by the tensor cores through the async one */
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        const unsigned char *st = smem + s * S::stage_bytes;
        const uint4 *av = reinterpret_cast<const uint4 *>(st + S::a_at);
        const uint32_t *am = reinterpret_cast<const uint32_t *>(st + S::meta_at);
        uint4 af[MI][2];
        uint32_t e[MI];
#pragma unroll
        for (int mi = 0; mi < MI; mi++) {
            const int t = (wg * MI + mi) * 4 + wi;
            e[mi] = am[t * 32 + lane];
            af[mi][0] = av[(t * 2) * 32 + lane];
            af[mi][1] = av[(t * 2 + 1) * 32 + lane];
        }
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
        const uint64_t d0 = descriptor(st + S::b_at, S::leading, S::stride, MN);
        const uint64_t d1 = descriptor(st + S::b_at + S::k32, S::leading, S::stride, MN);
#pragma unroll
        for (int mi = 0; mi < MI; mi++)
            wgmma_sp<BN, 0, MN>(acc[mi], af[mi][0], d0, e[mi], p > 0, T());
#pragma unroll
        for (int mi = 0; mi < MI; mi++)
            wgmma_sp<BN, 1, MN>(acc[mi], af[mi][1], d1, e[mi], 1, T());
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        /* the previous pair's wgmma are done: its stage goes back */
        asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
        __syncwarp();
        if (last >= 0 && lane == 0)
            bar_arrive(&empty[last]);
        last = s;
        if (++s == stages)
            s = 0, round++;
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");

#pragma unroll
    for (int mi = 0; mi < MI; mi++)
#pragma unroll
        for (int j = 0; j < BN / 2; j++) {
            const int row = (tile0 + (wg * MI + mi) * 4 + wi) * 16 + (lane >> 2) + 8 * (j % 4 / 2);
            const int col = n0 + 8 * (j / 4) + 2 * (lane & 3) + (j & 1);
            if (row < a.m && col < a.n)
                store<T>(a, row, col, acc[mi][j]);
        }
}

template <typename T, int WG, int MI, int BN> void *kernel_layout(bool gather, bool mn)
{
    if (mn)
        return gather ? (void *)sp_wgmma_kernel<T, WG, MI, BN, true, true>
                      : (void *)sp_wgmma_kernel<T, WG, MI, BN, false, true>;
    return gather ? (void *)sp_wgmma_kernel<T, WG, MI, BN, true, false>
                  : (void *)sp_wgmma_kernel<T, WG, MI, BN, false, false>;
}

/* The warpgroups of each shape sp_config_refusal allows. */
template <typename T> void *kernel_shape(const sp_config *c, bool gather, bool mn)
{
    switch (c->bm * 1000 + c->bn) {
    case 64064: return kernel_layout<T, 1, 1, 64>(gather, mn);
    case 64128: return kernel_layout<T, 1, 1, 128>(gather, mn);
    case 128128: return kernel_layout<T, 2, 1, 128>(gather, mn);
    case 128256: return kernel_layout<T, 2, 1, 256>(gather, mn);
    case 256128: return kernel_layout<T, 2, 2, 128>(gather, mn);
    default: return nullptr;
    }
}

void *kernel_for(const sp_config *c, const sp_device *d, bool mn)
{
    const bool gather = d->pattern.v != 0;
    if (c->kind != SP_WGMMA || sp_config_refusal(c, &d->pattern))
        return nullptr;
    if (d->dtype == SPF_DTYPE_F16)
        return kernel_shape<__half>(c, gather, mn);
    if (d->dtype == SPF_DTYPE_BF16)
        return kernel_shape<__nv_bfloat16>(c, gather, mn);
    return nullptr;
}

} // namespace

extern "C" spf_status sp_wgmma_occupancy(const sp_config *c, const sp_device *d, int *blocks)
{
    const void *k = kernel_for(c, d, true);
    if (!k)
        return FAIL(SPF_ERR_UNSUPPORTED, "structured: no wgmma kernel for m%d n%d, %s", c->bm,
                    c->bn, spf_dtype_name(d->dtype));
    return smem_occupancy(k, sp_config_threads(c), sp_config_smem(c), blocks);
}

extern "C" spf_status sp_wgmma_launch(const sp_device *d, const sp_config *c,
                                      const spmm_operands *op, void *stream)
{
    args a = stage_args(d, c, op);
    /* MN-major by cp.async for aligned K×N rows; else K-major, by cp.async
     * for aligned N×K columns that are not gathered, by plain loads
     * otherwise */
    const bool mn = op->b_layout == SPF_LAYOUT_N_LAST && a.vector_b;
    if (op->b_layout == SPF_LAYOUT_N_LAST || d->pattern.v)
        a.vector_b = a.vector_b && mn;
    return stage_launch(kernel_for(c, d, mn), d, c, op, a, stream);
}
