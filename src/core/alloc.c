#include "core/alloc.h"

#include "core/budget.h"
#include "spforge.h"

#include <stdlib.h>
#include <string.h>

static void *default_alloc(size_t size, void *user) { (void)user; return malloc(size ? size : 1); }
static void *default_realloc(void *p, size_t size, void *user) { (void)user; return realloc(p, size ? size : 1); }
static void default_free(void *p, void *user) { (void)user; free(p); }

static spf_allocator current = {default_alloc, default_realloc, default_free, NULL};

void spf_set_allocator(const spf_allocator *allocator)
{
    if (allocator && allocator->alloc && allocator->realloc && allocator->free)
        current = *allocator;
    else
        current = (spf_allocator){default_alloc, default_realloc, default_free, NULL};
}

void *mem_alloc(size_t size) { return current.alloc(size, current.user); }

/* Whether count * size bytes overflow or exceed the work budget: the last
 * guard behind the checks that name the input (budget.h), so that no single
 * allocation of the library outgrows it. */
static int refused(size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size)
        return 1;
    int64_t limit = budget_peek();
    return limit >= 0 && count * size > (uint64_t)limit;
}

void *mem_alloc_array(size_t count, size_t size)
{
    if (refused(count, size))
        return NULL;
    return current.alloc(count * size, current.user);
}

void *mem_calloc(size_t count, size_t size)
{
    void *p = mem_alloc_array(count, size);
    if (p)
        memset(p, 0, count * size);
    return p;
}

void *mem_realloc_array(void *ptr, size_t count, size_t size)
{
    if (refused(count, size))
        return NULL;
    return current.realloc(ptr, count * size, current.user);
}

void mem_free(void *ptr)
{
    if (ptr)
        current.free(ptr, current.user);
}
