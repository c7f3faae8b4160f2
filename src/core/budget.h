/* The work budget: the most host memory one call may allocate for what its
 * input describes (a shape a header declares, a generator's options, a
 * dense conversion, an output buffer). A file of a few bytes can declare a
 * 10^8-row matrix or a 1 x 2^31 dense array; below the machine's memory such
 * allocations succeed lazily and then fill it, so every size derived from
 * input is computed with saturating arithmetic and checked here before
 * anything is allocated.
 *
 * The budget is spf_set_max_bytes's value, else $SPFORGE_MAX_BYTES, else
 * SPF_MAX_BYTES_DEFAULT capped at half the machine's physical memory; a
 * negative value means no budget. Reads use their own limit first where one
 * is given (spf_read_options.max_bytes, $SPFORGE_READ_MAX_BYTES). */
#ifndef SPF_CORE_BUDGET_H
#define SPF_CORE_BUDGET_H

#include "spforge.h"

#include <stdint.h>

/* The budget in force: > 0 bytes, or -1 for none. SPF_ERR_INVALID_ARGUMENT
 * for a malformed $SPFORGE_MAX_BYTES (the message names it). */
spf_status budget_limit(int64_t *limit);

/* The same without the error: a malformed $SPFORGE_MAX_BYTES counts as
 * unset (for the allocator's guard, which must not replace a message). */
int64_t budget_peek(void);

/* SPF_OK if `need` bytes for `what` fit the budget, else
 * SPF_ERR_OUT_OF_MEMORY "<input>: <what> needs N bytes, over the work budget
 * of M bytes (raise it with ...)". input names the file or the shape. */
spf_status budget_check(const char *input, int64_t need, const char *what);

/* The environment variable name as a byte count: 0 when unset or empty, 1
 * with *value set, -1 when it is not a decimal int64. */
int env_bytes(const char *name, int64_t *value);

/* count * size and a + b, saturating at INT64_MAX (sizes from input may be
 * absurd; the check then refuses them). Negative operands count as 0. */
int64_t bytes_mul(int64_t count, int64_t size);
int64_t bytes_add(int64_t a, int64_t b);

/* The bytes of a CSR matrix's arrays: row_ptr, col_idx and values. */
int64_t csr_bytes(int64_t rows, int64_t nnz);

#endif
