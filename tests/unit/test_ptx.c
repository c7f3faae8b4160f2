/* The PTX text builder: exact float immediates, register classes and
 * declarations, loads and stores with vector widths, cache operators and
 * guards, branch tables, function heads and calls, and the sticky status
 * under allocation failure. */
#include "check.h"

#include "strategy/unrolled/ptx.h"
#include "core/alloc.h"

static int contains(const ptx_buf *b, const char *s) { return b->data && strstr(b->data, s) != NULL; }

static void test_immediates(void)
{
    char t[16];
    CHECK(strcmp(ptx_f32_imm(1.0f, t), "0f3F800000") == 0);
    CHECK(strcmp(ptx_f32_imm(-0.1f, t), "0fBDCCCCCD") == 0);
    CHECK(strcmp(ptx_f32_imm(1e-45f, t), "0f00000001") == 0); /* the smallest subnormal */
    CHECK(strcmp(ptx_f32_imm(-0.0f, t), "0f80000000") == 0);
}

static void test_registers_and_memory(void)
{
    ptx_buf b;
    ptx_init(&b);
    ptx_regs r = {{0}};
    ptx_reg f0 = ptx_reg_new(&r, PTX_REG_F32), f1 = ptx_reg_new(&r, PTX_REG_F32);
    ptx_reg f2 = ptx_reg_new(&r, PTX_REG_F32), f3 = ptx_reg_new(&r, PTX_REG_F32);
    ptx_reg rd = ptx_reg_new(&r, PTX_REG_B64), p = ptx_reg_new(&r, PTX_REG_PRED);
    ptx_reg h = ptx_reg_new(&r, PTX_REG_B16), w = ptx_reg_new(&r, PTX_REG_B32);
    char name[16];
    CHECK(strcmp(ptx_reg_name(f3, name), "%f3") == 0);
    CHECK(strcmp(ptx_reg_name(rd, name), "%rd0") == 0);
    ptx_reg_decls(&b, &r);
    CHECK(contains(&b, "\t.reg .f32 %f<4>;\n"));
    CHECK(contains(&b, "\t.reg .b64 %rd<1>;\n"));
    CHECK(contains(&b, "\t.reg .pred %p<1>;\n"));
    const ptx_reg v4[4] = {f0, f1, f2, f3};
    ptx_load(&b, PTX_SPACE_GLOBAL, PTX_CACHE_NC, "f32", 4, PTX_NO_REG, v4, rd, 4096);
    CHECK(contains(&b, "\tld.global.nc.v4.f32 {%f0, %f1, %f2, %f3}, [%rd0+4096];\n"));
    ptx_load(&b, PTX_SPACE_GLOBAL, PTX_CACHE_CG, "b16", 1, p, &h, rd, 0);
    CHECK(contains(&b, "\t@%p0 ld.global.cg.b16 %h0, [%rd0];\n"));
    ptx_store(&b, PTX_SPACE_GLOBAL, PTX_CACHE_CS, "f32", 2, p, rd, 8, v4);
    CHECK(contains(&b, "\t@%p0 st.global.cs.v2.f32 [%rd0+8], {%f0, %f1};\n"));
    ptx_store(&b, PTX_SPACE_SHARED, PTX_CACHE_DEFAULT, "b32", 1, PTX_NO_REG, w, 16, &w);
    CHECK(contains(&b, "\tst.shared.b32 [%r0+16], %r0;\n"));
    ptx_fma_f32_imm(&b, f1, f0, 0.5f, f1);
    CHECK(contains(&b, "\tfma.rn.f32 %f1, %f0, 0f3F000000, %f1;\n"));
    ptx_mul_f32_imm(&b, f2, f0, -2.0f);
    CHECK(contains(&b, "\tmul.rn.f32 %f2, %f0, 0fC0000000;\n"));
    ptx_cvt_pack_f32(&b, w, f0, f1, 1);
    CHECK(contains(&b, "\tcvt.rn.bf16x2.f32 %r0, %f1, %f0;\n")); /* hi first */
    ptx_cvt_f32_bf16_half(&b, f3, w, 1, w);
    CHECK(contains(&b, "\tand.b32 %r0, %r0, 0xFFFF0000;\n"));
    CHECK_OK(ptx_status(&b));
    ptx_free(&b);
}

static void test_functions_and_branches(void)
{
    ptx_buf b;
    ptx_init(&b);
    ptx_module_header(&b, 80);
    CHECK(contains(&b, ".version " PTX_ISA_VERSION "\n.target sm_80\n.address_size 64\n"));
    const ptx_param params[] = {{"b64", "pa"}, {"b32", "pn"}};
    ptx_func_head(&b, PTX_LINK_EXTERN, 0, 1, "tile", params, 2);
    CHECK(contains(&b, ".extern .func tile(\n\t.param .b64 pa,\n\t.param .b32 pn)\n.noreturn;\n"));
    ptx_func_head(&b, PTX_LINK_VISIBLE, 1, 0, "kern", params, 1);
    CHECK(contains(&b, ".visible .entry kern(\n\t.param .b64 pa)\n"));
    ptx_brx_idx(&b, (ptx_reg){PTX_REG_B32, 3}, "$T", 3);
    CHECK(contains(&b, "$Ttable: .branchtargets $T0, $T1, $T2;\n\tbrx.idx.uni %r3, $Ttable;\n"));
    const ptx_reg args[] = {{PTX_REG_B64, 1}, {PTX_REG_B32, 2}};
    ptx_call(&b, "tile", args, 2);
    CHECK(contains(&b, "\tst.param.b64 [a0], %rd1;\n"));
    CHECK(contains(&b, "\tcall.uni tile, (a0, a1);\n"));
    ptx_call_indirect(&b, (ptx_reg){PTX_REG_B64, 4}, params, 1, args, 2);
    CHECK(contains(&b, "\t$proto: .callprototype _ (.param .b64 _, .param .b32 _) .noreturn;\n"
                       "\tcall.uni %rd4, (a0, a1), $proto;\n\t}\n"));
    ptx_func_table(&b, "tab", "tile", 10);
    CHECK(contains(&b, ".global .align 8 .u64 tab[10] = {tile0, tile1, tile2, tile3, tile4, "
                       "tile5, tile6, tile7,\n\ttile8, tile9};\n"));
    ptx_bra(&b, (ptx_reg){PTX_REG_PRED, 2}, 1, "$L");
    CHECK(contains(&b, "\t@!%p2 bra $L;\n"));
    char *text = NULL;
    size_t size = 0;
    CHECK_OK(ptx_take(&b, &text, &size));
    CHECK(text && strlen(text) == size && b.data == NULL);
    mem_free(text);
}

static void test_sticky_out_of_memory(void)
{
    budget left = {2, 0};
    spf_allocator a = budget_allocator(&left);
    spf_set_allocator(&a);
    ptx_buf b;
    ptx_init(&b);
    for (int i = 0; i < 10000; i++)
        ptx_ins(&b, "add.s32 %%r%d, %%r%d, %d", i, i, i);
    CHECK_STATUS(ptx_status(&b), SPF_ERR_OUT_OF_MEMORY);
    char *text = NULL;
    size_t size = 0;
    CHECK_STATUS(ptx_take(&b, &text, &size), SPF_ERR_OUT_OF_MEMORY);
    CHECK(text == NULL && b.data == NULL);
    spf_set_allocator(NULL);
}

int main(int argc, char **argv)
{
    test_immediates();
    test_registers_and_memory();
    test_functions_and_branches();
    test_sticky_out_of_memory();
    return check_report();
}
