/* XXH64 from its specification (github.com/Cyan4973/xxHash, doc/xxhash_spec.md)
 * and the pattern / values hashes of a matrix built on it. The input is
 * always read as little-endian bytes, never as host words, so the result
 * does not depend on the machine. */
#include "core/hash.h"

#include "core/matrix.h"

#include <string.h>

static const uint64_t P1 = 0x9E3779B185EBCA87ULL;
static const uint64_t P2 = 0xC2B2AE3D27D4EB4FULL;
static const uint64_t P3 = 0x165667B19E3779F9ULL;
static const uint64_t P4 = 0x85EBCA77C2B2AE63ULL;
static const uint64_t P5 = 0x27D4EB2F165667C5ULL;

static uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

/* A little-endian host's words are their own encoding: it hashes arrays
 * in place, where another host encodes them byte by byte. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
enum { HOST_LE = 1 };
#else
enum { HOST_LE = 0 };
#endif

static uint64_t read_le64(const unsigned char *p)
{
    uint64_t v = 0;
    if (HOST_LE) {
        memcpy(&v, p, sizeof v);
        return v;
    }
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint32_t read_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t xxh_round(uint64_t acc, uint64_t input)
{
    acc += input * P2;
    return rotl64(acc, 31) * P1;
}

static uint64_t xxh_merge(uint64_t h, uint64_t acc)
{
    h ^= xxh_round(0, acc);
    return h * P1 + P4;
}

static void consume_stripe(hash_state *h, const unsigned char *p)
{
    for (int i = 0; i < 4; i++)
        h->acc[i] = xxh_round(h->acc[i], read_le64(p + 8 * i));
}

void hash_init(hash_state *h, uint64_t seed)
{
    memset(h, 0, sizeof *h);
    h->seed = seed;
    h->acc[0] = seed + P1 + P2;
    h->acc[1] = seed + P2;
    h->acc[2] = seed;
    h->acc[3] = seed - P1;
}

void hash_update(hash_state *h, const void *data, size_t len)
{
    if (len == 0)
        return;
    const unsigned char *p = data;
    h->total_len += len;
    if (h->buf_len) {
        size_t take = sizeof h->buf - h->buf_len;
        if (take > len)
            take = len;
        memcpy(h->buf + h->buf_len, p, take);
        h->buf_len += take;
        p += take;
        len -= take;
        if (h->buf_len < sizeof h->buf)
            return;
        consume_stripe(h, h->buf);
        h->buf_len = 0;
    }
    for (; len >= 32; p += 32, len -= 32)
        consume_stripe(h, p);
    memcpy(h->buf, p, len);
    h->buf_len = len;
}

uint64_t hash_final(const hash_state *h)
{
    uint64_t v;
    if (h->total_len >= 32) {
        v = rotl64(h->acc[0], 1) + rotl64(h->acc[1], 7) + rotl64(h->acc[2], 12) +
            rotl64(h->acc[3], 18);
        for (int i = 0; i < 4; i++)
            v = xxh_merge(v, h->acc[i]);
    } else {
        v = h->seed + P5;
    }
    v += h->total_len;
    const unsigned char *p = h->buf;
    size_t len = h->buf_len;
    for (; len >= 8; p += 8, len -= 8)
        v = rotl64(v ^ xxh_round(0, read_le64(p)), 27) * P1 + P4;
    if (len >= 4) {
        v = rotl64(v ^ (uint64_t)read_le32(p) * P1, 23) * P2 + P3;
        p += 4;
        len -= 4;
    }
    for (; len > 0; p++, len--)
        v = rotl64(v ^ *p * P5, 11) * P1;
    v ^= v >> 33;
    v *= P2;
    v ^= v >> 29;
    v *= P3;
    v ^= v >> 32;
    return v;
}

uint64_t hash_bytes(const void *data, size_t len, uint64_t seed)
{
    hash_state h;
    hash_init(&h, seed);
    hash_update(&h, data, len);
    return hash_final(&h);
}

/* Little-endian encodings go through a small staging buffer so that arrays
 * are fed in blocks rather than word by word. */
enum { STAGE_BYTES = 512 };

static void put_le(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

void hash_update_u64(hash_state *h, uint64_t v)
{
    unsigned char b[8];
    put_le(b, v, 8);
    hash_update(h, b, sizeof b);
}

void hash_update_i64_array(hash_state *h, const int64_t *v, size_t count)
{
    if (HOST_LE) {
        hash_update(h, v, count * sizeof *v);
        return;
    }
    unsigned char stage[STAGE_BYTES];
    size_t used = 0;
    for (size_t i = 0; i < count; i++) {
        put_le(stage + used, (uint64_t)v[i], 8);
        used += 8;
        if (used == sizeof stage) {
            hash_update(h, stage, used);
            used = 0;
        }
    }
    hash_update(h, stage, used);
}

/* 32-bit words: int32 indices and float bit patterns share this loop. */
static void update_u32_words(hash_state *h, const void *words, size_t count)
{
    if (HOST_LE) {
        hash_update(h, words, count * 4);
        return;
    }
    unsigned char stage[STAGE_BYTES];
    size_t used = 0;
    for (size_t i = 0; i < count; i++) {
        uint32_t w;
        memcpy(&w, (const unsigned char *)words + 4 * i, 4);
        put_le(stage + used, w, 4);
        used += 4;
        if (used == sizeof stage) {
            hash_update(h, stage, used);
            used = 0;
        }
    }
    hash_update(h, stage, used);
}

void hash_update_i32_array(hash_state *h, const int32_t *v, size_t count)
{
    update_u32_words(h, v, count);
}

void hash_update_f32_bits(hash_state *h, const float *v, size_t count)
{
    update_u32_words(h, v, count);
}

/* Distinct seeds keep the two hashes of one matrix from coinciding by
 * construction (e.g. both over empty arrays). */
static const uint64_t PATTERN_SEED = 0x5350465041540001ULL;
static const uint64_t VALUES_SEED = 0x53504656414c0001ULL;

/* A matrix's arrays never change once it is made, so each hash is
 * computed once and kept in it (0: not yet; a hash that is 0 is computed
 * again each time). Plans of several N on one matrix, each keying the
 * cache, read it from there. Threads racing on a matrix compute the same
 * value; the word is read and written whole. */
static uint64_t kept(const uint64_t *slot) { return __atomic_load_n(slot, __ATOMIC_RELAXED); }

static uint64_t keep(const uint64_t *slot, uint64_t v)
{
    __atomic_store_n((uint64_t *)slot, v, __ATOMIC_RELAXED);
    return v;
}

static uint64_t pattern_hash(const spf_matrix *a)
{
    hash_state h;
    hash_init(&h, PATTERN_SEED);
    hash_update_u64(&h, (uint64_t)a->rows);
    hash_update_u64(&h, (uint64_t)a->cols);
    hash_update_i64_array(&h, a->row_ptr, (size_t)a->rows + 1);
    hash_update_i32_array(&h, a->col_idx, (size_t)a->nnz);
    return hash_final(&h);
}

static uint64_t values_hash(const spf_matrix *a)
{
    hash_state h;
    hash_init(&h, VALUES_SEED);
    hash_update_u64(&h, (uint64_t)a->nnz);
    hash_update_f32_bits(&h, a->values, (size_t)a->nnz);
    return hash_final(&h);
}

uint64_t matrix_pattern_hash(const spf_matrix *a)
{
    uint64_t v = kept(&a->pattern_hash);
    return v ? v : keep(&a->pattern_hash, pattern_hash(a));
}

uint64_t matrix_values_hash(const spf_matrix *a)
{
    uint64_t v = kept(&a->values_hash);
    return v ? v : keep(&a->values_hash, values_hash(a));
}
