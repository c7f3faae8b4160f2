/* Which assembler turns the JIT's PTX into SASS (issue 12): the PTX
 * Compiler API in this process (ptx_compiler.h), the ptxas program
 * (ptxas.h), or none here, leaving it to the driver linker, which compiles
 * the PTX serially when the program is linked (jit.h). The first two give
 * the same relocatable cubins, in parallel on the host cores; the driver
 * needs neither, so it stays last.
 *
 * $SPFORGE_ASSEMBLER forces one (inprocess, ptxas or driver; "auto" or
 * unset: the default order), for measurement and as an escape hatch. A
 * forced assembler that is not there is an error, never a silent
 * substitute. */
#ifndef SPF_GPU_ASSEMBLER_H
#define SPF_GPU_ASSEMBLER_H

#include "gpu/program.h"
#include "gpu/ptxas.h"

typedef enum jit_assembler {
    JIT_ASSEMBLER_NONE = 0,  /* nothing assembled (a plan from the cache, a
                                precompiled strategy)                       */
    JIT_ASSEMBLER_INPROCESS, /* nvPTXCompiler in this process               */
    JIT_ASSEMBLER_PTXAS,     /* the ptxas program, one process per unit     */
    JIT_ASSEMBLER_DRIVER     /* the driver linker, from PTX, serially       */
} jit_assembler;

/* "inprocess", "ptxas", "driver"; "" for NONE: the names $SPFORGE_ASSEMBLER
 * takes and spf_plan_info.assembler, spforge run --json and spforge info
 * report. */
const char *jit_assembler_name(jit_assembler a);

enum { ASSEMBLER_PATH_CAP = 4096 }; /* Linux's PATH_MAX, which strict C11 does not define */

/* The i-th assembler of the default order (assembler.c says why it is
 * that order), JIT_ASSEMBLER_NONE past its end. */
jit_assembler assembler_default(int i);

/* The first of the default order that is there, given whether the
 * in-process compiler and ptxas are (the driver always is). */
jit_assembler assembler_first(int inprocess_there, int ptxas_there);

typedef struct assembler_choice {
    jit_assembler kind;
    int forced;              /* chosen by $SPFORGE_ASSEMBLER               */
    char ptxas[ASSEMBLER_PATH_CAP]; /* with PTXAS: the program to run       */
} assembler_choice;

/* The assembler to use now: $SPFORGE_ASSEMBLER's when set, else the first
 * of the default order that is there.
 * SPF_ERR_INVALID_ARGUMENT for an unknown name, SPF_ERR_UNSUPPORTED for a
 * forced one that is not there (no ptxas found, no in-process compiler
 * linked). Reads the environment on every call. */
spf_status assembler_choose(assembler_choice *out);

/* Assemble with c's assembler (INPROCESS or PTXAS): ptxas_compile's
 * contract (ptxas.h), whichever runs. */
spf_status assembler_compile(const assembler_choice *c, const ptx_unit *const *units,
                             const unsigned *reg_caps, int count, int sm, int threads,
                             ptxas_result *results);

/* What this build and machine offer, for spforge info; never fails. */
typedef struct assembler_report {
    int inprocess;                     /* an nvPTXCompiler, linked or loaded   */
    int inprocess_major, inprocess_minor;
    char inprocess_why[512];           /* why there is none, else ""           */
    char ptxas[ASSEMBLER_PATH_CAP];    /* the ptxas found, or ""               */
    const char *forced;                /* $SPFORGE_ASSEMBLER, or NULL          */
    jit_assembler chosen;              /* assembler_choose's, NONE if it fails */
    char why[256];                     /* its error when it fails, else ""     */
    char order[64];                    /* the default order, e.g. "ptxas,
                                          inprocess, driver"                   */
} assembler_report;

void assembler_describe(assembler_report *out);

#endif
