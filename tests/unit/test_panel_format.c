/* The panel format of the panel strategy (src/strategy/panel/panel_format.h)
 * and its kernel's host-side configuration (panel_kernel.h) on the CPU:
 * every matrix, dtype and panel width gives, run by run, exactly the
 * entries panel_format.h describes (rebuilt here from the CSR alone) in
 * bank order, and reads back to the matrix rounded to the dtype; the offsets hold their
 * invariants; one thread and several build the same bytes; bad arguments
 * and corrupted formats are refused with a message naming where; the
 * bytes per weight at 90 % sparsity; config names, refusals and the rows
 * per block of a one-wave grid. */
#include "test_util.h"

#include "core/dtype.h"
#include "core/matrix.h"
#include "strategy/panel/panel_format.h"
#include "strategy/panel/panel_kernel.h"

#include <stdint.h>

/* The entries of (panel p, row r) as panel_format.h defines them, from a
 * alone: row r's nonzeros with a column in [p·width, (p + 1)·width), in
 * column order, each (value bits << 16) | (column - p·width). Returns the
 * count. */
static int64_t expected_run(const spf_matrix *a, spf_dtype dtype, int32_t width, int32_t p,
                            int64_t r, uint32_t *out)
{
    int64_t n = 0;
    for (int64_t i = a->row_ptr[r]; i < a->row_ptr[r + 1]; i++) {
        int64_t c = a->col_idx[i];
        if (c < (int64_t)p * width || c >= (int64_t)(p + 1) * width)
            continue;
        uint16_t bits;
        dtype_from_float(dtype, &a->values[i], &bits, 1);
        out[n++] = (uint32_t)bits << 16 | (uint32_t)(c - (int64_t)p * width);
    }
    return n;
}

static int by_column(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x & 0xffffu, b = *(const uint32_t *)y & 0xffffu;
    return (a > b) - (a < b);
}

/* Bank order (panel_format.h), checked by what it promises rather than by
 * a second implementation: each group of eight from the run's start holds
 * as many distinct residues of the column mod 8 as it can (its size, or
 * the residues left before it), and within a residue the columns ascend. */
static int bank_ordered(const uint32_t *run, int64_t n)
{
    int64_t left[8] = {0}, last[8];
    for (int64_t i = 0; i < n; i++)
        left[run[i] & 7]++;
    for (int b = 0; b < 8; b++)
        last[b] = -1;
    for (int64_t g = 0; g < n; g += 8) {
        int residues = 0, distinct = 0, in_group[8] = {0};
        for (int b = 0; b < 8; b++)
            residues += left[b] > 0;
        int64_t size = n - g < 8 ? n - g : 8;
        for (int64_t i = g; i < g + size; i++) {
            int b = (int)(run[i] & 7);
            if ((int64_t)(run[i] & 0xffffu) <= last[b])
                return 0;
            last[b] = run[i] & 0xffffu;
            distinct += !in_group[b]++;
            left[b]--;
        }
        if (distinct != (size < residues ? size : residues))
            return 0;
    }
    return 1;
}

static void check_format(const char *label, const spf_matrix *a, spf_dtype dtype, int32_t width)
{
    panel_format f, g;
    CHECK_OK(panel_format_build(a, dtype, width, 1, &f));
    CHECK_OK(panel_format_build(a, dtype, width, 3, &g));
    int64_t panels = (a->cols + width - 1) / width, cells = panels * a->rows;
    CHECK(f.panels == panels && f.width == width && f.nnz == a->nnz && f.dtype == dtype);
    CHECK_MSG(f.ptr[0] == 0 && f.ptr[cells] == a->nnz, "%s width %d: offsets %d .. %d", label,
              width, f.ptr[0], f.ptr[cells]);
    CHECK(f.bytes == a->nnz * 4 + (cells + 1) * 4);
    /* one thread and three: the same offsets and entries */
    CHECK(memcmp(f.ptr, g.ptr, (size_t)(cells + 1) * sizeof *f.ptr) == 0);
    CHECK(a->nnz == 0 || memcmp(f.entry, g.entry, (size_t)a->nnz * sizeof *f.entry) == 0);
    uint32_t *run = malloc((size_t)(a->cols + 1) * sizeof *run);
    uint32_t *sorted = malloc((size_t)(a->cols + 1) * sizeof *sorted);
    int bad = 0;
    for (int32_t p = 0; p < f.panels && !bad; p++)
        for (int64_t r = 0; r < a->rows && !bad; r++) {
            int64_t n = expected_run(a, dtype, width, p, r, run);
            int32_t begin = f.ptr[p * a->rows + r], end = f.ptr[p * a->rows + r + 1];
            if (end - begin != n || !bank_ordered(f.entry + begin, n))
                bad = 1;
            CHECK_MSG(!bad, "%s %s width %d: the run of panel %d, row %lld is not in bank "
                      "order", label, dtype_name(dtype), width, p, (long long)r);
            if (!bad && n) {
                memcpy(sorted, f.entry + begin, (size_t)n * 4);
                qsort(sorted, (size_t)n, 4, by_column);
                bad = memcmp(sorted, run, (size_t)n * 4) != 0;
                CHECK_MSG(!bad, "%s %s width %d: the entries of panel %d, row %lld differ", label,
                          dtype_name(dtype), width, p, (long long)r);
            }
        }
    free(run);
    free(sorted);
    /* read back: the matrix with its values rounded to the dtype */
    float *dense = malloc((size_t)(a->rows * a->cols + 1) * sizeof *dense);
    float *want = calloc((size_t)(a->rows * a->cols + 1), sizeof *want);
    for (int64_t r = 0; r < a->rows; r++)
        for (int64_t i = a->row_ptr[r]; i < a->row_ptr[r + 1]; i++) {
            float v = a->values[i];
            dtype_round(dtype, &v, 1);
            want[r * a->cols + a->col_idx[i]] = v;
        }
    CHECK_OK(panel_format_to_dense(&f, dense));
    CHECK_MSG(memcmp(dense, want, (size_t)(a->rows * a->cols) * sizeof *dense) == 0,
              "%s %s width %d: read back differs", label, dtype_name(dtype), width);
    free(dense);
    free(want);
    panel_format_free(&f);
    panel_format_free(&g);
}

static void test_round_trips(void)
{
    double d1[37], d2[130], d3[1000], d4[40];
    for (int i = 0; i < 37; i++)
        d1[i] = 0.3;
    for (int i = 0; i < 130; i++) /* every 5th row empty, one row full */
        d2[i] = i % 5 == 0 ? 0.0 : i == 7 ? 1.0 : 0.1 + 0.1 * (i % 4);
    for (int i = 0; i < 1000; i++)
        d3[i] = 0.6;
    for (int i = 0; i < 40; i++)
        d4[i] = 0.1;
    spf_matrix *m[] = {random_csr(37, 53, d1, 1), random_csr(130, 257, d2, 2),
                       random_csr(1000, 3, d3, 3), random_csr(40, 70000, d4, 4), one_nonzero_csr(),
                       random_csr(0, 17, d1, 5), random_csr(5, 0, d1, 6)};
    const char *names[] = {"37x53", "130x257 empty rows", "1000x3", "40x70000", "3x1000 one",
                           "0x17", "5x0"};
    const int32_t widths[] = {8, 16, 24, 1000, 2048, 65536};
    for (size_t i = 0; i < sizeof m / sizeof *m; i++)
        for (size_t w = 0; w < sizeof widths / sizeof *widths; w++) {
            check_format(names[i], m[i], SPF_DTYPE_F16, widths[w]);
            check_format(names[i], m[i], SPF_DTYPE_BF16, widths[w]);
        }
    for (size_t i = 0; i < sizeof m / sizeof *m; i++)
        spf_matrix_free(m[i]);
}

static void test_refusals(void)
{
    double d[8] = {0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5};
    spf_matrix *a = random_csr(8, 40, d, 9);
    panel_format f;
    CHECK_STATUS(panel_format_build(a, SPF_DTYPE_F32, 16, 1, &f), SPF_ERR_INVALID_ARGUMENT);
    CHECK(strstr(spf_last_error(), "f32") != NULL);
    CHECK_STATUS(panel_format_build(a, SPF_DTYPE_F16, 0, 1, &f), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(panel_format_build(a, SPF_DTYPE_F16, PANEL_MAX_WIDTH + 1, 1, &f),
                 SPF_ERR_INVALID_ARGUMENT);
    CHECK(strstr(spf_last_error(), "width") != NULL);

    /* corruptions the reader must name, never reading out of bounds */
    CHECK_OK(panel_format_build(a, SPF_DTYPE_F16, 16, 1, &f));
    float *dense = malloc(8 * 40 * sizeof *dense);
    int32_t e = f.ptr[3]; /* row 3 of panel 0 has nonzeros at half density */
    CHECK(f.ptr[4] - e >= 2);
    uint32_t saved = f.entry[e];
    f.entry[e] = (f.entry[e] & 0xffff0000u) | 16u; /* a column past the panel */
    CHECK_STATUS(panel_format_to_dense(&f, dense), SPF_ERR_PARSE);
    CHECK(strstr(spf_last_error(), "panel 0, row 3") != NULL);
    f.entry[e] = saved;
    uint32_t second = f.entry[e + 1];
    f.entry[e + 1] = (f.entry[e + 1] & 0xffff0000u) | (saved & 0xffffu); /* a column twice */
    CHECK_STATUS(panel_format_to_dense(&f, dense), SPF_ERR_PARSE);
    CHECK(strstr(spf_last_error(), "twice") != NULL);
    f.entry[e + 1] = second;
    int32_t was = f.ptr[5];
    f.ptr[5] = f.ptr[4] - 1; /* offsets going back */
    CHECK_STATUS(panel_format_to_dense(&f, dense), SPF_ERR_PARSE);
    f.ptr[5] = (int32_t)f.nnz + 5; /* past the entries */
    CHECK_STATUS(panel_format_to_dense(&f, dense), SPF_ERR_PARSE);
    f.ptr[5] = was;
    CHECK_OK(panel_format_to_dense(&f, dense));
    free(dense);
    panel_format_free(&f);
    panel_format_free(&f); /* a zeroed format is accepted */
    spf_matrix_free(a);
}

/* Four bytes a nonzero: 0.4 a weight at 90 % sparsity (dense fp16: 2);
 * and the groups of bank order. */
static void test_bytes(void)
{
    double d[256];
    for (int i = 0; i < 256; i++)
        d[i] = 0.1;
    spf_matrix *a = random_csr(256, 4096, d, 21);
    panel_format f;
    CHECK_OK(panel_format_build(a, SPF_DTYPE_BF16, 2048, 0, &f));
    double bpw = panel_format_bytes_per_weight(&f);
    CHECK_MSG(bpw > 0.38 && bpw < 0.42, "%.3f bytes per weight at 90 %%", bpw);
    /* bank order at work: a group of eight takes as many wavefronts as its
     * most repeated bank; about 1.3 on average here (random columns: about
     * 2.9; bank order cannot reach 1, as the residues' counts differ) */
    int64_t groups = 0, wavefronts = 0;
    for (int64_t cell = 0; cell < (int64_t)f.panels * f.rows; cell++)
        for (int32_t g = f.ptr[cell]; g + 8 <= f.ptr[cell + 1]; g += 8) {
            int times[8] = {0}, most = 0;
            for (int i = 0; i < 8; i++)
                if (++times[f.entry[g + i] & 7] > most)
                    most = times[f.entry[g + i] & 7];
            groups++, wavefronts += most;
        }
    CHECK_MSG(groups > 0 && wavefronts <= 1.4 * (double)groups, "%.2f wavefronts a group",
              (double)wavefronts / (double)(groups > 0 ? groups : 1));
    printf("bank order: %.3f wavefronts a group of eight at 90 %% sparsity\n",
           (double)wavefronts / (double)(groups > 0 ? groups : 1));
    panel_format_free(&f);
    spf_matrix_free(a);
}

static void test_configs(void)
{
    panel_config c = {16, 8, 2048, 32, 0}, back;
    char name[64];
    panel_config_name(&c, name, sizeof name);
    CHECK(strcmp(name, "nc16_w8_p2048_r32") == 0);
    CHECK_OK(panel_config_from_name(name, &back));
    CHECK(back.nc == 16 && back.warps == 8 && back.width == 2048 && back.rows == 32 && !back.mma);
    CHECK_STATUS(panel_config_from_name("nc12_w8_p2048_r32", &back), SPF_ERR_PARSE);
    CHECK_STATUS(panel_config_from_name("nc16_w6_p2048_r32", &back), SPF_ERR_PARSE);
    CHECK_STATUS(panel_config_from_name("nc16_w8_p2050_r32", &back), SPF_ERR_PARSE);
    CHECK_STATUS(panel_config_from_name("nc16_w8_p2048_r0", &back), SPF_ERR_PARSE);
    CHECK_STATUS(panel_config_from_name("nc16_w8_p2048_r32x", &back), SPF_ERR_PARSE);
    CHECK(panel_config_refusal(&c, 1024) != NULL); /* a format of another width */
    CHECK(panel_config_refusal(&c, 2048) == NULL);
    CHECK(panel_config_smem(&c) == 2 * 2048 * 16 * 2 + 32 * 16 * 4);
    CHECK(panel_nc_for(0, 1) == 8 && panel_nc_for(0, 8) == 8 && panel_nc_for(0, 9) == 16 &&
          panel_nc_for(0, 16) == 16 && panel_nc_for(0, 17) == 32 && panel_nc_for(0, 4096) == 32);
    CHECK(panel_nc_for(1, 1) == 16 && panel_nc_for(1, 16) == 16 && panel_nc_for(1, 17) == 32 &&
          panel_nc_for(1, 33) == 64 && panel_nc_for(1, 4096) == 64);
    /* the tensor-core engine */
    panel_config m = {64, 16, 512, 64, 1};
    panel_config_name(&m, name, sizeof name);
    CHECK(strcmp(name, "mma_nc64_w16_p512_r64") == 0);
    CHECK_OK(panel_config_from_name(name, &back));
    CHECK(back.mma == 1 && back.nc == 64 && back.warps == 16 && back.width == 512 &&
          back.rows == 64);
    CHECK_STATUS(panel_config_from_name("mma_nc8_w8_p2048_r32", &back), SPF_ERR_PARSE);
    CHECK(strstr(spf_last_error(), "tensor cores") != NULL);
    CHECK_STATUS(panel_config_from_name("nc64_w8_p2048_r32", &back), SPF_ERR_PARSE);
    CHECK_STATUS(panel_config_from_name("mma__nc16_w8_p2048_r32", &back), SPF_ERR_PARSE);
    /* one wave: 132 SMs × 1 block over 11008 rows → 84 rows a block */
    CHECK(panel_rows_for(11008, 16, 16, 132, 1) == 84);
    /* N = 64 in two column blocks: half the row blocks each */
    CHECK(panel_rows_for(11008, 64, 32, 132, 1) == 167);
    CHECK(panel_rows_for(100, 16, 16, 132, 2) == 1);
    CHECK(panel_rows_for(1 << 20, 16, 16, 132, 1) == PANEL_MAX_ROWS);
    CHECK(panel_rows_for(4096, 1 << 22, 32, 132, 1) == PANEL_MAX_ROWS); /* more blocks than slots */
}

int main(int argc, char **argv)
{
    test_round_trips();
    test_refusals();
    test_bytes();
    test_configs();
    return check_report();
}
