/* Random inputs come from one fixed seed, so a failing check reproduces. */
#include "gpu/selfcheck.h"

#include "core/alloc.h"
#include "core/error.h"
#include "gpu/dtype.h"

#include <string.h>

enum { SELFCHECK_SEED = 0x5e1fc4ec };

double selfcheck_tolerance(spf_dtype dtype, int f16x2_accumulate)
{
    if (dtype == SPF_DTYPE_F32)
        return 1e-5;
    return f16x2_accumulate ? 5e-2 : 1e-2;
}

#ifdef SPF_HAVE_CUDA
#include "gpu/cuda_check.h"

/* cudaMalloc of count elements (at least one, so a zero-sized operand still
 * has an address), with the product checked. */
static spf_status device_alloc(void **p, int64_t count, size_t elem)
{
    if (count < 0 || (uint64_t)count > SIZE_MAX / elem - 1)
        return FAIL(SPF_ERR_OVERFLOW, "%lld elements of %zu bytes", (long long)count, elem);
    return CUDA_CHECK(cudaMalloc(p, (size_t)(count ? count : 1) * elem));
}

static spf_status host_alloc(void **p, int64_t count, size_t elem)
{
    *p = mem_alloc_array((size_t)(count ? count : 1), elem);
    if (!*p)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "%lld elements of %zu bytes", (long long)count, elem);
    return SPF_OK;
}

spf_status selfcheck_prepare(const spf_matrix *a, int64_t n, spf_dtype dtype, int bias, int relu,
                             int threads, selfcheck *out)
{
    spf_status status = SPF_OK;
    float *b32 = NULL, *bias32 = NULL;
    void *b_raw = NULL;
    memset(out, 0, sizeof *out);
    int64_t m = spf_matrix_rows(a), k = spf_matrix_cols(a);
    if ((k && n > INT64_MAX / k) || (m && n > INT64_MAX / m))
        return FAIL(SPF_ERR_OVERFLOW, "%lld × %lld × %lld operands", (long long)m, (long long)k,
                    (long long)n);
    out->m = m, out->k = k, out->n = n, out->dtype = dtype;
    size_t es = dtype_size(dtype);

    TRY(host_alloc((void **)&b32, k * n, sizeof *b32));
    TRY(host_alloc(&b_raw, k * n, es));
    spf_fill_uniform(b32, k * n, SELFCHECK_SEED);
    /* The reference sees B as the kernel does, after rounding to dtype, so
     * the check measures the kernel's arithmetic and C's storage only. */
    dtype_from_float(dtype, b32, b_raw, k * n);
    dtype_to_float(dtype, b_raw, b32, k * n);
    if (bias) {
        TRY(host_alloc((void **)&bias32, m, sizeof *bias32));
        spf_fill_uniform(bias32, m, SELFCHECK_SEED + 1);
        TRY(device_alloc((void **)&out->bias, m, sizeof(float)));
        TRY(CUDA_CHECK(cudaMemcpy(out->bias, bias32, (size_t)m * sizeof(float),
                                  cudaMemcpyHostToDevice)));
    }
    TRY(host_alloc((void **)&out->ref, m * n, sizeof *out->ref));
    TRY(spf_reference_spmm_f64(a, n, b32, out->ref, bias32, relu, threads));
    TRY(host_alloc(&out->c_host, m * n, es));
    TRY(host_alloc((void **)&out->c_f32, m * n, sizeof(float)));
    TRY(device_alloc(&out->b, k * n, es));
    TRY(device_alloc(&out->c, m * n, es));
    TRY(CUDA_CHECK(cudaMemcpy(out->b, b_raw, (size_t)(k * n) * es, cudaMemcpyHostToDevice)));
fail:
    mem_free(b32);
    mem_free(b_raw);
    mem_free(bias32);
    if (status != SPF_OK)
        selfcheck_release(out);
    return status;
}

spf_status selfcheck_measure(selfcheck *s, selfcheck_launch_fn fn, void *ctx, double *error)
{
    spf_status status = SPF_OK;
    size_t bytes = (size_t)(s->m * s->n) * dtype_size(s->dtype);
    /* All-ones bytes are NaN in f32, f16 and bf16 alike. */
    TRY(CUDA_CHECK(cudaMemset(s->c, 0xff, bytes)));
    TRY(fn(ctx, s->b, s->c, s->bias, NULL));
    TRY(CUDA_CHECK(cudaStreamSynchronize(NULL)));
    TRY(CUDA_CHECK(cudaMemcpy(s->c_host, s->c, bytes, cudaMemcpyDeviceToHost)));
    dtype_to_float(s->dtype, s->c_host, s->c_f32, s->m * s->n);
    *error = spf_relative_error(s->c_f32, s->ref, s->m * s->n);
fail:
    return status;
}

void selfcheck_release(selfcheck *s)
{
    if (!s)
        return;
    cuda_free_quiet(s->b);
    cuda_free_quiet(s->c);
    cuda_free_quiet(s->bias);
    mem_free(s->ref);
    mem_free(s->c_host);
    mem_free(s->c_f32);
    memset(s, 0, sizeof *s);
}

#else

spf_status selfcheck_prepare(const spf_matrix *a, int64_t n, spf_dtype dtype, int bias, int relu,
                             int threads, selfcheck *out)
{
    (void)a, (void)n, (void)dtype, (void)bias, (void)relu, (void)threads;
    memset(out, 0, sizeof *out);
    return FAIL(SPF_ERR_NO_DEVICE, "built without CUDA");
}

spf_status selfcheck_measure(selfcheck *s, selfcheck_launch_fn fn, void *ctx, double *error)
{
    (void)s, (void)fn, (void)ctx, (void)error;
    return FAIL(SPF_ERR_NO_DEVICE, "built without CUDA");
}

void selfcheck_release(selfcheck *s)
{
    if (s)
        memset(s, 0, sizeof *s);
}

#endif
