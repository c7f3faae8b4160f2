/* The proxies (src/codegen/proxy.c, LO-SpMM §5) on the PTX interpreter of
 * tests/ptx_interp.h, every block and thread of a launch per n1 they stand
 * for: a proxy computes nothing useful, but it runs on the search's real
 * buffers, so every global access must stay inside B, C and bias, every
 * store inside C, and the grid must run to its end (bar.sync reached by
 * every thread of the K split). Shapes with every dtype, f16x2, K splits of
 * 1, 2 and 4, m not a multiple of m1, n not a multiple of n1, and m < m1. */
#define _POSIX_C_SOURCE 200809L /* strdup, strtok */

#include "test_util.h"

#include "strategy/unrolled/proxy.h"
#include "ptx_interp.h"

#include <stdint.h>

static void run_proxy(int64_t rows, int64_t k, double density, int64_t n, spf_kernel_config shape,
                      const int32_t *n1, int n1_count, spf_dtype dtype, int f16x2, int bias,
                      uint64_t seed)
{
    spf_matrix *a = gen_matrix(SPF_GEN_UNIFORM, rows, k, 1 - density, seed);
    proxy_spec q = {.a = a, .n = n, .shape = shape, .n1 = n1, .n1_count = n1_count,
                    .dtype = dtype, .f16x2_accumulate = f16x2, .bias = bias, .relu = 1, .sm = 90};
    ptx_program p;
    proxy_info info;
    CHECK_OK(proxy_generate(&q, &p, &info));
    load_program(&p);
    CHECK_EQ_I64(cl_count, info.tiles); /* one cluster id per real block row */
    size_t es = dtype == SPF_DTYPE_F32 ? 4 : 2;
    memory m = {0};
    m.b_bytes = (size_t)(k * n) * es;
    m.c_bytes = (size_t)(rows * n) * es;
    m.bias_bytes = bias ? (size_t)rows * 4 : 0;
    m.b = calloc(m.b_bytes + 1, 1);
    m.c = calloc(m.c_bytes + 1, 1);
    m.bias = bias ? calloc(m.bias_bytes, 1) : NULL;
    m.c_written = calloc(m.c_bytes + 1, 1);
    m.shared_bytes = info.reduction_bytes ? (size_t)info.reduction_bytes : 16;
    m.shared = malloc(m.shared_bytes);
    for (int i = 0; i < n1_count; i++) {
        ptx_program launch = p;
        launch.grid[0] = (unsigned)((n + n1[i] - 1) / n1[i]);
        launch.block[0] = (unsigned)(n1[i] / shape.v * shape.ksplit);
        m.proxy_n1 = (uint32_t)n1[i];
        m.faults = 0;
        int r = run_grid(&launch, &m);
        CHECK_MSG(r == 0 && m.faults == 0,
                  "%s n1 %d (%lldx%lld, N %lld): run %d, %d bad accesses", p.entry, (int)n1[i],
                  (long long)rows, (long long)k, (long long)n, r, m.faults);
    }
    printf("%s: %d clusters for %d tiles, n1 of %d values: bounds kept\n", p.entry,
           (int)info.clusters, (int)info.tiles, n1_count);
    free(m.b);
    free(m.c);
    free(m.bias);
    free(m.c_written);
    free(m.shared);
    free_program();
    ptx_program_free(&p);
    spf_matrix_free(a);
}

int main(int argc, char **argv)
{
    const int32_t n1_v1[] = {32, 64, 128}, n1_v2[] = {64, 128, 256}, n1_v4[] = {128, 256};
    run_proxy(100, 200, 0.1, 64, (spf_kernel_config){8, 0, 1, 2, 1}, n1_v1, 2, SPF_DTYPE_F32, 0,
              1, 1);
    run_proxy(70, 130, 0.15, 96, (spf_kernel_config){16, 0, 1, 1, 2}, n1_v1, 3, SPF_DTYPE_F32, 0,
              0, 2);
    run_proxy(64, 300, 0.1, 130, (spf_kernel_config){4, 0, 2, 3, 4}, n1_v2, 2, SPF_DTYPE_BF16, 0,
              1, 3);
    run_proxy(5, 64, 0.3, 256, (spf_kernel_config){8, 0, 4, 2, 2}, n1_v4, 2, SPF_DTYPE_F16, 1, 1,
              4);
    run_proxy(37, 90, 0.2, 49, (spf_kernel_config){2, 0, 1, 0, 1}, n1_v1, 2, SPF_DTYPE_F16, 0, 1,
              5);
    return check_report();
}
