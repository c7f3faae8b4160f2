/* DLMC .smtx files (../shared/data/README.md): "rows, cols, nnz", then the
 * rows + 1 CSR offsets on one line and the nnz 0-based column indices on the
 * next. The format holds no values: they come from the seed or a .npy. */
#include "core/alloc.h"
#include "core/error.h"
#include "core/matrix.h"
#include "io/io.h"
#include "io/text_reader.h"

static spf_status header_read(text_reader *r, int64_t *rows, int64_t *cols, int64_t *nnz)
{
    spf_status status;
    if ((status = text_reader_index(r, "row count", rows)) != SPF_OK ||
        (status = text_reader_expect(r, ',')) != SPF_OK ||
        (status = text_reader_index(r, "column count", cols)) != SPF_OK ||
        (status = text_reader_expect(r, ',')) != SPF_OK ||
        (status = text_reader_int(r, "nonzero count", 0, nnz)) != SPF_OK)
        return status;
    if (*nnz > *rows * *cols)
        return text_reader_fail(r, SPF_ERR_PARSE, "nonzero count %lld exceeds rows x cols = %lld",
                                (long long)*nnz, (long long)(*rows * *cols));
    /* Every offset and index takes at least 2 bytes ("0 "), the last one 1:
     * bound the counts by the file size before allocating. */
    int64_t left = text_reader_remaining(r);
    if (*nnz > left || 2 * (*rows + 1) + 2 * *nnz - 1 > left)
        return text_reader_fail(r, SPF_ERR_PARSE, "the header declares %lld offsets and %lld "
                                "indices, but only %lld bytes follow (file truncated?)",
                                (long long)*rows + 1, (long long)*nnz, (long long)left);
    return text_reader_end_line(r);
}

/* Line 2: rows + 1 offsets rising from 0 to nnz. */
static spf_status offsets_read(text_reader *r, spf_matrix *a)
{
    spf_status status;
    for (int64_t i = 0; i <= a->rows; i++) {
        int64_t v;
        if ((status = text_reader_int(r, "row offset", 0, &v)) != SPF_OK)
            return status;
        if (i == 0 && v != 0)
            return text_reader_fail(r, SPF_ERR_PARSE, "the first row offset is %lld, expected 0",
                                    (long long)v);
        if (v > a->nnz)
            return text_reader_fail(r, SPF_ERR_PARSE, "row %lld: offset %lld exceeds nnz = %lld",
                                    (long long)i, (long long)v, (long long)a->nnz);
        if (i > 0 && v < a->row_ptr[i - 1])
            return text_reader_fail(r, SPF_ERR_INVALID_MATRIX, "row %lld: offset %lld is below "
                                    "the previous offset %lld (offsets must not decrease)",
                                    (long long)i - 1, (long long)v, (long long)a->row_ptr[i - 1]);
        a->row_ptr[i] = v;
    }
    if (a->row_ptr[a->rows] != a->nnz)
        return text_reader_fail(r, SPF_ERR_PARSE, "the last row offset is %lld, expected nnz = "
                                "%lld", (long long)a->row_ptr[a->rows], (long long)a->nnz);
    return text_reader_end_line(r);
}

/* Line 3: the column indices, in range and rising strictly within a row. */
static spf_status indices_read(text_reader *r, spf_matrix *a)
{
    spf_status status;
    for (int64_t i = 0; i < a->rows; i++)
        for (int64_t k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++) {
            int64_t c;
            if ((status = text_reader_int(r, "column index", 0, &c)) != SPF_OK)
                return status;
            if (c >= a->cols)
                return text_reader_fail(r, SPF_ERR_PARSE, "row %lld: column index %lld out of "
                                        "range [0, %lld]", (long long)i, (long long)c,
                                        (long long)a->cols - 1);
            if (k > a->row_ptr[i] && c <= a->col_idx[k - 1])
                return text_reader_fail(r, SPF_ERR_INVALID_MATRIX, "row %lld: column %lld %s "
                                        "column %d before it (columns must be sorted and "
                                        "unique within a row)", (long long)i, (long long)c,
                                        c == a->col_idx[k - 1] ? "repeats" : "is below",
                                        a->col_idx[k - 1]);
            a->col_idx[k] = (int32_t)c;
        }
    return a->nnz ? text_reader_end_line(r) : SPF_OK;
}

static spf_status values_fill(const char *path, const spf_read_options *o, spf_matrix *a)
{
    if (!o->values_path) {
        spf_fill_uniform(a->values, a->nnz, o->seed);
        return SPF_OK;
    }
    spf_status status = npy_read_values(o->values_path, a->nnz, a->values);
    if (status != SPF_OK)
        error_prefix("%s: values file", path);
    return status;
}

spf_status smtx_read(const char *path, const spf_read_options *o, spf_matrix **out)
{
    text_reader r;
    spf_matrix *a = NULL;
    int64_t rows, cols, nnz;
    spf_status status = text_reader_open(&r, path);
    if (status != SPF_OK)
        return status;
    TRY(header_read(&r, &rows, &cols, &nnz));
    TRY(read_limit_check(path, o->max_bytes, csr_bytes(rows, nnz),
                         "the CSR arrays the header declares"));
    if ((status = matrix_alloc(rows, cols, nnz, &a)) != SPF_OK) {
        error_prefix("%s", path);
        goto fail;
    }
    TRY(offsets_read(&r, a));
    TRY(indices_read(&r, a));
    TRY(text_reader_end_file(&r, 0, "end of file after the column indices"));
    TRY(values_fill(path, o, a));
    text_reader_close(&r);
    *out = a;
    return SPF_OK;
fail:
    spf_matrix_free(a);
    text_reader_close(&r);
    return status;
}

spf_status smtx_write(const spf_matrix *a, FILE *f)
{
    fprintf(f, "%lld, %lld, %lld\n", (long long)a->rows, (long long)a->cols, (long long)a->nnz);
    for (int64_t i = 0; i <= a->rows; i++)
        fprintf(f, i ? " %lld" : "%lld", (long long)a->row_ptr[i]);
    fputc('\n', f);
    for (int64_t k = 0; k < a->nnz; k++)
        fprintf(f, k ? " %d" : "%d", a->col_idx[k]);
    fputc('\n', f);
    return SPF_OK; /* the caller checks the stream for write errors */
}
