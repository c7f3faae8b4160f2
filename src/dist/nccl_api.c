/* The run-time loader of NCCL (nccl_api.h). */
#define _POSIX_C_SOURCE 200809L

#include "dist/nccl_api.h"

#include "core/dynlib.h"

#include <stddef.h>

static const char *const default_names[] = {"libnccl.so.2", "libnccl.so"};

#define ENTRY(fn) {"nccl" #fn, offsetof(nccl_api, fn)}
static const dynlib_entry entries[] = {
    ENTRY(GroupStart),   ENTRY(GroupEnd),     ENTRY(Send),           ENTRY(Recv),
    ENTRY(CommCount),    ENTRY(CommUserRank), ENTRY(CommCuDevice),   ENTRY(GetErrorString),
    ENTRY(CommInitAll),  ENTRY(CommDestroy),
};
#undef ENTRY

/* Open path (NULL: the default names) into the table. */
static int open_table(const char *path, void *table, char *reason, size_t cap)
{
    nccl_api *api = table;
    const char *const *names = path ? &path : default_names;
    int count = path ? 1 : (int)(sizeof default_names / sizeof *default_names);
    return dynlib_open(names, count, entries, sizeof entries / sizeof *entries, api, &api->lib,
                       api->path, sizeof api->path, reason, cap);
}

static nccl_api process_api;
static dynlib_once process_once = {.env = "SPF_NCCL", .open = open_table,
                                   .table = &process_api};

const nccl_api *nccl_get(char *reason, size_t cap)
{
    return dynlib_get(&process_once, reason, cap);
}
