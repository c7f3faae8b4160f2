/* The unrolled kernel's implicit im2col (unrolled_generate_gather, issue
 * 14 item 2), run on the PTX interpreter of test_unrolled_emulate over
 * every block and thread of a launch: its C must equal, bit for bit, the
 * CPU executor of the same schedule (same operations in the same order)
 * on the explicit im2col of the same input (conv_gather_host), in NCHW (an
 * image a launch, C n_last) and NHWC (the batch, C n_first), f32 / f16 /
 * bf16, strides 1 and 2, padding 0, 1 and 3, 1×1, 3×3 and 7×7 filters,
 * C_in = 3, output sides that no tile divides, a K split, bias and ReLU;
 * no load or store may leave the input or C (the padding's taps are
 * guarded, not read), and every element of C must be written. Then what
 * the generator refuses. */
#define _POSIX_C_SOURCE 200809L /* strdup, strtok */

#include "test_util.h"

#include "conv/conv_gather.h"
#include "strategy/unrolled/schedule.h"
#include "strategy/unrolled/unrolled.h"
#include "ptx_interp.h"

#include <stdint.h>

typedef struct gather_case {
    int32_t images, c, h, w, k, r, s, stride, pad;
    int nhwc;
    double density;
    spf_kernel_config cfg;
    spf_dtype dtype;
    int bias, relu;
} gather_case;

/* x rounded to the dtype, and its bits there (es bytes) at out. */
static float store_rounded(float x, spf_dtype dtype, uint8_t *out)
{
    if (dtype == SPF_DTYPE_F16) {
        const uint16_t h = f16_from_f32(x);
        memcpy(out, &h, 2);
        return f32_from_f16(h);
    }
    if (dtype == SPF_DTYPE_BF16) {
        const uint16_t h = bf16_from_f32(x);
        memcpy(out, &h, 2);
        return f32_from_bits((uint32_t)h << 16);
    }
    memcpy(out, &x, 4);
    return x;
}

static float load_rounded(const uint8_t *at, spf_dtype dtype)
{
    if (dtype == SPF_DTYPE_F32) {
        float f;
        memcpy(&f, at, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, at, 2);
    return dtype == SPF_DTYPE_F16 ? f32_from_f16(h) : f32_from_bits((uint32_t)h << 16);
}

static void run_case(const gather_case *t, uint64_t seed)
{
    const int32_t p = (t->h + 2 * t->pad - t->r) / t->stride + 1;
    const int32_t q = (t->w + 2 * t->pad - t->s) / t->stride + 1;
    const int32_t images = t->nhwc ? t->images : 1; /* NCHW: a launch an image */
    conv_gather g = {.c = t->c, .h = t->h, .w = t->w, .r = t->r, .s = t->s,
                     .stride = t->stride, .pad = t->pad, .p = p, .q = q,
                     .cols = images * p * q, .nhwc = t->nhwc};
    const int64_t kk = (int64_t)t->c * t->r * t->s, n = g.cols, m = t->k;
    const size_t es = t->dtype == SPF_DTYPE_F32 ? 4 : 2;
    spf_matrix *a = gen_matrix(SPF_GEN_UNIFORM, m, kk, 1.0 - t->density, seed);
    ptx_program prog;
    spf_status st = unrolled_generate_gather(a, NULL, &g, &t->cfg, t->dtype, t->bias, t->relu,
                                             90, 0, &prog);
    CHECK_MSG(st == SPF_OK, "generate: %s", spf_last_error());
    if (st != SPF_OK) {
        spf_matrix_free(a);
        return;
    }
    /* the input, rounded to the dtype, and its explicit im2col as K × N */
    const int64_t in_count = (int64_t)images * t->c * t->h * t->w;
    float *in = malloc((size_t)in_count * sizeof *in), *bias = malloc((size_t)m * sizeof *bias);
    float *cols = malloc((size_t)(kk * n) * sizeof *cols), *b = malloc((size_t)(kk * n) * sizeof *b);
    float *want = malloc((size_t)(m * n) * sizeof *want);
    spf_fill_uniform(in, in_count, seed + 1);
    spf_fill_uniform(bias, m, seed + 2);
    memory mem = {0};
    mem.b_bytes = (size_t)in_count * es;
    mem.b = malloc(mem.b_bytes);
    for (int64_t i = 0; i < in_count; i++)
        in[i] = store_rounded(in[i], t->dtype, mem.b + (size_t)i * es);
    conv_gather_host(&g, in, cols, sizeof(float));
    for (int64_t r = 0; r < kk; r++) /* NHWC's gather is N × K */
        for (int64_t j = 0; j < n; j++)
            b[r * n + j] = t->nhwc ? cols[j * kk + r] : cols[r * n + j];
    schedule s;
    CHECK_OK(schedule_create(a, NULL, n, &t->cfg, &s));
    CHECK_OK(schedule_execute_cpu(&s, b, want, t->bias ? bias : NULL, t->relu));
    schedule_free(&s);

    mem.c_bytes = (size_t)(m * n) * es;
    mem.c = malloc(mem.c_bytes);
    mem.c_written = calloc(mem.c_bytes, 1);
    mem.bias = t->bias ? (uint8_t *)bias : NULL;
    mem.bias_bytes = (size_t)m * sizeof(float);
    mem.shared_bytes = prog.shared_bytes;
    mem.shared = malloc(prog.shared_bytes + 16);
    memset(mem.c, 0xFF, mem.c_bytes); /* poison: NaN in every format */
    load_program(&prog);
    CHECK_MSG(run_grid(&prog, &mem) == 0, "%s: interpreter stopped", prog.entry);
    CHECK_MSG(mem.faults == 0, "%s: %d accesses outside the input and C", prog.entry, mem.faults);
    int64_t unwritten = 0, mismatches = 0;
    for (size_t i = 0; i < mem.c_bytes; i++)
        unwritten += !mem.c_written[i];
    for (int64_t row = 0; row < m; row++)
        for (int64_t j = 0; j < n; j++) {
            const int64_t at = t->nhwc ? j * m + row : row * n + j;
            const float got = load_rounded(mem.c + (size_t)at * es, t->dtype);
            uint8_t bits[4];
            const float expect = store_rounded(want[row * n + j], t->dtype, bits);
            if (bits_from_f32(got) != bits_from_f32(expect) && mismatches++ < 3)
                fprintf(stderr, "%s: C[%lld][%lld] = %.9g, expected %.9g\n", prog.entry,
                        (long long)row, (long long)j, got, expect);
        }
    CHECK_MSG(unwritten == 0, "%s: %lld bytes of C never written", prog.entry,
              (long long)unwritten);
    CHECK_MSG(mismatches == 0, "%s: %lld mismatches", prog.entry, (long long)mismatches);
    printf("%-52s %dx%d s%d p%d C=%d %dx%d -> %dx%d (%lld columns)%s%s\n", prog.entry,
           (int)t->r, (int)t->s, (int)t->stride, (int)t->pad, (int)t->c, (int)t->h, (int)t->w,
           (int)p, (int)q, (long long)n, t->bias ? " bias" : "", t->relu ? " relu" : "");
    free_program();
    free(mem.b);
    free(mem.c);
    free(mem.c_written);
    free(mem.shared);
    free(in);
    free(bias);
    free(cols);
    free(b);
    free(want);
    ptx_program_free(&prog);
    spf_matrix_free(a);
}

static void check_refusals(void)
{
    spf_matrix *a = gen_matrix(SPF_GEN_UNIFORM, 8, 27, 0.5, 3);
    conv_gather g = {.c = 3, .h = 6, .w = 6, .r = 3, .s = 3, .stride = 1, .pad = 1, .p = 6,
                     .q = 6, .cols = 36};
    const spf_kernel_config v2 = {4, 64, 2, 1, 1}, v1 = {4, 32, 1, 1, 1};
    ptx_program prog;
    CHECK_STATUS(unrolled_generate_gather(a, NULL, &g, &v2, SPF_DTYPE_F32, 0, 0, 90, 0, &prog),
                 SPF_ERR_UNSUPPORTED);
    CHECK(strstr(spf_last_error(), "v = 1") != NULL);
    conv_gather wide = g;
    wide.c = 1, wide.r = 1, wide.s = 27, wide.pad = 0, wide.w = 30, wide.q = 4, wide.cols = 24;
    CHECK_STATUS(unrolled_generate_gather(a, NULL, &wide, &v1, SPF_DTYPE_F32, 0, 0, 90, 0, &prog),
                 SPF_ERR_UNSUPPORTED);
    CHECK(strstr(spf_last_error(), "at most 16") != NULL);
    conv_gather other = g;
    other.c = 4; /* 36 weight columns expected */
    CHECK_STATUS(unrolled_generate_gather(a, NULL, &other, &v1, SPF_DTYPE_F32, 0, 0, 90, 0, &prog),
                 SPF_ERR_INVALID_ARGUMENT);
    spf_matrix_free(a);
}

int main(int argc, char **argv)
{
    const gather_case cases[] = {
        /* 3×3, padding 1, C_in = 3, 7×9: 63 positions, tiles of 32 */
        {1, 3, 7, 9, 10, 3, 3, 1, 1, 0, 0.4, {4, 32, 1, 1, 1}, SPF_DTYPE_F32, 1, 1},
        {2, 3, 7, 9, 10, 3, 3, 1, 1, 1, 0.4, {4, 32, 1, 1, 1}, SPF_DTYPE_F32, 0, 0},
        /* stride 2, a K split, f16 */
        {1, 5, 11, 8, 12, 3, 3, 2, 1, 0, 0.3, {8, 64, 1, 2, 2}, SPF_DTYPE_F16, 1, 0},
        {3, 5, 11, 8, 12, 3, 3, 2, 1, 1, 0.3, {8, 64, 1, 2, 4}, SPF_DTYPE_F16, 0, 1},
        /* no padding: no tap is guarded; bf16 */
        {1, 4, 6, 7, 9, 3, 3, 1, 0, 0, 0.3, {3, 32, 1, 0, 1}, SPF_DTYPE_BF16, 1, 1},
        {2, 4, 6, 7, 9, 3, 3, 1, 0, 1, 0.3, {3, 32, 1, 3, 2}, SPF_DTYPE_BF16, 1, 0},
        /* the stem's shape, small: 7×7, stride 2, padding 3, C_in = 3 */
        {1, 3, 13, 12, 6, 7, 7, 2, 3, 0, 0.2, {6, 32, 1, 2, 1}, SPF_DTYPE_F32, 1, 1},
        {2, 3, 13, 12, 6, 7, 7, 2, 3, 1, 0.2, {6, 64, 1, 2, 2}, SPF_DTYPE_F16, 0, 1},
        /* 1×1 with stride 2 (a bottleneck's downsampling) */
        {1, 16, 9, 9, 8, 1, 1, 2, 0, 0, 0.3, {8, 32, 1, 1, 1}, SPF_DTYPE_F32, 1, 0},
        {2, 16, 9, 9, 8, 1, 1, 2, 0, 1, 0.3, {8, 32, 1, 1, 1}, SPF_DTYPE_BF16, 0, 0},
        /* one output position, and a sparse filter with empty rows */
        {1, 2, 3, 3, 5, 3, 3, 1, 0, 0, 0.5, {2, 32, 1, 1, 1}, SPF_DTYPE_F32, 1, 1},
        {1, 8, 5, 5, 16, 3, 3, 1, 1, 1, 0.03, {16, 32, 1, 1, 1}, SPF_DTYPE_F16, 1, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&cases[i], 700 + 10 * i);
    check_refusals();
    return check_report();
}
