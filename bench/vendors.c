/* The vendor competitors: cuBLAS on the dense matrix (fp32, TF32, fp16, bf16) and
 * cuSPARSE CSR SpMM (best algorithm). Handles, descriptors, buffers and
 * cusparseSpMM_preprocess are set up before timing, as for our plans. */
#include "bench.h"

#include "core/error.h"
#include "core/dtype.h"
#include "gpu/cuda_check.h"
#include "strategy/generic/generic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CUBLAS_CHECK(call) cublas_status((call), #call)
#define CUSPARSE_CHECK(call) cusparse_status((call), #call)

static spf_status cublas_status(cublasStatus_t s, const char *stmt)
{
    if (s == CUBLAS_STATUS_SUCCESS)
        return SPF_OK;
    return FAIL(SPF_ERR_CUDA, "%s: %s", stmt, cublasGetStatusString(s));
}

static spf_status cusparse_status(cusparseStatus_t s, const char *stmt)
{
    if (s == CUSPARSE_STATUS_SUCCESS)
        return SPF_OK;
    return FAIL(SPF_ERR_CUDA, "%s: %s", stmt, cusparseGetErrorString(s));
}

/* ---------------------------------------------------------------- cuBLAS */

typedef struct gemm_state {
    cublasHandle_t h;
    int m, n, k;
    cudaDataType type;
    cublasComputeType_t compute;
    const void *a, *b;
    void *c;
} gemm_state;

/* Row-major C = A·B through column-major cuBLAS: C^T = B^T·A^T, where the
 * row-major B (ld N) is B^T column-major and likewise for A and C. */
static spf_status gemm_launch(void *state, void *stream)
{
    (void)stream; /* the handle is bound to ctx->stream */
    const gemm_state *g = state;
    const float alpha = 1.0f, beta = 0.0f;
    return CUBLAS_CHECK(cublasGemmEx(g->h, CUBLAS_OP_N, CUBLAS_OP_N, g->n, g->m, g->k, &alpha,
                                     g->b, g->type, g->n, g->a, g->type, g->k, &beta, g->c,
                                     g->type, g->n, g->compute, CUBLAS_GEMM_DEFAULT));
}

static cudaDataType cuda_type(spf_dtype dtype)
{
    switch (dtype) {
    case SPF_DTYPE_F16: return CUDA_R_16F;
    case SPF_DTYPE_BF16: return CUDA_R_16BF;
    case SPF_DTYPE_F32: break;
    }
    return CUDA_R_32F;
}

/* The cuBLAS run of a precision happens for every dense problem, bf16's
 * only when a bf16 precision was asked for (its B and C are staged then). */
static int cublas_runs(const bench_ctx *ctx, const precision *q)
{
    return q->dtype != SPF_DTYPE_BF16 || ctx->need_bf16;
}

/* The dense A (M×K row-major, zeros filled in) on the device in each dtype
 * a cuBLAS run reads. */
static spf_status dense_upload(const bench_ctx *ctx, const spf_matrix *a, void *dense[DTYPE_COUNT])
{
    spf_status status = SPF_OK;
    int64_t m = spf_matrix_rows(a), k = spf_matrix_cols(a);
    const int64_t *rp = spf_matrix_row_ptr(a);
    const int32_t *ci = spf_matrix_col_idx(a);
    const float *v = spf_matrix_values(a);
    float *host = calloc((size_t)(m * k), sizeof *host);
    uint16_t *narrow = malloc((size_t)(m * k) * sizeof *narrow);
    if (!host || !narrow)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "dense %lldx%lld", (long long)m, (long long)k);
    for (int64_t r = 0; r < m; ++r)
        for (int64_t j = rp[r]; j < rp[r + 1]; ++j)
            host[r * k + ci[j]] = v[j];
    for (int i = 0; i < PRECISION_COUNT; ++i) {
        spf_dtype d = precisions[i].dtype;
        if (!cublas_runs(ctx, &precisions[i]) || dense[d])
            continue;
        const void *src = host;
        if (d != SPF_DTYPE_F32) {
            dtype_from_float(d, host, narrow, m * k);
            src = narrow;
        }
        size_t bytes = (size_t)(m * k) * dtype_size(d);
        TRY(CUDA_CHECK(cudaMalloc(&dense[d], bytes)));
        TRY(CUDA_CHECK(cudaMemcpy(dense[d], src, bytes, cudaMemcpyHostToDevice)));
    }
fail:
    free(host);
    free(narrow);
    return status;
}

void vendor_cublas(const bench_ctx *ctx, const spf_matrix *a, const operands *o, bench_row *row)
{
    void *dense[DTYPE_COUNT] = {0};
    spf_status st = dense_upload(ctx, a, dense);
    for (int i = 0; i < PRECISION_COUNT; ++i) {
        const precision *q = &precisions[i];
        if (!cublas_runs(ctx, q))
            continue;
        if (st != SPF_OK) {
            result_error(&row->r[q->cublas], st, "dense upload");
            continue;
        }
        /* CUBLAS_COMPUTE_32F under the handle's default math mode (main.c)
         * keeps fp32 exact; TF32 only where asked for by the compute type. */
        gemm_state g = {.h = ctx->cublas,
                        .m = (int)o->m,
                        .n = (int)o->n,
                        .k = (int)o->k,
                        .type = cuda_type(q->dtype),
                        .compute = q->math == SPF_MATH_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                            : CUBLAS_COMPUTE_32F,
                        .a = dense[q->dtype],
                        .b = o->b[q->dtype],
                        .c = o->c[q->dtype]};
        output_desc out = {o->c[q->dtype], q->dtype, o->m * o->n};
        measure(ctx, gemm_launch, &g, &out, o->ref, dtype_tolerance(q->dtype, q->math),
                &row->r[q->cublas]);
    }
    for (int d = 0; d < DTYPE_COUNT; ++d)
        (void)cudaFree(dense[d]);
}

/* -------------------------------------------------------------- cuSPARSE */

typedef struct spmm_state {
    cusparseHandle_t h;
    cusparseSpMatDescr_t a;
    cusparseDnMatDescr_t b, c;
    cusparseSpMMAlg_t alg;
    void *buffer;
} spmm_state;

static spf_status spmm_launch(void *state, void *stream)
{
    (void)stream; /* the handle is bound to ctx->stream */
    const spmm_state *s = state;
    const float alpha = 1.0f, beta = 0.0f;
    return CUSPARSE_CHECK(cusparseSpMM(s->h, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                       CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, s->a, s->b, &beta,
                                       s->c, CUDA_R_32F, s->alg, s->buffer));
}

/* One algorithm: its own descriptor of A (preprocessing attaches to it),
 * buffer and preprocess, then the common measurement. */
static void spmm_try(const bench_ctx *ctx, const generic_csr *g, const operands *o,
                     cusparseSpMMAlg_t alg, comp_result *res)
{
    spf_status status = SPF_OK;
    spmm_state s = {.h = ctx->cusparse, .alg = alg};
    const float alpha = 1.0f, beta = 0.0f;
    size_t bytes = 0;
    TRY(CUSPARSE_CHECK(cusparseCreateCsr(&s.a, g->rows, g->cols, g->nnz, g->row_ptr, g->col_idx,
                                         g->values, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                         CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F)));
    TRY(CUSPARSE_CHECK(cusparseCreateDnMat(&s.b, o->k, o->n, o->n, o->b[SPF_DTYPE_F32], CUDA_R_32F,
                                           CUSPARSE_ORDER_ROW)));
    TRY(CUSPARSE_CHECK(cusparseCreateDnMat(&s.c, o->m, o->n, o->n, o->c[SPF_DTYPE_F32], CUDA_R_32F,
                                           CUSPARSE_ORDER_ROW)));
    TRY(CUSPARSE_CHECK(cusparseSpMM_bufferSize(s.h, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                               CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, s.a, s.b,
                                               &beta, s.c, CUDA_R_32F, alg, &bytes)));
    TRY(CUDA_CHECK(cudaMalloc(&s.buffer, bytes ? bytes : 1)));
    /* Preprocessing matters for CSR_ALG3; an algorithm without it may
     * answer NOT_SUPPORTED, which is no reason to leave it out. */
    cusparseStatus_t pre = cusparseSpMM_preprocess(s.h, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                   CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, s.a,
                                                   s.b, &beta, s.c, CUDA_R_32F, alg, s.buffer);
    if (pre != CUSPARSE_STATUS_NOT_SUPPORTED)
        TRY(CUSPARSE_CHECK(pre));
    output_desc out = {o->c[SPF_DTYPE_F32], SPF_DTYPE_F32, o->m * o->n};
    measure(ctx, spmm_launch, &s, &out, o->ref, dtype_tolerance(SPF_DTYPE_F32, SPF_MATH_DEFAULT),
            res);
fail:
    if (status != SPF_OK)
        result_error(res, status, "setup");
    (void)cudaStreamSynchronize(ctx->stream);
    if (s.buffer)
        (void)cudaFree(s.buffer);
    if (s.a)
        (void)cusparseDestroySpMat(s.a);
    if (s.b)
        (void)cusparseDestroyDnMat(s.b);
    if (s.c)
        (void)cusparseDestroyDnMat(s.c);
}

void vendor_cusparse(const bench_ctx *ctx, const spf_matrix *a, const operands *o, bench_row *row)
{
    static const struct {
        cusparseSpMMAlg_t alg;
        const char *name;
    } algs[] = {{CUSPARSE_SPMM_ALG_DEFAULT, "DEFAULT"},
                {CUSPARSE_SPMM_CSR_ALG1, "CSR_ALG1"},
                {CUSPARSE_SPMM_CSR_ALG2, "CSR_ALG2"},
                {CUSPARSE_SPMM_CSR_ALG3, "CSR_ALG3"}};
    comp_result *best = &row->r[COMP_CUSPARSE];
    generic_csr g;
    spf_status st = generic_csr_upload(a, &g);
    if (st != SPF_OK) {
        result_error(best, st, "CSR upload");
        return;
    }
    /* Best of the algorithms that pass the check; with none passing, the
     * row reports the first failure. Every algorithm's outcome is kept. */
    char tried[384] = "";
    comp_result first_failure = {0};
    for (size_t i = 0; i < sizeof algs / sizeof algs[0]; ++i) {
        comp_result r = {0};
        spmm_try(ctx, &g, o, algs[i].alg, &r);
        size_t used = strlen(tried);
        if (r.state == RESULT_OK)
            snprintf(tried + used, sizeof tried - used, "%s%s=%.2fus", used ? " " : "",
                     algs[i].name, r.us);
        else
            snprintf(tried + used, sizeof tried - used, "%s%s=%s", used ? " " : "", algs[i].name,
                     r.state == RESULT_FAILED ? "failed" : "error");
        if (r.state == RESULT_OK && (best->state != RESULT_OK || r.us < best->us)) {
            *best = r;
            snprintf(best->detail, sizeof best->detail, "%s", algs[i].name);
        } else if (r.state != RESULT_OK && first_failure.state == RESULT_NOT_RUN) {
            first_failure = r;
        }
    }
    if (best->state != RESULT_OK)
        *best = first_failure;
    snprintf(row->cusparse_algs, sizeof row->cusparse_algs, "%s", tried);
    generic_csr_release(&g);
}
