/* The part of NVIDIA's PTX Compiler API that the in-process assembler
 * calls (src/gpu/ptx_compiler.c), as a table of functions. The static
 * library links the compiler and its table (ptx_compiler_api.c); the shared
 * one loads the table from libspforge_ptxc.so beside it, the module that
 * holds the compiler (28 MB of code, most of an otherwise 8 MB
 * libspforge.so: a user who never assembles in process, or ships only the
 * library, leaves it out). */
#ifndef SPF_GPU_PTX_COMPILER_API_H
#define SPF_GPU_PTX_COMPILER_API_H

#include <nvPTXCompiler.h>

/* Raised when the table changes: a module of another spforge is refused. */
#define PTX_COMPILER_API_ABI 1u

/* The module's one exported symbol. */
#define PTX_COMPILER_API_SYMBOL "spf_ptx_compiler_api"

typedef struct ptx_compiler_api {
    unsigned abi;  /* PTX_COMPILER_API_ABI */
    unsigned size; /* sizeof(ptx_compiler_api) */
    nvPTXCompileResult (*get_version)(unsigned *major, unsigned *minor);
    nvPTXCompileResult (*create)(nvPTXCompilerHandle *h, size_t size, const char *ptx);
    nvPTXCompileResult (*destroy)(nvPTXCompilerHandle *h);
    nvPTXCompileResult (*compile)(nvPTXCompilerHandle h, int count, const char *const *opts);
    nvPTXCompileResult (*program_size)(nvPTXCompilerHandle h, size_t *size);
    nvPTXCompileResult (*program)(nvPTXCompilerHandle h, void *out);
    nvPTXCompileResult (*error_log_size)(nvPTXCompilerHandle h, size_t *size);
    nvPTXCompileResult (*error_log)(nvPTXCompilerHandle h, char *out);
    nvPTXCompileResult (*info_log_size)(nvPTXCompilerHandle h, size_t *size);
    nvPTXCompileResult (*info_log)(nvPTXCompilerHandle h, char *out);
} ptx_compiler_api;

/* The table of the compiler linked with it (ptx_compiler_api.c). */
extern const ptx_compiler_api spf_ptx_compiler_api;

#endif
