#define _POSIX_C_SOURCE 200809L

#include "gpu/host_run.h"

#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"

#ifdef SPF_HAVE_CUDA

#include "gpu/cuda_check.h"

#include <cuda_runtime_api.h>

typedef struct launch_ctx {
    const spf_plan *plan;
    const void *b;
    void *c;
    const float *bias;
} launch_ctx;

static spf_status launch(void *ctx, void *stream)
{
    const launch_ctx *l = ctx;
    return spf_plan_execute(l->plan, l->b, l->c, l->bias, stream);
}

/* count floats of src in dtype's elements at a new device array *dst
 * (through host scratch), or nothing when src is NULL. */
spf_status host_stage(spf_dtype dtype, const float *src, int64_t count, void **dst, void *stream)
{
    *dst = NULL;
    if (!src)
        return SPF_OK;
    spf_status status = SPF_OK;
    const size_t bytes = (size_t)(count > 0 ? count : 1) * dtype_size(dtype);
    void *host = mem_alloc(bytes);
    if (!host)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "staging %lld elements", (long long)count);
    dtype_from_float(dtype, src, host, count);
    TRY(CUDA_CHECK(cudaMalloc(dst, bytes)));
    TRY(CUDA_CHECK(cudaMemcpyAsync(*dst, host, bytes, cudaMemcpyHostToDevice, stream)));
    TRY(CUDA_CHECK(cudaStreamSynchronize(stream)));
fail:
    mem_free(host);
    return status;
}

spf_status host_run_plan(const spf_plan *plan, int64_t m, int64_t k, int64_t n, const float *b,
                         float *c, const float *bias, const timing_options *topt,
                         timing_result *timing)
{
    spf_status status = SPF_OK;
    void *db = NULL, *dc = NULL, *dbias = NULL, *hb = NULL, *hc = NULL, *bt = NULL;
    float *ct = NULL;
    cudaStream_t stream = NULL;
    spf_plan_info info = {.size = sizeof info};
    TRY(spf_plan_get_info(plan, &info));
    size_t es = dtype_size(info.dtype);
    size_t b_bytes = (size_t)(k * n) * es, c_bytes = (size_t)(m * n) * es;
    int b_first = info.b_layout == SPF_LAYOUT_N_FIRST, c_first = info.c_layout == SPF_LAYOUT_N_FIRST;
    hb = mem_alloc(b_bytes ? b_bytes : 1);
    bt = b_first ? mem_alloc(b_bytes ? b_bytes : 1) : NULL;
    hc = mem_alloc(c_bytes ? c_bytes : 1);
    ct = c_first ? mem_alloc_array((size_t)(m * n > 0 ? m * n : 1), sizeof *ct) : NULL;
    if (!hb || !hc || (b_first && !bt) || (c_first && !ct))
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "staging B and C: %lld and %lld elements",
                  (long long)(k * n), (long long)(m * n));
    operand_pack(info.dtype, info.b_layout, b, k, n, hb, bt);
    TRY(CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)));
    TRY(CUDA_CHECK(cudaMalloc(&db, b_bytes ? b_bytes : 1)));
    TRY(CUDA_CHECK(cudaMalloc(&dc, c_bytes ? c_bytes : 1)));
    TRY(CUDA_CHECK(cudaMemcpyAsync(db, hb, b_bytes, cudaMemcpyHostToDevice, stream)));
    TRY(host_stage(SPF_DTYPE_F32, bias, m, &dbias, stream));
    /* All-ones bytes are NaN: an output the kernel never writes cannot pass. */
    TRY(CUDA_CHECK(cudaMemsetAsync(dc, 0xff, c_bytes, stream)));
    launch_ctx l = {plan, db, dc, dbias};
    TRY(timing_measure(launch, &l, stream, topt, timing));
    TRY(CUDA_CHECK(cudaMemcpyAsync(hc, dc, c_bytes, cudaMemcpyDeviceToHost, stream)));
    TRY(CUDA_CHECK(cudaStreamSynchronize(stream)));
    operand_unpack(info.dtype, info.c_layout, hc, m, n, c, ct);
fail:
    cudaFree(db);
    cudaFree(dc);
    cudaFree(dbias);
    if (stream)
        cudaStreamDestroy(stream);
    mem_free(hb);
    mem_free(bt);
    mem_free(hc);
    mem_free(ct);
    return status;
}

typedef struct conv_launch_ctx {
    const spf_conv_plan *plan;
    const void *in, *residual;
    void *out;
    const float *bias;
} conv_launch_ctx;

static spf_status conv_launch(void *ctx, void *stream)
{
    const conv_launch_ctx *l = ctx;
    return spf_conv_plan_execute(l->plan, l->in, l->out, l->bias, l->residual, stream);
}

spf_status host_run_conv(const spf_conv_plan *plan, int64_t in_count, int64_t out_count,
                         int64_t bias_count, const float *in, const float *bias,
                         const float *residual, float *out, const timing_options *topt,
                         timing_result *timing)
{
    spf_status status = SPF_OK;
    void *din = NULL, *dres = NULL, *dout = NULL, *dbias = NULL, *hout = NULL;
    cudaStream_t stream = NULL;
    spf_conv_info info = {.size = sizeof info};
    TRY(spf_conv_plan_get_info(plan, &info));
    const spf_dtype dtype = info.spmm.dtype;
    const size_t out_bytes = (size_t)(out_count > 0 ? out_count : 1) * dtype_size(dtype);
    TRY(CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)));
    TRY(host_stage(dtype, in, in_count, &din, stream));
    TRY(host_stage(dtype, residual, out_count, &dres, stream));
    TRY(host_stage(SPF_DTYPE_F32, bias, bias_count, &dbias, stream));
    TRY(CUDA_CHECK(cudaMalloc(&dout, out_bytes)));
    /* All-ones bytes are NaN: an output the plan never writes cannot pass. */
    TRY(CUDA_CHECK(cudaMemsetAsync(dout, 0xff, out_bytes, stream)));
    conv_launch_ctx l = {plan, din, dres, dout, dbias};
    TRY(timing_measure(conv_launch, &l, stream, topt, timing));
    hout = mem_alloc(out_bytes);
    if (!hout)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "reading back %lld elements", (long long)out_count);
    TRY(CUDA_CHECK(cudaMemcpyAsync(hout, dout, out_bytes, cudaMemcpyDeviceToHost, stream)));
    TRY(CUDA_CHECK(cudaStreamSynchronize(stream)));
    dtype_to_float(dtype, hout, out, out_count);
fail:
    cudaFree(din);
    cudaFree(dres);
    cudaFree(dout);
    cudaFree(dbias);
    if (stream)
        cudaStreamDestroy(stream);
    mem_free(hout);
    return status;
}

#else

spf_status host_run_conv(const spf_conv_plan *plan, int64_t in_count, int64_t out_count,
                         int64_t bias_count, const float *in, const float *bias,
                         const float *residual, float *out, const timing_options *topt,
                         timing_result *timing)
{
    (void)plan, (void)in_count, (void)out_count, (void)bias_count, (void)in, (void)bias;
    (void)residual, (void)out, (void)topt, (void)timing;
    return FAIL(SPF_ERR_NO_DEVICE, "spforge was built without CUDA");
}

spf_status host_run_plan(const spf_plan *plan, int64_t m, int64_t k, int64_t n, const float *b,
                         float *c, const float *bias, const timing_options *topt,
                         timing_result *timing)
{
    (void)plan, (void)m, (void)k, (void)n, (void)b, (void)c, (void)bias, (void)timing;
    return FAIL(SPF_ERR_NO_DEVICE, "spforge was built without CUDA");
}

#endif
