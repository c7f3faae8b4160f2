/* Shared libraries opened at run time, their entry points resolved into a
 * table of function pointers (DESIGN.md decision 2: libspforge.so links
 * neither cuBLASLt nor NCCL, and works where they are missing; the
 * strategy or call that needs one says why it could not be loaded). */
#ifndef SPF_CORE_DYNLIB_H
#define SPF_CORE_DYNLIB_H

#include <stddef.h>

typedef struct dynlib_entry {
    const char *symbol;
    size_t offset; /* where its address goes in the table (offsetof) */
} dynlib_entry;

/* Open the first of names[0 .. count) that opens and has every entry,
 * writing each entry's address into table at its offset, the handle into
 * *handle and the name into path (path_cap bytes). On failure returns 0,
 * closes what it opened and writes into reason each name tried with why
 * ("libA.so.2, libA.so: cannot open shared object file: ..."; names that
 * failed alike share one reason). */
int dynlib_open(const char *const *names, int count, const dynlib_entry *entries,
                size_t entry_count, void *table, void **handle, char *path, size_t path_cap,
                char *reason, size_t cap);

void dynlib_close(void *handle); /* accepts NULL */

/* A library a process opens once, on first use, and keeps. */
typedef struct dynlib_once {
    const char *env;   /* the variable naming its file, e.g. "SPF_NCCL"            */
    int (*open)(const char *path, void *table, char *reason, size_t cap); /* NULL path:
                          the default names                                         */
    void *table;
    int state;         /* 0 not tried, 1 loaded, -1 failed (under the lock)         */
    char reason[700];
} dynlib_once;

/* The table once opened (thread-safe: the first caller opens, through
 * $env when set, the others wait), or NULL with why in reason (never
 * empty), which says to set env. */
void *dynlib_get(dynlib_once *once, char *reason, size_t cap);

#endif
