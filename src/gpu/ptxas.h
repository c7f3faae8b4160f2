/* PTX → relocatable SASS with the ptxas tool run as a subprocess, many units
 * side by side on all host cores (DESIGN.md decision 1: ptxas time grows
 * superlinearly with one function's size, so a kernel is cut into chunk
 * units that compile in parallel and are linked afterwards). Needs no GPU
 * and no driver: CI assembles generated code with it. */
#ifndef SPF_GPU_PTXAS_H
#define SPF_GPU_PTXAS_H

#include "gpu/program.h"

#include <stddef.h>

/* The ptxas to run: $SPF_PTXAS, else $CUDA_HOME/bin/ptxas, else
 * /usr/local/cuda/bin/ptxas, else the first ptxas on $PATH. Writes the path
 * into `path` (cap bytes) and returns 1, or returns 0 if none is executable. */
int ptxas_locate(char *path, size_t cap);

/* The outcome of assembling one unit, by ptxas or in process
 * (ptx_compiler.h). */
typedef struct ptxas_result {
    spf_status status;  /* SPF_OK, or SPF_ERR_COMPILE when the assembler rejected it  */
    void *cubin;        /* relocatable cubin (owned; mem_free'd by ptxas_result_clear) */
    size_t cubin_size;
    int registers;      /* the largest count over the unit's functions, entry and .func,
                           from its cubin (ptxas_cubin_registers); the largest "Used N
                           registers" of -v where the cubin names none (0 if neither) */
    int spill_bytes;    /* spill stores + spill loads summed over the unit's functions */
    double seconds;     /* wall time of this unit's assembly                           */
    char *log;          /* the assembler's output when it failed (owned), else NULL    */
} ptxas_result;

void ptxas_result_clear(ptxas_result *r);

/* Assemble count units (`units[i]` borrowed) for sm_<sm> into results[i]
 * (count entries, caller-owned, overwritten), running at most `threads`
 * ptxas processes at a time (0 = all cores). Each run gets
 * `ptxas -arch=sm_XX -c -O3 -v` in a private temporary folder, removed
 * before returning. reg_caps (count entries, or NULL) caps each unit's
 * device functions with --device-function-maxrregcount (0: no cap); a unit
 * that spills under its cap is assembled again with 32 more registers, up
 * to 255 (program.h: max_registers says why the cap matters). A unit that ptxas rejects is reported in its result
 * and does not stop the others; the call itself fails only when the
 * machinery does (no temporary folder, a process that cannot start, out of
 * memory). */
spf_status ptxas_compile(const char *ptxas, const ptx_unit *const *units,
                         const unsigned *reg_caps, int count, int sm, int threads,
                         ptxas_result *results);

/* The largest per-function register count recorded in a relocatable cubin
 * (`cubin`, size bytes, borrowed), or 0 when it holds none or is not a
 * well-formed 64-bit little-endian ELF. ptxas -c -v prints "Used N
 * registers" for the .entry alone, not for the .noreturn tile functions of
 * the chunk units, so this is where their counts are read. Every offset
 * and length is bounds-checked: a truncated or garbage buffer gives 0. */
int ptxas_cubin_registers(const void *cubin, size_t size);

/* The register cap to assemble a unit again with after it spilled
 * spill_bytes under `cap`: 32 more, up to 255; 0 when there is no retry (no
 * spills, no cap, or 255 already). Both assemblers (ptxas, ptx_compiler.h)
 * follow it. */
unsigned ptxas_retry_cap(unsigned cap, int spill_bytes);

/* Parse ptxas -v output (or the PTX Compiler API's info log, which prefixes
 * the stack-frame line with "ptxas ." where ptxas indents it) into
 * registers and spill bytes (exposed for tests). */
void ptxas_parse_verbose(const char *log, int *registers, int *spill_bytes);

#endif
