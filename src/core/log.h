/* Internal logging through the caller's callback (spf_set_log_callback);
 * silent when none is installed. */
#ifndef SPF_CORE_LOG_H
#define SPF_CORE_LOG_H

#include "spforge.h"

void log_msg(spf_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
