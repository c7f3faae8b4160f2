/* The in-process assembler: one nvPTXCompiler handle per unit, handed out
 * to host threads by parallel_for as ptxas.c hands out processes. Nothing
 * touches the file system; the cubins come back in memory. */
#include "gpu/ptx_compiler.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/parallel.h"
#include "gpu/timing.h"

#include <stdio.h>
#include <string.h>

#ifdef SPF_HAVE_NVPTXCOMPILER
#include <nvPTXCompiler.h>

int ptx_compiler_linked(int *major, int *minor)
{
    unsigned ma = 0, mi = 0;
    if (nvPTXCompilerGetVersion(&ma, &mi) != NVPTXCOMPILE_SUCCESS)
        ma = mi = 0;
    if (major)
        *major = (int)ma;
    if (minor)
        *minor = (int)mi;
    return 1;
}

static const char *result_name(nvPTXCompileResult r)
{
    switch (r) {
    case NVPTXCOMPILE_SUCCESS: return "NVPTXCOMPILE_SUCCESS";
    case NVPTXCOMPILE_ERROR_INVALID_COMPILER_HANDLE:
        return "NVPTXCOMPILE_ERROR_INVALID_COMPILER_HANDLE";
    case NVPTXCOMPILE_ERROR_INVALID_INPUT: return "NVPTXCOMPILE_ERROR_INVALID_INPUT";
    case NVPTXCOMPILE_ERROR_COMPILATION_FAILURE: return "NVPTXCOMPILE_ERROR_COMPILATION_FAILURE";
    case NVPTXCOMPILE_ERROR_INTERNAL: return "NVPTXCOMPILE_ERROR_INTERNAL";
    case NVPTXCOMPILE_ERROR_OUT_OF_MEMORY: return "NVPTXCOMPILE_ERROR_OUT_OF_MEMORY";
    case NVPTXCOMPILE_ERROR_COMPILER_INVOCATION_INCOMPLETE:
        return "NVPTXCOMPILE_ERROR_COMPILER_INVOCATION_INCOMPLETE";
    case NVPTXCOMPILE_ERROR_UNSUPPORTED_PTX_VERSION:
        return "NVPTXCOMPILE_ERROR_UNSUPPORTED_PTX_VERSION";
    default: return "an unknown nvPTXCompileResult";
    }
}

/* One of the handle's logs (error or info) as a NUL-terminated buffer
 * (owned by the caller), NULL with *oom set when it cannot be allocated;
 * an empty string when the API cannot say. */
static char *handle_log(nvPTXCompilerHandle h, int info, int *oom)
{
    size_t size = 0;
    nvPTXCompileResult r = info ? nvPTXCompilerGetInfoLogSize(h, &size)
                                : nvPTXCompilerGetErrorLogSize(h, &size);
    if (r != NVPTXCOMPILE_SUCCESS)
        size = 0;
    char *log = mem_alloc(size + 1);
    if (!log) {
        *oom = 1;
        return NULL;
    }
    log[0] = '\0';
    if (size > 0) {
        r = info ? nvPTXCompilerGetInfoLog(h, log) : nvPTXCompilerGetErrorLog(h, log);
        log[r == NVPTXCOMPILE_SUCCESS ? size : 0] = '\0';
    }
    return log;
}

typedef struct batch {
    const ptx_unit *const *units;
    const unsigned *reg_caps;
    ptxas_result *results;
    char arch[32];
} batch;

/* One compile of `unit` under `cap`: on success the cubin in r; either way
 * the info log (registers, spills) in *info; on a rejection SPF_ERR_COMPILE
 * and the log ptxas would have printed in r. Out of memory, anywhere,
 * fails the call. */
static spf_status compile_once(const batch *b, const ptx_unit *unit, unsigned cap,
                               ptxas_result *r, char **info)
{
    spf_status status = SPF_OK;
    nvPTXCompilerHandle h = NULL;
    char *errors = NULL;
    void *cubin = NULL;
    size_t size = 0;
    int oom = 0;
    char cap_opt[64];
    snprintf(cap_opt, sizeof cap_opt, "--device-function-maxrregcount=%u", cap);
    const char *opts[] = {b->arch, "-c", "-O3", "-v", cap_opt};

    nvPTXCompileResult res = nvPTXCompilerCreate(&h, unit->size, unit->text);
    if (res == NVPTXCOMPILE_SUCCESS)
        res = nvPTXCompilerCompile(h, cap ? 5 : 4, opts);
    if (res == NVPTXCOMPILE_SUCCESS)
        res = nvPTXCompilerGetCompiledProgramSize(h, &size);
    if (res == NVPTXCOMPILE_SUCCESS && size > 0 && !(cubin = mem_alloc(size)))
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "a cubin of %zu bytes", size);
    if (res == NVPTXCOMPILE_SUCCESS)
        res = size > 0 ? nvPTXCompilerGetCompiledProgram(h, cubin) : NVPTXCOMPILE_ERROR_INTERNAL;
    if (res == NVPTXCOMPILE_ERROR_OUT_OF_MEMORY)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "nvPTXCompiler: %s", result_name(res));
    *info = h ? handle_log(h, 1, &oom) : NULL;
    if (res == NVPTXCOMPILE_SUCCESS) {
        r->status = SPF_OK;
        r->cubin = cubin;
        r->cubin_size = size;
        cubin = NULL;
    } else {
        /* as ptxas's output is kept for a rejected unit, with the API's
         * verdict first: it says which assembler spoke */
        errors = h ? handle_log(h, 0, &oom) : NULL;
        const char *e = errors ? errors : "", *i = *info ? *info : "";
        size_t len = strlen(e) + strlen(i) + 128;
        r->status = SPF_ERR_COMPILE;
        r->log = mem_alloc(len);
        if (r->log)
            snprintf(r->log, len, "nvPTXCompiler: %s\n%s%s", result_name(res), e, i);
        oom |= !r->log;
    }
    if (oom)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "a compile log");
fail:
    mem_free(cubin);
    mem_free(errors);
    if (h)
        (void)nvPTXCompilerDestroy(&h);
    return status;
}

static spf_status compile_one(const batch *b, int64_t index)
{
    spf_status status = SPF_OK;
    const ptx_unit *unit = b->units[index];
    ptxas_result *r = &b->results[index];
    char *info = NULL;
    unsigned cap = b->reg_caps ? b->reg_caps[index] : 0;
    double t0 = timing_now_s();
    for (;;) {
        ptxas_result_clear(r);
        mem_free(info);
        info = NULL;
        TRY(compile_once(b, unit, cap, r, &info));
        ptxas_parse_verbose(info, &r->registers, &r->spill_bytes);
        unsigned next = r->status == SPF_OK ? ptxas_retry_cap(cap, r->spill_bytes) : 0;
        if (!next)
            break;
        cap = next;
    }
    r->seconds = timing_now_s() - t0;
    if (r->status == SPF_OK) {
        int cubin_registers = ptxas_cubin_registers(r->cubin, r->cubin_size);
        if (cubin_registers > 0)
            r->registers = cubin_registers;
    }
fail:
    mem_free(info);
    return status;
}

static spf_status compile_range(void *ctx, int64_t begin, int64_t end, int worker)
{
    (void)worker;
    for (int64_t i = begin; i < end; i++) {
        spf_status st = compile_one(ctx, i);
        if (st != SPF_OK)
            return st;
    }
    return SPF_OK;
}

spf_status ptx_compiler_compile(const ptx_unit *const *units, const unsigned *reg_caps, int count,
                                int sm, int threads, ptxas_result *results)
{
    if ((!units && count > 0) || count < 0 || sm <= 0 || (!results && count > 0))
        return FAIL(SPF_ERR_INTERNAL, "bad arguments");
    memset(results, 0, (size_t)count * sizeof *results);
    if (count == 0)
        return SPF_OK;
    batch b = {.units = units, .reg_caps = reg_caps, .results = results};
    snprintf(b.arch, sizeof b.arch, "--gpu-name=sm_%d", sm);
    spf_status status =
        parallel_for_progress(SPF_STAGE_COMPILE, count, 1, threads, compile_range, &b);
    if (status != SPF_OK)
        for (int i = 0; i < count; i++)
            ptxas_result_clear(&results[i]);
    return status;
}

#else /* no nvPTXCompiler in this build */

int ptx_compiler_linked(int *major, int *minor)
{
    if (major)
        *major = 0;
    if (minor)
        *minor = 0;
    return 0;
}

spf_status ptx_compiler_compile(const ptx_unit *const *units, const unsigned *reg_caps, int count,
                                int sm, int threads, ptxas_result *results)
{
    (void)units, (void)reg_caps, (void)sm, (void)threads;
    if (results && count > 0)
        memset(results, 0, (size_t)count * sizeof *results);
    return FAIL(SPF_ERR_UNSUPPORTED, "this build has no in-process PTX compiler (nvPTXCompiler "
                                     "was not found when it was configured)");
}

#endif
