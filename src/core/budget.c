/* The work budget (budget.h) and the saturating size arithmetic. */
#define _POSIX_C_SOURCE 200809L

#include "core/budget.h"

#include "core/error.h"

#include <errno.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

static _Atomic int64_t set_bytes; /* spf_set_max_bytes: 0 = not set */

void spf_set_max_bytes(int64_t bytes) { atomic_store(&set_bytes, bytes); }

/* Half the physical memory, or INT64_MAX where the system does not say. */
static int64_t half_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0)
        return INT64_MAX;
    return bytes_mul((int64_t)pages, (int64_t)page) / 2;
}

int env_bytes(const char *name, int64_t *value)
{
    const char *env = getenv(name);
    if (!env || !*env)
        return 0;
    char *end = NULL;
    errno = 0;
    long long parsed = strtoll(env, &end, 10);
    if (end == env || *end || errno == ERANGE)
        return -1;
    *value = parsed;
    return 1;
}

/* The budget in force (> 0, or -1 for none); *bad gets a malformed
 * $SPFORGE_MAX_BYTES, else NULL. Sets no error. */
static int64_t resolve(const char **bad)
{
    *bad = NULL;
    int64_t v = atomic_load(&set_bytes);
    if (v == 0 && env_bytes("SPFORGE_MAX_BYTES", &v) < 0)
        *bad = getenv("SPFORGE_MAX_BYTES");
    if (v == 0) {
        int64_t half = half_memory();
        v = SPF_MAX_BYTES_DEFAULT < half ? SPF_MAX_BYTES_DEFAULT : half;
    }
    return v < 0 ? -1 : v;
}

int64_t budget_peek(void)
{
    const char *bad;
    return resolve(&bad);
}

spf_status budget_limit(int64_t *limit)
{
    const char *bad;
    *limit = resolve(&bad);
    if (bad)
        return error_set(SPF_ERR_INVALID_ARGUMENT, "$SPFORGE_MAX_BYTES",
                         "expected an integer byte count (< 0: no budget), got '%s'", bad);
    return SPF_OK;
}

int64_t spf_max_bytes(void)
{
    int64_t limit = 0;
    return budget_limit(&limit) == SPF_OK ? limit : 0;
}

spf_status budget_check(const char *input, int64_t need, const char *what)
{
    int64_t limit = 0;
    spf_status status = budget_limit(&limit);
    if (status != SPF_OK || limit < 0 || need <= limit)
        return status;
    char bytes[32];
    snprintf(bytes, sizeof bytes, need == INT64_MAX ? "more than 2^63" : "%lld", (long long)need);
    return error_set(SPF_ERR_OUT_OF_MEMORY, input, "%s needs %s bytes, over the work budget "
                     "of %lld bytes (raise it with --max-bytes, $SPFORGE_MAX_BYTES or "
                     "spf_set_max_bytes; < 0 for none)", what, bytes, (long long)limit);
}

int64_t bytes_mul(int64_t count, int64_t size)
{
    if (count <= 0 || size <= 0)
        return 0;
    return count > INT64_MAX / size ? INT64_MAX : count * size;
}

int64_t bytes_add(int64_t a, int64_t b)
{
    a = a < 0 ? 0 : a;
    b = b < 0 ? 0 : b;
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

int64_t csr_bytes(int64_t rows, int64_t nnz)
{
    return bytes_add(bytes_mul(bytes_add(rows, 1), (int64_t)sizeof(int64_t)),
                     bytes_mul(nnz, (int64_t)(sizeof(int32_t) + sizeof(float))));
}
