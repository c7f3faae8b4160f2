/* A buffered reader for the line-oriented text formats (.mtx, .smtx) that
 * knows the line it is on, so every error can say
 * "<path>:<line>: expected <what>, got '<token>'".
 *
 * Tokens never span lines: a number read where the line has ended is an
 * error ("got end of line"), and each caller ends its lines explicitly with
 * text_reader_end_line. Tokens end at blanks, newlines and ','. */
#ifndef SPF_IO_TEXT_READER_H
#define SPF_IO_TEXT_READER_H

#include "io/token.h"
#include "spforge.h"

#include <stdio.h>

enum { TEXT_READER_BUF = 1 << 16 };

typedef struct text_reader {
    FILE *file;
    const char *path;   /* borrowed, for messages */
    int64_t size;       /* file size in bytes */
    int64_t offset;     /* bytes consumed */
    int64_t line;       /* 1-based line of the next byte */
    int read_errno;     /* errno of a failed read, 0 if none */
    size_t pos, len;
    unsigned char buf[TEXT_READER_BUF];
} text_reader;

/* Open path; on failure r holds no file and the error names the path. */
spf_status text_reader_open(text_reader *r, const char *path);
void text_reader_close(text_reader *r);

/* Bytes not yet consumed (bounds the counts a header may claim). */
int64_t text_reader_remaining(const text_reader *r);

/* Refill the buffer; the next byte, or EOF. */
int text_reader_refill(text_reader *r);

/* The next byte without consuming it, or EOF. Inline: it runs per byte. */
static inline int text_reader_peek(text_reader *r)
{
    return r->pos < r->len ? r->buf[r->pos] : text_reader_refill(r);
}

/* Skip whole lines that are blank or whose first non-blank byte is
 * `comment` (0 for none). */
void text_reader_skip_empty_lines(text_reader *r, int comment);

/* After blanks, the next token (bytes up to a blank, newline, ',' or the end
 * of the file) into t (t->len 0: none on this line). */
void text_reader_word(text_reader *r, token *t);

/* A decimal integer token: digits, with a leading '-' only if allow_negative.
 * Beyond int64: SPF_ERR_OVERFLOW, "out of range [lo, hi]". */
spf_status text_reader_int(text_reader *r, const char *what, int allow_negative, int64_t *out);

/* A size or index token: as text_reader_int, non-negative; beyond the int32
 * indices spforge uses: SPF_ERR_OVERFLOW, "out of range [0, 2147483647]". */
spf_status text_reader_index(text_reader *r, const char *what, int64_t *out);

/* A finite decimal real token as float32 (correctly rounded); a value beyond
 * the float32 range is SPF_ERR_OVERFLOW. */
spf_status text_reader_float(text_reader *r, const char *what, float *out);

/* The separator c, after optional blanks. */
spf_status text_reader_expect(text_reader *r, char c);

/* Optional blanks, then a newline (consumed) or the end of the file. */
spf_status text_reader_end_line(text_reader *r);

/* After optional empty lines: the end of the file, else "expected <what>". */
spf_status text_reader_end_file(text_reader *r, int comment, const char *what);

/* "expected <what>, got <token>" for a token from text_reader_word (quoted by
 * token_quote), or, when it is empty, for what comes next (end of line, end
 * of file, a separator). A read error becomes SPF_ERR_IO. */
spf_status text_reader_fail_got(text_reader *r, const char *what, const token *t);

/* Record "<path>:<line>: <message>" (the current line) and return st. */
spf_status text_reader_fail(text_reader *r, spf_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same for a given line (an earlier entry). */
spf_status text_reader_fail_at(text_reader *r, int64_t line, spf_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
