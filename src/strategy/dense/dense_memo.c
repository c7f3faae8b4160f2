#include "strategy/dense/dense_memo.h"

#include <pthread.h>
#include <string.h>

/* Distinct shapes a process plans for: a model has a handful; a sweep
 * over many shapes loses only the oldest reuse. */
enum { MEMO_SLOTS = 512 };

typedef struct memo_slot {
    int used;
    dense_memo_key key;
    dense_memo_value value;
} memo_slot;

static memo_slot slots[MEMO_SLOTS];
static int next_slot; /* the next one replaced when all are used: the oldest */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static memo_slot *slot_of(const dense_memo_key *key)
{
    for (int i = 0; i < MEMO_SLOTS; i++)
        if (slots[i].used && memcmp(&slots[i].key, key, sizeof *key) == 0)
            return &slots[i];
    return NULL;
}

int dense_memo_find(const dense_memo_key *key, dense_memo_value *out)
{
    pthread_mutex_lock(&lock);
    const memo_slot *s = slot_of(key);
    if (s)
        *out = s->value;
    pthread_mutex_unlock(&lock);
    return s != NULL;
}

void dense_memo_put(const dense_memo_key *key, const dense_memo_value *value)
{
    if (value->blob_size > DENSE_MEMO_BLOB_MAX)
        return;
    pthread_mutex_lock(&lock);
    memo_slot *s = slot_of(key);
    if (!s) {
        s = &slots[next_slot];
        next_slot = (next_slot + 1) % MEMO_SLOTS;
    }
    s->used = 1;
    s->key = *key;
    s->value = *value;
    pthread_mutex_unlock(&lock);
}
