/* The tensor-core sparse format (src/strategy/tc/tc_format.h) on the CPU:
 * every matrix, dtype and placement expands back to the matrix it was
 * built from (values rounded to the dtype); tiles are exactly the
 * non-empty blocks; the build is the same on one thread and on several;
 * the automatic placement condenses a graph and not a pruned layer; the
 * edge cases (empty shapes, empty rows and windows, dense tiles, one
 * nonzero, shapes that do not divide the tile) and an oversized K. */
#include "test_util.h"

#include "core/dtype.h"
#include "core/matrix.h"
#include "strategy/tc/tc_format.h"

/* a as dense floats rounded to dtype (what the format must give back). */
static float *dense_of(const spf_matrix *a, spf_dtype dtype)
{
    float *d = calloc((size_t)(a->rows * a->cols + 1), sizeof *d);
    for (int64_t r = 0; r < a->rows; r++)
        for (int64_t p = a->row_ptr[r]; p < a->row_ptr[r + 1]; p++) {
            uint16_t h;
            float v = a->values[p];
            if (dtype != SPF_DTYPE_F32) {
                dtype_from_float(dtype, &v, &h, 1);
                dtype_to_float(dtype, &h, &v, 1);
            }
            d[r * a->cols + a->col_idx[p]] = v;
        }
    return d;
}

/* Non-empty TC_TILE × TC_TILE blocks, counted the obvious way. */
static int64_t blocks_of(const spf_matrix *a)
{
    int64_t bc = (a->cols + TC_TILE - 1) / TC_TILE, count = 0;
    unsigned char *seen = calloc((size_t)(bc + 1), 1);
    for (int64_t w = 0; w * TC_TILE < a->rows; w++) {
        memset(seen, 0, (size_t)(bc + 1));
        int64_t r1 = (w + 1) * TC_TILE < a->rows ? (w + 1) * TC_TILE : a->rows;
        for (int64_t p = a->row_ptr[w * TC_TILE]; p < a->row_ptr[r1]; p++)
            if (!seen[a->col_idx[p] / TC_TILE]++)
                count++;
    }
    free(seen);
    return count;
}

static int same_format(const tc_format *x, const tc_format *y)
{
    size_t es = dtype_size(x->dtype);
    int same = x->mode == y->mode && x->tiles == y->tiles && x->bytes == y->bytes &&
               !memcmp(x->window_tile, y->window_tile, (size_t)(x->windows + 1) * 8) &&
               !memcmp(x->tile_col, y->tile_col, (size_t)x->tiles * 4) &&
               !memcmp(x->tile_mask, y->tile_mask, (size_t)x->tiles * TC_QUADRANTS * 8) &&
               !memcmp(x->tile_value, y->tile_value, (size_t)(x->tiles + 1) * 8) &&
               !memcmp(x->values, y->values, (size_t)x->tile_value[x->tiles] * es);
    if (same && x->mode == TC_FORMAT_CONDENSED)
        same = !memcmp(x->col_list, y->col_list, (size_t)x->window_col[x->windows] * 4);
    return same;
}

/* One matrix through every dtype and placement. */
static void check_matrix(const char *label, const spf_matrix *a)
{
    const spf_dtype dtypes[] = {SPF_DTYPE_F32, SPF_DTYPE_F16, SPF_DTYPE_BF16};
    const tc_format_mode modes[] = {TC_FORMAT_BLOCKED, TC_FORMAT_CONDENSED, TC_FORMAT_AUTO};
    float *got = malloc((size_t)(a->rows * a->cols + 1) * sizeof *got);
    for (int d = 0; d < 3; d++) {
        float *want = dense_of(a, dtypes[d]);
        for (int m = 0; m < 3; m++) {
            tc_format f, g;
            CHECK_OK(tc_format_build(a, dtypes[d], modes[m], 2, &f));
            CHECK_MSG(f.mode != TC_FORMAT_AUTO, "%s: mode left AUTO", label);
            tc_format_to_dense(&f, got);
            CHECK_MSG(memcmp(got, want, (size_t)(a->rows * a->cols) * sizeof *got) == 0,
                      "%s %s %s: the format does not give the matrix back", label,
                      dtype_name(dtypes[d]), tc_format_mode_name(f.mode));
            CHECK(f.tile_value[f.tiles] >= a->nnz && f.bytes >= a->nnz * (int64_t)dtype_size(f.dtype));
            int64_t align = tc_value_align(f.dtype), counted = 0;
            for (int64_t t = 0; t < f.tiles; t++) { /* 16-byte starts, padding exactly to the next */
                int64_t n = 0;
                for (int q = 0; q < TC_QUADRANTS; q++)
                    n += __builtin_popcountll(f.tile_mask[t * TC_QUADRANTS + q]);
                counted += n;
                CHECK_MSG(f.tile_value[t] % align == 0 &&
                              f.tile_value[t + 1] == f.tile_value[t] + (n + align - 1) / align * align,
                          "%s: tile %lld's values at %lld..%lld for %lld nonzeros", label,
                          (long long)t, (long long)f.tile_value[t], (long long)f.tile_value[t + 1],
                          (long long)n);
            }
            CHECK(counted == a->nnz);
            if (f.mode == TC_FORMAT_BLOCKED)
                CHECK_MSG(f.tiles == blocks_of(a), "%s: %lld tiles, %lld non-empty blocks", label,
                          (long long)f.tiles, (long long)blocks_of(a));
            for (int64_t t = 0; t < f.tiles; t++) /* no empty tile */
                CHECK_MSG(f.tile_value[t + 1] > f.tile_value[t], "%s: empty tile %lld", label,
                          (long long)t);
            CHECK_OK(tc_format_build(a, dtypes[d], modes[m], 1, &g));
            CHECK_MSG(same_format(&f, &g), "%s: one thread built another format", label);
            tc_format_free(&f);
            tc_format_free(&g);
        }
        free(want);
    }
    free(got);
}

static void test_shapes(void)
{
    double density[100];
    for (int i = 0; i < 100; i++) /* rows 16-31 (a whole window) and every 7th row empty */
        density[i] = (i >= 16 && i < 32) || i % 7 == 0 ? 0.0 : 0.05 + 0.9 * (i % 5) / 4.0;
    spf_matrix *a = random_csr(100, 75, density, 3);
    check_matrix("100x75 empty rows and window", a);
    spf_matrix_free(a);

    const int64_t shapes[][2] = {{37, 53}, {1, 1000}, {1000, 3}, {16, 16}, {17, 33}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        char label[64];
        snprintf(label, sizeof label, "uniform %lldx%lld", (long long)shapes[i][0],
                 (long long)shapes[i][1]);
        a = gen_matrix(SPF_GEN_UNIFORM, shapes[i][0], shapes[i][1], 0.7, 10 + i);
        check_matrix(label, a);
        spf_matrix_free(a);
    }
    a = gen_matrix(SPF_GEN_UNIFORM, 48, 40, 0.0, 5); /* every tile full */
    check_matrix("dense 48x40", a);
    tc_format f;
    CHECK_OK(tc_format_build(a, SPF_DTYPE_F16, TC_FORMAT_BLOCKED, 0, &f));
    CHECK(f.tiles == 9 && f.tile_mask[0] == ~(uint64_t)0);
    tc_format_free(&f);
    spf_matrix_free(a);

    int64_t rp[4] = {0, 0, 1, 1};
    int32_t ci[1] = {29};
    float v[1] = {0.375f};
    CHECK_OK(spf_matrix_create_csr(3, 40, 1, rp, ci, v, 0, &a));
    check_matrix("one nonzero", a);
    CHECK_OK(tc_format_build(a, SPF_DTYPE_F32, TC_FORMAT_BLOCKED, 0, &f));
    /* row 1, column 29: tile at column 16, quadrant rows 0-7 / cols 8-15, bit 8·1 + 5 */
    CHECK(f.tiles == 1 && f.tile_col[0] == 16 && f.tile_mask[2] == (uint64_t)1 << 13);
    tc_format_free(&f);
    spf_matrix_free(a);

    const int64_t empty[][2] = {{0, 0}, {0, 7}, {9, 0}, {33, 21}};
    for (size_t i = 0; i < sizeof empty / sizeof empty[0]; i++) {
        int64_t zeros[40] = {0};
        CHECK_OK(spf_matrix_create_csr(empty[i][0], empty[i][1], 0, zeros, NULL, NULL, 0, &a));
        check_matrix("no nonzeros", a);
        CHECK_OK(tc_format_build(a, SPF_DTYPE_F16, TC_FORMAT_AUTO, 0, &f));
        CHECK(f.tiles == 0 && f.windows == (empty[i][0] + 15) / 16);
        tc_format_free(&f);
        spf_matrix_free(a);
    }
}

/* AUTO condenses a power-law graph (a window touches few scattered
 * columns) and not a pruned layer (every block of a window is hit); the
 * bytes per weight of a 50 % layer in fp16 are near the bitmap bound
 * (1.125; the tiles' 16-byte padding and offsets add about 0.08). */
static void test_placement_and_bytes(void)
{
    spf_gen_options g = gen_options(SPF_GEN_RMAT, 4096, 4096, 0.999, 7);
    spf_matrix *graph = NULL;
    CHECK_OK(spf_matrix_generate(&g, &graph));
    tc_format f, blocked;
    CHECK_OK(tc_format_build(graph, SPF_DTYPE_F32, TC_FORMAT_AUTO, 0, &f));
    CHECK_OK(tc_format_build(graph, SPF_DTYPE_F32, TC_FORMAT_BLOCKED, 0, &blocked));
    printf("rmat 4096², nnz %lld: condensed %lld tiles, %lld bytes; blocked %lld tiles, %lld bytes "
           "(%.3f s)\n",
           (long long)graph->nnz, (long long)f.tiles, (long long)f.bytes, (long long)blocked.tiles,
           (long long)blocked.bytes, f.build_s);
    CHECK(f.mode == TC_FORMAT_CONDENSED && f.tiles < blocked.tiles && f.bytes < blocked.bytes);
    tc_format_free(&f);
    tc_format_free(&blocked);
    spf_matrix_free(graph);

    spf_matrix *layer = gen_matrix(SPF_GEN_MAGNITUDE, 512, 512, 0.5, 8);
    CHECK_OK(tc_format_build(layer, SPF_DTYPE_F16, TC_FORMAT_AUTO, 0, &f));
    double bpw = tc_format_bytes_per_weight(&f);
    printf("magnitude 512² at 0.5, f16: %s, %lld tiles, %.3f bytes per weight (dense 2, bitmap bound "
           "%.3f), built in %.4f s\n",
           tc_format_mode_name(f.mode), (long long)f.tiles, bpw, 2 * 0.5 + 1.0 / 8, f.build_s);
    CHECK(f.mode == TC_FORMAT_BLOCKED && bpw > 1.0 && bpw < 1.25);
    tc_format_free(&f);
    spf_matrix_free(layer);
}

static void test_bad_input(void)
{
    spf_matrix *a = NULL;
    int64_t rp[2] = {0, 0};
    CHECK_OK(spf_matrix_create_csr(1, INT32_MAX, 0, rp, NULL, NULL, 0, &a));
    tc_format f;
    CHECK_STATUS(tc_format_build(a, SPF_DTYPE_F16, TC_FORMAT_AUTO, 0, &f), SPF_ERR_OVERFLOW);
    CHECK_DETAIL("int32");
    CHECK_STATUS(tc_format_build(a, (spf_dtype)7, TC_FORMAT_AUTO, 0, &f), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(tc_format_build(NULL, SPF_DTYPE_F16, TC_FORMAT_AUTO, 0, &f),
                 SPF_ERR_INVALID_ARGUMENT);
    spf_matrix_free(a);
}

int main(int argc, char **argv)
{
    test_shapes();
    test_placement_and_bytes();
    test_bad_input();
    return check_report();
}
