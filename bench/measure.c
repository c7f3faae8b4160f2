/* The one measurement path of spforge-bench, the same for every competitor
 * (BENCHMARKS.md): poison the output, launch once, check against the CPU
 * oracle, and time only what passed. */
#include "bench.h"

#include "core/dtype.h"
#include "gpu/cuda_check.h"
#include "gpu/timing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const competitor_names[COMP_COUNT] = {
    "spforge",     "spforge_generic", "cublas_fp32", "cublas_tf32",
    "cublas_fp16", "cublas_bf16",     "cusparse",
};

void result_error(comp_result *res, spf_status st, const char *what)
{
    res->state = RESULT_ERROR;
    res->us = 0.0;
    snprintf(res->detail, sizeof res->detail, "%s: %s: %s", what, spf_status_string(st),
             spf_last_error());
}

/* Copy the output back, widen it to float, and compare with the oracle. */
static spf_status output_error(const bench_ctx *ctx, const output_desc *out, const double *ref,
                               double *err)
{
    spf_status status = SPF_OK;
    size_t elem = dtype_size(out->dtype);
    float *host = malloc((size_t)out->count * sizeof *host);
    void *stored = elem == sizeof *host ? (void *)host : malloc((size_t)out->count * elem);
    if (!host || !stored)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "%lld outputs", (long long)out->count);
    TRY(CUDA_CHECK(cudaMemcpyAsync(stored, out->c, (size_t)out->count * elem,
                                   cudaMemcpyDeviceToHost, ctx->stream)));
    TRY(CUDA_CHECK(cudaStreamSynchronize(ctx->stream)));
    if (stored != host)
        dtype_to_float(out->dtype, stored, host, out->count);
    *err = spf_relative_error(host, ref, out->count);
fail:
    if (stored != host)
        free(stored);
    free(host);
    return status;
}

void measure(const bench_ctx *ctx, launch_fn fn, void *state, const output_desc *out,
             const double *ref, double tol, comp_result *res)
{
    spf_status st = CUDA_CHECK(
        cudaMemsetAsync(out->c, 0xFF, (size_t)out->count * dtype_size(out->dtype), ctx->stream));
    if (st == SPF_OK)
        st = fn(state, ctx->stream);
    if (st == SPF_OK)
        st = output_error(ctx, out, ref, &res->err);
    if (st != SPF_OK) {
        result_error(res, st, "check launch");
        return;
    }
    if (!(res->err <= tol)) {
        res->state = RESULT_FAILED;
        snprintf(res->detail + strlen(res->detail), sizeof res->detail - strlen(res->detail),
                 "%srelative error %.3g > %g", res->detail[0] ? "; " : "", res->err, tol);
        return;
    }
    timing_result t;
    st = timing_measure(fn, state, ctx->stream, NULL, &t);
    if (st != SPF_OK) {
        result_error(res, st, "timing");
        return;
    }
    res->state = RESULT_OK;
    res->us = t.median_us;
}
