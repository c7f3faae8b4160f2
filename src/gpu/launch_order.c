#include "gpu/launch_order.h"

#include "core/error.h"

#include <string.h>

#ifdef SPF_HAVE_CUDA
#include "gpu/cuda_check.h"

spf_status launch_order_init(launch_order *o, const char *what)
{
    memset(o, 0, sizeof *o);
    cudaEvent_t e = NULL;
    spf_status st = CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    if (st != SPF_OK)
        return st;
    if (pthread_mutex_init(&o->lock, NULL) != 0) {
        (void)cudaEventDestroy(e);
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "%s: a lock ordering its launches", what);
    }
    o->done = e;
    return SPF_OK;
}

void launch_order_release(launch_order *o)
{
    if (!o || !o->done)
        return;
    (void)cudaEventDestroy((cudaEvent_t)o->done);
    pthread_mutex_destroy(&o->lock);
    memset(o, 0, sizeof *o);
}

spf_status launch_ordered(const launch_order *o, launch_order_fn fn, const void *ctx,
                          void *stream)
{
    enum cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    spf_status st = CUDA_CHECK(cudaStreamIsCapturing((cudaStream_t)stream, &capture));
    if (st != SPF_OK || capture != cudaStreamCaptureStatusNone)
        return st != SPF_OK ? st : fn(ctx, stream);
    pthread_mutex_t *lock = (pthread_mutex_t *)&o->lock;
    pthread_mutex_lock(lock);
    st = CUDA_CHECK(cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)o->done, 0));
    if (st == SPF_OK)
        st = fn(ctx, stream);
    if (st == SPF_OK)
        st = CUDA_CHECK(cudaEventRecord((cudaEvent_t)o->done, (cudaStream_t)stream));
    pthread_mutex_unlock(lock);
    return st;
}

#else

spf_status launch_order_init(launch_order *o, const char *what)
{
    memset(o, 0, sizeof *o);
    return FAIL(SPF_ERR_NO_DEVICE, "%s: built without CUDA", what);
}

void launch_order_release(launch_order *o)
{
    if (o)
        memset(o, 0, sizeof *o);
}

spf_status launch_ordered(const launch_order *o, launch_order_fn fn, const void *ctx,
                          void *stream)
{
    (void)o, (void)fn, (void)ctx, (void)stream;
    return FAIL(SPF_ERR_NO_DEVICE, "built without CUDA");
}

#endif
