/* Four passes (frag_format.h says what the stream holds): the records'
 * sizes, one group per task in parallel; the chunk boundaries, greedily,
 * and the groups' offsets by a prefix sum; the records written, in
 * parallel again. */
#include "strategy/tcfrag/frag_format.h"
#include "strategy/tcfrag/frag_places.h"

#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/matrix.h"
#include "core/parallel.h"
#include "gpu/timing.h"

#include <math.h>
#include <string.h>

enum { GROUP_GRAIN = 4, RECORD_ALIGN = 16, TILE_SLOTS = FRAG_TILE * FRAG_TILE };

/* More headers than this is a graph, not a pruned layer: the stream keeps
 * a 40-byte header for every 16×16 tile, empty or not. */
#define FRAG_MAX_TILES ((int64_t)1 << 31)

/* At 70 % sparsity a window's k-step takes about 200 bytes, so 8 k-steps
 * fit; denser matrices get shorter chunks. Small stages keep 16 or more
 * warps on an SM. */
int64_t frag_capacity(int group) { return 1024 * (int64_t)group + 512; }

void frag_format_free(frag_format *f)
{
    if (!f)
        return;
    mem_free(f->chunk_step);
    mem_free(f->offset);
    mem_free(f->data);
    memset(f, 0, sizeof *f);
}

double frag_format_bytes_per_weight(const frag_format *f)
{
    double weights = (double)f->rows * (double)f->cols;
    return weights > 0 ? (double)f->bytes / weights : 0.0;
}

static int64_t align_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

double frag_format_bytes_estimate(int64_t m, int64_t k, int64_t nnz, int group)
{
    double windows = ceil((double)m / FRAG_TILE), steps = ceil((double)k / FRAG_TILE);
    double groups = ceil(windows / group);
    /* 2 bytes a value, a header a tile, half a record's alignment on average */
    return 2.0 * (double)nnz + groups * steps * (FRAG_HEADER * group + RECORD_ALIGN / 2.0);
}

/* A tile's slot of row rr, column cc (0..15 each) in fragment order:
 * lane · 8 + slot (frag_format.h). */
static int slot_of(int rr, int cc)
{
    int lane = (rr & 7) * 4 + ((cc & 7) >> 1);
    int reg = (cc >> 3) * 2 + (rr >> 3);
    return lane * 8 + reg * 2 + (cc & 1);
}

typedef struct build {
    const spf_matrix *a;
    frag_format *f;
    size_t es;
    uint16_t *record;  /* groups × steps: bytes of each record (pass 1) */
    int64_t **cursor;  /* per worker: FRAG_MAX_GROUP · 16 row cursors   */
    float **tile;      /* per worker: TILE_SLOTS values, fragment order  */
    unsigned char **set; /* per worker: TILE_SLOTS flags                 */
} build;

/* Row cursors of group g's rows at their first entries. */
static void cursors_start(const build *b, int64_t g, int64_t *cur)
{
    for (int i = 0; i < b->f->group * FRAG_TILE; i++) {
        int64_t r = g * b->f->group * FRAG_TILE + i;
        cur[i] = r < b->a->rows ? b->a->row_ptr[r] : 0;
    }
}

/* Advance row i's cursor past the columns below `end`; the entries it
 * passed: [from, cur[i]). */
static int64_t row_end(const build *b, int64_t g, int i, const int64_t *cur, int64_t end)
{
    int64_t r = g * b->f->group * FRAG_TILE + i;
    if (r >= b->a->rows)
        return cur[i];
    int64_t p = cur[i], stop = b->a->row_ptr[r + 1];
    while (p < stop && b->a->col_idx[p] < end)
        p++;
    return p;
}

static spf_status size_groups(void *ctx, int64_t begin, int64_t end, int worker)
{
    build *b = ctx;
    const frag_format *f = b->f;
    int64_t *cur = b->cursor[worker];
    for (int64_t g = begin; g < end; g++) {
        cursors_start(b, g, cur);
        for (int64_t s = 0; s < f->steps; s++) {
            int64_t values = 0;
            for (int i = 0; i < f->group * FRAG_TILE; i++) {
                int64_t p = row_end(b, g, i, cur, (s + 1) * FRAG_TILE);
                values += p - cur[i];
                cur[i] = p;
            }
            int64_t bytes =
                align_up(FRAG_HEADER * f->group + values * (int64_t)b->es, RECORD_ALIGN);
            b->record[g * f->steps + s] = (uint16_t)bytes;
        }
    }
    return SPF_OK;
}

/* One tile's header at h and its values at v (es bytes each); the count. */
static int64_t write_tile(const build *b, int worker, int64_t g, int window, int64_t s,
                          int64_t *cur, unsigned char *h, unsigned char *v)
{
    float *tile = b->tile[worker];
    unsigned char *set = b->set[worker];
    memset(set, 0, TILE_SLOTS);
    for (int rr = 0; rr < FRAG_TILE; rr++) {
        int i = window * FRAG_TILE + rr;
        int64_t p = row_end(b, g, i, cur, (s + 1) * FRAG_TILE);
        for (int64_t e = cur[i]; e < p; e++) {
            int slot = slot_of(rr, (int)(b->a->col_idx[e] - s * FRAG_TILE));
            tile[slot] = b->a->values[e];
            set[slot] = 1;
        }
        cur[i] = p;
    }
    int64_t count = 0;
    unsigned char *mask = h, *pre = h + 32;
    for (int lane = 0; lane < 32; lane++) {
        if (lane % 4 == 0 && lane > 0)
            pre[lane / 4] = (unsigned char)count;
        unsigned char bits = 0;
        for (int slot = 0; slot < 8; slot++)
            if (set[lane * 8 + slot]) {
                bits |= (unsigned char)(1u << slot);
                dtype_from_float(b->f->dtype, &tile[lane * 8 + slot],
                                 v + count * (int64_t)b->es, 1);
                count++;
            }
        mask[lane] = bits;
    }
    pre[0] = (unsigned char)(count - pre[7]);
    return count;
}

static spf_status write_groups(void *ctx, int64_t begin, int64_t end, int worker)
{
    build *b = ctx;
    const frag_format *f = b->f;
    int64_t *cur = b->cursor[worker];
    for (int64_t g = begin; g < end; g++) {
        cursors_start(b, g, cur);
        /* a group's chunks are consecutive in data */
        unsigned char *at = f->data + f->offset[g * f->chunks];
        for (int64_t s = 0; s < f->steps; s++) {
            unsigned char *v = at + FRAG_HEADER * f->group;
            for (int w = 0; w < f->group; w++)
                v += write_tile(b, worker, g, w, s, cur, at + FRAG_HEADER * w, v) * (int64_t)b->es;
            at += b->record[g * f->steps + s];
        }
    }
    return SPF_OK;
}

/* Chunks: at most FRAG_CHUNK_STEPS k-steps, no group's records over
 * frag_capacity. Then each group's chunk offsets. */
static spf_status cut_chunks(build *b)
{
    frag_format *f = b->f;
    int64_t cap = frag_capacity(f->group);
    int64_t *used = mem_calloc((size_t)f->groups + 1, sizeof *used);
    f->chunk_step = mem_alloc(((size_t)f->steps + 1) * sizeof *f->chunk_step);
    if (!used || !f->chunk_step) {
        mem_free(used);
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "the chunks of a fragment stream");
    }
    int32_t chunks = 0;
    int64_t first = 0;
    for (int64_t s = 0; s < f->steps; s++) {
        int fits = s - first < FRAG_CHUNK_STEPS;
        for (int64_t g = 0; fits && g < f->groups; g++)
            fits = used[g] + b->record[g * f->steps + s] <= cap;
        if (s == 0 || !fits) {
            f->chunk_step[chunks++] = (int32_t)s;
            first = s;
            memset(used, 0, (size_t)f->groups * sizeof *used);
        }
        for (int64_t g = 0; g < f->groups; g++)
            used[g] += b->record[g * f->steps + s];
    }
    f->chunk_step[chunks] = (int32_t)f->steps;
    f->chunks = chunks;
    mem_free(used);

    f->offset = mem_alloc(((size_t)(f->groups * chunks) + 1) * sizeof *f->offset);
    if (!f->offset)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "the offsets of a fragment stream");
    int64_t at = 0;
    for (int64_t g = 0; g < f->groups; g++)
        for (int32_t c = 0; c < chunks; c++) {
            f->offset[g * chunks + c] = at;
            int64_t bytes = 0;
            for (int64_t s = f->chunk_step[c]; s < f->chunk_step[c + 1]; s++)
                bytes += b->record[g * f->steps + s];
            f->largest = bytes > f->largest ? bytes : f->largest;
            at += bytes;
        }
    f->offset[f->groups * chunks] = at;
    return SPF_OK;
}

static void free_scratch(build *b, int workers)
{
    for (int i = 0; i < workers; i++) {
        if (b->cursor)
            mem_free(b->cursor[i]);
        if (b->tile)
            mem_free(b->tile[i]);
        if (b->set)
            mem_free(b->set[i]);
    }
    mem_free(b->cursor);
    mem_free(b->tile);
    mem_free(b->set);
    mem_free(b->record);
}

spf_status frag_format_build(const spf_matrix *a, spf_dtype dtype, int group, int threads,
                             frag_format *out)
{
    error_clear();
    CHECK_ARG(a != NULL && out != NULL);
    memset(out, 0, sizeof *out);
    if (dtype != SPF_DTYPE_F16 && dtype != SPF_DTYPE_BF16)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "fragment stream: dtype %s (expected f16 or bf16)",
                    dtype_name(dtype));
    if (group != 1 && group != 2 && group != 4)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "fragment stream: group %d (expected 1, 2 or 4)",
                    group);
    if (a->rows > INT32_MAX - FRAG_TILE || a->cols > INT32_MAX - FRAG_TILE)
        return FAIL(SPF_ERR_OVERFLOW, "fragment stream: %lld × %lld reaches 2^31 rows or columns",
                    (long long)a->rows, (long long)a->cols);
    double t0 = timing_now_s();
    frag_format *f = out;
    f->rows = a->rows, f->cols = a->cols, f->nnz = a->nnz, f->dtype = dtype, f->group = group;
    f->windows = (a->rows + FRAG_TILE - 1) / FRAG_TILE;
    f->groups = (f->windows + group - 1) / group;
    f->steps = (a->cols + FRAG_TILE - 1) / FRAG_TILE;
    if (f->steps > 0 && f->groups > FRAG_MAX_TILES / f->steps)
        return FAIL(SPF_ERR_UNSUPPORTED,
                    "fragment stream: %lld × %lld has more than 2^31 tiles of 16×16, each with a "
                    "header (the format is for pruned weights, not graphs)",
                    (long long)a->rows, (long long)a->cols);

    int workers = parallel_workers(f->groups, GROUP_GRAIN, threads);
    build b = {.a = a, .f = f, .es = dtype_size(dtype)};
    spf_status status = SPF_OK;
    b.record = mem_alloc(((size_t)(f->groups * f->steps) + 1) * sizeof *b.record);
    b.cursor = mem_calloc((size_t)workers, sizeof *b.cursor);
    b.tile = mem_calloc((size_t)workers, sizeof *b.tile);
    b.set = mem_calloc((size_t)workers, sizeof *b.set);
    if (!b.record || !b.cursor || !b.tile || !b.set)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "fragment stream scratch");
    for (int i = 0; i < workers; i++) {
        b.cursor[i] = mem_alloc(FRAG_MAX_GROUP * FRAG_TILE * sizeof *b.cursor[i]);
        b.tile[i] = mem_alloc(TILE_SLOTS * sizeof *b.tile[i]);
        b.set[i] = mem_alloc(TILE_SLOTS);
        if (!b.cursor[i] || !b.tile[i] || !b.set[i])
            FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "fragment stream scratch");
    }
    TRY(parallel_for(f->groups, GROUP_GRAIN, threads, size_groups, &b));
    TRY(cut_chunks(&b));
    f->data = mem_calloc((size_t)f->offset[f->groups * f->chunks] + RECORD_ALIGN, 1);
    if (!f->data)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "a fragment stream of %lld bytes",
                  (long long)f->offset[f->groups * f->chunks]);
    TRY(parallel_for(f->groups, GROUP_GRAIN, threads, write_groups, &b));
    f->bytes = f->offset[f->groups * f->chunks] +
               (int64_t)((f->groups * f->chunks + 1) * sizeof *f->offset) +
               (int64_t)((f->chunks + 1) * sizeof *f->chunk_step);
    f->build_s = timing_now_s() - t0;
    free_scratch(&b, workers);
    return SPF_OK;
fail:
    free_scratch(&b, workers);
    frag_format_free(f);
    return status;
}

static int popcount8(unsigned x) { return __builtin_popcount(x & 0xffu); }

/* One tile at h (values at v): into dense, its count into *count;
 * SPF_ERR_PARSE when the header disagrees with the mask or a bit lies past
 * the matrix. */
static spf_status read_tile(const frag_format *f, const unsigned char *h, const unsigned char *v,
                            int64_t row0, int64_t col0, float *dense, int64_t *count)
{
    const unsigned char *mask = h, *pre = h + 32;
    int64_t below = 0;
    for (int lane = 0; lane < 32; lane++) {
        int q = lane / 4, t = lane % 4;
        if (t == 0 && q > 0 && pre[q] != below)
            return FAIL(SPF_ERR_PARSE, "pre[%d] = %d, the mask says %lld", q, pre[q],
                        (long long)below);
        /* the run's start as the kernel finds it: pre of its quad and the
         * popcount of the quad's lower bytes */
        int64_t run = q > 0 ? pre[q] : 0;
        for (int u = 0; u < t; u++)
            run += popcount8(mask[4 * q + u]);
        uint32_t places = frag_slot_places(mask[lane]); /* as the kernel finds them */
        for (int slot = 0; slot < 8; slot++) {
            if (!(mask[lane] >> slot & 1))
                continue;
            int reg = slot >> 1;
            int64_t r = row0 + q + 8 * (reg & 1), c = col0 + 2 * t + (slot & 1) + 8 * (reg >> 1);
            if (r >= f->rows || c >= f->cols)
                return FAIL(SPF_ERR_PARSE, "a bit at row %lld, column %lld, past the matrix",
                            (long long)r, (long long)c);
            int64_t at = run + (places >> 4 * slot & 15u) / 2;
            dtype_to_float(f->dtype, v + at * (int64_t)dtype_size(f->dtype),
                           &dense[r * f->cols + c], 1);
        }
        below += popcount8(mask[lane]);
    }
    if (pre[0] != below - pre[7])
        return FAIL(SPF_ERR_PARSE, "pre[0] = %d, the mask's last word has %lld", pre[0],
                    (long long)(below - pre[7]));
    *count = below;
    return SPF_OK;
}

spf_status frag_format_to_dense(const frag_format *f, float *dense)
{
    error_clear();
    memset(dense, 0, (size_t)(f->rows * f->cols) * sizeof *dense);
    int64_t es = (int64_t)dtype_size(f->dtype);
    for (int64_t g = 0; g < f->groups; g++)
        for (int32_t c = 0; c < f->chunks; c++) {
            const unsigned char *at = f->data + f->offset[g * f->chunks + c];
            const unsigned char *end = f->data + f->offset[g * f->chunks + c + 1];
            for (int64_t s = f->chunk_step[c]; s < f->chunk_step[c + 1]; s++) {
                /* the record's size from its masks, checked against the
                 * chunk before a value is read (a corrupt header must not
                 * send the decoder past the data) */
                int64_t values = 0, record = FRAG_HEADER * f->group;
                if (record <= end - at) {
                    for (int i = 0; i < f->group; i++)
                        for (int lane = 0; lane < 32; lane++)
                            values += popcount8(at[FRAG_HEADER * i + lane]);
                    record = align_up(record + values * es, RECORD_ALIGN);
                }
                if (record > end - at)
                    return FAIL(SPF_ERR_PARSE, "fragment stream, group %lld, chunk %d: k-step "
                                "%lld runs past the chunk", (long long)g, c, (long long)s);
                values = 0;
                for (int w = 0; w < f->group; w++) {
                    const unsigned char *v = at + FRAG_HEADER * f->group + values * es;
                    int64_t n = 0;
                    spf_status status = read_tile(f, at + FRAG_HEADER * w, v,
                                                  (g * f->group + w) * FRAG_TILE, s * FRAG_TILE,
                                                  dense, &n);
                    if (status != SPF_OK) {
                        error_prefix("fragment stream, group %lld, chunk %d, k-step %lld, "
                                     "window %d", (long long)g, c, (long long)s, w);
                        return status;
                    }
                    values += n;
                }
                at += record;
            }
            if (at != end)
                return FAIL(SPF_ERR_PARSE, "fragment stream, group %lld, chunk %d: %lld bytes "
                            "left after its k-steps", (long long)g, c, (long long)(end - at));
        }
    return SPF_OK;
}
