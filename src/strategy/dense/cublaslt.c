/* The run-time loader of cuBLASLt (cublaslt.h). */
#define _POSIX_C_SOURCE 200809L

#include "strategy/dense/cublaslt.h"

#ifdef SPF_HAVE_CUDA

#include "core/dynlib.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sonames newest first: the toolkit spforge is built with (13), then the
 * one before, whose entry points used here are the same; the unversioned
 * name last (a development install, or a link a user made). */
static const char *const default_names[] = {"libcublasLt.so.13", "libcublasLt.so.12",
                                            "libcublasLt.so"};
enum { NAME_COUNT = sizeof default_names / sizeof default_names[0] };

#define ENTRY(fn) {"cublasLt" #fn, offsetof(cublaslt_api, fn)}
static const dynlib_entry entries[] = {
    ENTRY(Create),
    ENTRY(Destroy),
    ENTRY(GetVersion),
    ENTRY(GetStatusString),
    ENTRY(MatmulDescInit_internal),
    ENTRY(MatmulDescSetAttribute),
    ENTRY(MatrixLayoutInit_internal),
    ENTRY(MatmulPreferenceInit_internal),
    ENTRY(MatmulPreferenceSetAttribute),
    ENTRY(MatmulAlgoGetHeuristic),
    ENTRY(MatmulAlgoCheck),
    ENTRY(MatmulAlgoConfigGetAttribute),
    ENTRY(MatmulAlgoConfigSetAttribute),
    ENTRY(Matmul),
};
#undef ENTRY

void cublaslt_close(cublaslt_api *api)
{
    if (!api)
        return;
    dynlib_close(api->lib);
    memset(api, 0, sizeof *api);
}

int cublaslt_open(const char *path, cublaslt_api *out, char *reason, size_t cap)
{
    memset(out, 0, sizeof *out);
    const char *const *names = path ? &path : default_names;
    int ok = dynlib_open(names, path ? 1 : NAME_COUNT, entries, sizeof entries / sizeof *entries,
                         out, &out->lib, out->path, sizeof out->path, reason, cap);
    if (!ok)
        memset(out, 0, sizeof *out);
    return ok;
}

static int open_table(const char *path, void *table, char *reason, size_t cap)
{
    return cublaslt_open(path, table, reason, cap);
}

static cublaslt_api process_api;
static dynlib_once process_once = {.env = "SPF_CUBLASLT", .open = open_table,
                                   .table = &process_api};

const cublaslt_api *cublaslt_get(char *reason, size_t cap)
{
    return dynlib_get(&process_once, reason, cap);
}

#endif /* SPF_HAVE_CUDA */
