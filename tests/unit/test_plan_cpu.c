/* Plans on a machine without a GPU: the CPU strategy through spf_plan_*,
 * GPU strategies refused with SPF_ERR_NO_DEVICE and a pointer to the CPU
 * strategy, bad options refused, allocation failures survived; and the
 * host fp16 / bf16 conversions the GPU self-check relies on. */
#include "test_util.h"

#include "core/dtype.h"

#include <stddef.h>
#include <stdint.h>

static void test_options_init(void)
{
    spf_plan_options o;
    memset(&o, 0x5a, sizeof o);
    spf_plan_options_init(&o);
    CHECK(o.strategy == SPF_STRATEGY_AUTO && o.dtype == SPF_DTYPE_F32);
    CHECK(o.verify == 1 && o.device == 0 && o.exhaustive == 0 && o.config == NULL);
    CHECK(o.bias == 0 && o.relu == 0 && o.math == SPF_MATH_DEFAULT && o.host_threads == 0);
    CHECK(o.size == sizeof o && o.dense == 1 && o.b_layout == SPF_LAYOUT_N_LAST &&
          o.c_layout == SPF_LAYOUT_N_LAST);
    spf_plan_options_init(NULL); /* harmless */
}

/* The CPU plan equals the double reference, bias and ReLU included, on a
 * matrix with empty rows; every output is written over the poison. */
static void test_cpu_plan(void)
{
    const int64_t m = 37, k = 53, n = 7;
    spf_matrix *a = gen_matrix(SPF_GEN_MAGNITUDE, m, k, 0.93, 11);
    spf_matrix_stats st;
    CHECK_OK(spf_matrix_stats_compute(a, &st));
    CHECK_MSG(st.empty_rows > 0, "want empty rows, got %lld", (long long)st.empty_rows);
    float b[53 * 7], bias[37], c[37 * 7];
    double ref[37 * 7];
    spf_fill_uniform(b, k * n, 5);
    spf_fill_uniform(bias, m, 6);
    for (int64_t i = 0; i < m * n; i++)
        c[i] = NAN;

    spf_plan_options o;
    spf_plan_options_init(&o);
    o.strategy = SPF_STRATEGY_CPU;
    o.bias = 1;
    o.relu = 1;
    o.host_threads = 2;
    spf_plan *p = (spf_plan *)1;
    CHECK_OK(spf_plan_create(a, n, &o, &p));
    CHECK(p != NULL);
    spf_matrix_free(a); /* the plan keeps its own copy */
    a = gen_matrix(SPF_GEN_MAGNITUDE, m, k, 0.93, 11);
    CHECK_OK(spf_plan_execute(p, b, c, bias, NULL));
    CHECK_OK(spf_reference_spmm_f64(a, n, b, ref, bias, 1, 1));
    double err = spf_relative_error(c, ref, m * n);
    CHECK_MSG(err <= 1e-7, "error %g", err);
    int zeros = 0;
    for (int64_t i = 0; i < m * n; i++)
        zeros += c[i] == 0.0f;
    CHECK_MSG(zeros > 0 && zeros < m * n, "ReLU should zero some but not all: %d", zeros);

    spf_plan_info info = {.size = sizeof info};
    CHECK_OK(spf_plan_get_info(p, &info));
    CHECK(info.strategy == SPF_STRATEGY_CPU && info.size == sizeof info);
    /* growable: a caller built against a later header passes a larger
     * struct; its fields past ours are left alone */
    struct {
        spf_plan_info info;
        unsigned char later[24];
    } wide;
    memset(&wide, 0x7e, sizeof wide);
    wide.info.size = sizeof wide;
    CHECK_OK(spf_plan_get_info(p, &wide.info));
    CHECK(wide.info.size == sizeof wide && wide.info.strategy == SPF_STRATEGY_CPU &&
          wide.later[0] == 0x7e && wide.later[23] == 0x7e);
    /* one built before `assembler` was added passes the first layout's
     * size, and the bytes past it stay its own */
    memset(&wide, 0x7e, sizeof wide);
    wide.info.size = (uint32_t)offsetof(spf_plan_info, assembler);
    CHECK_OK(spf_plan_get_info(p, &wide.info));
    CHECK(wide.info.strategy == SPF_STRATEGY_CPU && wide.info.assembler[0] == 0x7e);
    CHECK_MSG(info.assembler[0] == '\0', "a CPU plan assembled nothing: \"%s\"", info.assembler);
    /* ... and larger options, read up to what this library knows */
    struct {
        spf_plan_options o;
        unsigned char later[24];
    } wide_options;
    memset(&wide_options, 0, sizeof wide_options);
    spf_plan_options_init(&wide_options.o);
    wide_options.o.size = sizeof wide_options;
    wide_options.o.strategy = SPF_STRATEGY_CPU;
    spf_plan *q = NULL;
    CHECK_OK(spf_plan_create(a, n, &wide_options.o, &q));
    spf_plan_free(q);
    spf_plan_info unset = {.size = 0};
    CHECK_STATUS(spf_plan_get_info(p, &unset), SPF_ERR_INVALID_ARGUMENT);
    CHECK_DETAIL("set info.size");
    CHECK(strcmp(info.kernel_name, "cpu_reference_f64") == 0);
    CHECK(info.verify_error == -1.0 && info.configs_tried == 0 && info.kernel_us == 0.0);

    CHECK_STATUS(spf_plan_write_tuning_log(p, "/tmp/never-written.csv"), SPF_ERR_INVALID_ARGUMENT);
    CHECK_DETAIL("not tuned");
    CHECK_STATUS(spf_plan_execute(p, b, c, NULL, NULL), SPF_ERR_INVALID_ARGUMENT);
    CHECK_DETAIL("bias");
    CHECK_STATUS(spf_plan_execute(p, NULL, c, bias, NULL), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(spf_plan_execute(NULL, b, c, bias, NULL), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(spf_plan_get_info(p, NULL), SPF_ERR_INVALID_ARGUMENT);
    spf_plan_free(p);

    /* Without bias, a bias pointer is refused rather than ignored. */
    o.bias = 0;
    CHECK_OK(spf_plan_create(a, n, &o, &p));
    CHECK_STATUS(spf_plan_execute(p, b, c, bias, NULL), SPF_ERR_INVALID_ARGUMENT);
    CHECK_OK(spf_plan_execute(p, b, c, NULL, NULL));
    CHECK_OK(spf_reference_spmm_f64(a, n, b, ref, NULL, 1, 1));
    CHECK(spf_relative_error(c, ref, m * n) <= 1e-7);
    spf_plan_free(p);
    spf_plan_free(NULL);
    spf_matrix_free(a);
}

/* C overlapping B or bias (the same buffer, or a byte in common) is refused
 * before anything is written; adjacent buffers, and B overlapping bias, run. */
static void test_overlapping_buffers(void)
{
    const int64_t m = 5, k = 7, n = 3; /* b: 21 floats, c: 15, bias: 5 */
    spf_matrix *a = gen_matrix(SPF_GEN_UNIFORM, m, k, 0.5, 13);
    spf_plan_options o;
    spf_plan_options_init(&o);
    o.strategy = SPF_STRATEGY_CPU;
    o.bias = 1;
    o.host_threads = 1;
    spf_plan *p = NULL;
    CHECK_OK(spf_plan_create(a, n, &o, &p));
    float buf[64];
    spf_fill_uniform(buf, 64, 3);
    float before[64];
    memcpy(before, buf, sizeof buf);
    float *other = buf + 40;
    struct {
        const float *b, *bias;
        float *c;
        const char *detail;
    } refused[] = {{buf, other, buf, "overlaps b"},        /* the same buffer       */
                   {buf, other, buf + 20, "overlaps b"},   /* c's first float is b's last */
                   {buf + 14, other, buf, "overlaps b"},   /* c's last float is b's first */
                   {buf + 20, buf + 4, buf, "overlaps bias"},
                   {buf + 20, buf + 14, buf, "overlaps bias"}};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        CHECK_STATUS(spf_plan_execute(p, refused[i].b, refused[i].c, refused[i].bias, NULL),
                     SPF_ERR_INVALID_ARGUMENT);
        CHECK_DETAIL(refused[i].detail);
    }
    CHECK(memcmp(buf, before, sizeof buf) == 0); /* nothing written */
    CHECK_OK(spf_plan_execute(p, buf, buf + 21, buf + 36, NULL));  /* adjacent */
    CHECK_OK(spf_plan_execute(p, buf + 21, buf + 6, buf + 1, NULL)); /* c just before b */
    CHECK_OK(spf_plan_execute(p, buf + 24, buf, buf + 25, NULL));  /* b and bias overlap */
    spf_plan_free(p);
    spf_matrix_free(a);
}

/* GPU strategies without a device: SPF_ERR_NO_DEVICE naming the way out. */
static void test_no_device(void)
{
    spf_device_info dev;
    CHECK_OK(spf_device_query(0, &dev));
    if (dev.available) {
        printf("NOTE: a CUDA device is present; the no-device checks are skipped\n");
        return;
    }
    spf_matrix *a = gen_matrix(SPF_GEN_MAGNITUDE, 16, 16, 0.5, 3);
    const spf_strategy strategies[] = {SPF_STRATEGY_AUTO, SPF_STRATEGY_UNROLLED, SPF_STRATEGY_GENERIC};
    for (int i = 0; i < 3; i++) {
        spf_plan_options o;
        spf_plan_options_init(&o);
        o.strategy = strategies[i];
        spf_plan *p = (spf_plan *)1;
        CHECK_STATUS(spf_plan_create(a, 8, &o, &p), SPF_ERR_NO_DEVICE);
        CHECK(p == NULL);
        CHECK_DETAIL("SPF_STRATEGY_CPU");
        CHECK_DETAIL(dev.reason);
    }
    /* The defaults (options NULL) are AUTO: the same answer. */
    spf_plan *p = NULL;
    CHECK_STATUS(spf_plan_create(a, 8, NULL, &p), SPF_ERR_NO_DEVICE);
    spf_matrix_free(a);
}

/* spf_plan_cache_peek's answers that need no device: its arguments
 * checked, host plans never cached, device plans refused as
 * spf_plan_create refuses them. */
static void test_cache_peek(void)
{
    spf_matrix *a = gen_matrix(SPF_GEN_MAGNITUDE, 16, 16, 0.5, 5);
    spf_plan_options o;
    spf_plan_options_init(&o);
    spf_plan_info info = {.size = sizeof info, .kernel_us = -7.0};
    int found = -1;
    CHECK_STATUS(spf_plan_cache_peek(a, 8, &o, &info, NULL), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(spf_plan_cache_peek(NULL, 8, &o, &info, &found), SPF_ERR_INVALID_ARGUMENT);
    CHECK(found == 0);
    spf_plan_info small = {.size = 4};
    found = -1;
    CHECK_STATUS(spf_plan_cache_peek(a, 8, &o, &small, &found), SPF_ERR_INVALID_ARGUMENT);
    CHECK(found == 0);
    CHECK_DETAIL("info.size = 4");
    CHECK_STATUS(spf_plan_cache_peek(a, 0, &o, &info, &found), SPF_ERR_INVALID_ARGUMENT);
    o.strategy = SPF_STRATEGY_CPU;
    found = -1;
    CHECK_OK(spf_plan_cache_peek(a, 8, &o, &info, &found));
    CHECK(found == 0 && info.kernel_us == -7.0);
    spf_device_info dev;
    CHECK_OK(spf_device_query(0, &dev));
    if (!dev.available) {
        o.strategy = SPF_STRATEGY_AUTO;
        CHECK_STATUS(spf_plan_cache_peek(a, 8, &o, &info, &found), SPF_ERR_NO_DEVICE);
        CHECK(found == 0 && info.kernel_us == -7.0);
    }
    spf_matrix_free(a);
}

/* The named lookups' arguments: a name of no matrix, a name that is not
 * the matrix's, a host strategy (never cached), no device. */
static void test_cache_named(void)
{
    spf_matrix *a = gen_matrix(SPF_GEN_MAGNITUDE, 16, 12, 0.5, 5);
    spf_matrix_name name = {.size = sizeof name, .rows = 16, .cols = 12,
                            .nnz = spf_matrix_nnz(a), .hash = {1, 2}};
    spf_plan_options o;
    spf_plan_options_init(&o);
    spf_plan_info info = {.size = sizeof info, .kernel_us = -7.0};
    int found = -1, noted = -1;
    CHECK_STATUS(spf_plan_cache_peek_named(&name, 8, &o, &info, NULL), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(spf_plan_cache_peek_named(NULL, 8, &o, &info, &found), SPF_ERR_INVALID_ARGUMENT);
    CHECK(found == 0);
    CHECK_STATUS(spf_plan_cache_note(a, &name, 8, &o, NULL), SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(spf_plan_cache_note(NULL, &name, 8, &o, &noted), SPF_ERR_INVALID_ARGUMENT);
    CHECK(noted == 0);
    CHECK_STATUS(spf_plan_cache_note(a, NULL, 8, &o, &noted), SPF_ERR_INVALID_ARGUMENT);

    spf_matrix_name bad = name;
    bad.size = 8;
    CHECK_STATUS(spf_plan_cache_peek_named(&bad, 8, &o, &info, &found), SPF_ERR_INVALID_ARGUMENT);
    CHECK_DETAIL("name.size = 8");
    bad = name;
    bad.nnz = 16 * 12 + 1;
    CHECK_STATUS(spf_plan_cache_peek_named(&bad, 8, &o, &info, &found), SPF_ERR_INVALID_ARGUMENT);
    CHECK_DETAIL("16×12 matrix with 193 entries");
    bad = name;
    bad.rows = -1;
    CHECK_STATUS(spf_plan_cache_peek_named(&bad, 8, &o, &info, &found), SPF_ERR_INVALID_ARGUMENT);
    bad = name;
    bad.cols = 13;
    CHECK_STATUS(spf_plan_cache_note(a, &bad, 8, &o, &noted), SPF_ERR_INVALID_ARGUMENT);
    CHECK_DETAIL("for a 16×12 matrix");
    CHECK_STATUS(spf_plan_cache_peek_named(&name, 0, &o, &info, &found), SPF_ERR_INVALID_ARGUMENT);

    o.strategy = SPF_STRATEGY_CPU;
    found = noted = -1;
    CHECK_OK(spf_plan_cache_peek_named(&name, 8, &o, &info, &found));
    CHECK(found == 0 && info.kernel_us == -7.0);
    CHECK_OK(spf_plan_cache_note(a, &name, 8, &o, &noted));
    CHECK(noted == 0);
    spf_device_info dev;
    CHECK_OK(spf_device_query(0, &dev));
    if (!dev.available) {
        o.strategy = SPF_STRATEGY_AUTO;
        CHECK_STATUS(spf_plan_cache_peek_named(&name, 8, &o, &info, &found), SPF_ERR_NO_DEVICE);
        CHECK(found == 0 && info.kernel_us == -7.0);
        CHECK_STATUS(spf_plan_cache_note(a, &name, 8, &o, &noted), SPF_ERR_NO_DEVICE);
        CHECK(noted == 0);
    }
    spf_matrix_free(a);
}

static void test_bad_options(void)
{
    spf_matrix *a = gen_matrix(SPF_GEN_MAGNITUDE, 8, 8, 0.5, 4);
    spf_kernel_config good = {8, 32, 1, 2, 1}, bad_v = {8, 32, 3, 2, 1};
    struct {
        const char *what;
        int64_t n;
        spf_plan_options o;
        spf_status expect;
    } cases[32];
    int count = 0;
    spf_plan_options base;
    spf_plan_options_init(&base);
    base.strategy = SPF_STRATEGY_CPU;
#define CASE(what_, n_, field_assign, expect_)                                              \
    do {                                                                                   \
        cases[count].what = what_;                                                         \
        cases[count].n = n_;                                                               \
        cases[count].o = base;                                                             \
        spf_plan_options *o = &cases[count].o;                                             \
        field_assign;                                                                      \
        cases[count++].expect = expect_;                                                   \
    } while (0)
    CASE("n = 0", 0, (void)o, SPF_ERR_INVALID_ARGUMENT);
    CASE("n > int32", (int64_t)1 << 31, (void)o, SPF_ERR_INVALID_ARGUMENT);
    CASE("strategy", 4, o->strategy = (spf_strategy)99, SPF_ERR_INVALID_ARGUMENT);
    CASE("dtype", 4, o->dtype = (spf_dtype)9, SPF_ERR_INVALID_ARGUMENT);
    CASE("flag", 4, o->relu = 2, SPF_ERR_INVALID_ARGUMENT);
    CASE("verify flag", 4, o->verify = -1, SPF_ERR_INVALID_ARGUMENT);
    CASE("device", 4, o->device = -1, SPF_ERR_INVALID_ARGUMENT);
    CASE("threads", 4, o->host_threads = -3, SPF_ERR_INVALID_ARGUMENT);
    CASE("f16x2 with f32", 4, o->math = SPF_MATH_F16X2, SPF_ERR_INVALID_ARGUMENT);
    CASE("tf32 with bf16", 4, (o->dtype = SPF_DTYPE_BF16, o->math = SPF_MATH_TF32),
         SPF_ERR_INVALID_ARGUMENT);
    CASE("math", 4, o->math = (spf_math)5, SPF_ERR_INVALID_ARGUMENT);
    CASE("layout", 4, o->c_layout = (spf_layout)2, SPF_ERR_INVALID_ARGUMENT);
    CASE("dense flag", 4, o->dense = 2, SPF_ERR_INVALID_ARGUMENT);
    CASE("timing", 4, o->timing = (spf_timing)2, SPF_ERR_INVALID_ARGUMENT);
    CASE("options size", 4, o->size = 8, SPF_ERR_INVALID_ARGUMENT);
    CASE("options not initialized", 4, o->size = 0x5a5a5a5a, SPF_ERR_INVALID_ARGUMENT);
    CASE("config with CPU", 4, o->config = &good, SPF_ERR_INVALID_ARGUMENT);
    CASE("exhaustive with CPU", 4, o->exhaustive = 1, SPF_ERR_INVALID_ARGUMENT);
    CASE("config and exhaustive", 4,
         (o->strategy = SPF_STRATEGY_UNROLLED, o->config = &good, o->exhaustive = 1),
         SPF_ERR_INVALID_ARGUMENT);
    CASE("invalid config", 4, (o->strategy = SPF_STRATEGY_UNROLLED, o->config = &bad_v),
         SPF_ERR_INVALID_ARGUMENT);
    CASE("CPU with f16", 4, o->dtype = SPF_DTYPE_F16, SPF_ERR_UNSUPPORTED);
    CASE("CPU with f16x2", 4, (o->dtype = SPF_DTYPE_F16, o->math = SPF_MATH_F16X2),
         SPF_ERR_UNSUPPORTED);
#undef CASE
    for (int i = 0; i < count; i++) {
        spf_plan *p = (spf_plan *)1;
        spf_status got = spf_plan_create(a, cases[i].n, &cases[i].o, &p);
        CHECK_MSG(got == cases[i].expect && p == NULL, "%s: got %d (%s)", cases[i].what, (int)got,
                  spf_last_error());
        CHECK_MSG(spf_last_error()[0] != '\0', "%s: no detail", cases[i].what);
    }
    CHECK_DETAIL("cpu: takes float32"); /* the last case names the strategy and why */
    spf_plan *p = (spf_plan *)1;
    CHECK_STATUS(spf_plan_create(NULL, 4, &base, &p), SPF_ERR_INVALID_ARGUMENT);
    CHECK(p == NULL);
    CHECK_STATUS(spf_plan_create(a, 4, &base, NULL), SPF_ERR_INVALID_ARGUMENT);
    spf_matrix_free(a);
}

/* Fail the k-th allocation for k = 0, 1, ...: each failure is reported as
 * out of memory and leaks nothing, until the plan succeeds. */

static void test_alloc_failures(void)
{
    spf_matrix *a = gen_matrix(SPF_GEN_MAGNITUDE, 20, 30, 0.8, 9);
    spf_plan_options o;
    spf_plan_options_init(&o);
    o.strategy = SPF_STRATEGY_CPU;
    o.host_threads = 1;
    int succeeded = 0;
    for (int k = 0; k < 64 && !succeeded; k++) {
        budget b = {k, 0};
        spf_allocator al = budget_allocator(&b);
        spf_set_allocator(&al);
        spf_plan *p = NULL;
        spf_status st = spf_plan_create(a, 5, &o, &p);
        if (st == SPF_OK) {
            succeeded = 1;
            spf_plan_free(p);
        } else {
            CHECK_MSG(st == SPF_ERR_OUT_OF_MEMORY && p == NULL, "k = %d: %d %s", k, (int)st,
                      spf_last_error());
        }
        spf_set_allocator(NULL);
        CHECK_MSG(b.live == 0, "k = %d: %d allocations leaked", k, b.live);
    }
    CHECK(succeeded);
    spf_matrix_free(a);
}

static uint16_t f16_bits(float f)
{
    uint16_t h;
    dtype_from_float(SPF_DTYPE_F16, &f, &h, 1);
    return h;
}
static uint16_t bf16_bits(float f)
{
    uint16_t h;
    dtype_from_float(SPF_DTYPE_BF16, &f, &h, 1);
    return h;
}

static void test_dtype_conversions(void)
{
    CHECK(dtype_size(SPF_DTYPE_F32) == 4 && dtype_size(SPF_DTYPE_BF16) == 2);
    CHECK(strcmp(dtype_name(SPF_DTYPE_BF16), "bf16") == 0);
    CHECK(f16_bits(1.0f) == 0x3c00 && f16_bits(-2.0f) == 0xc000);
    CHECK(f16_bits(0.1f) == 0x2e66);           /* 0.0999755859375 */
    CHECK(f16_bits(65504.0f) == 0x7bff);       /* largest finite   */
    CHECK(f16_bits(65520.0f) == 0x7c00);       /* rounds to inf    */
    CHECK(f16_bits(5.9604645e-08f) == 0x0001); /* 2^-24: smallest subnormal */
    CHECK(f16_bits(2.9802322e-08f) == 0x0000); /* 2^-25: a tie, to even 0   */
    CHECK(f16_bits(1.0f + 1.0f / 2048) == 0x3c00);     /* tie to even (down) */
    CHECK(f16_bits(1.0f + 3.0f / 2048) == 0x3c02);     /* tie to even (up)   */
    CHECK(f16_bits(NAN) >= 0x7c01 && f16_bits(NAN) <= 0x7fff);
    CHECK(bf16_bits(1.0f) == 0x3f80 && bf16_bits(-0.5f) == 0xbf00);
    CHECK(bf16_bits(1.0f + 1.0f / 256) == 0x3f80);     /* tie to even */
    CHECK(bf16_bits(1.0f + 3.0f / 256) == 0x3f82);
    CHECK((bf16_bits(NAN) & 0x7fff) > 0x7f80);

    enum { COUNT = 4096 };
    static float x[COUNT], back[COUNT];
    static uint16_t h[COUNT];
    spf_fill_uniform(x, COUNT, 77);
    for (int i = 0; i < COUNT; i++)
        x[i] *= (float)(1 << (i % 12)); /* magnitudes up to 2^11 */
    const spf_dtype types[] = {SPF_DTYPE_F16, SPF_DTYPE_BF16};
    const double ulp[] = {1.0 / 2048, 1.0 / 256}; /* half an ulp, relative */
    for (int t = 0; t < 2; t++) {
        dtype_from_float(types[t], x, h, COUNT);
        dtype_to_float(types[t], h, back, COUNT);
        double worst = 0.0;
        for (int i = 0; i < COUNT; i++) {
            double rel = fabs((double)back[i] - x[i]) / fabs((double)x[i]);
            worst = rel > worst ? rel : worst;
        }
        CHECK_MSG(worst <= ulp[t] && worst > ulp[t] / 4, "%s: worst relative error %g",
                  dtype_name(types[t]), worst);
    }
    float one = 0.75f, got = 0.0f;
    dtype_from_float(SPF_DTYPE_F32, &one, &got, 1);
    CHECK(got == 0.75f);
}

/* An operand packed in each dtype and layout and unpacked again is the
 * operand rounded to the dtype; dtype_round is that rounding. */
static void test_operand_packing(void)
{
    enum { R = 5, C = 7 };
    float x[R * C], rounded[R * C], back[R * C], scratch_f[R * C];
    uint32_t packed[R * C], scratch[R * C]; /* room for f32 elements */
    spf_fill_uniform(x, R * C, 41);
    const spf_dtype types[] = {SPF_DTYPE_F32, SPF_DTYPE_F16, SPF_DTYPE_BF16};
    for (int t = 0; t < 3; t++)
        for (int l = 0; l < 2; l++) {
            spf_layout layout = l ? SPF_LAYOUT_N_FIRST : SPF_LAYOUT_N_LAST;
            memcpy(rounded, x, sizeof x);
            dtype_round(types[t], rounded, R * C);
            operand_pack(types[t], layout, x, R, C, packed, scratch);
            operand_unpack(types[t], layout, packed, R, C, back, scratch_f);
            CHECK_MSG(memcmp(back, rounded, sizeof back) == 0, "%s %s: pack / unpack",
                      dtype_name(types[t]), spf_layout_name(layout));
            if (layout == SPF_LAYOUT_N_FIRST) { /* element (1, 2) is at 2·R + 1 */
                float e;
                dtype_to_float(types[t], (unsigned char *)packed + (2 * R + 1) * dtype_size(types[t]),
                               &e, 1);
                CHECK(e == rounded[1 * C + 2]);
            }
        }
}

int main(int argc, char **argv)
{
    test_options_init();
    test_cpu_plan();
    test_overlapping_buffers();
    test_no_device();
    test_cache_peek();
    test_cache_named();
    test_bad_options();
    test_alloc_failures();
    test_dtype_conversions();
    test_operand_packing();
    return check_report();
}
