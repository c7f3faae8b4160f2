/* The conv plans' dense path (conv_dense.h). */
#include "conv/conv_dense.h"

#include "conv/cudnn_api.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "core/matrix.h"
#include "core/rng.h"

#include <stdint.h>
#include <stdio.h>

#ifdef SPF_HAVE_CUDA
#include "gpu/cuda_check.h"
#include "gpu/elementwise.h"
#include "gpu/host_run.h"
#include "gpu/timing.h"

#include <cuda_runtime_api.h>

/* the candidates' workspace cap (those needing more are passed over), the
 * engine configurations tried of each heuristic's list, and the alignment
 * the tensors are declared with */
enum { WORKSPACE_MAX = 256 << 20, CANDIDATES_MAX = 8, ALIGNMENT = 16 };
/* the descriptors a plan keeps: the graph's 6 (three tensors, the
 * convolution, its operation, the graph), and for each of the two
 * heuristic modes its descriptor and a configuration, an engine and an
 * execution plan for each candidate */
enum { DESCS_MAX = 6 + 2 * (1 + 3 * CANDIDATES_MAX) };
enum { UID_X = 'x', UID_W = 'w', UID_Y = 'y' };

struct conv_dense {
    const cudnn_api *dnn;
    cudnn_handle handle;
    cudnn_desc owned[DESCS_MAX]; /* every descriptor built, kept while the plan lives */
    int owned_count;
    cudnn_desc plan;             /* the fastest execution plan (one of owned)        */
    void *weights;               /* device, dense, the filter's layout and dtype    */
    void *workspace;
    int64_t workspace_bytes;
    spf_dtype dtype;
    int relu;
    int64_t channels, inner;     /* K_out, and the elements between two channels' (NCHW: P·Q) */
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

/* A new descriptor of type, owned by d (freed with it). */
static spf_status create(conv_dense *d, int type, cudnn_desc *out)
{
    spf_status status = SPF_OK;
    *out = NULL;
    if (d->owned_count == DESCS_MAX)
        FAIL_GOTO(SPF_ERR_INTERNAL, "conv: more than %d cuDNN descriptors", DESCS_MAX);
    TRY(dnn_check(d->dnn, d->dnn->BackendCreateDescriptor(type, out),
                         "cudnnBackendCreateDescriptor"));
    d->owned[d->owned_count++] = *out;
fail:
    return status;
}

static spf_status set(const conv_dense *d, cudnn_desc desc, int name, int type, int64_t count,
                      const void *values)
{
    const cudnn_status st = d->dnn->BackendSetAttribute(desc, name, type, count, values);
    if (st == CUDNN_OK) /* the message only on failure: executes pass here per call */
        return SPF_OK;
    char what[64];
    snprintf(what, sizeof what, "cudnnBackendSetAttribute (attribute %d)", name);
    return dnn_check(d->dnn, st, what);
}

static spf_status finalize(const conv_dense *d, cudnn_desc desc, const char *what)
{
    return dnn_check(d->dnn, d->dnn->BackendFinalize(desc), what);
}

/* The handle of graph or plan: cuDNN 8 requires it, cuDNN 9 takes the
 * handle at execute and calls the attribute deprecated, so its refusal is
 * no error. */
static void set_handle(const conv_dense *d, cudnn_desc desc, int name)
{
    (void)d->dnn->BackendSetAttribute(desc, name, CUDNN_T_HANDLE, 1, &d->handle);
}

/* A 4-d tensor (or filter) of dims {n, c, h, w}, NCHW's strides or NHWC's
 * (KRSC for a filter), in the plan's dtype. */
static spf_status tensor(conv_dense *d, int64_t uid, const int64_t dims[4], int nhwc,
                         cudnn_desc *out)
{
    spf_status status = SPF_OK;
    const int type = dnn_type(d->dtype);
    const int64_t align = ALIGNMENT;
    const int64_t c = dims[1], h = dims[2], w = dims[3];
    const int64_t nchw_strides[4] = {c * h * w, h * w, w, 1};
    const int64_t nhwc_strides[4] = {h * w * c, 1, w * c, c};
    TRY(create(d, CUDNN_D_TENSOR, out));
    TRY(set(d, *out, CUDNN_A_TENSOR_DATA_TYPE, CUDNN_T_DATA_TYPE, 1, &type));
    TRY(set(d, *out, CUDNN_A_TENSOR_DIMENSIONS, CUDNN_T_INT64, 4, dims));
    TRY(set(d, *out, CUDNN_A_TENSOR_STRIDES, CUDNN_T_INT64, 4,
                   nhwc ? nhwc_strides : nchw_strides));
    TRY(set(d, *out, CUDNN_A_TENSOR_UNIQUE_ID, CUDNN_T_INT64, 1, &uid));
    TRY(set(d, *out, CUDNN_A_TENSOR_BYTE_ALIGNMENT, CUDNN_T_INT64, 1, &align));
    TRY(finalize(d, *out, "a tensor descriptor"));
fail:
    return status;
}

/* The operation graph of s's forward convolution (fp32 accumulation). */
static spf_status conv_graph(conv_dense *d, const conv_shape *s, cudnn_desc *graph)
{
    spf_status status = SPF_OK;
    const int nhwc = s->layout == CONV_NHWC;
    const int64_t x_dims[4] = {s->n, s->c, s->h, s->w};
    const int64_t w_dims[4] = {s->k, s->c, s->r, s->s};
    const int64_t y_dims[4] = {s->n, s->k, conv_out_h(s), conv_out_w(s)};
    cudnn_desc x, w, y, conv, op;
    TRY(tensor(d, UID_X, x_dims, nhwc, &x));
    TRY(tensor(d, UID_W, w_dims, nhwc, &w));
    TRY(tensor(d, UID_Y, y_dims, nhwc, &y));

    const int comp = CUDNN_FLOAT, mode = CUDNN_CROSS_CORR;
    const int64_t spatial = 2, ones[2] = {1, 1}, stride[2] = {s->stride, s->stride};
    const int64_t pad[2] = {s->pad, s->pad};
    TRY(create(d, CUDNN_D_CONVOLUTION, &conv));
    TRY(set(d, conv, CUDNN_A_CONVOLUTION_COMP_TYPE, CUDNN_T_DATA_TYPE, 1, &comp));
    TRY(set(d, conv, CUDNN_A_CONVOLUTION_CONV_MODE, CUDNN_T_CONVOLUTION_MODE, 1, &mode));
    TRY(set(d, conv, CUDNN_A_CONVOLUTION_SPATIAL_DIMS, CUDNN_T_INT64, 1, &spatial));
    TRY(set(d, conv, CUDNN_A_CONVOLUTION_DILATIONS, CUDNN_T_INT64, 2, ones));
    TRY(set(d, conv, CUDNN_A_CONVOLUTION_FILTER_STRIDES, CUDNN_T_INT64, 2, stride));
    TRY(set(d, conv, CUDNN_A_CONVOLUTION_PRE_PADDINGS, CUDNN_T_INT64, 2, pad));
    TRY(set(d, conv, CUDNN_A_CONVOLUTION_POST_PADDINGS, CUDNN_T_INT64, 2, pad));
    TRY(finalize(d, conv, "the convolution descriptor"));

    const float alpha = 1.0f, beta = 0.0f;
    TRY(create(d, CUDNN_D_OP_CONV_FORWARD, &op));
    TRY(set(d, op, CUDNN_A_OP_CONV_FORWARD_X, CUDNN_T_BACKEND_DESCRIPTOR, 1, &x));
    TRY(set(d, op, CUDNN_A_OP_CONV_FORWARD_W, CUDNN_T_BACKEND_DESCRIPTOR, 1, &w));
    TRY(set(d, op, CUDNN_A_OP_CONV_FORWARD_Y, CUDNN_T_BACKEND_DESCRIPTOR, 1, &y));
    TRY(set(d, op, CUDNN_A_OP_CONV_FORWARD_CONV_DESC, CUDNN_T_BACKEND_DESCRIPTOR, 1,
                   &conv));
    TRY(set(d, op, CUDNN_A_OP_CONV_FORWARD_ALPHA, CUDNN_T_FLOAT, 1, &alpha));
    TRY(set(d, op, CUDNN_A_OP_CONV_FORWARD_BETA, CUDNN_T_FLOAT, 1, &beta));
    TRY(finalize(d, op, "the convolution operation"));

    TRY(create(d, CUDNN_D_OPERATIONGRAPH, graph));
    TRY(set(d, *graph, CUDNN_A_OPERATIONGRAPH_OPS, CUDNN_T_BACKEND_DESCRIPTOR, 1, &op));
    set_handle(d, *graph, CUDNN_A_OPERATIONGRAPH_HANDLE);
    TRY(finalize(d, *graph, "the operation graph"));
fail:
    return status;
}

/* One execute of plan: out = conv(in), workspace its scratch. */
static spf_status execute(const conv_dense *d, cudnn_desc plan, const void *in, void *out,
                          void *workspace, void *stream)
{
    const cudnn_api *dnn = d->dnn;
    cudnn_desc pack = NULL;
    int64_t uids[3] = {UID_X, UID_W, UID_Y};
    void *pointers[3] = {(void *)in, d->weights, out};
    spf_status status = dnn_check(dnn, dnn->SetStream(d->handle, stream), "cudnnSetStream");
    if (status == SPF_OK)
        status = dnn_check(dnn, dnn->BackendCreateDescriptor(CUDNN_D_VARIANT_PACK, &pack),
                           "cudnnBackendCreateDescriptor");
    if (status == SPF_OK)
        status = set(d, pack, CUDNN_A_VARIANT_PACK_UNIQUE_IDS, CUDNN_T_INT64, 3, uids);
    if (status == SPF_OK)
        status = set(d, pack, CUDNN_A_VARIANT_PACK_DATA_POINTERS, CUDNN_T_VOID_PTR, 3, pointers);
    if (status == SPF_OK)
        status = set(d, pack, CUDNN_A_VARIANT_PACK_WORKSPACE, CUDNN_T_VOID_PTR, 1, &workspace);
    if (status == SPF_OK)
        status = finalize(d, pack, "the variant pack");
    if (status == SPF_OK)
        status = dnn_check(dnn, dnn->BackendExecute(d->handle, plan, pack), "cudnnBackendExecute");
    if (pack)
        (void)dnn->BackendDestroyDescriptor(pack);
    return status;
}

/* Whether cfg's engine computes as o asks: exact fp32 takes no engine that
 * converts its inputs down (TF32 tensor cores) unless TF32 was allowed;
 * none may reduce in less than fp32 (SPF_MATH_DEFAULT's meaning). Its
 * global index in *index. */
static spf_status engine_fits(conv_dense *d, cudnn_desc cfg, const spf_plan_options *o,
                              int *fits, int64_t *index)
{
    spf_status status = SPF_OK;
    cudnn_desc engine;
    int64_t count = 0;
    int notes[16];
    TRY(create(d, CUDNN_D_ENGINE, &engine));
    TRY(dnn_check(d->dnn, d->dnn->BackendGetAttribute(cfg, CUDNN_A_ENGINECFG_ENGINE,
                                                             CUDNN_T_BACKEND_DESCRIPTOR, 1,
                                                             &count, &engine),
                         "the engine of a configuration"));
    TRY(dnn_check(d->dnn, d->dnn->BackendGetAttribute(engine, CUDNN_A_ENGINE_GLOBAL_INDEX,
                                                             CUDNN_T_INT64, 1, &count, index),
                         "an engine's index"));
    TRY(dnn_check(d->dnn, d->dnn->BackendGetAttribute(engine,
                                                             CUDNN_A_ENGINE_NUMERICAL_NOTE,
                                                             CUDNN_T_NUMERICAL_NOTE, 16, &count,
                                                             notes),
                         "an engine's numerical notes"));
    const int exact = d->dtype == SPF_DTYPE_F32 && o->math != SPF_MATH_TF32;
    *fits = 1;
    for (int64_t i = 0; i < count && i < 16; i++)
        if (notes[i] == CUDNN_NOTE_REDUCED_REDUCTION ||
            (exact && (notes[i] == CUDNN_NOTE_DOWN_CONVERT || notes[i] == CUDNN_NOTE_TENSOR_CORE)))
            *fits = 0;
fail:
    return status;
}

typedef struct candidate_run {
    const conv_dense *d;
    cudnn_desc plan;
    const void *in;
    void *out, *workspace;
} candidate_run;

static spf_status candidate_launch(void *ctx, void *stream)
{
    const candidate_run *c = ctx;
    return execute(c->d, c->plan, c->in, c->out, c->workspace, stream);
}

/* The first configurations of heuristic `mode` for graph into cfgs, their
 * number in *count. */
static spf_status configurations(conv_dense *d, cudnn_desc graph, int mode,
                                 cudnn_desc cfgs[CANDIDATES_MAX], int64_t *count)
{
    spf_status status = SPF_OK;
    cudnn_desc heur;
    *count = 0;
    TRY(create(d, CUDNN_D_ENGINEHEUR, &heur));
    TRY(set(d, heur, CUDNN_A_ENGINEHEUR_OPERATION_GRAPH, CUDNN_T_BACKEND_DESCRIPTOR, 1, &graph));
    TRY(set(d, heur, CUDNN_A_ENGINEHEUR_MODE, CUDNN_T_HEUR_MODE, 1, &mode));
    TRY(finalize(d, heur, "the engine heuristics"));
    for (int i = 0; i < CANDIDATES_MAX; i++)
        TRY(create(d, CUDNN_D_ENGINECFG, &cfgs[i]));
    TRY(dnn_check(d->dnn, d->dnn->BackendGetAttribute(heur, CUDNN_A_ENGINEHEUR_RESULTS,
                                                      CUDNN_T_BACKEND_DESCRIPTOR, CANDIDATES_MAX,
                                                      count, cfgs),
                  "the heuristics' configurations"));
    if (*count > CANDIDATES_MAX)
        *count = CANDIDATES_MAX;
fail:
    return status;
}

/* The execution plans of the heuristics' first configurations that fit o
 * (mode A's, else the fallback list's), each timed on in (random) with
 * scratch as its workspace, by the GPU's time as the conv plans' paths
 * are (conv_select.c); the fastest kept in d->plan with its workspace
 * size. */
static spf_status fastest_plan(conv_dense *d, cudnn_desc graph, const spf_plan_options *o,
                               const void *in, void *out, void *scratch)
{
    spf_status status = SPF_OK;
    static const int modes[] = {CUDNN_HEUR_A, CUDNN_HEUR_FALLBACK};
    double best_us = 0;
    int64_t best_index = -1, listed = 0;
    int built = 0;
    for (size_t m = 0; m < sizeof modes / sizeof *modes && best_index < 0; m++) {
        cudnn_desc cfgs[CANDIDATES_MAX];
        int64_t count = 0;
        TRY(configurations(d, graph, modes[m], cfgs, &count));
        listed += count;
        for (int64_t i = 0; i < count; i++) {
            int fits = 0;
            int64_t index = -1, bytes = 0, got = 0;
            TRY(engine_fits(d, cfgs[i], o, &fits, &index));
            if (!fits)
                continue;
            cudnn_desc plan;
            TRY(create(d, CUDNN_D_EXECUTION_PLAN, &plan));
            set_handle(d, plan, CUDNN_A_EXECUTION_PLAN_HANDLE);
            TRY(set(d, plan, CUDNN_A_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_T_BACKEND_DESCRIPTOR, 1,
                    &cfgs[i]));
            /* a configuration cuDNN cannot build here is passed over */
            if (d->dnn->BackendFinalize(plan) != CUDNN_OK ||
                d->dnn->BackendGetAttribute(plan, CUDNN_A_EXECUTION_PLAN_WORKSPACE_SIZE,
                                            CUDNN_T_INT64, 1, &got, &bytes) != CUDNN_OK ||
                bytes > WORKSPACE_MAX)
                continue;
            built++;
            candidate_run run = {d, plan, in, out, scratch};
            timing_result t; /* graph replays, weights cold: the defaults */
            if (timing_measure(candidate_launch, &run, NULL, NULL, &t) != SPF_OK) {
                log_msg(SPF_LOG_INFO, "conv: cuDNN engine %lld did not run: %s",
                        (long long)index, spf_last_error());
                error_clear();
                (void)cudaGetLastError();
                continue;
            }
            if (best_index < 0 || t.median_us < best_us) {
                best_us = t.median_us, best_index = index;
                d->plan = plan, d->workspace_bytes = bytes;
            }
        }
    }
    if (best_index < 0)
        FAIL_GOTO(SPF_ERR_UNSUPPORTED, "conv: cuDNN ran none of the %lld configurations its "
                  "heuristics listed for this convolution (%d built)", (long long)listed, built);
    snprintf(d->name, sizeof d->name, "cudnn_%lld_%s", (long long)best_index,
             dtype_name(d->dtype));
fail:
    return status;
}

/* The handle, weights, operation graph and fastest plan (its workspace)
 * of d for s. */
static spf_status build(conv_dense *d, const spf_matrix *w, const conv_shape *s,
                        const spf_plan_options *o)
{
    const cudnn_api *dnn = d->dnn;
    spf_status status = SPF_OK;
    float *host = NULL, *in_host = NULL;
    void *in = NULL, *out = NULL, *scratch = NULL;
    cudnn_desc graph;
    TRY(dnn_check(dnn, dnn->Create(&d->handle), "cudnnCreate"));
    TRY(conv_graph(d, s, &graph));

    const int64_t w_count = spf_matrix_rows(w) * spf_matrix_cols(w);
    host = matrix_dense(w);
    if (!host)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "conv: dense weights of %lld values",
                  (long long)w_count);
    TRY(host_stage(d->dtype, host, w_count, &d->weights, NULL));

    /* the candidates timed on random input (never zeros) */
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
    TRY(fastest_plan(d, graph, o, in, out, scratch));
    if (d->workspace_bytes)
        TRY(CUDA_CHECK(cudaMalloc(&d->workspace, (size_t)d->workspace_bytes)));
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
    if ((uintptr_t)in % ALIGNMENT || (uintptr_t)out % ALIGNMENT)
        return FAIL(SPF_ERR_UNSUPPORTED, "conv: the dense path's cuDNN plan takes its input and "
                    "output aligned to %d bytes, and the %s is at %p", ALIGNMENT,
                    (uintptr_t)in % ALIGNMENT ? "input" : "output",
                    (uintptr_t)in % ALIGNMENT ? in : (const void *)out);
    spf_status status = execute(d, d->plan, in, out, d->workspace, stream);
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
    for (int i = d->owned_count - 1; i >= 0; i--)
        (void)d->dnn->BackendDestroyDescriptor(d->owned[i]);
    if (d->handle)
        (void)d->dnn->Destroy(d->handle);
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
