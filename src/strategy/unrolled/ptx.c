#include "strategy/unrolled/ptx.h"

#include "core/alloc.h"
#include "core/error.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void ptx_init(ptx_buf *b) { *b = (ptx_buf){NULL, 0, 0, SPF_OK}; }

void ptx_free(ptx_buf *b)
{
    mem_free(b->data);
    ptx_init(b);
}

spf_status ptx_status(const ptx_buf *b) { return b->status; }

spf_status ptx_take(ptx_buf *b, char **text, size_t *size)
{
    spf_status status = b->status;
    if (status != SPF_OK) {
        ptx_free(b);
        return status;
    }
    if (!b->data)
        ptx_append(b, "", 0); /* an empty text is still a NUL-terminated string */
    if (b->status != SPF_OK)
        return b->status;
    *text = b->data;
    *size = b->len;
    ptx_init(b);
    return SPF_OK;
}

/* Make room for extra more bytes plus the NUL, doubling the capacity. */
static int reserve(ptx_buf *b, size_t extra)
{
    if (b->status != SPF_OK)
        return 0;
    if (extra > SIZE_MAX / 2 - b->len) {
        b->status = FAIL(SPF_ERR_OVERFLOW, "PTX text beyond %zu bytes", SIZE_MAX / 2);
        return 0;
    }
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return 1;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < need)
        cap *= 2;
    char *p = mem_realloc_array(b->data, cap, 1);
    if (!p) {
        b->status = FAIL(SPF_ERR_OUT_OF_MEMORY, "PTX text of %zu bytes", cap);
        return 0;
    }
    b->data = p;
    b->cap = cap;
    return 1;
}

void ptx_append(ptx_buf *b, const char *text, size_t len)
{
    if (!reserve(b, len))
        return;
    memcpy(b->data + b->len, text, len);
    b->len += len;
    b->data[b->len] = '\0';
}

static void vappend(ptx_buf *b, const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    if (n < 0) {
        if (b->status == SPF_OK)
            b->status = FAIL(SPF_ERR_INTERNAL, "bad PTX format \"%s\"", fmt);
    } else if (reserve(b, (size_t)n)) {
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, again);
        b->len += (size_t)n;
    }
    va_end(again);
}

void ptx_puts(ptx_buf *b, const char *text) { ptx_append(b, text, strlen(text)); }

void ptx_printf(ptx_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vappend(b, fmt, ap);
    va_end(ap);
}

void ptx_ins(ptx_buf *b, const char *fmt, ...)
{
    ptx_puts(b, "\t");
    va_list ap;
    va_start(ap, fmt);
    vappend(b, fmt, ap);
    va_end(ap);
    ptx_puts(b, ";\n");
}

void ptx_module_header(ptx_buf *b, int sm)
{
    ptx_printf(b, ".version %s\n.target sm_%d\n.address_size 64\n\n", PTX_ISA_VERSION, sm);
}

/* ---------------------------------------------------------- registers */

static const char *const reg_prefix[PTX_REG_CLASSES] = {"", "%p", "%h", "%r", "%rd", "%f"};
static const char *const reg_type[PTX_REG_CLASSES] = {"", "pred", "b16", "b32", "b64", "f32"};

ptx_reg ptx_reg_new(ptx_regs *r, ptx_reg_class cls) { return (ptx_reg){cls, r->count[cls]++}; }

const char *ptx_reg_name(ptx_reg reg, char name[16])
{
    snprintf(name, 16, "%s%d", reg_prefix[reg.cls], (int)reg.id);
    return name;
}

void ptx_reg_decls(ptx_buf *b, const ptx_regs *r)
{
    for (int c = PTX_REG_PRED; c < PTX_REG_CLASSES; c++)
        if (r->count[c])
            ptx_printf(b, "\t.reg .%s %s<%d>;\n", reg_type[c], reg_prefix[c], (int)r->count[c]);
}

/* Register names for one instruction, without a buffer per operand. */
#define R(reg) ptx_reg_name((reg), (char[16]){0})

/* ------------------------------------------------ labels and branches */

void ptx_label(ptx_buf *b, const char *name) { ptx_printf(b, "%s:\n", name); }

void ptx_bra(ptx_buf *b, ptx_reg pred, int negate, const char *label)
{
    if (pred.cls == PTX_REG_NONE)
        ptx_ins(b, "bra.uni %s", label);
    else
        ptx_ins(b, "@%s%s bra %s", negate ? "!" : "", R(pred), label);
}

void ptx_brx_idx(ptx_buf *b, ptx_reg index, const char *prefix, int32_t count)
{
    ptx_printf(b, "%stable: .branchtargets", prefix);
    for (int32_t i = 0; i < count; i++)
        ptx_printf(b, "%s %s%d", i ? "," : "", prefix, (int)i);
    ptx_printf(b, ";\n");
    ptx_ins(b, "brx.idx.uni %s, %stable", R(index), prefix);
}

/* --------------------------------------------------- memory operations */

static const char *const space_name[] = {"global", "shared", "param"};
static const char *const cache_name[] = {"", ".nc", ".ca", ".cg", ".cs"};

/* "{%f1, %f2}" or "%f1" for width 1. */
static void reg_list(ptx_buf *b, int width, const ptx_reg *regs)
{
    if (width > 1)
        ptx_puts(b, "{");
    for (int i = 0; i < width; i++)
        ptx_printf(b, "%s%s", i ? ", " : "", R(regs[i]));
    if (width > 1)
        ptx_puts(b, "}");
}

static void address(ptx_buf *b, ptx_reg base, int64_t offset)
{
    if (offset)
        ptx_printf(b, "[%s+%" PRId64 "]", R(base), offset);
    else
        ptx_printf(b, "[%s]", R(base));
}

/* "\t[@%p ]<op>.<space><cache>[.vN].<type> ": the head that loads and
 * stores share, guarded when pred is a register. */
static void memory_head(ptx_buf *b, ptx_reg pred, const char *op, ptx_space space,
                        const char *cache, int width, const char *type)
{
    ptx_puts(b, "\t");
    if (pred.cls != PTX_REG_NONE)
        ptx_printf(b, "@%s ", R(pred));
    ptx_printf(b, "%s.%s%s", op, space_name[space], cache);
    if (width > 1)
        ptx_printf(b, ".v%d", width);
    ptx_printf(b, ".%s ", type);
}

void ptx_load(ptx_buf *b, ptx_space space, ptx_cache cache, const char *type, int width,
              ptx_reg pred, const ptx_reg *dst, ptx_reg base, int64_t offset)
{
    memory_head(b, pred, "ld", space, cache_name[cache], width, type);
    reg_list(b, width, dst);
    ptx_puts(b, ", ");
    address(b, base, offset);
    ptx_puts(b, ";\n");
}

void ptx_store(ptx_buf *b, ptx_space space, ptx_cache cache, const char *type, int width,
               ptx_reg pred, ptx_reg base, int64_t offset, const ptx_reg *src)
{
    /* .nc is a load-only qualifier: a store through the read-only path is
     * a caller bug, written as the default write-back. */
    memory_head(b, pred, "st", space, cache == PTX_CACHE_NC ? "" : cache_name[cache], width, type);
    address(b, base, offset);
    ptx_puts(b, ", ");
    reg_list(b, width, src);
    ptx_puts(b, ";\n");
}

void ptx_load_param(ptx_buf *b, const char *type, ptx_reg dst, const char *name)
{
    ptx_ins(b, "ld.param.%s %s, [%s]", type, R(dst), name);
}

/* ---------------------------------------------------------- arithmetic */

const char *ptx_f32_imm(float value, char text[16])
{
    /* PTX decimal float literals are parsed as double and rounded; the hex
     * bit pattern is the only spelling that is exact for every value. */
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    snprintf(text, 16, "0f%08" PRIX32, bits);
    return text;
}

void ptx_fma_f32_imm(ptx_buf *b, ptx_reg d, ptx_reg a, float value, ptx_reg c)
{
    char imm[16];
    ptx_ins(b, "fma.rn.f32 %s, %s, %s, %s", R(d), R(a), ptx_f32_imm(value, imm), R(c));
}

void ptx_mul_f32_imm(ptx_buf *b, ptx_reg d, ptx_reg a, float value)
{
    char imm[16];
    ptx_ins(b, "mul.rn.f32 %s, %s, %s", R(d), R(a), ptx_f32_imm(value, imm));
}

void ptx_fma_f16x2(ptx_buf *b, ptx_reg d, ptx_reg a, ptx_reg bb, ptx_reg c)
{
    ptx_ins(b, "fma.rn.f16x2 %s, %s, %s, %s", R(d), R(a), R(bb), R(c));
}

void ptx_mov_b32_imm(ptx_buf *b, ptx_reg d, uint32_t bits)
{
    ptx_ins(b, "mov.b32 %s, 0x%08" PRIX32, R(d), bits);
}

/* ---------------------------------------------------------- conversions */

void ptx_cvt_f32_f16(ptx_buf *b, ptx_reg d, ptx_reg h) { ptx_ins(b, "cvt.f32.f16 %s, %s", R(d), R(h)); }

void ptx_cvt_f16_f32(ptx_buf *b, ptx_reg h, ptx_reg f, int bf16)
{
    ptx_ins(b, "cvt.rn.%s.f32 %s, %s", bf16 ? "bf16" : "f16", R(h), R(f));
}

void ptx_cvt_pack_f32(ptx_buf *b, ptx_reg d, ptx_reg lo, ptx_reg hi, int bf16)
{
    /* cvt.rn.f16x2.f32 d, a, b puts a in the upper half and b in the lower. */
    ptx_ins(b, "cvt.rn.%s.f32 %s, %s, %s", bf16 ? "bf16x2" : "f16x2", R(d), R(hi), R(lo));
}

void ptx_unpack_b32(ptx_buf *b, ptx_reg lo, ptx_reg hi, ptx_reg r)
{
    ptx_ins(b, "mov.b32 {%s, %s}, %s", R(lo), R(hi), R(r));
}

void ptx_cvt_f32_bf16_half(ptx_buf *b, ptx_reg d, ptx_reg r, int hi, ptx_reg tmp)
{
    if (hi)
        ptx_ins(b, "and.b32 %s, %s, 0xFFFF0000", R(tmp), R(r));
    else
        ptx_ins(b, "shl.b32 %s, %s, 16", R(tmp), R(r));
    ptx_ins(b, "mov.b32 %s, %s", R(d), R(tmp));
}

/* --------------------------------------------------- functions, calls */

void ptx_func_head(ptx_buf *b, ptx_linkage linkage, int entry, int noreturn, const char *name,
                   const ptx_param *params, int count)
{
    static const char *const link_name[] = {"", ".visible ", ".extern "};
    ptx_printf(b, "%s%s %s(", link_name[linkage], entry ? ".entry" : ".func", name);
    for (int i = 0; i < count; i++)
        ptx_printf(b, "%s\n\t.param .%s %s", i ? "," : "", params[i].type, params[i].name);
    ptx_printf(b, ")%s%s\n", noreturn && !entry ? "\n.noreturn" : "",
               linkage == PTX_LINK_EXTERN ? ";\n" : "");
}

void ptx_body_open(ptx_buf *b) { ptx_puts(b, "{\n"); }

void ptx_body_close(ptx_buf *b) { ptx_puts(b, "}\n\n"); }

/* The call's scope block up to the call: one .param per argument. */
static void call_args(ptx_buf *b, const ptx_reg *args, int count)
{
    ptx_puts(b, "\t{\n");
    for (int i = 0; i < count; i++) {
        ptx_printf(b, "\t.param .%s a%d;\n", reg_type[args[i].cls], i);
        ptx_ins(b, "st.param.%s [a%d], %s", reg_type[args[i].cls], i, R(args[i]));
    }
}

static void call_arg_list(ptx_buf *b, int count)
{
    ptx_puts(b, "(");
    for (int i = 0; i < count; i++)
        ptx_printf(b, "%sa%d", i ? ", " : "", i);
    ptx_puts(b, ")");
}

void ptx_call(ptx_buf *b, const char *name, const ptx_reg *args, int count)
{
    call_args(b, args, count);
    ptx_printf(b, "\tcall.uni %s, ", name);
    call_arg_list(b, count);
    ptx_printf(b, ";\n\t}\n");
}

void ptx_call_indirect(ptx_buf *b, ptx_reg fptr, const ptx_param *params, int noreturn,
                       const ptx_reg *args, int count)
{
    call_args(b, args, count);
    ptx_printf(b, "\t$proto: .callprototype _ (");
    for (int i = 0; i < count; i++)
        ptx_printf(b, "%s.param .%s _", i ? ", " : "", params[i].type);
    ptx_printf(b, ")%s;\n", noreturn ? " .noreturn" : "");
    ptx_printf(b, "\tcall.uni %s, ", R(fptr));
    call_arg_list(b, count);
    ptx_printf(b, ", $proto;\n\t}\n");
}

void ptx_func_table(ptx_buf *b, const char *name, const char *prefix, int32_t count)
{
    ptx_printf(b, ".global .align 8 .u64 %s[%d] = {", name, (int)count);
    for (int32_t i = 0; i < count; i++)
        ptx_printf(b, "%s%s%d", i ? (i % 8 ? ", " : ",\n\t") : "", prefix, (int)i);
    ptx_printf(b, "};\n\n");
}
