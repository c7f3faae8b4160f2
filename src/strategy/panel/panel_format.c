/* Three passes (panel_format.h says what the format holds): each row's
 * count per panel, rows in parallel; the offsets by a prefix sum; the
 * entries written and put in bank order, rows in parallel again. */
#include "strategy/panel/panel_format.h"

#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/matrix.h"
#include "core/parallel.h"
#include "gpu/timing.h"

#include <string.h>

enum { ROW_GRAIN = 256 };

typedef struct build {
    const spf_matrix *a;
    panel_format *f;
} build;

void panel_format_free(panel_format *f)
{
    if (!f)
        return;
    mem_free(f->ptr);
    mem_free(f->entry);
    memset(f, 0, sizeof *f);
}

double panel_format_bytes_per_weight(const panel_format *f)
{
    double weights = (double)f->rows * (double)f->cols;
    return weights > 0 ? (double)f->bytes / weights : 0.0;
}

/* ptr[p·rows + r + 1] = row r's nonzeros in panel p (the prefix sum
 * follows). */
static spf_status count_rows(void *ctx, int64_t begin, int64_t end, int worker)
{
    (void)worker;
    const build *b = ctx;
    const spf_matrix *a = b->a;
    panel_format *f = b->f;
    for (int64_t r = begin; r < end; r++)
        for (int64_t i = a->row_ptr[r]; i < a->row_ptr[r + 1]; i++)
            f->ptr[(int64_t)(a->col_idx[i] / f->width) * f->rows + r + 1]++;
    return SPF_OK;
}

/* The run's entries (in column order) put in bank order
 * (panel_format.h): each group of eight takes one entry from each of the
 * residues of the column mod 8 with the most entries left (fewer than
 * eight only when fewer residues are left), ascending columns within a
 * residue. scratch holds n entries. */
static void bank_order(uint32_t *run, int32_t n, uint32_t *scratch)
{
    int32_t count[8] = {0}, start[8], taken[8] = {0};
    for (int32_t i = 0; i < n; i++)
        count[run[i] & 7]++;
    for (int b = 0, at = 0; b < 8; b++)
        start[b] = at, at += count[b];
    int32_t fill[8];
    memcpy(fill, start, sizeof fill);
    for (int32_t i = 0; i < n; i++)
        scratch[fill[run[i] & 7]++] = run[i];
    for (int32_t at = 0; at < n;) {
        int order[8]; /* residues by entries left, most first */
        for (int b = 0; b < 8; b++) {
            int q = b;
            for (; q > 0 && count[order[q - 1]] - taken[order[q - 1]] < count[b] - taken[b]; q--)
                order[q] = order[q - 1];
            order[q] = b;
        }
        int32_t group_end = n - at < 8 ? n : at + 8;
        while (at < group_end) /* a second round only when fewer residues are left */
            for (int q = 0; q < 8 && at < group_end; q++) {
                int b = order[q];
                if (taken[b] < count[b])
                    run[at++] = scratch[start[b] + taken[b]++];
            }
    }
}

/* Columns are sorted within a row, so its nonzeros of one panel are
 * consecutive, and so are the panels. */
static spf_status write_rows(void *ctx, int64_t begin, int64_t end, int worker)
{
    (void)worker;
    const build *b = ctx;
    const spf_matrix *a = b->a;
    panel_format *f = b->f;
    uint32_t *scratch = mem_alloc((size_t)f->width * sizeof *scratch);
    if (!scratch)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "panel format: a run of %d entries", f->width);
    for (int64_t r = begin; r < end; r++) {
        int64_t i = a->row_ptr[r];
        for (int32_t p = 0; p < f->panels; p++) {
            int32_t at = f->ptr[(int64_t)p * f->rows + r];
            for (; i < a->row_ptr[r + 1] && a->col_idx[i] / f->width == p; i++, at++) {
                uint16_t bits = 0;
                dtype_from_float(f->dtype, &a->values[i], &bits, 1);
                f->entry[at] = (uint32_t)bits << 16 | (uint32_t)(a->col_idx[i] % f->width);
            }
            int32_t first = f->ptr[(int64_t)p * f->rows + r];
            bank_order(f->entry + first, at - first, scratch);
        }
    }
    mem_free(scratch);
    return SPF_OK;
}

spf_status panel_format_build(const spf_matrix *a, spf_dtype dtype, int32_t width, int threads,
                              panel_format *out)
{
    error_clear();
    CHECK_ARG(a != NULL && out != NULL);
    memset(out, 0, sizeof *out);
    if (dtype != SPF_DTYPE_F16 && dtype != SPF_DTYPE_BF16)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "panel format: dtype %s (expected f16 or bf16)",
                    dtype_name(dtype));
    if (width < 1 || width > PANEL_MAX_WIDTH)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "panel format: width %d (expected 1 to %d)", width,
                    PANEL_MAX_WIDTH);
    int64_t panels = (a->cols + width - 1) / width;
    if (a->nnz >= INT32_MAX || (a->rows > 0 && panels >= INT32_MAX / a->rows))
        return FAIL(SPF_ERR_OVERFLOW, "panel format: %lld nonzeros in %lld panels of %lld rows "
                    "reach the kernel's int32 offsets", (long long)a->nnz, (long long)panels,
                    (long long)a->rows);
    double t0 = timing_now_s();
    panel_format *f = out;
    f->rows = a->rows, f->cols = a->cols, f->nnz = a->nnz, f->dtype = dtype;
    f->width = width, f->panels = (int32_t)panels;
    spf_status status = SPF_OK;
    int64_t cells = panels * a->rows;
    f->ptr = mem_calloc((size_t)cells + 1, sizeof *f->ptr);
    f->entry = mem_alloc(((size_t)a->nnz + 1) * sizeof *f->entry);
    if (!f->ptr || !f->entry)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "a panel format of %lld nonzeros", (long long)a->nnz);
    build b = {a, f};
    TRY(parallel_for(a->rows, ROW_GRAIN, threads, count_rows, &b));
    for (int64_t i = 0; i < cells; i++)
        f->ptr[i + 1] += f->ptr[i];
    TRY(parallel_for(a->rows, ROW_GRAIN, threads, write_rows, &b));
    f->bytes = (int64_t)((size_t)a->nnz * sizeof *f->entry + ((size_t)cells + 1) * sizeof *f->ptr);
    f->build_s = timing_now_s() - t0;
    return SPF_OK;
fail:
    panel_format_free(f);
    return status;
}

spf_status panel_format_to_dense(const panel_format *f, float *dense)
{
    error_clear();
    memset(dense, 0, (size_t)(f->rows * f->cols) * sizeof *dense);
    int64_t cells = (int64_t)f->panels * f->rows;
    if (f->ptr[0] != 0 || f->ptr[cells] != f->nnz)
        return FAIL(SPF_ERR_PARSE, "panel format: offsets run from %d to %d, expected 0 to %lld",
                    f->ptr[0], f->ptr[cells], (long long)f->nnz);
    /* seen[col] = 1 + the last run that held col: a column twice in a run
     * is refused */
    int64_t *seen = mem_calloc((size_t)f->width + 1, sizeof *seen);
    if (!seen)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "panel format: reading a panel of %d columns", f->width);
    spf_status status = SPF_OK;
    for (int32_t p = 0; p < f->panels; p++) {
        int64_t first = (int64_t)p * f->width;
        int64_t cols = f->cols - first < f->width ? f->cols - first : f->width;
        for (int64_t r = 0; r < f->rows; r++) {
            int32_t begin = f->ptr[p * f->rows + r], end = f->ptr[p * f->rows + r + 1];
            if (end < begin || begin < 0 || end > f->nnz)
                FAIL_GOTO(SPF_ERR_PARSE, "panel format, panel %d, row %lld: entries %d to %d "
                          "(of %lld)", p, (long long)r, begin, end, (long long)f->nnz);
            int64_t stamp = (int64_t)p * f->rows + r + 1;
            for (int32_t e = begin; e < end; e++) {
                int64_t col = f->entry[e] & 0xffffu;
                if (col >= cols || seen[col] == stamp)
                    FAIL_GOTO(SPF_ERR_PARSE, "panel format, panel %d, row %lld: column %lld %s "
                              "(the panel has %lld)", p, (long long)r, (long long)col,
                              col >= cols ? "outside the panel" : "twice", (long long)cols);
                seen[col] = stamp;
                uint16_t bits = (uint16_t)(f->entry[e] >> 16);
                dtype_to_float(f->dtype, &bits, &dense[r * f->cols + first + col], 1);
            }
        }
    }
fail:
    mem_free(seen);
    return status;
}
