#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>

static spf_log_fn log_fn;
static void *log_user;

void spf_set_log_callback(spf_log_fn fn, void *user)
{
    log_fn = fn;
    log_user = user;
}

void log_msg(spf_log_level level, const char *fmt, ...)
{
    if (!log_fn)
        return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    log_fn(level, buf, log_user);
}
