#include "strategy/dense/dense_memo.h"

#include "core/memo.h"

/* Distinct shapes a process plans for: a model has a handful; a sweep
 * over many shapes loses only the oldest reuse. */
enum { MEMO_SLOTS = 512 };

static unsigned char storage[MEMO_SLOTS][MEMO_SLOT_BYTES(dense_memo_key, dense_memo_value)];
static memo table = MEMO_INIT(storage, dense_memo_key, dense_memo_value);

int dense_memo_find(const dense_memo_key *key, dense_memo_value *out)
{
    return memo_find(&table, key, out);
}

void dense_memo_put(const dense_memo_key *key, const dense_memo_value *value)
{
    if (value->blob_size <= DENSE_MEMO_BLOB_MAX)
        memo_put(&table, key, value);
}
