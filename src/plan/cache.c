/* The plan cache's key, file format, atomic store and distrustful load
 * (layout and threat model in cache.h). A file's fixed prefix is read and
 * checked first, then, within the size limit, the rest; its trailer is
 * checked, then it is decoded through a cursor that checks every length
 * against the bytes left before anything is allocated: a damaged or
 * hostile file can cost a miss, never a crash, a hang or a wrong plan. */
#define _POSIX_C_SOURCE 200809L

#include "plan/cache.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/file.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/matrix.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

_Static_assert(sizeof(double) == 8, "doubles are stored as IEEE-754 binary64");

static const unsigned char MAGIC[8] = {'S', 'P', 'F', 'P', 'L', 'A', 'N', 0};
/* Seeds keep the file-name hash and the trailer apart from each other and
 * from the matrix hashes. */
static const uint64_t NAME_SEED = 0x53504643414b0001ULL;
static const uint64_t TRAILER_SEED = 0x535046434b530001ULL;

/* u32 version | 32 bytes | 2 u64 hashes | 4 i64 sizes | 17 i32 | 5 i32 */
enum { KEY_BYTES = 4 + 32 + 2 * 8 + 4 * 8 + 17 * 4 + 5 * 4 };
/* magic | version | key size, the fixed prefix (those and the key), and
 * the XXH64 trailer */
enum { HEADER_BYTES = 8 + 4 + 4, PREFIX_BYTES = HEADER_BYTES + KEY_BYTES, TRAILER_BYTES = 8 };
/* An entry's file name: 16 hex digits + ".plan" + NUL */
enum { NAME_BYTES = 16 + 5 + 1 };

/* ------------------------------------------------------------- encoding */

/* Appends little-endian fields to data[0 .. cap); with data NULL it only
 * counts, so an encoder runs once to size its buffer and once to fill it.
 * size saturates at SIZE_MAX, which no allocation satisfies. */
typedef struct writer {
    unsigned char *data;
    size_t size, cap;
} writer;

static void put_bytes(writer *w, const void *src, size_t n)
{
    if (n > SIZE_MAX - w->size) {
        w->size = SIZE_MAX;
        return;
    }
    if (w->data && w->size + n <= w->cap && n)
        memcpy(w->data + w->size, src, n);
    w->size += n;
}

static void put_le(writer *w, uint64_t v, int bytes)
{
    unsigned char b[8];
    for (int i = 0; i < bytes; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    put_bytes(w, b, (size_t)bytes);
}

static void put_u32(writer *w, uint32_t v) { put_le(w, v, 4); }
static void put_i32(writer *w, int32_t v) { put_le(w, (uint32_t)v, 4); }
static void put_u64(writer *w, uint64_t v) { put_le(w, v, 8); }
static void put_i64(writer *w, int64_t v) { put_le(w, (uint64_t)v, 8); }

static void put_f64(writer *w, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    put_u64(w, bits);
}

/* A NUL-terminated string of a fixed-size field: its length, its bytes. */
static void put_string(writer *w, const char *text)
{
    size_t len = strlen(text);
    put_u32(w, (uint32_t)len);
    put_bytes(w, text, len);
}

static void put_config(writer *w, const spf_kernel_config *c)
{
    put_i32(w, c->m1);
    put_i32(w, c->n1);
    put_i32(w, c->v);
    put_i32(w, c->prefetch);
    put_i32(w, c->ksplit);
}

static void put_search(writer *w, const spf_search_info *s)
{
    const int32_t counts[] = {s->space,         s->after_register, s->after_utilization,
                              s->after_balance, s->after_rank,     s->evaluated};
    const double times[] = {s->analysis_s,      s->reorder_s,       s->rank_s,
                            s->proxy_build_s,   s->proxy_compile_s, s->proxy_run_s,
                            s->final_compile_s, s->selfcheck_s,     s->total_s};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        put_i32(w, counts[i]);
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++)
        put_f64(w, times[i]);
}

static void put_key(writer *w, const cache_key *k)
{
    put_u32(w, k->format_version);
    put_bytes(w, k->library_version, sizeof k->library_version);
    put_u64(w, k->pattern_hash);
    put_u64(w, k->values_hash);
    put_i64(w, k->m);
    put_i64(w, k->k);
    put_i64(w, k->n);
    put_i64(w, k->nnz);
    const int32_t ints[] = {k->dtype,      k->math,         k->b_layout,       k->c_layout,
                            k->bias,       k->relu,         k->sm,             k->strategy,
                            k->dense,      k->exhaustive,   k->tune_space,     k->search,
                            k->search_top_k, k->search_proxies, k->reorder, k->timing,
                            k->named};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        put_i32(w, ints[i]);
    put_config(w, &k->forced);
}

/* The key's canonical bytes: what names the file and what a load compares. */
static void key_encode(const cache_key *k, unsigned char out[KEY_BYTES])
{
    writer w = {out, 0, KEY_BYTES};
    put_key(&w, k);
}

/* Everything before the trailer. */
static void put_entry(writer *w, const cache_key *k, const cache_entry *e)
{
    put_bytes(w, MAGIC, sizeof MAGIC);
    put_u32(w, CACHE_FORMAT_VERSION);
    put_u32(w, KEY_BYTES);
    put_key(w, k);
    const spf_plan_info *i = &e->info;
    put_i32(w, (int32_t)e->strategy);
    put_string(w, i->config);
    put_string(w, i->kernel_name);
    put_i32(w, i->registers);
    put_i32(w, i->configs_tried);
    put_i64(w, i->code_bytes);
    put_i64(w, i->device_bytes);
    put_f64(w, i->kernel_us);
    put_f64(w, i->tune_s);
    put_f64(w, i->verify_error);
    put_search(w, &i->search);
    put_i32(w, i->candidate_count);
    for (int c = 0; c < i->candidate_count; c++) {
        put_i32(w, (int32_t)i->candidates[c].strategy);
        put_i32(w, (int32_t)i->candidates[c].outcome);
        put_f64(w, i->candidates[c].estimate_us);
        put_f64(w, i->candidates[c].kernel_us);
        put_string(w, i->candidates[c].detail);
    }
    put_u64(w, (uint64_t)e->payload_size);
    put_bytes(w, e->payload, e->payload_size);
}

uint64_t cache_checksum(const void *data, size_t size)
{
    return hash_bytes(data, size, TRAILER_SEED);
}

/* ------------------------------------------------------------- decoding */

/* Reads little-endian fields; a read past the end clears ok and yields 0. */
typedef struct reader {
    const unsigned char *p;
    size_t left;
    int ok;
} reader;

static const unsigned char *take(reader *r, size_t n)
{
    if (!r->ok || n > r->left) {
        r->ok = 0;
        return NULL;
    }
    const unsigned char *p = r->p;
    r->p += n;
    r->left -= n;
    return p;
}

static uint64_t get_le(reader *r, int bytes)
{
    const unsigned char *p = take(r, (size_t)bytes);
    uint64_t v = 0;
    for (int i = bytes - 1; p && i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint32_t get_u32(reader *r) { return (uint32_t)get_le(r, 4); }
static int32_t get_i32(reader *r) { return (int32_t)get_u32(r); }
static uint64_t get_u64(reader *r) { return get_le(r, 8); }
static int64_t get_i64(reader *r) { return (int64_t)get_u64(r); }

static double get_f64(reader *r)
{
    uint64_t bits = get_u64(r);
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

/* put_string's field into buf (cap bytes, NUL included); 0 when it does
 * not fit. A truncated file leaves r->ok 0 and buf empty. */
static int get_string(reader *r, char *buf, size_t cap)
{
    uint32_t len = get_u32(r);
    buf[0] = 0;
    if (!r->ok)
        return 1;
    if (len >= cap)
        return 0;
    const unsigned char *text = take(r, len);
    if (text) {
        memcpy(buf, text, len);
        buf[len] = 0;
    }
    return 1;
}

static void get_search(reader *r, spf_search_info *s)
{
    int *counts[] = {&s->space,         &s->after_register, &s->after_utilization,
                     &s->after_balance, &s->after_rank,     &s->evaluated};
    double *times[] = {&s->analysis_s,      &s->reorder_s,       &s->rank_s,
                       &s->proxy_build_s,   &s->proxy_compile_s, &s->proxy_run_s,
                       &s->final_compile_s, &s->selfcheck_s,     &s->total_s};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        *counts[i] = get_i32(r);
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++)
        *times[i] = get_f64(r);
}

/* Why a file was rejected, for the warning. */
typedef struct reject {
    char why[4096 + 256]; /* may name the folder */
} reject;

static spf_status rejected(reject *rj, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static spf_status rejected(reject *rj, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rj->why, sizeof rj->why, fmt, ap);
    va_end(ap);
    return SPF_ERR_PARSE;
}

/* The fields after the key; arrays are allocated only once their lengths
 * have been checked against the bytes left. SPF_ERR_PARSE (reason in rj)
 * rejects the file; SPF_ERR_OUT_OF_MEMORY is an error. */
static spf_status decode_body(reader *r, cache_entry *e, reject *rj)
{
    spf_plan_info *i = &e->info;
    e->strategy = (spf_strategy)get_i32(r);
    if (!get_string(r, i->config, sizeof i->config) ||
        !get_string(r, i->kernel_name, sizeof i->kernel_name))
        return rejected(rj, "a configuration or kernel name too long");
    i->registers = get_i32(r);
    i->configs_tried = get_i32(r);
    i->code_bytes = get_i64(r);
    i->device_bytes = get_i64(r);
    i->kernel_us = get_f64(r);
    i->tune_s = get_f64(r);
    i->verify_error = get_f64(r);
    get_search(r, &i->search);
    i->candidate_count = get_i32(r);
    if (r->ok && (i->candidate_count < 0 || i->candidate_count > SPF_MAX_CANDIDATES))
        return rejected(rj, "%d candidates", i->candidate_count);
    for (int c = 0; r->ok && c < i->candidate_count; c++) {
        spf_candidate *d = &i->candidates[c];
        d->strategy = (spf_strategy)get_i32(r);
        d->outcome = (spf_candidate_outcome)get_i32(r);
        d->estimate_us = get_f64(r);
        d->kernel_us = get_f64(r);
        if (!get_string(r, d->detail, sizeof d->detail))
            return rejected(rj, "a candidate's detail too long");
    }
    uint64_t payload = get_u64(r);
    if (r->ok && payload > r->left)
        return rejected(rj, "payload of %llu bytes beyond the end of the file",
                        (unsigned long long)payload);
    if (r->ok && payload) {
        e->payload = mem_alloc((size_t)payload);
        if (!e->payload)
            return FAIL(SPF_ERR_OUT_OF_MEMORY, "plan cache: a payload of %llu bytes",
                        (unsigned long long)payload);
        memcpy(e->payload, take(r, (size_t)payload), (size_t)payload);
        e->payload_size = (size_t)payload;
    }
    if (!r->ok)
        return rejected(rj, "truncated inside the fields");
    if (r->left)
        return rejected(rj, "%zu bytes after the payload", r->left);
    return SPF_OK;
}

/* The fixed prefix, read before anything else of a file: a file of
 * another format or key is refused before its size or its body matter. */
static spf_status check_prefix(const unsigned char *buf, const cache_key *key, reject *rj)
{
    if (memcmp(buf, MAGIC, sizeof MAGIC) != 0)
        return rejected(rj, "not a plan cache file (bad magic)");
    reader r = {buf + sizeof MAGIC, PREFIX_BYTES - sizeof MAGIC, 1};
    uint32_t version = get_u32(&r);
    if (version != CACHE_FORMAT_VERSION)
        return rejected(rj, "format version %u, this library reads %u", version,
                        CACHE_FORMAT_VERSION);
    uint32_t key_size = get_u32(&r);
    unsigned char want[KEY_BYTES];
    key_encode(key, want);
    if (key_size != KEY_BYTES || memcmp(take(&r, KEY_BYTES), want, KEY_BYTES) != 0)
        return rejected(rj, "stored for another key (a file-name collision)");
    return SPF_OK;
}

/* The whole file, its prefix already checked: the trailer, then the
 * fields into e. */
static spf_status decode(const unsigned char *buf, size_t size, cache_entry *e, reject *rj)
{
    reader trailer = {buf + size - TRAILER_BYTES, TRAILER_BYTES, 1};
    if (get_u64(&trailer) != cache_checksum(buf, size - TRAILER_BYTES))
        return rejected(rj, "checksum mismatch (truncated or corrupt)");
    reader r = {buf + PREFIX_BYTES, size - PREFIX_BYTES - TRAILER_BYTES, 1};
    return decode_body(&r, e, rj);
}

/* ------------------------------------------------------------ the files */

/* The request's part of a key: everything but the matrix. */
static void key_of_request(int64_t n, const spf_plan_options *o, int sm, cache_key *out)
{
    out->format_version = CACHE_FORMAT_VERSION;
    snprintf(out->library_version, sizeof out->library_version, "%s", SPF_VERSION_STRING);
    out->n = n;
    out->dtype = (int32_t)o->dtype;
    out->math = (int32_t)o->math;
    out->b_layout = (int32_t)o->b_layout;
    out->c_layout = (int32_t)o->c_layout;
    out->dense = o->dense;
    out->bias = o->bias;
    out->relu = o->relu;
    out->sm = sm;
    out->strategy = (int32_t)o->strategy;
    out->exhaustive = o->exhaustive;
    /* The space and the search's settings matter only to the plans they
     * shape: a request that leaves them unused shares its entry with one
     * that does not set them. */
    out->tune_space = o->exhaustive || o->search ? (int32_t)o->tune_space : 0;
    out->search = o->search;
    out->search_top_k = o->search ? o->search_top_k : 0;
    out->search_proxies = o->search ? o->search_proxies : 0;
    out->reorder = o->reorder;
    out->timing = (int32_t)o->timing;
    if (o->config)
        out->forced = *o->config;
}

spf_status cache_key_make(const spf_matrix *a, int64_t n, const spf_plan_options *o, int sm,
                          cache_key *out)
{
    CHECK_ARG(out != NULL);
    memset(out, 0, sizeof *out);
    CHECK_ARG(a != NULL && o != NULL && n >= 1 && sm > 0);
    key_of_request(n, o, sm, out);
    out->pattern_hash = matrix_pattern_hash(a);
    out->values_hash = matrix_values_hash(a);
    out->m = a->rows, out->k = a->cols, out->nnz = a->nnz;
    return SPF_OK;
}

spf_status cache_key_make_named(const spf_matrix_name *name, int64_t n,
                                const spf_plan_options *o, int sm, cache_key *out)
{
    CHECK_ARG(out != NULL);
    memset(out, 0, sizeof *out);
    CHECK_ARG(name != NULL && o != NULL && n >= 1 && sm > 0);
    key_of_request(n, o, sm, out);
    out->pattern_hash = name->hash[0];
    out->values_hash = name->hash[1];
    out->m = name->rows, out->k = name->cols, out->nnz = name->nnz;
    out->named = 1;
    return SPF_OK;
}

void cache_entry_release(cache_entry *e)
{
    if (!e)
        return;
    mem_free(e->payload);
    memset(e, 0, sizeof *e);
}

spf_status cache_dir_default(char *buf, size_t cap)
{
    CHECK_ARG(buf != NULL && cap > 0);
    buf[0] = 0;
    const char *env = getenv("SPFORGE_CACHE_DIR");
    const char *home = getenv("HOME");
    int len = 0;
    if (env && env[0]) {
        if (strcmp(env, "off") == 0)
            return SPF_OK;
        len = snprintf(buf, cap, "%s", env);
    } else if (home && home[0]) {
        len = snprintf(buf, cap, "%s/.cache/spforge", home);
    } else {
        return SPF_OK; /* nowhere to put it: no cache */
    }
    if (len < 0 || (size_t)len >= cap) {
        buf[0] = 0;
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "the plan cache folder's path is longer than %zu bytes",
                    cap - 1);
    }
    return SPF_OK;
}

/* The entry's name within the folder. */
static void entry_name(const cache_key *key, char name[NAME_BYTES])
{
    unsigned char bytes[KEY_BYTES];
    key_encode(key, bytes);
    snprintf(name, NAME_BYTES, "%016llx.plan",
             (unsigned long long)hash_bytes(bytes, sizeof bytes, NAME_SEED));
}

/* Whether name has the form entry_name gives: only those are evicted. */
static int is_entry_name(const char *name)
{
    if (strlen(name) != NAME_BYTES - 1 || strcmp(name + 16, ".plan") != 0)
        return 0;
    for (int i = 0; i < 16; i++)
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
            return 0;
    return 1;
}

spf_status cache_entry_path(const char *dir, const cache_key *key, char *buf, size_t cap)
{
    CHECK_ARG(dir != NULL && dir[0] && key != NULL && buf != NULL && cap > 0);
    char name[NAME_BYTES];
    entry_name(key, name);
    int len = snprintf(buf, cap, "%s/%s", dir, name);
    if (len < 0 || (size_t)len >= cap)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "plan cache path under %s: longer than %zu bytes", dir,
                    cap - 1);
    return SPF_OK;
}

/* mkdir -p with mode 0700 for what it creates (the cache may hold the
 * weights' values as immediates: nobody else should read it). */
static spf_status make_dirs(const char *dir)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "plan cache folder path too long: %s", dir);
    for (char *s = path + 1;; s++) {
        if (*s != '/' && *s != 0)
            continue;
        char c = *s;
        *s = 0;
        if (mkdir(path, 0700) != 0 && errno != EEXIST)
            return FAIL(SPF_ERR_IO, "cannot create the plan cache folder %s: %s", path,
                        strerror(errno));
        *s = c;
        if (!c)
            break;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return FAIL(SPF_ERR_IO, "plan cache folder %s is not a folder", dir);
    return SPF_OK;
}

/* The trust rule of cache.h for the folder and each entry: owned by this
 * user and writable by nobody else. 0, with the reason after `what`, if
 * not. */
static int trusted(const struct stat *st, reject *rj, const char *what)
{
    if (st->st_uid != geteuid()) {
        rejected(rj, "%s is owned by uid %ld, not by this user (uid %ld)", what,
                 (long)st->st_uid, (long)geteuid());
        return 0;
    }
    if (st->st_mode & (S_IWGRP | S_IWOTH)) {
        rejected(rj, "%s is writable by %s (mode %04o)", what,
                 st->st_mode & S_IWOTH ? "others" : "its group", (unsigned)(st->st_mode & 07777));
        return 0;
    }
    return 1;
}

/* The folder, opened without following a symbolic link at its path and
 * checked by trusted(); everything after goes through *dfd, so a folder
 * swapped after the check is not the one used. SPF_ERR_PARSE with the
 * reason in rj, *absent set when it does not exist. */
static spf_status open_dir(const char *dir, int *dfd, int *absent, reject *rj)
{
    char what[4096 + 16];
    snprintf(what, sizeof what, "the folder %s", dir);
    *dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (*dfd < 0) {
        int err = errno;
        struct stat link;
        *absent = err == ENOENT;
        /* Linux answers a link with ENOTDIR under O_DIRECTORY, others ELOOP */
        if ((err == ENOTDIR || err == ELOOP) && lstat(dir, &link) == 0 && S_ISLNK(link.st_mode))
            return rejected(rj, "%s is a symbolic link", what);
        return rejected(rj, "cannot open %s: %s", what, strerror(err));
    }
    struct stat st;
    if (fstat(*dfd, &st) != 0)
        return rejected(rj, "cannot stat %s: %s", what, strerror(errno));
    if (!trusted(&st, rj, what))
        return SPF_ERR_PARSE;
    return SPF_OK;
}

/* SPFORGE_CACHE_MAX_BYTES, or the default: a value that is not a positive
 * decimal number of bytes is warned about and replaced by the default. */
static uint64_t cache_max_bytes(void)
{
    const char *env = getenv("SPFORGE_CACHE_MAX_BYTES");
    if (!env || !env[0])
        return CACHE_DEFAULT_MAX_BYTES;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(env, &end, 10);
    if (env[0] < '0' || env[0] > '9' || *end || errno || v == 0) {
        log_msg(SPF_LOG_WARN, "plan cache: SPFORGE_CACHE_MAX_BYTES=\"%s\" is not a positive number "
                "of bytes; using %llu", env, (unsigned long long)CACHE_DEFAULT_MAX_BYTES);
        return CACHE_DEFAULT_MAX_BYTES;
    }
    return (uint64_t)v;
}

/* An entry as the eviction sees it. */
typedef struct lru_entry {
    char name[NAME_BYTES];
    uint64_t size;
    struct timespec used; /* mtime: set when stored, and by each hit */
} lru_entry;

static int less_recently_used(const void *pa, const void *pb)
{
    const lru_entry *a = pa, *b = pb;
    if (a->used.tv_sec != b->used.tv_sec)
        return a->used.tv_sec < b->used.tv_sec ? -1 : 1;
    if (a->used.tv_nsec != b->used.tv_nsec)
        return a->used.tv_nsec < b->used.tv_nsec ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* Before `incoming` bytes are stored as keep in the folder dfd: remove the
 * temporary files of stores interrupted more than CACHE_STALE_TEMP_S ago
 * (younger ones may be another process's store in progress), then the
 * entries least recently used while the others and the new one exceed
 * limit. Files of other names are not the cache's and are left alone. */
static spf_status sweep(int dfd, const char *dir, const char *keep, uint64_t incoming,
                        uint64_t limit)
{
    spf_status status = SPF_OK;
    lru_entry *list = NULL;
    size_t count = 0, cap = 0;
    uint64_t total = 0;
    time_t now = time(NULL);
    /* a descriptor of its own: fdopendir takes it, and reading moves its offset */
    int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        int err = errno;
        if (fd >= 0)
            close(fd);
        return FAIL(SPF_ERR_IO, "cannot list the plan cache folder %s: %s", dir, strerror(err));
    }
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        int temp = file_replace_is_temp_name(de->d_name);
        struct stat st;
        if ((!temp && !is_entry_name(de->d_name)) ||
            fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (temp) {
            if (now - st.st_mtime > CACHE_STALE_TEMP_S)
                unlinkat(dfd, de->d_name, 0);
            continue;
        }
        if (strcmp(de->d_name, keep) == 0)
            continue; /* replaced by this store */
        if (count == cap) {
            size_t grown = cap ? 2 * cap : 64;
            lru_entry *bigger = mem_realloc_array(list, grown, sizeof *list);
            if (!bigger)
                FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "plan cache: a list of %zu entries", grown);
            list = bigger, cap = grown;
        }
        snprintf(list[count].name, sizeof list[count].name, "%s", de->d_name);
        list[count].size = (uint64_t)st.st_size;
        list[count].used = st.st_mtim;
        total += list[count++].size;
    }
    if (total > limit - incoming) { /* the caller checked incoming <= limit */
        qsort(list, count, sizeof *list, less_recently_used);
        for (size_t i = 0; i < count && total > limit - incoming; i++) {
            if (unlinkat(dfd, list[i].name, 0) == 0 || errno == ENOENT)
                total -= list[i].size;
            else
                log_msg(SPF_LOG_WARN, "plan cache: cannot evict %s/%s: %s", dir, list[i].name,
                        strerror(errno));
        }
    }
fail:
    closedir(d);
    mem_free(list);
    return status;
}

static spf_status check_entry(const cache_key *key, const cache_entry *e)
{
    (void)key;
    const spf_plan_info *i = &e->info;
    if (memchr(i->kernel_name, 0, sizeof i->kernel_name) == NULL ||
        memchr(i->config, 0, sizeof i->config) == NULL)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "kernel or configuration name not terminated");
    if (i->candidate_count < 0 || i->candidate_count > SPF_MAX_CANDIDATES)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "%d candidates", i->candidate_count);
    for (int c = 0; c < i->candidate_count; c++)
        if (memchr(i->candidates[c].detail, 0, sizeof i->candidates[c].detail) == NULL)
            return FAIL(SPF_ERR_INVALID_ARGUMENT, "candidate %d's detail not terminated", c);
    if (e->payload_size && !e->payload)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "payload of %zu bytes without data", e->payload_size);
    return SPF_OK;
}

spf_status cache_store(const char *dir, const cache_key *key, const cache_entry *e)
{
    spf_status status = SPF_OK;
    char path[4096], name[NAME_BYTES];
    unsigned char *buf = NULL;
    int dfd = -1, absent = 0;
    reject rj = {""};
    file_replace w = {.file = NULL, .dir_fd = -1, .tmp = ""};
    CHECK_ARG(dir != NULL && key != NULL && e != NULL);
    TRY(check_entry(key, e));
    TRY(cache_entry_path(dir, key, path, sizeof path));
    entry_name(key, name);

    /* Sized, bounded and encoded before the folder is touched: a store that
     * cannot complete evicts nothing. */
    writer count = {NULL, 0, 0};
    put_entry(&count, key, e);
    uint64_t limit = cache_max_bytes();
    if (count.size > CACHE_MAX_ENTRY_BYTES - TRAILER_BYTES)
        FAIL_GOTO(SPF_ERR_UNSUPPORTED, "plan cache: an entry of %zu bytes is over the limit of "
                  "%llu bytes per entry", count.size, (unsigned long long)CACHE_MAX_ENTRY_BYTES);
    size_t size = count.size + TRAILER_BYTES;
    if (size > limit)
        FAIL_GOTO(SPF_ERR_UNSUPPORTED, "plan cache: an entry of %zu bytes is over the cache's "
                  "limit of %llu bytes (SPFORGE_CACHE_MAX_BYTES)", size, (unsigned long long)limit);
    if (!(buf = mem_alloc(size)))
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "plan cache: an entry of %zu bytes", size);
    writer enc = {buf, 0, size};
    put_entry(&enc, key, e);
    put_u64(&enc, cache_checksum(buf, count.size));

    TRY(make_dirs(dir));
    if (open_dir(dir, &dfd, &absent, &rj) != SPF_OK)
        FAIL_GOTO(SPF_ERR_IO, "plan cache: not storing %s: %s", path, rj.why);
    TRY(sweep(dfd, dir, name, size, limit));
    TRY(file_replace_begin_at(&w, dfd, name, path, 0600));
    fwrite(buf, 1, size, w.file); /* a short write is the stream's error, which commit reports */
    TRY(file_replace_commit(&w));
fail:
    file_replace_abort(&w);
    if (dfd >= 0)
        close(dfd);
    mem_free(buf);
    return status;
}

/* Exactly n bytes from fd; a shorter file is rejected. */
static spf_status read_exact(int fd, unsigned char *buf, size_t n, reject *rj)
{
    for (size_t got = 0; got < n;) {
        ssize_t done = read(fd, buf + got, n - got);
        if (done < 0 && errno == EINTR)
            continue;
        if (done < 0)
            return rejected(rj, "read error: %s", strerror(errno));
        if (done == 0)
            return rejected(rj, "shrank to %zu bytes while read", got);
        got += (size_t)done;
    }
    return SPF_OK;
}

/* The entry name in the folder dfd, opened without blocking or following
 * a link, checked by trusted(), read in two steps: the fixed prefix, and
 * only once it matches key and the size is within CACHE_MAX_ENTRY_BYTES,
 * the rest, into a new buffer (*out, *size). SPF_ERR_PARSE with the reason
 * for a file refused (the caller's miss; *absent when there is none). */
static spf_status read_entry(int dfd, const char *name, const cache_key *key, int *fd,
                             unsigned char **out, size_t *size, reject *rj, int *absent)
{
    spf_status status = SPF_OK;
    unsigned char *buf = NULL;
    unsigned char prefix[PREFIX_BYTES];
    struct stat st;
    if (file_open_regular_at(dfd, name, name, fd, &st) != SPF_OK) {
        struct stat link;
        *absent = fstatat(dfd, name, &link, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT;
        /* the warning names the path already: keep the detail after "<name>: " */
        const char *why = spf_last_error();
        size_t len = strlen(name);
        if (strncmp(why, name, len) == 0 && strncmp(why + len, ": ", 2) == 0)
            why += len + 2;
        status = rejected(rj, "%s", why);
        error_clear();
        return status;
    }
    if (!trusted(&st, rj, "the entry"))
        return SPF_ERR_PARSE;
    uint64_t n = (uint64_t)st.st_size;
    if (n < PREFIX_BYTES + TRAILER_BYTES)
        return rejected(rj, "truncated: %llu bytes", (unsigned long long)n);
    TRY(read_exact(*fd, prefix, sizeof prefix, rj));
    TRY(check_prefix(prefix, key, rj));
    if (n > CACHE_MAX_ENTRY_BYTES)
        return rejected(rj, "%llu bytes, over the limit of %llu bytes per entry",
                        (unsigned long long)n, (unsigned long long)CACHE_MAX_ENTRY_BYTES);
    if (!(buf = mem_alloc((size_t)n)))
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "plan cache: %llu bytes of %s", (unsigned long long)n,
                  name);
    memcpy(buf, prefix, sizeof prefix);
    TRY(read_exact(*fd, buf + sizeof prefix, (size_t)n - sizeof prefix, rj));
    *out = buf, *size = (size_t)n;
    buf = NULL;
fail:
    mem_free(buf);
    return status;
}

spf_status cache_load(const char *dir, const cache_key *key, cache_entry *out, int *found)
{
    spf_status status = SPF_OK;
    char path[4096], name[NAME_BYTES];
    unsigned char *buf = NULL;
    size_t size = 0;
    reject rj = {""};
    int absent = 0, dfd = -1, fd = -1;
    CHECK_ARG(out != NULL && found != NULL);
    memset(out, 0, sizeof *out);
    *found = 0;
    CHECK_ARG(dir != NULL && key != NULL);
    TRY(cache_entry_path(dir, key, path, sizeof path));
    entry_name(key, name);
    TRY(open_dir(dir, &dfd, &absent, &rj));
    TRY(read_entry(dfd, name, key, &fd, &buf, &size, &rj, &absent));
    TRY(decode(buf, size, out, &rj));
    /* A hit is a use: the eviction goes by mtime, as atime is often not
     * kept (noatime, relatime). A failure only makes the entry look older. */
    (void)futimens(fd, NULL);
    *found = 1;
fail:
    if (fd >= 0)
        close(fd);
    if (dfd >= 0)
        close(dfd);
    mem_free(buf);
    if (status == SPF_ERR_PARSE) {
        if (!absent)
            log_msg(SPF_LOG_WARN, "plan cache: ignoring %s: %s", path, rj.why);
        status = SPF_OK;
    }
    if (status != SPF_OK || !*found)
        cache_entry_release(out);
    return status;
}
