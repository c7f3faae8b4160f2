/* cuDNN loaded at run time (core/dynlib.h; DESIGN.md decision 2), for the
 * conv plans' dense path (conv_dense.h): libspforge.so has no dependency
 * on libcudnn, and says why where it is missing. The few types of cuDNN's
 * legacy convolution API used here are declared below with the values
 * cuDNN 8 and 9 give them (cudnn_graph.h, cudnn_cnn.h), so no cudnn.h is
 * needed to build; tests/unit/test_cudnn_api.c checks them against the
 * header where it is installed. */
#ifndef SPF_CONV_CUDNN_API_H
#define SPF_CONV_CUDNN_API_H

#include <stddef.h>

typedef struct cudnnContext *cudnn_handle;
typedef struct cudnnTensorStruct *cudnn_tensor;
typedef struct cudnnFilterStruct *cudnn_filter;
typedef struct cudnnConvolutionStruct *cudnn_conv;
typedef int cudnn_status; /* cudnnStatus_t: 0 is CUDNN_STATUS_SUCCESS */

enum {
    CUDNN_OK = 0,
    /* cudnnDataType_t */
    CUDNN_FLOAT = 0, CUDNN_HALF = 2, CUDNN_BFLOAT16 = 9,
    /* cudnnTensorFormat_t */
    CUDNN_NCHW = 0, CUDNN_NHWC = 1,
    /* cudnnConvolutionMode_t */
    CUDNN_CROSS_CORR = 1,
    /* cudnnMathType_t */
    CUDNN_TENSOR_OP = 1, CUDNN_FMA = 3
};

/* cudnnConvolutionFwdAlgoPerf_t */
typedef struct cudnn_algo_perf {
    int algo;
    cudnn_status status;
    float time;
    size_t memory;
    int determinism;
    int math_type;
    int reserved[3];
} cudnn_algo_perf;

typedef struct cudnn_api {
    void *lib;      /* the dlopen handle              */
    char path[256]; /* the file name it was opened by */
    size_t (*GetVersion)(void);
    const char *(*GetErrorString)(cudnn_status);
    cudnn_status (*Create)(cudnn_handle *);
    cudnn_status (*Destroy)(cudnn_handle);
    cudnn_status (*SetStream)(cudnn_handle, void *stream);
    cudnn_status (*CreateTensorDescriptor)(cudnn_tensor *);
    cudnn_status (*SetTensor4dDescriptor)(cudnn_tensor, int format, int type, int n, int c, int h,
                                          int w);
    cudnn_status (*DestroyTensorDescriptor)(cudnn_tensor);
    cudnn_status (*CreateFilterDescriptor)(cudnn_filter *);
    cudnn_status (*SetFilter4dDescriptor)(cudnn_filter, int type, int format, int k, int c, int h,
                                          int w);
    cudnn_status (*DestroyFilterDescriptor)(cudnn_filter);
    cudnn_status (*CreateConvolutionDescriptor)(cudnn_conv *);
    cudnn_status (*SetConvolution2dDescriptor)(cudnn_conv, int pad_h, int pad_w, int stride_h,
                                               int stride_w, int dilation_h, int dilation_w,
                                               int mode, int compute_type);
    cudnn_status (*SetConvolutionMathType)(cudnn_conv, int math);
    cudnn_status (*DestroyConvolutionDescriptor)(cudnn_conv);
    cudnn_status (*FindConvolutionForwardAlgorithmEx)(cudnn_handle, cudnn_tensor, const void *x,
                                                      cudnn_filter, const void *w, cudnn_conv,
                                                      cudnn_tensor, void *y, int requested,
                                                      int *returned, cudnn_algo_perf *results,
                                                      void *workspace, size_t workspace_bytes);
    cudnn_status (*ConvolutionForward)(cudnn_handle, const void *alpha, cudnn_tensor,
                                       const void *x, cudnn_filter, const void *w, cudnn_conv,
                                       int algo, void *workspace, size_t workspace_bytes,
                                       const void *beta, cudnn_tensor, void *y);
} cudnn_api;

/* Open path (NULL: libcudnn.so.9, then libcudnn.so.8, then libcudnn.so)
 * and resolve the table; 0 with why in reason on failure (dynlib_open). */
int cudnn_open(const char *path, cudnn_api *out, char *reason, size_t cap);
void cudnn_close(cudnn_api *api); /* accepts a zeroed table */

/* The process's cuDNN, opened once (thread-safe): $SPF_CUDNN when set,
 * else cudnn_open's list. NULL when it could not be loaded, with why in
 * reason (never empty). */
const cudnn_api *cudnn_get(char *reason, size_t cap);

#endif
