/* The warpgroup conv kernel with the weights resident (conv_wg.h,
 * CONV_WG_RESIDENT), for every wgmma N. */
#include "conv/kernels/conv_wg_device.cuh"

/* The weights resident: a block loads every chunk's once, then walks the
 * tiles blockIdx.x, + gridDim.x, ...; its steps (tile, chunk) cycle
 * through two input stages, the step two ahead loading while one is
 * multiplied. */
template <typename T, int BN>
__global__ void __launch_bounds__(CONV_WG_THREADS, 1)
    conv_wg_resident_kernel(const __grid_constant__ CUtensorMap in_map,
                            const __grid_constant__ CUtensorMap w_map,
                            const __grid_constant__ wg_args a)
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
struct resident {
    static const void *kernel()
    {
        return reinterpret_cast<const void *>(conv_wg_resident_kernel<T, BN>);
    }
};

const void *conv_wg_kernel_resident(spf_dtype dtype, int bn)
{
    return wg_kernel_of<resident>(dtype, bn);
}
