/* NumPy .npy files (format versions 1, 2 and 3): a magic string, a version,
 * a little-endian header length and a Python dict literal giving the dtype,
 * the memory order and the shape, then the raw C-order data. A 2-D array
 * becomes CSR by dropping exact zeros or by magnitude pruning; a 1-D array
 * supplies the values of an .smtx pattern. */
#include "core/alloc.h"
#include "core/error.h"
#include "core/file.h"
#include "core/matrix.h"
#include "io/io.h"
#include "io/token.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const unsigned char MAGIC[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

typedef struct npy_info {
    int itemsize;        /* 2, 4 or 8: float16, float32, float64 */
    int ndim;            /* 0, 1 or 2 */
    int64_t shape[2];
    int64_t count;       /* elements */
    int64_t data_offset; /* byte offset of the data */
} npy_info;

/* The header dict being parsed, with its place in the file for messages. */
typedef struct dict_cursor {
    const char *path;
    const char *text;
    size_t len, pos;
    int64_t base; /* file offset of text[0] */
} dict_cursor;

/* "<path>: byte <offset>: <message>" */
static spf_status fail_at(const char *path, int64_t byte, spf_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static spf_status fail_at(const char *path, int64_t byte, spf_status st, const char *fmt, ...)
{
    char where[32]; /* ": byte <offset>": the path and the message go whole */
    snprintf(where, sizeof where, ": byte %lld", (long long)byte);
    va_list ap;
    va_start(ap, fmt);
    spf_status ret = error_vset_at(st, path, where, fmt, ap);
    va_end(ap);
    return ret;
}

static uint32_t load_le(const unsigned char *p, int bytes)
{
    uint32_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* ------------------------------------------------------ header dict */

static void skip_space(dict_cursor *c)
{
    while (c->pos < c->len && (c->text[c->pos] == ' ' || c->text[c->pos] == '\t' ||
                               c->text[c->pos] == '\n'))
        c->pos++;
}

/* "expected <what>, got <the next bytes of the header>". */
static spf_status dict_fail(dict_cursor *c, const char *what)
{
    int64_t byte = c->base + (int64_t)c->pos;
    if (c->pos >= c->len)
        return fail_at(c->path, byte, SPF_ERR_PARSE, "expected %s, got the end of the header", what);
    token next;
    token_clear(&next);
    size_t end = c->len;
    while (end > c->pos && c->text[end - 1] == ' ')
        end--; /* the header's padding */
    for (size_t i = c->pos; i < end && i <= c->pos + TOKEN_SHOWN; i++)
        token_push(&next, c->text[i]);
    char shown[TOKEN_QUOTED_CAP];
    return fail_at(c->path, byte, SPF_ERR_PARSE, "expected %s, got %s", what,
                   token_quote(&next, shown));
}

/* After spaces: the character ch, consumed. */
static int dict_accept(dict_cursor *c, char ch)
{
    skip_space(c);
    if (c->pos < c->len && c->text[c->pos] == ch) {
        c->pos++;
        return 1;
    }
    return 0;
}

/* A quoted Python string (no escapes: dict keys and dtype strings need none),
 * whole into t however long: a long one is reported as what it is. */
static spf_status dict_string(dict_cursor *c, const char *what, token *t)
{
    skip_space(c);
    size_t start = c->pos;
    if (c->pos >= c->len || (c->text[c->pos] != '\'' && c->text[c->pos] != '"'))
        return dict_fail(c, what);
    char quote = c->text[c->pos++];
    token_clear(t);
    while (c->pos < c->len && c->text[c->pos] != quote)
        token_push(t, c->text[c->pos++]);
    if (c->pos >= c->len) {
        c->pos = start;
        return dict_fail(c, what);
    }
    c->pos++;
    return SPF_OK;
}

static int dict_word(dict_cursor *c, const char *word)
{
    size_t n = strlen(word);
    if (c->len - c->pos >= n && memcmp(c->text + c->pos, word, n) == 0) {
        c->pos += n;
        return 1;
    }
    return 0;
}

/* 'descr': '<f4' and friends. '=' and '|' mean native order, which is
 * little-endian on every host spforge builds for. */
static spf_status descr_parse(dict_cursor *c, npy_info *info)
{
    size_t at = c->pos;
    token t;
    spf_status status = dict_string(c, "a dtype string such as '<f4'", &t);
    if (status != SPF_OK)
        return status;
    int64_t byte = c->base + (int64_t)at;
    const char *d = t.text;
    char shown[TOKEN_QUOTED_CAP];
    if (d[0] == '>')
        return fail_at(c->path, byte, SPF_ERR_UNSUPPORTED, "big-endian data (%s) is not "
                       "supported; save a little-endian array (arr.astype('<f4'))",
                       token_quote(&t, shown));
    if (t.len != 3 || (d[0] != '<' && d[0] != '=' && d[0] != '|') || d[1] != 'f' ||
        (d[2] != '2' && d[2] != '4' && d[2] != '8'))
        return fail_at(c->path, byte, SPF_ERR_UNSUPPORTED, "dtype %s is not supported "
                       "(float16 '<f2', float32 '<f4' or float64 '<f8')", token_quote(&t, shown));
    info->itemsize = d[2] - '0';
    return SPF_OK;
}

static spf_status fortran_parse(dict_cursor *c)
{
    skip_space(c);
    size_t at = c->pos;
    if (dict_word(c, "False"))
        return SPF_OK;
    if (dict_word(c, "True"))
        return fail_at(c->path, c->base + (int64_t)at, SPF_ERR_UNSUPPORTED, "Fortran-order "
                       "arrays are not supported; pass a C-order array "
                       "(numpy.ascontiguousarray)");
    return dict_fail(c, "True or False");
}

/* 'shape': (), (n,) or (m, k); more dimensions are unsupported. */
static spf_status shape_parse(dict_cursor *c, npy_info *info)
{
    if (!dict_accept(c, '('))
        return dict_fail(c, "'(' opening the shape");
    info->ndim = 0;
    while (!dict_accept(c, ')')) {
        skip_space(c);
        size_t at = c->pos;
        int64_t v = 0;
        if (c->pos >= c->len || c->text[c->pos] < '0' || c->text[c->pos] > '9')
            return dict_fail(c, "a dimension (a non-negative integer) or ')'");
        token digits;
        token_clear(&digits);
        while (c->pos < c->len && c->text[c->pos] >= '0' && c->text[c->pos] <= '9') {
            token_push(&digits, c->text[c->pos]);
            v = v > INT32_MAX ? v : v * 10 + (c->text[c->pos] - '0');
            c->pos++;
        }
        char shown[TOKEN_QUOTED_CAP];
        if (v > INT32_MAX)
            return fail_at(c->path, c->base + (int64_t)at, SPF_ERR_OVERFLOW, "dimension %s out "
                           "of range [0, %d] (int32 indices)", token_quote(&digits, shown),
                           INT32_MAX);
        if (info->ndim == 2)
            return fail_at(c->path, c->base + (int64_t)at, SPF_ERR_UNSUPPORTED, "arrays of more "
                           "than 2 dimensions are not supported");
        info->shape[info->ndim++] = v;
        if (!dict_accept(c, ',') && !(skip_space(c), c->pos < c->len && c->text[c->pos] == ')'))
            return dict_fail(c, "',' or ')' in the shape");
    }
    return SPF_OK;
}

/* {'descr': ..., 'fortran_order': ..., 'shape': ..., } with each key once. */
static spf_status dict_parse(dict_cursor *c, npy_info *info)
{
    spf_status status = SPF_OK;
    int seen[3] = {0, 0, 0};
    static const char *const keys[3] = {"descr", "fortran_order", "shape"};
    if (!dict_accept(c, '{'))
        return dict_fail(c, "'{' opening the header dict");
    while (!dict_accept(c, '}')) {
        token key;
        size_t at = c->pos;
        TRY(dict_string(c, "a quoted key or '}'", &key));
        int k = 0;
        while (k < 3 && !(token_whole(&key) && strcmp(key.text, keys[k]) == 0))
            k++;
        if (k == 3 || seen[k]) {
            c->pos = at;
            skip_space(c);
            return dict_fail(c, k == 3 ? "key 'descr', 'fortran_order' or 'shape'"
                                       : "each key once");
        }
        seen[k] = 1;
        if (!dict_accept(c, ':'))
            return dict_fail(c, "':' after the key");
        TRY(k == 0 ? descr_parse(c, info) : k == 1 ? fortran_parse(c) : shape_parse(c, info));
        if (!dict_accept(c, ',') && !(skip_space(c), c->pos < c->len && c->text[c->pos] == '}'))
            return dict_fail(c, "',' or '}' in the header dict");
    }
    for (int k = 0; k < 3; k++)
        if (!seen[k]) {
            char what[48];
            snprintf(what, sizeof what, "key '%s' in the header dict", keys[k]);
            c->pos = c->len;
            return dict_fail(c, what);
        }
fail:
    return status;
}

/* ------------------------------------------------------------ files */

/* Magic, version and header length; *header_at is where the dict starts. */
static spf_status preamble_read(FILE *f, const char *path, int64_t size, uint32_t *header_len,
                                int64_t *header_at)
{
    unsigned char p[12];
    size_t got = fread(p, 1, sizeof p, f);
    if (size == 0)
        return fail_at(path, 0, SPF_ERR_PARSE, "empty file, expected the .npy magic '\\x93NUMPY'");
    if (memcmp(p, MAGIC, got < sizeof MAGIC ? got : sizeof MAGIC) != 0)
        return fail_at(path, 0, SPF_ERR_PARSE, "expected the .npy magic '\\x93NUMPY', got other "
                       "bytes (not a .npy file)");
    if (got < 10)
        return fail_at(path, (int64_t)got, SPF_ERR_PARSE, "expected the .npy version and header "
                       "length, got end of file");
    if (p[6] < 1 || p[6] > 3)
        return fail_at(path, 6, SPF_ERR_UNSUPPORTED, ".npy format version %d.%d is not "
                       "supported (1, 2 or 3)", p[6], p[7]);
    int width = p[6] == 1 ? 2 : 4;
    if (got < (size_t)(8 + width))
        return fail_at(path, (int64_t)got, SPF_ERR_PARSE, "expected the header length, got end "
                       "of file");
    *header_len = load_le(p + 8, width);
    *header_at = 8 + width;
    if ((int64_t)*header_len > size - *header_at)
        return fail_at(path, 8, SPF_ERR_PARSE, "header length %u runs past the end of the file "
                       "(%lld bytes)", *header_len, (long long)size);
    return SPF_OK;
}

/* Open path and read its header; the data that follows must have exactly the
 * size the shape and dtype give. On success *out is positioned at the data. */
static spf_status npy_open(const char *path, FILE **out, npy_info *info)
{
    FILE *f = NULL;
    char *text = NULL;
    int64_t size = 0;
    uint32_t header_len = 0;
    spf_status status = file_open_read(path, &f, &size);
    if (status != SPF_OK)
        return status;
    TRY(preamble_read(f, path, size, &header_len, &info->data_offset));
    text = mem_alloc((size_t)header_len + 1);
    if (!text) {
        status = error_set(SPF_ERR_OUT_OF_MEMORY, path, "header of %u bytes", header_len);
        goto fail;
    }
    if (fseek(f, (long)info->data_offset, SEEK_SET) != 0 || fread(text, 1, header_len, f) != header_len) {
        status = error_set(SPF_ERR_IO, path, "cannot read the header");
        goto fail;
    }
    dict_cursor c = {path, text, header_len, 0, info->data_offset};
    TRY(dict_parse(&c, info));
    info->data_offset += header_len;
    info->count = 1;
    for (int d = 0; d < info->ndim; d++)
        info->count *= info->shape[d]; /* each < 2^31, so at most 2^62 */
    if (info->count > INT64_MAX / info->itemsize) {
        status = fail_at(path, info->data_offset, SPF_ERR_OVERFLOW, "%lld elements overflow a "
                         "byte count", (long long)info->count);
        goto fail;
    }
    int64_t need = info->count * info->itemsize, have = size - info->data_offset;
    if (have < need)
        status = fail_at(path, size, SPF_ERR_PARSE, "data truncated: the shape needs %lld bytes "
                         "of data after the header, the file holds %lld", (long long)need,
                         (long long)have);
    else if (have > need)
        status = fail_at(path, info->data_offset + need, SPF_ERR_PARSE, "%lld trailing bytes "
                         "after the %lld bytes of data the shape gives", (long long)(have - need),
                         (long long)need);
fail:
    mem_free(text);
    if (status == SPF_OK)
        *out = f;
    else
        fclose(f);
    return status;
}

/* IEEE binary16 to binary32; every half is exact in float. */
static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f)
        bits = sign | 0x7f800000u | man << 13; /* inf, NaN */
    else if (exp)
        bits = sign | (exp + 127 - 15) << 23 | man << 13; /* rebias the exponent */
    else {
        float f = (float)man * 0x1p-24f; /* zero and subnormals: man · 2^-24 */
        memcpy(&bits, &f, sizeof bits);
        bits |= sign;
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static float element_decode(const unsigned char *p, int itemsize)
{
    if (itemsize == 2)
        return half_to_float((uint16_t)load_le(p, 2));
    if (itemsize == 4) {
        uint32_t bits = load_le(p, 4);
        float f;
        memcpy(&f, &bits, sizeof f);
        return f;
    }
    uint64_t bits = (uint64_t)load_le(p + 4, 4) << 32 | load_le(p, 4);
    double d;
    memcpy(&d, &bits, sizeof d);
    return (float)d;
}

/* The data as float32, every element finite. */
static spf_status data_read(FILE *f, const char *path, const npy_info *info, float *out)
{
    unsigned char buf[1 << 15];
    int64_t per_chunk = (int64_t)sizeof buf / info->itemsize;
    for (int64_t done = 0; done < info->count;) {
        int64_t n = info->count - done < per_chunk ? info->count - done : per_chunk;
        if (fread(buf, (size_t)info->itemsize, (size_t)n, f) != (size_t)n)
            return fail_at(path, info->data_offset + done * info->itemsize, SPF_ERR_IO,
                           "read failed");
        for (int64_t i = 0; i < n; i++) {
            float v = element_decode(buf + i * info->itemsize, info->itemsize);
            if (!isfinite(v))
                return fail_at(path, info->data_offset + (done + i) * info->itemsize,
                               isnan(v) ? SPF_ERR_PARSE : SPF_ERR_OVERFLOW, "element %lld is %s",
                               (long long)(done + i), isnan(v) ? "NaN" : "infinite or beyond the "
                               "float32 range");
            out[done + i] = v;
        }
        done += n;
    }
    return SPF_OK;
}

/* ------------------------------------------------- dense to CSR */

/* Which elements survive: those with |w| bits above threshold, then the first
 * `ties` equal to it in position order; or, to drop zeros, every w != 0. */
typedef struct keep_rule {
    int drop_zeros;
    uint32_t threshold;
    int64_t ties;
} keep_rule;

static uint32_t magnitude_key(float w)
{
    uint32_t bits;
    memcpy(&bits, &w, sizeof bits);
    return bits & 0x7fffffffu; /* for finite floats, ordered as |w| */
}

static int keep_next(keep_rule *rule, float w)
{
    if (rule->drop_zeros)
        return w != 0.0f;
    uint32_t key = magnitude_key(w);
    if (key > rule->threshold)
        return 1;
    if (key == rule->threshold && rule->ties > 0) {
        rule->ties--;
        return 1;
    }
    return 0;
}

/* In hist (from the top bucket down), the bucket holding the rank-th largest
 * key (rank >= 1); *above gets the count in higher buckets. */
static uint32_t bucket_find(const int64_t *hist, uint32_t buckets, int64_t rank, int64_t *above)
{
    int64_t sum = 0;
    uint32_t b = buckets - 1;
    while (b > 0 && sum + hist[b] < rank)
        sum += hist[b--];
    *above = sum;
    return b;
}

/* The rule keeping exactly `keep` largest magnitudes, ties by position: a
 * radix select over the 31 magnitude bits, high 16 then low 16. */
static spf_status magnitude_rule(const float *w, int64_t count, int64_t keep, keep_rule *rule)
{
    *rule = (keep_rule){0, UINT32_MAX, 0};
    if (keep == 0)
        return SPF_OK;
    int64_t *hist = mem_calloc(1u << 16, sizeof *hist);
    if (!hist)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "pruning histogram");
    int64_t above_high, above_low;
    for (int64_t i = 0; i < count; i++)
        hist[magnitude_key(w[i]) >> 16]++;
    uint32_t high = bucket_find(hist, 1u << 15, keep, &above_high);
    memset(hist, 0, (1u << 16) * sizeof *hist);
    for (int64_t i = 0; i < count; i++)
        if (magnitude_key(w[i]) >> 16 == high)
            hist[magnitude_key(w[i]) & 0xffffu]++;
    uint32_t low = bucket_find(hist, 1u << 16, keep - above_high, &above_low);
    rule->threshold = high << 16 | low;
    rule->ties = keep - above_high - above_low;
    mem_free(hist);
    return SPF_OK;
}

/* The dense w as CSR; limit (read_limit_resolve) bounds the dense array and
 * the CSR arrays together, checked once nnz is known. */
static spf_status dense_to_csr(const char *path, const float *w, int64_t rows, int64_t cols,
                               double sparsity, int64_t limit, spf_matrix **out)
{
    int64_t count = rows * cols, nnz = 0;
    keep_rule rule = {1, 0, 0};
    if (sparsity < 0) {
        for (int64_t i = 0; i < count; i++)
            nnz += w[i] != 0.0f;
    } else {
        nnz = llround((1.0 - sparsity) * (double)count);
        nnz = nnz < 0 ? 0 : nnz > count ? count : nnz;
        spf_status status = magnitude_rule(w, count, nnz, &rule);
        if (status != SPF_OK) {
            error_prefix("%s", path);
            return status;
        }
    }
    int64_t need = bytes_add(bytes_mul(count, (int64_t)sizeof *w), csr_bytes(rows, nnz));
    spf_status status = read_limit_check(path, limit, need, "the dense array and its CSR form");
    if (status != SPF_OK)
        return status;
    spf_matrix *a = NULL;
    if ((status = matrix_alloc(rows, cols, nnz, &a)) != SPF_OK) {
        error_prefix("%s", path);
        return status;
    }
    int64_t n = 0;
    for (int64_t i = 0; i < rows; i++) {
        for (int64_t j = 0; j < cols; j++)
            if (keep_next(&rule, w[i * cols + j])) {
                a->col_idx[n] = (int32_t)j;
                a->values[n++] = w[i * cols + j];
            }
        a->row_ptr[i + 1] = n;
    }
    *out = a;
    return SPF_OK;
}

spf_status npy_read(const char *path, const spf_read_options *o, spf_matrix **out)
{
    FILE *f = NULL;
    float *dense = NULL;
    npy_info info;
    spf_status status = npy_open(path, &f, &info);
    if (status != SPF_OK)
        return status;
    if (info.ndim != 2) {
        status = error_set(SPF_ERR_UNSUPPORTED, path, "a %d-D array; expected a 2-D matrix "
                           "(1-D arrays are values files for .smtx patterns)", info.ndim);
        goto fail;
    }
    /* Before the dense array: it and the row offsets (nnz is not known yet). */
    TRY(read_limit_check(path, o->max_bytes, bytes_add(bytes_mul(info.count, (int64_t)sizeof
                         *dense), csr_bytes(info.shape[0], 0)), "the dense array the header "
                         "declares"));
    dense = mem_alloc_array((size_t)info.count, sizeof *dense);
    if (!dense && info.count) {
        status = error_set(SPF_ERR_OUT_OF_MEMORY, path, "%lld x %lld dense array",
                           (long long)info.shape[0], (long long)info.shape[1]);
        goto fail;
    }
    TRY(data_read(f, path, &info, dense));
    status = dense_to_csr(path, dense, info.shape[0], info.shape[1], o->npy_sparsity,
                          o->max_bytes, out);
fail:
    mem_free(dense);
    fclose(f);
    return status;
}

spf_status npy_read_values(const char *path, int64_t count, float *values)
{
    FILE *f = NULL;
    npy_info info;
    spf_status status = npy_open(path, &f, &info);
    if (status != SPF_OK)
        return status;
    if (info.ndim != 1)
        status = error_set(SPF_ERR_UNSUPPORTED, path, "a %d-D array; a values file is 1-D",
                           info.ndim);
    else if (info.count != count)
        status = error_set(SPF_ERR_PARSE, path, "holds %lld values, expected %lld (one per "
                           "nonzero)", (long long)info.count, (long long)count);
    else
        status = data_read(f, path, &info, values);
    fclose(f);
    return status;
}

spf_status npy_write(const spf_matrix *a, FILE *f)
{
    if (a->cols && a->rows > INT64_MAX / 4 / a->cols)
        return FAIL(SPF_ERR_OVERFLOW, "%lld x %lld float32 array overflows a byte count",
                    (long long)a->rows, (long long)a->cols);
    /* The dense file is the output buffer of a dense conversion: a matrix of
     * a few nonzeros may declare a shape of gigabytes. */
    char shape[64];
    snprintf(shape, sizeof shape, "%lld x %lld", (long long)a->rows, (long long)a->cols);
    spf_status status = budget_check(shape, bytes_mul(a->rows * a->cols, 4), "the dense .npy array");
    if (status != SPF_OK)
        return status;
    unsigned char *row = mem_calloc((size_t)a->cols, 4);
    if (!row && a->cols)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "row of %lld floats", (long long)a->cols);
    char dict[128];
    int n = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': "
                     "(%lld, %lld), }", (long long)a->rows, (long long)a->cols);
    /* version 1: 10 bytes of preamble; pad the header with spaces so the data
     * starts on a 64-byte boundary, newline last, as numpy writes it */
    int header_len = (10 + n + 1 + 63) / 64 * 64 - 10;
    unsigned char preamble[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                                  (unsigned char)(header_len & 0xff), (unsigned char)(header_len >> 8)};
    fwrite(preamble, 1, sizeof preamble, f);
    fprintf(f, "%s%*s\n", dict, header_len - n - 1, "");
    for (int64_t i = 0; i < a->rows; i++) {
        memset(row, 0, (size_t)a->cols * 4);
        for (int64_t k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++) {
            uint32_t bits;
            memcpy(&bits, &a->values[k], sizeof bits);
            for (int b = 0; b < 4; b++)
                row[(size_t)a->col_idx[k] * 4 + (size_t)b] = (unsigned char)(bits >> (8 * b));
        }
        fwrite(row, 4, (size_t)a->cols, f);
    }
    mem_free(row);
    return SPF_OK; /* the caller checks the stream for write errors */
}
