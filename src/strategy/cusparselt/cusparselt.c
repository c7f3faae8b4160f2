/* The CUSPARSELT strategy: a 2:4 matrix (at most two nonzeros in every
 * aligned group of four columns of a row) multiplied by NVIDIA's
 * cuSPARSELt on the sparse tensor cores, loaded at run time
 * (cusparselt_api.h). It stands beside the structured strategy, spforge's
 * own 2:4 kernels: at large N the vendor's tiles win (on 11008×4096 at
 * N = 2048, 184 µs against 297 µs for the plan spforge kept), at small N
 * ours do, and AUTO times both cold and keeps the faster.
 *
 * Operands. A is the structured operand, row-major M×K, op N: its groups
 * of four run along K, as the 2:4 rule wants. B and C are described in
 * the order their layout stores them: B n_last is row-major K×N, n_first
 * column-major K×N (an N×K row-major array); C likewise M×N.
 *
 * Build. A is expanded on the device (gpu/dense_copy.h) and compressed by
 * cuSPARSELt; the dense copy is freed after. With the self-check's buffers
 * the first CUSLT_TIMED algorithm ids are timed by the planner's cold rule
 * and the fastest kept (id 0 is cuSPARSELt's default, what torch's
 * to_sparse_semi_structured runs); A is compressed again for each plan, as
 * the compressed layout is the plan's.
 *
 * Epilogue. ReLU alone is cuSPARSELt's activation. The bias is float32 in
 * spforge and one value per row of A; it is added (with the ReLU after it)
 * by gpu/elementwise.h's pass on the same stream, as the dense strategy
 * does for its f16 and bf16 plans.
 *
 * Workspace. An algorithm that needs scratch gets it per plan, and the
 * plan's launches are then ordered one after another (gpu/launch_order.h),
 * as the dense strategy's are. */
#include "strategy/strategy.h"

#include "core/dtype.h"
#include "core/error.h"
#include "core/matrix.h"
#include "strategy/roofline.h"

#include <stdio.h>
#include <string.h>

/* At most two nonzeros in each aligned group of four columns of every row
 * (col_idx is sorted within a row). */
static int two_four(const spf_matrix *a)
{
    for (int64_t r = 0; r < a->rows; r++) {
        int64_t group = -1;
        int count = 0;
        for (int64_t j = a->row_ptr[r]; j < a->row_ptr[r + 1]; j++) {
            int64_t g = a->col_idx[j] / 4;
            count = g == group ? count + 1 : 1;
            group = g;
            if (count > 2)
                return 0;
        }
    }
    return 1;
}

/* A compressed to half its columns in the dtype plus 2 bits of metadata a
 * kept value, B and C once; with the bias pass a second launch reading and
 * writing C; the sparse tensor cores at twice the dense rate. */
static double cuslt_estimate_us(const problem *p, const spf_device_info *dev)
{
    double e = (double)dtype_size(p->dtype);
    double m = (double)p->m, k = (double)p->k, n = (double)p->n;
    double bytes = m * k * (e / 2 + 1.0 / 8) + (k * n + m * n) * e + (p->bias ? 2 * m * n * e : 0);
    double peak = 2 * roofline_peak_flops(dev, p->dtype, p->math, ROOFLINE_TENSOR_CORES);
    return roofline_us(2 * m * k * n, bytes, peak, roofline_bandwidth(dev), 1 + p->bias);
}

#ifdef SPF_HAVE_CUDA

#include "core/alloc.h"
#include "core/log.h"
#include "gpu/cuda_check.h"
#include "gpu/dense_copy.h"
#include "gpu/elementwise.h"
#include "gpu/launch_order.h"
#include "gpu/timing.h"
#include "strategy/cusparselt/cusparselt_api.h"

#include <stdint.h>

/* The alignment promised for B and C (cudaMalloc and torch give 256), and
 * how many algorithm ids build times. */
enum { CUSLT_ALIGN = 16, CUSLT_TIMED = 6 };

typedef struct cuslt_state {
    const cuslt_api *lt;
    cuslt_handle handle;
    cuslt_mat a_desc, b_desc, c_desc;
    cuslt_matmul matmul;
    cuslt_alg alg;
    cuslt_plan plan;
    int have_handle, have_descs, have_alg, have_plan;
    int alg_id, alg_max;
    void *a;                /* A compressed, the plan's                   */
    size_t a_bytes;
    void *ws;               /* the algorithm's workspace, or NULL         */
    size_t ws_bytes;
    launch_order ws_order;  /* launches using ws one after another        */
    int64_t m, n;
    spf_dtype dtype;
    spf_layout c_layout;
    int bias, relu;
} cuslt_state;

static spf_status status_of(const cuslt_api *lt, cuslt_status st, const char *stmt,
                            const char *file, int line, const char *func)
{
    if (st == CUSLT_STATUS_SUCCESS)
        return SPF_OK;
    /* A refusal means "not this candidate" to the planner; a failed
     * allocation or execution is what it is. */
    spf_status code = SPF_ERR_UNSUPPORTED;
    if (st == CUSLT_STATUS_ALLOC_FAILED)
        code = SPF_ERR_OUT_OF_MEMORY;
    else if (st == CUSLT_STATUS_EXECUTION_FAILED || st == CUSLT_STATUS_INTERNAL_ERROR ||
             st == CUSLT_STATUS_MAPPING_ERROR)
        code = SPF_ERR_CUDA;
    return error_set(code, func, "%s:%d: %s: cuSPARSELt: %s (%d)", file, line, stmt,
                     lt->GetErrorString(st), (int)st);
}

#define CUSLT_CHECK(lt, call) status_of((lt), (lt)->call, #call, __FILE__, __LINE__, __func__)

/* The plan and the algorithm selection it was made from go together: a
 * selection whose CONFIG_ID is set again after a plan was made from it
 * and destroyed crashed the next MatmulPlanInit (0.8.0, H200), so each
 * plan gets a selection of its own, as torch's cuSPARSELt path does. */
static void plan_drop(cuslt_state *s)
{
    if (s->have_plan)
        (void)s->lt->MatmulPlanDestroy(&s->plan);
    if (s->have_alg)
        (void)s->lt->MatmulAlgSelectionDestroy(&s->alg);
    s->have_plan = s->have_alg = 0;
}

static void workspace_drop(cuslt_state *s)
{
    cuda_free_quiet(s->ws);
    launch_order_release(&s->ws_order);
    s->ws = NULL, s->ws_bytes = 0;
}

static void cuslt_release(void *state)
{
    cuslt_state *s = state;
    if (!s)
        return;
    plan_drop(s);
    if (s->have_descs) {
        (void)s->lt->MatDescriptorDestroy(&s->a_desc);
        (void)s->lt->MatDescriptorDestroy(&s->b_desc);
        (void)s->lt->MatDescriptorDestroy(&s->c_desc);
    }
    if (s->have_handle)
        (void)s->lt->Destroy(&s->handle);
    cuda_free_quiet(s->a);
    workspace_drop(s);
    mem_free(s);
}

static cudaDataType data_type(spf_dtype dtype)
{
    return dtype == SPF_DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_16F;
}

/* Row-major R×C when the layout stores it that way (n_last), else the
 * column-major R×C of an array stored C×R row-major (n_first). */
static spf_status describe_dense(const cuslt_state *s, cuslt_mat *d, int64_t rows, int64_t cols,
                                 spf_layout layout)
{
    int n_last = layout == SPF_LAYOUT_N_LAST;
    return CUSLT_CHECK(s->lt, DenseDescriptorInit(&s->handle, d, rows, cols, n_last ? cols : rows,
                                                  CUSLT_ALIGN, data_type(s->dtype),
                                                  n_last ? CUSLT_ORDER_ROW
                                                         : CUSLT_ORDER_COL));
}

/* Handle, descriptors, the matmul (with the ReLU when it is cuSPARSELt's)
 * and the algorithm selection, its id range read. */
static spf_status state_create(const problem *p, cuslt_state **out)
{
    *out = NULL;
    char why[700];
    const cuslt_api *lt = cuslt_get(why, sizeof why);
    if (!lt)
        return FAIL(SPF_ERR_UNSUPPORTED, "cusparselt: unavailable: %s", why);
    cuslt_state *s = mem_calloc(1, sizeof *s);
    if (!s)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "cusparselt: plan state");
    s->lt = lt;
    s->m = p->m, s->n = p->n;
    s->dtype = p->dtype;
    s->c_layout = p->c_layout;
    s->bias = p->bias, s->relu = p->relu;
    spf_status status = SPF_OK;
    TRY(CUSLT_CHECK(lt, Init(&s->handle)));
    s->have_handle = 1;
    TRY(CUSLT_CHECK(lt, StructuredDescriptorInit(&s->handle, &s->a_desc, p->m, p->k, p->k,
                                                 CUSLT_ALIGN, data_type(p->dtype),
                                                 CUSLT_ORDER_ROW, CUSLT_SPARSITY_50_PERCENT)));
    spf_status b_st = describe_dense(s, &s->b_desc, p->k, p->n, p->b_layout);
    spf_status c_st = b_st == SPF_OK ? describe_dense(s, &s->c_desc, p->m, p->n, p->c_layout)
                                     : b_st;
    if (b_st == SPF_OK && c_st != SPF_OK)
        (void)lt->MatDescriptorDestroy(&s->b_desc);
    if (c_st != SPF_OK)
        (void)lt->MatDescriptorDestroy(&s->a_desc);
    TRY(c_st);
    s->have_descs = 1;
    TRY(CUSLT_CHECK(lt, MatmulDescriptorInit(&s->handle, &s->matmul,
                                             CUSLT_OP_N,
                                             CUSLT_OP_N, &s->a_desc,
                                             &s->b_desc, &s->c_desc, &s->c_desc,
                                             CUSLT_COMPUTE_32F)));
    if (p->relu && !p->bias) {
        int on = 1;
        TRY(CUSLT_CHECK(lt, MatmulDescSetAttribute(&s->handle, &s->matmul, CUSLT_ACTIVATION_RELU,
                                                   &on, sizeof on)));
    }
    TRY(CUSLT_CHECK(lt, MatmulAlgSelectionInit(&s->handle, &s->alg, &s->matmul,
                                               CUSLT_ALG_DEFAULT)));
    s->have_alg = 1;
    TRY(CUSLT_CHECK(lt, MatmulAlgGetAttribute(&s->handle, &s->alg, CUSLT_ALG_CONFIG_MAX_ID,
                                              &s->alg_max, sizeof s->alg_max)));
    plan_drop(s); /* each plan makes its own selection (plan_drop) */
    *out = s;
    return SPF_OK;
fail:
    cuslt_release(s);
    return status;
}

/* The plan of algorithm id, and A compressed for it from its dense copy
 * (the compressed buffer grown when the plan needs more). */
static spf_status plan_make(cuslt_state *s, int id, const void *dense_a)
{
    const cuslt_api *lt = s->lt;
    spf_status status = SPF_OK;
    void *scratch = NULL;
    plan_drop(s);
    TRY(CUSLT_CHECK(lt, MatmulAlgSelectionInit(&s->handle, &s->alg, &s->matmul,
                                               CUSLT_ALG_DEFAULT)));
    s->have_alg = 1;
    TRY(CUSLT_CHECK(lt, MatmulAlgSetAttribute(&s->handle, &s->alg, CUSLT_ALG_CONFIG_ID, &id,
                                              sizeof id)));
    TRY(CUSLT_CHECK(lt, MatmulPlanInit(&s->handle, &s->plan, &s->matmul, &s->alg)));
    s->have_plan = 1;
    s->alg_id = id;
    size_t bytes = 0, scratch_bytes = 0;
    TRY(CUSLT_CHECK(lt, SpMMACompressedSize(&s->handle, &s->plan, &bytes, &scratch_bytes)));
    if (bytes > s->a_bytes) {
        cuda_free_quiet(s->a);
        s->a = NULL, s->a_bytes = 0;
        TRY(CUDA_CHECK(cudaMalloc(&s->a, bytes)));
        s->a_bytes = bytes;
    }
    if (scratch_bytes)
        TRY(CUDA_CHECK(cudaMalloc(&scratch, scratch_bytes)));
    TRY(CUSLT_CHECK(lt, SpMMACompress(&s->handle, &s->plan, dense_a, s->a, scratch, NULL)));
    TRY(CUDA_CHECK(cudaStreamSynchronize(NULL)));
fail:
    cuda_free_quiet(scratch);
    return status;
}

/* The workspace the plan's algorithm needs, kept (with its ordering). */
static spf_status workspace_keep(cuslt_state *s)
{
    size_t bytes = 0;
    spf_status status = SPF_OK;
    workspace_drop(s);
    TRY(CUSLT_CHECK(s->lt, MatmulGetWorkspace(&s->handle, &s->plan, &bytes)));
    if (bytes) {
        TRY(CUDA_CHECK(cudaMalloc(&s->ws, bytes)));
        s->ws_bytes = bytes;
        TRY(launch_order_init(&s->ws_order, "cusparselt"));
    }
fail:
    return status;
}

/* One product: the matmul and, with a bias, the bias and ReLU pass. */
static spf_status cuslt_run(const cuslt_state *s, const void *b, void *c, const float *bias,
                            void *stream)
{
    const float alpha = 1.0f, beta = 0.0f;
    cudaStream_t st = (cudaStream_t)stream;
    spf_status status = CUSLT_CHECK(s->lt, Matmul(&s->handle, &s->plan, &alpha, s->a, b, &beta,
                                                  c, c, s->ws, &st, 1));
    if (status == SPF_OK && s->bias)
        status = elementwise_epilogue(s->dtype, c, bias, s->m,
                                      s->c_layout == SPF_LAYOUT_N_FIRST ? 1 : s->n, NULL,
                                      s->m * s->n, s->relu, stream);
    return status;
}

typedef struct cuslt_call {
    const cuslt_state *s;
    const void *b;
    void *c;
    const float *bias;
} cuslt_call;

static spf_status call_run(const void *ctx, void *stream)
{
    const cuslt_call *call = ctx;
    return cuslt_run(call->s, call->b, call->c, call->bias, stream);
}

static spf_status cuslt_launch(const void *state, const void *b, void *c, const float *bias,
                               void *stream)
{
    const cuslt_state *s = state;
    if (((uintptr_t)b | (uintptr_t)c) % CUSLT_ALIGN)
        return FAIL(SPF_ERR_UNSUPPORTED, "cusparselt plans need B and C aligned to %d bytes "
                    "(cuSPARSELt's plan was made for that; cudaMalloc gives 256)", CUSLT_ALIGN);
    if (!s->ws)
        return cuslt_run(s, b, c, bias, stream);
    cuslt_call call = {s, b, c, bias};
    return launch_ordered(&s->ws_order, call_run, &call, stream);
}

typedef struct timed_run {
    const cuslt_state *s;
    const selfcheck *check;
} timed_run;

static spf_status timed_launch(void *ctx, void *stream)
{
    const timed_run *t = ctx;
    return cuslt_run(t->s, t->check->b, t->check->c, t->check->bias, stream);
}

/* The fastest of the first CUSLT_TIMED algorithm ids on the self-check's
 * buffers, by the planner's timing rule; an id that cannot be planned or
 * run is passed over. */
static spf_status time_ids(cuslt_state *s, const void *dense_a, const selfcheck *check,
                           int *best, double *best_us, int *tried)
{
    spf_status last = SPF_OK;
    *best = -1, *tried = 0;
    for (int id = 0; id <= s->alg_max && id < CUSLT_TIMED; id++) {
        timing_result r;
        timing_options topt;
        selfcheck_timing(check, &topt);
        timed_run t = {s, check};
        spf_status st = plan_make(s, id, dense_a);
        if (st == SPF_OK)
            st = workspace_keep(s);
        if (st == SPF_OK)
            st = timing_measure(timed_launch, &t, NULL, &topt, &r);
        ++*tried;
        if (st != SPF_OK) {
            log_msg(SPF_LOG_DEBUG, "cusparselt: algorithm %d did not run: %s", id,
                    spf_last_error());
            if (st != SPF_ERR_UNSUPPORTED && st != SPF_ERR_OUT_OF_MEMORY)
                return st; /* a failed execution is not a slow candidate */
            last = st;
            error_clear();
            continue;
        }
        log_msg(SPF_LOG_DEBUG, "cusparselt: algorithm %d: %.2f us", id, r.median_us);
        if (*best < 0 || r.median_us < *best_us)
            *best = id, *best_us = r.median_us;
    }
    if (*best < 0)
        return last != SPF_OK ? last : FAIL(SPF_ERR_UNSUPPORTED, "cusparselt: no algorithm ran");
    return SPF_OK;
}

static void info_fill(const cuslt_state *s, const problem *p, spf_plan_info *info)
{
    snprintf(info->kernel_name, sizeof info->kernel_name, "cusparselt_%s_b_%s_c_%s",
             dtype_name(p->dtype), spf_layout_name(p->b_layout), spf_layout_name(p->c_layout));
    snprintf(info->config, sizeof info->config, "algo %d of 0..%d, workspace %zu KiB, %s",
             s->alg_id, s->alg_max, (s->ws_bytes + 1023) / 1024,
             s->bias ? "bias_kernel" : s->relu ? "epilogue relu" : "epilogue none");
    info->device_bytes = (int64_t)(s->a_bytes + s->ws_bytes);
}

/* The state with algorithm id (or, with the self-check's buffers and id
 * < 0, the fastest of the timed ones), A compressed for its plan. */
static spf_status state_build(const problem *p, const strategy_env *env, int id,
                              cuslt_state **out, spf_plan_info *info)
{
    cuslt_state *s = NULL;
    void *dense_a = NULL;
    spf_status status = SPF_OK;
    *out = NULL;
    TRY(state_create(p, &s));
    double t0 = timing_now_s();
    TRY(dense_copy_make(p->a, p->dtype, "cusparselt", &dense_a));
    info->load_s = timing_now_s() - t0;
    if (id < 0 && env->check) {
        double us = 0;
        int tried = 0;
        t0 = timing_now_s();
        TRY(time_ids(s, dense_a, env->check, &id, &us, &tried));
        info->tune_s = timing_now_s() - t0;
        info->kernel_us = us;
        info->configs_tried = tried;
    }
    if (id < 0)
        id = 0;
    if (id > s->alg_max)
        FAIL_GOTO(SPF_ERR_PARSE, "cusparselt: algorithm %d, the library has 0..%d", id,
                  s->alg_max);
    if (!s->have_plan || s->alg_id != id)
        TRY(plan_make(s, id, dense_a));
    TRY(workspace_keep(s));
    info_fill(s, p, info);
    *out = s;
    s = NULL;
fail:
    cuda_free_quiet(dense_a);
    cuslt_release(s);
    return status;
}

static spf_status cuslt_build(const problem *p, const strategy_env *env, void **state,
                              spf_plan_info *info)
{
    cuslt_state *s = NULL;
    spf_status st = state_build(p, env, -1, &s, info);
    *state = s;
    return st;
}

/* The cache entry: the library release that chose and the algorithm id. */
enum { CUSLT_BLOB_FORMAT = 1 };

typedef struct cuslt_blob {
    char magic[4];    /* "SPFL"              */
    uint32_t format;  /* CUSLT_BLOB_FORMAT   */
    int32_t version;  /* cuSPARSELt release  */
    int32_t alg_id;
} cuslt_blob;

static spf_status cuslt_encode(const void *state, unsigned char **bytes, size_t *size)
{
    const cuslt_state *s = state;
    *bytes = NULL, *size = 0;
    cuslt_blob *blob = mem_calloc(1, sizeof *blob);
    if (!blob)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "cusparselt: cache entry");
    memcpy(blob->magic, "SPFL", 4);
    blob->format = CUSLT_BLOB_FORMAT;
    blob->version = s->lt->version;
    blob->alg_id = s->alg_id;
    *bytes = (unsigned char *)blob;
    *size = sizeof *blob;
    return SPF_OK;
}

static spf_status cuslt_decode(const problem *p, const strategy_env *env,
                               const spf_plan_info *stored, const unsigned char *bytes,
                               size_t size, void **state)
{
    (void)stored;
    *state = NULL;
    cuslt_blob blob;
    if (!bytes || size != sizeof blob)
        return FAIL(SPF_ERR_PARSE, "cusparselt: cache entry of %zu bytes, expected %zu", size,
                    sizeof blob);
    memcpy(&blob, bytes, sizeof blob);
    if (memcmp(blob.magic, "SPFL", 4) != 0 || blob.format != CUSLT_BLOB_FORMAT ||
        blob.alg_id < 0)
        return FAIL(SPF_ERR_PARSE, "cusparselt: malformed cache entry");
    char why[700];
    const cuslt_api *lt = cuslt_get(why, sizeof why);
    if (!lt)
        return FAIL(SPF_ERR_UNSUPPORTED, "cusparselt: unavailable: %s", why);
    if (blob.version != lt->version)
        return FAIL(SPF_ERR_PARSE, "cusparselt: cache entry chosen with cuSPARSELt %d, loaded "
                    "is %d", blob.version, lt->version);
    spf_plan_info info;
    memset(&info, 0, sizeof info);
    strategy_env none = *env;
    none.check = NULL; /* the stored id, not timed again */
    cuslt_state *s = NULL;
    spf_status st = state_build(p, &none, blob.alg_id, &s, &info);
    *state = s;
    return st;
}

static int cuslt_available(char *reason, size_t cap)
{
    return cuslt_get(reason, cap) != NULL;
}

static int cuslt_supports(const problem *p, const spf_device_info *dev, const spf_plan_options *o,
                          char *reason, size_t cap)
{
    (void)o;
    if (!strategy_supports_16bit(p, dev, "the sparse tensor cores' mma.sp",
                                 "2:4 is the 16-bit types' sparsity", reason, cap))
        return 0;
    if (p->m == 0 || p->k == 0 || p->n == 0 || p->m % 16 || p->k % 16) {
        snprintf(reason, cap, "M and K must be nonzero multiples of 16 and N nonzero (the "
                 "structured operand's tiles); A is %lld×%lld, N = %lld", (long long)p->m,
                 (long long)p->k, (long long)p->n);
        return 0;
    }
    if (!two_four(p->a)) {
        snprintf(reason, cap, "A is not 2:4 (a group of four columns of a row holds more than "
                 "two nonzeros)");
        return 0;
    }
    char why[700];
    if (!cuslt_available(why, sizeof why)) {
        snprintf(reason, cap, "unavailable: %s", why);
        return 0;
    }
    return 1;
}

#else /* no CUDA: supports() refuses, so none of these runs */

static int cuslt_supports(const problem *p, const spf_device_info *dev, const spf_plan_options *o,
                          char *reason, size_t cap)
{
    (void)p, (void)dev, (void)o, (void)two_four;
    snprintf(reason, cap, "built without CUDA");
    return 0;
}

#define cuslt_available NULL
#define cuslt_build strategy_build_without_cuda
#define cuslt_launch strategy_launch_without_cuda
#define cuslt_release strategy_release_nothing
#define cuslt_encode NULL
#define cuslt_decode NULL

#endif

const strategy strategy_cusparselt = {
    .id = SPF_STRATEGY_CUSPARSELT,
    .name = "cusparselt",
    .on_device = 1,
    .available = cuslt_available,
    .supports = cuslt_supports,
    .estimate_us = cuslt_estimate_us,
    .build = cuslt_build,
    .launch = cuslt_launch,
    .release = cuslt_release,
    .encode = cuslt_encode,
    .decode = cuslt_decode,
};
