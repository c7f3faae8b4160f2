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

enum { TOKEN_CAP = 128, SHOWN_CAP = 48 };

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
    char message[1024], where[1024];
    vsnprintf(message, sizeof message, fmt, ap);
    snprintf(where, sizeof where, "%s:%lld", r->path, (long long)line);
    return error_set(st, where, "%s", message);
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

/* A token as it should appear in a message: quoted, non-printable bytes as
 * \xNN, cut after SHOWN_CAP bytes. */
static void show_token(const char *tok, size_t len, char *out, size_t cap)
{
    size_t o = 0;
    out[o++] = '\'';
    for (size_t i = 0; i < len && i < SHOWN_CAP && o + 8 < cap; i++) {
        unsigned char c = (unsigned char)tok[i];
        if (c >= 0x20 && c < 0x7f)
            out[o++] = (char)c;
        else
            o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
    }
    if (len > SHOWN_CAP && o + 4 < cap) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o++] = '\'';
    out[o] = '\0';
}

/* "expected <what>, got <what is there>"; a read error becomes SPF_ERR_IO. */
spf_status text_reader_fail_got(text_reader *r, const char *what, const char *tok, size_t len)
{
    char shown[4 * SHOWN_CAP + 8];
    if (len > 0) {
        show_token(tok, len, shown, sizeof shown);
        return text_reader_fail(r, SPF_ERR_PARSE, "expected %s, got %s", what, shown);
    }
    int c = text_reader_peek(r);
    if (c == EOF && r->read_errno)
        return text_reader_fail(r, SPF_ERR_IO, "read failed: %s", strerror(r->read_errno));
    if (c == EOF)
        return text_reader_fail(r, SPF_ERR_PARSE, "expected %s, got end of file%s", what,
                                r->size == 0 ? " (empty file)" : "");
    if (c == '\n')
        return text_reader_fail(r, SPF_ERR_PARSE, "expected %s, got end of line", what);
    char one = (char)c;
    show_token(&one, 1, shown, sizeof shown);
    return text_reader_fail(r, SPF_ERR_PARSE, "expected %s, got %s", what, shown);
}

size_t text_reader_word(text_reader *r, char *tok, size_t cap)
{
    skip_blanks(r);
    size_t len = 0;
    int c;
    while ((c = text_reader_peek(r)) != EOF && c != '\n' && c != ',' && !is_blank(c)) {
        if (len + 1 < cap)
            tok[len] = (char)c;
        len++;
        advance(r);
    }
    tok[len < cap ? len : cap - 1] = '\0';
    return len;
}

spf_status text_reader_int(text_reader *r, const char *what, int allow_negative, int64_t *out)
{
    char tok[TOKEN_CAP];
    size_t len = text_reader_word(r, tok, sizeof tok);
    size_t i = (allow_negative && len > 1 && tok[0] == '-') ? 1 : 0;
    if (len == 0 || len >= sizeof tok || i == len)
        return text_reader_fail_got(r, what, tok, len);
    uint64_t limit = i ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, v = 0;
    for (; i < len; i++) {
        if (tok[i] < '0' || tok[i] > '9')
            return text_reader_fail_got(r, what, tok, len);
        unsigned d = (unsigned)(tok[i] - '0');
        if (v > (limit - d) / 10)
            return text_reader_fail(r, SPF_ERR_OVERFLOW, "%s '%s' does not fit in 64 bits",
                                    what, tok);
        v = v * 10 + d;
    }
    *out = tok[0] == '-' ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
    return SPF_OK;
}

spf_status text_reader_float(text_reader *r, const char *what, float *out)
{
    char tok[TOKEN_CAP];
    size_t len = text_reader_word(r, tok, sizeof tok);
    if (len == 0 || len >= sizeof tok)
        return text_reader_fail_got(r, what, tok, len);
    char *end = NULL;
    errno = 0;
    float f = strtof(tok, &end); /* decimal to float directly: no double rounding */
    if (end != tok + len || isnan(f) || (isinf(f) && errno != ERANGE))
        return text_reader_fail_got(r, what, tok, len); /* also rejects "nan" and "inf" */
    if (isinf(f))
        return text_reader_fail(r, SPF_ERR_OVERFLOW, "%s '%s' is beyond the float32 range",
                                what, tok);
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
    char tok[TOKEN_CAP];
    size_t len = text_reader_word(r, tok, sizeof tok);
    return text_reader_fail_got(r, what, tok, len);
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
    char tok[TOKEN_CAP];
    size_t len = text_reader_word(r, tok, sizeof tok);
    return text_reader_fail_got(r, "end of line", tok, len);
}

spf_status text_reader_end_file(text_reader *r, int comment, const char *what)
{
    text_reader_skip_empty_lines(r, comment);
    if (text_reader_peek(r) == EOF && !r->read_errno)
        return SPF_OK;
    char tok[TOKEN_CAP];
    size_t len = text_reader_word(r, tok, sizeof tok);
    return text_reader_fail_got(r, what, tok, len);
}
