/* The compile step of the JIT (no GPU needed): ptxas run as subprocesses in
 * parallel on an entry unit plus chunk units, -v parsed, cubins returned in
 * memory, a rejected unit reported with its log, the temporary folder
 * removed, $SPF_PTXAS honoured. */
#define _POSIX_C_SOURCE 200809L

#include "check.h"

#include "gpu/jit.h"

#include <dirent.h>
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

static int dir_is_empty(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return 0;
    int entries = 0;
    for (struct dirent *e; (e = readdir(d));)
        entries += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return entries == 0;
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
        CHECK(!obj[0].via_ptx);
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

int main(void)
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

    test_parse_verbose();
    test_compile_batch(tmpdir);
    test_parallel_and_override(tmpdir, real);

    rmdir(tmpdir);
    rmdir(base);
    return check_report();
}
