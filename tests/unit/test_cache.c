/* The plan cache's store (DESIGN.md decision 5), on the CPU: keys, round
 * trips, the 50 ms load budget of a second tune, and every way a file can
 * be damaged — each must be a miss with a warning, never a wrong plan or a
 * crash; the trust rules of cache.h (owner, modes, links, FIFOs, sizes),
 * the removal of stale temporary files and the LRU eviction. */
#define _POSIX_C_SOURCE 200809L

#include "test_util.h"

#include "plan/cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------ helpers */

static int warnings;
static char last_warning[1024];

static void capture_log(spf_log_level level, const char *message, void *user)
{
    (void)user;
    if (level != SPF_LOG_WARN)
        return;
    warnings++;
    snprintf(last_warning, sizeof last_warning, "%s", message);
}

static char root[256]; /* mkdtemp folder of this run */

/* A 5×7 matrix with irregular rows and values. */
static spf_matrix *small_matrix(float scale)
{
    const int64_t rp[] = {0, 2, 2, 5, 6, 8};
    const int32_t ci[] = {1, 6, 0, 3, 4, 2, 0, 5};
    float v[] = {0.75f, -1.5f, 2.25f, -0.125f, 3.5f, -2.0f, 0.3f, 1.1f};
    for (int i = 0; i < 8; i++)
        v[i] *= scale;
    spf_matrix *a = NULL;
    CHECK_OK(spf_matrix_create_csr(5, 7, 8, rp, ci, v, 0, &a));
    return a;
}

static cache_key key_of(const spf_matrix *a, int64_t n, int sm)
{
    spf_plan_options o;
    spf_plan_options_init(&o);
    cache_key k;
    CHECK_OK(cache_key_make(a, n, &o, sm, &k));
    return k;
}

static uint32_t lcg(uint32_t *s) { return *s = *s * 1664525u + 1013904223u; }

/* An unrolled entry with every field set; payload of `bytes` pseudo-random
 * bytes (caller frees e->payload). */
static cache_entry sample_entry(size_t bytes, uint32_t seed)
{
    cache_entry e = {.strategy = SPF_STRATEGY_UNROLLED,
                     .info = {.registers = 40,
                              .configs_tried = 7,
                              .code_bytes = 123456789012LL,
                              .device_bytes = 98765,
                              .kernel_us = 12.5 + seed,
                              .tune_s = 3.25,
                              .verify_error = 1.5e-7,
                              .search = {75, 60, 41, 17, 8, 8, 0.002, 0.0125, 0.0001, 0.03, 0.4,
                                         0.001, 0.35, 0.02, 0.875},
                              .candidate_count = 2,
                              .candidates = {{SPF_STRATEGY_UNROLLED, SPF_CANDIDATE_CHOSEN, 9.5,
                                              12.5, "spf_unrolled_f32_m8_n64_v2_p2_k4"},
                                             {SPF_STRATEGY_GENERIC, SPF_CANDIDATE_SLOWER, 11.0,
                                              14.25, "generic_f32_v4_sw32"}}},
                     .payload_size = bytes};
    snprintf(e.info.kernel_name, sizeof e.info.kernel_name, "spf_unrolled_f32_m8_n64_v2_p2_k4");
    snprintf(e.info.config, sizeof e.info.config, "m8_n64_v2_p2_k4");
    e.payload = malloc(bytes);
    for (size_t i = 0; i < bytes; i++)
        e.payload[i] = (unsigned char)(lcg(&seed) >> 24);
    return e;
}

static int candidates_equal(const spf_plan_info *x, const spf_plan_info *y)
{
    if (x->candidate_count != y->candidate_count)
        return 0;
    for (int i = 0; i < x->candidate_count; i++) {
        const spf_candidate *a = &x->candidates[i], *b = &y->candidates[i];
        if (a->strategy != b->strategy || a->outcome != b->outcome ||
            a->estimate_us != b->estimate_us || a->kernel_us != b->kernel_us ||
            strcmp(a->detail, b->detail) != 0)
            return 0;
    }
    return 1;
}

static int entries_equal(const cache_entry *e, const cache_entry *f)
{
    const spf_plan_info *x = &e->info, *y = &f->info;
    return e->strategy == f->strategy && strcmp(x->config, y->config) == 0 &&
           strcmp(x->kernel_name, y->kernel_name) == 0 && x->registers == y->registers &&
           x->configs_tried == y->configs_tried && x->code_bytes == y->code_bytes &&
           x->device_bytes == y->device_bytes && x->kernel_us == y->kernel_us &&
           x->tune_s == y->tune_s && x->verify_error == y->verify_error &&
           memcmp(&x->search, &y->search, sizeof x->search) == 0 && candidates_equal(x, y) &&
           e->payload_size == f->payload_size &&
           (e->payload_size == 0 || memcmp(e->payload, f->payload, e->payload_size) == 0);
}

/* Files in dir (temporaries included). */
/* Load must be a miss that warned once, naming the file and `reason`. */
static void expect_miss(const char *dir, const cache_key *k, const char *path, const char *reason,
                        const char *what)
{
    cache_entry got;
    int found = 1, before = warnings;
    CHECK_OK(cache_load(dir, k, &got, &found));
    CHECK_MSG(found == 0, "%s: loaded", what);
    CHECK_MSG(got.payload == NULL, "%s: entry not zeroed", what);
    CHECK_MSG(warnings == before + 1, "%s: %d warnings", what, warnings - before);
    CHECK_MSG(strstr(last_warning, path) != NULL, "%s: warning \"%s\" lacks the file", what,
              last_warning);
    if (reason)
        CHECK_MSG(strstr(last_warning, reason) != NULL, "%s: warning \"%s\" lacks \"%s\"", what,
                  last_warning, reason);
    cache_entry_release(&got);
}

static void put_le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* Re-seal a crafted file so that only the edited field is wrong. */
static void reseal(unsigned char *buf, size_t size)
{
    put_le64(buf + size - 8, cache_checksum(buf, size - 8));
}

/* -------------------------------------------------------------- tests */

static void test_dir_default(void)
{
    char buf[256];
    char *home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    setenv("SPFORGE_CACHE_DIR", "/some/where", 1);
    CHECK_OK(cache_dir_default(buf, sizeof buf));
    CHECK(strcmp(buf, "/some/where") == 0);
    setenv("SPFORGE_CACHE_DIR", "off", 1);
    CHECK_OK(cache_dir_default(buf, sizeof buf));
    CHECK(buf[0] == 0);
    unsetenv("SPFORGE_CACHE_DIR");
    setenv("HOME", "/home/tester", 1);
    CHECK_OK(cache_dir_default(buf, sizeof buf));
    CHECK(strcmp(buf, "/home/tester/.cache/spforge") == 0);
    setenv("SPFORGE_CACHE_DIR", "", 1); /* empty = unset */
    CHECK_OK(cache_dir_default(buf, sizeof buf));
    CHECK(strcmp(buf, "/home/tester/.cache/spforge") == 0);
    CHECK_STATUS(cache_dir_default(buf, 10), SPF_ERR_INVALID_ARGUMENT);
    CHECK(buf[0] == 0);
    unsetenv("HOME");
    CHECK_OK(cache_dir_default(buf, sizeof buf));
    CHECK(buf[0] == 0);
    if (home)
        setenv("HOME", home, 1);
    free(home);
    setenv("SPFORGE_CACHE_DIR", root, 1);
    CHECK_OK(cache_dir_default(buf, sizeof buf));
    CHECK(strcmp(buf, root) == 0);
}

/* Everything that changes the kernel changes the key (and the file name);
 * what does not, does not. */
static void test_key(void)
{
    spf_matrix *a = small_matrix(1.0f), *b = small_matrix(1.5f);
    spf_plan_options o;
    spf_plan_options_init(&o);
    cache_key base, k;
    char p0[512], p1[512];
    CHECK_OK(cache_key_make(a, 64, &o, 90, &base));
    CHECK(strcmp(base.library_version, SPF_VERSION_STRING) == 0);
    CHECK(base.format_version == CACHE_FORMAT_VERSION);
    CHECK(base.m == 5 && base.k == 7 && base.n == 64 && base.nnz == 8 && base.sm == 90);
    CHECK_OK(cache_entry_path(root, &base, p0, sizeof p0));
    CHECK(strncmp(p0, root, strlen(root)) == 0 && strstr(p0, ".plan") != NULL);
    CHECK_EQ_I64(strlen(p0), strlen(root) + 1 + 16 + 5);

    /* same values pattern, other values: another key */
    CHECK_OK(cache_key_make(b, 64, &o, 90, &k));
    CHECK(k.pattern_hash == base.pattern_hash && k.values_hash != base.values_hash);
    CHECK_OK(cache_entry_path(root, &k, p1, sizeof p1));
    CHECK(strcmp(p0, p1) != 0);

    spf_kernel_config forced = {8, 64, 2, 2, 4};
    for (int change = 0; change < 12; change++) {
        spf_plan_options q = o;
        int64_t n = 64;
        int sm = 90;
        switch (change) {
        case 0: n = 65; break;
        case 1: q.dtype = SPF_DTYPE_F16; break;
        case 2: q.dtype = SPF_DTYPE_F16, q.math = SPF_MATH_F16X2; break;
        case 3: q.bias = 1; break;
        case 4: q.relu = 1; break;
        case 5: sm = 80; break;
        case 6: q.strategy = SPF_STRATEGY_GENERIC; break;
        case 7: q.exhaustive = 1; break;
        case 8: q.reorder = 1; break;
        case 9: q.search = 1; break;
        case 10: q.timing = SPF_TIMING_HOT; break;
        default: q.config = &forced; break;
        }
        CHECK_OK(cache_key_make(a, n, &q, sm, &k));
        CHECK_OK(cache_entry_path(root, &k, p1, sizeof p1));
        CHECK_MSG(strcmp(p0, p1) != 0, "change %d kept the file name", change);
    }
    /* The search's top-K, its proxies and its space each change a searched plan's key. */
    spf_plan_options s = o;
    s.search = 1;
    char searched[512];
    CHECK_OK(cache_key_make(a, 64, &s, 90, &k));
    CHECK(k.search == 1 && k.search_proxies == 1 && k.tune_space == (int32_t)o.tune_space);
    CHECK_OK(cache_entry_path(root, &k, searched, sizeof searched));
    for (int change = 0; change < 3; change++) {
        spf_plan_options q = s;
        switch (change) {
        case 0: q.search_top_k = 5; break;
        case 1: q.search_proxies = 0; break;
        default: q.tune_space = SPF_TUNE_SPACE_FULL; break;
        }
        CHECK_OK(cache_key_make(a, 64, &q, 90, &k));
        CHECK_OK(cache_entry_path(root, &k, p1, sizeof p1));
        CHECK_MSG(strcmp(searched, p1) != 0 && strcmp(p0, p1) != 0,
                  "search change %d kept the file name", change);
    }
    /* device ordinal, threads, verify, cache and the unused tune space and
     * search settings do not matter */
    spf_plan_options q = o;
    q.device = 3, q.host_threads = 2, q.verify = 0, q.tune_space = SPF_TUNE_SPACE_FULL;
    q.search_top_k = 5, q.search_proxies = 0, q.cache = 0;
    CHECK_OK(cache_key_make(a, 64, &q, 90, &k));
    CHECK(memcmp(&k, &base, sizeof k) == 0);
    q.exhaustive = 1;
    cache_key tuned_full;
    CHECK_OK(cache_key_make(a, 64, &q, 90, &tuned_full));
    q.tune_space = SPF_TUNE_SPACE_COMPACT;
    CHECK_OK(cache_key_make(a, 64, &q, 90, &k));
    CHECK(k.tune_space != tuned_full.tune_space);

    CHECK_STATUS(cache_key_make(NULL, 64, &o, 90, &k), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(cache_key_make(a, 0, &o, 90, &k), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(cache_key_make(a, 64, NULL, 90, &k), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(cache_entry_path(root, &base, p1, 20), SPF_ERR_INVALID_ARGUMENT);
    spf_matrix_free(a);
    spf_matrix_free(b);
}

/* Every field comes back, in a folder store creates (mode 0700), and a
 * 1 MB entry loads well inside the 50 ms a second tune may take. */
static void test_round_trip(void)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/deep/er/cache", root);
    spf_matrix *a = small_matrix(1.0f);
    cache_key k = key_of(a, 64, 90);
    cache_entry e = sample_entry((size_t)1 << 20, 1), got;
    int found = 0, before = warnings;

    CHECK_OK(cache_load(dir, &k, &got, &found)); /* absent: a quiet miss */
    CHECK(found == 0 && warnings == before);

    CHECK_OK(cache_store(dir, &k, &e));
    /* every folder it created, and the entry, private to this user */
    struct stat st;
    char created[1024], path[1024];
    snprintf(created, sizeof created, "%s/deep", root);
    CHECK(stat(created, &st) == 0 && (st.st_mode & 0777) == 0700);
    snprintf(created, sizeof created, "%s/deep/er", root);
    CHECK(stat(created, &st) == 0 && (st.st_mode & 0777) == 0700);
    CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700);
    CHECK_OK(cache_entry_path(dir, &k, path, sizeof path));
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
    CHECK(dir_entry_count(dir) == 1);

    for (int rep = 0; rep < 2; rep++) {
        CHECK(cache_load(dir, &k, &got, &found) == SPF_OK && found == 1);
        CHECK(entries_equal(&e, &got));
        cache_entry_release(&got);
    }
    CHECK(warnings == before);

    /* a generic entry: no payload */
    cache_entry g = {.strategy = SPF_STRATEGY_GENERIC,
                     .info = {.kernel_us = 7.75, .verify_error = 2e-7}};
    snprintf(g.info.kernel_name, sizeof g.info.kernel_name, "spf_generic_csr_f32_v4");
    cache_key kg = key_of(a, 33, 90);
    CHECK_OK(cache_store(dir, &kg, &g));
    CHECK_OK(cache_load(dir, &kg, &got, &found));
    CHECK(found == 1 && entries_equal(&g, &got) && got.payload == NULL);
    cache_entry_release(&got);
    CHECK(dir_entry_count(dir) == 2);

    /* entries the store refuses */
    cache_entry bad = e;
    bad.payload = NULL;
    CHECK_STATUS(cache_store(dir, &k, &bad), SPF_ERR_INVALID_ARGUMENT);
    bad = e, bad.info.candidate_count = SPF_MAX_CANDIDATES + 1;
    CHECK_STATUS(cache_store(dir, &k, &bad), SPF_ERR_INVALID_ARGUMENT);
    bad = e, memset(bad.info.config, 'x', sizeof bad.info.config);
    CHECK_STATUS(cache_store(dir, &k, &bad), SPF_ERR_INVALID_ARGUMENT);
    CHECK(dir_entry_count(dir) == 2);
    free(e.payload);
    spf_matrix_free(a);
}

/* A file stored under another key but found under this key's name (a
 * file-name collision) is a miss, never the other plan. */
static void test_key_mismatch(void)
{
    char dir[512], pa[1024], pb[1024];
    snprintf(dir, sizeof dir, "%s/mismatch", root);
    spf_matrix *a = small_matrix(1.0f);
    cache_key ka = key_of(a, 64, 90), kb = key_of(a, 64, 80);
    cache_entry e = sample_entry(256, 2);
    CHECK_OK(cache_store(dir, &ka, &e));
    CHECK_OK(cache_entry_path(dir, &ka, pa, sizeof pa));
    CHECK_OK(cache_entry_path(dir, &kb, pb, sizeof pb));
    CHECK(rename(pa, pb) == 0);
    expect_miss(dir, &kb, pb, "another key", "collision");
    free(e.payload);
    spf_matrix_free(a);
}

/* Cut at every byte, and flip every byte: each a miss with a warning. */
static void test_damage(void)
{
    char dir[512], path[1024];
    snprintf(dir, sizeof dir, "%s/damage", root);
    spf_matrix *a = small_matrix(1.0f);
    cache_key k = key_of(a, 64, 90);
    cache_entry e = sample_entry(48, 3);
    CHECK_OK(cache_store(dir, &k, &e));
    CHECK_OK(cache_entry_path(dir, &k, path, sizeof path));
    size_t size = 0;
    unsigned char *good = file_slurp(path, &size);
    CHECK(good != NULL && size > 200);
    if (!good)
        return;
    int cut_ok = 0, flip_ok = 0;
    for (size_t len = 0; len < size; len++) {
        int before = warnings;
        file_spit(path, good, len);
        expect_miss(dir, &k, path, NULL, "truncated");
        cut_ok += warnings == before + 1;
    }
    CHECK_EQ_I64(cut_ok, size);
    unsigned char *bad = malloc(size);
    for (size_t at = 0; at < size; at++) {
        int before = warnings;
        memcpy(bad, good, size);
        bad[at] ^= (unsigned char)(1u << (at % 8));
        file_spit(path, bad, size);
        expect_miss(dir, &k, path, NULL, "flipped");
        flip_ok += warnings == before + 1;
    }
    CHECK_EQ_I64(flip_ok, size);

    /* the reasons of the header checks come before the checksum's */
    memcpy(bad, good, size);
    bad[0] = 'X';
    file_spit(path, bad, size);
    expect_miss(dir, &k, path, "bad magic", "magic");
    memcpy(bad, good, size);
    bad[8] = (unsigned char)(CACHE_FORMAT_VERSION + 1);
    file_spit(path, bad, size);
    expect_miss(dir, &k, path, "format version", "version");
    memcpy(bad, good, size);
    bad[size / 2] ^= 0x40;
    file_spit(path, bad, size);
    expect_miss(dir, &k, path, "checksum", "checksum");

    /* Validly sealed files with one hostile length: the decoder's own
     * checks, not the checksum, must catch them, before allocating. Fields
     * are found from the end: ... | i32 candidate count | candidates (i32
     * strategy, i32 outcome, f64 estimate, f64 time, u32 detail length,
     * detail) | u64 payload bytes | payload | u64 trailer. */
    size_t payload_at = size - 8 - e.payload_size - 8;
    const spf_plan_info *ei = &e.info;
    size_t detail_at = payload_at - strlen(ei->candidates[1].detail) - 4;
    size_t count_at = detail_at - 24 - strlen(ei->candidates[0].detail) - 4 - 24 - 4;
    struct {
        size_t at;
        uint64_t value;
        int bytes;
        const char *reason;
    } hostile[] = {
        {payload_at, (uint64_t)1 << 62, 8, "payload"},
        {payload_at, e.payload_size + 1, 8, "payload"},
        {payload_at, e.payload_size - 1, 8, "after the payload"},
        {detail_at, 200, 4, "detail too long"},
        {detail_at, 0xffffffffu, 4, "detail too long"},
        {count_at, SPF_MAX_CANDIDATES + 1, 4, "candidates"},
        {count_at, 0x80000000u, 4, "candidates"},
    };
    for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
        memcpy(bad, good, size);
        for (int b = 0; b < hostile[i].bytes; b++)
            bad[hostile[i].at + (size_t)b] = (unsigned char)(hostile[i].value >> (8 * b));
        reseal(bad, size);
        file_spit(path, bad, size);
        char what[64];
        snprintf(what, sizeof what, "hostile field %zu", i);
        expect_miss(dir, &k, path, hostile[i].reason, what);
    }
    /* and the untouched file, resealed, still loads: the offsets were right */
    memcpy(bad, good, size);
    reseal(bad, size);
    file_spit(path, bad, size);
    cache_entry got;
    int found = 0;
    CHECK_OK(cache_load(dir, &k, &got, &found));
    CHECK(found == 1 && entries_equal(&e, &got));
    cache_entry_release(&got);

    /* a folder where the file should be */
    CHECK(unlink(path) == 0 && mkdir(path, 0700) == 0);
    expect_miss(dir, &k, path, "regular file", "folder");
    CHECK(rmdir(path) == 0);
    free(bad);
    free(good);
    free(e.payload);
    spf_matrix_free(a);
}

/* A second store of a key replaces the first whole; nothing is left beside
 * it, and a store that cannot complete leaves nothing either. */
static void test_replace(void)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/replace", root);
    spf_matrix *a = small_matrix(1.0f);
    cache_key k = key_of(a, 64, 90);
    cache_entry e1 = sample_entry(4096, 4), e2 = sample_entry(1000, 5), got;
    int found = 0;
    CHECK_OK(cache_store(dir, &k, &e1));
    CHECK_OK(cache_store(dir, &k, &e2));
    CHECK(dir_entry_count(dir) == 1);
    CHECK_OK(cache_load(dir, &k, &got, &found));
    CHECK(found == 1 && entries_equal(&e2, &got) && !entries_equal(&e1, &got));
    cache_entry_release(&got);

    /* a file where the folder should be */
    char blocked[1024];
    snprintf(blocked, sizeof blocked, "%s/file", dir);
    file_spit(blocked, (const unsigned char *)"x", 1);
    CHECK_STATUS(cache_store(blocked, &k, &e1), SPF_ERR_IO);
    CHECK_DETAIL("not a folder");
    /* a folder that refuses new files (root ignores modes: skip there) */
    if (geteuid() != 0) {
        CHECK(chmod(dir, 0500) == 0);
        CHECK_STATUS(cache_store(dir, &k, &e1), SPF_ERR_IO);
        CHECK_DETAIL("temporary file");
        CHECK(chmod(dir, 0700) == 0);
    }
    CHECK(dir_entry_count(dir) == 2);
    CHECK_OK(cache_load(dir, &k, &got, &found));
    CHECK(found == 1 && entries_equal(&e2, &got));
    cache_entry_release(&got);
    free(e1.payload);
    free(e2.payload);
    spf_matrix_free(a);
}

static int fail_after;
static void *failing_alloc(size_t n, void *u) { (void)u; return fail_after-- > 0 ? malloc(n ? n : 1) : NULL; }
static void *failing_realloc(void *p, size_t n, void *u) { (void)u; return fail_after-- > 0 ? realloc(p, n ? n : 1) : NULL; }
static void plain_free(void *p, void *u) { (void)u; free(p); }

/* Every allocation of a load and of a store can fail: the call reports
 * OUT_OF_MEMORY, owns nothing afterwards, and leaves no file behind. */
static void test_allocation_failures(void)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/oom", root);
    spf_matrix *a = small_matrix(1.0f);
    cache_key k = key_of(a, 64, 90), k2 = key_of(a, 65, 90);
    cache_entry e = sample_entry(2000, 6), got;
    spf_allocator failing = {failing_alloc, failing_realloc, plain_free, NULL};
    CHECK_OK(cache_store(dir, &k, &e));
    int succeeded = 0, oom = 0;
    for (int n = 0; n < 8 && !succeeded; n++) {
        int found = 1;
        fail_after = n;
        spf_set_allocator(&failing);
        spf_status s = cache_load(dir, &k, &got, &found);
        spf_set_allocator(NULL);
        CHECK_MSG(s == SPF_OK || s == SPF_ERR_OUT_OF_MEMORY, "n = %d: status %d", n, (int)s);
        if (s == SPF_OK) {
            succeeded = 1;
            CHECK(found == 1 && entries_equal(&e, &got));
        } else {
            oom++;
            CHECK(found == 0 && got.payload == NULL);
        }
        cache_entry_release(&got);
    }
    CHECK(succeeded && oom >= 2); /* the file, the payload */
    fail_after = 0;
    spf_set_allocator(&failing);
    spf_status s = cache_store(dir, &k2, &e);
    spf_set_allocator(NULL);
    CHECK(s == SPF_ERR_OUT_OF_MEMORY);
    CHECK(dir_entry_count(dir) == 1);
    free(e.payload);
    spf_matrix_free(a);
}

/* A hit that must come back whole. */
static void expect_hit(const char *dir, const cache_key *k, const cache_entry *e, const char *what)
{
    cache_entry got;
    int found = 0;
    CHECK_OK(cache_load(dir, k, &got, &found));
    CHECK_MSG(found == 1 && entries_equal(e, &got), "%s: not loaded", what);
    cache_entry_release(&got);
}

/* A folder or an entry someone else could have written is never loaded
 * (a warning naming it and why), and a store into such a folder is
 * refused; so is a folder reached through a symbolic link. */
static void test_trust(void)
{
    char dir[512], path[1024], link[512];
    snprintf(dir, sizeof dir, "%s/trust", root);
    spf_matrix *a = small_matrix(1.0f);
    cache_key k = key_of(a, 64, 90), k2 = key_of(a, 65, 90);
    cache_entry e = sample_entry(300, 7);
    CHECK_OK(cache_store(dir, &k, &e));
    CHECK_OK(cache_entry_path(dir, &k, path, sizeof path));
    expect_hit(dir, &k, &e, "trusted");

    const mode_t folder_modes[] = {0777, 0770, 0702};
    for (size_t i = 0; i < sizeof folder_modes / sizeof folder_modes[0]; i++) {
        char what[64];
        snprintf(what, sizeof what, "folder of mode %04o", (unsigned)folder_modes[i]);
        CHECK(chmod(dir, folder_modes[i]) == 0);
        expect_miss(dir, &k, path, "writable by", what);
        CHECK_MSG(strstr(last_warning, "the folder") != NULL, "%s: \"%s\"", what, last_warning);
        CHECK_STATUS(cache_store(dir, &k2, &e), SPF_ERR_IO);
        CHECK_DETAIL("writable by");
        CHECK_MSG(dir_entry_count(dir) == 1, "%s: a store wrote into it", what);
    }
    CHECK(chmod(dir, 0700) == 0);
    expect_hit(dir, &k, &e, "folder made private again");

    CHECK(chmod(path, 0666) == 0);
    expect_miss(dir, &k, path, "the entry is writable by others", "world-writable entry");
    CHECK(chmod(path, 0620) == 0);
    expect_miss(dir, &k, path, "the entry is writable by its group", "group-writable entry");
    CHECK_OK(cache_store(dir, &k, &e)); /* the rebuild's store replaces it */
    expect_hit(dir, &k, &e, "entry stored again");

    /* another owner: root can simulate one */
    if (geteuid() == 0) {
        CHECK(chown(dir, 4242, (gid_t)-1) == 0);
        expect_miss(dir, &k, path, "owned by uid 4242", "folder of another user");
        CHECK_STATUS(cache_store(dir, &k2, &e), SPF_ERR_IO);
        CHECK_DETAIL("owned by uid 4242");
        CHECK(chown(dir, 0, (gid_t)-1) == 0);
        CHECK(chown(path, 4242, (gid_t)-1) == 0);
        expect_miss(dir, &k, path, "owned by uid 4242", "entry of another user");
        CHECK(chown(path, 0, (gid_t)-1) == 0);
        expect_hit(dir, &k, &e, "owned again");
    } else {
        printf("  (not root: the cases of another owner are skipped)\n");
    }

    /* the folder's path a symbolic link to a good folder */
    char link_path[1024];
    snprintf(link, sizeof link, "%s/trust-link", root);
    CHECK(symlink(dir, link) == 0);
    CHECK_OK(cache_entry_path(link, &k, link_path, sizeof link_path));
    expect_miss(link, &k, link_path, "symbolic link", "linked folder");
    CHECK_STATUS(cache_store(link, &k2, &e), SPF_ERR_IO);
    CHECK_DETAIL("symbolic link");
    CHECK(dir_entry_count(dir) == 1);
    free(e.payload);
    spf_matrix_free(a);
}

/* A FIFO, a folder or a symbolic link at an entry's name: a warned miss at
 * once (a blocking open of the FIFO would hang: main's alarm turns that
 * into a failure), and a store over the folder fails cleanly. */
static void test_special_files(void)
{
    char dir[512], path[1024], elsewhere[1024];
    snprintf(dir, sizeof dir, "%s/special", root);
    spf_matrix *a = small_matrix(1.0f);
    cache_key k = key_of(a, 64, 90);
    cache_entry e = sample_entry(300, 8);
    CHECK_OK(cache_store(dir, &k, &e));
    CHECK_OK(cache_entry_path(dir, &k, path, sizeof path));

    CHECK(unlink(path) == 0 && mkfifo(path, 0600) == 0);
    expect_miss(dir, &k, path, "FIFO", "FIFO");
    CHECK_OK(cache_store(dir, &k, &e)); /* replaces the FIFO */
    expect_hit(dir, &k, &e, "stored over the FIFO");

    /* a link to a good entry of this key, kept elsewhere */
    snprintf(elsewhere, sizeof elsewhere, "%s/elsewhere.plan", root);
    CHECK(rename(path, elsewhere) == 0 && symlink(elsewhere, path) == 0);
    expect_miss(dir, &k, path, "cannot open", "linked entry");
    CHECK(unlink(path) == 0 && unlink(elsewhere) == 0);

    CHECK(mkdir(path, 0700) == 0);
    expect_miss(dir, &k, path, "folder", "folder");
    CHECK_STATUS(cache_store(dir, &k, &e), SPF_ERR_IO);
    CHECK_DETAIL("rename");
    struct stat st;
    CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode));
    CHECK(dir_entry_count(dir) == 1); /* no temporary file left */
    CHECK(rmdir(path) == 0);
    free(e.payload);
    spf_matrix_free(a);
}

/* An allocator that refuses, and records, any request over 1 MiB. */
static size_t largest_request;
static void *small_alloc(size_t n, void *u)
{
    (void)u;
    largest_request = n > largest_request ? n : largest_request;
    return n > ((size_t)1 << 20) ? NULL : malloc(n ? n : 1);
}
static void *small_realloc(void *p, size_t n, void *u)
{
    (void)u;
    largest_request = n > largest_request ? n : largest_request;
    return n > ((size_t)1 << 20) ? NULL : realloc(p, n ? n : 1);
}

/* A file of several GB (sparse: no disk used) at an entry's name is refused
 * after reading its fixed prefix, without allocating or reading its size:
 * one with a valid prefix for its size, one of zeros for its magic. */
static void test_oversize(void)
{
    char dir[512], path[1024];
    snprintf(dir, sizeof dir, "%s/oversize", root);
    spf_matrix *a = small_matrix(1.0f);
    cache_key k = key_of(a, 64, 90);
    cache_entry e = sample_entry(300, 9);
    spf_allocator small = {small_alloc, small_realloc, plain_free, NULL};
    const off_t huge = (off_t)5 << 30;
    CHECK_OK(cache_store(dir, &k, &e));
    CHECK_OK(cache_entry_path(dir, &k, path, sizeof path));
    for (int zeros = 0; zeros < 2; zeros++) {
        if (zeros)
            CHECK(truncate(path, 0) == 0);
        CHECK(truncate(path, huge) == 0);
        largest_request = 0;
        spf_set_allocator(&small);
        expect_miss(dir, &k, path, zeros ? "bad magic" : "over the limit",
                    zeros ? "GB of zeros" : "GB with a valid prefix");
        spf_set_allocator(NULL);
        CHECK_MSG(largest_request < 4096, "a request of %zu bytes", largest_request);
    }
    CHECK(unlink(path) == 0);
    free(e.payload);
    spf_matrix_free(a);
}

/* Set path's mtime to `age` seconds before now. */
static void age_file(const char *path, time_t age)
{
    struct timespec times[2] = {{time(NULL) - age, 0}, {time(NULL) - age, 0}};
    CHECK_MSG(utimensat(AT_FDCWD, path, times, AT_SYMLINK_NOFOLLOW) == 0, "utimensat %s", path);
}

static int file_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* A store removes the temporary files of stores interrupted long ago, and
 * nothing else. */
static void test_stale_temps(void)
{
    char dir[512], stale[1024], fresh[1024], other[1024];
    snprintf(dir, sizeof dir, "%s/stale", root);
    spf_matrix *a = small_matrix(1.0f);
    cache_key k = key_of(a, 64, 90);
    cache_entry e = sample_entry(300, 10);
    CHECK(mkdir(dir, 0700) == 0);
    snprintf(stale, sizeof stale, "%s/.0123456789abcdef.00112233445566ff.tmp", dir);
    snprintf(fresh, sizeof fresh, "%s/.0123456789abcdef.ffeeddccbbaa9900.tmp", dir);
    snprintf(other, sizeof other, "%s/notes.tmp", dir);
    file_spit(stale, (const unsigned char *)"half", 4);
    file_spit(fresh, (const unsigned char *)"half", 4);
    file_spit(other, (const unsigned char *)"mine", 4);
    age_file(stale, CACHE_STALE_TEMP_S + 60);
    age_file(fresh, CACHE_STALE_TEMP_S - 60);
    age_file(other, 10 * CACHE_STALE_TEMP_S);
    CHECK_OK(cache_store(dir, &k, &e));
    CHECK_MSG(!file_exists(stale), "the stale temporary file is still there");
    CHECK_MSG(file_exists(fresh), "a store in progress lost its temporary file");
    CHECK_MSG(file_exists(other), "a file not of the cache was removed");
    CHECK(dir_entry_count(dir) == 3);
    free(e.payload);
    spf_matrix_free(a);
}

/* SPFORGE_CACHE_MAX_BYTES: a store evicts the least recently used entries
 * (a hit counts as a use) until the others and the new one fit; an entry
 * over the limit is not stored; an invalid value is warned about. */
static void test_eviction(void)
{
    char dir[512], path[6][1024], notes[1024], limit[32];
    snprintf(dir, sizeof dir, "%s/lru", root);
    spf_matrix *a = small_matrix(1.0f);
    cache_key k[6];
    cache_entry e = sample_entry(1000, 11), big = sample_entry(2000, 12);
    for (int i = 0; i < 6; i++) {
        k[i] = key_of(a, 64 + i, 90);
        CHECK_OK(cache_entry_path(dir, &k[i], path[i], sizeof path[i]));
    }
    for (int i = 0; i < 4; i++) {
        CHECK_OK(cache_store(dir, &k[i], &e));
        age_file(path[i], 1000 - 100 * i); /* stored in the order 0, 1, 2, 3 */
    }
    snprintf(notes, sizeof notes, "%s/notes.txt", dir);
    file_spit(notes, (const unsigned char *)"not an entry", 12);
    age_file(notes, 5000);
    struct stat st;
    CHECK(stat(path[0], &st) == 0);
    long long entry = (long long)st.st_size;
    time_t before_use = st.st_mtime;
    expect_hit(dir, &k[0], &e, "entry 0"); /* now the most recently used */
    CHECK(stat(path[0], &st) == 0 && st.st_mtime > before_use);

    snprintf(limit, sizeof limit, "%lld", 4 * entry);
    CHECK(setenv("SPFORGE_CACHE_MAX_BYTES", limit, 1) == 0);
    CHECK_OK(cache_store(dir, &k[4], &e)); /* 5 entries: one must go, 1 */
    CHECK(file_exists(path[0]) && !file_exists(path[1]) && file_exists(path[2]) &&
          file_exists(path[3]) && file_exists(path[4]));
    age_file(path[4], 50);
    CHECK_OK(cache_store(dir, &k[5], &big)); /* 1000 bytes more: 2 and 3 go */
    CHECK(file_exists(path[0]) && !file_exists(path[2]) && !file_exists(path[3]) &&
          file_exists(path[4]) && file_exists(path[5]));
    CHECK(file_exists(notes));
    expect_hit(dir, &k[5], &big, "the new entry");

    /* larger than the whole cache: not stored, nothing evicted */
    CHECK(setenv("SPFORGE_CACHE_MAX_BYTES", "100", 1) == 0);
    CHECK_STATUS(cache_store(dir, &k[1], &e), SPF_ERR_UNSUPPORTED);
    CHECK_DETAIL("SPFORGE_CACHE_MAX_BYTES");
    CHECK(dir_entry_count(dir) == 4);

    /* not a number: the default, with a warning */
    int warned = warnings;
    CHECK(setenv("SPFORGE_CACHE_MAX_BYTES", "2GB", 1) == 0);
    CHECK_OK(cache_store(dir, &k[1], &e));
    CHECK(warnings == warned + 1 && strstr(last_warning, "SPFORGE_CACHE_MAX_BYTES"));
    CHECK(dir_entry_count(dir) == 5);
    CHECK(unsetenv("SPFORGE_CACHE_MAX_BYTES") == 0);
    free(e.payload);
    free(big.payload);
    spf_matrix_free(a);
}

static void test_arguments(void)
{
    spf_matrix *a = small_matrix(1.0f);
    cache_key k = key_of(a, 64, 90);
    cache_entry got = {.strategy = SPF_STRATEGY_GENERIC};
    int found;
    CHECK_STATUS(cache_load(NULL, &k, &got, &found), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(cache_load(root, NULL, &got, &found), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(cache_load(root, &k, NULL, &found), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(cache_load(root, &k, &got, NULL), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(cache_store(root, &k, NULL), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(cache_store("", &k, &got), SPF_ERR_INVALID_ARGUMENT);
    cache_entry_release(NULL);
    spf_matrix_free(a);
}

/* A load that blocks (on a FIFO) fails the test instead of hanging it. */
static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "FAILED: timed out (a cache call blocked)\n";
    ssize_t ignored = write(2, msg, sizeof msg - 1);
    (void)ignored;
    _exit(1);
}

int main(int argc, char **argv)
{
    signal(SIGALRM, on_alarm);
    alarm(300);
    umask(022); /* files crafted here must not be group- or world-writable */
    unsetenv("SPFORGE_CACHE_MAX_BYTES");
    snprintf(root, sizeof root, "%s/spf_cache_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(root)) {
        fprintf(stderr, "mkdtemp failed\n");
        return 1;
    }
    spf_set_log_callback(capture_log, NULL);
    test_dir_default();
    test_key();
    test_round_trip();
    test_key_mismatch();
    test_damage();
    test_replace();
    test_allocation_failures();
    test_trust();
    test_special_files();
    test_oversize();
    test_stale_temps();
    test_eviction();
    test_arguments();
    spf_set_log_callback(NULL, NULL);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    CHECK(system(cmd) == 0);
    return check_report();
}
