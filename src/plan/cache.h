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
 * written whole (core/file.h's file_replace, mode 0600) to a temporary file
 * in the same folder and renamed into place, so a reader sees either the
 * old entry or the new one. Every file carries the full key and an XXH64
 * trailer: a file that is truncated, corrupt, of another format version or
 * of another key (a file-name collision) is ignored with a warning and
 * rebuilt, never trusted.
 *
 * Threat model. An entry is GPU code that runs in the caller's process, so
 * the folder is a trust boundary. Trusted: the user the process runs as
 * (geteuid()), who owns the folder. A load or store uses the folder only if
 *   - its path's last component is not a symbolic link (opened O_DIRECTORY |
 *     O_NOFOLLOW; every entry is then opened relative to that descriptor,
 *     so a folder swapped after the check is not the one used),
 *   - it is owned by this user and writable by neither group nor others;
 * and an entry only if it is a regular file (opened non-blocking and
 * O_NOFOLLOW, so a FIFO, folder or link at its name is refused at once
 * instead of hanging or redirecting the load), owned by this user and
 * writable by neither group nor others. Anything else is a warning naming
 * the path and the reason and a rebuild; a store into a refused folder is
 * skipped with the same warning. The folders store creates are 0700, and
 * nothing is changed on a folder it did not create. A file is read in two
 * steps: the fixed prefix (magic, version, key size, key) and, only once it
 * matches and the file is within CACHE_MAX_ENTRY_BYTES, the rest, so a
 * huge or hostile file costs a small read, not its size in memory.
 * Not defended: the same user's other processes (they can write the folder
 * legitimately, and could as well change the program itself), root, a
 * folder above the cache folder being swapped by someone who may write it
 * (only the last component is opened without following links; the owner
 * check still refuses a folder the attacker created), and a cubin that is
 * well-formed but malicious written by the trusted user.
 *
 * Size. The entries together are kept under $SPFORGE_CACHE_MAX_BYTES
 * (a positive decimal number of bytes; default CACHE_DEFAULT_MAX_BYTES):
 * before writing, a store removes the least recently used entries (by
 * mtime: set when stored and by each hit, since atime is often not kept)
 * until the others and the new one fit; an entry larger than the limit is
 * not stored. The limit holds after each store, give or take stores of
 * other processes running at the same time. A store also removes the
 * temporary files of stores interrupted more than CACHE_STALE_TEMP_S ago.
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
 *   | i32 dtype math b_layout c_layout bias relu sm strategy dense
 *     exhaustive tune_space search search_top_k search_proxies reorder
 *     timing named | i32 forced m1 n1 v prefetch ksplit.
 *
 * Named entries (spf_plan_cache_note): the key of a caller's name of the
 * matrix (its hashes in place of the matrix's, named = 1) holds a copy of
 * the info of the plan stored under the matrix's own key and no payload.
 * No plan is ever made from one: spf_plan_create never looks one up, and
 * spf_plan_cache_peek_named only reads its info.
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
#define CACHE_FORMAT_VERSION 6u

/* The largest entry file loaded or stored. Unrolled kernels carry their
 * values as immediates, so the cubin grows with the nonzeros: the largest
 * tuned so far (BERT 3072x768 at 0.9 sparsity, 236 544 nonzeros) generated
 * 45 MB of PTX, and its cubin is smaller. 256 MiB leaves over 5x margin
 * while bounding what a damaged file can make a load allocate. */
#define CACHE_MAX_ENTRY_BYTES ((uint64_t)256 << 20)

/* The default of SPFORGE_CACHE_MAX_BYTES: the total of the entries in a
 * folder. 2 GiB holds dozens of the largest kernels, thousands of usual ones. */
#define CACHE_DEFAULT_MAX_BYTES ((uint64_t)2 << 30)

/* A temporary file of a store older than this (seconds) belongs to a store
 * that was interrupted (a store takes well under a second); younger ones
 * may be another process's store in progress. */
#define CACHE_STALE_TEMP_S 3600

typedef struct cache_key {
    uint32_t format_version;
    char library_version[32];  /* SPF_VERSION_STRING, NUL padded        */
    uint64_t pattern_hash;     /* matrix_pattern_hash (core/hash.h)     */
    uint64_t values_hash;      /* matrix_values_hash: values are code   */
    int64_t m, k, n, nnz;
    int32_t dtype, math, b_layout, c_layout, bias, relu;
    int32_t sm;                /* device arch: cc_major * 10 + cc_minor */
    int32_t strategy;          /* as requested: AUTO or one strategy    */
    int32_t dense;             /* AUTO may choose DENSE                 */
    int32_t exhaustive;
    int32_t tune_space;        /* 0 unless exhaustive or search          */
    int32_t search;            /* the low-cost search (LO-SpMM §3-5)     */
    int32_t search_top_k;      /* as requested; 0 without search         */
    int32_t search_proxies;    /* 0 without search                       */
    int32_t reorder;           /* LO-SpMM Algorithm 1 row order          */
    int32_t timing;            /* spf_timing: cold and hot choose apart  */
    int32_t named;             /* 1: a caller's name of the matrix (above) */
    spf_kernel_config forced;  /* options->config, all zeros if none    */
} cache_key;

/* The key of spf_plan_create(a, n, o) on a device of architecture sm
 * (e.g. 90). Every option that changes the kernel is in it; those that do
 * not (device ordinal, host_threads, verify) are not. a and o are read
 * during the call only. Fails only on invalid arguments. */
spf_status cache_key_make(const spf_matrix *a, int64_t n, const spf_plan_options *o, int sm,
                          cache_key *out);

/* The key of the same request for the matrix a caller named name (its
 * shape, nnz and hashes in place of the matrix's; named = 1). Fails only
 * on invalid arguments. */
spf_status cache_key_make_named(const spf_matrix_name *name, int64_t n,
                                const spf_plan_options *o, int sm, cache_key *out);

/* A plan as stored. cache_load fills one that owns its payload
 * (cache_entry_release frees it); cache_store only reads one, so a caller
 * may point payload at a buffer it owns. A reordered kernel needs no row
 * order here: the order is built into its code. */
typedef struct cache_entry {
    spf_strategy strategy;     /* the row (strategy/strategy.h) that built it   */
    spf_plan_info info;        /* as built: names, registers, code bytes,
                                  timings, self-check, search, candidates      */
    unsigned char *payload;    /* the strategy's encoding (its encode / decode),
                                  NULL when it needs none                      */
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
 * 0700 if missing: stale temporary files removed and entries evicted as
 * the size limit requires, then a temporary file in dir, written,
 * fsync'ed, renamed over any older entry; removed on any failure.
 * SPF_ERR_IO (also for a folder refused by the trust rules above),
 * _UNSUPPORTED (an entry over CACHE_MAX_ENTRY_BYTES or the cache's limit),
 * _OUT_OF_MEMORY, _INVALID_ARGUMENT, with a detail naming the path and the
 * reason; a caller treats a failure as "not cached", not as a failed plan. */
spf_status cache_store(const char *dir, const cache_key *key, const cache_entry *e);

/* The trailer: XXH64 (with the cache's own seed) of a file's bytes before
 * it. Tests use it to craft files whose only fault is a field. */
uint64_t cache_checksum(const void *data, size_t size);

/* Look key up in dir. SPF_OK with *found = 1 and *out filled (owned), the
 * entry's mtime set to now (it was used); or SPF_OK with *found = 0 and
 * *out zeroed on a miss: no folder or no file (quiet), or a folder or file
 * refused by the trust rules above, one that cannot be read or is over
 * CACHE_MAX_ENTRY_BYTES, truncated, corrupt, of another format or of
 * another key — those are logged at WARN with the path and the reason.
 * Never blocks on a FIFO. Errors are invalid arguments and
 * SPF_ERR_OUT_OF_MEMORY only. */
spf_status cache_load(const char *dir, const cache_key *key, cache_entry *out, int *found);

#endif
