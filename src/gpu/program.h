/* A generated GPU program: PTX text split into compilation units, plus
 * everything needed to launch it. Produced by the unrolled strategy (src/strategy/unrolled: unrolled.c,
 * proxies later), consumed by the GPU runtime in src/gpu (compile the units
 * in parallel to relocatable code, link, load, launch).
 *
 * DESIGN.md decision 1: ptxas time grows superlinearly with the size of one
 * function, so a kernel is an entry unit plus chunk units, each holding
 * .func bodies for a bounded number of row tiles; the entry calls them. */
#ifndef SPF_GPU_PROGRAM_H
#define SPF_GPU_PROGRAM_H

#include "spforge.h"

#include <stddef.h>

typedef struct ptx_unit {
    char *text;   /* NUL-terminated PTX module text (.version/.target/.address_size included) */
    size_t size;  /* strlen(text)                                                            */
} ptx_unit;

typedef struct ptx_program {
    ptx_unit *units;       /* units[0] holds the .entry; the rest hold .func chunks           */
    int unit_count;
    char entry[128];       /* name of the .entry to launch                                    */
    unsigned grid[3];      /* launch geometry                                                 */
    unsigned block[3];
    unsigned shared_bytes; /* dynamic shared memory per block                                 */
    unsigned max_registers;/* register cap for the chunk units' functions, to pass as ptxas
                              --device-function-maxrregcount (0: none). The tile functions are
                              .noreturn, so under a cap ptxas uses the ABI's callee-saved
                              registers freely; without one it leaves them idle and about
                              doubles the count (measured, ptxas 13.0)                        */
    /* Kernel parameters, in order: const void *B, void *C, const float *bias
     * (may be NULL when the program has no bias). All are device pointers;
     * N, the leading dimensions and the A values are baked into the code. */
} ptx_program;

void ptx_program_free(ptx_program *p); /* frees the units; accepts NULL or a zeroed program */

#endif
