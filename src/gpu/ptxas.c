/* Running ptxas: one process per unit, handed out to host threads by
 * parallel_for (each worker waits on its own child, so `threads` processes
 * run at once). Files live in a private mkdtemp folder for the length of the
 * call; the cubins come back in memory. */
#define _POSIX_C_SOURCE 200809L

#include "gpu/ptxas.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/file.h"
#include "core/parallel.h"
#include "gpu/timing.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int executable(const char *path) { return path[0] && access(path, X_OK) == 0; }

static int try_path(char *path, size_t cap, const char *dir, const char *suffix)
{
    if (!dir || !dir[0])
        return 0;
    int n = snprintf(path, cap, "%s%s", dir, suffix);
    return n > 0 && (size_t)n < cap && executable(path);
}

int ptxas_locate(char *path, size_t cap)
{
    if (try_path(path, cap, getenv("SPF_PTXAS"), "") ||
        try_path(path, cap, getenv("CUDA_HOME"), "/bin/ptxas") ||
        try_path(path, cap, "/usr/local/cuda", "/bin/ptxas"))
        return 1;
    const char *env = getenv("PATH");
    while (env && *env) {
        const char *colon = strchr(env, ':');
        size_t len = colon ? (size_t)(colon - env) : strlen(env);
        char dir[PATH_MAX];
        if (len > 0 && len < sizeof dir) {
            memcpy(dir, env, len);
            dir[len] = '\0';
            if (try_path(path, cap, dir, "/ptxas"))
                return 1;
        }
        env = colon ? colon + 1 : NULL;
    }
    return 0;
}

void ptxas_result_clear(ptxas_result *r)
{
    mem_free(r->cubin);
    mem_free(r->log);
    memset(r, 0, sizeof *r);
}

unsigned ptxas_retry_cap(unsigned cap, int spill_bytes)
{
    if (spill_bytes <= 0 || cap == 0 || cap >= 255)
        return 0;
    return cap + 32 > 255 ? 255 : cap + 32;
}

void ptxas_parse_verbose(const char *log, int *registers, int *spill_bytes)
{
    *registers = 0;
    *spill_bytes = 0;
    for (const char *line = log; line && *line;) {
        const char *used = strstr(line, "Used ");
        const char *eol = strchr(line, '\n');
        const char *frame = strstr(line, " bytes stack frame, ");
        int regs, stack, stores, loads;
        if (used && (!eol || used < eol) && sscanf(used, "Used %d registers", &regs) == 1 &&
            regs > *registers)
            *registers = regs;
        if (frame && (!eol || frame < eol)) {
            const char *digits = frame; /* back to the stack frame's byte count */
            while (digits > line && isdigit((unsigned char)digits[-1]))
                digits--;
            if (digits < frame &&
                sscanf(digits, "%d bytes stack frame, %d bytes spill stores, %d bytes spill loads",
                       &stack, &stores, &loads) == 3)
                *spill_bytes += stores + loads;
        }
        line = eol ? eol + 1 : NULL;
    }
}

/* A little-endian unsigned field of `bytes` bytes (the cubin's byte order,
 * whatever the host's). */
static uint64_t le_field(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* ELF64 header fields, the size of a section header and its fields (System
 * V gABI). */
enum {
    ELF_HEADER_SIZE = 64, ELF_SHOFF = 0x28, ELF_SHENTSIZE = 0x3a, ELF_SHNUM = 0x3c,
    ELF_SHSTRNDX = 0x3e, SHDR_ENTSIZE = 64, SH_NAME = 0, SH_OFFSET = 24, SH_SIZE = 32,
};

/* NVIDIA's .nv.info attribute records: a format byte, an attribute byte,
 * then a value whose size the format sets. EIFMT_NVAL has none (2 bytes in
 * all), EIFMT_BVAL and EIFMT_HVAL fill 2 more (4 in all), EIFMT_SVAL has a
 * u16 payload length and that many bytes. EIATTR_REGCOUNT is an SVAL of 8
 * bytes: u32 symbol index, u32 register count; the unit-wide .nv.info holds
 * one per function. Checked against ptxas -v on the entries and against
 * nvlink -v on linked kernels (tests/unit/test_unrolled_ptxas.c). */
enum { EIFMT_NVAL = 1, EIFMT_SVAL = 4, EIATTR_REGCOUNT = 0x2f };

/* The largest EIATTR_REGCOUNT among the records of one .nv.info section
 * (`info`, len bytes, already within the buffer). */
static int nv_info_max_registers(const unsigned char *info, uint64_t len)
{
    int best = 0;
    for (uint64_t p = 0; len - p >= 4;) {
        unsigned fmt = info[p], attr = info[p + 1];
        uint64_t payload = le_field(info + p + 2, 2);
        if (fmt != EIFMT_SVAL) {
            p += fmt == EIFMT_NVAL ? 2 : 4;
            continue;
        }
        if (payload > len - p - 4)
            break; /* a record running past its section: the rest cannot be trusted */
        if (attr == EIATTR_REGCOUNT && payload == 8) {
            uint64_t regs = le_field(info + p + 8, 4);
            if (regs <= INT_MAX && (int)regs > best)
                best = (int)regs;
        }
        p += 4 + payload;
    }
    return best;
}

int ptxas_cubin_registers(const void *cubin, size_t size)
{
    const unsigned char *elf = cubin;
    if (!elf || size < ELF_HEADER_SIZE || memcmp(elf, "\177ELF", 4) != 0 || elf[4] != 2 ||
        elf[5] != 1)
        return 0; /* not a 64-bit little-endian ELF */
    uint64_t shoff = le_field(elf + ELF_SHOFF, 8), shentsize = le_field(elf + ELF_SHENTSIZE, 2),
             shnum = le_field(elf + ELF_SHNUM, 2), shstrndx = le_field(elf + ELF_SHSTRNDX, 2);
    if (shentsize < SHDR_ENTSIZE || shstrndx >= shnum || shoff > size ||
        (size - shoff) / shentsize < shnum)
        return 0;
    const unsigned char *strtab = elf + shoff + shstrndx * shentsize;
    uint64_t names = le_field(strtab + SH_OFFSET, 8);
    uint64_t names_len = le_field(strtab + SH_SIZE, 8);
    if (names > size || names_len > size - names)
        return 0;
    static const char wanted[] = ".nv.info"; /* the unit-wide section, not .nv.info.<function> */
    int best = 0;
    for (uint64_t i = 0; i < shnum; i++) {
        const unsigned char *sh = elf + shoff + i * shentsize;
        uint64_t name = le_field(sh + SH_NAME, 4), off = le_field(sh + SH_OFFSET, 8),
                 len = le_field(sh + SH_SIZE, 8);
        if (name >= names_len || names_len - name < sizeof wanted || off > size ||
            len > size - off || memcmp(elf + names + name, wanted, sizeof wanted) != 0)
            continue;
        int regs = nv_info_max_registers(elf + off, len);
        best = regs > best ? regs : best;
    }
    return best;
}

/* The whole of a file into a NUL-terminated buffer (owned by the caller).
 * Opened close-on-exec (core/file.h), as every descriptor here is: the
 * other workers, and other threads' plans, spawn ptxas processes at any
 * moment, and none of them should inherit this one. */
static spf_status slurp(const char *path, char **data, size_t *size)
{
    spf_status status = SPF_OK;
    char *buf = NULL;
    FILE *f = NULL;
    int64_t len = 0;
    TRY(file_open_read(path, &f, &len));
    buf = mem_alloc((size_t)len + 1);
    if (!buf)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "%lld bytes for %s", (long long)len, path);
    if (fread(buf, 1, (size_t)len, f) != (size_t)len)
        FAIL_GOTO(SPF_ERR_IO, "short read of %s", path);
    buf[len] = '\0';
    *data = buf;
    *size = (size_t)len;
    buf = NULL;
fail:
    mem_free(buf);
    if (f)
        fclose(f);
    return status;
}

/* A new file in the private folder, close-on-exec (see slurp). */
static spf_status spill(const char *path, const char *text, size_t size)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        spf_status st = FAIL(SPF_ERR_IO, "cannot create %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return st;
    }
    size_t wrote = fwrite(text, 1, size, f);
    if (fclose(f) != 0 || wrote != size)
        return FAIL(SPF_ERR_IO, "cannot write %s", path);
    return SPF_OK;
}

typedef struct batch {
    const char *ptxas;
    const char *dir;
    const ptx_unit *const *units;
    const unsigned *reg_caps;
    ptxas_result *results;
    char arch[32];
} batch;

/* Run ptxas on in → out with its stdout and stderr both in logpath; the
 * exit code says whether the unit assembled. */
static spf_status spawn_ptxas(const batch *b, const char *in, const char *out, const char *logpath,
                              unsigned reg_cap, int *exit_ok)
{
    spf_status status = SPF_OK;
    posix_spawn_file_actions_t actions;
    int have_actions = posix_spawn_file_actions_init(&actions) == 0;
    if (!have_actions ||
        posix_spawn_file_actions_addopen(&actions, 1, logpath, O_WRONLY | O_CREAT | O_TRUNC, 0600) ||
        posix_spawn_file_actions_adddup2(&actions, 1, 2))
        FAIL_GOTO(SPF_ERR_INTERNAL, "cannot set up the ptxas process");
    char cap[64];
    snprintf(cap, sizeof cap, "--device-function-maxrregcount=%u", reg_cap);
    char *argv[] = {(char *)b->ptxas, (char *)b->arch, "-c", "-O3", "-v", (char *)in, "-o",
                    (char *)out, reg_cap ? cap : NULL, NULL};
    pid_t pid;
    int err = posix_spawn(&pid, b->ptxas, &actions, NULL, argv, environ);
    if (err != 0)
        FAIL_GOTO(SPF_ERR_COMPILE, "cannot start %s: %s", b->ptxas, strerror(err));
    int wstatus;
    while (waitpid(pid, &wstatus, 0) < 0) {
        if (errno != EINTR)
            FAIL_GOTO(SPF_ERR_INTERNAL, "waitpid on ptxas: %s", strerror(errno));
    }
    *exit_ok = WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0;
fail:
    if (have_actions)
        posix_spawn_file_actions_destroy(&actions);
    return status;
}

static spf_status compile_one(const batch *b, int64_t index)
{
    spf_status status = SPF_OK;
    char in[PATH_MAX], out[PATH_MAX], logpath[PATH_MAX];
    snprintf(in, sizeof in, "%s/u%lld.ptx", b->dir, (long long)index);
    snprintf(out, sizeof out, "%s/u%lld.cubin", b->dir, (long long)index);
    snprintf(logpath, sizeof logpath, "%s/u%lld.log", b->dir, (long long)index);
    ptxas_result *r = &b->results[index];
    char *log = NULL;
    size_t log_size = 0;
    int exit_ok = 0;

    unsigned cap = b->reg_caps ? b->reg_caps[index] : 0;
    double t0 = timing_now_s();
    TRY(spill(in, b->units[index]->text, b->units[index]->size));
    for (;;) {
        TRY(spawn_ptxas(b, in, out, logpath, cap, &exit_ok));
        mem_free(log);
        log = NULL;
        TRY(slurp(logpath, &log, &log_size));
        ptxas_parse_verbose(log, &r->registers, &r->spill_bytes);
        unsigned next = exit_ok ? ptxas_retry_cap(cap, r->spill_bytes) : 0;
        if (!next)
            break;
        cap = next;
    }
    r->seconds = timing_now_s() - t0;
    if (exit_ok) {
        char *cubin = NULL;
        TRY(slurp(out, &cubin, &r->cubin_size));
        r->cubin = cubin;
        int cubin_registers = ptxas_cubin_registers(cubin, r->cubin_size);
        if (cubin_registers > 0)
            r->registers = cubin_registers;
        r->status = SPF_OK;
    } else {
        r->status = SPF_ERR_COMPILE;
        r->log = log;
        log = NULL;
    }
fail:
    mem_free(log);
    unlink(in);
    unlink(out);
    unlink(logpath);
    return status;
}

static spf_status compile_range(void *ctx, int64_t begin, int64_t end, int worker)
{
    (void)worker;
    for (int64_t i = begin; i < end; i++) {
        spf_status st = compile_one(ctx, i);
        if (st != SPF_OK)
            return st;
    }
    return SPF_OK;
}

spf_status ptxas_compile(const char *ptxas, const ptx_unit *const *units,
                         const unsigned *reg_caps, int count, int sm, int threads,
                         ptxas_result *results)
{
    if (!ptxas || (!units && count > 0) || count < 0 || sm <= 0 || (!results && count > 0))
        return FAIL(SPF_ERR_INTERNAL, "bad arguments");
    memset(results, 0, (size_t)count * sizeof *results);
    if (count == 0)
        return SPF_OK;

    const char *tmp = getenv("TMPDIR");
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/spforge-jit-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return FAIL(SPF_ERR_IO, "cannot create a temporary folder %s: %s", dir, strerror(errno));

    batch b = {.ptxas = ptxas, .dir = dir, .units = units, .reg_caps = reg_caps,
               .results = results};
    snprintf(b.arch, sizeof b.arch, "-arch=sm_%d", sm);
    spf_status status =
        parallel_for_progress(SPF_STAGE_COMPILE, count, 1, threads, compile_range, &b);
    rmdir(dir);
    if (status != SPF_OK) {
        for (int i = 0; i < count; i++)
            ptxas_result_clear(&results[i]);
    }
    return status;
}
