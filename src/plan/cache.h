/* The on-disk plan cache (DESIGN.md decision 5): a built plan is stored
 * under a key of everything that decides it — the matrix (pattern and
 * values hashes), M, K, N, dtype, epilogue, the request (strategy, tuning,
 * search, row reordering, forced configuration), the device architecture,
 * the library and the format version — so that a second spf_plan_create of
 * the same input loads the linked kernel instead of searching and
 * compiling again.
 *
 * One file per key, named by the XXH64 of the key (16 hex digits +
 * ".plan"), under $SPFORGE_CACHE_DIR, else $HOME/.cache/spforge. Files are
 * written whole to a temporary file in the same folder and renamed into
 * place, so a reader sees either the old entry or the new one. Every file
 * carries the full key and an XXH64 trailer: a file that is truncated,
 * corrupt, of another format version or of another key (a file-name
 * collision) is ignored with a warning and rebuilt, never trusted.
 *
 * File layout, every integer little-endian, doubles as their IEEE-754 bit
 * patterns in a little-endian u64:
 *   magic "SPFPLAN\0" (8) | u32 format version | u32 key bytes | key
 *   | i32 strategy | i32 m1 n1 v prefetch ksplit | i32 registers
 *   | u32 grid[3] block[3] shared_bytes | i32 configs_tried | i64 code_bytes
 *   | f64 kernel_us tune_s verify_error
 *   | i32 search space after_register after_utilization after_balance
 *     after_rank evaluated | f64 search analysis_s reorder_s rank_s
 *     proxy_build_s proxy_compile_s proxy_run_s final_compile_s
 *     selfcheck_s total_s | u32 name length | name bytes
 *   | u64 payload bytes | payload | u64 XXH64 of everything before it
 * and the key as: u32 format version | 32 bytes library version (NUL
 *   padded) | u64 pattern hash, values hash | i64 m k n nnz
 *   | i32 dtype f16x2 bias relu sm strategy exhaustive tune_space search
 *     search_top_k search_proxies reorder | i32 forced m1 n1 v prefetch
 *     ksplit.
 *
 * spf_plan_create (src/gpu/plan.c) looks a GPU plan up once the device
 * context exists, unless options.cache is 0 or the folder is "off": a hit
 * rebuilds the plan from the entry (GENERIC: the matrix uploaded again;
 * UNROLLED: the stored image through jit_module_load_image) with no search,
 * no compile and no self-check, since only verified plans are stored; a
 * miss builds and checks the plan, then stores it, a failure to store only
 * logged. The CPU strategy is never cached; a plan from the cache has no
 * tuning log. */
#ifndef SPF_PLAN_CACHE_H
#define SPF_PLAN_CACHE_H

#include "spforge.h"

#include <stddef.h>
#include <stdint.h>

/* Bumped whenever the layout above or the meaning of a field changes; it
 * is part of the key too, so entries of an older format get other file
 * names and are simply not found. */
#define CACHE_FORMAT_VERSION 3u

typedef struct cache_key {
    uint32_t format_version;
    char library_version[32];  /* SPF_VERSION_STRING, NUL padded        */
    uint64_t pattern_hash;     /* matrix_pattern_hash (core/hash.h)     */
    uint64_t values_hash;      /* matrix_values_hash: values are code   */
    int64_t m, k, n, nnz;
    int32_t dtype, f16x2, bias, relu;
    int32_t sm;                /* device arch: cc_major * 10 + cc_minor */
    int32_t strategy;          /* as requested: AUTO, UNROLLED, GENERIC */
    int32_t exhaustive;
    int32_t tune_space;        /* 0 unless exhaustive or search          */
    int32_t search;            /* the low-cost search (LO-SpMM §3-5)     */
    int32_t search_top_k;      /* as requested; 0 without search         */
    int32_t search_proxies;    /* 0 without search                       */
    int32_t reorder;           /* LO-SpMM Algorithm 1 row order          */
    spf_kernel_config forced;  /* options->config, all zeros if none    */
} cache_key;

/* The key of spf_plan_create(a, n, o) on a device of architecture sm
 * (e.g. 90). Every option that changes the kernel is in it; those that do
 * not (device ordinal, host_threads, verify) are not. a and o are read
 * during the call only. Fails only on invalid arguments. */
spf_status cache_key_make(const spf_matrix *a, int64_t n, const spf_plan_options *o, int sm,
                          cache_key *out);

/* A plan as stored. cache_load fills one that owns its payload
 * (cache_entry_release frees it); cache_store only reads one, so a caller
 * may point payload at a buffer it owns. A reordered kernel needs no row
 * order here: the order is built into its code. */
typedef struct cache_entry {
    spf_strategy strategy;     /* UNROLLED or GENERIC                        */
    spf_kernel_config config;  /* meaningful for UNROLLED                    */
    char kernel_name[128];     /* the entry to look up in the payload        */
    int32_t registers;
    uint32_t grid[3], block[3];
    uint32_t shared_bytes;     /* dynamic shared memory per block            */
    int32_t configs_tried;
    int64_t code_bytes;        /* size of the generated PTX                  */
    double kernel_us, tune_s;  /* measured when built (0 if not measured)    */
    double verify_error;       /* self-check when built (-1 if skipped)      */
    spf_search_info search;    /* the low-cost search that found it, if any  */
    unsigned char *payload;    /* the linked cubin; NULL for GENERIC         */
    size_t payload_size;
} cache_entry;

void cache_entry_release(cache_entry *e); /* accepts a zeroed entry */

/* The cache folder: $SPFORGE_CACHE_DIR if set and not empty, else
 * $HOME/.cache/spforge. SPFORGE_CACHE_DIR=off switches the cache off, as does
 * the absence of both variables: then buf is "" and the call succeeds.
 * SPF_ERR_INVALID_ARGUMENT if the path does not fit cap bytes. */
spf_status cache_dir_default(char *buf, size_t cap);

/* The file of key under dir: "<dir>/<16 hex digits>.plan". */
spf_status cache_entry_path(const char *dir, const cache_key *key, char *buf, size_t cap);

/* Write e under key into dir, creating dir (and its parents) with mode
 * 0700 if missing: a temporary file in dir, written, fsync'ed, renamed over
 * any older entry; removed on any failure. SPF_ERR_IO / _OUT_OF_MEMORY /
 * _INVALID_ARGUMENT with a detail; a caller treats a failure as "not
 * cached", not as a failed plan. */
spf_status cache_store(const char *dir, const cache_key *key, const cache_entry *e);

/* The trailer: XXH64 (with the cache's own seed) of a file's bytes before
 * it. Tests use it to craft files whose only fault is a field. */
uint64_t cache_checksum(const void *data, size_t size);

/* Look key up in dir. SPF_OK with *found = 1 and *out filled (owned), or
 * SPF_OK with *found = 0 and *out zeroed on a miss: no file, or a file that
 * cannot be read or is truncated, corrupt, of another format or of another
 * key — those are logged at WARN with the file and the reason. Errors are
 * invalid arguments and SPF_ERR_OUT_OF_MEMORY only. */
spf_status cache_load(const char *dir, const cache_key *key, cache_entry *out, int *found);

#endif
