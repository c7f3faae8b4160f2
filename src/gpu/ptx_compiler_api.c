/* The linked PTX Compiler API as a table: in libspforge.a beside the
 * compiler, and alone (with the compiler) in the module libspforge_ptxc.so
 * that libspforge.so loads (ptx_compiler_api.h). */
#include "gpu/ptx_compiler_api.h"

/* Visible from the module only (libspforge.a keeps it hidden). */
#if defined(SPF_PTX_COMPILER_MODULE) && defined(__GNUC__)
#define SPF_PTXC_EXPORT __attribute__((visibility("default")))
#else
#define SPF_PTXC_EXPORT
#endif

SPF_PTXC_EXPORT const ptx_compiler_api spf_ptx_compiler_api = {
    .abi = PTX_COMPILER_API_ABI,
    .size = sizeof(ptx_compiler_api),
    .get_version = nvPTXCompilerGetVersion,
    .create = nvPTXCompilerCreate,
    .destroy = nvPTXCompilerDestroy,
    .compile = nvPTXCompilerCompile,
    .program_size = nvPTXCompilerGetCompiledProgramSize,
    .program = nvPTXCompilerGetCompiledProgram,
    .error_log_size = nvPTXCompilerGetErrorLogSize,
    .error_log = nvPTXCompilerGetErrorLog,
    .info_log_size = nvPTXCompilerGetInfoLogSize,
    .info_log = nvPTXCompilerGetInfoLog,
};
