/* The dense strategy on a machine without a GPU: the run-time loader of
 * cuBLASLt (a missing file named in the reason; every entry point of the
 * toolkit's real library resolved, which dlopen and dlsym do without a
 * GPU), the row's answers through the table (refusals with their reasons,
 * the roofline estimate), and the shared roofline peaks. The products
 * themselves are checked on the GPU by the driver over all strategies. */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "test_util.h"

#include "strategy/dense/cublaslt.h"
#include "strategy/roofline.h"
#include "strategy/strategy.h"

#include <glob.h>
#include <stdint.h>

/* Set before anything loads cuBLASLt: the process's load reads it once. */
#define MISSING_LIB "/nonexistent/libcublasLt.so.13"

static problem problem_of(const spf_matrix *a, int64_t n, spf_dtype dtype, spf_math math,
                          spf_layout c_layout, int bias, int relu)
{
    spf_plan_options o;
    spf_plan_options_init(&o);
    o.dtype = dtype;
    o.math = math;
    o.c_layout = c_layout;
    o.bias = bias;
    o.relu = relu;
    return problem_make(a, n, &o);
}

/* A device that claims to be there (an H100's figures), so supports() goes
 * past the device check on a machine without one. */
static spf_device_info fake_h100(void)
{
    spf_device_info d;
    memset(&d, 0, sizeof d);
    d.available = 1;
    snprintf(d.name, sizeof d.name, "fake H100");
    d.cc_major = 9;
    d.sm_count = 132;
    d.total_memory = (int64_t)80 << 30;
    return d;
}

#ifdef SPF_HAVE_CUDA
static void test_loader_missing(void)
{
    cublaslt_api api;
    char reason[512];
    CHECK(cublaslt_open(MISSING_LIB, &api, reason, sizeof reason) == 0);
    CHECK_MSG(strstr(reason, MISSING_LIB) != NULL, "reason \"%s\" does not name the file", reason);
    CHECK_MSG(strstr(reason, "cannot open") != NULL || strstr(reason, "No such file") != NULL,
              "reason \"%s\" does not say why", reason);
    CHECK(api.lib == NULL && api.Matmul == NULL);
    /* A short buffer gets a cut, terminated reason. */
    char tiny[8];
    CHECK(cublaslt_open(MISSING_LIB, &api, tiny, sizeof tiny) == 0);
    CHECK(strlen(tiny) == sizeof tiny - 1);

    /* The process's load, through $SPF_CUBLASLT (set in main). */
    CHECK(cublaslt_get(reason, sizeof reason) == NULL);
    CHECK_MSG(strstr(reason, MISSING_LIB) != NULL, "reason \"%s\"", reason);
}

static void test_loader_real(void)
{
    glob_t g;
    if (glob("/usr/local/cuda/lib64/libcublasLt.so*", 0, NULL, &g) != 0) {
        printf("SKIP (part): no /usr/local/cuda/lib64/libcublasLt.so* to load\n");
        return;
    }
    for (size_t i = 0; i < g.gl_pathc; i++) {
        cublaslt_api api;
        char reason[512] = "";
        int ok = cublaslt_open(g.gl_pathv[i], &api, reason, sizeof reason);
        CHECK_MSG(ok, "%s: %s", g.gl_pathv[i], reason);
        if (!ok)
            continue;
        CHECK(api.lib != NULL && strcmp(api.path, g.gl_pathv[i]) == 0);
        CHECK(api.Create && api.Destroy && api.GetVersion && api.GetStatusString);
        CHECK(api.MatmulDescInit_internal && api.MatmulDescSetAttribute);
        CHECK(api.MatrixLayoutInit_internal && api.MatmulPreferenceInit_internal);
        CHECK(api.MatmulPreferenceSetAttribute && api.MatmulAlgoGetHeuristic);
        CHECK(api.MatmulAlgoCheck && api.MatmulAlgoConfigGetAttribute && api.Matmul);
        /* Calls that need no GPU: the version (e.g. 130100 for 13.1.0),
         * a status string, and descriptors in caller storage. */
        size_t version = api.GetVersion();
        CHECK_MSG(version >= 120000, "cuBLASLt version %zu", version);
        const char *text = api.GetStatusString(CUBLAS_STATUS_NOT_SUPPORTED);
        CHECK(text != NULL && text[0] != '\0');
        cublasLtMatrixLayoutOpaque_t layout;
        CHECK(api.MatrixLayoutInit_internal(&layout, sizeof layout, CUDA_R_16F, 64, 32, 64) ==
              CUBLAS_STATUS_SUCCESS);
        cublasLtMatmulDescOpaque_t desc;
        CHECK(api.MatmulDescInit_internal(&desc, sizeof desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) ==
              CUBLAS_STATUS_SUCCESS);
        cublaslt_close(&api);
        CHECK(api.lib == NULL);
    }
    globfree(&g);
}
#endif

static void test_row(void)
{
    const strategy *row = strategy_find(SPF_STRATEGY_DENSE);
    CHECK(row != NULL);
    if (!row)
        return;
    CHECK(strcmp(row->name, "dense") == 0 && row->on_device == 1);
    CHECK(strcmp(spf_strategy_name(SPF_STRATEGY_DENSE), "dense") == 0);
    CHECK(row->supports && row->estimate_us && row->build && row->launch && row->release &&
          row->encode && row->decode);

    spf_matrix *a = gen_matrix(SPF_GEN_UNIFORM, 37, 53, 0.9, 3);
    problem p = problem_of(a, 49, SPF_DTYPE_F16, SPF_MATH_DEFAULT, SPF_LAYOUT_N_FIRST, 1, 1);
    spf_plan_options o;
    spf_plan_options_init(&o);
    char reason[160];

    /* This machine's device (none) and no device at all. */
    spf_device_info dev;
    CHECK_OK(spf_device_query(0, &dev));
    reason[0] = '\0';
    CHECK(row->supports(&p, &dev, &o, reason, sizeof reason) == 0);
    CHECK_MSG(reason[0] != '\0', "empty reason");
    printf("dense on this machine: %s\n", reason);
    reason[0] = '\0';
    CHECK(row->supports(&p, NULL, &o, reason, sizeof reason) == 0 && reason[0] != '\0');

#ifdef SPF_HAVE_CUDA
    /* Past the device check: the option, the math mapping, the memory
     * bound, then the library ($SPF_CUBLASLT names a missing file). */
    spf_device_info h100 = fake_h100();
    o.dense = 0;
    CHECK(row->supports(&p, &h100, &o, reason, sizeof reason) == 0);
    CHECK_MSG(strcmp(reason, "forbidden by the options (dense = 0)") == 0, "%s", reason);
    o.dense = 1;
    problem bad = problem_of(a, 49, SPF_DTYPE_F32, SPF_MATH_F16X2, SPF_LAYOUT_N_LAST, 0, 0);
    CHECK(row->supports(&bad, &h100, &o, reason, sizeof reason) == 0);
    CHECK_MSG(strstr(reason, "no cuBLASLt types for f32 with math f16x2") != NULL, "%s", reason);
    spf_device_info small = h100;
    small.total_memory = 4096; /* the dense copy is 37·53·2 = 3922 bytes */
    CHECK(row->supports(&p, &small, &o, reason, sizeof reason) == 0);
    CHECK_MSG(strstr(reason, "for the dense copy of A, over half of the device's") != NULL, "%s",
              reason);
    CHECK(row->supports(&p, &h100, &o, reason, sizeof reason) == 0);
    CHECK_MSG(strncmp(reason, "unavailable: ", 13) == 0 && strstr(reason, MISSING_LIB) != NULL,
              "%s", reason);

    /* build without the library: refused as unsupported, nothing held. */
    strategy_env env = {&o, &h100, NULL, NULL};
    spf_plan_info info;
    memset(&info, 0, sizeof info);
    void *state = (void *)&info;
    CHECK_STATUS(row->build(&p, &env, &state, &info), SPF_ERR_UNSUPPORTED);
    CHECK(state == NULL);
    CHECK_DETAIL("unavailable");
#else
    CHECK(strcmp(reason, "built without CUDA") == 0);
#endif
    row->release(NULL);
    spf_matrix_free(a);
}

static void test_estimate(void)
{
    const strategy *row = strategy_find(SPF_STRATEGY_DENSE);
    if (!row)
        return;
    spf_matrix *a = gen_matrix(SPF_GEN_UNIFORM, 1024, 1024, 0.9, 4);
    spf_device_info h100 = fake_h100(), a100 = fake_h100();
    a100.cc_major = 8;
    a100.sm_count = 108;
    const spf_device_info *devs[] = {NULL, &h100, &a100};
    const spf_dtype dtypes[] = {SPF_DTYPE_F32, SPF_DTYPE_F16, SPF_DTYPE_BF16};
    for (int d = 0; d < 3; d++)
        for (int t = 0; t < 3; t++) {
            double prev = 0;
            for (int64_t n = 1; n <= 8192; n *= 4) {
                problem p = problem_of(a, n, dtypes[t], SPF_MATH_DEFAULT, SPF_LAYOUT_N_LAST, 0, 0);
                double us = row->estimate_us(&p, devs[d]);
                CHECK_MSG(us > 0 && us > prev, "dev %d dtype %d n %lld: %g after %g", d, t,
                          (long long)n, us, prev);
                prev = us;
            }
        }
    /* The A100 is slower than the H100; f16 faster than exact f32 at a
     * compute-bound N; TF32 between them; the bias kernel (f16, C n_last)
     * costs more than the epilogue's bias would not. */
    problem f32 = problem_of(a, 8192, SPF_DTYPE_F32, SPF_MATH_DEFAULT, SPF_LAYOUT_N_LAST, 0, 0);
    problem tf32 = problem_of(a, 8192, SPF_DTYPE_F32, SPF_MATH_TF32, SPF_LAYOUT_N_LAST, 0, 0);
    problem f16 = problem_of(a, 8192, SPF_DTYPE_F16, SPF_MATH_DEFAULT, SPF_LAYOUT_N_LAST, 0, 0);
    problem f16_bias = problem_of(a, 8192, SPF_DTYPE_F16, SPF_MATH_DEFAULT, SPF_LAYOUT_N_LAST, 1, 0);
    CHECK(row->estimate_us(&f32, &a100) > row->estimate_us(&f32, &h100));
    CHECK(row->estimate_us(&f16, &h100) < row->estimate_us(&tf32, &h100));
    CHECK(row->estimate_us(&tf32, &h100) < row->estimate_us(&f32, &h100));
    CHECK(row->estimate_us(&f16_bias, &h100) > row->estimate_us(&f16, &h100));
    spf_matrix_free(a);
}

static void test_roofline(void)
{
    spf_device_info h100 = fake_h100();
    double f16 = roofline_peak_flops(&h100, SPF_DTYPE_F16, SPF_MATH_DEFAULT, ROOFLINE_TENSOR_CORES);
    CHECK_NEAR(f16 / 1e12, 989, 1);
    CHECK_NEAR(roofline_peak_flops(NULL, SPF_DTYPE_BF16, SPF_MATH_DEFAULT, ROOFLINE_TENSOR_CORES), f16,
               1);
    CHECK_NEAR(roofline_peak_flops(&h100, SPF_DTYPE_F32, SPF_MATH_TF32, ROOFLINE_TENSOR_CORES) * 2,
               f16, 1);
    double f32 = roofline_peak_flops(&h100, SPF_DTYPE_F32, SPF_MATH_DEFAULT, ROOFLINE_CUDA_CORES);
    CHECK_NEAR(f32 / 1e12, 67, 0.5);
    /* No exact-fp32 tensor cores; packed half2 on CUDA cores doubles. */
    CHECK(roofline_peak_flops(&h100, SPF_DTYPE_F32, SPF_MATH_DEFAULT, ROOFLINE_TENSOR_CORES) == f32);
    CHECK(roofline_peak_flops(&h100, SPF_DTYPE_F16, SPF_MATH_F16X2, ROOFLINE_CUDA_CORES) == 2 * f32);
    CHECK_NEAR(roofline_bandwidth(&h100) / 1e12, 3.35, 0.01);
    /* Fewer SMs, proportionally less. */
    spf_device_info pcie = h100;
    pcie.sm_count = 66;
    CHECK_NEAR(roofline_bandwidth(&pcie) * 2, roofline_bandwidth(&h100), 1);
    /* max(compute, memory) plus launches. */
    CHECK_NEAR(roofline_us(2e6, 1e3, 1e12, 1e12, 1), 2 + ROOFLINE_LAUNCH_US, 1e-9);
    CHECK_NEAR(roofline_us(1e3, 3e6, 1e12, 1e12, 2), 3 + 2 * ROOFLINE_LAUNCH_US, 1e-9);
}

int main(int argc, char **argv)
{
    setenv("SPF_CUBLASLT", MISSING_LIB, 1);
#ifdef SPF_HAVE_CUDA
    test_loader_missing();
    test_loader_real();
#endif
    test_row();
    test_estimate();
    test_roofline();
    return check_report();
}
