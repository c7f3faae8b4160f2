/* The run-time loader of cuBLASLt (cublaslt.h). */
#define _POSIX_C_SOURCE 200809L

#include "strategy/dense/cublaslt.h"

#ifdef SPF_HAVE_CUDA

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sonames newest first: the toolkit spforge is built with (13), then the
 * one before, whose entry points used here are the same; the unversioned
 * name last (a development install, or a link a user made). */
static const char *const default_names[] = {"libcublasLt.so.13", "libcublasLt.so.12",
                                            "libcublasLt.so"};
enum { NAME_COUNT = sizeof default_names / sizeof default_names[0], WHY_CAP = 200 };

#define ENTRY(fn) {"cublasLt" #fn, offsetof(cublaslt_api, fn)}
static const struct {
    const char *symbol;
    size_t offset;
} entries[] = {
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
    if (api->lib)
        (void)dlclose(api->lib);
    memset(api, 0, sizeof *api);
}

/* Open one file and resolve every entry; else 0 with why (without the
 * file's name) in why. */
static int open_one(const char *name, cublaslt_api *out, char *why, size_t cap)
{
    memset(out, 0, sizeof *out);
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *err = dlerror();
        if (!err)
            err = "dlopen failed";
        /* glibc says "<name>: <what>"; the name is said once, by the caller. */
        size_t len = strlen(name);
        if (strncmp(err, name, len) == 0 && strncmp(err + len, ": ", 2) == 0)
            err += len + 2;
        snprintf(why, cap, "%s", err);
        return 0;
    }
    out->lib = lib;
    snprintf(out->path, sizeof out->path, "%s", name);
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        void *sym = dlsym(lib, entries[i].symbol);
        if (!sym) {
            snprintf(why, cap, "no symbol %s", entries[i].symbol);
            cublaslt_close(out);
            return 0;
        }
        /* POSIX: a function's address round-trips through void *. */
        memcpy((char *)out + entries[i].offset, &sym, sizeof sym);
    }
    return 1;
}

/* Append text to buf (cap bytes, *used of them taken), cut at the end. */
static void append(char *buf, size_t cap, size_t *used, const char *text)
{
    if (*used + 1 >= cap)
        return;
    size_t n = strlen(text), room = cap - 1 - *used;
    if (n > room)
        n = room;
    memcpy(buf + *used, text, n);
    *used += n;
    buf[*used] = '\0';
}

int cublaslt_open(const char *path, cublaslt_api *out, char *reason, size_t cap)
{
    const char *const *names = path ? &path : default_names;
    int count = path ? 1 : NAME_COUNT;
    char why[NAME_COUNT][WHY_CAP];
    for (int i = 0; i < count; i++)
        if (open_one(names[i], out, why[i], sizeof why[i]))
            return 1;
    /* Names that failed alike share one reason: "a, b, c: cannot open
     * shared object file: No such file or directory". */
    size_t used = 0;
    if (cap)
        reason[0] = '\0';
    for (int i = 0; i < count; i++) {
        int same_next = i + 1 < count && strcmp(why[i], why[i + 1]) == 0;
        append(reason, cap, &used, names[i]);
        append(reason, cap, &used, same_next ? ", " : ": ");
        if (!same_next) {
            append(reason, cap, &used, why[i]);
            if (i + 1 < count)
                append(reason, cap, &used, "; ");
        }
    }
    return 0;
}

static cublaslt_api process_api;
static int process_loaded;
static char process_reason[512];
static pthread_once_t process_once = PTHREAD_ONCE_INIT;

static void process_load(void)
{
    process_loaded = cublaslt_open(getenv("SPF_CUBLASLT"), &process_api, process_reason,
                                   sizeof process_reason);
}

const cublaslt_api *cublaslt_get(char *reason, size_t cap)
{
    pthread_once(&process_once, process_load);
    if (process_loaded)
        return &process_api;
    snprintf(reason, cap, "%s", process_reason);
    return NULL;
}

#endif /* SPF_HAVE_CUDA */
