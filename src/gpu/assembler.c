/* The choice among the JIT's assemblers, in one place. */
#define _POSIX_C_SOURCE 200809L

#include "gpu/assembler.h"

#include "core/error.h"
#include "gpu/ptx_compiler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The default order: the faster first. Measured with tests/tools/asm_bench.c
 * (docs/assembler.md) on the 2-core build machine, nvPTXCompiler and
 * ptxas 13.0.88, same threads: on the DLMC layers of 0.8-1.5 MB of PTX the
 * in-process compiler took 1.07-1.13x ptxas's wall time and 10-16 % more CPU
 * (callgrind: 23 % more instructions for one 210 kB unit, none of it in
 * libc: the library's code itself is slower than the ptxas binary's), and
 * won only on programs of a few hundred nonzeros, where ptxas's process
 * start-up shows (0.73-0.96x). So ptxas stays first while it is there; the
 * in-process compiler is what runs where it is not. */
static const jit_assembler default_order[] = {JIT_ASSEMBLER_PTXAS, JIT_ASSEMBLER_INPROCESS,
                                              JIT_ASSEMBLER_DRIVER};
enum { DEFAULT_COUNT = sizeof default_order / sizeof *default_order };

jit_assembler assembler_default(int i)
{
    return i >= 0 && i < DEFAULT_COUNT ? default_order[i] : JIT_ASSEMBLER_NONE;
}

const char *jit_assembler_name(jit_assembler a)
{
    switch (a) {
    case JIT_ASSEMBLER_INPROCESS: return "inprocess";
    case JIT_ASSEMBLER_PTXAS: return "ptxas";
    case JIT_ASSEMBLER_DRIVER: return "driver";
    default: return "";
    }
}

/* Whether a is there; when not, why (cap bytes). */
static int available(jit_assembler a, assembler_choice *out, char *why, size_t cap)
{
    switch (a) {
    case JIT_ASSEMBLER_INPROCESS:
        return ptx_compiler_default(why, cap) != NULL;
    case JIT_ASSEMBLER_PTXAS:
        if (ptxas_locate(out->ptxas, sizeof out->ptxas))
            return 1;
        snprintf(why, cap,
                 "no ptxas found ($SPF_PTXAS, $CUDA_HOME/bin, /usr/local/cuda/bin, PATH)");
        return 0;
    case JIT_ASSEMBLER_DRIVER:
        return 1;
    default:
        snprintf(why, cap, "assembler %d", (int)a);
        return 0;
    }
}

spf_status assembler_choose(assembler_choice *out)
{
    char why[1024];
    memset(out, 0, sizeof *out);
    const char *env = getenv("SPFORGE_ASSEMBLER");
    if (env && env[0] && strcmp(env, "auto") != 0) {
        jit_assembler forced = JIT_ASSEMBLER_NONE;
        for (int a = JIT_ASSEMBLER_INPROCESS; a <= JIT_ASSEMBLER_DRIVER; a++)
            if (strcmp(env, jit_assembler_name((jit_assembler)a)) == 0)
                forced = (jit_assembler)a;
        if (forced == JIT_ASSEMBLER_NONE)
            return FAIL(SPF_ERR_INVALID_ARGUMENT,
                        "SPFORGE_ASSEMBLER=%.64s: not an assembler (inprocess, ptxas, driver or "
                        "auto)",
                        env);
        if (!available(forced, out, why, sizeof why))
            return FAIL(SPF_ERR_UNSUPPORTED, "SPFORGE_ASSEMBLER=%s: %s", env, why);
        out->kind = forced;
        out->forced = 1;
        return SPF_OK;
    }
    int inprocess = ptx_compiler_available(NULL, NULL);
    int ptxas = ptxas_locate(out->ptxas, sizeof out->ptxas);
    out->kind = assembler_first(inprocess, ptxas);
    if (out->kind != JIT_ASSEMBLER_PTXAS)
        out->ptxas[0] = '\0';
    return SPF_OK;
}

jit_assembler assembler_first(int inprocess_there, int ptxas_there)
{
    for (int i = 0; i < DEFAULT_COUNT; i++)
        if ((default_order[i] == JIT_ASSEMBLER_INPROCESS && inprocess_there) ||
            (default_order[i] == JIT_ASSEMBLER_PTXAS && ptxas_there) ||
            default_order[i] == JIT_ASSEMBLER_DRIVER)
            return default_order[i];
    return JIT_ASSEMBLER_DRIVER;
}

spf_status assembler_compile(const assembler_choice *c, const ptx_unit *const *units,
                             const unsigned *reg_caps, int count, int sm, int threads,
                             ptxas_result *results)
{
    switch (c->kind) {
    case JIT_ASSEMBLER_INPROCESS:
        return ptx_compiler_compile(NULL, units, reg_caps, count, sm, threads, results);
    case JIT_ASSEMBLER_PTXAS:
        return ptxas_compile(c->ptxas, units, reg_caps, count, sm, threads, results);
    default:
        return FAIL(SPF_ERR_INTERNAL, "assembler \"%s\" assembles nothing here",
                    jit_assembler_name(c->kind));
    }
}

void assembler_describe(assembler_report *out)
{
    memset(out, 0, sizeof *out);
    out->inprocess = ptx_compiler_available(&out->inprocess_major, &out->inprocess_minor);
    if (!out->inprocess)
        (void)ptx_compiler_default(out->inprocess_why, sizeof out->inprocess_why);
    if (!ptxas_locate(out->ptxas, sizeof out->ptxas))
        out->ptxas[0] = '\0';
    const char *env = getenv("SPFORGE_ASSEMBLER");
    out->forced = env && env[0] && strcmp(env, "auto") != 0 ? env : NULL;
    for (int i = 0; i < DEFAULT_COUNT; i++)
        snprintf(out->order + strlen(out->order), sizeof out->order - strlen(out->order), "%s%s",
                 i ? ", " : "", jit_assembler_name(default_order[i]));
    assembler_choice c;
    if (assembler_choose(&c) == SPF_OK)
        out->chosen = c.kind;
    else
        snprintf(out->why, sizeof out->why, "%s", spf_last_error());
    error_clear();
}
