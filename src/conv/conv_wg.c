/* The warpgroup conv kernel's geometry (conv_wg.h); the kernel, and the
 * weights on the device, are in kernels/conv_wg*.sm90a.cu. */
#include "conv/conv_wg.h"

#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/matrix.h"
#include "strategy/structured/sp_format.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

int conv_wg_geometry(const conv_gather *g, int32_t k, int32_t bn, conv_wg_weights weights,
                     conv_wg_geom *out, char *reason, size_t cap)
{
    if (!g->nhwc || (g->stride != 1 && g->stride != 2)) {
        snprintf(reason, cap, "the warpgroup kernel takes NHWC at stride 1 or 2 (here %s, "
                 "stride %d)", g->nhwc ? "NHWC" : "NCHW", g->stride);
        return 0;
    }
    if (g->c % CONV_WG_CHUNK != 0 || k % CONV_WG_BM != 0) {
        snprintf(reason, cap, "the warpgroup kernel takes C and K multiples of 64 (C = %d, K = %d)",
                 g->c, k);
        return 0;
    }
    if (bn != 32 && bn != 64 && bn != 128 && bn != 256) {
        snprintf(reason, cap, "the warpgroup kernel's positions a block are 32, 64, 128 or 256 "
                 "(%d)", bn);
        return 0;
    }
    if (weights == CONV_WG_SPARSE && g->r * g->s > CONV_WG_SP_MAX_TAPS) {
        snprintf(reason, cap, "the sparse warpgroup kernel takes at most %d taps (%d)",
                 CONV_WG_SP_MAX_TAPS, g->r * g->s);
        return 0;
    }
    /* a box's width: an output row and the taps' reach along it (at
     * stride 1 the padded width; at 2 a parity plane's, conv_wg_row);
     * the copy engine steps `stride` pixels through a box of stride·wp */
    const int32_t st = g->stride, wp = g->q + (g->s - 1) / st;
    if (wp > bn || st * wp > 256) {
        snprintf(reason, cap, "a box row of %d pixels (the output row and the taps' reach) is "
                 "wider than a block's %d positions (or the copy engine's 256 at stride %d)", wp,
                 bn, st);
        return 0;
    }
    conv_wg_geom x = {.n = g->cols / (g->p * g->q), .c = g->c, .h = g->h, .w = g->w, .r = g->r,
                      .s = g->s, .pad = g->pad, .p = g->p, .q = g->q, .k = k, .stride = st,
                      .wp = wp};
    /* as few tiles along an image as bn positions allow, then their rows
     * evened out (ResNet-50's 28 rows at 256 positions: 4 tiles of 7, not
     * 3 of 8 and one of 4) */
    const int32_t most = bn / wp < g->p ? bn / wp : g->p;
    x.row_tiles = (g->p + most - 1) / most;
    x.rows = (g->p + x.row_tiles - 1) / x.row_tiles;
    x.halo = x.rows + (g->r - 1) / st;
    if (st * x.halo > 256) {
        snprintf(reason, cap, "a box of %d input rows at stride %d: the copy engine takes 256",
                 x.halo, st);
        return 0;
    }
    /* whole images where one leaves room: the weights' boxes, which every
     * block loads, then serve more positions (ResNet-50's 7×7: 3 images
     * at 256 positions), as evenly as the batch allows */
    x.images = 1;
    if (x.rows == g->p) {
        int32_t fit = 1 + (bn - x.rows * wp) / (x.halo * wp);
        fit = fit < x.n ? fit : x.n;
        fit = fit < 256 ? fit : 256;
        const int32_t along = (x.n + fit - 1) / fit;
        x.images = (x.n + along - 1) / along;
    }
    /* wgmma's N: the tile's positions up to the narrowest N built, not bn (layer3's
     * 14 rows of 16 are 224 positions: m64n256 did 14 % more work) */
    x.bn = conv_wg_mma_n(((x.images - 1) * x.halo + x.rows) * wp);
    /* in its plane, the last tap of the last position reaches
     * (R−1)/stride·wp + (S−1)/stride rows past the tile's positions; the
     * box fills halo·wp ≤ that */
    x.stage_rows = conv_wg_planes(&x) *
                   ((x.bn + (g->r - 1) / st * wp + (g->s - 1) / st + 7) / 8 * 8);
    x.chunks = g->c / CONV_WG_CHUNK;
    const int64_t tiles = (int64_t)(x.n + x.images - 1) / x.images * x.row_tiles;
    if (tiles > INT32_MAX || k / CONV_WG_BM > 65535) {
        snprintf(reason, cap, "%lld blocks along the positions, %d along the channels: past the "
                 "grid", (long long)tiles, k / CONV_WG_BM);
        return 0;
    }
    x.tiles = (int32_t)tiles;
    x.weights = weights;
    x.splits = 1;
    if (weights == CONV_WG_RESIDENT) {
        x.stages = 2;
        if (conv_wg_smem(&x) > CONV_WG_SMEM) {
            snprintf(reason, cap, "the weights of every chunk (%zu bytes), two input stages and "
                     "the sums are past shared memory",
                     (size_t)x.chunks * conv_wg_chunk_weights(&x));
            return 0;
        }
        *out = x;
        return 1;
    }
    x.stages = x.chunks > 1 ? 2 : 1;
    if (x.stages == 2 && conv_wg_smem(&x) > CONV_WG_SMEM)
        x.stages = 1;
    if (conv_wg_smem(&x) > CONV_WG_SMEM) {
        snprintf(reason, cap, "a stage of %zu bytes (%d taps of %s weights and %d input rows) "
                 "is past shared memory", conv_wg_stage_bytes(&x), g->r * g->s,
                 weights == CONV_WG_SPARSE ? "sparse" : "dense", x.stage_rows);
        return 0;
    }
    *out = x;
    return 1;
}

/* Blocks of conv_wg_smem bytes an SM holds. */
static int64_t blocks_an_sm(const conv_wg_geom *g)
{
    return CONV_WG_SM_SMEM / (conv_wg_smem(g) + 1024);
}

int conv_wg_one_stage(const conv_wg_geom *g, conv_wg_geom *out)
{
    if (g->weights != CONV_WG_STAGED || g->stages != 2)
        return 0;
    conv_wg_geom one = *g;
    one.stages = 1;
    if (blocks_an_sm(g) != 1 || blocks_an_sm(&one) < 2)
        return 0;
    *out = one;
    return 1;
}

int conv_wg_split(const conv_wg_geom *g, int32_t splits, conv_wg_geom *out)
{
    if (g->splits != 1 || !conv_wg_splits_ok(g, splits))
        return 0;
    conv_wg_geom x = *g;
    x.splits = splits;
    if (x.stages > x.chunks / splits)
        x.stages = x.chunks / splits;
    if (x.stages == 2 && conv_wg_smem(&x) > CONV_WG_SMEM)
        x.stages = 1;
    if (conv_wg_smem(&x) > CONV_WG_SMEM)
        return 0;
    *out = x;
    return 1;
}

void conv_wg_config_name(const conv_wg_geom *g, char *buf, size_t size)
{
    static const char *suffix[3] = {"", "_w", "_sp"};
    char split[16] = "";
    if (g->splits > 1)
        snprintf(split, sizeof split, "_z%d", g->splits);
    snprintf(buf, size, "bn%d_r%d_i%d_s%d%s%s", g->bn, g->rows, g->images, g->stages,
             suffix[g->weights], split);
}

void conv_wg_name(const conv_wg_geom *g, spf_dtype dtype, char *buf, size_t size)
{
    char config[32];
    conv_wg_config_name(g, config, sizeof config);
    snprintf(buf, size, "convwg_%s_%s", dtype_name(dtype), config);
}

/* The 2:4 part's format (sp_format.h: tile T of 16 rows, pair P of 64
 * columns) block by block: block (mb, ch) takes tiles 4·mb.. and, of tap
 * t, the pair of columns t·C + 64·ch.., which is P = t·chunks + ch. */
static void pack_blocks(const sp_format *f, const conv_wg_geom *g, uint8_t *blocks)
{
    const int32_t taps = g->r * g->s;
    const size_t block = conv_wg_sparse_block(g);
    for (int32_t mb = 0; mb < g->k / CONV_WG_BM; mb++)
        for (int32_t ch = 0; ch < g->chunks; ch++) {
            uint8_t *dst = blocks + ((size_t)mb * g->chunks + ch) * block;
            for (int32_t t = 0; t < taps; t++)
                for (int32_t w = 0; w < 4; w++) {
                    const int64_t tp = (int64_t)(4 * mb + w) * f->pairs + t * g->chunks + ch;
                    const int at = t * 4 + w;
                    memcpy(dst + (size_t)at * (CONV_WG_SP_VALUES / 4), f->values + tp * 2 * 32 * 4,
                           CONV_WG_SP_VALUES / 4);
                    memcpy(dst + (size_t)taps * CONV_WG_SP_VALUES +
                               (size_t)at * (CONV_WG_SP_META / 4),
                           f->meta + tp * 32, CONV_WG_SP_META / 4);
                }
        }
}

/* Block b's strays (rows 64·(b / chunks).., channels 64·(b % chunks)..
 * of every tap) from out->stray_ptr[b], by output channel, in groups of
 * CONV_WG_STRAY_GROUP (conv_wg.h): each entry but a group's last marked
 * CONV_WG_STRAY_MORE where the next is of the same output channel, the
 * last group filled out with zero-valued entries of its last channel. */
static void pack_block_strays(const spf_matrix *strays, const conv_wg_geom *g, spf_dtype dtype,
                              int64_t b, conv_wg_sparse *out)
{
    enum { G8 = CONV_WG_STRAY_GROUP };
    const int64_t row0 = b / g->chunks * CONV_WG_BM;
    const int32_t ch = (int32_t)(b % g->chunks);
    const int64_t entries = out->stray_ptr[b + 1] - out->stray_ptr[b];
    uint32_t *entry = out->strays + 2 * (int64_t)out->stray_ptr[b];
    int64_t placed = 0;
    for (int32_t m = 0; m < CONV_WG_BM; m++)
        for (int64_t e = strays->row_ptr[row0 + m]; e < strays->row_ptr[row0 + m + 1]; e++) {
            const int32_t col = strays->col_idx[e], t = col / g->c, c = col % g->c;
            if (c / CONV_WG_CHUNK != ch)
                continue;
            float v = strays->values[e];
            dtype_round(dtype, &v, 1);
            entry[2 * placed] = conv_wg_stray_key(m, c % CONV_WG_CHUNK,
                                                  conv_wg_row(g, 0, t / g->s, t % g->s));
            memcpy(&entry[2 * placed + 1], &v, sizeof v);
            placed++;
        }
    for (int64_t i = placed; i < entries; i++) { /* the fill */
        entry[2 * i] = conv_wg_stray_key(conv_wg_stray_m(entry[2 * (placed - 1)]), 0, 0);
        entry[2 * i + 1] = 0; /* +0.0f */
    }
    for (int64_t i = 0; i < entries; i++)
        if (i % G8 != G8 - 1 &&
            conv_wg_stray_m(entry[2 * i]) == conv_wg_stray_m(entry[2 * i + 2]))
            entry[2 * i] |= CONV_WG_STRAY_MORE;
}

/* The strays (columns in (r, s, c) order) by block in groups, their
 * values rounded to dtype. */
static spf_status pack_strays(const spf_matrix *strays, const conv_wg_geom *g, spf_dtype dtype,
                              conv_wg_sparse *out)
{
    out->stray_count = strays->nnz;
    out->stray_ptr = mem_calloc((size_t)out->block_count + 1, sizeof *out->stray_ptr);
    int64_t *count = mem_calloc((size_t)out->block_count, sizeof *count);
    if (!out->stray_ptr || !count) {
        mem_free(count);
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "conv wg: %lld blocks' strays",
                    (long long)out->block_count);
    }
    for (int64_t r = 0; r < strays->rows; r++) /* by block */
        for (int64_t e = strays->row_ptr[r]; e < strays->row_ptr[r + 1]; e++)
            count[r / CONV_WG_BM * g->chunks + strays->col_idx[e] % g->c / CONV_WG_CHUNK]++;
    for (int64_t b = 0; b < out->block_count; b++) {
        const int64_t end = out->stray_ptr[b] + (count[b] + CONV_WG_STRAY_GROUP - 1) /
                                                    CONV_WG_STRAY_GROUP * CONV_WG_STRAY_GROUP;
        if (end > INT32_MAX) {
            mem_free(count);
            return FAIL(SPF_ERR_UNSUPPORTED,
                        "conv wg: more than 2^31 stray entries (%lld strays); the dense "
                        "warpgroup kernel takes these weights",
                        (long long)strays->nnz);
        }
        out->stray_ptr[b + 1] = (int32_t)end;
    }
    mem_free(count);
    out->stray_entries = out->stray_ptr[out->block_count];
    out->strays = mem_alloc_array((size_t)out->stray_entries * 2 + 1, sizeof *out->strays);
    if (!out->strays)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "conv wg: %lld stray entries",
                    (long long)out->stray_entries);
    for (int64_t b = 0; b < out->block_count; b++)
        pack_block_strays(strays, g, dtype, b, out);
    return SPF_OK;
}

spf_status conv_wg_sparse_pack(const spf_matrix *w, const conv_wg_geom *g, spf_dtype dtype,
                               conv_wg_sparse *out)
{
    CHECK_ARG(w != NULL && g != NULL && out != NULL && g->weights == CONV_WG_SPARSE);
    CHECK_ARG(w->rows == g->k && w->cols == (int64_t)g->c * g->r * g->s);
    memset(out, 0, sizeof *out);
    const sp_pattern p24 = {.group = 4};
    spf_status status = SPF_OK;
    spf_matrix *inside = NULL, *strays = NULL;
    sp_format f;
    memset(&f, 0, sizeof f);
    uint8_t *mask = mem_alloc((size_t)w->nnz + 1); /* a nonzero's: 1 a stray */
    if (!mask || sp_pattern_strays(w, &p24, mask) < 0)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "conv wg: the strays of %lld nonzeros",
                  (long long)w->nnz);
    TRY(matrix_part(w, mask, 0, &inside));
    TRY(matrix_part(w, mask, 1, &strays));
    TRY(sp_format_build(inside, &p24, dtype, 0, &f));
    out->block_count = (int64_t)(g->k / CONV_WG_BM) * g->chunks;
    out->blocks = mem_alloc_array((size_t)out->block_count, conv_wg_sparse_block(g));
    if (!out->blocks)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "conv wg: %lld sparse blocks of %zu bytes",
                  (long long)out->block_count, conv_wg_sparse_block(g));
    pack_blocks(&f, g, out->blocks);
    TRY(pack_strays(strays, g, dtype, out));
fail:
    if (status != SPF_OK)
        conv_wg_sparse_free(out);
    sp_format_free(&f);
    spf_matrix_free(inside);
    spf_matrix_free(strays);
    mem_free(mask);
    return status;
}

spf_status conv_wg_sparse_flatten(const conv_wg_sparse *sp, const conv_wg_geom *g, uint8_t **out,
                                  size_t *bytes)
{
    CHECK_ARG(sp != NULL && g != NULL && out != NULL && bytes != NULL);
    CHECK_ARG(sp->block_count == conv_wg_sparse_blocks(g));
    *bytes = conv_wg_strays_at(g) + (size_t)sp->stray_entries * 8;
    *out = mem_calloc(*bytes, 1);
    if (!*out)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "conv wg: the sparse weights' %zu bytes", *bytes);
    memcpy(*out, sp->blocks, conv_wg_stray_ptr_at(g));
    memcpy(*out + conv_wg_stray_ptr_at(g), sp->stray_ptr,
           ((size_t)sp->block_count + 1) * sizeof *sp->stray_ptr);
    memcpy(*out + conv_wg_strays_at(g), sp->strays, (size_t)sp->stray_entries * 8);
    return SPF_OK;
}

void conv_wg_sparse_free(conv_wg_sparse *s)
{
    mem_free(s->blocks);
    mem_free(s->stray_ptr);
    mem_free(s->strays);
    memset(s, 0, sizeof *s);
}

#ifndef SPF_HAVE_CUDA

spf_status conv_wg_create(const spf_matrix *w, const conv_wg_geom *g, spf_dtype dtype, int relu,
                          conv_wg **out)
{
    (void)w, (void)g, (void)dtype, (void)relu;
    *out = NULL;
    return FAIL(SPF_ERR_NO_DEVICE, "conv: built without CUDA");
}

void conv_wg_free(conv_wg *x)
{
    (void)x;
}

int64_t conv_wg_bytes(const conv_wg *x)
{
    (void)x;
    return 0;
}

const conv_wg_geom *conv_wg_geometry_of(const conv_wg *x)
{
    (void)x;
    return NULL;
}

spf_status conv_wg_launch(const conv_wg *x, const void *in, void *out, const float *bias,
                          const void *residual, void *stream)
{
    (void)x, (void)in, (void)out, (void)bias, (void)residual, (void)stream;
    return FAIL(SPF_ERR_NO_DEVICE, "conv: built without CUDA");
}

#endif
