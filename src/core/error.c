#define _POSIX_C_SOURCE 200809L /* PATH_MAX */

#include "core/error.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The detail is "<prefix>: <message>". When it does not fit, the prefix (a
 * path, often) loses its middle, never the message: what was expected and
 * where matter more than the folders leading to the file. */
enum { DETAIL_CAP = ERROR_DETAIL_CAP, PREFIX_FLOOR = 256 };
static _Thread_local char detail[DETAIL_CAP];
/* error_prefix's formatted prefix before it is shortened: room for any path
 * the system can open and more, so no real prefix is cut here. */
static _Thread_local char prefix_scratch[PATH_MAX + DETAIL_CAP];

const char *spf_status_string(spf_status status)
{
    switch (status) {
    case SPF_OK: return "success";
    case SPF_ERR_INVALID_ARGUMENT: return "invalid argument";
    case SPF_ERR_OUT_OF_MEMORY: return "out of memory";
    case SPF_ERR_IO: return "I/O error";
    case SPF_ERR_PARSE: return "malformed input";
    case SPF_ERR_UNSUPPORTED: return "unsupported";
    case SPF_ERR_OVERFLOW: return "size overflow";
    case SPF_ERR_INVALID_MATRIX: return "invalid matrix";
    case SPF_ERR_NO_DEVICE: return "no CUDA device";
    case SPF_ERR_CUDA: return "CUDA error";
    case SPF_ERR_COMPILE: return "compile error";
    case SPF_ERR_VERIFY: return "verification failed";
    case SPF_ERR_INTERNAL: return "internal error";
    case SPF_ERR_CANCELLED: return "cancelled";
    }
    return "unknown status";
}

const char *spf_last_error(void) { return detail; }

const char *spf_version(void) { return SPF_VERSION_STRING; }

void error_clear(void) { detail[0] = '\0'; }

void error_save(char *out) { memcpy(out, detail, sizeof detail); }

void error_restore(const char *saved)
{
    memcpy(detail, saved, sizeof detail);
    detail[sizeof detail - 1] = '\0';
}

/* Copy len bytes of s into out as at most keep bytes (keep >= 3 when it
 * must shorten): whole if they fit, else head "..." tail, the tail getting
 * three quarters, since a path's end holds the file name. Returns the bytes
 * written (no NUL). */
static size_t put_elided(char *out, const char *s, size_t len, size_t keep)
{
    if (len <= keep) {
        memcpy(out, s, len);
        return len;
    }
    size_t head = (keep - 3) / 4, tail = keep - 3 - head;
    memcpy(out, s, head);
    memcpy(out + head, "...", 3);
    memcpy(out + head + 3, s + len - tail, tail);
    return keep;
}

/* How many bytes of a prefix of plen bytes to keep before `rest` bytes that
 * must follow it in the detail: all if they fit, else what is left, but
 * never less than PREFIX_FLOOR (the rest is then cut instead). */
static size_t prefix_keep(size_t plen, size_t rest)
{
    size_t room = DETAIL_CAP - 1;
    if (plen + rest <= room)
        return plen;
    size_t left = rest + PREFIX_FLOOR <= room ? room - rest : PREFIX_FLOOR;
    return plen < left ? plen : left;
}

spf_status error_vset_at(spf_status st, const char *path, const char *where, const char *fmt,
                         va_list ap)
{
    va_list measure;
    va_copy(measure, ap);
    int mlen = vsnprintf(NULL, 0, fmt, measure);
    va_end(measure);
    size_t plen = strlen(path), wlen = strlen(where);
    size_t rest = wlen + 2 + (mlen > 0 ? (size_t)mlen : 0);
    size_t o = put_elided(detail, path, plen, prefix_keep(plen, rest));
    int n = snprintf(detail + o, DETAIL_CAP - o, "%s: ", where);
    o = n < 0 ? o : o + (size_t)n < DETAIL_CAP ? o + (size_t)n : DETAIL_CAP - 1;
    vsnprintf(detail + o, DETAIL_CAP - o, fmt, ap); /* cut only past DETAIL_CAP - PREFIX_FLOOR */
    return st;
}

spf_status error_set(spf_status st, const char *func, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_vset_at(st, func, "", fmt, ap);
    va_end(ap);
    return st;
}

void error_prefix(const char *fmt, ...)
{
    char old[DETAIL_CAP];
    memcpy(old, detail, DETAIL_CAP);
    va_list ap;
    va_start(ap, fmt);
    int used = vsnprintf(prefix_scratch, sizeof prefix_scratch, fmt, ap);
    va_end(ap);
    if (used < 0)
        return;
    size_t plen = strlen(prefix_scratch), olen = strlen(old);
    size_t keep = prefix_keep(plen, 2 + olen);
    size_t o = put_elided(detail, prefix_scratch, plen, keep);
    detail[o++] = ':';
    detail[o++] = ' ';
    /* When both do not fit, the old detail loses the middle of its own
     * prefix: its message, at its end, stays whole. */
    o += put_elided(detail + o, old, olen, DETAIL_CAP - 1 - o);
    detail[o] = '\0';
}
