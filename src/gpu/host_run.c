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

spf_status host_run_plan(const spf_plan *plan, int64_t m, int64_t k, int64_t n, const float *b,
                         float *c, const float *bias, timing_result *timing)
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
    if (bias)
        TRY(CUDA_CHECK(cudaMalloc(&dbias, (size_t)m * sizeof(float))));
    TRY(CUDA_CHECK(cudaMemcpyAsync(db, hb, b_bytes, cudaMemcpyHostToDevice, stream)));
    if (bias)
        TRY(CUDA_CHECK(cudaMemcpyAsync(dbias, bias, (size_t)m * sizeof(float),
                                       cudaMemcpyHostToDevice, stream)));
    /* All-ones bytes are NaN: an output the kernel never writes cannot pass. */
    TRY(CUDA_CHECK(cudaMemsetAsync(dc, 0xff, c_bytes, stream)));
    launch_ctx l = {plan, db, dc, dbias};
    TRY(timing_measure(launch, &l, stream, NULL, timing));
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

#else

spf_status host_run_plan(const spf_plan *plan, int64_t m, int64_t k, int64_t n, const float *b,
                         float *c, const float *bias, timing_result *timing)
{
    (void)plan, (void)m, (void)k, (void)n, (void)b, (void)c, (void)bias, (void)timing;
    return FAIL(SPF_ERR_NO_DEVICE, "spforge was built without CUDA");
}

#endif
