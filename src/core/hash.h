/* XXH64 (Yann Collet's xxHash, 64-bit variant), written from its published
 * specification, with an incremental interface, and the two matrix hashes
 * that key the plan cache (DESIGN.md decision 5). Every multi-byte quantity
 * is fed as its little-endian encoding, so a hash is the same on every run
 * and every machine. */
#ifndef SPF_CORE_HASH_H
#define SPF_CORE_HASH_H

#include "spforge.h"

#include <stddef.h>
#include <stdint.h>

typedef struct hash_state {
    uint64_t acc[4];      /* the four lanes of the 32-byte stripe loop */
    uint64_t seed;
    uint64_t total_len;   /* bytes fed so far                          */
    unsigned char buf[32]; /* a partial stripe                         */
    size_t buf_len;
} hash_state;

void hash_init(hash_state *h, uint64_t seed);
void hash_update(hash_state *h, const void *data, size_t len);
/* The hash of everything fed so far (the state stays usable). */
uint64_t hash_final(const hash_state *h);

/* Feed integers and float bit patterns as little-endian bytes. */
void hash_update_u64(hash_state *h, uint64_t v);
void hash_update_i64_array(hash_state *h, const int64_t *v, size_t count);
void hash_update_i32_array(hash_state *h, const int32_t *v, size_t count);
void hash_update_f32_bits(hash_state *h, const float *v, size_t count);

/* One-shot XXH64 of a byte buffer. */
uint64_t hash_bytes(const void *data, size_t len, uint64_t seed);

/* Hash of (rows, cols, row_ptr, col_idx): the sparsity pattern only. */
uint64_t matrix_pattern_hash(const spf_matrix *a);
/* Hash of (nnz, value bit patterns): the values only, in CSR order. */
uint64_t matrix_values_hash(const spf_matrix *a);

#endif
