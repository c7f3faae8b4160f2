/* The DENSE strategy (DESIGN.md decision 7): A expanded on the device into
 * an M×K row-major copy in the plan's dtype, multiplied by cuBLASLt, which
 * is loaded at run time (cublaslt.h). It is the floor of AUTO: timed
 * whenever allowed, so that a plan is never slower than dense.
 *
 * Layouts. spforge's matrices are row-major, cuBLASLt's column-major, and a
 * row-major R×S matrix is the column-major S×R one. The dense A (M×K
 * row-major) is the column-major K×M matrix Aᵀ, ld K. B n_last (K×N) is the
 * column-major N×K matrix Bᵀ, ld N; B n_first (N×K) is the column-major
 * K×N matrix B, ld K.
 *   - C n_first (N×M row-major = column-major M×N, ld M): D = A·B, with
 *     op(Aᵀ) = T and op(B) = T for n_last, N for n_first. D's rows are A's
 *     rows, so the epilogue's bias (one value per row of D) is spforge's.
 *   - C n_last (M×N row-major = column-major N×M, ld N): D = Cᵀ = Bᵀ·Aᵀ,
 *     with B first (op N for n_last, T for n_first) and Aᵀ second (op N).
 *     The bias runs along D's columns, which no epilogue offers: the bias
 *     (and the ReLU after it) is elementwise_epilogue's, a pass over C after
 *     the matmul on the same stream (config says "bias_kernel").
 * In short op(A slot) and op(B slot) are: Aᵀ gets T when C is n_first; B
 * gets N when its layout is C's, else T.
 *
 * Bias type: cuBLASLt's epilogue bias has D's element type (cublasLt.h,
 * CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: "the same type as the elements of
 * output matrix (Dtype)", the exceptions being IMMA and fp8 kernels), and
 * spforge's bias is float32: only an f32 plan takes it in the epilogue;
 * f16 and bf16 ones use the bias kernel. ReLU alone is the epilogue's in
 * every case. When the heuristic has no algorithm with the epilogue, the
 * plan falls back to none and the kernel does bias and ReLU.
 *
 * Workspace. Some cuBLASLt algorithms need scratch memory (split-K and
 * stream-K partial sums): on the H100, TF32 BERT 3072×768 at N = 4096 ran
 * 107 us with none against 65 us with 32 MiB allowed, as fast as cuBLAS
 * TF32. A workspace is shared by every launch of the plan, and
 * spf_plan_execute promises that one plan runs on several streams at once
 * (spforge.h, tests/gpu/test_threads.c). So build times the heuristic's
 * first algorithms without a workspace and with one, and keeps a workspace
 * only when it wins by more than DENSE_WORKSPACE_GAIN; such a plan orders
 * its launches one after another on the GPU (each waits for an event the
 * previous one recorded, under a lock, so no host synchronization),
 * except inside a stream capture, where the graph's own order holds. Each
 * launch builds its operation descriptor on its own stack (the bias
 * pointer is a descriptor attribute); the plan's state is read only after
 * build.
 *
 * Alignment. cuBLASLt's heuristic assumes 256-byte aligned buffers unless
 * told otherwise; the plan tells it 16 bytes for B, C and the bias, the
 * alignment its vector loads and Hopper's TMA need, and a launch with less
 * is refused with a message rather than risking an algorithm that assumed
 * more. cudaMalloc and torch's allocator give 256 or more. */
#include "strategy/strategy.h"

#include "core/dtype.h"
#include "core/error.h"
#include "strategy/roofline.h"

#include <stdio.h>
#include <string.h>

/* Whether cuBLASLt's epilogue can add spforge's bias (above): along D's
 * rows (C n_first) and in D's type (float32). */
static int epilogue_takes_bias(const problem *p)
{
    return p->dtype == SPF_DTYPE_F32 && p->c_layout == SPF_LAYOUT_N_FIRST;
}

/* The roofline (strategy/roofline.h) of the matmul on tensor cores (TF32
 * for f32 under TF32 math; the CUDA cores' fp32 rate for exact f32): 2·M·K·N
 * FLOPs against the dense A, B and C once each, and with the bias kernel a
 * second launch and a read and write of C. */
static double dense_estimate_us(const problem *p, const spf_device_info *dev)
{
    double e = (double)dtype_size(p->dtype);
    double m = (double)p->m, k = (double)p->k, n = (double)p->n;
    int kernel = p->bias && !epilogue_takes_bias(p);
    double bytes = (m * k + k * n + m * n) * e + (kernel ? 2 * m * n * e : 0);
    double peak = roofline_peak_flops(dev, p->dtype, p->math, ROOFLINE_TENSOR_CORES);
    return roofline_us(2 * m * k * n, bytes, peak, roofline_bandwidth(dev), 1 + kernel);
}

#ifdef SPF_HAVE_CUDA

#include "core/alloc.h"
#include "core/log.h"
#include "core/matrix.h"
#include "gpu/cuda_check.h"
#include "gpu/dense_copy.h"
#include "gpu/elementwise.h"
#include "gpu/launch_order.h"
#include "gpu/timing.h"
#include "core/hash.h"
#include "strategy/dense/cublaslt.h"
#include "strategy/dense/dense_memo.h"

#include <pthread.h>
#include <stdint.h>

/* The alignment promised to the heuristic for B, C and the bias (above). */
enum { DENSE_ALIGN = 16 };
/* Algorithms asked of the heuristic, and how many of its first are timed. */
enum { HEURISTIC_ALGOS = 8, TIMED_ALGOS = 4 };
/* The most workspace build offers the heuristic (cuBLAS's own default on
 * Hopper), and the gain over the best algorithm without one that makes a
 * plan keep one (above: a workspace orders the plan's launches). */
#define DENSE_WORKSPACE_MAX ((uint64_t)32 << 20)
#define DENSE_WORKSPACE_GAIN 0.03

/* cuBLASLt's types for a dtype and math mode. */
typedef struct lt_types {
    cublasComputeType_t compute;
    cudaDataType_t scale; /* of alpha and beta */
    cudaDataType_t data;  /* of A, B, C and D  */
} lt_types;

static int lt_types_of(spf_dtype dtype, spf_math math, lt_types *out)
{
    /* f32: exact fp32 (32F does not use TF32 unless asked), or TF32 tensor
     * cores; f16 / bf16: fp32 accumulation and scale, or (F16X2) fp16
     * accumulation with fp16 alpha and beta. */
    static const struct {
        spf_dtype dtype;
        spf_math math;
        lt_types t;
    } map[] = {
        {SPF_DTYPE_F32, SPF_MATH_DEFAULT, {CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F}},
        {SPF_DTYPE_F32, SPF_MATH_TF32, {CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F, CUDA_R_32F}},
        {SPF_DTYPE_F16, SPF_MATH_DEFAULT, {CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16F}},
        {SPF_DTYPE_F16, SPF_MATH_F16X2, {CUBLAS_COMPUTE_16F, CUDA_R_16F, CUDA_R_16F}},
        {SPF_DTYPE_BF16, SPF_MATH_DEFAULT, {CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF}},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (map[i].dtype == dtype && map[i].math == math) {
            *out = map[i].t;
            return 1;
        }
    return 0;
}

/* What the matmul's epilogue applies and whether elementwise_epilogue runs
 * after it: the plan's first choice, or (fallback) no epilogue at all. */
static void epilogue_choose(const problem *p, int fallback, cublasLtEpilogue_t *epilogue,
                            int *bias_kernel)
{
    if (fallback) {
        *epilogue = CUBLASLT_EPILOGUE_DEFAULT;
        *bias_kernel = p->bias || p->relu;
    } else if (p->bias && epilogue_takes_bias(p)) {
        *epilogue = p->relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
        *bias_kernel = 0;
    } else if (p->bias) { /* the kernel adds the bias, so the ReLU after it is its too */
        *epilogue = CUBLASLT_EPILOGUE_DEFAULT;
        *bias_kernel = 1;
    } else {
        *epilogue = p->relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT;
        *bias_kernel = 0;
    }
}

typedef struct dense_state {
    const cublaslt_api *lt;
    cublasLtHandle_t handle;       /* one per plan, created on the plan's device    */
    void *a;                       /* device, m × k row-major of dtype: A expanded  */
    int64_t m, k, n;
    spf_dtype dtype;
    spf_layout b_layout, c_layout;
    int bias, relu;
    lt_types types;
    cublasLtEpilogue_t epilogue;
    int bias_kernel;               /* elementwise_epilogue after the matmul         */
    cublasLtMatrixLayoutOpaque_t a_desc, b_desc, d_desc; /* Aᵀ, B, D (= C)        */
    cublasLtMatmulAlgo_t algo;
    void *ws;                      /* the algorithm's workspace, or NULL            */
    uint64_t ws_bytes;
    launch_order ws_order;         /* launches using ws one after another           */
} dense_state;

static spf_status lt_status(const cublaslt_api *lt, cublasStatus_t st, const char *stmt,
                            const char *file, int line, const char *func)
{
    if (st == CUBLAS_STATUS_SUCCESS)
        return SPF_OK;
    /* A refusal (not supported, invalid value, architecture mismatch, not
     * initialized) means "not this candidate" to the planner; a failed
     * allocation or execution is what it is. */
    spf_status code = SPF_ERR_UNSUPPORTED;
    if (st == CUBLAS_STATUS_ALLOC_FAILED)
        code = SPF_ERR_OUT_OF_MEMORY;
    else if (st == CUBLAS_STATUS_EXECUTION_FAILED || st == CUBLAS_STATUS_INTERNAL_ERROR ||
             st == CUBLAS_STATUS_MAPPING_ERROR)
        code = SPF_ERR_CUDA;
    return error_set(code, func, "%s:%d: %s: cuBLASLt: %s (%d)", file, line, stmt,
                     lt->GetStatusString(st), (int)st);
}

/* A cuBLASLt call through the loaded table, checked like CUDA_CHECK. */
#define LT_CHECK(lt, call) lt_status((lt), (lt)->call, #call, __FILE__, __LINE__, __func__)

static const char *epilogue_name(cublasLtEpilogue_t e)
{
    switch (e) {
    case CUBLASLT_EPILOGUE_RELU: return "relu";
    case CUBLASLT_EPILOGUE_BIAS: return "bias";
    case CUBLASLT_EPILOGUE_RELU_BIAS: return "relu_bias";
    default: return "none";
    }
}

/* The matrix layouts (the header comment's table). */
static spf_status layouts_init(dense_state *s)
{
    const cublaslt_api *lt = s->lt;
    cudaDataType_t t = s->types.data;
    uint64_t m = (uint64_t)s->m, k = (uint64_t)s->k, n = (uint64_t)s->n;
    spf_status st = LT_CHECK(lt, MatrixLayoutInit_internal(&s->a_desc, sizeof s->a_desc, t, k, m,
                                                           (int64_t)k));
    if (st == SPF_OK)
        st = s->b_layout == SPF_LAYOUT_N_LAST
                 ? LT_CHECK(lt, MatrixLayoutInit_internal(&s->b_desc, sizeof s->b_desc, t, n, k,
                                                          (int64_t)n))
                 : LT_CHECK(lt, MatrixLayoutInit_internal(&s->b_desc, sizeof s->b_desc, t, k, n,
                                                          (int64_t)k));
    if (st == SPF_OK)
        st = s->c_layout == SPF_LAYOUT_N_FIRST
                 ? LT_CHECK(lt, MatrixLayoutInit_internal(&s->d_desc, sizeof s->d_desc, t, m, n,
                                                          (int64_t)m))
                 : LT_CHECK(lt, MatrixLayoutInit_internal(&s->d_desc, sizeof s->d_desc, t, n, m,
                                                          (int64_t)n));
    return st;
}

/* The operation descriptor of one matmul, in caller storage (a launch's
 * stack): types, transposes, the epilogue and its bias pointer. */
static spf_status desc_init(const dense_state *s, cublasLtMatmulDescOpaque_t *desc,
                            const float *bias)
{
    const cublaslt_api *lt = s->lt;
    cublasOperation_t op_a = s->c_layout == SPF_LAYOUT_N_FIRST ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t op_b = s->b_layout == s->c_layout ? CUBLAS_OP_N : CUBLAS_OP_T;
    /* The A slot holds Aᵀ when C is n_first, B otherwise. */
    cublasOperation_t first = s->c_layout == SPF_LAYOUT_N_FIRST ? op_a : op_b;
    cublasOperation_t second = s->c_layout == SPF_LAYOUT_N_FIRST ? op_b : op_a;
    uint32_t epilogue = (uint32_t)s->epilogue;
    spf_status status = SPF_OK;
    TRY(LT_CHECK(lt, MatmulDescInit_internal(desc, sizeof *desc, s->types.compute,
                                             s->types.scale)));
    TRY(LT_CHECK(lt, MatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &first,
                                            sizeof first)));
    TRY(LT_CHECK(lt, MatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &second,
                                            sizeof second)));
    TRY(LT_CHECK(lt, MatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                            sizeof epilogue)));
    if (s->epilogue & CUBLASLT_EPILOGUE_BIAS)
        TRY(LT_CHECK(lt, MatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                sizeof bias)));
fail:
    return status;
}

/* The operands in cuBLASLt's slots: (Aᵀ, B) when C is n_first, (B, Aᵀ)
 * otherwise. cuBLASLt takes layouts by non-const pointer and only reads
 * them. */
typedef struct slots {
    const void *x, *y;
    cublasLtMatrixLayout_t x_desc, y_desc, d_desc;
} slots;

static slots slots_of(const dense_state *s, const void *b)
{
    cublasLtMatrixLayout_t a_desc = (cublasLtMatrixLayout_t)&s->a_desc;
    cublasLtMatrixLayout_t b_desc = (cublasLtMatrixLayout_t)&s->b_desc;
    int a_first = s->c_layout == SPF_LAYOUT_N_FIRST;
    slots o = {a_first ? s->a : b, a_first ? b : s->a, a_first ? a_desc : b_desc,
               a_first ? b_desc : a_desc, (cublasLtMatrixLayout_t)&s->d_desc};
    return o;
}

/* One product with algo: the matmul and, when the plan has it, the bias
 * and ReLU pass. No allocation, no synchronization. */
static spf_status dense_run(const dense_state *s, const cublasLtMatmulAlgo_t *algo, const void *b,
                            void *c, const float *bias, void *stream)
{
    cublasLtMatmulDescOpaque_t desc;
    spf_status st = desc_init(s, &desc, bias);
    if (st != SPF_OK)
        return st;
    /* beta = 0: cuBLASLt does not read C, so its contents (the self-check's
     * NaN poison) do not matter. f16 1.0 is 0x3C00. */
    const float one_f = 1.0f, zero_f = 0.0f;
    const uint16_t one_h = 0x3C00, zero_h = 0;
    int half_scale = s->types.scale == CUDA_R_16F;
    slots o = slots_of(s, b);
    st = LT_CHECK(s->lt, Matmul(s->handle, &desc, half_scale ? (const void *)&one_h : &one_f, o.x,
                                o.x_desc, o.y, o.y_desc,
                                half_scale ? (const void *)&zero_h : &zero_f, c, o.d_desc, c,
                                o.d_desc, algo, s->ws, s->ws_bytes, (cudaStream_t)stream));
    if (st == SPF_OK && s->bias_kernel)
        st = elementwise_epilogue(s->dtype, c, s->bias ? bias : NULL, s->m,
                                  s->c_layout == SPF_LAYOUT_N_FIRST ? 1 : s->n, NULL,
                                  s->m * s->n, s->relu, stream);
    return st;
}

/* The workspace and its ordering released (a zeroed one is fine). */
static void workspace_drop(dense_state *s)
{
    cuda_free_quiet(s->ws);
    launch_order_release(&s->ws_order);
    s->ws = NULL, s->ws_bytes = 0;
}

static void dense_release(void *state)
{
    dense_state *s = state;
    if (!s)
        return;
    if (s->handle)
        (void)s->lt->Destroy(s->handle);
    cuda_free_quiet(s->a);
    workspace_drop(s);
    mem_free(s);
}

/* What build and decode share: the state with A's dense copy, the handle
 * and the layouts; the epilogue and the algorithm are left to them. */
static spf_status state_create(const problem *p, dense_state **out, double *expand_s)
{
    *out = NULL;
    char why[256];
    const cublaslt_api *lt = cublaslt_get(why, sizeof why);
    if (!lt)
        return FAIL(SPF_ERR_UNSUPPORTED, "dense: unavailable: %s", why);
    lt_types types;
    if (!lt_types_of(p->dtype, p->math, &types))
        return FAIL(SPF_ERR_UNSUPPORTED, "dense: no cuBLASLt types for %s with math %s",
                    dtype_name(p->dtype), spf_math_name(p->math));
    dense_state *s = mem_calloc(1, sizeof *s);
    if (!s)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "dense: plan state");
    s->lt = lt;
    s->m = p->m, s->k = p->k, s->n = p->n;
    s->dtype = p->dtype;
    s->b_layout = p->b_layout, s->c_layout = p->c_layout;
    s->bias = p->bias, s->relu = p->relu;
    s->types = types;
    spf_status status = SPF_OK;
    TRY(LT_CHECK(lt, Create(&s->handle)));
    double t0 = timing_now_s();
    TRY(dense_copy_make(p->a, p->dtype, "dense", &s->a));
    *expand_s = timing_now_s() - t0;
    TRY(layouts_init(s));
    *out = s;
    return SPF_OK;
fail:
    dense_release(s);
    return status;
}

/* Up to HEURISTIC_ALGOS algorithms for the state's epilogue, best first by
 * the heuristic's estimate; *count 0 when it has none. */
static spf_status heuristic(const dense_state *s, uint64_t workspace,
                            cublasLtMatmulHeuristicResult_t *res, int *count)
{
    const cublaslt_api *lt = s->lt;
    cublasLtMatmulPreferenceOpaque_t pref;
    cublasLtMatmulDescOpaque_t desc;
    const uint32_t align = DENSE_ALIGN;
    spf_status status = SPF_OK;
    *count = 0;
    TRY(LT_CHECK(lt, MatmulPreferenceInit_internal(&pref, sizeof pref)));
    TRY(LT_CHECK(lt, MatmulPreferenceSetAttribute(&pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &workspace, sizeof workspace)));
    const cublasLtMatmulPreferenceAttributes_t user_buffers[] = {
        s->c_layout == SPF_LAYOUT_N_FIRST ? CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES
                                          : CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (size_t i = 0; i < sizeof user_buffers / sizeof user_buffers[0]; i++)
        TRY(LT_CHECK(lt, MatmulPreferenceSetAttribute(&pref, user_buffers[i], &align,
                                                      sizeof align)));
    /* The heuristic does not read the bias; it takes the pointer's
     * alignment from its value (cublasLt.h, CUBLASLT_MATMUL_DESC_BIAS_POINTER):
     * an address aligned to exactly DENSE_ALIGN stands for the user's. */
    TRY(desc_init(s, &desc, (const float *)(uintptr_t)DENSE_ALIGN));
    slots o = slots_of(s, NULL);
    cublasStatus_t st = lt->MatmulAlgoGetHeuristic(s->handle, &desc, o.x_desc, o.y_desc, o.d_desc,
                                                   o.d_desc, &pref, HEURISTIC_ALGOS, res, count);
    if (st == CUBLAS_STATUS_NOT_SUPPORTED) {
        *count = 0;
    } else {
        TRY(lt_status(lt, st, "cublasLtMatmulAlgoGetHeuristic", __FILE__, __LINE__, __func__));
        /* Each result has its own status: keep the usable ones, in order. */
        int kept = 0;
        for (int i = 0; i < *count; i++)
            if (res[i].state == CUBLAS_STATUS_SUCCESS)
                res[kept++] = res[i];
        *count = kept;
    }
fail:
    return status;
}

static int algo_id(const cublaslt_api *lt, const cublasLtMatmulAlgo_t *algo)
{
    int32_t id = -1;
    size_t written = 0;
    if (lt->MatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id,
                                         &written) != CUBLAS_STATUS_SUCCESS)
        return -1;
    return id;
}

typedef struct timed_run {
    const dense_state *s;
    const cublasLtMatmulAlgo_t *algo;
    const selfcheck *check;
} timed_run;

static spf_status timed_launch(void *ctx, void *stream)
{
    const timed_run *t = ctx;
    return dense_run(t->s, t->algo, t->check->b, t->check->c, t->check->bias, stream);
}

/* Time the heuristic's first few on the self-check's buffers and keep the
 * fastest: the heuristic's order is an estimate, and its first is not
 * always the fastest (on odd N especially). A candidate that fails to run
 * is passed over. */
static spf_status time_candidates(dense_state *s, const cublasLtMatmulHeuristicResult_t *res,
                                  int count, int limit, const selfcheck *check, int *best,
                                  double *best_us, int *tried)
{
    spf_status last = SPF_OK;
    *best = -1;
    *tried = 0;
    for (int i = 0; i < count && i < limit; i++) {
        timed_run t = {s, &res[i].algo, check};
        timing_result r;
        timing_options topt;
        selfcheck_timing(check, &topt);
        spf_status st = timing_measure(timed_launch, &t, NULL, &topt, &r);
        ++*tried;
        if (st != SPF_OK) {
            log_msg(SPF_LOG_DEBUG, "dense: algorithm %d (rank %d) did not run: %s",
                    algo_id(s->lt, &res[i].algo), i + 1, spf_last_error());
            last = st;
            continue;
        }
        log_msg(SPF_LOG_DEBUG, "dense: algorithm %d (rank %d): %.2f us",
                algo_id(s->lt, &res[i].algo), i + 1, r.median_us);
        if (*best < 0 || r.median_us < *best_us)
            *best = i, *best_us = r.median_us;
    }
    return *best < 0 ? last : SPF_OK;
}

static void info_fill(const dense_state *s, const problem *p, int rank, int count,
                      spf_plan_info *info)
{
    snprintf(info->kernel_name, sizeof info->kernel_name, "dense_cublaslt_%s_%s_b_%s_c_%s",
             dtype_name(p->dtype), spf_math_name(p->math), spf_layout_name(p->b_layout),
             spf_layout_name(p->c_layout));
    if (s->ws)
        snprintf(info->config, sizeof info->config, "algo %d, workspace %llu KiB, %s%s",
                 algo_id(s->lt, &s->algo), (unsigned long long)(s->ws_bytes + 1023) / 1024,
                 s->bias_kernel ? "bias_kernel" : "epilogue ",
                 s->bias_kernel ? "" : epilogue_name(s->epilogue));
    else
        snprintf(info->config, sizeof info->config, "algo %d, heuristic rank %d of %d, %s%s",
                 algo_id(s->lt, &s->algo), rank, count, s->bias_kernel ? "bias_kernel" : "epilogue ",
                 s->bias_kernel ? "" : epilogue_name(s->epilogue));
    info->device_bytes = s->m * s->k * (int64_t)dtype_size(s->dtype) + (int64_t)s->ws_bytes;
}

/* The workspace of ws_bytes the plan keeps, with its ordering. */
static spf_status workspace_keep(dense_state *s, uint64_t ws_bytes)
{
    s->ws_bytes = ws_bytes;
    spf_status st = CUDA_CHECK(cudaMalloc(&s->ws, ws_bytes ? ws_bytes : 1));
    return st == SPF_OK ? launch_order_init(&s->ws_order, "dense") : st;
}

static spf_status dense_launch(const void *state, const void *b, void *c, const float *bias,
                               void *stream);

static spf_status ordered_launch(void *ctx, void *stream)
{
    const timed_run *t = ctx;
    return dense_launch(t->s, t->check->b, t->check->c, t->check->bias, stream);
}

/* Hopper algorithms with other thread-block cluster shapes than the
 * heuristic's: on the H100, cuBLAS's own TF32 GEMM of LLM 4096×4096 at
 * N = 256 ran algorithm 43 with a 1×2×1 cluster and no workspace (40 us,
 * from CUBLASLT_LOG_LEVEL=5), which the heuristic never offered: its
 * algorithm 43 came with a 1×7×1 cluster and 32 MiB (89 us), its best
 * without a workspace was algorithm 21 (60 us). Each of src's first
 * TIMED_ALGOS in each of these shapes that cuBLASLt accepts
 * (cublasLtMatmulAlgoCheck, which also gives its workspace) goes to out;
 * returns how many. */
static int cluster_variants(const dense_state *s, const cublasLtMatmulHeuristicResult_t *src,
                            int n, cublasLtMatmulHeuristicResult_t *out, int cap)
{
    static const uint16_t shapes[] = {CUBLASLT_CLUSTER_SHAPE_1x1x1, CUBLASLT_CLUSTER_SHAPE_1x2x1,
                                      CUBLASLT_CLUSTER_SHAPE_2x1x1};
    cublasLtMatmulDescOpaque_t desc;
    if (desc_init(s, &desc, (const float *)(uintptr_t)DENSE_ALIGN) != SPF_OK) {
        error_clear();
        return 0;
    }
    slots o = slots_of(s, NULL);
    int count = 0;
    for (int i = 0; i < n && i < TIMED_ALGOS; i++)
        for (size_t j = 0; j < sizeof shapes / sizeof shapes[0] && count < cap; j++) {
            cublasLtMatmulHeuristicResult_t v = src[i];
            uint16_t shape = shapes[j], was = 0;
            size_t written = 0;
            if (s->lt->MatmulAlgoConfigGetAttribute(&v.algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID,
                                                    &was, sizeof was, &written) !=
                    CUBLAS_STATUS_SUCCESS ||
                was == shape ||
                s->lt->MatmulAlgoConfigSetAttribute(&v.algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID,
                                                    &shape, sizeof shape) !=
                    CUBLAS_STATUS_SUCCESS ||
                s->lt->MatmulAlgoCheck(s->handle, &desc, o.x_desc, o.y_desc, o.d_desc, o.d_desc,
                                       &v.algo, &v) != CUBLAS_STATUS_SUCCESS ||
                v.workspaceSize > DENSE_WORKSPACE_MAX)
                continue;
            out[count++] = v;
        }
    return count;
}

/* The heuristic's algorithms that need a workspace (of up to
 * DENSE_WORKSPACE_MAX) and their cluster variants (above), timed with one.
 * A variant that needs no workspace replaces the plan's algorithm when it
 * is faster; one that needs a workspace, or an algorithm of the heuristic's,
 * is kept with a workspace of the size it needs when it beats *best_us
 * (the best without one) by more than DENSE_WORKSPACE_GAIN. No memory for
 * the trial or no such algorithm: the plan stays as it was. */
static spf_status try_workspace(dense_state *s, const cublasLtMatmulHeuristicResult_t *plain,
                                int n_plain, const selfcheck *check, double *best_us, int *tried)
{
    enum { CAP = HEURISTIC_ALGOS + 6 * TIMED_ALGOS };
    cublasLtMatmulHeuristicResult_t res[CAP], free_[6 * TIMED_ALGOS];
    int count = 0, kept = 0, n_free = 0, best = -1, best_free = -1, timed = 0;
    double us = 0, free_us = 0;
    void *trial = NULL;
    if (cudaMalloc(&trial, DENSE_WORKSPACE_MAX) != cudaSuccess) {
        (void)cudaGetLastError();
        log_msg(SPF_LOG_INFO, "dense: no memory to try a workspace; algorithms without one");
        return SPF_OK;
    }
    spf_status st = heuristic(s, DENSE_WORKSPACE_MAX, res, &count);
    for (int i = 0; st == SPF_OK && i < count; i++)
        if (res[i].workspaceSize > 0)
            res[kept++] = res[i];
    if (kept > TIMED_ALGOS)
        kept = TIMED_ALGOS;
    if (st == SPF_OK) { /* variants of both lists: those needing no workspace apart */
        cublasLtMatmulHeuristicResult_t v[6 * TIMED_ALGOS];
        int n = cluster_variants(s, res, kept, v, 3 * TIMED_ALGOS);
        n += cluster_variants(s, plain, n_plain, v + n, 3 * TIMED_ALGOS);
        for (int i = 0; i < n; i++) {
            if (v[i].workspaceSize == 0)
                free_[n_free++] = v[i];
            else
                res[kept++] = v[i];
        }
    }
    s->ws = trial, s->ws_bytes = DENSE_WORKSPACE_MAX;
    int t = 0;
    if (st == SPF_OK && n_free && time_candidates(s, free_, n_free, 6 * TIMED_ALGOS, check,
                                                  &best_free, &free_us, &t) != SPF_OK)
        error_clear(), best_free = -1;
    timed += t, t = 0;
    if (st == SPF_OK && kept)
        st = time_candidates(s, res, kept, CAP, check, &best, &us, &t);
    timed += t;
    s->ws = NULL, s->ws_bytes = 0;
    cuda_free_quiet(trial);
    *tried += timed;
    if (best_free >= 0 && free_us < *best_us) {
        log_msg(SPF_LOG_INFO, "dense: algorithm %d in another cluster shape, %.2f us against "
                "%.2f us", algo_id(s->lt, &free_[best_free].algo), free_us, *best_us);
        s->algo = free_[best_free].algo;
        *best_us = free_us;
    }
    if (st != SPF_OK) { /* none ran: the algorithms without a workspace stand */
        log_msg(SPF_LOG_INFO, "dense: algorithms with a workspace: %s", spf_last_error());
        error_clear();
        return SPF_OK;
    }
    if (best < 0 || !(us * (1 + DENSE_WORKSPACE_GAIN) < *best_us))
        return SPF_OK;
    /* Timed again as launched: the ordering of a plan with a workspace
     * costs host calls per launch, which a kernel of a few microseconds
     * does not hide (4096×11008 at N = 16 ran 0.55× of cuBLAS TF32 with
     * it, H100). */
    cublasLtMatmulAlgo_t without = s->algo;
    s->algo = res[best].algo;
    spf_status status = SPF_OK;
    TRY(workspace_keep(s, res[best].workspaceSize));
    timed_run tr = {s, &s->algo, check};
    timing_result r;
    timing_options topt;
    selfcheck_timing(check, &topt);
    TRY(timing_measure(ordered_launch, &tr, NULL, &topt, &r));
    ++*tried;
    if (!(r.median_us * (1 + DENSE_WORKSPACE_GAIN) < *best_us)) {
        log_msg(SPF_LOG_INFO, "dense: algorithm %d with a workspace: %.2f us as launched, not "
                "faster than %.2f us without", algo_id(s->lt, &s->algo), r.median_us, *best_us);
        workspace_drop(s);
        s->algo = without;
        return SPF_OK;
    }
    log_msg(SPF_LOG_INFO, "dense: algorithm %d with %llu bytes of workspace, %.2f us against "
            "%.2f us without", algo_id(s->lt, &s->algo),
            (unsigned long long)s->ws_bytes, r.median_us, *best_us);
    *best_us = r.median_us;
fail:
    return status;
}

/* The cache entry: what decode needs to skip the heuristic and the timing.
 * The algorithm is valid with the cuBLASLt version that chose it only
 * (cublasLt.h: cublasLtMatmulAlgo_t "can be trivially serialized and later
 * restored for use with the same version"). */
typedef struct dense_blob {
    char magic[4];          /* "SPFD"                                  */
    uint32_t format;        /* DENSE_BLOB_FORMAT                       */
    uint64_t lt_version;    /* cublasLtGetVersion() of the chooser     */
    uint32_t epilogue;      /* cublasLtEpilogue_t                      */
    uint32_t bias_kernel;
    uint64_t ws_bytes;      /* the algorithm's workspace, 0 for none   */
    cublasLtMatmulAlgo_t algo;
} dense_blob;

enum { DENSE_BLOB_FORMAT = 2 };

static spf_status dense_encode(const void *state, unsigned char **bytes, size_t *size)
{
    const dense_state *s = state;
    *bytes = NULL;
    *size = 0;
    dense_blob *blob = mem_calloc(1, sizeof *blob);
    if (!blob)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "dense: cache entry");
    memcpy(blob->magic, "SPFD", 4);
    blob->format = DENSE_BLOB_FORMAT;
    blob->lt_version = (uint64_t)s->lt->GetVersion();
    blob->epilogue = (uint32_t)s->epilogue;
    blob->bias_kernel = (uint32_t)s->bias_kernel;
    blob->ws_bytes = s->ws_bytes;
    blob->algo = s->algo;
    *bytes = (unsigned char *)blob;
    *size = sizeof *blob;
    return SPF_OK;
}

/* Whether the stored epilogue is one build would have chosen for p. */
static int epilogue_valid(const problem *p, const dense_blob *blob)
{
    for (int fallback = 0; fallback <= 1; fallback++) {
        cublasLtEpilogue_t e;
        int kernel;
        epilogue_choose(p, fallback, &e, &kernel);
        if ((uint32_t)e == blob->epilogue && (uint32_t)kernel == blob->bias_kernel)
            return 1;
    }
    return 0;
}

/* The state of p that runs the algorithm of an encoded blob (a cache
 * entry's, or the memo's); SPF_ERR_PARSE for a blob that does not fit p
 * or the loaded cuBLASLt. */
static spf_status state_from_blob(const problem *p, const unsigned char *bytes, size_t size,
                                  dense_state **out, double *expand_s)
{
    *out = NULL;
    dense_blob blob;
    if (!bytes || size != sizeof blob)
        return FAIL(SPF_ERR_PARSE, "dense: cache entry of %zu bytes, expected %zu", size,
                    sizeof blob);
    memcpy(&blob, bytes, sizeof blob);
    if (memcmp(blob.magic, "SPFD", 4) != 0 || blob.format != DENSE_BLOB_FORMAT ||
        !epilogue_valid(p, &blob) || blob.ws_bytes > DENSE_WORKSPACE_MAX)
        return FAIL(SPF_ERR_PARSE, "dense: malformed cache entry");
    char why[256];
    const cublaslt_api *lt = cublaslt_get(why, sizeof why);
    if (!lt)
        return FAIL(SPF_ERR_UNSUPPORTED, "dense: unavailable: %s", why);
    if (blob.lt_version != (uint64_t)lt->GetVersion())
        return FAIL(SPF_ERR_PARSE, "dense: cache entry chosen with cuBLASLt %llu, loaded is %llu",
                    (unsigned long long)blob.lt_version, (unsigned long long)lt->GetVersion());

    dense_state *s = NULL;
    spf_status status = SPF_OK;
    TRY(state_create(p, &s, expand_s));
    s->epilogue = (cublasLtEpilogue_t)blob.epilogue;
    s->bias_kernel = (int)blob.bias_kernel;
    s->algo = blob.algo;
    if (blob.ws_bytes)
        TRY(workspace_keep(s, blob.ws_bytes));
    cublasLtMatmulDescOpaque_t desc;
    TRY(desc_init(s, &desc, (const float *)(uintptr_t)DENSE_ALIGN));
    slots o = slots_of(s, NULL);
    cublasLtMatmulHeuristicResult_t check;
    if (lt->MatmulAlgoCheck(s->handle, &desc, o.x_desc, o.y_desc, o.d_desc, o.d_desc, &s->algo,
                            &check) != CUBLAS_STATUS_SUCCESS ||
        check.workspaceSize > s->ws_bytes)
        FAIL_GOTO(SPF_ERR_PARSE, "dense: the cached cuBLASLt algorithm %d no longer checks",
                  algo_id(lt, &s->algo));
    *out = s;
    return SPF_OK;
fail:
    dense_release(s);
    return status;
}

static spf_status dense_decode(const problem *p, const strategy_env *env,
                               const spf_plan_info *info, const unsigned char *bytes, size_t size,
                               void **state)
{
    (void)env, (void)info;
    double expand_s = 0;
    return state_from_blob(p, bytes, size, (dense_state **)state, &expand_s);
}

/* The memo's key of p on env's device under its timing rule. */
static dense_memo_key memo_key(const problem *p, const strategy_env *env)
{
    dense_memo_key key;
    memset(&key, 0, sizeof key); /* the padding too: keys compare as bytes */
    key.m = p->m, key.k = p->k, key.n = p->n;
    key.dtype = p->dtype, key.math = p->math, key.b_layout = p->b_layout;
    key.c_layout = p->c_layout, key.bias = p->bias, key.relu = p->relu;
    key.device = env->options ? env->options->device : 0;
    key.cold = env->check ? env->check->cold : 0;
    hash_state h;
    hash_init(&h, 0);
    hash_update(&h, env->device->name, sizeof env->device->name); /* zero-padded: spf_device_query */
    hash_update_u64(&h, (uint64_t)env->device->total_memory);
    hash_update_u64(&h, (uint64_t)env->device->sm_count);
    key.device_id = hash_final(&h);
    return key;
}

/* A build of a shape the memo holds: the stored algorithm, its time, and
 * no heuristic or timing. 0 (and no state) when the memo has none that
 * fits. */
static int build_from_memo(const problem *p, const strategy_env *env, dense_state **out,
                           spf_plan_info *info)
{
    dense_memo_value v;
    double expand_s = 0;
    *out = NULL;
    if (!env->check || !env->device || !dense_memo_find((dense_memo_key[]){memo_key(p, env)}, &v))
        return 0;
    if (state_from_blob(p, v.blob, v.blob_size, out, &expand_s) != SPF_OK) {
        log_msg(SPF_LOG_DEBUG, "dense: the remembered choice does not fit: %s", spf_last_error());
        error_clear();
        return 0;
    }
    info->load_s = expand_s;
    info->kernel_us = v.kernel_us;
    info_fill(*out, p, v.rank, v.count, info);
    snprintf(info->config + strlen(info->config), sizeof info->config - strlen(info->config),
             ", timed for an earlier plan of this shape");
    return 1;
}

/* Remember the choice of a timed build for the next plan of its shape. */
static void memo_store(const problem *p, const strategy_env *env, const dense_state *s,
                       double kernel_us, int rank, int count)
{
    unsigned char *bytes = NULL;
    size_t size = 0;
    if (!env->check || !env->device || dense_encode(s, &bytes, &size) != SPF_OK) {
        error_clear();
        return;
    }
    dense_memo_value v = {.blob_size = size, .kernel_us = kernel_us, .rank = rank, .count = count};
    if (size <= sizeof v.blob) {
        memcpy(v.blob, bytes, size);
        dense_memo_put((dense_memo_key[]){memo_key(p, env)}, &v);
    }
    mem_free(bytes);
}

static spf_status dense_build(const problem *p, const strategy_env *env, void **state,
                              spf_plan_info *info)
{
    *state = NULL;
    dense_state *s = NULL;
    double expand_s = 0;
    spf_status status = SPF_OK;
    if (build_from_memo(p, env, &s, info)) {
        *state = s;
        return SPF_OK;
    }
    TRY(state_create(p, &s, &expand_s));
    info->load_s = expand_s;

    cublasLtMatmulHeuristicResult_t res[HEURISTIC_ALGOS];
    int count = 0;
    epilogue_choose(p, 0, &s->epilogue, &s->bias_kernel);
    spf_status st = heuristic(s, 0, res, &count);
    if ((st != SPF_OK || count == 0) && s->epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
        log_msg(SPF_LOG_INFO, "dense: no cuBLASLt algorithm with epilogue %s (%s); bias and ReLU "
                "by the kernel instead", epilogue_name(s->epilogue),
                st != SPF_OK ? spf_last_error() : "none offered");
        epilogue_choose(p, 1, &s->epilogue, &s->bias_kernel);
        st = heuristic(s, 0, res, &count);
    }
    TRY(st);
    if (count == 0) {
        char what[160];
        problem_describe(p, what, sizeof what);
        FAIL_GOTO(SPF_ERR_UNSUPPORTED, "dense: cuBLASLt has no algorithm for %s", what);
    }

    int best = 0;
    s->algo = res[0].algo;
    if (env->check) {
        double t0 = timing_now_s(), best_us = 0;
        int tried = 0;
        TRY(time_candidates(s, res, count, TIMED_ALGOS, env->check, &best, &best_us, &tried));
        s->algo = res[best].algo;
        TRY(try_workspace(s, res, count, env->check, &best_us, &tried));
        info->tune_s = timing_now_s() - t0;
        info->kernel_us = best_us;
        info->configs_tried = tried;
        memo_store(p, env, s, best_us, best + 1, count);
    }
    info_fill(s, p, best + 1, count, info);
    *state = s;
    return SPF_OK;
fail:
    dense_release(s);
    return status;
}

/* One launch's arguments, for launch_ordered. */
typedef struct dense_call {
    const dense_state *s;
    const void *b;
    void *c;
    const float *bias;
} dense_call;

static spf_status dense_call_run(const void *ctx, void *stream)
{
    const dense_call *call = ctx;
    return dense_run(call->s, &call->s->algo, call->b, call->c, call->bias, stream);
}

static spf_status dense_launch(const void *state, const void *b, void *c, const float *bias,
                               void *stream)
{
    const dense_state *s = state;
    uintptr_t addr = (uintptr_t)b | (uintptr_t)c;
    if (s->epilogue & CUBLASLT_EPILOGUE_BIAS)
        addr |= (uintptr_t)bias;
    if (addr % DENSE_ALIGN)
        return FAIL(SPF_ERR_UNSUPPORTED, "dense plans need B, C and bias aligned to %d bytes "
                    "(cuBLASLt's algorithm was chosen for that; cudaMalloc gives 256)",
                    DENSE_ALIGN);
    if (!s->ws)
        return dense_run(s, &s->algo, b, c, bias, stream);
    /* A workspace: launches of this plan one after another (the file's
     * comment) */
    dense_call call = {s, b, c, bias};
    return launch_ordered(&s->ws_order, dense_call_run, &call, stream);
}

static int dense_available(char *reason, size_t cap)
{
    return cublaslt_get(reason, cap) != NULL;
}

static int dense_supports(const problem *p, const spf_device_info *dev, const spf_plan_options *o,
                          char *reason, size_t cap)
{
    if (!dev || !dev->available) {
        snprintf(reason, cap, "no device: %s", dev ? dev->reason : "none");
        return 0;
    }
    if (dev->cc_major < 8) { /* the expansion kernel's targets (CMakeLists.txt) */
        snprintf(reason, cap, "compiled for compute capability 8.0 and 9.0; the device is %d.%d",
                 dev->cc_major, dev->cc_minor);
        return 0;
    }
    if (!o->dense) {
        snprintf(reason, cap, "forbidden by the options (dense = 0)");
        return 0;
    }
    lt_types types;
    if (!lt_types_of(p->dtype, p->math, &types)) {
        snprintf(reason, cap, "no cuBLASLt types for %s with math %s", dtype_name(p->dtype),
                 spf_math_name(p->math));
        return 0;
    }
    if (p->m == 0 || p->k == 0) {
        snprintf(reason, cap, "A has no %s (cuBLASLt takes no empty dimension)",
                 p->m == 0 ? "rows" : "columns");
        return 0;
    }
    /* In double: M·K·4 may pass 2^63 (M and K up to 2^31). */
    double mib = (double)p->m * (double)p->k * (double)dtype_size(p->dtype) / (1 << 20);
    if (mib > (double)dev->total_memory / 2 / (1 << 20)) {
        snprintf(reason, cap, "needs %.0f MiB for the dense copy of A, over half of the device's "
                 "%lld MiB", mib, (long long)(dev->total_memory >> 20));
        return 0;
    }
    char why[256];
    if (!dense_available(why, sizeof why)) {
        snprintf(reason, cap, "unavailable: %s", why);
        return 0;
    }
    return 1;
}

#else /* no CUDA toolkit at build time: the row is there and says why not */

#define dense_available NULL

static int dense_supports(const problem *p, const spf_device_info *dev, const spf_plan_options *o,
                          char *reason, size_t cap)
{
    snprintf(reason, cap, "built without CUDA");
    return 0;
}

static spf_status dense_build(const problem *p, const strategy_env *env, void **state,
                              spf_plan_info *info)
{
    *state = NULL;
    return FAIL(SPF_ERR_NO_DEVICE, "dense: built without CUDA");
}

static spf_status dense_launch(const void *state, const void *b, void *c, const float *bias,
                               void *stream)
{
    return FAIL(SPF_ERR_NO_DEVICE, "dense: built without CUDA");
}

static void dense_release(void *state) {}

static spf_status dense_encode(const void *state, unsigned char **bytes, size_t *size)
{
    *bytes = NULL;
    *size = 0;
    return FAIL(SPF_ERR_NO_DEVICE, "dense: built without CUDA");
}

static spf_status dense_decode(const problem *p, const strategy_env *env,
                               const spf_plan_info *info, const unsigned char *bytes, size_t size,
                               void **state)
{
    *state = NULL;
    return FAIL(SPF_ERR_NO_DEVICE, "dense: built without CUDA");
}

#endif

const strategy strategy_dense = {
    .id = SPF_STRATEGY_DENSE,
    .name = "dense",
    .on_device = 1,
    .floor = 1,
    .available = dense_available,
    .supports = dense_supports,
    .estimate_us = dense_estimate_us,
    .build = dense_build,
    .launch = dense_launch,
    .release = dense_release,
    .encode = dense_encode,
    .decode = dense_decode,
};
