/* The run-time loader of cuDNN (cudnn_api.h). */
#define _POSIX_C_SOURCE 200809L

#include "conv/cudnn_api.h"

#include "core/dynlib.h"

#include <stddef.h>
#include <string.h>

static const char *const default_names[] = {"libcudnn.so.9", "libcudnn.so.8", "libcudnn.so"};

#define ENTRY(fn) {"cudnn" #fn, offsetof(cudnn_api, fn)}
static const dynlib_entry entries[] = {
    ENTRY(GetVersion),
    ENTRY(GetErrorString),
    ENTRY(Create),
    ENTRY(Destroy),
    ENTRY(SetStream),
    ENTRY(BackendCreateDescriptor),
    ENTRY(BackendDestroyDescriptor),
    ENTRY(BackendFinalize),
    ENTRY(BackendSetAttribute),
    ENTRY(BackendGetAttribute),
    ENTRY(BackendExecute),
};
#undef ENTRY

int cudnn_open(const char *path, cudnn_api *out, char *reason, size_t cap)
{
    memset(out, 0, sizeof *out);
    const char *const *names = path ? &path : default_names;
    int count = path ? 1 : (int)(sizeof default_names / sizeof *default_names);
    int ok = dynlib_open(names, count, entries, sizeof entries / sizeof *entries, out, &out->lib,
                         out->path, sizeof out->path, reason, cap);
    if (!ok)
        memset(out, 0, sizeof *out);
    return ok;
}

void cudnn_close(cudnn_api *api)
{
    if (!api)
        return;
    dynlib_close(api->lib);
    memset(api, 0, sizeof *api);
}

static int open_table(const char *path, void *table, char *reason, size_t cap)
{
    return cudnn_open(path, table, reason, cap);
}

static cudnn_api process_api;
static dynlib_once process_once = {.env = "SPF_CUDNN", .open = open_table,
                                   .table = &process_api};

const cudnn_api *cudnn_get(char *reason, size_t cap)
{
    return dynlib_get(&process_once, reason, cap);
}
