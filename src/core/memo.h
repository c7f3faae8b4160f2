/* A bounded table, for the process, from fixed-size byte keys to
 * fixed-size values: what a strategy worked out about a problem that the
 * next plan of the same problem would only work out again (the dense
 * floor's cuBLASLt choice by shape, the structured strategy's pattern by
 * matrix). Thread-safe; when every slot is used, the oldest entry makes
 * room. Keys compare as bytes: a caller zeroes a key's padding.
 *
 *   static unsigned char storage[SLOTS][MEMO_SLOT_BYTES(my_key, my_value)];
 *   static memo table = MEMO_INIT(storage, my_key, my_value);
 */
#ifndef SPF_CORE_MEMO_H
#define SPF_CORE_MEMO_H

#include <pthread.h>
#include <stddef.h>

typedef struct memo {
    pthread_mutex_t lock;
    unsigned char *slots;      /* count slots: a used byte, the key, the value */
    size_t key_size, value_size;
    int count, next;           /* next: the slot replaced when all are used    */
} memo;

#define MEMO_SLOT_BYTES(key_type, value_type) (1 + sizeof(key_type) + sizeof(value_type))
#define MEMO_INIT(storage, key_type, value_type)                                       \
    {PTHREAD_MUTEX_INITIALIZER, &(storage)[0][0], sizeof(key_type), sizeof(value_type), \
     (int)(sizeof(storage) / sizeof((storage)[0])), 0}

/* 1 and *value (value_size bytes) when key was stored, else 0. */
int memo_find(memo *m, const void *key, void *value);

/* Store key's value, replacing an older one of the same key. */
void memo_put(memo *m, const void *key, const void *value);

#endif
