/* The buffered, line-counting reader of the text formats. Numbers are parsed
 * from whole tokens so trailing garbage ("12x") is caught, and every failure
 * reports the token it saw. */
#include "io/text_reader.h"

#include "core/error.h"
#include "core/file.h"
#include "io/io.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

spf_status text_reader_open(text_reader *r, const char *path)
{
    r->file = NULL;
    r->path = path;
    r->offset = 0;
    r->line = 1;
    r->read_errno = 0;
    r->pos = r->len = 0;
    return file_open_read(path, &r->file, &r->size);
}

void text_reader_close(text_reader *r)
{
    if (r->file)
        fclose(r->file);
    r->file = NULL;
}

int64_t text_reader_remaining(const text_reader *r) { return r->size - r->offset; }

int text_reader_refill(text_reader *r)
{
    if (r->pos < r->len)
        return r->buf[r->pos];
    if (!r->file || r->read_errno)
        return EOF;
    r->len = fread(r->buf, 1, sizeof r->buf, r->file);
    r->pos = 0;
    if (r->len == 0) {
        if (ferror(r->file))
            r->read_errno = errno ? errno : EIO;
        return EOF;
    }
    return r->buf[0];
}

static void advance(text_reader *r)
{
    if (r->buf[r->pos++] == '\n')
        r->line++;
    r->offset++;
}

static int is_blank(int c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

static void skip_blanks(text_reader *r)
{
    while (is_blank(text_reader_peek(r)))
        advance(r);
}

static void skip_rest_of_line(text_reader *r)
{
    int c;
    while ((c = text_reader_peek(r)) != EOF) {
        advance(r);
        if (c == '\n')
            return;
    }
}

void text_reader_skip_empty_lines(text_reader *r, int comment)
{
    for (;;) {
        skip_blanks(r);
        int c = text_reader_peek(r);
        if (c == '\n' || (comment && c == comment))
            skip_rest_of_line(r);
        else
            return;
    }
}

static spf_status fail_va(text_reader *r, int64_t line, spf_status st, const char *fmt,
                          va_list ap)
{
    char where[32]; /* ":<line>": the path and the message go to error_vset_at whole */
    snprintf(where, sizeof where, ":%lld", (long long)line);
    return error_vset_at(st, r->path, where, fmt, ap);
}

spf_status text_reader_fail(text_reader *r, spf_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    spf_status ret = fail_va(r, r->line, st, fmt, ap);
    va_end(ap);
    return ret;
}

spf_status text_reader_fail_at(text_reader *r, int64_t line, spf_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    spf_status ret = fail_va(r, line, st, fmt, ap);
    va_end(ap);
    return ret;
}

/* "expected <what>, got <what is there>"; a read error becomes SPF_ERR_IO. */
spf_status text_reader_fail_got(text_reader *r, const char *what, const token *t)
{
    char shown[TOKEN_QUOTED_CAP];
    if (t->len > 0)
        return text_reader_fail(r, SPF_ERR_PARSE, "expected %s, got %s", what,
                                token_quote(t, shown));
    int c = text_reader_peek(r);
    if (c == EOF && r->read_errno)
        return text_reader_fail(r, SPF_ERR_IO, "read failed: %s", strerror(r->read_errno));
    if (c == EOF)
        return text_reader_fail(r, SPF_ERR_PARSE, "expected %s, got end of file%s", what,
                                r->size == 0 ? " (empty file)" : "");
    if (c == '\n')
        return text_reader_fail(r, SPF_ERR_PARSE, "expected %s, got end of line", what);
    token one;
    token_clear(&one);
    token_push(&one, (char)c);
    return text_reader_fail(r, SPF_ERR_PARSE, "expected %s, got %s", what,
                            token_quote(&one, shown));
}

void text_reader_word(text_reader *r, token *t)
{
    skip_blanks(r);
    token_clear(t);
    int c;
    while ((c = text_reader_peek(r)) != EOF && c != '\n' && c != ',' && !is_blank(c)) {
        token_push(t, (char)c);
        advance(r);
    }
}

spf_status text_reader_int(text_reader *r, const char *what, int allow_negative, int64_t *out)
{
    token t;
    text_reader_word(r, &t);
    const char *tok = t.text;
    size_t len = t.stored;
    size_t i = (allow_negative && len > 1 && tok[0] == '-') ? 1 : 0;
    if (len == 0 || i == len)
        return text_reader_fail_got(r, what, &t);
    size_t digits = i;
    while (digits < len && tok[digits] >= '0' && tok[digits] <= '9')
        digits++;
    if (digits < len || !token_whole(&t))
        return text_reader_fail_got(r, what, &t);
    uint64_t limit = i ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, v = 0;
    for (; i < len; i++) {
        unsigned d = (unsigned)(tok[i] - '0');
        if (v > (limit - d) / 10) {
            char shown[TOKEN_QUOTED_CAP];
            return text_reader_fail(r, SPF_ERR_OVERFLOW, "%s %s out of range [%s, %lld]", what,
                                    token_quote(&t, shown), allow_negative ?
                                    "-9223372036854775808" : "0", (long long)INT64_MAX);
        }
        v = v * 10 + d;
    }
    *out = tok[0] == '-' ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
    return SPF_OK;
}

spf_status text_reader_index(text_reader *r, const char *what, int64_t *out)
{
    spf_status status = text_reader_int(r, what, 0, out);
    if (status == SPF_OK && *out > INT32_MAX)
        return text_reader_fail(r, SPF_ERR_OVERFLOW, "%s %lld out of range [0, %d] (int32 "
                                "indices)", what, (long long)*out, INT32_MAX);
    return status;
}

spf_status text_reader_float(text_reader *r, const char *what, float *out)
{
    token t;
    text_reader_word(r, &t);
    if (t.len == 0 || !token_whole(&t))
        return text_reader_fail_got(r, what, &t);
    char *end = NULL;
    errno = 0;
    float f = strtof(t.text, &end); /* decimal to float directly: no double rounding */
    if (end != t.text + t.len || isnan(f) || (isinf(f) && errno != ERANGE))
        return text_reader_fail_got(r, what, &t); /* also rejects "nan" and "inf" */
    char shown[TOKEN_QUOTED_CAP];
    if (isinf(f))
        return text_reader_fail(r, SPF_ERR_OVERFLOW, "%s %s is beyond the float32 range",
                                what, token_quote(&t, shown));
    *out = f;
    return SPF_OK;
}

spf_status text_reader_expect(text_reader *r, char c)
{
    skip_blanks(r);
    if (text_reader_peek(r) == (unsigned char)c) {
        advance(r);
        return SPF_OK;
    }
    char what[8] = {'\'', c, '\'', '\0'};
    token t;
    text_reader_word(r, &t);
    return text_reader_fail_got(r, what, &t);
}

spf_status text_reader_end_line(text_reader *r)
{
    skip_blanks(r);
    int c = text_reader_peek(r);
    if (c == '\n') {
        advance(r);
        return SPF_OK;
    }
    if (c == EOF && !r->read_errno)
        return SPF_OK;
    token t;
    text_reader_word(r, &t);
    return text_reader_fail_got(r, "end of line", &t);
}

spf_status text_reader_end_file(text_reader *r, int comment, const char *what)
{
    text_reader_skip_empty_lines(r, comment);
    if (text_reader_peek(r) == EOF && !r->read_errno)
        return SPF_OK;
    token t;
    text_reader_word(r, &t);
    return text_reader_fail_got(r, what, &t);
}
