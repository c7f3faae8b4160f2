/* The host side of conv_tc.h: the geometry of a config, the configs worth
 * timing, the format (each block's weights as 32-bit entries) and its
 * upload. */
#include "conv/conv_tc.h"

#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/half.h"
#include "core/matrix.h"

#include <stdio.h>
#include <string.h>

#ifdef SPF_HAVE_CUDA
#include "gpu/cuda_check.h"
#include "gpu/device_upload.h"
#include "gpu/early_start.h"

#include <cuda_runtime_api.h>
#endif

static const int block_widths[] = {16, 32, 64};

/* The widest slice a block of bn positions holds within CONV_TC_SMEM:
 * tiles of (BM + bn) rows of ks + PAD 2-byte elements, the places (16
 * bytes a position), the taps (8 bytes a run of 8 columns: 1 a column) and
 * the padding entries' slots; with B by the copy engine (tma), the slack
 * to align the boxes too, and whole chunks. */
static int32_t widest_slice(int32_t bn, int tma)
{
    const int64_t rows = CONV_TC_BM + bn,
                  fixed = 16LL * bn + 2LL * CONV_TC_THREADS + (tma ? CONV_TC_ALIGN : 0);
    const int64_t unit = tma ? CONV_TC_CHUNK : 16;
    int64_t ks = (CONV_TC_SMEM - fixed - 2 * rows * CONV_TC_PAD) / (2 * rows + 1);
    ks = ks < CONV_TC_MAX_KS ? ks : CONV_TC_MAX_KS;
    return (int32_t)(ks / unit * unit);
}

/* The copy engine's kernel finds the boxes' alignment in the first
 * CONV_TC_ALIGN bytes and puts B's boxes and the A tile there; the
 * gather's kernel (which takes the copy engine's configs too, for an
 * input the engine cannot read) has the tables after the tiles. */
size_t conv_tc_smem(const conv_tc_geom *g)
{
    return conv_tc_tile_bytes(g) + (size_t)g->bn * 16 + (size_t)g->ks / 8 * 8 +
           (g->tma ? CONV_TC_ALIGN : 0);
}

size_t conv_tc_workspace(const conv_tc_geom *g)
{
    return g->splits > 1 && !g->cluster ? (size_t)g->cols * (size_t)g->k * sizeof(float) : 0;
}

/* CUTLASS's FastDivmod: with l = ⌈log2 d⌉, m = ⌈2^(31+l) / d⌉ < 2^32, and
 * x / d = (x · m) >> (31 + l) exactly for x < 2^31. */
conv_fastdiv conv_fastdiv_make(uint32_t d)
{
    if (d <= 1)
        return (conv_fastdiv){.d = 1};
    uint32_t l = 0;
    while ((1ull << l) < d)
        l++;
    const uint64_t p = 1ull << (31 + l);
    return (conv_fastdiv){.d = d, .m = (uint32_t)((p + d - 1) / d), .s = l - 1};
}

/* Whether the copy engine's im2col boxes take g: 64 channels a box, so C
 * a multiple of 64; a stride of at most 8; the box's corners (a 4-D map's:
 * -128 to 127). */
static int tma_takes(const conv_gather *g, char *reason, size_t cap)
{
    if (g->c % CONV_TC_CHUNK != 0) {
        snprintf(reason, cap, "C = %d: the copy engine's boxes take 64 channels, C must be a "
                 "multiple of 64", g->c);
        return 0;
    }
    const conv_tc_geom box = {.h = g->h, .w = g->w, .stride = g->stride, .pad = g->pad,
                              .p = g->p, .q = g->q};
    int32_t lower[2], upper[2];
    conv_tc_box(&box, lower, upper);
    for (int i = 0; i < 2; i++)
        if (lower[i] < -128 || upper[i] < -128 || upper[i] > 127) {
            snprintf(reason, cap, "padding %d, stride %d: the copy engine's im2col box corners "
                     "(%d, %d) pass -128 to 127", g->pad, g->stride, lower[i], upper[i]);
            return 0;
        }
    if (g->stride > 8) {
        snprintf(reason, cap, "stride %d: the copy engine steps at most 8", g->stride);
        return 0;
    }
    return 1;
}

int conv_tc_geometry(const conv_gather *g, int32_t k, conv_tc_config cfg, conv_tc_geom *out,
                     char *reason, size_t cap)
{
    if (!g->nhwc) {
        snprintf(reason, cap, "NCHW: the tensor-core kernel copies a tap's channels, contiguous "
                 "in NHWC only");
        return 0;
    }
    if (g->c % 8 != 0) {
        snprintf(reason, cap, "C = %d: the tensor-core kernel copies a tap's channels 8 (16 "
                 "bytes) at a time, C must be a multiple of 8", g->c);
        return 0;
    }
    if (g->r > 255 || g->s > 255 || g->c >= (1 << 16)) {
        snprintf(reason, cap, "a %d×%d filter over %d channels: the tensor-core kernel takes "
                 "filters up to 255×255 over fewer than 65536 channels", g->r, g->s, g->c);
        return 0;
    }
    int width = 0;
    for (int i = 0; i < 3; i++)
        width |= cfg.bn == block_widths[i];
    if (!width || cfg.splits < 1 || (cfg.cluster != 0 && cfg.cluster != 1) ||
        (cfg.tma != 0 && cfg.tma != 1)) {
        snprintf(reason, cap, "config bn %d, %d slices, cluster %d, tma %d: bn is 16, 32 or 64, "
                 "slices at least 1, cluster and tma 0 or 1", cfg.bn, cfg.splits, cfg.cluster,
                 cfg.tma);
        return 0;
    }
    if (cfg.tma && !tma_takes(g, reason, cap))
        return 0;
    /* a corner's offset may lie a window outside the input: within int32 */
    const int64_t input = (int64_t)g->cols / ((int64_t)g->p * g->q) * g->h * g->w * g->c;
    if (input + ((int64_t)g->r + g->pad + g->stride) * (g->w + g->s + g->pad) * g->c > INT32_MAX) {
        snprintf(reason, cap, "an input of %lld elements: the tensor-core kernel's offsets are "
                 "32-bit", (long long)input);
        return 0;
    }
    const int64_t kred = (int64_t)g->c * g->r * g->s;
    const int64_t unit = cfg.tma ? CONV_TC_CHUNK : 16;
    int64_t ks = (kred + cfg.splits - 1) / cfg.splits;
    ks = (ks + unit - 1) / unit * unit;
    const int32_t widest = widest_slice(cfg.bn, cfg.tma);
    if (ks > widest) {
        snprintf(reason, cap, "%d slices of %lld filter columns: a block of %d positions holds "
                 "at most %d in shared memory", cfg.splits, (long long)ks, cfg.bn, widest);
        return 0;
    }
    const int64_t splits = (kred + ks - 1) / ks, mtiles = (k + CONV_TC_BM - 1) / CONV_TC_BM;
    const int64_t ntiles = ((int64_t)g->cols + cfg.bn - 1) / cfg.bn;
    if (mtiles > 65535 || splits > 65535 || ntiles * mtiles > INT32_MAX) {
        snprintf(reason, cap, "%d output channels, %d positions, %lld slices: past the grid",
                 k, g->cols, (long long)splits);
        return 0;
    }
    if ((int64_t)g->cols * k > INT32_MAX) {
        snprintf(reason, cap, "%d positions × %d channels: the tensor-core kernel's output "
                 "offsets are 32-bit", g->cols, k);
        return 0;
    }
    if (cfg.cluster && splits > CONV_TC_MAX_CLUSTER) {
        snprintf(reason, cap, "%lld slices in a cluster: at most %d", (long long)splits,
                 CONV_TC_MAX_CLUSTER);
        return 0;
    }
    const double workspace =
        splits > 1 && !cfg.cluster ? (double)g->cols * k * sizeof(float) : 0;
    if (workspace > CONV_TC_WORKSPACE_CAP) {
        snprintf(reason, cap, "%lld slices: %.0f MB of partial sums (at most %d)",
                 (long long)splits, workspace / 1e6, CONV_TC_WORKSPACE_CAP >> 20);
        return 0;
    }
    *out = (conv_tc_geom){.c = g->c, .h = g->h, .w = g->w, .r = g->r, .s = g->s,
                          .stride = g->stride, .pad = g->pad, .p = g->p, .q = g->q, .k = k,
                          .cols = g->cols, .kred = (int32_t)kred, .bn = cfg.bn,
                          .ks = (int32_t)ks, .splits = (int32_t)splits,
                          .cluster = splits > 1 && cfg.cluster, .tma = cfg.tma,
                          .ntiles = (int32_t)ntiles,
                          .mtiles = (int32_t)mtiles,
                          .by_pq = conv_fastdiv_make((uint32_t)(g->p * g->q)),
                          .by_q = conv_fastdiv_make((uint32_t)g->q),
                          .by_c = conv_fastdiv_make((uint32_t)g->c),
                          .by_s = conv_fastdiv_make((uint32_t)g->s),
                          .by_runs = conv_fastdiv_make((uint32_t)(ks / 8))};
    return 1;
}

/* Whether a geometry with the same slices is listed already. */
static int listed(const conv_tc_config *out, int n, conv_tc_config c)
{
    for (int i = 0; i < n; i++)
        if (out[i].bn == c.bn && out[i].splits == c.splits && out[i].cluster == c.cluster &&
            out[i].tma == c.tma)
            return 1;
    return 0;
}

int conv_tc_configs(const conv_gather *g, int32_t k, int sms, int sm90, conv_tc_config *out,
                    char *reason, size_t cap)
{
    char why_tma[160] = "";
    const int tma = sm90 && tma_takes(g, why_tma, sizeof why_tma);
    const int64_t kred = (int64_t)g->c * g->r * g->s;
    int n = 0;
    for (int i = 0; i < 3; i++) {
        const int bn = block_widths[i];
        /* a wider block only where the narrower one leaves positions */
        if (i > 0 && block_widths[i - 1] >= g->cols)
            break;
        const int64_t blocks =
            ((int64_t)g->cols + bn - 1) / bn * ((k + CONV_TC_BM - 1) / CONV_TC_BM);
        /* B by the gather, and by the copy engine where it takes g (its
         * slices whole chunks: fewer columns fit, and the counts move) */
        for (int by_tma = 0; by_tma <= tma; by_tma++) {
            const int64_t widest = widest_slice(bn, by_tma), fewest = (kred + widest - 1) / widest;
            const int64_t unit = by_tma ? CONV_TC_CHUNK : 16, most = (kred + unit - 1) / unit;
            /* the fewest slices, those that give every SM one block or
             * two, and the most a cluster takes where two blocks an SM
             * need more (H200, layer4: 16 slices of 64 positions in a
             * cluster beside 32 in the workspace) */
            const int64_t fill2 = (2LL * sms + blocks - 1) / blocks;
            int64_t tries[4] = {fewest, (sms + blocks - 1) / blocks, fill2,
                                sm90 && fill2 > CONV_TC_MAX_CLUSTER ? CONV_TC_MAX_CLUSTER
                                                                    : fewest};
            for (int t = 1; t < 4; t++)
                tries[t] = tries[t] < fewest ? fewest : tries[t] > most ? most : tries[t];
            for (int t = 0; t < 4; t++) {
                conv_tc_geom geom;
                if (!conv_tc_geometry(g, k, (conv_tc_config){bn, (int)tries[t], 0, by_tma}, &geom,
                                      reason, cap))
                    continue;
                const conv_tc_config c = {
                    bn, geom.splits,
                    sm90 && geom.splits > 1 && geom.splits <= CONV_TC_MAX_CLUSTER, by_tma};
                if (!listed(out, n, c))
                    out[n++] = c;
            }
        }
    }
    if (n == 0 && reason[0] == '\0')
        snprintf(reason, cap, "no block width fits shared memory");
    return n;
}

enum { WARPS = CONV_TC_THREADS / 32 };

/* Weight (row, col)'s entry with its value bits left 0, and the index of
 * the warp that stores it: block (channel tile, slice) · WARPS + the
 * warp's in the block (conv_tc_owner). */
static int64_t entry_place(const conv_tc_geom *g, int64_t row, int32_t col, uint32_t *entry)
{
    const int64_t block = row / CONV_TC_BM * g->splits + col / g->ks;
    *entry = conv_tc_entry(g, (int32_t)(row % CONV_TC_BM), col % g->ks, 0);
    return block * WARPS + conv_tc_owner(*entry >> 16);
}

spf_status conv_tc_format_make(const spf_matrix *w, const conv_tc_geom *g, spf_dtype dtype,
                               conv_tc_format *out)
{
    memset(out, 0, sizeof *out);
    out->geom = *g;
    if (dtype != SPF_DTYPE_F16 && dtype != SPF_DTYPE_BF16)
        return FAIL(SPF_ERR_UNSUPPORTED, "conv tc: dtype %s (f16 or bf16: mma.m16n8k16)",
                    dtype_name(dtype));
    if (w->nnz > INT32_MAX || w->rows != g->k || w->cols != g->kred)
        return FAIL(SPF_ERR_UNSUPPORTED, "conv tc: a %lld × %lld matrix of %lld nonzeros for %d "
                    "channels of %d columns (at most 2^31 - 1 nonzeros)", (long long)w->rows,
                    (long long)w->cols, (long long)w->nnz, g->k, g->kred);
    const int64_t slots = (int64_t)g->mtiles * g->splits;
    int32_t *fill = mem_calloc((size_t)(slots * WARPS), sizeof *fill);
    if (!fill)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "conv tc: the format's %lld blocks", (long long)slots);
    /* counts by block and warp: the fullest warp's, over its 32 lanes in
     * whole pieces of 4, is every thread's */
    int64_t most = 0;
    for (int64_t row = 0; row < g->k; row++)
        for (int64_t e = w->row_ptr[row]; e < w->row_ptr[row + 1]; e++) {
            uint32_t entry;
            const int64_t warp = entry_place(g, row, w->col_idx[e], &entry);
            most = ++fill[warp] > most ? fill[warp] : most;
        }
    const int64_t per_lane = (most + 31) / 32, pieces = per_lane > 0 ? (per_lane + 3) / 4 : 1;
    const int64_t cap = pieces * 4 * CONV_TC_THREADS;
    out->entry = mem_alloc_array((size_t)(slots * cap), sizeof *out->entry);
    if (!out->entry) {
        mem_free(fill);
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "conv tc: the format of %lld blocks of %lld entries",
                    (long long)slots, (long long)cap);
    }
    /* every slot first a zero into its thread's own place past the tile */
    for (int64_t b = 0; b < slots; b++)
        for (int32_t t = 0; t < CONV_TC_THREADS; t++)
            for (int64_t j = 0; j < cap / CONV_TC_THREADS; j++)
                out->entry[b * cap + conv_tc_slot(t, j)] = conv_tc_dump(g, t);
    /* a warp's j-th entry (in row order, each row's by column) to its lane
     * j mod 32 */
    memset(fill, 0, (size_t)(slots * WARPS) * sizeof *fill);
    for (int64_t row = 0; row < g->k; row++)
        for (int64_t e = w->row_ptr[row]; e < w->row_ptr[row + 1]; e++) {
            uint32_t entry;
            const int64_t warp = entry_place(g, row, w->col_idx[e], &entry);
            const uint16_t bits = dtype == SPF_DTYPE_F16 ? f16_from_float(w->values[e])
                                                         : bf16_from_float(w->values[e]);
            const int32_t j = fill[warp]++, lane = j % 32;
            const int32_t t = (int32_t)(warp % WARPS) * 32 + lane;
            out->entry[warp / WARPS * cap + conv_tc_slot(t, j / 32)] = entry | bits;
        }
    mem_free(fill);
    out->geom.cap = (int32_t)cap;
    out->nnz = w->nnz;
    return SPF_OK;
}

void conv_tc_format_free(conv_tc_format *f)
{
    mem_free(f->entry);
    f->entry = NULL;
}

void conv_tc_config_name(const conv_tc_geom *g, char *buf, size_t size)
{
    snprintf(buf, size, "bn%d_ks%d_z%d%s%s", g->bn, g->ks, g->splits, g->cluster ? "c" : "",
             g->tma ? "t" : "");
}

void conv_tc_name(const conv_tc_geom *g, spf_dtype dtype, char *buf, size_t size)
{
    char config[48];
    conv_tc_config_name(g, config, sizeof config);
    snprintf(buf, size, "convtc_%s_%s", dtype_name(dtype), config);
}

#ifdef SPF_HAVE_CUDA

spf_status conv_tc_create(const conv_tc_format *f, spf_dtype dtype, int relu, conv_tc **out)
{
    *out = NULL;
    conv_tc *x = mem_calloc(1, sizeof *x);
    if (!x)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "conv: a tensor-core kernel");
    const conv_tc_geom *g = &f->geom;
    x->geom = *g;
    x->dtype = dtype;
    x->relu = relu;
    spf_status status = SPF_OK;
    int device = 0, major = 0;
    TRY(CUDA_CHECK(cudaGetDevice(&device)));
    TRY(CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device)));
    if (g->tma && major < 9)
        FAIL_GOTO(SPF_ERR_UNSUPPORTED, "conv tc: B by the copy engine on a device of compute "
                  "capability %d (9.0 or newer)", major);
    x->early = early_start_wanted(major);
    if (g->cluster)
        TRY(conv_tc_cluster_check(g, dtype));
    TRY(device_upload((void **)&x->entry, f->entry, (int64_t)g->mtiles * g->splits * g->cap,
                      sizeof *x->entry, &x->bytes));
    const size_t workspace = conv_tc_workspace(g);
    if (workspace) {
        const size_t counters = (size_t)g->ntiles * g->mtiles * sizeof *x->counter;
        TRY(CUDA_CHECK(cudaMalloc((void **)&x->workspace, workspace)));
        TRY(CUDA_CHECK(cudaMalloc((void **)&x->counter, counters)));
        TRY(CUDA_CHECK(cudaMemset(x->workspace, 0, workspace)));
        TRY(CUDA_CHECK(cudaMemset(x->counter, 0, counters)));
        x->bytes += (int64_t)(workspace + counters);
    }
    *out = x;
    return SPF_OK;
fail:
    conv_tc_free(x);
    return status;
}

void conv_tc_free(conv_tc *x)
{
    if (!x)
        return;
    (void)cudaFree(x->entry);
    (void)cudaFree(x->workspace);
    (void)cudaFree(x->counter);
    mem_free(x);
}

#else

spf_status conv_tc_create(const conv_tc_format *f, spf_dtype dtype, int relu, conv_tc **out)
{
    (void)f, (void)dtype, (void)relu;
    *out = NULL;
    return FAIL(SPF_ERR_NO_DEVICE, "conv: built without CUDA");
}

void conv_tc_free(conv_tc *x)
{
    (void)x;
}

spf_status conv_tc_launch(const conv_tc *x, const void *in, void *out, const float *bias,
                          const void *residual, void *stream)
{
    (void)x, (void)in, (void)out, (void)bias, (void)residual, (void)stream;
    return FAIL(SPF_ERR_NO_DEVICE, "conv: built without CUDA");
}

#endif
