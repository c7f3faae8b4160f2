#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum { DETAIL_CAP = 2048 };
static _Thread_local char detail[DETAIL_CAP];

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
    }
    return "unknown status";
}

const char *spf_last_error(void) { return detail; }

const char *spf_version(void) { return SPF_VERSION_STRING; }

void error_clear(void) { detail[0] = '\0'; }

spf_status error_set(spf_status st, const char *func, const char *fmt, ...)
{
    int used = snprintf(detail, DETAIL_CAP, "%s: ", func);
    if (used < 0 || used >= DETAIL_CAP)
        used = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail + used, DETAIL_CAP - (size_t)used, fmt, ap);
    va_end(ap);
    return st;
}

void error_prefix(const char *fmt, ...)
{
    char old[DETAIL_CAP];
    memcpy(old, detail, DETAIL_CAP);
    va_list ap;
    va_start(ap, fmt);
    int used = vsnprintf(detail, DETAIL_CAP, fmt, ap);
    va_end(ap);
    if (used < 0 || used >= DETAIL_CAP - 2)
        return;
    /* Copy by hand: the tail is cut to fit, which snprintf would warn about. */
    size_t at = (size_t)used;
    detail[at++] = ':';
    detail[at++] = ' ';
    for (size_t i = 0; old[i] && at < DETAIL_CAP - 1; i++)
        detail[at++] = old[i];
    detail[at] = '\0';
}
