/* Random inputs come from one fixed seed, so a failing check reproduces. */
#include "gpu/selfcheck.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/matrix.h"
#include "core/rng.h"
#include "core/dtype.h"
#include "ref/spmm.h"

#include <math.h>
#include <string.h>

enum { SELFCHECK_SEED = 0x5e1fc4ec };

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

/* The rows to check (selfcheck.h): all when the reference is cheap, else
 * the first, the last and one random row per band, ascending. */
static spf_status rows_choose(const spf_matrix *a, int64_t n, selfcheck *s)
{
    int64_t m = a->rows;
    s->rows_checked = m;
    if ((double)a->nnz * (double)n <= SELFCHECK_FULL_MACS || m <= SELFCHECK_STRATA + 2)
        return SPF_OK;
    s->rows = mem_alloc_array(SELFCHECK_STRATA + 2, sizeof *s->rows);
    if (!s->rows)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "%d sampled rows", SELFCHECK_STRATA + 2);
    rng r;
    rng_seed(&r, SELFCHECK_SEED + 2);
    int64_t count = 0;
    s->rows[count++] = 0;
    for (int64_t band = 0; band < SELFCHECK_STRATA; band++) {
        int64_t lo = band * m / SELFCHECK_STRATA, hi = (band + 1) * m / SELFCHECK_STRATA;
        int64_t row = lo + (int64_t)rng_below(&r, (uint64_t)(hi - lo));
        if (row > s->rows[count - 1])
            s->rows[count++] = row;
    }
    if (m - 1 > s->rows[count - 1])
        s->rows[count++] = m - 1;
    s->rows_checked = count;
    return SPF_OK;
}

/* The reference of the rows checked: the product of the matrix of those
 * rows (and their bias), so its cost follows the sample. */
static spf_status reference_rows(const spf_matrix *a, int64_t n, const float *b32,
                                 const float *bias32, int relu, int threads, selfcheck *s)
{
    if (!s->rows)
        return spf_reference_spmm_f64(a, n, b32, s->ref, bias32, relu, threads);
    spf_status status = SPF_OK;
    spf_matrix *sub = NULL;
    float *sub_bias = NULL;
    int64_t nnz = 0;
    for (int64_t i = 0; i < s->rows_checked; i++)
        nnz += a->row_ptr[s->rows[i] + 1] - a->row_ptr[s->rows[i]];
    TRY(matrix_alloc(s->rows_checked, a->cols, nnz, &sub));
    sub->row_ptr[0] = 0;
    for (int64_t i = 0; i < s->rows_checked; i++) {
        int64_t from = a->row_ptr[s->rows[i]], len = a->row_ptr[s->rows[i] + 1] - from;
        memcpy(sub->col_idx + sub->row_ptr[i], a->col_idx + from, (size_t)len * sizeof(int32_t));
        memcpy(sub->values + sub->row_ptr[i], a->values + from, (size_t)len * sizeof(float));
        sub->row_ptr[i + 1] = sub->row_ptr[i] + len;
    }
    if (bias32) {
        TRY(host_alloc((void **)&sub_bias, s->rows_checked, sizeof *sub_bias));
        for (int64_t i = 0; i < s->rows_checked; i++)
            sub_bias[i] = bias32[s->rows[i]];
    }
    TRY(spf_reference_spmm_f64(sub, n, b32, s->ref, sub_bias, relu, threads));
fail:
    spf_matrix_free(sub);
    mem_free(sub_bias);
    return status;
}

spf_status selfcheck_prepare(const problem *p, int threads, selfcheck *out)
{
    spf_status status = SPF_OK;
    float *b32 = NULL, *bias32 = NULL;
    void *b_packed = NULL, *scratch = NULL;
    memset(out, 0, sizeof *out);
    const spf_matrix *a = p->a;
    int64_t m = p->m, k = p->k, n = p->n;
    spf_dtype dtype = p->dtype;
    int bias = p->bias, relu = p->relu;
    if ((k && n > INT64_MAX / k) || (m && n > INT64_MAX / m))
        return FAIL(SPF_ERR_OVERFLOW, "%lld × %lld × %lld operands", (long long)m, (long long)k,
                    (long long)n);
    out->m = m, out->k = k, out->n = n, out->dtype = dtype;
    out->b_layout = p->b_layout, out->c_layout = p->c_layout;
    size_t es = dtype_size(dtype);

    TRY(host_alloc((void **)&b32, k * n, sizeof *b32));
    spf_fill_uniform(b32, k * n, SELFCHECK_SEED);
    /* The reference sees B as the kernel does, after rounding to dtype, so
     * the check measures the kernel's arithmetic and C's storage only. */
    dtype_round(dtype, b32, k * n);
    if (bias) {
        TRY(host_alloc((void **)&bias32, m, sizeof *bias32));
        spf_fill_uniform(bias32, m, SELFCHECK_SEED + 1);
        TRY(device_alloc((void **)&out->bias, m, sizeof(float)));
        TRY(CUDA_CHECK(cudaMemcpy(out->bias, bias32, (size_t)m * sizeof(float),
                                  cudaMemcpyHostToDevice)));
    }
    TRY(rows_choose(a, n, out));
    out->bias_norm = ref_bias_norm(bias32, out->rows, out->rows_checked, n);
    TRY(host_alloc((void **)&out->ref, out->rows_checked * n, sizeof *out->ref));
    TRY(reference_rows(a, n, b32, bias32, relu, threads, out));
    TRY(host_alloc(&out->c_host, m * n, es));
    TRY(host_alloc((void **)&out->c_f32, m * n, sizeof(float)));
    if (p->c_layout == SPF_LAYOUT_N_FIRST)
        TRY(host_alloc((void **)&out->c_tmp, m * n, sizeof(float)));
    TRY(device_alloc(&out->b, k * n, es));
    TRY(device_alloc(&out->c, m * n, es));
    TRY(host_alloc(&b_packed, k * n, es));
    if (p->b_layout == SPF_LAYOUT_N_FIRST)
        TRY(host_alloc(&scratch, k * n, es));
    operand_pack(dtype, p->b_layout, b32, k, n, b_packed, scratch); /* as the kernel takes it */
    TRY(CUDA_CHECK(cudaMemcpy(out->b, b_packed, (size_t)(k * n) * es, cudaMemcpyHostToDevice)));
fail:
    mem_free(b32);
    mem_free(b_packed);
    mem_free(scratch);
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
    operand_unpack(s->dtype, s->c_layout, s->c_host, s->m, s->n, s->c_f32, s->c_tmp);
    /* every output written (the NaN poison gone), then the rows checked
     * gathered to the front, in place (they ascend), against the reference */
    for (int64_t i = 0; i < s->m * s->n; i++)
        if (!isfinite(s->c_f32[i])) {
            *error = INFINITY;
            return SPF_OK;
        }
    for (int64_t i = 0; s->rows && i < s->rows_checked; i++)
        memmove(s->c_f32 + i * s->n, s->c_f32 + s->rows[i] * s->n, (size_t)s->n * sizeof(float));
    *error = relative_error_biased(s->c_f32, s->ref, s->rows_checked * s->n, s->bias_norm);
fail:
    return status;
}

spf_status selfcheck_set_timing(selfcheck *s, int cold)
{
    s->cold = cold;
    if (!cold || s->flush)
        return SPF_OK;
    l2_flush *f = mem_calloc(1, sizeof *f);
    if (!f)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "the L2 flush");
    spf_status st = l2_flush_make(f);
    if (st != SPF_OK) {
        mem_free(f);
        return st;
    }
    s->flush = f;
    return SPF_OK;
}

/* A plan's choices are timed in rounds of 250 µs rather than the default
 * 500: cold, a round holds at least 8 launches after as many flushes
 * (about 30 µs each), so most candidates fill it with the minimum anyway,
 * and a plan times dozens of configs. */
enum { PLAN_ROUND_US = 250 };

void selfcheck_timing(const selfcheck *s, timing_options *out)
{
    timing_options_init(out);
    out->target_round_us = PLAN_ROUND_US;
    out->cold = s->cold;
    out->flush = s->cold ? s->flush : NULL;
}

void selfcheck_release(selfcheck *s)
{
    if (!s)
        return;
    l2_flush_release(s->flush);
    mem_free(s->flush);
    cuda_free_quiet(s->b);
    cuda_free_quiet(s->c);
    cuda_free_quiet(s->bias);
    mem_free(s->rows);
    mem_free(s->ref);
    mem_free(s->c_host);
    mem_free(s->c_f32);
    mem_free(s->c_tmp);
    memset(s, 0, sizeof *s);
}

#else

spf_status selfcheck_prepare(const problem *p, int threads, selfcheck *out)
{
    (void)p, (void)threads;
    memset(out, 0, sizeof *out);
    return FAIL(SPF_ERR_NO_DEVICE, "built without CUDA");
}

spf_status selfcheck_set_timing(selfcheck *s, int cold)
{
    (void)s, (void)cold;
    return FAIL(SPF_ERR_NO_DEVICE, "built without CUDA");
}

void selfcheck_timing(const selfcheck *s, timing_options *out)
{
    (void)s;
    timing_options_init(out);
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
