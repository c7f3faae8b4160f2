/* The run-time loader of NCCL (nccl_api.h). */
#define _POSIX_C_SOURCE 200809L

#include "dist/nccl_api.h"

#include "core/dynlib.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

static const char *const default_names[] = {"libnccl.so.2", "libnccl.so"};

#define ENTRY(fn) {"nccl" #fn, offsetof(nccl_api, fn)}
static const dynlib_entry entries[] = {
    ENTRY(GroupStart),   ENTRY(GroupEnd),     ENTRY(Send),           ENTRY(Recv),
    ENTRY(CommCount),    ENTRY(CommUserRank), ENTRY(CommCuDevice),   ENTRY(GetErrorString),
    ENTRY(CommInitAll),  ENTRY(CommDestroy),
};
#undef ENTRY

static nccl_api process_api;
static int process_loaded;
static char process_reason[512];
static pthread_once_t process_once = PTHREAD_ONCE_INIT;

static void process_load(void)
{
    const char *path = getenv("SPF_NCCL");
    const char *const *names = path && *path ? &path : default_names;
    int count = path && *path ? 1 : (int)(sizeof default_names / sizeof *default_names);
    process_loaded = dynlib_open(names, count, entries, sizeof entries / sizeof *entries,
                                 &process_api, &process_api.lib, process_api.path,
                                 sizeof process_api.path, process_reason, sizeof process_reason);
}

const nccl_api *nccl_get(char *reason, size_t cap)
{
    pthread_once(&process_once, process_load);
    if (process_loaded)
        return &process_api;
    snprintf(reason, cap, "%s (set SPF_NCCL to libnccl's path)", process_reason);
    return NULL;
}
