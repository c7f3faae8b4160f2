/* What the staged structured kernels (sp_tile.cu on mma.sp, sp_wgmma.sm90a.cu
 * on wgmma.sp) share: their arguments, and the copy of a step pair's A
 * fragments and metadata into a shared-memory stage (sp_kernel.h: a stage
 * holds SP_TILE_A_BYTES of values and SP_TILE_META_BYTES of metadata a row
 * tile, then the pair's rows of B in the kernel's own arrangement). */
#ifndef SPF_STRATEGY_STRUCTURED_SP_STAGE_CUH
#define SPF_STRATEGY_STRUCTURED_SP_STAGE_CUH

#include <stdint.h>

#include "gpu/epilogue.cuh"
#include "gpu/mma_ptx.cuh"
#include "strategy/structured/sp_kernel.h"

struct sp_stage_args {
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
    int vector_b;           /* B's rows allow 16-byte copies (take_operands) */
    int stages;
};

/* Issue the copies of step pair p's A into stage st for TILES row tiles
 * from tile0: THREADS threads, 64 pieces of values and 8 of metadata a
 * tile. Tiles past the last copy the last one (valid metadata; their rows
 * are not stored). */
template <int TILES, int THREADS>
__device__ __forceinline__ void issue_a(const sp_stage_args &a, int tile0, int p, unsigned char *st)
{
    for (int i = threadIdx.x; i < TILES * 72; i += THREADS) {
        const int r = i / 72, piece = i % 72;
        const int64_t frag = static_cast<int64_t>(min(tile0 + r, a.tiles - 1)) * a.pairs + p;
        if (piece < 64)
            copy16(st + r * SP_TILE_A_BYTES + 16 * piece, a.values + frag * 64 + piece, 16);
        else
            copy16(st + TILES * SP_TILE_A_BYTES + r * SP_TILE_META_BYTES + 16 * (piece - 64),
                   a.meta + frag * 32 + 4 * (piece - 64), 16);
    }
}

/* The arguments of a launch of config c over format d. Host code. */
inline sp_stage_args stage_args(const sp_device *d, const sp_config *c, const spmm_operands *op)
{
    sp_stage_args a = {};
    take_operands(a, op, 2);
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
    a.stages = c->stages;
    return a;
}

#endif
