/* The run-time loader of cuDNN (cudnn_api.h). */
#define _POSIX_C_SOURCE 200809L

#include "conv/cudnn_api.h"

#include "core/dynlib.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const default_names[] = {"libcudnn.so.9", "libcudnn.so.8", "libcudnn.so"};

#define ENTRY(fn) {"cudnn" #fn, offsetof(cudnn_api, fn)}
static const dynlib_entry entries[] = {
    ENTRY(GetVersion),
    ENTRY(GetErrorString),
    ENTRY(Create),
    ENTRY(Destroy),
    ENTRY(SetStream),
    ENTRY(CreateTensorDescriptor),
    ENTRY(SetTensor4dDescriptor),
    ENTRY(DestroyTensorDescriptor),
    ENTRY(CreateFilterDescriptor),
    ENTRY(SetFilter4dDescriptor),
    ENTRY(DestroyFilterDescriptor),
    ENTRY(CreateConvolutionDescriptor),
    ENTRY(SetConvolution2dDescriptor),
    ENTRY(SetConvolutionMathType),
    ENTRY(DestroyConvolutionDescriptor),
    ENTRY(FindConvolutionForwardAlgorithmEx),
    ENTRY(ConvolutionForward),
};
#undef ENTRY

int cudnn_open(const char *path, cudnn_api *out, char *reason, size_t cap)
{
    memset(out, 0, sizeof *out);
    const char *const *names = path ? &path : default_names;
    int count = path ? 1 : (int)(sizeof default_names / sizeof *default_names);
    int ok = dynlib_open(names, count, entries, sizeof entries / sizeof *entries, out, &out->lib,
                         out->path, sizeof out->path, reason, cap);
    if (!ok)
        memset(out, 0, sizeof *out);
    return ok;
}

void cudnn_close(cudnn_api *api)
{
    if (!api)
        return;
    dynlib_close(api->lib);
    memset(api, 0, sizeof *api);
}

static cudnn_api process_api;
static int process_loaded;
static char process_reason[600];
static pthread_once_t process_once = PTHREAD_ONCE_INIT;

static void process_load(void)
{
    const char *path = getenv("SPF_CUDNN");
    process_loaded = cudnn_open(path && *path ? path : NULL, &process_api, process_reason,
                                sizeof process_reason);
}

const cudnn_api *cudnn_get(char *reason, size_t cap)
{
    pthread_once(&process_once, process_load);
    if (process_loaded)
        return &process_api;
    snprintf(reason, cap, "%s (set SPF_CUDNN to libcudnn's path)", process_reason);
    return NULL;
}
