/* The in-process assembler: one nvPTXCompiler handle per unit, handed out
 * to host threads by parallel_for as ptxas.c hands out processes. Nothing
 * touches the file system; the cubins come back in memory. The compiler is
 * reached through its table (ptx_compiler_api.h): linked (libspforge.a,
 * SPF_PTX_COMPILER_LINKED) or loaded from the module beside libspforge.so. */
#define _GNU_SOURCE /* dladdr */

#include "gpu/ptx_compiler.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/parallel.h"
#include "gpu/timing.h"

#include <stdio.h>
#include <string.h>

#ifdef SPF_HAVE_NVPTXCOMPILER
#include "gpu/ptx_compiler_api.h"

#include <dlfcn.h>
#include <pthread.h>

#define MODULE_NAME "libspforge_ptxc.so"

static void say(char *why, size_t cap, const char *text)
{
    if (why && cap > 0)
        snprintf(why, cap, "%s", text);
}

const ptx_compiler_api *ptx_compiler_open(const char *path, char *why, size_t cap)
{
    char text[1024];
    void *module = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!module) {
        const char *e = dlerror();
        snprintf(text, sizeof text, "the in-process PTX compiler's module: %s", e ? e : path);
        say(why, cap, text);
        return NULL;
    }
    const ptx_compiler_api *api = dlsym(module, PTX_COMPILER_API_SYMBOL);
    if (!api || api->abi != PTX_COMPILER_API_ABI || api->size != sizeof *api) {
        if (!api)
            snprintf(text, sizeof text, "%s: no %s: not the in-process PTX compiler's module",
                     path, PTX_COMPILER_API_SYMBOL);
        else
            snprintf(text, sizeof text,
                     "%s: the PTX compiler module of another spforge (table %u of %u bytes; "
                     "this library reads table %u of %zu)",
                     path, api->abi, api->size, PTX_COMPILER_API_ABI, sizeof *api);
        say(why, cap, text);
        dlclose(module);
        return NULL;
    }
    return api; /* the module stays loaded: the table and its code live in it */
}

#ifdef SPF_PTX_COMPILER_LINKED
const ptx_compiler_api *ptx_compiler_default(char *why, size_t cap)
{
    (void)why, (void)cap;
    return &spf_ptx_compiler_api;
}
#else
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const ptx_compiler_api *loaded;
static char load_why[1024];
static const char anchor; /* an object of this library, for dladdr */

/* The module in the folder of the file that holds this code (dladdr: the
 * path libspforge.so was loaded from), as an RPATH of $ORIGIN would find
 * it, whatever the process's library path. */
static void load_beside(void)
{
    Dl_info info;
    if (!dladdr(&anchor, &info) || !info.dli_fname) {
        snprintf(load_why, sizeof load_why,
                 "the in-process PTX compiler's module: the loader cannot say which file "
                 "holds libspforge, so not where " MODULE_NAME " is");
        return;
    }
    const char *slash = strrchr(info.dli_fname, '/');
    int dir = slash ? (int)(slash - info.dli_fname + 1) : 0;
    char path[4096];
    if (snprintf(path, sizeof path, "%.*s%s", dir, info.dli_fname, MODULE_NAME) >=
        (int)sizeof path) {
        snprintf(load_why, sizeof load_why,
                 "the in-process PTX compiler's module: the path of %s is too long",
                 info.dli_fname);
        return;
    }
    loaded = ptx_compiler_open(path, load_why, sizeof load_why);
}

const ptx_compiler_api *ptx_compiler_default(char *why, size_t cap)
{
    (void)pthread_once(&load_once, load_beside);
    if (!loaded)
        say(why, cap, load_why);
    return loaded;
}
#endif

int ptx_compiler_available(int *major, int *minor)
{
    const ptx_compiler_api *api = ptx_compiler_default(NULL, 0);
    unsigned ma = 0, mi = 0;
    if (api && api->get_version(&ma, &mi) != NVPTXCOMPILE_SUCCESS)
        ma = mi = 0;
    if (major)
        *major = (int)ma;
    if (minor)
        *minor = (int)mi;
    return api != NULL;
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
static char *handle_log(const ptx_compiler_api *api, nvPTXCompilerHandle h, int info, int *oom)
{
    size_t size = 0;
    nvPTXCompileResult r = info ? api->info_log_size(h, &size) : api->error_log_size(h, &size);
    if (r != NVPTXCOMPILE_SUCCESS)
        size = 0;
    char *log = mem_alloc(size + 1);
    if (!log) {
        *oom = 1;
        return NULL;
    }
    log[0] = '\0';
    if (size > 0) {
        r = info ? api->info_log(h, log) : api->error_log(h, log);
        log[r == NVPTXCOMPILE_SUCCESS ? size : 0] = '\0';
    }
    return log;
}

typedef struct batch {
    const ptx_compiler_api *api;
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

    const ptx_compiler_api *api = b->api;
    nvPTXCompileResult res = api->create(&h, unit->size, unit->text);
    if (res == NVPTXCOMPILE_SUCCESS)
        res = api->compile(h, cap ? 5 : 4, opts);
    if (res == NVPTXCOMPILE_SUCCESS)
        res = api->program_size(h, &size);
    if (res == NVPTXCOMPILE_SUCCESS && size > 0 && !(cubin = mem_alloc(size)))
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "a cubin of %zu bytes", size);
    if (res == NVPTXCOMPILE_SUCCESS)
        res = size > 0 ? api->program(h, cubin) : NVPTXCOMPILE_ERROR_INTERNAL;
    if (res == NVPTXCOMPILE_ERROR_OUT_OF_MEMORY)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "nvPTXCompiler: %s", result_name(res));
    *info = h ? handle_log(api, h, 1, &oom) : NULL;
    if (res == NVPTXCOMPILE_SUCCESS) {
        r->status = SPF_OK;
        r->cubin = cubin;
        r->cubin_size = size;
        cubin = NULL;
    } else {
        /* as ptxas's output is kept for a rejected unit, with the API's
         * verdict first: it says which assembler spoke */
        errors = h ? handle_log(api, h, 0, &oom) : NULL;
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
        (void)api->destroy(&h);
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

spf_status ptx_compiler_compile(const ptx_compiler_api *api, const ptx_unit *const *units,
                                const unsigned *reg_caps, int count, int sm, int threads,
                                ptxas_result *results)
{
    if ((!units && count > 0) || count < 0 || sm <= 0 || (!results && count > 0))
        return FAIL(SPF_ERR_INTERNAL, "bad arguments");
    memset(results, 0, (size_t)count * sizeof *results);
    char why[1024];
    if (!api && !(api = ptx_compiler_default(why, sizeof why)))
        return FAIL(SPF_ERR_UNSUPPORTED, "%s", why);
    if (count == 0)
        return SPF_OK;
    batch b = {.api = api, .units = units, .reg_caps = reg_caps, .results = results};
    snprintf(b.arch, sizeof b.arch, "--gpu-name=sm_%d", sm);
    spf_status status =
        parallel_for_progress(SPF_STAGE_COMPILE, count, 1, threads, compile_range, &b);
    if (status != SPF_OK)
        for (int i = 0; i < count; i++)
            ptxas_result_clear(&results[i]);
    return status;
}

#else /* no nvPTXCompiler in this build */

#define NOT_BUILT                                                                               \
    "this build has no in-process PTX compiler (nvPTXCompiler was not found when it was "      \
    "configured)"

const ptx_compiler_api *ptx_compiler_default(char *why, size_t cap)
{
    if (why && cap > 0)
        snprintf(why, cap, "%s", NOT_BUILT);
    return NULL;
}

const ptx_compiler_api *ptx_compiler_open(const char *path, char *why, size_t cap)
{
    (void)path;
    return ptx_compiler_default(why, cap);
}

int ptx_compiler_available(int *major, int *minor)
{
    if (major)
        *major = 0;
    if (minor)
        *minor = 0;
    return 0;
}

spf_status ptx_compiler_compile(const ptx_compiler_api *api, const ptx_unit *const *units,
                                const unsigned *reg_caps, int count, int sm, int threads,
                                ptxas_result *results)
{
    (void)api, (void)units, (void)reg_caps, (void)sm, (void)threads;
    if (results && count > 0)
        memset(results, 0, (size_t)count * sizeof *results);
    return FAIL(SPF_ERR_UNSUPPORTED, "%s", NOT_BUILT);
}

#endif
