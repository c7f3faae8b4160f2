/* The run-time loader of dynlib.h. */
#define _POSIX_C_SOURCE 200809L

#include "core/dynlib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NAMES_MAX = 8, WHY_CAP = 200 };

void dynlib_close(void *handle)
{
    if (handle)
        (void)dlclose(handle);
}

/* Open one file and resolve every entry; else NULL with why (without the
 * file's name) in why. */
static void *open_one(const char *name, const dynlib_entry *entries, size_t entry_count,
                      void *table, char *why, size_t cap)
{
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
        return NULL;
    }
    for (size_t i = 0; i < entry_count; i++) {
        void *sym = dlsym(lib, entries[i].symbol);
        if (!sym) {
            snprintf(why, cap, "no symbol %s", entries[i].symbol);
            (void)dlclose(lib);
            return NULL;
        }
        /* POSIX: a function's address round-trips through void *. */
        memcpy((char *)table + entries[i].offset, &sym, sizeof sym);
    }
    return lib;
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

int dynlib_open(const char *const *names, int count, const dynlib_entry *entries,
                size_t entry_count, void *table, void **handle, char *path, size_t path_cap,
                char *reason, size_t cap)
{
    char why[NAMES_MAX][WHY_CAP];
    if (count > NAMES_MAX)
        count = NAMES_MAX;
    *handle = NULL;
    for (int i = 0; i < count; i++) {
        void *lib = open_one(names[i], entries, entry_count, table, why[i], sizeof why[i]);
        if (lib) {
            *handle = lib;
            snprintf(path, path_cap, "%s", names[i]);
            return 1;
        }
    }
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

static pthread_mutex_t once_lock = PTHREAD_MUTEX_INITIALIZER;

void *dynlib_get(dynlib_once *once, char *reason, size_t cap)
{
    pthread_mutex_lock(&once_lock);
    if (once->state == 0) {
        const char *path = getenv(once->env);
        char why[sizeof once->reason - 64];
        once->state = once->open(path && *path ? path : NULL, once->table, why, sizeof why)
                          ? 1
                          : -1;
        if (once->state < 0)
            snprintf(once->reason, sizeof once->reason, "%s (set %s to its path)", why,
                     once->env);
    }
    const int loaded = once->state > 0;
    pthread_mutex_unlock(&once_lock);
    if (!loaded)
        snprintf(reason, cap, "%s", once->reason);
    return loaded ? once->table : NULL;
}
