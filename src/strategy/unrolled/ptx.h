/* A small PTX text builder: a growing text buffer with a sticky status, and
 * one emitter per family of PTX constructs the generated kernels use
 * (module header, registers, labels, loads and stores, fma with immediate
 * operands, conversions, branch tables, functions and calls).
 *
 * SparseRT §3.5 emits PTX directly instead of going through NVVM; DESIGN.md
 * decision 1 takes the same road. Errors are sticky: after the first failed
 * append (out of memory, a text over the size limit) every later append is
 * a no-op and ptx_status() reports the first failure, so emitters stay
 * straight-line code and the caller checks once per function body. */
#ifndef SPF_STRATEGY_UNROLLED_PTX_H
#define SPF_STRATEGY_UNROLLED_PTX_H

#include "spforge.h"

#include <stddef.h>
#include <stdint.h>

/* One PTX ISA version for every generated module: 8.0 (CUDA 12.0) is the
 * oldest version with sm_90 and is accepted for sm_80 as well, so a kernel
 * assembles on both targets and with every driver that can run sm_90. */
#define PTX_ISA_VERSION "8.0"

typedef struct ptx_buf {
    char *data;        /* NUL-terminated text, owned                      */
    size_t len, cap;
    spf_status status; /* first failure, SPF_OK while every append worked */
} ptx_buf;

void ptx_init(ptx_buf *b);
void ptx_free(ptx_buf *b);
spf_status ptx_status(const ptx_buf *b);
/* Hand the text over (the buffer is left empty); the caller frees it with
 * mem_free. Returns the sticky status and hands nothing over on failure. */
spf_status ptx_take(ptx_buf *b, char **text, size_t *size);

/* Checked appends. */
void ptx_printf(ptx_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ptx_append(ptx_buf *b, const char *text, size_t len);
void ptx_puts(ptx_buf *b, const char *text);
/* One instruction: a tab, the formatted text and ";\n". */
void ptx_ins(ptx_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* .version / .target / .address_size. sm is 80 or 90. */
void ptx_module_header(ptx_buf *b, int sm);

/* ---------------------------------------------------------- registers */

typedef enum ptx_reg_class {
    PTX_REG_NONE = 0, /* "no register" (e.g. an unguarded instruction) */
    PTX_REG_PRED,     /* .pred  %p  */
    PTX_REG_B16,      /* .b16   %h  (one f16 / bf16)        */
    PTX_REG_B32,      /* .b32   %r  (ints, f16x2 / bf16x2)  */
    PTX_REG_B64,      /* .b64   %rd (addresses)             */
    PTX_REG_F32,      /* .f32   %f  */
    PTX_REG_CLASSES
} ptx_reg_class;

typedef struct ptx_reg {
    ptx_reg_class cls;
    int32_t id;
} ptx_reg;

/* Per-function register counters; ptx_reg_decls declares exactly what was
 * handed out. */
typedef struct ptx_regs {
    int32_t count[PTX_REG_CLASSES];
} ptx_regs;

#define PTX_NO_REG ((ptx_reg){PTX_REG_NONE, 0})

ptx_reg ptx_reg_new(ptx_regs *r, ptx_reg_class cls);
/* The register's name ("%f12") in a caller buffer of at least 16 bytes. */
const char *ptx_reg_name(ptx_reg reg, char name[16]);
/* ".reg .f32 %f<N>;" lines for every class in use. */
void ptx_reg_decls(ptx_buf *b, const ptx_regs *r);

/* ------------------------------------------------ labels and branches */

void ptx_label(ptx_buf *b, const char *name);
/* A branch, guarded by pred unless it is PTX_NO_REG (negate: @!pred). */
void ptx_bra(ptx_buf *b, ptx_reg pred, int negate, const char *label);
/* A branch table: labels "<prefix><i>" for i in [0, count) and a brx.idx on
 * index (a .b32 register; the targets must follow in the same function). */
void ptx_brx_idx(ptx_buf *b, ptx_reg index, const char *prefix, int32_t count);

/* --------------------------------------------------- memory operations */

typedef enum ptx_cache {
    PTX_CACHE_DEFAULT = 0, /* .ca for loads, .wb for stores: written as nothing */
    PTX_CACHE_NC,          /* ld.global.nc: read-only data path                 */
    PTX_CACHE_CA,
    PTX_CACHE_CG,
    PTX_CACHE_CS
} ptx_cache;

typedef enum ptx_space { PTX_SPACE_GLOBAL = 0, PTX_SPACE_SHARED, PTX_SPACE_PARAM } ptx_space;

/* ld.<space>[.nc][.cop][.vW].<type> {regs}, [base+offset]; width 1, 2 or 4;
 * guarded by pred unless it is PTX_NO_REG. type is the PTX type suffix
 * ("f32", "b32", "b16", "u64"). */
void ptx_load(ptx_buf *b, ptx_space space, ptx_cache cache, const char *type, int width,
              ptx_reg pred, const ptx_reg *dst, ptx_reg base, int64_t offset);
/* st.<space>[.cop][.vW].<type> [base+offset], {regs}; guarded by pred unless
 * it is PTX_NO_REG. */
void ptx_store(ptx_buf *b, ptx_space space, ptx_cache cache, const char *type, int width,
               ptx_reg pred, ptx_reg base, int64_t offset, const ptx_reg *src);
/* ld.param.<type> reg, [name]. */
void ptx_load_param(ptx_buf *b, const char *type, ptx_reg dst, const char *name);

/* ---------------------------------------------------------- arithmetic */

/* The exact PTX spelling of a float immediate: "0f" and its 8 hex digits. */
const char *ptx_f32_imm(float value, char text[16]);
/* d = a * value + c (fma.rn.f32, value as an exact immediate). */
void ptx_fma_f32_imm(ptx_buf *b, ptx_reg d, ptx_reg a, float value, ptx_reg c);
/* d = a * value (mul.rn.f32): the first term of an accumulation. */
void ptx_mul_f32_imm(ptx_buf *b, ptx_reg d, ptx_reg a, float value);
/* d = a * bb + c on two f16 lanes (fma.rn.f16x2; registers only). */
void ptx_fma_f16x2(ptx_buf *b, ptx_reg d, ptx_reg a, ptx_reg bb, ptx_reg c);
/* mov.b32 d, 0xXXXXXXXX. */
void ptx_mov_b32_imm(ptx_buf *b, ptx_reg d, uint32_t bits);

/* ---------------------------------------------------------- conversions */

/* f32 from an f16 (.b16 register). */
void ptx_cvt_f32_f16(ptx_buf *b, ptx_reg d, ptx_reg h);
/* f16 / bf16 (.b16) from an f32, round to nearest even. */
void ptx_cvt_f16_f32(ptx_buf *b, ptx_reg h, ptx_reg f, int bf16);
/* Pack two f32 into f16x2 / bf16x2: lo in bits 0..15, hi in 16..31. */
void ptx_cvt_pack_f32(ptx_buf *b, ptx_reg d, ptx_reg lo, ptx_reg hi, int bf16);
/* Split a .b32 into its two .b16 halves. */
void ptx_unpack_b32(ptx_buf *b, ptx_reg lo, ptx_reg hi, ptx_reg r);
/* f32 from the bf16 in the low (hi = 0) or high (hi = 1) half of a .b32:
 * bf16 is the top half of an f32, so a shift or a mask converts it exactly
 * (and works on sm_80, which lacks cvt.f32.bf16). tmp is a .b32 scratch. */
void ptx_cvt_f32_bf16_half(ptx_buf *b, ptx_reg d, ptx_reg r, int hi, ptx_reg tmp);

/* --------------------------------------------------- functions, calls */

typedef enum ptx_linkage {
    PTX_LINK_NONE = 0, /* file-local                          */
    PTX_LINK_VISIBLE,  /* .visible: defined here, linkable    */
    PTX_LINK_EXTERN    /* .extern: declared here, defined elsewhere */
} ptx_linkage;

typedef struct ptx_param {
    const char *type; /* "b64", "b32", ... */
    const char *name;
} ptx_param;

/* The head of a .func (no return value) or a .entry: linkage, name and
 * parameter list, and for a .func that ends its thread with exit instead
 * of returning, .noreturn (then the caller keeps nothing live across the
 * call and ptxas may use the ABI's callee-saved registers without saving
 * them). A definition continues with ptx_body_open; a declaration
 * (PTX_LINK_EXTERN) ends here with ";". */
void ptx_func_head(ptx_buf *b, ptx_linkage linkage, int entry, int noreturn, const char *name,
                   const ptx_param *params, int count);
void ptx_body_open(ptx_buf *b);
void ptx_body_close(ptx_buf *b);
/* call.uni name, (args): each argument is copied into a .param of its
 * register's type inside a scope block, as the PTX ABI asks. */
void ptx_call(ptx_buf *b, const char *name, const ptx_reg *args, int count);
/* The same through a function address in fptr (.b64), checked against a
 * prototype made of params (and .noreturn if asked). */
void ptx_call_indirect(ptx_buf *b, ptx_reg fptr, const ptx_param *params, int noreturn,
                       const ptx_reg *args, int count);
/* A table of function addresses for indirect calls, in global memory:
 * .global .align 8 .u64 name[count] = {<prefix>0, <prefix>1, ...}; the
 * functions must be declared before it. */
void ptx_func_table(ptx_buf *b, const char *name, const char *prefix, int32_t count);

#endif
