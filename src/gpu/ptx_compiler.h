/* PTX → relocatable SASS in this process, through NVIDIA's PTX Compiler
 * API (nvPTXCompiler): the compiler of the ptxas program as a static
 * library of the CUDA toolkit, linked into libspforge when the build found
 * it (SPF_HAVE_NVPTXCOMPILER; scripts/fetch-nvptxcompiler.sh), so a
 * machine with only the driver needs no ptxas at run time (issue 12).
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

/* 1 when this build links the in-process compiler, and its API version
 * (the toolkit's major.minor) in *major, *minor (may be NULL); else 0. */
int ptx_compiler_linked(int *major, int *minor);

/* Assemble count units (`units[i]` borrowed) for sm_<sm> into results[i]
 * (caller-owned, overwritten) on at most `threads` host threads (0 = all
 * cores). reg_caps (count entries, or NULL) as in ptxas_compile. A unit the
 * compiler rejects gets SPF_ERR_COMPILE and its log (the compiler's error
 * log, then its info log, after a line "nvPTXCompiler: <API result>") and
 * does not stop the others; the call fails only when the machinery does
 * (out of memory; SPF_ERR_UNSUPPORTED when the compiler is not linked). */
spf_status ptx_compiler_compile(const ptx_unit *const *units, const unsigned *reg_caps, int count,
                                int sm, int threads, ptxas_result *results);

#endif
