/* The JIT's assemblers (no GPU needed, issue 12): $SPFORGE_ASSEMBLER picks
 * one or fails saying why; the in-process PTX compiler (nvPTXCompiler)
 * assembles the same generated PTX as the ptxas program into the same
 * relocatable cubins (same ELF machine, flags and function symbols, same
 * registers; every section but the toolkit-info note byte for byte when
 * both are one toolkit version); a malformed unit gives SPF_ERR_COMPILE
 * with a log naming the error, through jit_link_load's detail as ptxas's
 * does; many units side by side give what one thread gives; nothing is
 * left in $TMPDIR; the module the shared library loads is that compiler
 * and anything else is refused. The in-process parts skip, with a NOTE, in a build
 * without the compiler (CPU-only, or no nvPTXCompiler found). */
#define _POSIX_C_SOURCE 200809L

#include "test_util.h"

#include "gpu/assembler.h"
#include "gpu/jit.h"
#include "gpu/ptx_compiler.h"
#include "strategy/unrolled/unrolled.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define HEADER ".version 8.0\n.target sm_80\n.address_size 64\n"

static const char good_text[] =
    HEADER ".visible .entry spf_test_k(.param .u64 p)\n{\n"
           "  .reg .b64 %rd<3>;\n  .reg .f32 %f<3>;\n  ld.param.u64 %rd1, [p];\n"
           "  cvta.to.global.u64 %rd2, %rd1;\n  ld.global.f32 %f1, [%rd2];\n"
           "  fma.rn.f32 %f2, %f1, 0f3F000000, %f1;\n  st.global.f32 [%rd2], %f2;\n  ret;\n}\n";
static const char broken_text[] = HEADER ".visible .func chunk9 ()\n{\n  frobnicate.f32 %f1;\n}\n";

static ptx_unit unit_of(const char *text) { return (ptx_unit){(char *)text, strlen(text)}; }

/* --------------------------------------------------------- cubin reading */

static uint64_t le(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

typedef struct section {
    const char *name;
    const unsigned char *data;
    uint64_t size, type;
} section;

/* The sections of a well-formed 64-bit ELF (the assemblers' output;
 * ptxas_cubin_registers is the bounds-checked reader): up to cap of them. */
static int sections_of(const unsigned char *elf, size_t size, section *out, int cap)
{
    if (size < 64 || memcmp(elf, "\177ELF", 4) != 0)
        return 0;
    uint64_t shoff = le(elf + 0x28, 8), shentsize = le(elf + 0x3a, 2), shnum = le(elf + 0x3c, 2),
             shstrndx = le(elf + 0x3e, 2);
    if (shoff + shnum * shentsize > size || shstrndx >= shnum)
        return 0;
    const unsigned char *names = elf + le(elf + shoff + shstrndx * shentsize + 24, 8);
    int n = 0;
    for (uint64_t i = 0; i < shnum && n < cap; i++, n++) {
        const unsigned char *sh = elf + shoff + i * shentsize;
        out[n] = (section){(const char *)names + le(sh, 4), elf + le(sh + 24, 8), le(sh + 32, 8),
                           le(sh + 4, 4)};
        if (out[n].type == 8) /* SHT_NOBITS: no bytes in the file */
            out[n].size = 0;
    }
    return n;
}

/* The names of the function symbols (STT_FUNC) of a cubin, sorted and
 * joined by spaces into buf. */
static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void function_names(const void *cubin, size_t size, char *buf, size_t cap)
{
    section s[64];
    int n = sections_of(cubin, size, s, 64);
    const char *names[256];
    int count = 0;
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (s[i].type != 2) /* SHT_SYMTAB; its strings are .strtab */
            continue;
        const char *strtab = NULL;
        for (int j = 0; j < n; j++)
            if (strcmp(s[j].name, ".strtab") == 0)
                strtab = (const char *)s[j].data;
        for (uint64_t off = 0; strtab && off + 24 <= s[i].size && count < 256; off += 24) {
            const unsigned char *sym = s[i].data + off;
            if ((sym[4] & 0xf) == 2) /* STT_FUNC */
                names[count++] = strtab + le(sym, 4);
        }
    }
    qsort(names, (size_t)count, sizeof *names, cmp_str);
    for (int i = 0; i < count; i++) {
        strncat(buf, names[i], cap - strlen(buf) - 1);
        strncat(buf, " ", cap - strlen(buf) - 1);
    }
}

/* Whether every section but .note.nv.tkinfo (which names the tool and its
 * build) holds the same bytes in both cubins; the first that differs in
 * *which. */
static int same_code(const ptxas_result *x, const ptxas_result *y, const char **which)
{
    section a[64], b[64];
    int na = sections_of(x->cubin, x->cubin_size, a, 64);
    int nb = sections_of(y->cubin, y->cubin_size, b, 64);
    *which = "the section count";
    if (na == 0 || na != nb)
        return 0;
    for (int i = 0; i < na; i++) {
        *which = a[i].name;
        if (strcmp(a[i].name, b[i].name) != 0 || a[i].type != b[i].type)
            return 0;
        if (strcmp(a[i].name, ".note.nv.tkinfo") == 0)
            continue;
        if (a[i].size != b[i].size || memcmp(a[i].data, b[i].data, a[i].size) != 0)
            return 0;
    }
    return 1;
}

/* ------------------------------------------------------------- helpers */

/* major.minor of the ptxas found ("V13.0.88"), 0 when unknown. */
static int ptxas_version(const char *ptxas, int *major, int *minor)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "'%s' --version", ptxas);
    FILE *p = popen(cmd, "r");
    int found = 0;
    char line[512];
    while (p && fgets(line, sizeof line, p)) {
        const char *v = strstr(line, ", V");
        found |= v && sscanf(v, ", V%d.%d", major, minor) == 2;
    }
    if (p)
        pclose(p);
    return found;
}

static spf_status compile_with(const char *assembler, const ptx_program *p, int threads,
                               jit_object *o)
{
    setenv("SPFORGE_ASSEMBLER", assembler, 1);
    const ptx_program *programs[] = {p};
    spf_status st = jit_compile(programs, 1, 90, threads, o);
    unsetenv("SPFORGE_ASSEMBLER");
    return st;
}

/* --------------------------------------------------------------- tests */

/* The PTX Compiler API's info log writes the stack-frame line after
 * "ptxas ." where ptxas -v indents it; both parse alike. */
static void test_parse_info_log(void)
{
    const char *log = "ptxas info    : 0 bytes gmem\n"
                      "ptxas info    : Function properties for k\n"
                      "ptxas         .     8 bytes stack frame, 12 bytes spill stores, 20 bytes "
                      "spill loads\n"
                      "ptxas info    : Used 40 registers, used 0 barriers\n"
                      "ptxas info    : Compile time = 3.801 ms\n";
    int regs = -1, spills = -1;
    ptxas_parse_verbose(log, &regs, &spills);
    CHECK_EQ_I64(regs, 40);
    CHECK_EQ_I64(spills, 32);
    CHECK_EQ_I64(ptxas_retry_cap(96, 4), 128);
    CHECK_EQ_I64(ptxas_retry_cap(240, 4), 255);
    CHECK_EQ_I64(ptxas_retry_cap(255, 4), 0);
    CHECK_EQ_I64(ptxas_retry_cap(96, 0), 0);
    CHECK_EQ_I64(ptxas_retry_cap(0, 4), 0);
}

/* $SPFORGE_ASSEMBLER: each name forces its assembler, a forced one that is
 * missing and an unknown name are errors that say so, auto and unset take
 * the default order. Holds in every build. */
static void test_forcing(int linked, int have_ptxas)
{
    ptx_unit units[] = {unit_of(good_text)};
    ptx_program p = {.units = units, .unit_count = 1, .entry = "spf_test_k"};
    jit_object o;

    CHECK_OK(compile_with("driver", &p, 1, &o));
    CHECK(o.assembler == JIT_ASSEMBLER_DRIVER && o.units == NULL && o.status == SPF_OK);
    jit_object_release(&o);

    spf_status st = compile_with("inprocess", &p, 1, &o);
    if (linked) {
        CHECK_OK(st);
        CHECK(o.assembler == JIT_ASSEMBLER_INPROCESS && o.units && o.units[0].cubin);
        jit_object_release(&o);
    } else {
        CHECK_STATUS(st, SPF_ERR_UNSUPPORTED);
        CHECK_DETAIL("SPFORGE_ASSEMBLER=inprocess: this build has no in-process PTX compiler");
    }
    if (have_ptxas) {
        CHECK_OK(compile_with("ptxas", &p, 1, &o));
        CHECK(o.assembler == JIT_ASSEMBLER_PTXAS && o.units && o.units[0].cubin);
        jit_object_release(&o);
    }

    CHECK_STATUS(compile_with("nvcc", &p, 1, &o), SPF_ERR_INVALID_ARGUMENT);
    CHECK_DETAIL("SPFORGE_ASSEMBLER=nvcc: not an assembler");
    CHECK(o.units == NULL && o.log == NULL);

    /* whatever the order, the one that is there runs, and the driver is
     * last: no ptxas at run time means the in-process compiler */
    CHECK(assembler_first(1, 0) == JIT_ASSEMBLER_INPROCESS);
    CHECK(assembler_first(0, 1) == JIT_ASSEMBLER_PTXAS);
    CHECK(assembler_first(0, 0) == JIT_ASSEMBLER_DRIVER);
    CHECK(assembler_first(1, 1) == assembler_default(0));
    CHECK(assembler_default(2) == JIT_ASSEMBLER_DRIVER);
    CHECK(assembler_default(3) == JIT_ASSEMBLER_NONE);
    jit_assembler first = assembler_first(linked, have_ptxas);
    const char *defaults[] = {"auto", ""};
    for (int i = 0; i < 2; i++) {
        CHECK_OK(compile_with(defaults[i], &p, 1, &o));
        CHECK_MSG(o.assembler == first, "SPFORGE_ASSEMBLER=\"%s\": %s, expected %s", defaults[i],
                  jit_assembler_name(o.assembler), jit_assembler_name(first));
        jit_object_release(&o);
    }
    assembler_report r;
    assembler_describe(&r);
    CHECK(r.chosen == first && r.inprocess == linked && !r.why[0] && !r.forced);
    setenv("SPFORGE_ASSEMBLER", "bogus", 1);
    assembler_describe(&r);
    CHECK(r.chosen == JIT_ASSEMBLER_NONE && strstr(r.why, "bogus") && r.forced);
    unsetenv("SPFORGE_ASSEMBLER");
}

/* The generated kernels of the unrolled strategy (entry + chunk units,
 * register caps) assembled by both: the same cubins. */
static void test_same_as_ptxas(const char *ptxas)
{
    int pmaj = 0, pmin = 0, cmaj = 0, cmin = 0;
    int same_version = ptxas_version(ptxas, &pmaj, &pmin) && ptx_compiler_available(&cmaj, &cmin) &&
                       pmaj == cmaj && pmin == cmin;
    printf("ptxas %d.%d, nvPTXCompiler %d.%d: %s\n", pmaj, pmin, cmaj, cmin,
           same_version ? "one version, the code must match byte for byte"
                        : "other versions, the ELF headers and functions must match");
    static const spf_kernel_config cfgs[] = {{8, 128, 4, 2, 1}, {32, 64, 1, 2, 4}};
    spf_matrix *a = gen_matrix(SPF_GEN_UNIFORM, 160, 192, 0.9, 21);
    for (int c = 0; c < 2 && a; c++) {
        ptx_program prog;
        CHECK_OK(unrolled_generate(a, NULL, 256, &cfgs[c], SPF_DTYPE_F32, 0, c, c, 90, 0, &prog));
        jit_object x, y;
        CHECK_OK(compile_with("ptxas", &prog, 0, &x));
        CHECK_OK(compile_with("inprocess", &prog, 0, &y));
        CHECK_OK(x.status);
        CHECK_OK(y.status);
        CHECK(x.unit_count == prog.unit_count && y.unit_count == prog.unit_count);
        CHECK(prog.unit_count >= 2);
        for (int u = 0; u < x.unit_count && u < y.unit_count; u++) {
            const ptxas_result *px = &x.units[u], *py = &y.units[u];
            if (!px->cubin || !py->cubin) {
                CHECK_MSG(0, "%s unit %d: no cubin", prog.entry, u);
                continue;
            }
            const unsigned char *hx = px->cubin, *hy = py->cubin;
            /* relocatable (ET_REL), EM_CUDA (190), the same sm in e_flags */
            CHECK_MSG(le(hy + 0x10, 2) == 1 && le(hy + 0x12, 2) == 190 &&
                          memcmp(hx, hy, 0x14) == 0 && le(hx + 0x30, 4) == le(hy + 0x30, 4),
                      "%s unit %d: ELF headers differ", prog.entry, u);
            char fx[4096], fy[4096];
            function_names(px->cubin, px->cubin_size, fx, sizeof fx);
            function_names(py->cubin, py->cubin_size, fy, sizeof fy);
            CHECK_MSG(fx[0] && strcmp(fx, fy) == 0, "%s unit %d: functions [%s] and [%s]",
                      prog.entry, u, fx, fy);
            CHECK_MSG(px->registers == py->registers && px->spill_bytes == py->spill_bytes,
                      "%s unit %d: registers %d / %d, spills %d / %d", prog.entry, u,
                      px->registers, py->registers, px->spill_bytes, py->spill_bytes);
            const char *which = "";
            if (same_version)
                CHECK_MSG(same_code(px, py, &which), "%s unit %d: %s differs", prog.entry, u,
                          which);
        }
        CHECK(x.registers == y.registers && x.registers > 0);
        printf("  %-36s %2d units  %3d registers  ptxas %.2f s, in process %.2f s (summed)\n",
               prog.entry, prog.unit_count, y.registers, x.compile_s, y.compile_s);
        jit_object_release(&x);
        jit_object_release(&y);
        ptx_program_free(&prog);
    }
    spf_matrix_free(a);
}

/* A unit the compiler rejects: SPF_ERR_COMPILE for its program, the log
 * naming the unit, the error and the assembler; the other units and
 * programs unharmed; jit_link_load passes the log on as the detail (it
 * stops there, before any driver call), as it does for ptxas. */
static void test_malformed(void)
{
    ptx_unit good_units[] = {unit_of(good_text)};
    ptx_unit bad_units[] = {unit_of(good_text), unit_of(broken_text)};
    ptx_program good = {.units = good_units, .unit_count = 1, .entry = "spf_test_k"};
    ptx_program bad = {.units = bad_units, .unit_count = 2, .entry = "spf_test_broken"};
    const ptx_program *programs[] = {&good, &bad};
    jit_object obj[2];
    setenv("SPFORGE_ASSEMBLER", "inprocess", 1);
    CHECK_OK(jit_compile(programs, 2, 90, 2, obj));
    unsetenv("SPFORGE_ASSEMBLER");
    CHECK_OK(obj[0].status);
    CHECK_STATUS(obj[1].status, SPF_ERR_COMPILE);
    const char *log = obj[1].log ? obj[1].log : "(null)";
    CHECK_MSG(strstr(log, "unit 1 of spf_test_broken") && strstr(log, "frobnicate") &&
                  strstr(log, "nvPTXCompiler: NVPTXCOMPILE_ERROR_COMPILATION_FAILURE"),
              "log: %s", log);
    CHECK(obj[1].units && obj[1].units[0].status == SPF_OK && obj[1].units[0].cubin);
    CHECK(obj[1].units && obj[1].units[1].cubin == NULL);
    jit_module m;
    CHECK_STATUS(jit_link_load(&bad, &obj[1], &m, NULL), SPF_ERR_COMPILE);
    CHECK_DETAIL("frobnicate");
    jit_object_release(&obj[0]);
    jit_object_release(&obj[1]);

    /* empty text: rejected, not a crash */
    ptx_unit empty_units[] = {{(char *)"", 0}};
    ptx_program empty = {.units = empty_units, .unit_count = 1, .entry = "spf_test_empty"};
    jit_object o;
    CHECK_OK(compile_with("inprocess", &empty, 1, &o));
    CHECK_STATUS(o.status, SPF_ERR_COMPILE);
    CHECK(o.log && strstr(o.log, "nvPTXCompiler: "));
    jit_object_release(&o);
}

/* The module libspforge.so loads (libspforge_ptxc.so, built beside it in
 * $SPF_BUILD_DIR) assembles what the linked compiler does, byte for byte:
 * it is the same compiler behind its table. What is not such a module is
 * refused saying why, and nothing is assembled. */
static void test_module(void)
{
    const char *build = getenv("SPF_BUILD_DIR");
    char path[4096], why[1024];
    if (!build) {
        printf("NOTE: SPF_BUILD_DIR not set (run through ctest): the module's checks skipped\n");
        return;
    }
    snprintf(path, sizeof path, "%s/libspforge_ptxc.so", build);
    const ptx_compiler_api *module = ptx_compiler_open(path, why, sizeof why);
    CHECK_MSG(module != NULL, "%s", why);
    const ptx_compiler_api *linked = ptx_compiler_default(why, sizeof why);
    CHECK(linked != NULL && linked != module);
    CHECK(ptx_compiler_open(path, why, sizeof why) == module); /* loaded once */
    if (module && linked) {
        ptx_unit u = unit_of(good_text);
        const ptx_unit *units[] = {&u};
        ptxas_result x, y;
        CHECK_OK(ptx_compiler_compile(module, units, NULL, 1, 90, 1, &x));
        CHECK_OK(ptx_compiler_compile(linked, units, NULL, 1, 90, 1, &y));
        CHECK_OK(x.status);
        CHECK(x.cubin && y.cubin && x.cubin_size == y.cubin_size &&
              memcmp(x.cubin, y.cubin, x.cubin_size) == 0);
        CHECK(x.registers == y.registers && x.registers > 0);
        ptxas_result_clear(&x);
        ptxas_result_clear(&y);
    }

    char missing[4200];
    snprintf(missing, sizeof missing, "%s/no-such-module/libspforge_ptxc.so", build);
    why[0] = '\0';
    CHECK(ptx_compiler_open(missing, why, sizeof why) == NULL);
    CHECK_MSG(strstr(why, "no-such-module") && strstr(why, "PTX compiler"), "%s", why);
    why[0] = '\0';
    CHECK(ptx_compiler_open("libm.so.6", why, sizeof why) == NULL);
    CHECK_MSG(strstr(why, "libm.so.6: no spf_ptx_compiler_api"), "%s", why);
}

/* Many units on several threads (more than the cores: the handles are
 * separate, the API thread safe) give what one thread gives, byte for
 * byte, every time. */
static void test_parallel_matches_serial(void)
{
    spf_matrix *a = gen_matrix(SPF_GEN_UNIFORM, 384, 256, 0.9, 5);
    spf_kernel_config cfg = {16, 64, 2, 2, 1};
    ptx_program progs[3];
    int made = 0;
    for (int i = 0; i < 3 && a; i++, made++)
        CHECK_OK(unrolled_generate(a, NULL, 128 + 64 * i, &cfg, SPF_DTYPE_F32, 0, i == 1, i == 2,
                                   90, 0, &progs[i]));
    if (made < 3) {
        spf_matrix_free(a);
        return;
    }
    const ptx_program *programs[] = {&progs[0], &progs[1], &progs[2]};
    jit_object serial[3], parallel[3];
    setenv("SPFORGE_ASSEMBLER", "inprocess", 1);
    CHECK_OK(jit_compile(programs, 3, 90, 1, serial));
    int units = 0;
    for (int i = 0; i < 3; i++)
        units += serial[i].unit_count;
    printf("parallel against serial: %d units in 3 programs\n", units);
    CHECK(units >= 8);
    for (int round = 0; round < 2; round++) {
        CHECK_OK(jit_compile(programs, 3, 90, 6, parallel));
        for (int i = 0; i < 3; i++) {
            CHECK_OK(parallel[i].status);
            CHECK(parallel[i].unit_count == serial[i].unit_count);
            CHECK(parallel[i].registers == serial[i].registers);
            for (int u = 0; u < serial[i].unit_count && u < parallel[i].unit_count; u++) {
                const ptxas_result *s = &serial[i].units[u], *p = &parallel[i].units[u];
                CHECK_MSG(s->cubin && p->cubin && s->cubin_size == p->cubin_size &&
                              memcmp(s->cubin, p->cubin, s->cubin_size) == 0,
                          "program %d unit %d: the cubins differ", i, u);
            }
            jit_object_release(&parallel[i]);
        }
    }
    unsetenv("SPFORGE_ASSEMBLER");
    for (int i = 0; i < 3; i++) {
        jit_object_release(&serial[i]);
        ptx_program_free(&progs[i]);
    }
    spf_matrix_free(a);
}

int main(int argc, char **argv)
{
    char base[] = "/tmp/spf-test-ptxc-XXXXXX";
    CHECK(mkdtemp(base) != NULL);
    setenv("TMPDIR", base, 1);
    unsetenv("SPFORGE_ASSEMBLER");
    char ptxas[4096];
    int have_ptxas = ptxas_locate(ptxas, sizeof ptxas);
    int linked = ptx_compiler_available(NULL, NULL);

    test_parse_info_log();
    test_forcing(linked, have_ptxas);
    if (!linked) {
        printf("NOTE: this build has no in-process PTX compiler (none found when it was "
               "configured: scripts/fetch-nvptxcompiler.sh); its own checks skipped\n");
        rmdir(base);
        return check_report();
    }
    if (have_ptxas)
        test_same_as_ptxas(ptxas);
    else
        printf("NOTE: no ptxas: the comparison with it skipped\n");
    test_malformed();
    test_parallel_matches_serial();
    test_module();
    CHECK_MSG(dir_is_empty(base), "files left in %s", base);
    rmdir(base);
    return check_report();
}
