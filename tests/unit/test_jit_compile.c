/* The compile step of the JIT (no GPU needed) with the ptxas program
 * ($SPFORGE_ASSEMBLER=ptxas): ptxas run as subprocesses in
 * parallel on an entry unit plus chunk units, -v parsed, registers read from
 * the cubins (the tile functions' too, which -v does not name; malformed
 * cubins give 0), cubins returned in memory, a rejected unit reported with
 * its log, the temporary folder removed, $SPF_PTXAS honoured. */
#define _POSIX_C_SOURCE 200809L

#include "test_util.h"

#include "strategy/unrolled/unrolled.h"
#include "core/rng.h"
#include "gpu/jit.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define HEADER ".version 8.0\n.target sm_80\n.address_size 64\n"

/* An entry that calls one chunk function per unit, as the generator emits. */
static const char entry_text[] =
    HEADER
    ".extern .func (.reg .f32 r) chunk0 (.param .b64 p);\n"
    ".extern .func (.reg .f32 r) chunk1 (.param .b64 p);\n"
    ".visible .entry spf_test_entry(.param .u64 B, .param .u64 C, .param .u64 bias)\n"
    "{\n"
    "  .reg .b64 %rd<4>;\n  .reg .f32 %f<4>;\n"
    "  ld.param.u64 %rd1, [B];\n  ld.param.u64 %rd2, [C];\n"
    "  cvta.to.global.u64 %rd1, %rd1;\n  cvta.to.global.u64 %rd2, %rd2;\n"
    "  { .param .b64 a0; .param .f32 r0; st.param.b64 [a0], %rd1;\n"
    "    call.uni (r0), chunk0, (a0); ld.param.f32 %f1, [r0]; }\n"
    "  { .param .b64 a1; .param .f32 r1; st.param.b64 [a1], %rd1;\n"
    "    call.uni (r1), chunk1, (a1); ld.param.f32 %f2, [r1]; }\n"
    "  add.f32 %f3, %f1, %f2;\n  st.global.f32 [%rd2], %f3;\n  ret;\n}\n";

#define CHUNK(name, imm)                                                                   \
    HEADER ".visible .func (.reg .f32 r) " name " (.param .b64 p)\n{\n"                     \
           "  .reg .b64 %rd<2>;\n  .reg .f32 %f<3>;\n  ld.param.u64 %rd1, [p];\n"           \
           "  ld.global.f32 %f1, [%rd1+8];\n  fma.rn.f32 %f2, %f1, " imm ", %f1;\n"          \
           "  mov.f32 r, %f2;\n  ret;\n}\n"

static const char chunk0_text[] = CHUNK("chunk0", "0f3F000000");
static const char chunk1_text[] = CHUNK("chunk1", "0fBE800000");
static const char broken_text[] = HEADER ".visible .func chunk9 ()\n{\n  frobnicate.f32 %f1;\n}\n";

static ptx_unit unit_of(const char *text) { return (ptx_unit){(char *)text, strlen(text)}; }

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void test_parse_verbose(void)
{
    const char *log = "ptxas info    : 0 bytes gmem\n"
                      "ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
                      "ptxas info    : Function properties for k\n"
                      "    8 bytes stack frame, 12 bytes spill stores, 20 bytes spill loads\n"
                      "ptxas info    : Used 40 registers, used 1 barriers, 352 bytes cmem[0]\n"
                      "ptxas info    : Function properties for chunk3\n"
                      "    0 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
                      "ptxas info    : Used 96 registers\n";
    int regs = -1, spills = -1;
    ptxas_parse_verbose(log, &regs, &spills);
    CHECK_EQ_I64(regs, 96);
    CHECK_EQ_I64(spills, 40);
    ptxas_parse_verbose("", &regs, &spills);
    CHECK(regs == 0 && spills == 0);
}

/* A generated kernel (LO-SpMM §3.1 unrolled tiles): ptxas -v names only the
 * entry's 24-odd registers, the chunk units' tile functions use far more,
 * and ptxas_compile reports them from the cubin: each unit's count is
 * ptxas_cubin_registers of its cubin, the chunks' exceed the entry's, and
 * the object's is the largest. */
static void test_generated_registers(void)
{
    spf_matrix *a = gen_matrix(SPF_GEN_UNIFORM, 96, 128, 0.9, 11);
    spf_kernel_config cfg = {8, 128, 4, 2, 1};
    ptx_program prog;
    CHECK_OK(unrolled_generate(a, NULL, 256, &cfg, SPF_DTYPE_F32, 0, 1, 1, 90, 0, &prog));
    CHECK(prog.unit_count >= 2);
    const ptx_program *programs[] = {&prog};
    jit_object obj;
    CHECK_OK(jit_compile(programs, 1, 90, 0, &obj));
    CHECK_OK(obj.status);
    int entry = obj.unit_count > 0 ? obj.units[0].registers : 0, largest = 0;
    CHECK_MSG(entry > 0 && entry < 32, "entry unit: %d registers", entry);
    for (int u = 0; u < obj.unit_count; u++) {
        const ptxas_result *r = &obj.units[u];
        int from_cubin = ptxas_cubin_registers(r->cubin, r->cubin_size);
        CHECK_MSG(r->registers == from_cubin, "unit %d: %d registers, cubin %d", u, r->registers,
                  from_cubin);
        CHECK_MSG(u == 0 || r->registers > entry, "chunk unit %d: %d registers, entry %d", u,
                  r->registers, entry);
        largest = r->registers > largest ? r->registers : largest;
    }
    CHECK_EQ_I64(obj.registers, largest);
    CHECK(obj.registers <= 255);

    /* every prefix of a real cubin is truncated before its section
     * headers (ptxas writes them last) and gives 0 */
    const ptxas_result *chunk = obj.unit_count > 1 ? &obj.units[1] : NULL;
    if (chunk && chunk->cubin) {
        int prefixes_clean = 1;
        for (size_t len = 0; len < chunk->cubin_size; len += 1 + len / 64)
            prefixes_clean &= ptxas_cubin_registers(chunk->cubin, len) == 0;
        CHECK(prefixes_clean);
        /* random bytes written over it, a few at a time, must not make it
         * read outside the buffer (valgrind shows it); most land in the
         * code, which leaves the count as it was */
        unsigned char *copy = malloc(chunk->cubin_size);
        CHECK(copy != NULL);
        rng r;
        rng_seed(&r, 5);
        int trials = 2000, unchanged = 0;
        for (int trial = 0; copy && trial < trials; trial++) {
            memcpy(copy, chunk->cubin, chunk->cubin_size);
            for (int k = 0; k < 4; k++)
                copy[rng_next(&r) % chunk->cubin_size] = (unsigned char)rng_next(&r);
            unchanged += ptxas_cubin_registers(copy, chunk->cubin_size) == chunk->registers;
        }
        CHECK_MSG(unchanged > trials / 2, "%d of %d mutated cubins kept the count", unchanged,
                  trials);
        free(copy);
    }
    jit_object_release(&obj);
    ptx_program_free(&prog);
    spf_matrix_free(a);
}

static void put_le(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> 8 * i);
}

/* A minimal relocatable cubin by hand: ELF64 header, a section name table,
 * a .nv.info with two EIATTR_REGCOUNT records (77 and 99) around an NVAL
 * and an HVAL record, and three section headers (null, names, info). */
enum { NAMES_AT = 64, INFO_AT = 84, INFO_LEN = 30, HEADERS_AT = 120, CUBIN_LEN = 312 };

static void hand_cubin(unsigned char *elf)
{
    memset(elf, 0, CUBIN_LEN);
    memcpy(elf, "\177ELF\2\1\1", 7);
    put_le(elf + 0x28, HEADERS_AT, 8);
    put_le(elf + 0x3a, 64, 2);
    put_le(elf + 0x3c, 3, 2);
    put_le(elf + 0x3e, 1, 2);
    memcpy(elf + NAMES_AT, "\0.shstrtab\0.nv.info", 20);
    static const unsigned char info[INFO_LEN] = {
        4, 0x2f, 8, 0, 1, 0, 0, 0, 77, 0, 0, 0, /* REGCOUNT: symbol 1, 77 registers */
        1, 0x12,                                /* an NVAL: no value              */
        3, 0x1b, 5, 0,                          /* an HVAL: a u16 value           */
        4, 0x2f, 8, 0, 2, 0, 0, 0, 99, 0, 0, 0, /* REGCOUNT: symbol 2, 99 registers */
    };
    memcpy(elf + INFO_AT, info, INFO_LEN);
    unsigned char *names = elf + HEADERS_AT + 64, *nv = elf + HEADERS_AT + 128;
    put_le(names, 1, 4);
    put_le(names + 24, NAMES_AT, 8);
    put_le(names + 32, 20, 8);
    put_le(nv, 11, 4);
    put_le(nv + 24, INFO_AT, 8);
    put_le(nv + 32, INFO_LEN, 8);
}

/* Inputs that are no cubin, or a cubin whose lengths lie, give 0 (the
 * fallback to ptxas -v) or only the records before the lie. */
static void test_cubin_registers_malformed(void)
{
    CHECK_EQ_I64(ptxas_cubin_registers(NULL, 0), 0);
    CHECK_EQ_I64(ptxas_cubin_registers(NULL, 4096), 0);
    unsigned char buf[CUBIN_LEN];
    rng r;
    rng_seed(&r, 3);
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)rng_next(&r);
    CHECK_EQ_I64(ptxas_cubin_registers(buf, sizeof buf), 0);

    hand_cubin(buf);
    CHECK_EQ_I64(ptxas_cubin_registers(buf, CUBIN_LEN), 99);
    CHECK_EQ_I64(ptxas_cubin_registers(buf, CUBIN_LEN - 1), 0); /* last header cut */
    buf[4] = 1;                                                   /* ELFCLASS32 */
    CHECK_EQ_I64(ptxas_cubin_registers(buf, CUBIN_LEN), 0);
    hand_cubin(buf);
    put_le(buf + 0x28, (uint64_t)-64, 8); /* e_shoff wrapping around */
    CHECK_EQ_I64(ptxas_cubin_registers(buf, CUBIN_LEN), 0);
    hand_cubin(buf);
    put_le(buf + 0x3e, 3, 2); /* e_shstrndx past the table */
    CHECK_EQ_I64(ptxas_cubin_registers(buf, CUBIN_LEN), 0);
    hand_cubin(buf);
    put_le(buf + INFO_AT + 20, 0xffff, 2); /* the second REGCOUNT runs past its section */
    CHECK_EQ_I64(ptxas_cubin_registers(buf, CUBIN_LEN), 77);
    hand_cubin(buf);
    put_le(buf + HEADERS_AT + 128 + 32, 1000, 8); /* .nv.info past the buffer */
    CHECK_EQ_I64(ptxas_cubin_registers(buf, CUBIN_LEN), 0);
    hand_cubin(buf);
    put_le(buf + HEADERS_AT + 128 + 24, (uint64_t)-8, 8); /* its offset wrapping around */
    CHECK_EQ_I64(ptxas_cubin_registers(buf, CUBIN_LEN), 0);
    hand_cubin(buf);
    put_le(buf + HEADERS_AT + 64 + 32, 15, 8); /* the names end inside ".nv.info" */
    CHECK_EQ_I64(ptxas_cubin_registers(buf, CUBIN_LEN), 0);
    hand_cubin(buf);
    put_le(buf + HEADERS_AT + 128, 0xfffffff0, 4); /* a name index past the names */
    CHECK_EQ_I64(ptxas_cubin_registers(buf, CUBIN_LEN), 0);
    hand_cubin(buf);
    buf[NAMES_AT + 19] = '.'; /* ".nv.info." is another section */
    CHECK_EQ_I64(ptxas_cubin_registers(buf, CUBIN_LEN), 0);
}

/* Two programs in one batch: a good one (entry + two chunk units) and one
 * whose second unit does not assemble. */
static void test_compile_batch(const char *tmpdir)
{
    ptx_unit good_units[] = {unit_of(entry_text), unit_of(chunk0_text), unit_of(chunk1_text)};
    ptx_unit bad_units[] = {unit_of(chunk0_text), unit_of(broken_text)};
    ptx_program good = {.units = good_units, .unit_count = 3, .entry = "spf_test_entry"};
    ptx_program bad = {.units = bad_units, .unit_count = 2, .entry = "spf_test_broken"};
    const ptx_program *programs[] = {&good, &bad};
    jit_object obj[2];
    for (int sm = 80; sm <= 90; sm += 10) {
        CHECK_OK(jit_compile(programs, 2, sm, 2, obj));
        CHECK_OK(obj[0].status);
        CHECK(obj[0].assembler == JIT_ASSEMBLER_PTXAS);
        CHECK_EQ_I64(obj[0].unit_count, 3);
        for (int u = 0; u < obj[0].unit_count; u++) {
            CHECK(obj[0].units[u].cubin_size > 4);
            CHECK(obj[0].units[u].cubin && memcmp(obj[0].units[u].cubin, "\177ELF", 4) == 0);
            CHECK(obj[0].units[u].seconds > 0.0);
        }
        CHECK(obj[0].registers > 0 && obj[0].registers < 255);
        CHECK_EQ_I64(obj[0].spill_bytes, 0);
        CHECK(obj[0].compile_s > 0.0);
        CHECK(obj[0].log == NULL);

        CHECK_STATUS(obj[1].status, SPF_ERR_COMPILE);
        CHECK(obj[1].log != NULL);
        CHECK_MSG(obj[1].log && strstr(obj[1].log, "unit 1 of spf_test_broken") &&
                      strstr(obj[1].log, "frobnicate"),
                  "log: %s", obj[1].log ? obj[1].log : "(null)");
        CHECK(obj[1].units[0].status == SPF_OK && obj[1].units[0].cubin != NULL);
        jit_object_release(&obj[0]);
        jit_object_release(&obj[1]);
        CHECK(obj[0].units == NULL && obj[1].log == NULL);
    }
    CHECK_MSG(dir_is_empty(tmpdir), "temporary files left in %s", tmpdir);
}

/* $SPF_PTXAS is the ptxas run; a wrapper that sleeps shows the units run
 * side by side (sleep takes no CPU, so this holds on a 2-core machine). */
static void test_parallel_and_override(const char *tmpdir, const char *real)
{
    char wrapper[1024];
    snprintf(wrapper, sizeof wrapper, "%s/../slow-ptxas.sh", tmpdir);
    FILE *f = fopen(wrapper, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fprintf(f, "#!/bin/sh\nsleep 0.4\nexec '%s' \"$@\"\n", real);
    fclose(f);
    chmod(wrapper, 0755);
    setenv("SPF_PTXAS", wrapper, 1);
    char found[1024];
    CHECK(ptxas_locate(found, sizeof found) && strcmp(found, wrapper) == 0);

    enum { UNITS = 6 };
    ptx_unit units[UNITS];
    for (int i = 0; i < UNITS; i++)
        units[i] = unit_of(i % 2 ? chunk1_text : chunk0_text);
    ptx_program p = {.units = units, .unit_count = UNITS, .entry = "spf_test_chunks"};
    const ptx_program *programs[] = {&p};
    jit_object obj;
    double t0 = now_s();
    CHECK_OK(jit_compile(programs, 1, 90, UNITS, &obj));
    double wall = now_s() - t0;
    CHECK_OK(obj.status);
    /* Serially the six runs take > 2.4 s of sleep alone. */
    CHECK_MSG(obj.compile_s > 2.4 && wall < 0.6 * obj.compile_s,
              "wall %.3f s for %.3f s of ptxas runs", wall, obj.compile_s);
    jit_object_release(&obj);

    setenv("SPF_PTXAS", "/nonexistent/ptxas", 1);
    CHECK(ptxas_locate(found, sizeof found) && strcmp(found, wrapper) != 0);
    unsetenv("SPF_PTXAS");
    unlink(wrapper);
}

int main(int argc, char **argv)
{
    char real[512];
    if (!ptxas_locate(real, sizeof real))
        SKIP("no ptxas ($SPF_PTXAS, $CUDA_HOME/bin, /usr/local/cuda/bin, PATH)");
    char base[] = "/tmp/spf-test-jit-XXXXXX";
    CHECK(mkdtemp(base) != NULL);
    char tmpdir[600];
    snprintf(tmpdir, sizeof tmpdir, "%s/tmp", base);
    CHECK(mkdir(tmpdir, 0700) == 0);
    setenv("TMPDIR", tmpdir, 1);
    /* the ptxas program's path (test_ptx_compiler.c has the in-process one) */
    setenv("SPFORGE_ASSEMBLER", "ptxas", 1);

    test_parse_verbose();
    test_cubin_registers_malformed();
    test_generated_registers();
    test_compile_batch(tmpdir);
    test_parallel_and_override(tmpdir, real);

    rmdir(tmpdir);
    rmdir(base);
    return check_report();
}
