/* The fragment-stream format of the tcfrag strategy
 * (src/strategy/tcfrag/frag_format.h) on the CPU: every matrix, dtype and
 * group decodes back to the matrix it was built from (values rounded to
 * the dtype); every byte of the stream is what the header describes,
 * rebuilt here from the header's words alone (the mma.m16n8k16 A-fragment
 * order of the mask and values, pre[], the zero padding, the group-major
 * chunks); a single nonzero lands on the lane and slot of the PTX layout;
 * the chunks, offsets, largest and bytes hold their invariants; the build
 * is the same on one thread and on several; bad arguments and corrupted
 * streams are refused with a message naming where; the planner's estimate
 * and the bytes per weight at 70 % sparsity. */
#include "test_util.h"

#include "core/dtype.h"
#include "core/matrix.h"
#include "strategy/tcfrag/frag_format.h"

#include <stdint.h>

/* Set by check_structure for the capacity test: a chunk, not the last,
 * cut short of FRAG_CHUNK_STEPS k-steps (by frag_capacity). */
static int short_chunks;

/* a as dense floats rounded to dtype (what the format must give back). */
static float *dense_of(const spf_matrix *a, spf_dtype dtype)
{
    float *d = calloc((size_t)(a->rows * a->cols + 1), sizeof *d);
    for (int64_t r = 0; r < a->rows; r++)
        for (int64_t p = a->row_ptr[r]; p < a->row_ptr[r + 1]; p++) {
            uint16_t h;
            float v = a->values[p];
            dtype_from_float(dtype, &v, &h, 1);
            dtype_to_float(dtype, &h, &v, 1);
            d[r * a->cols + a->col_idx[p]] = v;
        }
    return d;
}

static int64_t align16(int64_t x) { return (x + 15) / 16 * 16; }

/* The stream as frag_format.h describes it, built here from a alone with
 * f's chunk boundaries (which check_structure checks on their own): the
 * offsets into *offset (groups · chunks + 1) and the bytes into *data
 * (offset[groups · chunks] of them, padding zero). The mask is derived
 * from the header's words — bit s of byte L is row quad + 8·(s>>1 & 1),
 * column 2·t + (s & 1) + 8·(s >> 2) — not from the inverse the build uses. */
static void expected_stream(const spf_matrix *a, const frag_format *f, unsigned char **data,
                            int64_t **offset)
{
    int64_t m = a->rows, k = a->cols, G = f->group;
    int64_t windows = (m + 15) / 16, groups = (windows + G - 1) / G, steps = (k + 15) / 16;
    size_t es = dtype_size(f->dtype);
    /* presence and values of a, dense */
    unsigned char *present = calloc((size_t)(m * k + 1), 1);
    float *value = calloc((size_t)(m * k + 1), sizeof *value);
    for (int64_t r = 0; r < m; r++)
        for (int64_t p = a->row_ptr[r]; p < a->row_ptr[r + 1]; p++) {
            present[r * k + a->col_idx[p]] = 1;
            value[r * k + a->col_idx[p]] = a->values[p];
        }
    size_t most = (size_t)(groups * steps) * (size_t)align16(G * (40 + 256 * (int64_t)es)) + 16;
    unsigned char *buf = calloc(most, 1);
    int64_t chunks = f->chunks;
    int64_t *off = malloc((size_t)(groups * chunks + 1) * sizeof *off);
    int64_t at = 0;
    for (int64_t g = 0; g < groups; g++)
        for (int64_t c = 0; c < chunks; c++) {
            off[g * chunks + c] = at;
            for (int64_t s = f->chunk_step[c]; s < f->chunk_step[c + 1]; s++) {
                unsigned char *rec = buf + at;
                int64_t values = 0;
                for (int64_t w = 0; w < G; w++) {
                    unsigned char *mask = rec + 40 * w, *pre = mask + 32;
                    for (int lane = 0; lane < 32; lane++) {
                        int quad = lane >> 2, t = lane & 3;
                        for (int slot = 0; slot < 8; slot++) {
                            int64_t r = (g * G + w) * 16 + quad + 8 * (slot >> 1 & 1);
                            int64_t col = s * 16 + 2 * t + (slot & 1) + 8 * (slot >> 2);
                            if (r < m && col < k && present[r * k + col]) {
                                mask[lane] |= (unsigned char)(1u << slot);
                                dtype_from_float(f->dtype, &value[r * k + col],
                                                 rec + 40 * G + (size_t)values * es, 1);
                                values++;
                            }
                        }
                    }
                    for (int q = 1; q < 8; q++) {
                        int n = 0;
                        for (int byte = 0; byte < 4 * q; byte++)
                            n += __builtin_popcount(mask[byte]);
                        pre[q] = (unsigned char)n;
                    }
                    pre[0] = (unsigned char)(__builtin_popcount(mask[28]) +
                                             __builtin_popcount(mask[29]) +
                                             __builtin_popcount(mask[30]) +
                                             __builtin_popcount(mask[31]));
                }
                at += align16(40 * G + values * (int64_t)es);
            }
        }
    off[groups * chunks] = at;
    free(present);
    free(value);
    *data = buf;
    *offset = off;
}

/* The invariants of frag_format.h that do not depend on the values. */
static void check_structure(const char *label, const spf_matrix *a, const frag_format *f,
                            spf_dtype dtype, int group)
{
    int64_t windows = (a->rows + 15) / 16, groups = (windows + group - 1) / group,
            steps = (a->cols + 15) / 16;
    CHECK_MSG(f->rows == a->rows && f->cols == a->cols && f->nnz == a->nnz && f->dtype == dtype &&
                  f->group == group && f->windows == windows && f->groups == groups &&
                  f->steps == steps,
              "%s: shape %lld×%lld nnz %lld, group %d, %lld windows, %lld groups, %lld steps",
              label, (long long)f->rows, (long long)f->cols, (long long)f->nnz, f->group,
              (long long)f->windows, (long long)f->groups, (long long)f->steps);
    if (f->windows != windows || f->groups != groups || f->steps != steps)
        return; /* the rest reads arrays of those sizes */

    /* chunks: 0 = chunk_step[0] < ... < chunk_step[chunks] = steps, each at
     * most FRAG_CHUNK_STEPS k-steps */
    CHECK_MSG(f->chunk_step != NULL && f->offset != NULL && f->data != NULL,
              "%s: arrays missing", label);
    if (!f->chunk_step || !f->offset || !f->data)
        return;
    CHECK_MSG(steps == 0 ? f->chunks == 0
                         : (f->chunks >= (steps + FRAG_CHUNK_STEPS - 1) / FRAG_CHUNK_STEPS &&
                            f->chunks <= steps),
              "%s: %d chunks for %lld k-steps", label, f->chunks, (long long)steps);
    int ascending = f->chunk_step[0] == 0 && f->chunk_step[f->chunks] == steps;
    for (int32_t c = 0; c < f->chunks; c++) {
        int32_t n = f->chunk_step[c + 1] - f->chunk_step[c];
        ascending = ascending && n >= 1 && n <= FRAG_CHUNK_STEPS;
        short_chunks += c + 1 < f->chunks && n < FRAG_CHUNK_STEPS;
    }
    CHECK_MSG(ascending, "%s: chunk steps not 0 < ... < %lld by at most %d", label,
              (long long)steps, FRAG_CHUNK_STEPS);

    /* offsets: from 0, 16-byte aligned, ascending by at least one record
     * (a header per window) and at most frag_capacity; largest their
     * most; bytes what the kernel reads */
    int64_t cells = groups * f->chunks, largest = 0, bad = -1;
    for (int64_t i = 0; i < cells; i++) {
        int64_t n = f->offset[i + 1] - f->offset[i];
        int64_t ks = f->chunk_step[i % f->chunks + 1] - f->chunk_step[i % f->chunks];
        if (bad < 0 && (f->offset[i] % 16 != 0 || n % 16 != 0 || n < ks * align16(40 * group) ||
                        n > frag_capacity(group)))
            bad = i;
        largest = n > largest ? n : largest;
    }
    int64_t cell = bad < 0 ? 0 : bad, per = f->chunks > 0 ? f->chunks : 1;
    CHECK_MSG(f->offset[0] == 0 && f->offset[cells] % 16 == 0 && bad < 0,
              "%s: group %lld chunk %lld: offsets %lld..%lld (capacity %lld)", label,
              (long long)(cell / per), (long long)(cell % per), (long long)f->offset[cell],
              (long long)f->offset[cell < cells ? cell + 1 : cell],
              (long long)frag_capacity(group));
    CHECK_MSG(f->largest == largest, "%s: largest %lld, the biggest chunk %lld", label,
              (long long)f->largest, (long long)largest);
    int64_t bytes = f->offset[cells] + (cells + 1) * (int64_t)sizeof(int64_t) +
                    (f->chunks + 1) * (int64_t)sizeof(int32_t);
    CHECK_MSG(f->bytes == bytes, "%s: bytes %lld, data + offsets + chunk steps %lld", label,
              (long long)f->bytes, (long long)bytes);
    CHECK_MSG(f->bytes >= 2 * a->nnz + 40 * groups * group * steps,
              "%s: %lld bytes for %lld values and %lld headers", label, (long long)f->bytes,
              (long long)a->nnz, (long long)(groups * group * steps));
    /* the headers count every nonzero once */
    int64_t bits = 0;
    for (int64_t g = 0; g < groups; g++)
        for (int32_t c = 0; c < f->chunks; c++) {
            const unsigned char *at = f->data + f->offset[g * f->chunks + c];
            for (int32_t s = f->chunk_step[c]; s < f->chunk_step[c + 1]; s++) {
                int64_t values = 0;
                for (int w = 0; w < group; w++)
                    for (int b = 0; b < 32; b++)
                        values += __builtin_popcount(at[40 * w + b]);
                bits += values;
                at += align16(40 * group + 2 * values);
            }
        }
    CHECK_MSG(bits == a->nnz, "%s: %lld mask bits, %lld nonzeros", label, (long long)bits,
              (long long)a->nnz);
}

static int same_format(const frag_format *x, const frag_format *y)
{
    if (x->chunks != y->chunks || x->groups != y->groups || x->steps != y->steps ||
        x->largest != y->largest || x->bytes != y->bytes)
        return 0;
    int64_t cells = x->groups * x->chunks;
    return !memcmp(x->chunk_step, y->chunk_step, (size_t)(x->chunks + 1) * sizeof *x->chunk_step) &&
           !memcmp(x->offset, y->offset, (size_t)(cells + 1) * sizeof *x->offset) &&
           !memcmp(x->data, y->data, (size_t)x->offset[cells]);
}

/* One matrix through both dtypes and every group, on 1, 2 and all threads. */
static void check_matrix(const char *label, const spf_matrix *a)
{
    const spf_dtype dtypes[] = {SPF_DTYPE_F16, SPF_DTYPE_BF16};
    const int groups[] = {1, 2, 4};
    float *got = malloc((size_t)(a->rows * a->cols + 1) * sizeof *got);
    for (int d = 0; d < 2; d++) {
        float *want = dense_of(a, dtypes[d]);
        for (int gi = 0; gi < 3; gi++) {
            char what[256];
            snprintf(what, sizeof what, "%s %s group %d", label, dtype_name(dtypes[d]), groups[gi]);
            frag_format f, one, two;
            CHECK_OK(frag_format_build(a, dtypes[d], groups[gi], 0, &f));
            check_structure(what, a, &f, dtypes[d], groups[gi]);

            for (int64_t i = 0; i < a->rows * a->cols; i++)
                got[i] = -7.0f; /* to_dense must write every element */
            CHECK_OK(frag_format_to_dense(&f, got));
            CHECK_MSG(memcmp(got, want, (size_t)(a->rows * a->cols) * sizeof *got) == 0,
                      "%s: the format does not give the matrix back", what);

            unsigned char *data;
            int64_t *offset;
            expected_stream(a, &f, &data, &offset);
            int64_t cells = f.groups * f.chunks, first = -1;
            int offsets_same = !memcmp(offset, f.offset, (size_t)(cells + 1) * sizeof *offset);
            for (int64_t i = 0; offsets_same && i < offset[cells] && first < 0; i++)
                if (data[i] != f.data[i])
                    first = i;
            CHECK_MSG(offsets_same && first < 0,
                      "%s: the stream is not the header's (offsets %s; first byte apart %lld: "
                      "%d, expected %d)", what, offsets_same ? "same" : "differ", (long long)first,
                      first < 0 ? 0 : f.data[first], first < 0 ? 0 : data[first]);
            free(data);
            free(offset);

            CHECK_OK(frag_format_build(a, dtypes[d], groups[gi], 1, &one));
            CHECK_OK(frag_format_build(a, dtypes[d], groups[gi], 2, &two));
            CHECK_MSG(same_format(&f, &one) && same_format(&f, &two),
                      "%s: 1, 2 and all threads built different streams", what);
            frag_format_free(&f);
            frag_format_free(&one);
            frag_format_free(&two);
            CHECK(f.data == NULL && f.offset == NULL && f.chunk_step == NULL && f.bytes == 0);
            frag_format_free(&f); /* a zeroed format */
        }
        free(want);
    }
    free(got);
}

static void test_shapes(void)
{
    const double sparsities[] = {0.5, 0.7, 0.9};
    const int64_t shapes[][2] = {{37, 53}, {1, 1}, {17, 300}, {100, 3}, {130, 129}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int sp = 0; sp < 3; sp++) {
            double density[200];
            for (int r = 0; r < 200; r++)
                density[r] = 1.0 - sparsities[sp];
            spf_matrix *a = random_csr(shapes[i][0], shapes[i][1], density, 100 + 3 * i + sp);
            char label[64];
            snprintf(label, sizeof label, "random %lldx%lld at %.1f", (long long)shapes[i][0],
                     (long long)shapes[i][1], sparsities[sp]);
            check_matrix(label, a);
            spf_matrix_free(a);
        }

    /* rows of different densities: every 5th row empty, rows 16-47 (the
     * second and third windows, the whole second group of 2) empty, rows
     * 64-69 dense */
    double density[70];
    for (int r = 0; r < 70; r++)
        density[r] = (r >= 16 && r < 48) || r % 5 == 0 ? 0.0 : r >= 64 ? 1.0 : 0.02 + 0.3 * (r % 4);
    spf_matrix *a = random_csr(70, 700, density, 7);
    check_matrix("70x700 rows of different densities, empty rows and windows", a);
    spf_matrix_free(a);

    /* dense: every tile full (and 64×400 full enough that group records
     * reach frag_capacity before FRAG_CHUNK_STEPS k-steps) */
    const int64_t dense[][2] = {{16, 16}, {48, 40}, {64, 400}};
    for (size_t i = 0; i < sizeof dense / sizeof dense[0]; i++) {
        double ones[64];
        for (int r = 0; r < 64; r++)
            ones[r] = 1.0;
        a = random_csr(dense[i][0], dense[i][1], ones, 20 + i);
        CHECK(a->nnz == dense[i][0] * dense[i][1]);
        char label[64];
        snprintf(label, sizeof label, "dense %lldx%lld", (long long)dense[i][0],
                 (long long)dense[i][1]);
        short_chunks = 0;
        check_matrix(label, a);
        if (i == 2)
            CHECK_MSG(short_chunks > 0, "dense 64x400: no chunk cut by capacity");
        frag_format f;
        CHECK_OK(frag_format_build(a, SPF_DTYPE_F16, 1, 1, &f));
        CHECK(f.data[f.offset[0]] == 0xff && f.data[f.offset[0] + 31] == 0xff &&
              f.data[f.offset[0] + 33] == 32 && f.data[f.offset[0] + 32] == 32 &&
              f.data[f.offset[0] + 39] == 224);
        /* a dense record: 40 + 512 bytes, padded to 560 (fewer columns in
         * the last k-step) */
        int64_t chunk0 = 0;
        for (int64_t s = 0; f.chunks > 0 && s < f.chunk_step[1]; s++) {
            int64_t cols = dense[i][1] - 16 * s < 16 ? dense[i][1] - 16 * s : 16;
            chunk0 += align16(40 + 2 * 16 * cols);
        }
        CHECK(f.chunks > 0 && f.offset[1] - f.offset[0] == chunk0 &&
              (dense[i][1] < 48 || chunk0 == frag_capacity(1) / 560 * 560));
        frag_format_free(&f);
        spf_matrix_free(a);
    }

    /* one nonzero, row 1 column 29: tile (0, 1), lane (1 % 8)·4 + (29 % 8)/2 = 6,
     * slot 2·((13/8)·2 + 1/8) + 13 % 2 = 5 */
    int64_t rp[4] = {0, 0, 1, 1};
    int32_t ci[1] = {29};
    float v[1] = {0.375f};
    CHECK_OK(spf_matrix_create_csr(3, 40, 1, rp, ci, v, 0, &a));
    check_matrix("one nonzero", a);
    frag_format f;
    CHECK_OK(frag_format_build(a, SPF_DTYPE_F16, 1, 0, &f));
    CHECK(f.steps == 3 && f.chunks == 1 && f.offset[1] == 3 * 48);
    CHECK(f.data[48 + 6] == 1u << 5 && f.data[48 + 32 + 2] == 1 && f.data[48 + 32 + 0] == 0);
    CHECK(f.data[48 + 40] == 0x00 && f.data[48 + 41] == 0x36); /* 0.375 in f16: 0x3600 */
    frag_format_free(&f);
    spf_matrix_free(a);

    /* empty shapes and no nonzeros */
    const int64_t empty[][2] = {{0, 0}, {0, 7}, {9, 0}, {0, 300}, {33, 21}};
    for (size_t i = 0; i < sizeof empty / sizeof empty[0]; i++) {
        int64_t zeros[40] = {0};
        char label[64];
        snprintf(label, sizeof label, "no nonzeros %lldx%lld", (long long)empty[i][0],
                 (long long)empty[i][1]);
        CHECK_OK(spf_matrix_create_csr(empty[i][0], empty[i][1], 0, zeros, NULL, NULL, 0, &a));
        check_matrix(label, a);
        for (int group = 1; group <= 4; group *= 2) {
            CHECK_OK(frag_format_build(a, SPF_DTYPE_BF16, group, 0, &f));
            int64_t windows = (empty[i][0] + 15) / 16, steps = (empty[i][1] + 15) / 16;
            int64_t groups = (windows + group - 1) / group, chunks = (steps + 7) / 8,
                    cells = groups * chunks;
            CHECK_MSG(f.windows == windows && f.groups == groups && f.steps == steps &&
                          f.chunks == chunks &&
                          f.offset[cells] == groups * steps * align16(40 * group) &&
                          f.bytes == f.offset[cells] + 8 * (cells + 1) + 4 * (chunks + 1),
                      "%s group %d: %lld groups, %d chunks, %lld bytes", label, group,
                      (long long)f.groups, f.chunks, (long long)f.bytes);
            double weights = (double)(empty[i][0] * empty[i][1]);
            CHECK(frag_format_bytes_per_weight(&f) == (weights > 0 ? f.bytes / weights : 0.0));
            frag_format_free(&f);
        }
        spf_matrix_free(a);
    }

    /* a real pruned layer */
    int64_t m = 0, k = 0;
    a = data_case_matrix("dlmc/transformer/magnitude_pruning/0.9/"
                         "body_encoder_layer_0_ffn_conv1_fully_connected.smtx",
                         &m, &k);
    if (a) {
        check_matrix("dlmc transformer ffn_conv1 at 0.9", a);
        spf_matrix_free(a);
    }
}

/* The mapping on its own: a single nonzero at every row r and column c of
 * a tile, in every window of a group and in the second k-step, sets bit
 * s = 2·((c/8)·2 + r/8) + c % 2 of mask byte L = (r % 8)·4 + (c % 8)/2 (the
 * PTX ISA's mma.m16n8k16 A fragment: lane L holds a0..a7 = rows
 * L/4 (+8 for a2, a3, a6, a7), columns 2·(L%4) + i%2 (+8 for a4..a7)) and
 * nothing else; its value follows the group's headers. Then one random
 * tile's pre[] from its mask bytes. */
static void test_mapping(void)
{
    int wrong = 0;
    for (int group = 1; group <= 4; group *= 2)
        for (int w = 0; w < group; w++)
            for (int step = 0; step < 2; step++)
                for (int r = 0; r < 16; r++)
                    for (int c = 0; c < 16; c++) {
                        int64_t rows = 16 * group - 3, row = 16 * w + r; /* the last rows absent */
                        if (row >= rows)
                            continue;
                        int64_t rp[64 + 1];
                        for (int64_t i = 0; i <= rows; i++)
                            rp[i] = i > row;
                        int32_t ci[1] = {16 * step + c};
                        float v[1] = {-1.5f};
                        spf_matrix *a = NULL;
                        CHECK_OK(spf_matrix_create_csr(rows, 37, 1, rp, ci, v, 0, &a));
                        frag_format f;
                        CHECK_OK(frag_format_build(a, SPF_DTYPE_F16, group, 1, &f));
                        int L = (r % 8) * 4 + (c % 8) / 2, s = 2 * ((c / 8) * 2 + r / 8) + c % 2;
                        /* k-step 0's record is headers only when the nonzero is in k-step 1 */
                        const unsigned char *rec =
                            f.data + f.offset[0] + step * align16(40 * group);
                        int ok = f.chunks == 1 && f.offset[1] == 2 * align16(40 * group) +
                                                                    align16(40 * group + 2);
                        for (int ww = 0; ww < group; ww++)
                            for (int b = 0; b < 40; b++) {
                                unsigned char want = 0;
                                if (ww == w && b == L)
                                    want = (unsigned char)(1u << s);
                                else if (ww == w && b >= 33) /* pre[q]: bytes 0..4q-1 */
                                    want = L < 4 * (b - 32);
                                else if (ww == w && b == 32) /* pre[0]: bytes 28..31 */
                                    want = L >= 28;
                                ok = ok && rec[40 * ww + b] == want;
                            }
                        /* -1.5 in f16: 0xbe00, little-endian, after the headers */
                        ok = ok && rec[40 * group] == 0x00 && rec[40 * group + 1] == 0xbe;
                        if (!ok && wrong++ < 5)
                            CHECK_MSG(ok, "group %d window %d k-step %d row %d column %d: not lane "
                                      "%d slot %d", group, w, step, r, c, L, s);
                        frag_format_free(&f);
                        spf_matrix_free(a);
                    }
    CHECK_MSG(wrong == 0, "%d single nonzeros misplaced", wrong);

    /* pre[] of one random tile (the second window's tile of k-step 0,
     * group 2), from its mask bytes */
    double density[32];
    for (int r = 0; r < 32; r++)
        density[r] = 0.6;
    spf_matrix *a = random_csr(32, 16, density, 77);
    frag_format f;
    CHECK_OK(frag_format_build(a, SPF_DTYPE_BF16, 2, 0, &f));
    const unsigned char *h = f.data + f.offset[0] + 40;
    unsigned char mask[32] = {0};
    for (int r = 0; r < 16; r++)
        for (int64_t p = a->row_ptr[16 + r]; p < a->row_ptr[17 + r]; p++) {
            int c = a->col_idx[p];
            int L = (r % 8) * 4 + (c % 8) / 2, s = 2 * ((c / 8) * 2 + r / 8) + c % 2;
            mask[L] |= (unsigned char)(1u << s);
        }
    CHECK(memcmp(h, mask, 32) == 0);
    int below[33] = {0};
    for (int b = 0; b < 32; b++)
        below[b + 1] = below[b] + __builtin_popcount(mask[b]);
    for (int q = 1; q < 8; q++)
        CHECK_MSG(h[32 + q] == below[4 * q], "pre[%d] = %d, %d bits below", q, h[32 + q],
                  below[4 * q]);
    CHECK_MSG(h[32] == below[32] - below[28], "pre[0] = %d, %d bits in bytes 28..31", h[32],
              below[32] - below[28]);
    CHECK(below[32] == a->row_ptr[32] - a->row_ptr[16]);
    frag_format_free(&f);
    spf_matrix_free(a);
}

static void test_bad_input(void)
{
    double density[40];
    for (int r = 0; r < 40; r++)
        density[r] = 0.5;
    spf_matrix *a = random_csr(40, 50, density, 9);
    frag_format f;
    CHECK_STATUS(frag_format_build(a, SPF_DTYPE_F32, 2, 0, &f), SPF_ERR_INVALID_ARGUMENT);
    CHECK(f.data == NULL && f.offset == NULL && f.chunk_step == NULL);
    CHECK_DETAIL("dtype");
    CHECK_STATUS(frag_format_build(a, (spf_dtype)7, 2, 0, &f), SPF_ERR_INVALID_ARGUMENT);
    const int groups[] = {0, 3, 8, -1};
    for (int i = 0; i < 4; i++) {
        CHECK_STATUS(frag_format_build(a, SPF_DTYPE_F16, groups[i], 0, &f),
                     SPF_ERR_INVALID_ARGUMENT);
        CHECK_DETAIL("group");
    }
    CHECK_STATUS(frag_format_build(NULL, SPF_DTYPE_F16, 1, 0, &f), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(frag_format_build(a, SPF_DTYPE_F16, 1, 0, NULL), SPF_ERR_INVALID_ARGUMENT);

    /* corruptions of a good stream, each restored after */
    float *got = malloc(40 * 50 * sizeof *got);
    CHECK_OK(frag_format_build(a, SPF_DTYPE_F16, 2, 0, &f));
    CHECK_OK(frag_format_to_dense(&f, got));
    /* group 1's first record, its first window (rows 32-39 of 40) */
    unsigned char *h = f.data + f.offset[f.chunks];
    struct {
        unsigned char *at;
        unsigned char flip;
        const char *says;
    } cases[] = {
        {f.data + 32 + 3, 0x01, "pre[3]"},  /* group 0, k-step 0: pre[3] one off */
        {h + 32, 0x04, "pre[0]"},           /* group 1, k-step 0, window 1: pre[0] */
        {NULL, 0, "pre[1]"},                /* group 0: a clear mask bit of lane 0 set */
        {NULL, 0, "pre[0]"},                /* group 0: a clear mask bit of lane 30 set */
    };
    for (int b = 0; b < 8 && !cases[2].at; b++)
        if (!(f.data[0] >> b & 1))
            cases[2].at = f.data, cases[2].flip = (unsigned char)(1u << b);
    for (int b = 0; b < 8 && !cases[3].at; b++)
        if (!(f.data[30] >> b & 1))
            cases[3].at = f.data + 30, cases[3].flip = (unsigned char)(1u << b);
    for (int i = 0; i < 4; i++) {
        CHECK(cases[i].at != NULL);
        if (!cases[i].at)
            continue;
        *cases[i].at ^= cases[i].flip;
        CHECK_STATUS(frag_format_to_dense(&f, got), SPF_ERR_PARSE);
        CHECK_DETAIL("group");
        CHECK_DETAIL("k-step");
        CHECK_DETAIL(cases[i].says);
        *cases[i].at ^= cases[i].flip;
        CHECK_OK(frag_format_to_dense(&f, got));
    }
    frag_format_free(&f);
    free(got);
    spf_matrix_free(a);

    /* headers that agree with their masks but not with the records: one
     * 16×16 tile with 4 nonzeros (a record of 40 + 8 bytes, no padding) and
     * with 5 (40 + 10, padded to 64) */
    for (int n = 4; n <= 5; n++) {
        int64_t rp[17];
        int32_t ci[5];
        float v[5] = {0.5f, 0.25f, -1, 2, 3};
        for (int r = 0; r <= 16; r++)
            rp[r] = r < n ? r : n;
        for (int i = 0; i < n; i++)
            ci[i] = i; /* (i, i): lane 4i + i/2, slot 0 */
        CHECK_OK(spf_matrix_create_csr(16, 16, n, rp, ci, v, 0, &a));
        CHECK_OK(frag_format_build(a, SPF_DTYPE_F16, 1, 0, &f));
        CHECK(f.offset[1] == (n == 4 ? 48 : 64));
        /* n = 4: a fifth bit in lane 31 with pre[0] raised: the record
         * needs 64 bytes and the chunk has 48. n = 5: lane 18's bit cleared
         * (row 4, column 4) with pre[5..7] lowered: 48 bytes, 16 left over
         * in the chunk. */
        if (n == 4) {
            f.data[31] |= 1;
            f.data[32]++;
        } else {
            f.data[18] = 0;
            for (int q = 5; q < 8; q++)
                f.data[32 + q]--;
        }
        float out[256];
        CHECK_STATUS(frag_format_to_dense(&f, out), SPF_ERR_PARSE);
        CHECK_DETAIL("group 0");
        CHECK_DETAIL("k-step");
        CHECK_DETAIL(n == 4 ? "past the chunk" : "16 bytes left");
        frag_format_free(&f);
        spf_matrix_free(a);
    }

    /* a header that claims a full tile (256 values, 552 bytes) in a stream
     * of one 48-byte record: refused before its values are read (under
     * SPF_SANITIZE, a read past the data would be reported) */
    {
        int64_t rp1[17] = {0};
        for (int r = 1; r <= 16; r++)
            rp1[r] = 1;
        int32_t ci1[1] = {3};
        float v1[1] = {1};
        CHECK_OK(spf_matrix_create_csr(16, 16, 1, rp1, ci1, v1, 0, &a));
        CHECK_OK(frag_format_build(a, SPF_DTYPE_F16, 1, 0, &f));
        CHECK(f.offset[1] == 48);
        memset(f.data, 0xff, 32);
        for (int q = 1; q < 8; q++)
            f.data[32 + q] = (unsigned char)(32 * q);
        f.data[32] = 32;
        float out[256];
        CHECK_STATUS(frag_format_to_dense(&f, out), SPF_ERR_PARSE);
        CHECK_DETAIL("k-step 0 runs past the chunk");
        frag_format_free(&f);
        spf_matrix_free(a);
    }

    /* a bit past the last row, its header consistent */
    int64_t rp[11] = {0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    int32_t ci[1] = {0};
    float v[1] = {1};
    CHECK_OK(spf_matrix_create_csr(10, 10, 1, rp, ci, v, 0, &a));
    CHECK_OK(frag_format_build(a, SPF_DTYPE_F16, 1, 0, &f));
    f.data[31] |= 1u << 2; /* lane 31, slot 2: row 15, column 6 */
    f.data[32]++;
    float out[100];
    CHECK_STATUS(frag_format_to_dense(&f, out), SPF_ERR_PARSE);
    CHECK_DETAIL("past the matrix");
    CHECK_DETAIL("k-step");
    frag_format_free(&f);
    spf_matrix_free(a);

    /* rows or columns at 2^31 - 16 */
    int64_t zeros[2] = {0, 0};
    CHECK_OK(spf_matrix_create_csr(1, INT32_MAX - 15, 0, zeros, NULL, NULL, 0, &a));
    CHECK_STATUS(frag_format_build(a, SPF_DTYPE_F16, 1, 0, &f), SPF_ERR_OVERFLOW);
    spf_matrix_free(a);
}

/* The planner's estimate against the built stream, and the bytes per
 * weight at 70 % sparsity in f16 (frag_format.h: about 0.77, against
 * dense fp16's 2). */
static void test_bytes(void)
{
    double density[512];
    for (int r = 0; r < 512; r++)
        density[r] = 0.3;
    spf_matrix *a = random_csr(512, 1024, density, 11);
    for (int group = 1; group <= 4; group *= 2) {
        frag_format f;
        CHECK_OK(frag_format_build(a, SPF_DTYPE_F16, group, 0, &f));
        double est = frag_format_bytes_estimate(512, 1024, a->nnz, group);
        double bpw = frag_format_bytes_per_weight(&f);
        printf("random 512x1024 at 0.7, f16, group %d: %lld bytes (estimate %.0f, %+.1f %%), "
               "%.3f bytes per weight, %d chunks, largest %lld, built in %.4f s\n",
               group, (long long)f.bytes, est, 100 * (est / (double)f.bytes - 1), bpw, f.chunks,
               (long long)f.largest, f.build_s);
        CHECK_MSG(fabs(est / (double)f.bytes - 1) < 0.10, "group %d: estimate %.0f, built %lld",
                  group, est, (long long)f.bytes);
        CHECK_MSG(bpw > 2 * 0.3 + 40.0 / 256 - 0.01 && bpw < 0.85,
                  "group %d: %.3f bytes per weight", group, bpw);
        CHECK(bpw == (double)f.bytes / (512.0 * 1024.0));
        frag_format_free(&f);
    }
    CHECK(frag_format_bytes_estimate(0, 100, 0, 2) == 0);
    spf_matrix_free(a);
}

int main(int argc, char **argv)
{
    test_shapes();
    test_mapping();
    test_bad_input();
    test_bytes();
    return check_report();
}
