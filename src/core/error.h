/* Internal error reporting: one thread-local detail message per thread and
 * the macros every fallible function uses for its single cleanup path. */
#ifndef SPF_CORE_ERROR_H
#define SPF_CORE_ERROR_H

#include "spforge.h"

#include <stdarg.h>

/* Record a detail message "func: <formatted>" for this thread and return st.
 * The message names the public function (or the internal one) that failed;
 * input errors put the file and line / byte offset first in the text. A
 * long func (a path) is shortened in its middle, never the message. */
spf_status error_set(spf_status st, const char *func, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Record "<path><where>: <formatted>" and return st: where is the place in
 * the file (":12", ": byte 40", or ""). However long path is, the message
 * and where stay whole; the middle of path is elided ("...") to fit. */
spf_status error_vset_at(spf_status st, const char *path, const char *where, const char *fmt,
                         va_list ap) __attribute__((format(printf, 4, 0)));

/* Clear the detail message (called at the top of public functions). */
void error_clear(void);

/* This thread's detail message copied out (out: ERROR_DETAIL_CAP bytes)
 * and back: around a caller's callback, which may call the library and so
 * clear or replace it. */
enum { ERROR_DETAIL_CAP = 2048 };
void error_save(char *out);
void error_restore(const char *saved);

/* Prefix the current detail message with "<prefix>: " (used when a lower
 * layer's message needs the outer context, e.g. the file name). When both
 * do not fit, each loses its middle, the old message's end kept whole. */
void error_prefix(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define FAIL(st, ...) error_set((st), __func__, __VA_ARGS__)

/* In a function with `spf_status status` and a `fail:` label: run call, and
 * on error keep its status and jump to the cleanup path. */
#define TRY(call)                                                                          \
    do {                                                                                   \
        status = (call);                                                                   \
        if (status != SPF_OK)                                                              \
            goto fail;                                                                     \
    } while (0)

/* Set status to FAIL(...) and jump to the cleanup path. */
#define FAIL_GOTO(st, ...)                                                                 \
    do {                                                                                   \
        status = FAIL((st), __VA_ARGS__);                                                  \
        goto fail;                                                                         \
    } while (0)

/* Argument checks at the public boundary. */
#define CHECK_ARG(cond)                                                                    \
    do {                                                                                   \
        if (!(cond))                                                                       \
            return FAIL(SPF_ERR_INVALID_ARGUMENT, "invalid argument: %s", #cond);          \
    } while (0)

#endif
