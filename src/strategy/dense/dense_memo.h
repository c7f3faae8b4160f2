/* The dense floor's choice by shape, for this process. Which cuBLASLt
 * algorithm runs a GEMM fastest, and how long it takes, depends on the
 * problem's shape, dtype, layouts, epilogue and device, never on which
 * entries of A are zero: a model's layers of one shape (BERT-base's 73
 * Linear layers have 4 shapes, a Llama-7B's 224 have 3) need the heuristic
 * and its timing once. dense.c's build stores what it chose and timed here
 * and later builds of the same shape reuse it (its blob, as the plan cache
 * stores it, and the measured time). Thread-safe; bounded: the oldest entry
 * makes room. */
#ifndef SPF_STRATEGY_DENSE_MEMO_H
#define SPF_STRATEGY_DENSE_MEMO_H

#include <stddef.h>
#include <stdint.h>

/* What a choice depends on (all fields set; padding zeroed by the caller's
 * initializer, since keys compare as bytes). */
typedef struct dense_memo_key {
    int64_t m, k, n;
    int32_t dtype, math, b_layout, c_layout, bias, relu;
    int32_t device, cold; /* the device index; the timing rule (1: weights cold) */
    uint64_t device_id;   /* a hash of its name, memory and SM count (another GPU there) */
} dense_memo_key;

enum { DENSE_MEMO_BLOB_MAX = 256 };

typedef struct dense_memo_value {
    unsigned char blob[DENSE_MEMO_BLOB_MAX]; /* dense.c's encoding of its state */
    size_t blob_size;
    double kernel_us;                       /* the chosen algorithm's time       */
    int rank, count;                        /* its heuristic rank, of how many   */
} dense_memo_value;

/* 1 and *out when key was stored, else 0. */
int dense_memo_find(const dense_memo_key *key, dense_memo_value *out);

/* Store (or replace) key's value; a blob over DENSE_MEMO_BLOB_MAX is not
 * stored. */
void dense_memo_put(const dense_memo_key *key, const dense_memo_value *value);

#endif
