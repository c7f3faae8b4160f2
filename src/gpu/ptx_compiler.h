/* PTX → relocatable SASS in this process, through NVIDIA's PTX Compiler
 * API (nvPTXCompiler): the compiler of the ptxas program as a static
 * library of the CUDA toolkit, built in when the build found it
 * (SPF_HAVE_NVPTXCOMPILER; scripts/fetch-nvptxcompiler.sh): linked into
 * libspforge.a, in the module libspforge_ptxc.so beside libspforge.so
 * (ptx_compiler_api.h), so a machine with only the driver needs no ptxas
 * at run time (issue 12).
 *
 * Same contract as ptxas_compile (ptxas.h): units assembled side by side
 * on `threads` host threads, one compiler handle per unit (the API is
 * documented thread safe: separate handles may compile concurrently),
 * the same options (-c -O3 -v, the register cap and its spill retry), the
 * same relocatable cubins: with the ptxas of the same toolkit version,
 * every section but the toolkit-info note is byte for byte the same
 * (tests/unit/test_ptx_compiler.c). Needs no GPU and no driver. */
#ifndef SPF_GPU_PTX_COMPILER_H
#define SPF_GPU_PTX_COMPILER_H

#include "gpu/program.h"
#include "gpu/ptxas.h"

typedef struct ptx_compiler_api ptx_compiler_api; /* gpu/ptx_compiler_api.h */

/* The compiler this library assembles with: linked in (libspforge.a),
 * loaded on first use from libspforge_ptxc.so in the folder that holds
 * libspforge.so (the shared library), or none (a build without it); NULL
 * with the reason in why (cap bytes; may be NULL) when there is none. */
const ptx_compiler_api *ptx_compiler_default(char *why, size_t cap);

/* The compiler of the module at `path` (a libspforge_ptxc.so), loaded once
 * and kept loaded; NULL with the reason (the loader's message, a missing
 * table, a table of another spforge) in why. */
const ptx_compiler_api *ptx_compiler_open(const char *path, char *why, size_t cap);

/* 1 when ptx_compiler_default has a compiler, and its API version (the
 * toolkit's major.minor) in *major, *minor (may be NULL); else 0. */
int ptx_compiler_available(int *major, int *minor);

/* Assemble count units (`units[i]` borrowed) for sm_<sm> into results[i]
 * (caller-owned, overwritten) on at most `threads` host threads (0 = all
 * cores) with `api` (ptx_compiler_default's when NULL). reg_caps (count
 * entries, or NULL) as in ptxas_compile. A unit the compiler rejects gets
 * SPF_ERR_COMPILE and its log (the compiler's error log, then its info
 * log, after a line "nvPTXCompiler: <API result>") and does not stop the
 * others; the call fails only when the machinery does (out of memory;
 * SPF_ERR_UNSUPPORTED when there is no compiler). */
spf_status ptx_compiler_compile(const ptx_compiler_api *api, const ptx_unit *const *units,
                                const unsigned *reg_caps, int count, int sm, int threads,
                                ptxas_result *results);

#endif
