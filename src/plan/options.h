/* The caller's spf_plan_options over the defaults, whatever header size
 * the caller was built with (plan.c; also read by the distributed plans,
 * dist/dist_plan.c, for the plans they make). */
#ifndef SPF_PLAN_OPTIONS_H
#define SPF_PLAN_OPTIONS_H

#include "spforge.h"

/* in NULL: the defaults. SPF_ERR_INVALID_ARGUMENT for a size no header gave. */
spf_status plan_options_read(const spf_plan_options *in, spf_plan_options *out);

#endif
