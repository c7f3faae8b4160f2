/* The caller's spf_plan_options over the defaults, whatever header size
 * the caller was built with (plan.c; also read by the distributed plans,
 * dist/dist_plan.c, for the plans they make). */
#ifndef SPF_PLAN_OPTIONS_H
#define SPF_PLAN_OPTIONS_H

#include "spforge.h"

/* The largest size field a growable struct (spforge.h) may carry: a caller
 * built against a later header passes more than this library's sizeof, and
 * the fields it does not know are not read; past this bound the struct was
 * never initialized. Every create and info function takes this rule. */
enum { GROWABLE_MAX = 1 << 16 };

/* in NULL: the defaults. SPF_ERR_INVALID_ARGUMENT for a size no header gave. */
spf_status plan_options_read(const spf_plan_options *in, spf_plan_options *out);

#endif
