/* Cache entries that hold a config's name (strategy.h). */
#include "strategy/strategy.h"

#include "core/alloc.h"
#include "core/error.h"

#include <string.h>

spf_status strategy_encode_name(const char *name, unsigned char **bytes, size_t *size)
{
    size_t n = strlen(name);
    *bytes = mem_alloc(n > 0 ? n : 1);
    if (!*bytes)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "a cache entry");
    memcpy(*bytes, name, n);
    *size = n;
    return SPF_OK;
}

spf_status strategy_decode_name(const unsigned char *bytes, size_t size, const char *what,
                                char *name, size_t cap)
{
    if (size == 0 || size >= cap)
        return FAIL(SPF_ERR_PARSE, "a %s entry of %zu bytes: expected a config name", what, size);
    memcpy(name, bytes, size);
    name[size] = '\0';
    return SPF_OK;
}
