/* Building the structured format (sp_format.h): for V:2:M first the
 * gathered columns of each block of rows, then the fragments tile by tile
 * in parallel (the two rows g and g+8 of a tile share metadata words, so a
 * tile is one worker's). */
#include "strategy/structured/sp_format.h"

#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/matrix.h"
#include "core/parallel.h"
#include "gpu/timing.h"
#include "strategy/structured/sp_colvec.h"

#include <string.h>

enum {
    TILE = 16,       /* rows of an mma.sp                      */
    RUN = 4,         /* columns of a 2:4 run                    */
    PAIR_COLS = 64,  /* condensed columns of a step pair        */
    RUNS_PER_STEP = 8,
    FREE_PAIR = 0x4, /* indices 0 and 1: a run with no nonzeros */
    TILE_GRAIN = 16,
};

typedef struct build {
    const spf_matrix *a;
    sp_format *f;
    int64_t kc; /* condensed columns, pairs · 64 */
} build;

void sp_format_free(sp_format *f)
{
    if (!f)
        return;
    mem_free(f->values);
    mem_free(f->meta);
    mem_free(f->gather);
    mem_free(f->step_ptr);
    mem_free(f->row_map);
    memset(f, 0, sizeof *f);
}

double sp_format_bytes_per_weight(const sp_format *f)
{
    double weights = (double)f->rows * (double)f->cols;
    return weights > 0 ? (double)f->bytes / weights : 0.0;
}

/* V:2:M: the kept columns of each group of each block of rows, ascending,
 * a group with fewer than four filled with its first column. */
static spf_status gather_blocks(void *ctx, int64_t begin, int64_t end, int worker)
{
    (void)worker;
    const build *b = ctx;
    const spf_matrix *a = b->a;
    const sp_format *f = b->f;
    const int32_t m = f->pattern.group, v = f->pattern.v;
    for (int64_t blk = begin; blk < end; blk++) {
        int32_t *g = f->gather + blk * b->kc;
        int64_t groups = (a->cols + m - 1) / m;
        memset(g, 0, (size_t)b->kc * sizeof *g);
        int8_t *used = mem_calloc((size_t)groups + 1, 1);
        if (!used)
            return FAIL(SPF_ERR_OUT_OF_MEMORY, "structured format: %lld groups", (long long)groups);
        int64_t r1 = a->rows - blk * v < v ? a->rows : (blk + 1) * v;
        for (int64_t r = blk * v; r < r1; r++)
            for (int64_t i = a->row_ptr[r]; i < a->row_ptr[r + 1]; i++) {
                int32_t col = a->col_idx[i];
                int64_t q = col / m;
                int32_t *kept = g + q * RUN;
                int k = 0;
                while (k < used[q] && kept[k] != col)
                    k++;
                if (k < used[q])
                    continue;
                if (used[q] == RUN) {
                    mem_free(used);
                    return FAIL(SPF_ERR_INVALID_ARGUMENT, "structured format: rows %lld-%lld use "
                                "more than 4 columns of %lld-%lld (V:2:%d)", (long long)(blk * v),
                                (long long)(r1 - 1), (long long)(q * m),
                                (long long)(q * m + m - 1), m);
                }
                /* insertion keeps the kept columns ascending */
                for (k = used[q]++; k > 0 && kept[k - 1] > col; k--)
                    kept[k] = kept[k - 1];
                kept[k] = col;
            }
        for (int64_t q = 0; q < groups; q++)
            for (int k = used[q]; k < RUN; k++)
                g[q * RUN + k] = used[q] ? g[q * RUN] : (int32_t)(q * m);
        mem_free(used);
    }
    return SPF_OK;
}

/* Row r's nonzero i as (run, place in the run). */
static void run_of(const build *b, int64_t r, int64_t i, int64_t *run, int *place)
{
    const sp_format *f = b->f;
    int32_t col = b->a->col_idx[i];
    if (f->pattern.v == 0) {
        *run = col / RUN, *place = col % RUN;
        return;
    }
    int64_t q = col / f->pattern.group;
    const int32_t *kept = f->gather + r / f->pattern.v * b->kc + q * RUN;
    int k = 0;
    while (kept[k] != col) /* present: gather_blocks put it there */
        k++;
    *run = q, *place = k;
}

/* Put (nibble, two values) of row rr of tile t, run q, where the kernel
 * reads them (sp_format.h). */
static void place_run(sp_format *f, int64_t t, int rr, int64_t q, uint32_t nibble, uint32_t pair)
{
    int64_t s = q / RUNS_PER_STEP, p = s / 2;
    int h = (int)(s % 2), j = (int)(q % RUNS_PER_STEP), g = rr % 8, hi = rr / 8;
    int64_t frag = ((t * f->pairs + p) * 2 + h) * 32 + 4 * g + j % 4;
    f->values[frag * 4 + hi + 2 * (j / 4)] = pair;
    f->meta[(t * f->pairs + p) * 32 + 4 * g + 2 * h + j / 4] |= nibble
                                                               << (16 * hi + 4 * (j % 4));
}

static spf_status write_tiles(void *ctx, int64_t begin, int64_t end, int worker)
{
    (void)worker;
    const build *b = ctx;
    const spf_matrix *a = b->a;
    sp_format *f = b->f;
    const int64_t runs = f->pairs * 2 * RUNS_PER_STEP;
    for (int64_t t = begin; t < end; t++) {
        for (int rr = 0; rr < TILE; rr++) {
            int64_t r = t * TILE + rr, i = r < a->rows ? a->row_ptr[r] : 0;
            int64_t i1 = r < a->rows ? a->row_ptr[r + 1] : 0;
            for (int64_t q = 0; q < runs; q++) {
                int places[2], count = 0;
                uint16_t bits[2] = {0, 0};
                int64_t run = 0;
                int place = 0;
                while (i < i1 && (run_of(b, r, i, &run, &place), run == q)) {
                    if (count == 2)
                        return FAIL(SPF_ERR_INVALID_ARGUMENT, "structured format: row %lld has "
                                    "more than 2 nonzeros in run %lld (%s)", (long long)r,
                                    (long long)q, f->pattern.v ? "V:2:M" : "2:4");
                    places[count] = place;
                    dtype_from_float(f->dtype, &a->values[i], &bits[count], 1);
                    count++, i++;
                }
                uint32_t nibble = FREE_PAIR, pair = 0;
                if (count == 2) {
                    nibble = (uint32_t)(places[0] | places[1] << 2);
                    pair = bits[0] | (uint32_t)bits[1] << 16;
                } else if (count == 1 && places[0] < RUN - 1) { /* a zero after it */
                    nibble = (uint32_t)(places[0] | (places[0] + 1) << 2);
                    pair = bits[0];
                } else if (count == 1) { /* the last place: a zero before it */
                    nibble = (uint32_t)((RUN - 2) | (RUN - 1) << 2);
                    pair = (uint32_t)bits[0] << 16;
                }
                place_run(f, t, rr, q, nibble, pair);
            }
        }
    }
    return SPF_OK;
}

spf_status sp_format_build(const spf_matrix *a, const sp_pattern *p, spf_dtype dtype, int threads,
                           sp_format *out)
{
    error_clear();
    CHECK_ARG(a != NULL && p != NULL && out != NULL);
    memset(out, 0, sizeof *out);
    if (dtype != SPF_DTYPE_F16 && dtype != SPF_DTYPE_BF16)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "structured format: dtype %s (expected f16 or "
                    "bf16)", dtype_name(dtype));
    if (p->vec)
        return sp_colvec_build(a, p, dtype, out);
    if (p->v == 0 ? p->group != RUN
                  : (p->group < 8 || p->v < TILE || p->v % TILE != 0))
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "structured format: pattern V=%d M=%d (expected 2:4 "
                    "or V:2:M with V a multiple of 16 and M ≥ 8)", p->v, p->group);
    double t0 = timing_now_s();
    sp_format *f = out;
    f->rows = a->rows, f->cols = a->cols, f->dtype = dtype, f->pattern = *p;
    f->tiles = (a->rows + TILE - 1) / TILE;
    f->pairs = (sp_pattern_condensed_cols(p, a->cols) + PAIR_COLS - 1) / PAIR_COLS;
    int64_t kc = f->pairs * PAIR_COLS, blocks = p->v ? (a->rows + p->v - 1) / p->v : 0;
    int64_t value_words = f->tiles * f->pairs * 2 * 32 * 4;
    if (value_words >= INT32_MAX || blocks * kc >= INT32_MAX)
        return FAIL(SPF_ERR_OVERFLOW, "structured format: %lld × %lld reaches the kernel's int32 "
                    "offsets", (long long)a->rows, (long long)a->cols);
    spf_status status = SPF_OK;
    f->values = mem_calloc((size_t)value_words + 1, sizeof *f->values);
    f->meta = mem_calloc((size_t)(value_words / 8) + 1, sizeof *f->meta);
    f->gather = blocks ? mem_alloc_array((size_t)(blocks * kc) + 1, sizeof *f->gather) : NULL;
    if (!f->values || !f->meta || (blocks && !f->gather))
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "a structured format of %lld × %lld", (long long)a->rows,
                  (long long)a->cols);
    build b = {a, f, kc};
    if (blocks)
        TRY(parallel_for(blocks, 1, threads, gather_blocks, &b));
    TRY(parallel_for(f->tiles, TILE_GRAIN, threads, write_tiles, &b));
    f->bytes = (int64_t)sizeof(uint32_t) * (value_words + value_words / 8 + blocks * kc);
    f->build_s = timing_now_s() - t0;
    return SPF_OK;
fail:
    sp_format_free(f);
    return status;
}

spf_status sp_format_to_dense(const sp_format *f, float *dense)
{
    error_clear();
    if (f->pattern.vec)
        return sp_colvec_to_dense(f, dense);
    memset(dense, 0, (size_t)(f->rows * f->cols) * sizeof *dense);
    const int64_t kc = f->pairs * PAIR_COLS;
    for (int64_t t = 0; t < f->tiles; t++)
        for (int64_t s = 0; s < f->pairs * 2; s++)
            for (int rr = 0; rr < TILE; rr++)
                for (int j = 0; j < RUNS_PER_STEP; j++) {
                    int64_t p = s / 2, r = t * TILE + rr;
                    int h = (int)(s % 2), g = rr % 8, hi = rr / 8;
                    int64_t frag = ((t * f->pairs + p) * 2 + h) * 32 + 4 * g + j % 4;
                    uint32_t pair = f->values[frag * 4 + hi + 2 * (j / 4)];
                    uint32_t nibble = f->meta[(t * f->pairs + p) * 32 + 4 * g + 2 * h + j / 4] >>
                                          (16 * hi + 4 * (j % 4)) & 0xfu;
                    int idx[2] = {(int)(nibble & 3), (int)(nibble >> 2)};
                    if (idx[0] >= idx[1])
                        return FAIL(SPF_ERR_PARSE, "structured format, tile %lld, step %lld, row "
                                    "%d, run %d: metadata 0x%x is not an ordered pair",
                                    (long long)t, (long long)s, rr, j, nibble);
                    for (int e = 0; e < 2; e++) {
                        uint16_t bits = (uint16_t)(pair >> (16 * e));
                        int64_t jc = s * 32 + j * RUN + idx[e], col = jc;
                        if (f->pattern.v)
                            col = f->gather[r / f->pattern.v * kc + jc];
                        if (bits == 0) /* a filler; also +0 of a real value */
                            continue;
                        if (r >= f->rows || col < 0 || col >= f->cols)
                            return FAIL(SPF_ERR_PARSE, "structured format, tile %lld, step %lld, "
                                        "row %d, run %d: a value at row %lld, column %lld, "
                                        "outside %lld × %lld", (long long)t, (long long)s, rr, j,
                                        (long long)r, (long long)col, (long long)f->rows,
                                        (long long)f->cols);
                        float v;
                        dtype_to_float(f->dtype, &bits, &v, 1);
                        dense[r * f->cols + col] += v;
                    }
                }
    return SPF_OK;
}
