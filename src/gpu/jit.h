/* The JIT path of generated kernels (DESIGN.md decision 1): assemble a
 * ptx_program's units in parallel to relocatable cubins (assembler.h: in
 * process, or the ptxas program), link
 * them with the driver linker, load the image as a context-independent
 * library and launch its entry. The driver API is reached only through
 * cudaGetDriverEntryPointByVersion, so nothing links libcuda (decision 2).
 *
 * jit_compile needs neither a GPU nor a driver (CI uses it); linking,
 * loading and launching need both. */
#ifndef SPF_GPU_JIT_H
#define SPF_GPU_JIT_H

#include "gpu/assembler.h"
#include "gpu/program.h"
#include "gpu/ptxas.h"

/* One program assembled (or handed over as PTX to the driver linker). */
typedef struct jit_object {
    spf_status status;   /* SPF_OK, or SPF_ERR_COMPILE with `log` saying why      */
    ptxas_result *units; /* unit_count results (owned); NULL with DRIVER          */
    int unit_count;
    jit_assembler assembler; /* who assembled; DRIVER: nothing was, the driver
                                linker compiles the PTX                          */
    int registers;       /* the largest of the units' (0 with DRIVER)             */
    int spill_bytes;     /* summed over the units                                 */
    double compile_s;    /* assembler seconds summed over the units (CPU-side)    */
    char *log;           /* the first failing unit's compiler output (owned) or
                            NULL                                                  */
} jit_object;

/* Assemble `count` programs for sm_<sm> into out[0 .. count) (caller-owned,
 * overwritten), all their units in one parallel batch over `threads` host
 * threads (0 = all cores) so that small and large programs share the cores,
 * with the assembler assembler_choose picks. A program the assembler
 * rejects gets status SPF_ERR_COMPILE and its log; the call fails only when
 * the machinery does (or $SPFORGE_ASSEMBLER names one that is not there).
 * When the choice is the driver every object is marked DRIVER (logged at
 * WARN unless forced) and nothing is assembled here. */
spf_status jit_compile(const ptx_program *const *programs, int count, int sm, int threads,
                       jit_object *out);
void jit_object_release(jit_object *o); /* accepts a zeroed object */

typedef struct jit_timings {
    double compile_s; /* wall time of the parallel assembly step */
    double link_s;    /* driver linker                          */
    double load_s;    /* library load and kernel lookup         */
    jit_assembler assembler; /* who assembled (jit_object.assembler)  */
} jit_timings;

/* A loaded kernel, ready to launch on the device current when it was
 * loaded. It keeps a copy of its linked image, the bytes the plan cache
 * stores (plan/cache.h): the linker's own buffer dies with the link. */
typedef struct jit_module {
    void *library;         /* cudaLibrary_t                                   */
    void *kernel;          /* cudaKernel_t of the program's entry             */
    unsigned grid[3], block[3];
    unsigned shared_bytes; /* dynamic shared memory per block                 */
    int registers;         /* per thread, as loaded (cudaFuncGetAttributes)   */
    int local_bytes;       /* local memory per thread (spills, stack)         */
    unsigned char *image;  /* the linked cubin (owned)                        */
    size_t image_size;
} jit_module;

/* Link o's cubins (or its program's PTX with DRIVER) and load the result on
 * the current device. Failures carry the linker's log in the detail. */
spf_status jit_link_load(const ptx_program *p, const jit_object *o, jit_module *out,
                         jit_timings *t);

/* Load a linked image (image_size bytes, read during the call only; the
 * module keeps a copy) on the current device and look up its kernel
 * `entry`, to be launched with grid × block threads and shared_bytes of
 * dynamic shared memory per block (the limit raised past 48 KB where
 * asked). The one load path of a fresh link and of a plan cache hit;
 * *load_s (may be NULL) gets its wall time. */
spf_status jit_module_load_image(const void *image, size_t image_size, const char *entry,
                                 const unsigned grid[3], const unsigned block[3],
                                 unsigned shared_bytes, jit_module *out, double *load_s);

/* jit_compile of one program, then jit_link_load; t may be NULL. */
spf_status jit_build(const ptx_program *p, int sm, int threads, jit_module *out, jit_timings *t);

/* Launch with the program's geometry on `stream` (a cudaStream_t):
 *   b, c: device buffers of the program's dtype; bias: device, M float32 or NULL.
 * No allocation, no synchronization (graph-capturable). */
spf_status jit_launch(const jit_module *m, const void *b, void *c, const float *bias, void *stream);

/* Launch m's kernel with an explicit geometry, dynamic shared memory per
 * block and kernel parameters (params: one pointer per argument, as
 * cudaLaunchKernel takes them) on `stream`: a proxy (strategy/unrolled/proxy.h) runs
 * with each candidate's grid, block and shared memory. Beyond 48 KB the
 * module must have been loaded with at least shared_bytes. No allocation,
 * no synchronization. */
spf_status jit_launch_with(const jit_module *m, const unsigned grid[3], const unsigned block[3],
                           unsigned shared_bytes, void **params, void *stream);

void jit_module_release(jit_module *m); /* unloads; accepts a zeroed module */

#endif
