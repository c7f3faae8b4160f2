/* Fuzz target of the plan-cache loader (cache_load, src/plan/cache.h).
 *
 * The input is an entry file WITHOUT its 8-byte trailer: the harness
 * appends the right XXH64 (cache_checksum) and writes the file under the
 * entry name of one fixed key in its private folder, then loads it. Were
 * the input the whole file, nearly every mutation would stop at the
 * checksum and the fields behind it would go unfuzzed. A load must either
 * miss (found = 0, entry zeroed) or hit with an entry that owns exactly
 * payload_size bytes and a terminated kernel name.
 *
 * The seeds are written by the harness itself, so they follow the current
 * format: SPF_FUZZ_CACHE_SEEDS=<folder> ./fuzz_cache stores a GENERIC and
 * an UNROLLED entry under the fixed key through cache_store, writes them
 * there (trailer removed) and exits (scripts/fuzz.sh does this). */
#include "fuzz_input.h"
#include "plan/cache.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cache_key fixed_key(void)
{
    cache_key k;
    memset(&k, 0, sizeof k);
    k.format_version = CACHE_FORMAT_VERSION;
    snprintf(k.library_version, sizeof k.library_version, "fuzz");
    k.pattern_hash = 0x0123456789abcdefULL;
    k.values_hash = 0xfedcba9876543210ULL;
    k.m = 64, k.k = 64, k.n = 32, k.nnz = 400;
    k.sm = 90;
    k.strategy = SPF_STRATEGY_AUTO;
    k.forced = (spf_kernel_config){8, 32, 1, 2, 1};
    return k;
}

static char *read_whole(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f || fseek(f, 0, SEEK_END) != 0)
        abort();
    long n = ftell(f);
    char *buf = malloc(n > 0 ? (size_t)n : 1);
    rewind(f);
    if (n < 0 || !buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
        abort();
    fclose(f);
    *size = (size_t)n;
    return buf;
}

/* Store e under the fixed key, then copy its file less the trailer to
 * <out>/<name>. */
static void write_seed(const char *out, const char *name, const cache_entry *e)
{
    cache_key key = fixed_key();
    char path[4096], seed[4096];
    if (cache_store(fuzz_dir(), &key, e) != SPF_OK ||
        cache_entry_path(fuzz_dir(), &key, path, sizeof path) != SPF_OK) {
        fprintf(stderr, "fuzz_cache: cannot store a seed: %s\n", spf_last_error());
        abort();
    }
    size_t size;
    char *buf = read_whole(path, &size);
    remove(path);
    snprintf(seed, sizeof seed, "%s/%s", out, name);
    FILE *f = fopen(seed, "wb");
    if (!f || size < 8 || fwrite(buf, 1, size - 8, f) != size - 8 || fclose(f) != 0)
        abort();
    free(buf);
}

static void write_seeds(const char *out)
{
    cache_entry e;
    memset(&e, 0, sizeof e);
    e.strategy = SPF_STRATEGY_GENERIC;
    e.info.verify_error = -1;
    write_seed(out, "generic", &e);
    static unsigned char image[64] = "\x7f" "ELF not a real cubin";
    e.strategy = SPF_STRATEGY_UNROLLED;
    snprintf(e.info.config, sizeof e.info.config, "m8_n32_v1_p2_k1");
    snprintf(e.info.kernel_name, sizeof e.info.kernel_name, "spf_unrolled_f32_m8_n32_v1_p2_k1");
    e.info.registers = 40;
    e.info.code_bytes = 12345;
    e.info.kernel_us = 3.5;
    e.info.candidate_count = 2;
    e.info.candidates[0] = (spf_candidate){SPF_STRATEGY_UNROLLED, SPF_CANDIDATE_CHOSEN, 3.0, 3.5,
                                           "spf_unrolled_f32_m8_n32_v1_p2_k1"};
    e.info.candidates[1] = (spf_candidate){SPF_STRATEGY_DENSE, SPF_CANDIDATE_SLOWER, 5.0, 6.25,
                                           "dense_cublaslt_f32_default_b_n_last_c_n_last"};
    e.payload = image;
    e.payload_size = sizeof image;
    write_seed(out, "unrolled", &e);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *out = getenv("SPF_FUZZ_CACHE_SEEDS");
    if (out && out[0]) {
        write_seeds(out);
        exit(0);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cache_key key = fixed_key();
    char path[4096];
    if (cache_entry_path(fuzz_dir(), &key, path, sizeof path) != SPF_OK)
        abort();
    uint8_t *file = malloc(size + 8);
    if (!file)
        abort();
    memcpy(file, data, size);
    uint64_t sum = cache_checksum(data, size);
    for (int i = 0; i < 8; i++)
        file[size + i] = (uint8_t)(sum >> (8 * i));
    const char *written = fuzz_write(strrchr(path, '/') + 1, file, size + 8);
    free(file);
    if (strcmp(written, path) != 0)
        abort();

    cache_entry e;
    int found = -1;
    spf_status st = cache_load(fuzz_dir(), &key, &e, &found);
    if (st != SPF_OK || (found != 0 && found != 1))
        abort(); /* only invalid arguments and out-of-memory may fail */
    if (found) {
        const spf_plan_info *i = &e.info;
        if (!memchr(i->kernel_name, 0, sizeof i->kernel_name) ||
            !memchr(i->config, 0, sizeof i->config) || i->candidate_count < 0 ||
            i->candidate_count > SPF_MAX_CANDIDATES ||
            (e.payload_size != 0) != (e.payload != NULL))
            abort();
        for (int c = 0; c < i->candidate_count; c++)
            if (!memchr(i->candidates[c].detail, 0, sizeof i->candidates[c].detail))
                abort();
        if (e.payload_size) /* the whole payload must be ours to read */
            (void)cache_checksum(e.payload, e.payload_size);
    } else if (e.payload != NULL || e.payload_size != 0) {
        abort();
    }
    cache_entry_release(&e);
    return 0;
}
