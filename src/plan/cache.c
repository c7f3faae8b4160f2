/* The plan cache's key, file format, atomic store and distrustful load
 * (layout in cache.h). A file is read whole, its trailer checked, then
 * decoded through a cursor that checks every length against the bytes left
 * before anything is allocated: a damaged or hostile file can cost a miss,
 * never a crash or a wrong plan. */
#define _POSIX_C_SOURCE 200809L

#include "plan/cache.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/matrix.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(sizeof(double) == 8, "doubles are stored as IEEE-754 binary64");

static const unsigned char MAGIC[8] = {'S', 'P', 'F', 'P', 'L', 'A', 'N', 0};
/* Seeds keep the file-name hash and the trailer apart from each other and
 * from the matrix hashes. */
static const uint64_t NAME_SEED = 0x53504643414b0001ULL;
static const uint64_t TRAILER_SEED = 0x535046434b530001ULL;

/* u32 version | 32 bytes | 2 u64 hashes | 4 i64 sizes | 12 i32 | 5 i32 */
enum { KEY_BYTES = 4 + 32 + 2 * 8 + 4 * 8 + 12 * 4 + 5 * 4 };
/* magic | version | key size, and the XXH64 trailer */
enum { HEADER_BYTES = 8 + 4 + 4, TRAILER_BYTES = 8 };

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
    const int32_t ints[] = {k->dtype,      k->f16x2,        k->bias,           k->relu,
                            k->sm,         k->strategy,     k->exhaustive,     k->tune_space,
                            k->search,     k->search_top_k, k->search_proxies, k->reorder};
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
    put_i32(w, (int32_t)e->strategy);
    put_config(w, &e->config);
    put_i32(w, e->registers);
    for (int i = 0; i < 3; i++)
        put_u32(w, e->grid[i]);
    for (int i = 0; i < 3; i++)
        put_u32(w, e->block[i]);
    put_u32(w, e->shared_bytes);
    put_i32(w, e->configs_tried);
    put_i64(w, e->code_bytes);
    put_f64(w, e->kernel_us);
    put_f64(w, e->tune_s);
    put_f64(w, e->verify_error);
    put_search(w, &e->search);
    size_t name_len = strlen(e->kernel_name);
    put_u32(w, (uint32_t)name_len);
    put_bytes(w, e->kernel_name, name_len);
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

static void get_config(reader *r, spf_kernel_config *c)
{
    c->m1 = get_i32(r);
    c->n1 = get_i32(r);
    c->v = get_i32(r);
    c->prefetch = get_i32(r);
    c->ksplit = get_i32(r);
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
    char why[160];
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
    e->strategy = (spf_strategy)get_i32(r);
    get_config(r, &e->config);
    e->registers = get_i32(r);
    for (int i = 0; i < 3; i++)
        e->grid[i] = get_u32(r);
    for (int i = 0; i < 3; i++)
        e->block[i] = get_u32(r);
    e->shared_bytes = get_u32(r);
    e->configs_tried = get_i32(r);
    e->code_bytes = get_i64(r);
    e->kernel_us = get_f64(r);
    e->tune_s = get_f64(r);
    e->verify_error = get_f64(r);
    get_search(r, &e->search);
    uint32_t name_len = get_u32(r);
    if (r->ok && name_len >= sizeof e->kernel_name)
        return rejected(rj, "kernel name of %u bytes", name_len);
    const unsigned char *name = take(r, name_len);
    if (name)
        memcpy(e->kernel_name, name, name_len);
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
    if (e->strategy != SPF_STRATEGY_UNROLLED && e->strategy != SPF_STRATEGY_GENERIC)
        return rejected(rj, "strategy %d", (int)e->strategy);
    if (e->strategy == SPF_STRATEGY_UNROLLED && (!e->payload_size || !e->kernel_name[0]))
        return rejected(rj, "an unrolled kernel without its image or entry name");
    return SPF_OK;
}

/* Check the whole file, then decode it into e. */
static spf_status decode(const unsigned char *buf, size_t size, const cache_key *key,
                         cache_entry *e, reject *rj)
{
    if (size < HEADER_BYTES + TRAILER_BYTES)
        return rejected(rj, "truncated: %zu bytes", size);
    if (memcmp(buf, MAGIC, sizeof MAGIC) != 0)
        return rejected(rj, "not a plan cache file (bad magic)");
    reader r = {buf + sizeof MAGIC, size - sizeof MAGIC - TRAILER_BYTES, 1};
    uint32_t version = get_u32(&r);
    if (version != CACHE_FORMAT_VERSION)
        return rejected(rj, "format version %u, this library reads %u", version,
                        CACHE_FORMAT_VERSION);
    reader trailer = {buf + size - TRAILER_BYTES, TRAILER_BYTES, 1};
    if (get_u64(&trailer) != cache_checksum(buf, size - TRAILER_BYTES))
        return rejected(rj, "checksum mismatch (truncated or corrupt)");
    uint32_t key_size = get_u32(&r);
    unsigned char want[KEY_BYTES];
    key_encode(key, want);
    const unsigned char *stored = take(&r, key_size);
    if (key_size != KEY_BYTES || !stored || memcmp(stored, want, KEY_BYTES) != 0)
        return rejected(rj, "stored for another key (a file-name collision)");
    return decode_body(&r, e, rj);
}

/* ------------------------------------------------------------ the files */

spf_status cache_key_make(const spf_matrix *a, int64_t n, const spf_plan_options *o, int sm,
                          cache_key *out)
{
    CHECK_ARG(out != NULL);
    memset(out, 0, sizeof *out);
    CHECK_ARG(a != NULL && o != NULL && n >= 1 && sm > 0);
    out->format_version = CACHE_FORMAT_VERSION;
    snprintf(out->library_version, sizeof out->library_version, "%s", SPF_VERSION_STRING);
    out->pattern_hash = matrix_pattern_hash(a);
    out->values_hash = matrix_values_hash(a);
    out->m = a->rows, out->k = a->cols, out->n = n, out->nnz = a->nnz;
    out->dtype = (int32_t)o->dtype;
    out->f16x2 = o->f16x2_accumulate;
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
    if (o->config)
        out->forced = *o->config;
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

spf_status cache_entry_path(const char *dir, const cache_key *key, char *buf, size_t cap)
{
    CHECK_ARG(dir != NULL && dir[0] && key != NULL && buf != NULL && cap > 0);
    unsigned char bytes[KEY_BYTES];
    key_encode(key, bytes);
    int len = snprintf(buf, cap, "%s/%016llx.plan", dir,
                       (unsigned long long)hash_bytes(bytes, sizeof bytes, NAME_SEED));
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

static spf_status write_all(int fd, const unsigned char *p, size_t n, const char *path)
{
    while (n) {
        ssize_t done = write(fd, p, n);
        if (done < 0 && errno == EINTR)
            continue;
        if (done <= 0)
            return FAIL(SPF_ERR_IO, "cannot write %s: %s", path, done < 0 ? strerror(errno) : "no progress");
        p += done;
        n -= (size_t)done;
    }
    return SPF_OK;
}

static spf_status check_entry(const cache_key *key, const cache_entry *e)
{
    if (e->strategy != SPF_STRATEGY_UNROLLED && e->strategy != SPF_STRATEGY_GENERIC)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "strategy %d: only UNROLLED and GENERIC plans are cached",
                    (int)e->strategy);
    if (memchr(e->kernel_name, 0, sizeof e->kernel_name) == NULL)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "kernel name not terminated");
    if (e->payload_size && !e->payload)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "payload of %zu bytes without data", e->payload_size);
    if (e->strategy == SPF_STRATEGY_UNROLLED && (!e->payload_size || !e->kernel_name[0]))
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "an unrolled kernel needs its image and entry name");
    return SPF_OK;
}

spf_status cache_store(const char *dir, const cache_key *key, const cache_entry *e)
{
    spf_status status = SPF_OK;
    char path[4096], tmp[4096 + 16];
    unsigned char *buf = NULL;
    int fd = -1;
    tmp[0] = 0;
    CHECK_ARG(dir != NULL && key != NULL && e != NULL);
    TRY(check_entry(key, e));
    TRY(cache_entry_path(dir, key, path, sizeof path));
    TRY(make_dirs(dir));

    writer count = {NULL, 0, 0};
    put_entry(&count, key, e);
    if (count.size > SIZE_MAX - TRAILER_BYTES ||
        !(buf = mem_alloc(count.size + TRAILER_BYTES)))
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "plan cache: an entry of %zu bytes", count.size);
    writer w = {buf, 0, count.size + TRAILER_BYTES};
    put_entry(&w, key, e);
    put_u64(&w, cache_checksum(buf, count.size));

    /* Same folder as the target, so that rename stays within one file system. */
    snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
    fd = mkstemp(tmp);
    if (fd < 0) {
        int err = errno;
        tmp[0] = 0;
        FAIL_GOTO(SPF_ERR_IO, "cannot create a temporary file beside %s: %s", path, strerror(err));
    }
    TRY(write_all(fd, buf, w.size, tmp));
    if (fsync(fd) != 0)
        FAIL_GOTO(SPF_ERR_IO, "cannot sync %s: %s", tmp, strerror(errno));
    int closed = close(fd);
    fd = -1;
    if (closed != 0)
        FAIL_GOTO(SPF_ERR_IO, "cannot close %s: %s", tmp, strerror(errno));
    if (rename(tmp, path) != 0)
        FAIL_GOTO(SPF_ERR_IO, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
    tmp[0] = 0;
fail:
    if (fd >= 0)
        close(fd);
    if (tmp[0])
        unlink(tmp);
    mem_free(buf);
    return status;
}

/* The whole file into a new buffer. SPF_ERR_PARSE with the reason for a
 * file that cannot be read (the caller's miss); ENOENT is a quiet miss. */
static spf_status read_file(const char *path, unsigned char **out, size_t *size, reject *rj,
                            int *absent)
{
    spf_status status = SPF_OK;
    unsigned char *buf = NULL;
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        *absent = errno == ENOENT;
        return rejected(rj, "cannot open: %s", strerror(errno));
    }
    struct stat st;
    size_t n = 0, got = 0;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        status = rejected(rj, "not a regular file");
        goto fail;
    }
    if ((uint64_t)st.st_size > SIZE_MAX) {
        status = rejected(rj, "%lld bytes", (long long)st.st_size);
        goto fail;
    }
    n = (size_t)st.st_size;
    buf = mem_alloc(n);
    if (!buf)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "plan cache: %zu bytes of %s", n, path);
    while (got < n && status == SPF_OK) {
        ssize_t done = read(fd, buf + got, n - got);
        if (done < 0 && errno == EINTR)
            continue;
        if (done < 0)
            status = rejected(rj, "read error: %s", strerror(errno));
        else if (done == 0)
            status = rejected(rj, "shrank to %zu bytes while read", got);
        else
            got += (size_t)done;
    }
    if (status == SPF_OK) {
        *out = buf, *size = n;
        buf = NULL;
    }
fail:
    close(fd);
    mem_free(buf);
    return status;
}

spf_status cache_load(const char *dir, const cache_key *key, cache_entry *out, int *found)
{
    spf_status status = SPF_OK;
    char path[4096];
    unsigned char *buf = NULL;
    size_t size = 0;
    reject rj = {""};
    int absent = 0;
    CHECK_ARG(out != NULL && found != NULL);
    memset(out, 0, sizeof *out);
    *found = 0;
    CHECK_ARG(dir != NULL && key != NULL);
    TRY(cache_entry_path(dir, key, path, sizeof path));
    TRY(read_file(path, &buf, &size, &rj, &absent));
    TRY(decode(buf, size, key, out, &rj));
    *found = 1;
fail:
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
