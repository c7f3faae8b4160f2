/* Internal allocation through the injectable allocator (spf_set_allocator).
 * Every size product is overflow-checked before it reaches the allocator,
 * and no array larger than the work budget (core/budget.h) is allocated. */
#ifndef SPF_CORE_ALLOC_H
#define SPF_CORE_ALLOC_H

#include <stddef.h>
#include <stdint.h>

void *mem_alloc(size_t size);
/* count * size bytes, zeroed; NULL on overflow, over the budget or failure. */
void *mem_calloc(size_t count, size_t size);
/* count * size bytes, not zeroed; NULL on overflow, over the budget or failure. */
void *mem_alloc_array(size_t count, size_t size);
void *mem_realloc_array(void *ptr, size_t count, size_t size);
void mem_free(void *ptr);

#endif
