#include "core/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

/* The callback and its user pointer change together: a call logging on one
 * thread while another installs a callback must not pair the new function
 * with the old pointer. The pair is copied under the lock and the callback
 * runs outside it, so a callback may itself call into the library. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static spf_log_fn log_fn;
static void *log_user;

void spf_set_log_callback(spf_log_fn fn, void *user)
{
    pthread_mutex_lock(&log_lock);
    log_fn = fn;
    log_user = user;
    pthread_mutex_unlock(&log_lock);
}

void log_msg(spf_log_level level, const char *fmt, ...)
{
    pthread_mutex_lock(&log_lock);
    spf_log_fn fn = log_fn;
    void *user = log_user;
    pthread_mutex_unlock(&log_lock);
    if (!fn)
        return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fn(level, buf, user);
}
