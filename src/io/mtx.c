/* Matrix Market coordinate files: the banner, the size line, 1-based
 * entries; symmetric and skew-symmetric files store one triangle, which is
 * expanded here (an entry of the other triangle is mirrored the same way). */
#include "core/alloc.h"
#include "core/error.h"
#include "core/matrix.h"
#include "io/io.h"
#include "io/text_reader.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum mtx_field { MTX_REAL, MTX_INTEGER, MTX_PATTERN };
enum mtx_symmetry { MTX_GENERAL, MTX_SYMMETRIC, MTX_SKEW };
/* The banner words of the supported fields and symmetries, in enum order. */
static const char *const field_names[] = {"real", "integer", "pattern", NULL};
static const char *const symmetry_names[] = {"general", "symmetric", "skew-symmetric", NULL};

typedef struct mtx_header {
    enum mtx_field field;
    enum mtx_symmetry symmetry;
    int64_t rows, cols, nnz; /* nnz as stored in the file */
} mtx_header;

typedef struct mtx_entry {
    int32_t row, col; /* 0-based */
    float value;
    int32_t mirrored; /* 1 for the expanded twin of a stored entry */
    int64_t line;     /* where the stored entry is, for messages */
} mtx_entry;

static const char BANNER_FORM[] = "'%%MatrixMarket matrix coordinate <field> <symmetry>'";

/* Whether the whole token is expected, ASCII case-insensitively. */
static int word_is(const token *t, const char *expected)
{
    if (!token_whole(t) || t->len != strlen(expected))
        return 0;
    for (size_t i = 0; i < t->len; i++) {
        char c = t->text[i];
        if ((c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c) != expected[i])
            return 0;
    }
    return 1;
}

/* The index of the token among the NULL-terminated names (as word_is), or -1. */
static int word_index(const token *t, const char *const *names)
{
    for (int i = 0; names[i]; i++)
        if (word_is(t, names[i]))
            return i;
    return -1;
}

/* "%%MatrixMarket matrix coordinate <field> <symmetry>" (words after the
 * first are case-insensitive, as in the NIST specification). */
static spf_status banner_read(text_reader *r, mtx_header *h)
{
    token w;
    text_reader_word(r, &w);
    if (w.len == 0 && r->size == 0)
        return text_reader_fail(r, SPF_ERR_PARSE, "empty file, expected the banner %s",
                                BANNER_FORM);
    if (!token_whole(&w) || strcmp(w.text, "%%MatrixMarket") != 0)
        return text_reader_fail_got(r, "the banner '%%MatrixMarket'", &w);
    text_reader_word(r, &w);
    if (!word_is(&w, "matrix"))
        return text_reader_fail_got(r, "'matrix' after '%%MatrixMarket'", &w);
    text_reader_word(r, &w);
    if (word_is(&w, "array"))
        return text_reader_fail(r, SPF_ERR_UNSUPPORTED, "dense 'array' Matrix Market files are "
                                "not supported, only 'coordinate'");
    if (!word_is(&w, "coordinate"))
        return text_reader_fail_got(r, "'coordinate' in the banner", &w);
    text_reader_word(r, &w);
    if (word_is(&w, "complex"))
        return text_reader_fail(r, SPF_ERR_UNSUPPORTED, "complex values are not supported "
                                "(fields: real, integer, pattern)");
    int field = word_index(&w, field_names);
    if (field < 0)
        return text_reader_fail_got(r, "field real, integer or pattern", &w);
    h->field = (enum mtx_field)field;
    text_reader_word(r, &w);
    if (word_is(&w, "hermitian"))
        return text_reader_fail(r, SPF_ERR_UNSUPPORTED, "hermitian matrices are not supported");
    int symmetry = word_index(&w, symmetry_names);
    if (symmetry < 0)
        return text_reader_fail_got(r, "symmetry general, symmetric or skew-symmetric", &w);
    h->symmetry = (enum mtx_symmetry)symmetry;
    return text_reader_end_line(r);
}

static spf_status shape_read(text_reader *r, const spf_read_options *o, mtx_header *h)
{
    spf_status status;
    text_reader_skip_empty_lines(r, '%');
    if ((status = text_reader_index(r, "row count", &h->rows)) != SPF_OK ||
        (status = text_reader_index(r, "column count", &h->cols)) != SPF_OK ||
        (status = text_reader_int(r, "entry count", 0, &h->nnz)) != SPF_OK)
        return status;
    if (h->symmetry != MTX_GENERAL && h->rows != h->cols)
        return text_reader_fail(r, SPF_ERR_PARSE, "a symmetric matrix must be square, got "
                                "%lld x %lld", (long long)h->rows, (long long)h->cols);
    /* Without summing, every entry is a distinct position of the shape. */
    if (o->duplicates == SPF_DUPLICATES_REJECT && h->nnz > h->rows * h->cols)
        return text_reader_fail(r, SPF_ERR_PARSE, "entry count %lld exceeds rows x cols = %lld",
                                (long long)h->nnz, (long long)(h->rows * h->cols));
    /* The smallest entry is "1 1\n" (4 bytes), or "1 1 1\n" with a value; the
     * last one may lack its newline. Bound the count before allocating. */
    int64_t min_bytes = h->field == MTX_PATTERN ? 4 : 6;
    int64_t room = (text_reader_remaining(r) + 1) / min_bytes;
    if (h->nnz > room)
        return text_reader_fail(r, SPF_ERR_PARSE, "the header declares %lld entries, but the "
                                "%lld bytes left hold at most %lld (file truncated?)",
                                (long long)h->nnz, (long long)text_reader_remaining(r),
                                (long long)room);
    return text_reader_end_line(r);
}

/* One "row col [value]" line, 1-based, checked against the shape. */
static spf_status entry_read(text_reader *r, const mtx_header *h, int64_t k, float random,
                             mtx_entry *e)
{
    spf_status status;
    int64_t i, j;
    text_reader_skip_empty_lines(r, '%');
    if (text_reader_peek(r) == EOF)
        return text_reader_fail(r, SPF_ERR_PARSE, "expected entry %lld of %lld, got end of file "
                                "(file truncated)", (long long)k + 1, (long long)h->nnz);
    e->line = r->line;
    if ((status = text_reader_int(r, "row index", 0, &i)) != SPF_OK ||
        (status = text_reader_int(r, "column index", 0, &j)) != SPF_OK)
        return status;
    if (i < 1 || i > h->rows)
        return text_reader_fail(r, SPF_ERR_PARSE, "row index %lld out of range [1, %lld]",
                                (long long)i, (long long)h->rows);
    if (j < 1 || j > h->cols)
        return text_reader_fail(r, SPF_ERR_PARSE, "column index %lld out of range [1, %lld]",
                                (long long)j, (long long)h->cols);
    e->row = (int32_t)(i - 1);
    e->col = (int32_t)(j - 1);
    e->mirrored = 0;
    e->value = random;
    if (h->field == MTX_REAL) {
        TRY(text_reader_float(r, "value", &e->value));
    } else if (h->field == MTX_INTEGER) {
        int64_t v;
        TRY(text_reader_int(r, "integer value", 1, &v));
        e->value = (float)v;
    }
    if (h->symmetry == MTX_SKEW && i == j)
        return text_reader_fail(r, SPF_ERR_INVALID_MATRIX, "diagonal entry (%lld, %lld) in a "
                                "skew-symmetric matrix (its diagonal is zero)",
                                (long long)i, (long long)j);
    return text_reader_end_line(r);
fail:
    return status;
}

/* Every entry of the file, with the twin of each off-diagonal entry of a
 * symmetric file appended after it. */
static spf_status entries_read(text_reader *r, const spf_read_options *o, const mtx_header *h,
                               mtx_entry *e, int64_t *count)
{
    spf_status status = SPF_OK;
    float *random = NULL;
    if (h->field == MTX_PATTERN && h->nnz) {
        random = mem_alloc_array((size_t)h->nnz, sizeof *random);
        if (!random) {
            status = error_set(SPF_ERR_OUT_OF_MEMORY, r->path, "%lld pattern values",
                               (long long)h->nnz);
            goto fail;
        }
        spf_fill_uniform(random, h->nnz, o->seed);
    }
    int64_t n = 0;
    for (int64_t k = 0; k < h->nnz; k++) {
        TRY(entry_read(r, h, k, random ? random[k] : 0.0f, &e[n]));
        if (h->symmetry != MTX_GENERAL && e[n].row != e[n].col) {
            e[n + 1] = (mtx_entry){e[n].col, e[n].row, e[n].value, 1, e[n].line};
            if (h->symmetry == MTX_SKEW)
                e[n + 1].value = -e[n].value;
            n++;
        }
        n++;
    }
    char what[96];
    snprintf(what, sizeof what, "end of file after the %lld entries the header declares",
             (long long)h->nnz);
    TRY(text_reader_end_file(r, '%', what));
    *count = n;
fail:
    mem_free(random);
    return status;
}

static int entry_cmp(const void *pa, const void *pb)
{
    const mtx_entry *a = pa, *b = pb;
    if (a->row != b->row)
        return a->row < b->row ? -1 : 1;
    if (a->col != b->col)
        return a->col < b->col ? -1 : 1;
    if (a->line != b->line)
        return a->line < b->line ? -1 : 1;
    return a->mirrored - b->mirrored;
}

/* Sort, merge or reject repeated positions, and build the CSR matrix. */
static spf_status csr_build(text_reader *r, const spf_read_options *o, const mtx_header *h,
                            mtx_entry *e, int64_t n, spf_matrix **out)
{
    if (n)
        qsort(e, (size_t)n, sizeof *e, entry_cmp);
    int64_t unique = 0;
    for (int64_t k = 0; k < n; k++) {
        mtx_entry *prev = unique ? &e[unique - 1] : NULL;
        if (!prev || prev->row != e[k].row || prev->col != e[k].col) {
            e[unique++] = e[k];
            continue;
        }
        if (o->duplicates == SPF_DUPLICATES_REJECT)
            return text_reader_fail_at(r, e[k].line, SPF_ERR_INVALID_MATRIX, "entry (%d, %d)%s "
                                       "repeats the one on line %lld%s (duplicates are rejected; "
                                       "read with duplicates = SUM to add them)",
                                       e[k].row + 1, e[k].col + 1,
                                       e[k].mirrored ? ", mirrored by symmetry," : "",
                                       (long long)prev->line,
                                       prev->mirrored ? " (mirrored by symmetry)" : "");
        prev->value += e[k].value;
        if (!isfinite(prev->value))
            return text_reader_fail_at(r, e[k].line, SPF_ERR_INVALID_MATRIX, "entry (%d, %d) "
                                       "summed with the one%s on line %lld overflows float32 "
                                       "(the sum of duplicates must be finite)",
                                       e[k].row + 1, e[k].col + 1,
                                       prev->mirrored ? " (mirrored by symmetry)" : "",
                                       (long long)prev->line);
    }
    spf_matrix *a = NULL;
    spf_status status = matrix_alloc(h->rows, h->cols, unique, &a);
    if (status != SPF_OK) {
        error_prefix("%s", r->path);
        return status;
    }
    memset(a->row_ptr, 0, ((size_t)h->rows + 1) * sizeof *a->row_ptr);
    for (int64_t k = 0; k < unique; k++) {
        a->row_ptr[e[k].row + 1]++;
        a->col_idx[k] = e[k].col;
        a->values[k] = e[k].value;
    }
    for (int64_t i = 0; i < h->rows; i++)
        a->row_ptr[i + 1] += a->row_ptr[i];
    *out = a;
    return SPF_OK;
}

spf_status mtx_read(const char *path, const spf_read_options *o, spf_matrix **out)
{
    text_reader r;
    mtx_header h;
    mtx_entry *e = NULL;
    int64_t n = 0;
    spf_status status = text_reader_open(&r, path);
    if (status != SPF_OK)
        return status;
    TRY(banner_read(&r, &h));
    TRY(shape_read(&r, o, &h));
    /* h.nnz is bounded by the file size, so the doubled count cannot overflow. */
    int64_t capacity = h.symmetry == MTX_GENERAL ? h.nnz : 2 * h.nnz;
    int64_t need = bytes_add(bytes_mul(capacity, (int64_t)sizeof *e), csr_bytes(h.rows, capacity));
    if (h.field == MTX_PATTERN)
        need = bytes_add(need, bytes_mul(h.nnz, (int64_t)sizeof(float)));
    TRY(read_limit_check(path, o->max_bytes, need, "the shape and entries the header declares"));
    e = mem_alloc_array((size_t)capacity, sizeof *e);
    if (!e && capacity) {
        status = error_set(SPF_ERR_OUT_OF_MEMORY, path, "%lld entries", (long long)capacity);
        goto fail;
    }
    TRY(entries_read(&r, o, &h, e, &n));
    TRY(csr_build(&r, o, &h, e, n, out));
fail:
    mem_free(e);
    text_reader_close(&r);
    return status;
}

spf_status mtx_write(const spf_matrix *a, FILE *f)
{
    fprintf(f, "%%%%MatrixMarket matrix coordinate real general\n%lld %lld %lld\n",
            (long long)a->rows, (long long)a->cols, (long long)a->nnz);
    for (int64_t i = 0; i < a->rows; i++)
        for (int64_t k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++)
            /* 9 significant digits: enough for every float32 to read back exactly */
            fprintf(f, "%lld %d %.9g\n", (long long)i + 1, a->col_idx[k] + 1,
                    (double)a->values[k]);
    return SPF_OK; /* the caller checks the stream for write errors */
}
