/* Distributed SpMM through NCCL (spforge.h, spf_dist_plan_*; issue 15;
 * docs/distributed.md): rank r's share of C = A·B with B split by rows.
 * Per execute, on the caller's stream S and the plan's own stream X:
 *   X: wait for S (B ready); pack the rows of B the others need
 *      (dist_pack_rows); one NCCL group of a send and a receive per peer;
 *   S: meanwhile C_r = A_own · B_mine (an ordinary plan, any strategy);
 *   S: wait for X; C2 = A_remote · recv; C_r += C2 (+ bias, ReLU after the
 *      sum: gpu/elementwise.h). A rank that receives nothing runs A_own's plan
 *      with the bias and ReLU itself.
 * The buffers are the plan's: its executes are ordered on the GPU
 * (gpu/launch_order.h), and every rank must issue them in the same order,
 * as for any NCCL communication. */
#include "spforge.h"

#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/matrix.h"
#include "dist/nccl_api.h"
#include "dist/partition.h"
#include "plan/options.h"

#include <stdio.h>
#include <string.h>

#ifdef SPF_HAVE_CUDA
#include "dist/dist_rows.h"
#include "gpu/cuda_check.h"
#include "gpu/elementwise.h"
#include "gpu/launch_order.h"

#include <cuda_runtime_api.h>

struct spf_dist_plan {
    const nccl_api *nccl;
    nccl_comm_t comm;
    dist_exchange x;
    int64_t n, b_row0, b_rows;
    size_t row_bytes;            /* a row of B or C                             */
    spf_dtype dtype;
    int relu;                    /* applied after the sum (with a remote part)  */
    spf_plan *own, *remote;      /* remote NULL when the rank receives nothing  */
    int32_t *send_index;         /* device, x.send_rows                         */
    void *send_buf, *recv_buf;   /* device: the rows sent, the rows received    */
    void *partial;               /* device, rows × n: A_remote · recv           */
    cudaStream_t xstream;        /* the exchange's                              */
    cudaEvent_t ready, exchanged;
    launch_order order;
};

static spf_status nccl_check(const spf_dist_plan *p, nccl_result r, const char *what)
{
    if (r == NCCL_SUCCESS)
        return SPF_OK;
    return FAIL(SPF_ERR_CUDA, "%s: NCCL error %d: %s", what, r, p->nccl->GetErrorString(r));
}

/* The plan's checks of the caller's splits (dist_exchange_make checks
 * their order and ends). */
static spf_status splits(const spf_matrix *a, int ranks, const int64_t *row_start,
                         const int64_t *b_start, int64_t *rows, int64_t *bs)
{
    if (row_start)
        memcpy(rows, row_start, (size_t)(ranks + 1) * sizeof *rows);
    else {
        spf_status st = dist_partition_rows(a, ranks, rows);
        if (st != SPF_OK)
            return st;
    }
    if (b_start) {
        memcpy(bs, b_start, (size_t)(ranks + 1) * sizeof *bs);
        return SPF_OK;
    }
    if (a->rows != a->cols)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "b_start NULL splits B as A's rows, which needs a "
                    "square A; A is %lld×%lld: pass b_start", (long long)a->rows,
                    (long long)a->cols);
    memcpy(bs, rows, (size_t)(ranks + 1) * sizeof *bs);
    return SPF_OK;
}

spf_status spf_dist_plan_create(const spf_matrix *a, int64_t n, void *nccl_comm,
                                const int64_t *row_start, const int64_t *b_start,
                                const spf_plan_options *options, spf_dist_plan **out)
{
    CHECK_ARG(out != NULL);
    *out = NULL;
    CHECK_ARG(a != NULL && nccl_comm != NULL && n >= 1);
    spf_plan_options o;
    spf_status status = plan_options_read(options, &o);
    if (status != SPF_OK)
        return status;
    if (o.b_layout != SPF_LAYOUT_N_LAST || o.c_layout != SPF_LAYOUT_N_LAST)
        return FAIL(SPF_ERR_UNSUPPORTED, "distributed plans take B and C row-major (K×N, M×N: "
                    "layouts N_LAST)");
    char why[600];
    const nccl_api *nccl = nccl_get(why, sizeof why);
    if (!nccl)
        return FAIL(SPF_ERR_UNSUPPORTED, "NCCL could not be loaded: %s", why);
    spf_dist_plan *p = mem_calloc(1, sizeof *p);
    int64_t *rows = NULL, *bs = NULL;
    if (!p)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "a distributed plan");
    p->nccl = nccl;
    p->comm = nccl_comm;
    int ranks = 0, rank = 0, device = 0, caller_device = -1;
    TRY(nccl_check(p, nccl->CommCount(p->comm, &ranks), "ncclCommCount"));
    TRY(nccl_check(p, nccl->CommUserRank(p->comm, &rank), "ncclCommUserRank"));
    TRY(nccl_check(p, nccl->CommCuDevice(p->comm, &device), "ncclCommCuDevice"));
    rows = mem_alloc_array((size_t)ranks + 1, sizeof *rows);
    bs = mem_alloc_array((size_t)ranks + 1, sizeof *bs);
    if (!rows || !bs)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "the splits of %d ranks", ranks);
    TRY(splits(a, ranks, row_start, b_start, rows, bs));
    TRY(dist_exchange_make(a, ranks, rank, rows, bs, &p->x));
    p->n = n;
    p->b_row0 = bs[rank];
    p->b_rows = bs[rank + 1] - bs[rank];
    p->dtype = o.dtype;
    p->relu = o.relu;
    p->row_bytes = (size_t)n * dtype_size(o.dtype);

    o.device = device;
    if (p->x.remote) { /* bias and ReLU once, after the sum */
        o.bias = o.relu = 0;
        TRY(spf_plan_create(p->x.remote, n, &o, &p->remote));
    }
    TRY(spf_plan_create(p->x.own, n, &o, &p->own));

    /* the buffers on the communicator's device; the caller's stays current */
    TRY(CUDA_CHECK(cudaGetDevice(&caller_device)));
    TRY(CUDA_CHECK(cudaSetDevice(device)));
    size_t idx = (size_t)(p->x.send_rows ? p->x.send_rows : 1) * sizeof *p->send_index;
    TRY(CUDA_CHECK(cudaMalloc((void **)&p->send_index, idx)));
    if (p->x.send_rows)
        TRY(CUDA_CHECK(cudaMemcpy(p->send_index, p->x.send_index, idx, cudaMemcpyHostToDevice)));
    TRY(CUDA_CHECK(cudaMalloc(&p->send_buf, (size_t)(p->x.send_rows + 1) * p->row_bytes)));
    TRY(CUDA_CHECK(cudaMalloc(&p->recv_buf, (size_t)(p->x.recv_rows + 1) * p->row_bytes)));
    if (p->remote)
        TRY(CUDA_CHECK(cudaMalloc(&p->partial, (size_t)(p->x.rows + 1) * p->row_bytes)));
    /* the exchange's kernels (the pack, NCCL's copies) at the device's
     * highest priority: queued behind a product that fills every SM, they
     * would start only as it ends, and nothing would overlap */
    int least = 0, greatest = 0;
    TRY(CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest)));
    TRY(CUDA_CHECK(cudaStreamCreateWithPriority(&p->xstream, cudaStreamNonBlocking, greatest)));
    TRY(CUDA_CHECK(cudaEventCreateWithFlags(&p->ready, cudaEventDisableTiming)));
    TRY(CUDA_CHECK(cudaEventCreateWithFlags(&p->exchanged, cudaEventDisableTiming)));
    TRY(launch_order_init(&p->order, "distributed plan"));
    mem_free(rows);
    mem_free(bs);
    (void)cudaSetDevice(caller_device);
    *out = p;
    return SPF_OK;
fail:
    mem_free(rows);
    mem_free(bs);
    spf_dist_plan_free(p);
    if (caller_device >= 0)
        (void)cudaSetDevice(caller_device);
    return status;
}

typedef struct dist_call {
    const spf_dist_plan *p;
    const void *b;
    void *c;
    const float *bias;
} dist_call;

/* X: the rows the others need packed and sent, this rank's received. */
static spf_status exchange(const spf_dist_plan *p, const void *b, cudaStream_t s)
{
    const dist_exchange *x = &p->x;
    spf_status status = SPF_OK;
    TRY(CUDA_CHECK(cudaEventRecord(p->ready, s)));
    TRY(CUDA_CHECK(cudaStreamWaitEvent(p->xstream, p->ready, 0)));
    TRY(dist_pack_rows(b, p->send_index, x->send_rows, (int64_t)p->row_bytes, p->send_buf,
                       p->xstream));
    TRY(nccl_check(p, p->nccl->GroupStart(), "ncclGroupStart"));
    for (int peer = 0; peer < x->ranks; peer++) {
        if (x->send_count[peer])
            status = nccl_check(p, p->nccl->Send((char *)p->send_buf + x->send_offset[peer] *
                                                     p->row_bytes,
                                                 (size_t)x->send_count[peer] * p->row_bytes,
                                                 NCCL_INT8, peer, p->comm, p->xstream),
                                "ncclSend");
        if (status == SPF_OK && x->recv_count[peer])
            status = nccl_check(p, p->nccl->Recv((char *)p->recv_buf + x->recv_offset[peer] *
                                                     p->row_bytes,
                                                 (size_t)x->recv_count[peer] * p->row_bytes,
                                                 NCCL_INT8, peer, p->comm, p->xstream),
                                "ncclRecv");
        if (status != SPF_OK)
            break;
    }
    /* the group is closed whatever happened inside it */
    spf_status end = nccl_check(p, p->nccl->GroupEnd(), "ncclGroupEnd");
    TRY(status);
    TRY(end);
    TRY(CUDA_CHECK(cudaEventRecord(p->exchanged, p->xstream)));
fail:
    return status;
}

static spf_status run_call(const void *ctx, void *stream)
{
    const dist_call *call = ctx;
    const spf_dist_plan *p = call->p;
    cudaStream_t s = stream;
    spf_status status = SPF_OK;
    const int exchanging = p->x.send_rows + p->x.recv_rows > 0;
    if (exchanging)
        TRY(exchange(p, call->b, s));
    TRY(spf_plan_execute(p->own, call->b, call->c, p->remote ? NULL : call->bias, s));
    if (exchanging) /* the received rows in, B's sent rows read: X joins S */
        TRY(CUDA_CHECK(cudaStreamWaitEvent(s, p->exchanged, 0)));
    if (p->remote) {
        TRY(spf_plan_execute(p->remote, p->recv_buf, p->partial, NULL, s));
        TRY(elementwise_epilogue(p->dtype, call->c, call->bias, p->x.rows, p->n, p->partial,
                                 p->x.rows * p->n, p->relu, s));
    }
fail:
    return status;
}

spf_status spf_dist_plan_execute(const spf_dist_plan *plan, const void *b, void *c,
                                 const float *bias, void *stream)
{
    CHECK_ARG(plan != NULL && c != NULL && (b != NULL || plan->b_rows == 0));
    dist_call call = {plan, b, c, bias};
    return launch_ordered(&plan->order, run_call, &call, stream);
}

spf_status spf_dist_plan_get_info(const spf_dist_plan *plan, spf_dist_layout_info *out)
{
    CHECK_ARG(plan != NULL);
    return dist_layout_info(&plan->x, plan->b_row0, plan->b_rows, out);
}

void spf_dist_plan_free(spf_dist_plan *plan)
{
    if (!plan)
        return;
    launch_order_release(&plan->order);
    if (plan->ready)
        (void)cudaEventDestroy(plan->ready);
    if (plan->exchanged)
        (void)cudaEventDestroy(plan->exchanged);
    if (plan->xstream)
        (void)cudaStreamDestroy(plan->xstream);
    cuda_free_quiet(plan->send_index);
    cuda_free_quiet(plan->send_buf);
    cuda_free_quiet(plan->recv_buf);
    cuda_free_quiet(plan->partial);
    (void)cudaGetLastError();
    spf_plan_free(plan->own);
    spf_plan_free(plan->remote);
    dist_exchange_free(&plan->x);
    mem_free(plan);
}

#else /* no CUDA toolkit at build time */

struct spf_dist_plan {
    int unused;
};

spf_status spf_dist_plan_create(const spf_matrix *a, int64_t n, void *nccl_comm,
                                const int64_t *row_start, const int64_t *b_start,
                                const spf_plan_options *options, spf_dist_plan **out)
{
    (void)row_start, (void)b_start, (void)options;
    CHECK_ARG(out != NULL);
    *out = NULL;
    CHECK_ARG(a != NULL && nccl_comm != NULL && n >= 1);
    return FAIL(SPF_ERR_NO_DEVICE, "distributed plans: built without CUDA");
}

spf_status spf_dist_plan_execute(const spf_dist_plan *plan, const void *b, void *c,
                                 const float *bias, void *stream)
{
    (void)plan, (void)b, (void)c, (void)bias, (void)stream;
    return FAIL(SPF_ERR_NO_DEVICE, "distributed plans: built without CUDA");
}

spf_status spf_dist_plan_get_info(const spf_dist_plan *plan, spf_dist_layout_info *out)
{
    (void)plan, (void)out;
    return FAIL(SPF_ERR_NO_DEVICE, "distributed plans: built without CUDA");
}

void spf_dist_plan_free(spf_dist_plan *plan)
{
    (void)plan;
}

#endif
