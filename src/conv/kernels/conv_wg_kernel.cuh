/* The warpgroup conv kernel that takes one tile a block (conv_wg.h): the
 * weights staged dense (conv_wg_staged.sm90a.cu) or sparse
 * (conv_wg_sparse.sm90a.cu). Device code for sm_90a only. */
#ifndef SPF_CONV_KERNELS_CONV_WG_KERNEL_CUH
#define SPF_CONV_KERNELS_CONV_WG_KERNEL_CUH

#include "conv/kernels/conv_wg_strays.cuh"

/* One tile a block, each stage bringing its chunk's input and weights:
 * dense boxes, or (SPARSE) the chunk's sparse block, whose strays a second
 * warpgroup adds from the same stage while the first issues its wgmma.sp
 * and waits for them. One warpgroup doing both took the sum of the two
 * (ncu at 47494d1: 39 % of the samples the strays, 27 % the chunk's
 * fragments and wgmma.sp, one warp a scheduler). */
template <typename T, int BN, bool SPARSE>
__global__ void __launch_bounds__(SPARSE ? CONV_WG_SP_THREADS : CONV_WG_THREADS, 1)
    conv_wg_kernel(const __grid_constant__ CUtensorMap in_map,
                   const __grid_constant__ CUtensorMap w_map,
                   const __grid_constant__ wg_args a)
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
     * turn, or the cluster's other blocks (split), else over the stages */
    const bool split = !SPARSE && g.splits > 1;
    float *sums =
        reinterpret_cast<float *>(SPARSE || split ? smem + g.stages * stage_bytes : smem);
    int image0, oh0;
    wg_tile(g, blockIdx.x, &image0, &oh0);
    /* the block's chunks: chunk0.. of the tile's, split over grid z, a
     * cluster (conv_wg_split; sparse: never split) */
    const int chunks = g.chunks >> conv_wg_split_shift(&g), chunk0 = (int)blockIdx.z * chunks;

    uint64_t *in = full + 2; /* split: the sums the other blocks send */
    if (tid == 0) {
        for (int st = 0; st < g.stages; st++)
            bar_init(&full[st], 1);
        if (split)
            bar_init(in, 1);
        bar_init_fence();
        if (split)
            wg_split_expect(in, g);
    }
    for (int st = 0; st < g.stages; st++)
        wg_zero_slack(smem + st * stage_bytes, g);
    if constexpr (SPARSE)
        for (int u = tid; u < BN * CONV_WG_SP_SUMS_ROW; u += CONV_WG_SP_THREADS)
            sums[u] = 0.0f;
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    if (split) /* started, `in` set up: waited for before the sums go out */
        cluster_arrive_relaxed();

    /* the block's chunk ch's weights into stage st, its bytes and its
     * input box's expected; then its input box */
    auto issue_weights = [&](int ch, int st) {
        uint8_t *b = smem + st * stage_bytes;
        bar_arrive_expect(&full[st], wg_box_bytes(g) + weights);
        if constexpr (SPARSE)
            bulk_load(b + (size_t)g.stage_rows * CONV_WG_ROW,
                      a.sparse + ((size_t)blockIdx.y * g.chunks + ch) * weights, weights,
                      &full[st]);
        else
            wg_load_weights(b + (size_t)g.stage_rows * CONV_WG_ROW, &w_map, g, chunk0 + ch, m0,
                            &full[st]);
    };
    auto issue_input = [&](int ch, int st) {
        wg_load_input(smem + st * stage_bytes, &in_map, g, chunk0 + ch, image0, oh0, &full[st]);
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
    const int first = g.stages < chunks ? g.stages : chunks;
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
        for (int ch = 0; ch < chunks; ch++) {
            bar_wait(&full[st], phase);
            work(ch, smem + st * stage_bytes);
            const int done = ch - lag, next = done + g.stages;
            if (done >= 0 && next < chunks) {
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
                wg_epilogue_sums<BN, CONV_WG_SP_SUMS_ROW, false>(d, wgmma_sums, a.bias, m0);
                wg_split_sync();
            } else {
                wg_split_sync(); /* the strays are in the sums */
                wg_epilogue_sums<BN, CONV_WG_SP_SUMS_ROW, true>(d, sums, a.bias, m0);
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
                                                                        image0, oh0, m0, 0, 1);
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
        if (split) {
            /* the sums out; this block's in; the cluster's last barrier
             * once every block has its sums in, so no block exits while a
             * copy still reads its shared memory */
            cluster_wait();
            wg_split_send<BN>(d, sums, in, a, m0);
            bar_wait(in, 0);
            cluster_arrive_relaxed();
            wg_split_store<T, BN>(sums, a, image0, oh0, m0);
            cluster_wait();
        } else {
            wg_epilogue<T, BN>(d, sums, a, image0, oh0, m0);
        }
    }
}

#endif
