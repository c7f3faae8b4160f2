/* A plan's spf_plan_info as JSON members, one writer for `spforge run /
 * tune --json` and spforge-bench's results: the strategy, its kernel and
 * configuration, the times of the build, and every candidate the planner
 * considered (strategy, outcome, estimate, measured time, detail). */
#ifndef SPF_PLAN_INFO_JSON_H
#define SPF_PLAN_INFO_JSON_H

#include "core/json.h"
#include "spforge.h"

/* The members, into the object w has open. Times the library reports as
 * 0 when there is none (kernel_us, a candidate's estimate and time) are
 * written as null. */
void plan_info_json_fields(json_writer *w, const spf_plan_info *info);

#endif
