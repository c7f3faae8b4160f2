/* Distributed plans over NCCL (spf_dist_plan_*, src/dist/dist_plan.c),
 * one thread a GPU with communicators from ncclCommInitAll: every rank's
 * rows of C against the double reference of the whole product, on fresh
 * random B (rounded to the dtype) with C poisoned with NaN: an R-MAT
 * graph (B split as its rows, balanced by work), N ∈ {1, 3, 49, 128},
 * fp32, fp16 with bias and ReLU (applied once, after the sum of the two
 * products), bf16; a 300×500 A with B's rows split evenly; twice in a row
 * on one plan (its buffers reused). On every GPU of the host (up to 4) and
 * on one. Skips (77) without a device or without NCCL (set SPF_NCCL to
 * libnccl's path). */
#include "test_util.h"

#include "core/half.h"
#include "dist/nccl_api.h"

#include <pthread.h>
#include <stdlib.h>

#ifdef SPF_HAVE_CUDA
#include <cuda_runtime_api.h>

enum { MAX_RANKS = 4 };

typedef struct dist_case {
    const char *label;
    const spf_matrix *a;
    int64_t n;
    spf_dtype dtype;
    int bias_relu;
    const int64_t *b_start; /* NULL: as A's rows */
} dist_case;

typedef struct rank_job {
    int rank;
    nccl_comm_t comm;
    const dist_case *c;
    const float *b;     /* K×N, the values the kernels read (rounded) */
    const float *bias;  /* M                                           */
    const double *ref;  /* M×N                                         */
    double error;
    int64_t rows, recv_rows, send_rows;
    spf_status status;
    char detail[512];
} rank_job;

static size_t elem(spf_dtype t)
{
    return t == SPF_DTYPE_F32 ? 4 : 2;
}

static void to_dtype(spf_dtype t, const float *x, int64_t count, void *out)
{
    for (int64_t i = 0; i < count; i++) {
        if (t == SPF_DTYPE_F32)
            ((float *)out)[i] = x[i];
        else
            ((uint16_t *)out)[i] = t == SPF_DTYPE_F16 ? f16_from_float(x[i]) : bf16_from_float(x[i]);
    }
}

static float from_dtype(spf_dtype t, const void *buf, int64_t i)
{
    if (t == SPF_DTYPE_F32)
        return ((const float *)buf)[i];
    uint16_t h = ((const uint16_t *)buf)[i];
    return t == SPF_DTYPE_F16 ? f16_to_float(h) : bf16_to_float(h);
}

#define JOB_TRY(call)                                                                      \
    do {                                                                                   \
        job->status = (call);                                                              \
        if (job->status != SPF_OK) {                                                       \
            snprintf(job->detail, sizeof job->detail, "%s: %s", #call, spf_last_error());  \
            goto done;                                                                     \
        }                                                                                  \
    } while (0)
#define JOB_CUDA(call)                                                                     \
    do {                                                                                   \
        cudaError_t e_ = (call);                                                           \
        if (e_ != cudaSuccess) {                                                           \
            job->status = SPF_ERR_CUDA;                                                    \
            snprintf(job->detail, sizeof job->detail, "%s: %s", #call,                     \
                     cudaGetErrorString(e_));                                              \
            goto done;                                                                     \
        }                                                                                  \
    } while (0)

/* One rank: its plan, two executes, its rows of C against the reference. */
static void *rank_main(void *arg)
{
    rank_job *job = arg;
    const dist_case *c = job->c;
    const size_t es = elem(c->dtype);
    spf_dist_plan *plan = NULL;
    void *bd = NULL, *cd = NULL, *bh = NULL, *ch = NULL;
    float *biasd = NULL;
    cudaStream_t stream = NULL;
    job->status = SPF_OK;
    job->error = INFINITY;
    int device = 0;
    char why[256];
    const nccl_api *nccl = nccl_get(why, sizeof why);
    if (!nccl || nccl->CommCuDevice(job->comm, &device) != NCCL_SUCCESS) {
        job->status = SPF_ERR_INTERNAL;
        snprintf(job->detail, sizeof job->detail, "no device of the communicator");
        goto done;
    }
    JOB_CUDA(cudaSetDevice(device));
    spf_plan_options o;
    spf_plan_options_init(&o);
    o.strategy = SPF_STRATEGY_GENERIC;
    o.dtype = c->dtype;
    o.bias = o.relu = c->bias_relu;
    o.cache = 0;
    JOB_TRY(spf_dist_plan_create(c->a, c->n, job->comm, NULL, c->b_start, &o, &plan));
    spf_dist_layout_info info = {.size = sizeof info};
    JOB_TRY(spf_dist_plan_get_info(plan, &info));
    job->rows = info.rows;
    job->recv_rows = info.recv_rows;
    job->send_rows = info.send_rows;
    const int64_t n = c->n;
    bh = malloc((size_t)(info.b_rows * n + 1) * es);
    ch = malloc((size_t)(info.rows * n + 1) * es);
    to_dtype(c->dtype, job->b + info.b_row0 * n, info.b_rows * n, bh);
    JOB_CUDA(cudaStreamCreate(&stream));
    JOB_CUDA(cudaMalloc(&bd, (size_t)(info.b_rows * n + 1) * es));
    JOB_CUDA(cudaMalloc(&cd, (size_t)(info.rows * n + 1) * es));
    JOB_CUDA(cudaMalloc((void **)&biasd, (size_t)(info.rows + 1) * sizeof *biasd));
    JOB_CUDA(cudaMemcpy(bd, bh, (size_t)(info.b_rows * n) * es, cudaMemcpyHostToDevice));
    JOB_CUDA(cudaMemcpy(biasd, job->bias + info.row0, (size_t)info.rows * sizeof *biasd,
                        cudaMemcpyHostToDevice));
    for (int round = 0; round < 2; round++) {
        JOB_CUDA(cudaMemset(cd, 0xFF, (size_t)(info.rows * n + 1) * es)); /* NaN */
        JOB_TRY(spf_dist_plan_execute(plan, bd, cd, c->bias_relu ? biasd : NULL, stream));
        JOB_CUDA(cudaStreamSynchronize(stream));
    }
    JOB_CUDA(cudaMemcpy(ch, cd, (size_t)(info.rows * n) * es, cudaMemcpyDeviceToHost));
    float *got = malloc((size_t)(info.rows * n + 1) * sizeof *got);
    for (int64_t i = 0; i < info.rows * n; i++)
        got[i] = from_dtype(c->dtype, ch, i);
    job->error = info.rows ? spf_relative_error(got, job->ref + info.row0 * n, info.rows * n) : 0;
    free(got);
done:
    if (stream)
        cudaStreamDestroy(stream);
    cudaFree(bd), cudaFree(cd), cudaFree(biasd);
    free(bh), free(ch);
    spf_dist_plan_free(plan);
    return NULL;
}

static void run_case(const nccl_api *nccl, const int *devices, int ranks, const dist_case *c)
{
    const spf_matrix *a = c->a;
    const int64_t m = spf_matrix_rows(a), k = spf_matrix_cols(a), n = c->n;
    float *b = malloc((size_t)(k * n) * sizeof *b), *bias = malloc((size_t)m * sizeof *bias);
    void *packed = malloc((size_t)(k * n) * 4);
    double *ref = malloc((size_t)(m * n) * sizeof *ref);
    spf_fill_uniform(b, k * n, 7000 + (uint64_t)n);
    spf_fill_uniform(bias, m, 71);
    /* the values the kernels read */
    to_dtype(c->dtype, b, k * n, packed);
    for (int64_t i = 0; i < k * n; i++)
        b[i] = from_dtype(c->dtype, packed, i);
    CHECK_OK(spf_reference_spmm_f64(a, n, b, ref, c->bias_relu ? bias : NULL, c->bias_relu, 0));

    nccl_comm_t comms[MAX_RANKS] = {0};
    nccl_result made = nccl->CommInitAll(comms, ranks, devices);
    CHECK_MSG(made == NCCL_SUCCESS, "ncclCommInitAll(%d): %s", ranks, nccl->GetErrorString(made));
    if (made != NCCL_SUCCESS) {
        free(b), free(bias), free(packed), free(ref);
        return;
    }
    rank_job jobs[MAX_RANKS];
    pthread_t threads[MAX_RANKS];
    for (int r = 0; r < ranks; r++) {
        jobs[r] = (rank_job){.rank = r, .comm = comms[r], .c = c, .b = b, .bias = bias, .ref = ref};
        CHECK(pthread_create(&threads[r], NULL, rank_main, &jobs[r]) == 0);
    }
    int64_t rows = 0, recv = 0, send = 0;
    for (int r = 0; r < ranks; r++) {
        pthread_join(threads[r], NULL);
        const rank_job *j = &jobs[r];
        double tol = c->dtype == SPF_DTYPE_F32 ? 1e-5 : 2e-2;
        CHECK_MSG(j->status == SPF_OK && j->error <= tol,
                  "%s N=%lld %d ranks, rank %d: status %d (%s), relative error %.3g", c->label,
                  (long long)n, ranks, r, j->status, j->detail, j->error);
        rows += j->rows, recv += j->recv_rows, send += j->send_rows;
    }
    CHECK_MSG(rows == m && recv == send && (ranks > 1 || recv == 0),
              "%s %d ranks: %lld rows of %lld, %lld rows received, %lld sent", c->label, ranks,
              (long long)rows, (long long)m, (long long)recv, (long long)send);
    printf("%s N=%lld %s%s on %d ranks: %lld rows of B exchanged\n", c->label, (long long)n,
           c->dtype == SPF_DTYPE_F32 ? "f32" : c->dtype == SPF_DTYPE_F16 ? "f16" : "bf16",
           c->bias_relu ? " bias relu" : "", ranks, (long long)recv);
    for (int r = 0; r < ranks; r++)
        nccl->CommDestroy(comms[r]);
    free(b), free(bias), free(packed), free(ref);
}

static void run_all(const nccl_api *nccl, int gpus)
{
    spf_matrix *graph = gen_matrix(SPF_GEN_RMAT, 4096, 4096, 0.995, 21);
    spf_matrix *wide = gen_matrix(SPF_GEN_UNIFORM, 300, 500, 0.9, 22);
    int devices[MAX_RANKS] = {0, 1, 2, 3};
    const int counts[] = {gpus < MAX_RANKS ? gpus : MAX_RANKS, 1};
    for (size_t ci = 0; ci < sizeof counts / sizeof *counts; ci++) {
        const int ranks = counts[ci];
        if (ci == 1 && counts[0] == 1)
            break;
        int64_t even[MAX_RANKS + 1];
        for (int r = 0; r <= ranks; r++)
            even[r] = 500 * r / ranks;
        const dist_case cases[] = {
            {"rmat 4096", graph, 1, SPF_DTYPE_F32, 0, NULL},
            {"rmat 4096", graph, 3, SPF_DTYPE_F32, 1, NULL},
            {"rmat 4096", graph, 49, SPF_DTYPE_F16, 1, NULL},
            {"rmat 4096", graph, 128, SPF_DTYPE_F32, 0, NULL},
            {"rmat 4096", graph, 128, SPF_DTYPE_BF16, 0, NULL},
            {"300x500 B even", wide, 3, SPF_DTYPE_F32, 1, even},
        };
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
            run_case(nccl, devices, ranks, &cases[i]);
    }
    spf_matrix_free(graph);
    spf_matrix_free(wide);
}
#endif

int main(int argc, char **argv)
{
    spf_device_info info;
    CHECK_OK(spf_device_query(0, &info));
    if (!info.available)
        SKIP("no CUDA device (%s): distributed plans not run", info.reason);
#ifdef SPF_HAVE_CUDA
    char why[600];
    const nccl_api *nccl = nccl_get(why, sizeof why);
    if (!nccl)
        SKIP("NCCL not loaded (%s): distributed plans not run", why);
    int gpus = 0;
    CHECK(cudaGetDeviceCount(&gpus) == cudaSuccess);
    printf("NCCL %s, %d GPUs\n", nccl->path, gpus);
    if (gpus < 2)
        printf("one GPU: the plans run on one rank only (no exchange)\n");
    run_all(nccl, gpus);
#endif
    return check_report();
}
