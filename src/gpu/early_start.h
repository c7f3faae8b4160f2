/* Whether a plan's kernels start early (gpu/grid_dependency.cuh): where
 * the device has it (compute capability 9.0 or newer), unless the
 * environment sets SPFORGE_PDL=0 to measure without it. */
#ifndef SPF_GPU_EARLY_START_H
#define SPF_GPU_EARLY_START_H

#include <stdlib.h>
#include <string.h>

static inline int early_start_wanted(int major)
{
    const char *pdl = getenv("SPFORGE_PDL");
    return major >= 9 && !(pdl && strcmp(pdl, "0") == 0);
}

#endif
