#include "strategy/unrolled/proxy.h"

#include "strategy/unrolled/kernel_emit.h"
#include "strategy/unrolled/schedule.h"
#include "core/alloc.h"
#include "core/error.h"
#include "core/matrix.h"
#include "strategy/unrolled/constraints.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Shared memory is allocated to blocks in units of 128 bytes (sm_80, sm_90). */
enum { SMEM_UNIT = 128 };

void proxy_device_default(proxy_device *d)
{
    *d = (proxy_device){.sm_count = 132, .regs_per_sm = 65536, .max_threads_per_sm = 2048,
                        .max_blocks_per_sm = 32, .smem_per_sm = 233472,
                        .smem_per_block_optin = 232448, .smem_reserved = 1024};
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

int proxy_active_blocks(const proxy_device *d, int64_t m, int64_t n, const spf_kernel_config *cfg,
                        spf_dtype dtype)
{
    int64_t threads = (int64_t)(cfg->n1 / cfg->v) * cfg->ksplit;
    int64_t blocks = ((m + cfg->m1 - 1) / cfg->m1) * ((n + cfg->n1 - 1) / cfg->n1);
    /* Registers go to warps in units of 256, i.e. 8 per thread. */
    int64_t regs = ((int64_t)register_forecast(cfg, dtype) + 7) / 8 * 8 * threads;
    int64_t smem = (int64_t)(cfg->ksplit - 1) * cfg->m1 * cfg->n1 * (int64_t)sizeof(float) +
                   d->smem_reserved;
    int64_t atb = (blocks + d->sm_count - 1) / d->sm_count; /* Eq. 5, first term  */
    atb = min64(atb, regs > 0 ? d->regs_per_sm / regs : atb); /* Eq. 5, second term */
    atb = min64(atb, threads > 0 ? d->max_threads_per_sm / threads : atb);
    atb = min64(atb, d->max_blocks_per_sm);
    atb = min64(atb, smem > 0 ? d->smem_per_sm / smem : atb);
    return atb < 1 ? 1 : (int)atb;
}

int64_t proxy_shared_bytes(const proxy_device *d, int active_blocks, int64_t need,
                           proxy_smem_policy policy)
{
    int64_t x = active_blocks < 1 ? 1 : active_blocks, bytes;
    if (policy == PROXY_SMEM_LEAST) {
        /* x + 1 blocks of bytes + reserved each must overflow the SM. */
        bytes = d->smem_per_sm / (x + 1) + 1 - d->smem_reserved;
        bytes = (bytes + SMEM_UNIT - 1) / SMEM_UNIT * SMEM_UNIT;
    } else {
        bytes = (d->smem_per_sm / x - d->smem_reserved) / SMEM_UNIT * SMEM_UNIT; /* Eq. 6 */
    }
    if (bytes < need)
        bytes = need;
    if (bytes > d->smem_per_block_optin)
        bytes = d->smem_per_block_optin;
    return bytes < 0 ? 0 : bytes;
}

int32_t proxy_truncated_columns(int32_t nnc, double sparsity)
{
    if (!(sparsity < 1.0))
        return nnc;
    /* The nudge keeps 300 / 0.05 at 6000 despite rounding. */
    double cap = floor(PROXY_NNC_BUDGET / (1.0 - sparsity) * (1.0 + 1e-12));
    return (double)nnc <= cap ? nnc : (int32_t)cap;
}

/* ------------------------------------------------------------ clusters */

void proxy_clusters_free(proxy_clusters *c)
{
    if (!c)
        return;
    mem_free(c->of_tile);
    mem_free(c->size);
    mem_free(c->nnc);
    mem_free(c->nnz);
    memset(c, 0, sizeof *c);
}

/* A tile under its grouping key. */
typedef struct keyed {
    int64_t kx, ky;
    int32_t tile;
} keyed;

static int keyed_cmp(const void *pa, const void *pb)
{
    const keyed *a = pa, *b = pb;
    if (a->kx != b->kx)
        return a->kx < b->kx ? -1 : 1;
    if (a->ky != b->ky)
        return a->ky < b->ky ? -1 : 1;
    return (a->tile > b->tile) - (a->tile < b->tile);
}

/* Sort by key and number the runs of equal keys: point_of[tile]; returns
 * the number of points. */
static int32_t group_keys(keyed *k, int32_t tiles, int32_t *point_of)
{
    qsort(k, (size_t)tiles, sizeof *k, keyed_cmp);
    int32_t points = 0;
    for (int32_t i = 0; i < tiles; i++) {
        if (i > 0 && (k[i].kx != k[i - 1].kx || k[i].ky != k[i - 1].ky))
            points++;
        point_of[k[i].tile] = points;
    }
    return points + 1;
}

/* A 64 × 64 grid cell of a normalized feature in [lo, hi]. */
static int64_t grid_cell(double f, double lo, double hi)
{
    if (!(hi > lo))
        return 0;
    int64_t c = (int64_t)((f - lo) / (hi - lo) * 64.0);
    return c > 63 ? 63 : c;
}

/* One merge of the agglomeration: slot b joins slot a at `height`. */
typedef struct merge {
    int32_t a, b;
    double height;
    int32_t order; /* chronological, for ties */
} merge;

static int merge_cmp(const void *pa, const void *pb)
{
    const merge *a = pa, *b = pb;
    if (a->height != b->height)
        return a->height < b->height ? -1 : 1;
    return (a->order > b->order) - (a->order < b->order);
}

/* Ward's merge cost of clusters i and j: the rise in the within-cluster
 * sum of squares, w_i w_j / (w_i + w_j) · |c_i − c_j|². */
static double ward(const double *x, const double *y, const double *w, int32_t i, int32_t j)
{
    double dx = x[i] - x[j], dy = y[i] - y[j];
    return w[i] * w[j] / (w[i] + w[j]) * (dx * dx + dy * dy);
}

/* The full Ward dendrogram of `points` weighted points by the nearest-
 * neighbour chain (Ward's cost is reducible, so reciprocal nearest
 * neighbours can merge in any order and the merges, sorted by height,
 * are the greedy agglomeration's). x, y, w are overwritten; merges gets
 * points − 1 entries, sorted. Heights are made monotone along the tree so
 * that rounding cannot sort a merge before one it builds on. */
static spf_status ward_chain(double *x, double *y, double *w, int32_t points, merge *merges)
{
    spf_status status = SPF_OK;
    if (points < 2) /* no merge to make (and the sizes below are positive) */
        return SPF_OK;
    int32_t *chain = mem_alloc_array((size_t)points, sizeof *chain);
    uint8_t *active = mem_alloc((size_t)points);
    double *height = mem_calloc((size_t)points, sizeof *height);
    if (!chain || !active || !height)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "clustering of %d points", (int)points);
    memset(active, 1, (size_t)points);
    int32_t top = 0, left = points, done = 0, first = 0;
    while (left > 1) {
        if (top == 0) {
            while (!active[first])
                first++;
            chain[top++] = first;
        }
        int32_t a = chain[top - 1], prev = top >= 2 ? chain[top - 2] : -1, b = prev;
        double best = prev >= 0 ? ward(x, y, w, a, prev) : INFINITY;
        for (int32_t j = 0; j < points; j++)
            if (active[j] && j != a) {
                double d = ward(x, y, w, a, j);
                if (d < best) {
                    best = d;
                    b = j;
                }
            }
        if (b != prev) {
            chain[top++] = b;
            continue;
        }
        /* a and b are each other's nearest: merge b into a. */
        top -= 2;
        double h = fmax(best, fmax(height[a], height[b]));
        merges[done] = (merge){a, b, h, done};
        done++;
        double wa = w[a], wb = w[b];
        x[a] = (wa * x[a] + wb * x[b]) / (wa + wb);
        y[a] = (wa * y[a] + wb * y[b]) / (wa + wb);
        w[a] = wa + wb;
        height[a] = h;
        active[b] = 0;
        left--;
    }
    qsort(merges, (size_t)done, sizeof *merges, merge_cmp);
fail:
    mem_free(chain);
    mem_free(active);
    mem_free(height);
    return status;
}

static int32_t find_root(int32_t *parent, int32_t i)
{
    while (parent[i] != i) {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    return i;
}

spf_status proxy_cluster(const int32_t *nnc, const int64_t *nnz, int32_t tiles,
                         int32_t max_clusters, proxy_clusters *out)
{
    spf_status status = SPF_OK;
    keyed *k = NULL;
    int32_t *point_of = NULL, *parent = NULL, *id = NULL;
    double *x = NULL, *y = NULL, *w = NULL;
    merge *merges = NULL;
    if (!out)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "no output clusters");
    memset(out, 0, sizeof *out);
    if (!nnc || !nnz || tiles < 1 || max_clusters < 1)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "%d tiles into %d clusters: need features, ≥ 1 each",
                    (int)tiles, (int)max_clusters);
    /* Features relative to their means: a tile's loads and fmas weigh the
     * same whatever the density. */
    double mean_c = 0.0, mean_z = 0.0;
    for (int32_t t = 0; t < tiles; t++) {
        mean_c += nnc[t];
        mean_z += (double)nnz[t];
    }
    mean_c /= tiles;
    mean_z /= tiles;
    double sc = mean_c > 0.0 ? 1.0 / mean_c : 0.0, sz = mean_z > 0.0 ? 1.0 / mean_z : 0.0;

    k = mem_alloc_array((size_t)tiles, sizeof *k);
    point_of = mem_alloc_array((size_t)tiles, sizeof *point_of);
    if (!k || !point_of)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "clustering of %d tiles", (int)tiles);
    for (int32_t t = 0; t < tiles; t++)
        k[t] = (keyed){nnc[t], nnz[t], t};
    int32_t points = group_keys(k, tiles, point_of);
    if (points > PROXY_CLUSTER_POINTS) {
        double lo_c = INFINITY, hi_c = -INFINITY, lo_z = INFINITY, hi_z = -INFINITY;
        for (int32_t t = 0; t < tiles; t++) {
            lo_c = fmin(lo_c, nnc[t] * sc);
            hi_c = fmax(hi_c, nnc[t] * sc);
            lo_z = fmin(lo_z, (double)nnz[t] * sz);
            hi_z = fmax(hi_z, (double)nnz[t] * sz);
        }
        for (int32_t t = 0; t < tiles; t++)
            k[t] = (keyed){grid_cell(nnc[t] * sc, lo_c, hi_c),
                           grid_cell((double)nnz[t] * sz, lo_z, hi_z), t};
        points = group_keys(k, tiles, point_of);
    }

    x = mem_calloc((size_t)points, sizeof *x);
    y = mem_calloc((size_t)points, sizeof *y);
    w = mem_calloc((size_t)points, sizeof *w);
    merges = mem_alloc_array((size_t)points, sizeof *merges);
    parent = mem_alloc_array((size_t)points, sizeof *parent);
    id = mem_alloc_array((size_t)points, sizeof *id);
    if (!x || !y || !w || !merges || !parent || !id)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "clustering of %d points", (int)points);
    for (int32_t t = 0; t < tiles; t++) {
        int32_t p = point_of[t];
        x[p] += nnc[t] * sc;
        y[p] += (double)nnz[t] * sz;
        w[p] += 1.0;
    }
    for (int32_t p = 0; p < points; p++) {
        x[p] /= w[p];
        y[p] /= w[p];
        parent[p] = p;
        id[p] = -1;
    }
    TRY(ward_chain(x, y, w, points, merges));
    int32_t count = points < max_clusters ? points : max_clusters;
    for (int32_t i = 0; i < points - count; i++)
        parent[find_root(parent, merges[i].b)] = find_root(parent, merges[i].a);

    out->count = count;
    out->tiles = tiles;
    out->of_tile = mem_alloc_array((size_t)tiles, sizeof *out->of_tile);
    out->size = mem_calloc((size_t)count, sizeof *out->size);
    out->nnc = mem_calloc((size_t)count, sizeof *out->nnc);
    out->nnz = mem_calloc((size_t)count, sizeof *out->nnz);
    if (!out->of_tile || !out->size || !out->nnc || !out->nnz)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "%d clusters of %d tiles", (int)count, (int)tiles);
    int32_t next = 0;
    for (int32_t p = 0; p < points; p++) { /* points are in key order */
        int32_t r = find_root(parent, p);
        if (id[r] < 0)
            id[r] = next++;
    }
    for (int32_t t = 0; t < tiles; t++) {
        int32_t c = id[find_root(parent, point_of[t])];
        out->of_tile[t] = c;
        out->size[c]++;
        out->nnc[c] += nnc[t];
        out->nnz[c] += (double)nnz[t];
    }
    for (int32_t c = 0; c < count; c++) {
        out->nnc[c] /= out->size[c];
        out->nnz[c] /= out->size[c];
    }
fail:
    mem_free(k);
    mem_free(point_of);
    mem_free(x);
    mem_free(y);
    mem_free(w);
    mem_free(merges);
    mem_free(parent);
    mem_free(id);
    if (status != SPF_OK)
        proxy_clusters_free(out);
    return status;
}

/* ------------------------------------------------------------ the proxy */

void proxy_kernel_name(const spf_kernel_config *shape, spf_dtype dtype, int f16x2_accumulate,
                       char name[128])
{
    snprintf(name, 128, "spf_proxy_%s_m%d_v%d_p%d_k%d", kernel_dtype_tag(dtype, f16x2_accumulate),
             (int)shape->m1, (int)shape->v, (int)shape->prefetch, (int)shape->ksplit);
}

/* One proxy tile, from its cluster's centroid (§5.1.2–5.1.3). */
typedef struct proxy_tile {
    int32_t columns; /* NNC_P                                      */
    int64_t entries; /* NNC_P × the centroid's fmas per load       */
} proxy_tile;

static proxy_tile proxy_tile_of(const proxy_clusters *c, int32_t i, int64_t k, int32_t rows,
                                double sparsity)
{
    int64_t nnc = llround(c->nnc[i]);
    nnc = nnc > k ? k : nnc;
    proxy_tile t = {proxy_truncated_columns((int32_t)nnc, sparsity), 0};
    if (t.columns > 0) {
        double per_load = c->nnz[i] / c->nnc[i];
        t.entries = llround(t.columns * per_load);
        t.entries = t.entries < t.columns ? t.columns : t.entries;
        t.entries = t.entries > (int64_t)t.columns * rows ? (int64_t)t.columns * rows : t.entries;
    }
    return t;
}

/* Entries of proxy column i of t: the total spread evenly, 1 .. rows each. */
static int32_t column_entries(const proxy_tile *t, int32_t i)
{
    return (int32_t)((i + 1) * t->entries / t->columns - i * t->entries / t->columns);
}

/* The synthetic matrix whose tile i (rows i·rows ..) is cluster i's proxy
 * tile: its columns spread evenly over k, column j's entries on `rows`
 * consecutive row slots (cyclically) after the previous column's, so every
 * row of the tile accumulates, as in a real tile. The values are arbitrary
 * nonzeros (the proxy computes nothing anyone reads). */
static spf_status synthetic_matrix(const proxy_tile *pt, int32_t tiles, int32_t rows, int64_t k,
                                   spf_matrix **out)
{
    spf_status status = SPF_OK;
    int64_t nnz = 0, *fill = NULL;
    for (int32_t i = 0; i < tiles; i++)
        nnz += pt[i].entries;
    TRY(matrix_alloc((int64_t)tiles * rows, k, nnz, out));
    spf_matrix *s = *out;
    fill = mem_calloc((size_t)s->rows + 1, sizeof *fill);
    if (!fill)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "synthetic matrix of %lld rows", (long long)s->rows);
    for (int pass = 0; pass < 2; pass++) { /* count the rows, then fill them */
        for (int32_t i = 0; i < tiles; i++) {
            int32_t slot = 0;
            for (int32_t j = 0; j < pt[i].columns; j++) {
                int32_t count = column_entries(&pt[i], j);
                int32_t col = (int32_t)((int64_t)j * k / pt[i].columns);
                for (int32_t e = 0; e < count; e++) {
                    int64_t row = (int64_t)i * rows + (slot + e) % rows;
                    if (pass == 0) {
                        fill[row + 1]++;
                    } else {
                        s->col_idx[fill[row]] = col;
                        s->values[fill[row]++] = 0.5f + 0.0625f * (float)((j + e) % 8);
                    }
                }
                slot = (slot + count) % rows;
            }
        }
        if (pass == 0) {
            for (int64_t r = 0; r < s->rows; r++)
                fill[r + 1] += fill[r];
            memcpy(s->row_ptr, fill, ((size_t)s->rows + 1) * sizeof *fill);
        }
    }
fail:
    mem_free(fill);
    if (status != SPF_OK) {
        spf_matrix_free(*out);
        *out = NULL;
    }
    return status;
}

static spf_status check_spec(const proxy_spec *q, int32_t *n1_max)
{
    if (!q || !q->a || !q->n1 || q->n1_count < 1)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "no spec, matrix or n1 values");
    if (q->sm != 80 && q->sm != 90)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "sm = %d: must be 80 or 90", q->sm);
    if (q->a->rows < 1)
        return FAIL(SPF_ERR_UNSUPPORTED, "a matrix with no rows has no kernel");
    spf_status status = kernel_check_request(q->a, q->n, q->dtype, q->f16x2_accumulate, &q->shape);
    if (status != SPF_OK)
        return status;
    *n1_max = 0;
    for (int i = 0; i < q->n1_count; i++) {
        spf_kernel_config cfg = q->shape;
        cfg.n1 = q->n1[i];
        if ((status = schedule_config_check(&cfg, q->n)) != SPF_OK)
            return status;
        *n1_max = cfg.n1 > *n1_max ? cfg.n1 : *n1_max;
    }
    return SPF_OK;
}

spf_status proxy_generate(const proxy_spec *q, ptx_program *out, proxy_info *info)
{
    spf_status status = SPF_OK;
    schedule real = {0}, s = {0};
    proxy_clusters cl = {0};
    proxy_tile *pt = NULL;
    spf_matrix *synth = NULL;
    int32_t *nnc = NULL;
    int64_t *nnz = NULL;
    uint16_t *cluster = NULL;
    proxy_info local;
    if (!info)
        info = &local;
    memset(info, 0, sizeof *info);
    if (!out)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "no output program");
    memset(out, 0, sizeof *out);
    int32_t n1_max = 0;
    TRY(check_spec(q, &n1_max));
    proxy_device defaults;
    proxy_device_default(&defaults);
    const proxy_device *dev = q->device ? q->device : &defaults;
    spf_kernel_config cfg = q->shape;

    /* §5.1.2: at most 3 × max(NUM_ATB) clusters over the n1 values. */
    for (int i = 0; i < q->n1_count; i++) {
        cfg.n1 = q->n1[i];
        int atb = proxy_active_blocks(dev, q->a->rows, q->n, &cfg, q->dtype);
        info->max_active_blocks = atb > info->max_active_blocks ? atb : info->max_active_blocks;
    }
    cfg.n1 = n1_max;
    info->max_clusters = PROXY_CLUSTERS_PER_ATB * info->max_active_blocks;

    TRY(schedule_create(q->a, q->row_order, q->n, &cfg, &real));
    nnc = mem_alloc_array((size_t)real.tile_count, sizeof *nnc);
    nnz = mem_alloc_array((size_t)real.tile_count, sizeof *nnz);
    cluster = mem_alloc_array((size_t)real.tile_count, sizeof *cluster);
    if (!nnc || !nnz || !cluster)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "features of %d tiles", (int)real.tile_count);
    for (int32_t t = 0; t < real.tile_count; t++) {
        nnc[t] = real.tiles[t].col_count;
        nnz[t] = real.tiles[t].nnz;
    }
    TRY(proxy_cluster(nnc, nnz, real.tile_count, info->max_clusters, &cl));
    for (int32_t t = 0; t < real.tile_count; t++)
        cluster[t] = (uint16_t)cl.of_tile[t]; /* < 3 × 32 clusters */

    /* §5.1.3: each cluster's proxy tile, truncated to NNC_P columns. */
    int64_t m = q->a->rows, k = q->a->cols;
    double sparsity = m * k > 0 ? 1.0 - (double)q->a->nnz / ((double)m * (double)k) : 1.0;
    int32_t rows = (int32_t)min64(cfg.m1, m);
    pt = mem_alloc_array((size_t)cl.count, sizeof *pt);
    if (!pt)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "%d proxy tiles", (int)cl.count);
    for (int32_t i = 0; i < cl.count; i++) {
        pt[i] = proxy_tile_of(&cl, i, k, rows, sparsity);
        if (llround(cl.nnc[i]) > info->nnc_max) {
            info->nnc_max = (int32_t)llround(cl.nnc[i]);
            info->nnc_p_max = pt[i].columns;
        }
    }
    TRY(synthetic_matrix(pt, cl.count, rows, k, &synth));
    TRY(schedule_create(synth, NULL, q->n, &cfg, &s));
    if (s.tile_count != cl.count)
        FAIL_GOTO(SPF_ERR_INTERNAL, "%d proxy tiles for %d clusters", (int)s.tile_count,
                  (int)cl.count);

    char name[128];
    proxy_kernel_name(&q->shape, q->dtype, q->f16x2_accumulate, name);
    tile_gen g;
    tile_gen_init(&g, &s, q->dtype, q->f16x2_accumulate, q->bias, q->relu, name);
    g.tile_relative = 1;
    entry_dispatch dispatch = {.functions = cl.count, .cluster = cluster,
                               .blocks = real.tile_count, .m = m, .rows = rows};
    TRY(kernel_emit_units(&g, q->sm, &dispatch, out));
    memcpy(out->grid, real.grid, sizeof out->grid);
    memcpy(out->block, s.block, sizeof out->block);
    out->shared_bytes = s.shared_bytes;
    out->max_registers = tile_register_cap(&g);

    info->tiles = real.tile_count;
    info->clusters = cl.count;
    info->rows = rows;
    info->n1_max = n1_max;
    info->reduction_bytes = s.shared_bytes;
    for (int u = 0; u < out->unit_count; u++)
        info->code_bytes += (int64_t)out->units[u].size;
fail:
    schedule_free(&real);
    schedule_free(&s);
    proxy_clusters_free(&cl);
    spf_matrix_free(synth);
    mem_free(pt);
    mem_free(nnc);
    mem_free(nnz);
    mem_free(cluster);
    if (status != SPF_OK) {
        ptx_program_free(out);
        memset(info, 0, sizeof *info);
    }
    return status;
}
