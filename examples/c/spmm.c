/*
 * spmm: C = A·B with an spforge plan, checked against the library's CPU
 * reference accumulated in double.
 *
 *   spmm [MATRIX [N]]     MATRIX: .mtx, .smtx or .npy; without one, a
 *                         512×512 matrix at 90 % sparsity is generated;
 *                         N: columns of B (default 64)
 *
 * With a CUDA device, and built with SPMM_WITH_CUDA (CMakeLists.txt does so
 * when it finds the CUDA toolkit), the plan is spforge's choice (AUTO) on
 * device buffers; otherwise it is the CPU strategy on host buffers. Prints
 * the shape, the strategy and the relative error; exits 0 when the error is
 * within the tolerance, 1 otherwise.
 *
 * Build against an installed spforge (README.md, "Install"), with CMake:
 *   cmake -S examples/c -B build-example -DCMAKE_PREFIX_PATH=<prefix>
 *   cmake --build build-example && build-example/spmm
 * or with pkg-config (CPU path only; the rpath lets it find libspforge.so.0
 * where the loader would not look; PKG_CONFIG_PATH=<prefix>/lib/pkgconfig
 * unless the prefix is a system one):
 *   cc examples/c/spmm.c -o spmm $(pkg-config --cflags --libs spforge) \
 *      -Wl,-rpath,$(pkg-config --variable=libdir spforge)
 */
#include <spforge.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef SPMM_WITH_CUDA
#include <cuda_runtime_api.h> /* the C API of the CUDA runtime */
#endif

/* The library's own tolerances for f32 (README.md, "Usage"). */
#define TOLERANCE_CPU 1e-6
#define TOLERANCE_GPU 1e-5

#ifdef SPMM_WITH_CUDA
/* B to the device, the plan on the default stream, C back. Returns 0 on
 * success; on failure prints a CUDA error, or leaves spforge's in *st. */
static int execute_on_gpu(const spf_plan *plan, const float *b, size_t b_count, float *c,
                          size_t c_count, spf_status *st)
{
    void *d_b = NULL, *d_c = NULL;
    cudaError_t e = cudaMalloc(&d_b, b_count * sizeof *b);
    if (e == cudaSuccess)
        e = cudaMalloc(&d_c, c_count * sizeof *c);
    if (e == cudaSuccess)
        e = cudaMemcpy(d_b, b, b_count * sizeof *b, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) {
        *st = spf_plan_execute(plan, d_b, d_c, NULL, NULL); /* NULL: the default stream */
        if (*st == SPF_OK) /* cudaMemcpy waits for the kernel on the default stream */
            e = cudaMemcpy(c, d_c, c_count * sizeof *c, cudaMemcpyDeviceToHost);
    }
    cudaFree(d_b);
    cudaFree(d_c);
    if (e != cudaSuccess)
        fprintf(stderr, "spmm: CUDA: %s\n", cudaGetErrorString(e));
    return e == cudaSuccess && *st == SPF_OK ? 0 : 1;
}
#endif

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : NULL;
    long long n = 64;
    spf_matrix *a = NULL;
    spf_plan *plan = NULL;
    float *b = NULL, *c = NULL;
    double *ref = NULL;
    spf_device_info dev;
    spf_plan_options opt;
    spf_plan_info info = {.size = sizeof info}; /* growable: the caller sets size */
    size_t b_count, c_count;
    double err, tol;
    int gpu = 0, rc = 1;
    spf_status st;

    if (argc > 2) {
        char *end;
        n = strtoll(argv[2], &end, 10);
        if (*end != '\0')
            n = 0;
    }
    if (argc > 3 || n < 1 || n > INT32_MAX) {
        fprintf(stderr, "usage: spmm [MATRIX [N]]   (MATRIX .mtx, .smtx or .npy; N in 1..%d)\n",
                INT32_MAX);
        return 2;
    }

    if (path) {
        st = spf_matrix_read(path, NULL, &a); /* pattern-only files get values from seed 1 */
    } else {
        spf_gen_options gen;
        spf_gen_options_init(&gen);
        gen.rows = gen.cols = 512;
        gen.sparsity = 0.9;
        st = spf_matrix_generate(&gen, &a);
    }
    if (st != SPF_OK)
        goto fail;

    /* rows, cols ≤ INT32_MAX and n too: the counts fit a 64-bit size_t. */
    b_count = (size_t)spf_matrix_cols(a) * (size_t)n;
    c_count = (size_t)spf_matrix_rows(a) * (size_t)n;
    b = malloc((b_count ? b_count : 1) * sizeof *b);
    c = malloc((c_count ? c_count : 1) * sizeof *c);
    ref = malloc((c_count ? c_count : 1) * sizeof *ref);
    if (!b || !c || !ref) {
        fprintf(stderr, "spmm: out of memory for B and C of %lld columns\n", n);
        goto done;
    }
    spf_fill_uniform(b, (int64_t)b_count, 7); /* B uniform in [-1, 1] */

    st = spf_device_query(0, &dev); /* no GPU is not an error: dev.available = 0 */
    if (st != SPF_OK)
        goto fail;
#ifdef SPMM_WITH_CUDA
    gpu = dev.available;
#endif

    spf_plan_options_init(&opt); /* AUTO, f32, B K×N, C M×N */
    if (!gpu)
        opt.strategy = SPF_STRATEGY_CPU; /* the reference, on host buffers */
    st = spf_plan_create(a, n, &opt, &plan);
    if (st != SPF_OK)
        goto fail;

    if (gpu) {
#ifdef SPMM_WITH_CUDA
        if (execute_on_gpu(plan, b, b_count, c, c_count, &st) != 0) {
            if (st != SPF_OK)
                goto fail;
            goto done;
        }
#endif
    } else {
        st = spf_plan_execute(plan, b, c, NULL, NULL);
        if (st != SPF_OK)
            goto fail;
    }

    st = spf_reference_spmm_f64(a, n, b, ref, NULL, 0, 0);
    if (st == SPF_OK)
        st = spf_plan_get_info(plan, &info);
    if (st != SPF_OK)
        goto fail;
    err = spf_relative_error(c, ref, (int64_t)c_count);
    tol = gpu ? TOLERANCE_GPU : TOLERANCE_CPU;

    printf("spforge %s\n", spf_version());
    if (gpu)
        printf("device: %s\n", dev.name);
    else if (dev.available)
        printf("device: %s, unused (spmm built without SPMM_WITH_CUDA): the CPU strategy\n", dev.name);
    else
        printf("device: none (%s): the CPU strategy\n", dev.reason);
    printf("A: %lld x %lld, %lld nonzeros; N = %lld\n", (long long)spf_matrix_rows(a),
           (long long)spf_matrix_cols(a), (long long)spf_matrix_nnz(a), n);
    printf("plan: %s%s%s\n", spf_strategy_name(info.strategy), info.config[0] ? ", " : "",
           info.config);
    printf("relative error: %.3g (tolerance %.0e): %s\n", err, tol, err <= tol ? "ok" : "TOO LARGE");
    rc = err <= tol ? 0 : 1;
    goto done;

fail:
    fprintf(stderr, "spmm: %s: %s\n", spf_status_string(st), spf_last_error());
done:
    spf_plan_free(plan);
    spf_matrix_free(a);
    free(b);
    free(c);
    free(ref);
    return rc;
}
