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

/* B as the plan takes it: dtype elements, n × k when N_FIRST. */
static spf_status stage_b(const spf_plan_info *info, int64_t k, int64_t n, const float *b,
                          void **out)
{
    size_t es = dtype_size(info->dtype);
    void *raw = mem_alloc_array((size_t)(k * n > 0 ? k * n : 1), es);
    void *t = info->b_layout == SPF_LAYOUT_N_FIRST ? mem_alloc_array((size_t)(k * n > 0 ? k * n : 1), es)
                                                   : NULL;
    if (!raw || (info->b_layout == SPF_LAYOUT_N_FIRST && !t)) {
        mem_free(raw);
        mem_free(t);
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "staging B: %lld elements", (long long)(k * n));
    }
    dtype_from_float(info->dtype, b, raw, k * n);
    if (t) {
        array_transpose(raw, t, k, n, es);
        mem_free(raw);
        raw = t;
    }
    *out = raw;
    return SPF_OK;
}

spf_status host_run_plan(const spf_plan *plan, int64_t m, int64_t k, int64_t n, const float *b,
                         float *c, const float *bias, timing_result *timing)
{
    spf_status status = SPF_OK;
    void *db = NULL, *dc = NULL, *dbias = NULL, *hb = NULL, *hc = NULL;
    float *ct = NULL;
    cudaStream_t stream = NULL;
    spf_plan_info info = {.size = sizeof info};
    TRY(spf_plan_get_info(plan, &info));
    size_t es = dtype_size(info.dtype);
    size_t b_bytes = (size_t)(k * n) * es, c_bytes = (size_t)(m * n) * es;
    TRY(stage_b(&info, k, n, b, &hb));
    hc = mem_alloc(c_bytes ? c_bytes : 1);
    ct = info.c_layout == SPF_LAYOUT_N_FIRST ? mem_alloc_array((size_t)(m * n > 0 ? m * n : 1), 4)
                                             : NULL;
    if (!hc || (info.c_layout == SPF_LAYOUT_N_FIRST && !ct))
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "staging C: %lld elements", (long long)(m * n));
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
    if (ct) { /* an n × m C, read as m × n */
        dtype_to_float(info.dtype, hc, ct, m * n);
        array_transpose(ct, c, n, m, sizeof(float));
    } else {
        dtype_to_float(info.dtype, hc, c, m * n);
    }
fail:
    cudaFree(db);
    cudaFree(dc);
    cudaFree(dbias);
    if (stream)
        cudaStreamDestroy(stream);
    mem_free(hb);
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
