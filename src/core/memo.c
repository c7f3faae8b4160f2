/* The process's bounded memo tables (memo.h). */
#include "core/memo.h"

#include <string.h>

static unsigned char *slot_at(const memo *m, int i)
{
    return m->slots + (size_t)i * (1 + m->key_size + m->value_size);
}

static unsigned char *slot_of(const memo *m, const void *key)
{
    for (int i = 0; i < m->count; i++) {
        unsigned char *s = slot_at(m, i);
        if (s[0] && memcmp(s + 1, key, m->key_size) == 0)
            return s;
    }
    return NULL;
}

int memo_find(memo *m, const void *key, void *value)
{
    pthread_mutex_lock(&m->lock);
    const unsigned char *s = slot_of(m, key);
    if (s)
        memcpy(value, s + 1 + m->key_size, m->value_size);
    pthread_mutex_unlock(&m->lock);
    return s != NULL;
}

void memo_put(memo *m, const void *key, const void *value)
{
    pthread_mutex_lock(&m->lock);
    unsigned char *s = slot_of(m, key);
    if (!s) {
        s = slot_at(m, m->next);
        m->next = (m->next + 1) % m->count;
    }
    s[0] = 1;
    memcpy(s + 1, key, m->key_size);
    memcpy(s + 1 + m->key_size, value, m->value_size);
    pthread_mutex_unlock(&m->lock);
}
