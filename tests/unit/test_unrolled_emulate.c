/* The generated PTX, run on a small interpreter of the PTX subset that
 * unrolled.c emits (every unit, the entry's indirect call through its table
 * of tile functions, shared
 * memory and bar.sync, f16 / bf16 / f16x2 arithmetic), on every block and
 * thread of the launch. Without a GPU this proves the kernel text itself:
 * fp32, fp16 and bf16 results must equal schedule_execute_cpu bit for bit
 * (same operations in the same order), f16x2 ones the double reference
 * within f16 accuracy; every global access must stay inside B, C and bias,
 * and every element of C must be written. */
#define _POSIX_C_SOURCE 200809L /* strdup, strtok */

#include "test_util.h"

#include "strategy/unrolled/schedule.h"
#include "strategy/unrolled/unrolled.h"
#include "ptx_interp.h"

#include <stdint.h>

/* --------------------------------------------------------------- tests */

static spf_matrix *random_matrix(int64_t m, int64_t k, double density, int64_t empty_from,
                                 int64_t empty_to, uint64_t seed)
{
    spf_matrix *g = gen_matrix(SPF_GEN_UNIFORM, m, k, 1.0 - density, seed), *a = NULL;
    /* empty some rows: rebuild the CSR without them */
    const int64_t *rp = spf_matrix_row_ptr(g);
    int64_t nnz = spf_matrix_nnz(g);
    int64_t *rp2 = malloc((size_t)(m + 1) * sizeof *rp2);
    int32_t *ci2 = malloc((size_t)(nnz + 1) * sizeof *ci2);
    float *v2 = malloc((size_t)(nnz + 1) * sizeof *v2);
    int64_t out = 0;
    rp2[0] = 0;
    for (int64_t i = 0; i < m; i++) {
        if (i < empty_from || i >= empty_to)
            for (int64_t e = rp[i]; e < rp[i + 1]; e++) {
                ci2[out] = spf_matrix_col_idx(g)[e];
                v2[out++] = spf_matrix_values(g)[e];
            }
        rp2[i + 1] = out;
    }
    CHECK_OK(spf_matrix_create_csr(m, k, out, rp2, ci2, v2, 0, &a));
    free(rp2);
    free(ci2);
    free(v2);
    spf_matrix_free(g);
    return a;
}

typedef struct emu_case {
    const char *dlmc; /* a DLMC pattern under the data folder (m, k taken from it), or NULL */
    int64_t m, k;
    double density;
    int64_t n;
    spf_kernel_config cfg;
    spf_dtype dtype;
    int f16x2, bias, relu, permute;
    int all_empty; /* no nonzeros at all: C is bias (or zero) */
} emu_case;

static void run_case(const emu_case *given, uint64_t seed)
{
    emu_case cc = *given, *c = &cc;
    spf_matrix *a = NULL;
    if (c->dlmc) {
        a = data_case_matrix(c->dlmc, &c->m, &c->k);
        if (!a)
            return;
    } else if (c->all_empty) {
        a = random_matrix(c->m, c->k, c->density, 0, c->m, seed);
    } else {
        a = random_matrix(c->m, c->k, c->density, c->m / 4, c->m / 4 + 5, seed);
    }
    int32_t *perm = NULL;
    if (c->permute) {
        perm = malloc((size_t)c->m * sizeof *perm);
        for (int64_t i = 0; i < c->m; i++)
            perm[i] = (int32_t)(c->m - 1 - (i * 5 + 2) % c->m); /* 5 coprime to every m used */
    }
    ptx_program prog;
    spf_status st = unrolled_generate(a, perm, c->n, &c->cfg, c->dtype, c->f16x2, c->bias, c->relu,
                                      90, 0, &prog);
    CHECK_MSG(st == SPF_OK, "generate: %s", spf_last_error());
    if (st != SPF_OK)
        goto done_matrix;
    int64_t kn = c->k * c->n, mn = c->m * c->n;
    size_t es = c->dtype == SPF_DTYPE_F32 ? 4 : 2;
    float *b = malloc((size_t)kn * sizeof *b), *bias = malloc((size_t)c->m * sizeof *bias);
    float *want = malloc((size_t)mn * sizeof *want);
    spf_fill_uniform(b, kn, seed + 1);
    spf_fill_uniform(bias, c->m, seed + 2);
    memory mem = {0};
    mem.b_bytes = (size_t)kn * es;
    mem.c_bytes = (size_t)mn * es;
    mem.b = malloc(mem.b_bytes);
    mem.c = malloc(mem.c_bytes);
    mem.c_written = calloc(mem.c_bytes, 1);
    mem.bias = c->bias ? (uint8_t *)bias : NULL;
    mem.bias_bytes = (size_t)c->m * sizeof(float);
    mem.shared_bytes = prog.shared_bytes;
    mem.shared = malloc(prog.shared_bytes + 16);
    memset(mem.c, 0xFF, mem.c_bytes); /* poison: NaN in every format */
    /* B in storage precision; the CPU executor sees the same rounded values */
    for (int64_t i = 0; i < kn; i++) {
        if (c->dtype == SPF_DTYPE_F16) {
            uint16_t h = f16_from_f32(b[i]);
            memcpy(mem.b + 2 * i, &h, 2);
            b[i] = f32_from_f16(h);
        } else if (c->dtype == SPF_DTYPE_BF16) {
            uint16_t h = bf16_from_f32(b[i]);
            memcpy(mem.b + 2 * i, &h, 2);
            b[i] = f32_from_bits((uint32_t)h << 16);
        } else {
            memcpy(mem.b + 4 * i, &b[i], 4);
        }
    }
    schedule s;
    CHECK_OK(schedule_create(a, perm, c->n, &c->cfg, &s));
    CHECK_OK(schedule_execute_cpu(&s, b, want, c->bias ? bias : NULL, c->relu));
    schedule_free(&s);

    load_program(&prog);
    CHECK_MSG(run_grid(&prog, &mem) == 0, "%s: interpreter stopped", prog.entry);
    CHECK_MSG(mem.faults == 0, "%s: %d out-of-bounds accesses", prog.entry, mem.faults);
    int64_t unwritten = 0, mismatches = 0;
    float worst = 0; /* f16x2: largest |C - C_fp32acc| / (1 + |C_fp32acc|) */
    for (size_t i = 0; i < mem.c_bytes; i++)
        unwritten += !mem.c_written[i];
    const int64_t *rp = spf_matrix_row_ptr(a);
    for (int64_t i = 0; i < mn; i++) {
        float got;
        if (c->dtype == SPF_DTYPE_F32) {
            memcpy(&got, mem.c + 4 * i, 4);
        } else {
            uint16_t h;
            memcpy(&h, mem.c + 2 * i, 2);
            got = c->dtype == SPF_DTYPE_F16 ? f32_from_f16(h) : f32_from_bits((uint32_t)h << 16);
        }
        float expect = want[i];
        if (c->dtype == SPF_DTYPE_F16)
            expect = f32_from_f16(f16_from_f32(expect));
        else if (c->dtype == SPF_DTYPE_BF16)
            expect = f32_from_bits((uint32_t)bf16_from_f32(expect) << 16);
        int ok;
        if (c->f16x2 && fabsf(got - expect) / (1.0f + fabsf(expect)) > worst)
            worst = fabsf(got - expect) / (1.0f + fabsf(expect));
        if (c->f16x2) {
            /* f16 accumulation: about 2^-11 per term of a row's sum */
            int64_t row = i / c->n, terms = rp[row + 1] - rp[row] + 1;
            ok = fabsf(got - expect) <= 2e-3f * (float)terms * (1.0f + fabsf(expect));
        } else {
            ok = bits_from_f32(got) == bits_from_f32(expect);
        }
        if (!ok && mismatches++ < 3)
            fprintf(stderr, "%s n=%lld: C[%lld][%lld] = %.9g, expected %.9g\n", prog.entry,
                    (long long)c->n, (long long)(i / c->n), (long long)(i % c->n), got, expect);
    }
    CHECK_MSG(unwritten == 0, "%s: %lld bytes of C never written", prog.entry, (long long)unwritten);
    CHECK_MSG(mismatches == 0, "%s n=%lld: %lld mismatches", prog.entry, (long long)c->n,
              (long long)mismatches);
    printf("%-40s n=%-4lld %s%s%s", prog.entry, (long long)c->n, c->bias ? "bias " : "",
           c->relu ? "relu " : "", c->permute ? "permuted" : "");
    if (c->f16x2)
        printf("  (emulated f16x2 error vs fp32 accumulation: %.2e)", (double)worst);
    printf("\n");
    free_program();
    free(mem.b);
    free(mem.c);
    free(mem.c_written);
    free(mem.shared);
    free(b);
    free(bias);
    free(want);
    ptx_program_free(&prog);
done_matrix:
    free(perm);
    spf_matrix_free(a);
}

int main(int argc, char **argv)
{
    const emu_case cases[] = {
        {NULL, 21, 30, 0.2, 40, {4, 32, 1, 1, 1}, SPF_DTYPE_F32, 0, 1, 1, 1, 0},
        {NULL, 21, 30, 0.2, 1, {3, 32, 1, 0, 1}, SPF_DTYPE_F32, 0, 0, 0, 0, 0},
        {NULL, 21, 30, 0.2, 49, {8, 32, 1, 2, 2}, SPF_DTYPE_F32, 0, 1, 0, 1, 0},
        {NULL, 24, 40, 0.15, 68, {5, 64, 4, 1, 2}, SPF_DTYPE_F32, 0, 1, 1, 1, 0},
        {NULL, 24, 40, 0.15, 36, {8, 32, 4, 3, 4}, SPF_DTYPE_F32, 0, 0, 1, 0, 0},
        {NULL, 17, 50, 0.1, 130, {4, 64, 2, 0, 1}, SPF_DTYPE_F32, 0, 1, 1, 0, 0},
        {NULL, 21, 30, 0.2, 127, {4, 32, 1, 1, 1}, SPF_DTYPE_F16, 0, 1, 1, 1, 0},
        {NULL, 24, 40, 0.15, 68, {5, 64, 4, 1, 2}, SPF_DTYPE_F16, 0, 1, 1, 0, 0},
        {NULL, 21, 30, 0.2, 6, {3, 64, 2, 2, 1}, SPF_DTYPE_BF16, 0, 1, 0, 1, 0},
        {NULL, 24, 40, 0.15, 68, {6, 32, 4, 1, 4}, SPF_DTYPE_BF16, 0, 0, 1, 1, 0},
        {NULL, 21, 30, 0.2, 3, {2, 32, 1, 1, 1}, SPF_DTYPE_BF16, 0, 1, 1, 0, 0},
        {NULL, 24, 40, 0.15, 68, {5, 64, 4, 1, 2}, SPF_DTYPE_F16, 1, 1, 1, 1, 0},
        {NULL, 21, 30, 0.2, 50, {4, 64, 2, 2, 1}, SPF_DTYPE_F16, 1, 0, 0, 0, 0},
        {NULL, 11, 12, 0.3, 33, {4, 32, 1, 1, 2}, SPF_DTYPE_F32, 0, 1, 1, 1, 1},
        {NULL, 10, 12, 0.3, 8, {4, 128, 4, 0, 1}, SPF_DTYPE_BF16, 0, 0, 0, 0, 1},
        {"dlmc/rn50/magnitude_pruning/0.9/bottleneck_1_block_group1_1_1.smtx", 0, 0, 0, 49,
         {8, 32, 1, 2, 2}, SPF_DTYPE_F32, 0, 1, 1, 1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&cases[i], 40 + i);
    /* a seeded random sweep over shapes and configurations */
    uint64_t r = 12345;
    for (int i = 0; i < 40; i++) {
#define RAND(n) ((int)((r = r * 6364136223846793005ull + 1442695040888963407ull) >> 33) % (n))
        static const int vs[] = {1, 2, 4}, gts[] = {8, 16, 32, 64};
        emu_case c;
        memset(&c, 0, sizeof c);
        c.cfg.v = vs[RAND(3)];
        c.cfg.ksplit = 1 + RAND(4);
        int gt;
        do
            gt = gts[RAND(4)];
        while (gt * c.cfg.ksplit % 32 != 0);
        c.cfg.n1 = gt * c.cfg.v;
        c.cfg.m1 = 1 + RAND(9);
        c.cfg.prefetch = RAND(4);
        c.m = 5 + RAND(26);
        c.k = 5 + RAND(36);
        c.density = 0.05 + 0.05 * RAND(6);
        c.n = c.cfg.v * (1 + RAND(150 / c.cfg.v));
        c.dtype = (spf_dtype)RAND(3);
        c.f16x2 = c.dtype == SPF_DTYPE_F16 && c.cfg.v > 1 && RAND(2);
        c.bias = RAND(2);
        c.relu = RAND(2);
        c.permute = c.m % 5 != 0 && RAND(2);
        c.all_empty = RAND(20) == 0;
#undef RAND
        run_case(&c, 100 + (uint64_t)i);
    }
    return check_report();
}
