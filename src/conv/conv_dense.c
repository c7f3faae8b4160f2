/* The conv plans' dense path (conv_dense.h). */
#include "conv/conv_dense.h"

#include "conv/cudnn_api.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/matrix.h"
#include "core/rng.h"

#include <stdint.h>
#include <stdio.h>

#ifdef SPF_HAVE_CUDA
#include "gpu/cuda_check.h"
#include "gpu/elementwise.h"
#include "gpu/host_run.h"

#include <cuda_runtime_api.h>

/* cudnnFindConvolutionForwardAlgorithmEx's workspace cap: the algorithms
 * needing more are passed over */
enum { WORKSPACE_MAX = 256 << 20, ALGOS_MAX = 8 };

struct conv_dense {
    const cudnn_api *dnn;
    cudnn_handle handle;
    cudnn_tensor x, y;
    cudnn_filter f;
    cudnn_conv conv;
    int algo;
    void *weights;           /* device, dense, the filter's layout and dtype */
    void *workspace;
    size_t workspace_bytes;
    spf_dtype dtype;
    int relu;
    int64_t channels, inner; /* K_out, and the elements between two channels' (NCHW: P·Q) */
    int64_t out_count;
    char name[48];
};

static spf_status dnn_check(const cudnn_api *dnn, cudnn_status st, const char *what)
{
    if (st == CUDNN_OK)
        return SPF_OK;
    return FAIL(SPF_ERR_UNSUPPORTED, "conv: cuDNN %s: %s (status %d)", what,
                dnn->GetErrorString(st), st);
}

static int dnn_type(spf_dtype t)
{
    return t == SPF_DTYPE_F16 ? CUDNN_HALF : t == SPF_DTYPE_BF16 ? CUDNN_BFLOAT16 : CUDNN_FLOAT;
}

/* w (K_out × C·R·S, its columns in the filter's order) as a dense host
 * array of floats. */
static float *expand(const spf_matrix *w)
{
    const int64_t rows = spf_matrix_rows(w), cols = spf_matrix_cols(w);
    float *dense = mem_calloc((size_t)(rows * cols), sizeof *dense);
    if (!dense)
        return NULL;
    const int64_t *rp = spf_matrix_row_ptr(w);
    const int32_t *ci = spf_matrix_col_idx(w);
    const float *v = spf_matrix_values(w);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t q = rp[r]; q < rp[r + 1]; q++)
            dense[r * cols + ci[q]] = v[q];
    return dense;
}

/* Descriptors, weights and the algorithm (its workspace) of d for s. */
static spf_status build(conv_dense *d, const spf_matrix *w, const conv_shape *s,
                        const spf_plan_options *o)
{
    const cudnn_api *dnn = d->dnn;
    spf_status status = SPF_OK;
    float *host = NULL, *in_host = NULL;
    void *in = NULL, *out = NULL, *scratch = NULL;
    const int format = s->layout == CONV_NHWC ? CUDNN_NHWC : CUDNN_NCHW;
    const int type = dnn_type(d->dtype);
    const int p = (int)conv_out_h(s), q = (int)conv_out_w(s);
    if (s->n > INT32_MAX || s->c > INT32_MAX || s->k > INT32_MAX)
        return FAIL(SPF_ERR_UNSUPPORTED, "conv: cuDNN's descriptors take int sizes");
    TRY(dnn_check(dnn, dnn->Create(&d->handle), "cudnnCreate"));
    TRY(dnn_check(dnn, dnn->CreateTensorDescriptor(&d->x), "a tensor descriptor"));
    TRY(dnn_check(dnn, dnn->CreateTensorDescriptor(&d->y), "a tensor descriptor"));
    TRY(dnn_check(dnn, dnn->CreateFilterDescriptor(&d->f), "a filter descriptor"));
    TRY(dnn_check(dnn, dnn->CreateConvolutionDescriptor(&d->conv), "a convolution descriptor"));
    TRY(dnn_check(dnn, dnn->SetTensor4dDescriptor(d->x, format, type, (int)s->n, (int)s->c,
                                                  (int)s->h, (int)s->w), "the input's shape"));
    TRY(dnn_check(dnn, dnn->SetTensor4dDescriptor(d->y, format, type, (int)s->n, (int)s->k, p, q),
                  "the output's shape"));
    TRY(dnn_check(dnn, dnn->SetFilter4dDescriptor(d->f, type, format, (int)s->k, (int)s->c,
                                                  (int)s->r, (int)s->s), "the filter's shape"));
    TRY(dnn_check(dnn, dnn->SetConvolution2dDescriptor(d->conv, (int)s->pad, (int)s->pad,
                                                       (int)s->stride, (int)s->stride, 1, 1,
                                                       CUDNN_CROSS_CORR, CUDNN_FLOAT),
                  "the convolution"));
    /* exact fp32 unless TF32 was allowed; tensor cores with fp32
     * accumulation for the 16-bit types (SPF_MATH_DEFAULT's meaning) */
    const int math = d->dtype == SPF_DTYPE_F32 && o->math != SPF_MATH_TF32 ? CUDNN_FMA
                                                                          : CUDNN_TENSOR_OP;
    TRY(dnn_check(dnn, dnn->SetConvolutionMathType(d->conv, math), "the math type"));

    const int64_t w_count = spf_matrix_rows(w) * spf_matrix_cols(w);
    host = expand(w);
    if (!host)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "conv: dense weights of %lld values",
                  (long long)w_count);
    TRY(host_stage(d->dtype, host, w_count, &d->weights, NULL));

    /* the algorithms timed on random input (never zeros), the fastest kept */
    const int64_t in_count = conv_input_count(s);
    in_host = mem_alloc_array((size_t)in_count, sizeof *in_host);
    if (!in_host)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "conv: a random input of %lld values",
                  (long long)in_count);
    rng g;
    rng_seed(&g, 0xd3e5eu);
    for (int64_t i = 0; i < in_count; i++)
        in_host[i] = (float)(2.0 * rng_uniform(&g) - 1.0);
    TRY(host_stage(d->dtype, in_host, in_count, &in, NULL));
    TRY(CUDA_CHECK(cudaMalloc(&out, (size_t)d->out_count * dtype_size(d->dtype))));
    TRY(CUDA_CHECK(cudaMalloc(&scratch, WORKSPACE_MAX)));
    cudnn_algo_perf perf[ALGOS_MAX];
    int found = 0;
    TRY(dnn_check(dnn, dnn->FindConvolutionForwardAlgorithmEx(d->handle, d->x, in, d->f,
                                                              d->weights, d->conv, d->y, out,
                                                              ALGOS_MAX, &found, perf, scratch,
                                                              WORKSPACE_MAX),
                  "cudnnFindConvolutionForwardAlgorithmEx"));
    int best = -1; /* sorted fastest first; the first that ran within the cap */
    for (int i = 0; i < found && best < 0; i++)
        if (perf[i].status == CUDNN_OK && perf[i].memory <= WORKSPACE_MAX)
            best = i;
    if (best < 0)
        FAIL_GOTO(SPF_ERR_UNSUPPORTED, "conv: cuDNN ran no algorithm for this convolution "
                  "(%d tried)", found);
    d->algo = perf[best].algo;
    d->workspace_bytes = perf[best].memory;
    if (d->workspace_bytes)
        TRY(CUDA_CHECK(cudaMalloc(&d->workspace, d->workspace_bytes)));
    snprintf(d->name, sizeof d->name, "cudnn_%d_%s", d->algo, dtype_name(d->dtype));
fail:
    cudaFree(in);
    cudaFree(out);
    cudaFree(scratch);
    mem_free(host);
    mem_free(in_host);
    return status;
}

spf_status conv_dense_create(const spf_matrix *w, const conv_shape *s, const spf_plan_options *o,
                             int relu, conv_dense **out)
{
    CHECK_ARG(w != NULL && s != NULL && o != NULL && out != NULL);
    *out = NULL;
    char why[700];
    const cudnn_api *dnn = cudnn_get(why, sizeof why);
    if (!dnn)
        return FAIL(SPF_ERR_UNSUPPORTED, "conv: cuDNN could not be loaded: %s", why);
    if (!dtype_valid(o->dtype) || o->math == SPF_MATH_F16X2)
        return FAIL(SPF_ERR_UNSUPPORTED, "conv: the dense path accumulates in fp32 only");
    conv_dense *d = mem_calloc(1, sizeof *d);
    if (!d)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "a dense conv");
    d->dnn = dnn;
    d->dtype = o->dtype;
    d->relu = relu;
    d->channels = s->k;
    d->inner = s->layout == CONV_NHWC ? 1 : conv_out_h(s) * conv_out_w(s);
    d->out_count = conv_output_count(s);
    int previous = -1;
    spf_status status = CUDA_CHECK(cudaGetDevice(&previous));
    if (status == SPF_OK)
        status = CUDA_CHECK(cudaSetDevice(o->device));
    if (status == SPF_OK)
        status = build(d, w, s, o);
    if (previous >= 0 && previous != o->device)
        (void)cudaSetDevice(previous);
    if (status != SPF_OK) {
        conv_dense_free(d);
        return status;
    }
    *out = d;
    return SPF_OK;
}

spf_status conv_dense_run(const conv_dense *d, const void *in, void *out, const float *bias,
                          const void *residual, void *stream)
{
    const cudnn_api *dnn = d->dnn;
    const float one = 1.0f, zero = 0.0f; /* fp32 scalars: compute type FLOAT */
    spf_status status = dnn_check(dnn, dnn->SetStream(d->handle, stream), "cudnnSetStream");
    if (status == SPF_OK)
        status = dnn_check(dnn, dnn->ConvolutionForward(d->handle, &one, d->x, in, d->f,
                                                        d->weights, d->conv, d->algo,
                                                        d->workspace, d->workspace_bytes, &zero,
                                                        d->y, out),
                           "cudnnConvolutionForward");
    if (status == SPF_OK && (bias || residual || d->relu))
        status = elementwise_epilogue(d->dtype, out, bias, d->channels, d->inner, residual,
                                      d->out_count, d->relu, stream);
    return status;
}

const char *conv_dense_name(const conv_dense *d)
{
    return d ? d->name : "";
}

void conv_dense_free(conv_dense *d)
{
    if (!d)
        return;
    const cudnn_api *dnn = d->dnn;
    if (d->conv)
        (void)dnn->DestroyConvolutionDescriptor(d->conv);
    if (d->f)
        (void)dnn->DestroyFilterDescriptor(d->f);
    if (d->x)
        (void)dnn->DestroyTensorDescriptor(d->x);
    if (d->y)
        (void)dnn->DestroyTensorDescriptor(d->y);
    if (d->handle)
        (void)dnn->Destroy(d->handle);
    cuda_free_quiet(d->weights);
    cuda_free_quiet(d->workspace);
    (void)cudaGetLastError();
    mem_free(d);
}

#else /* no CUDA toolkit at build time */

spf_status conv_dense_create(const spf_matrix *w, const conv_shape *s, const spf_plan_options *o,
                             int relu, conv_dense **out)
{
    (void)w, (void)s, (void)o, (void)relu;
    if (out)
        *out = NULL;
    return FAIL(SPF_ERR_NO_DEVICE, "conv: built without CUDA");
}

spf_status conv_dense_run(const conv_dense *d, const void *in, void *out, const float *bias,
                          const void *residual, void *stream)
{
    (void)d, (void)in, (void)out, (void)bias, (void)residual, (void)stream;
    return FAIL(SPF_ERR_NO_DEVICE, "conv: built without CUDA");
}

const char *conv_dense_name(const conv_dense *d)
{
    (void)d;
    return "";
}

void conv_dense_free(conv_dense *d)
{
    (void)d;
}

#endif
