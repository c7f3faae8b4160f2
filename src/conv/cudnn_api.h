/* cuDNN loaded at run time (core/dynlib.h; DESIGN.md decision 2), for the
 * conv plans' dense path (conv_dense.h): libspforge.so has no dependency
 * on libcudnn, and says why where it is missing. The path builds its
 * convolution through cuDNN's backend (graph) API: an execution plan
 * finalized once and executed per call costs the host a few µs, where the
 * legacy cudnnConvolutionForward of cuDNN 9 cost 35-130 µs a call on the
 * H200's host (bench/results/conv/, 7c0c94b). The few types and values
 * used are declared below as cuDNN 8 and 9 give them (cudnn_graph.h), so
 * no cudnn.h is needed to build; tests/unit/test_cudnn_api.c checks them
 * against the header where it is installed. */
#ifndef SPF_CONV_CUDNN_API_H
#define SPF_CONV_CUDNN_API_H

#include <stddef.h>
#include <stdint.h>

typedef struct cudnnContext *cudnn_handle;
typedef void *cudnn_desc; /* cudnnBackendDescriptor_t */
typedef int cudnn_status; /* cudnnStatus_t: 0 is CUDNN_STATUS_SUCCESS */

enum {
    CUDNN_OK = 0,
    /* cudnnDataType_t */
    CUDNN_FLOAT = 0, CUDNN_HALF = 2, CUDNN_BFLOAT16 = 9,
    /* cudnnConvolutionMode_t */
    CUDNN_CROSS_CORR = 1,
    /* cudnnBackendHeurMode_t */
    CUDNN_HEUR_FALLBACK = 2, CUDNN_HEUR_A = 3,
    /* cudnnBackendNumericalNote_t */
    CUDNN_NOTE_TENSOR_CORE = 0, CUDNN_NOTE_DOWN_CONVERT = 1, CUDNN_NOTE_REDUCED_REDUCTION = 2,
    /* cudnnBackendDescriptorType_t */
    CUDNN_D_CONVOLUTION = 1, CUDNN_D_ENGINE = 2, CUDNN_D_ENGINECFG = 3, CUDNN_D_ENGINEHEUR = 4,
    CUDNN_D_EXECUTION_PLAN = 5, CUDNN_D_OP_CONV_FORWARD = 10, CUDNN_D_OPERATIONGRAPH = 15,
    CUDNN_D_VARIANT_PACK = 16, CUDNN_D_TENSOR = 17,
    /* cudnnBackendAttributeType_t */
    CUDNN_T_HANDLE = 0, CUDNN_T_DATA_TYPE = 1, CUDNN_T_INT64 = 3, CUDNN_T_FLOAT = 4,
    CUDNN_T_VOID_PTR = 6, CUDNN_T_CONVOLUTION_MODE = 7, CUDNN_T_HEUR_MODE = 8,
    CUDNN_T_NUMERICAL_NOTE = 11, CUDNN_T_BACKEND_DESCRIPTOR = 15
};

/* cudnnBackendAttributeName_t */
enum {
    CUDNN_A_CONVOLUTION_COMP_TYPE = 100, CUDNN_A_CONVOLUTION_CONV_MODE = 101,
    CUDNN_A_CONVOLUTION_DILATIONS = 102, CUDNN_A_CONVOLUTION_FILTER_STRIDES = 103,
    CUDNN_A_CONVOLUTION_POST_PADDINGS = 104, CUDNN_A_CONVOLUTION_PRE_PADDINGS = 105,
    CUDNN_A_CONVOLUTION_SPATIAL_DIMS = 106,
    CUDNN_A_ENGINEHEUR_MODE = 200, CUDNN_A_ENGINEHEUR_OPERATION_GRAPH = 201,
    CUDNN_A_ENGINEHEUR_RESULTS = 202,
    CUDNN_A_ENGINECFG_ENGINE = 300,
    CUDNN_A_EXECUTION_PLAN_HANDLE = 400, CUDNN_A_EXECUTION_PLAN_ENGINE_CONFIG = 401,
    CUDNN_A_EXECUTION_PLAN_WORKSPACE_SIZE = 402,
    CUDNN_A_OP_CONV_FORWARD_ALPHA = 700, CUDNN_A_OP_CONV_FORWARD_BETA = 701,
    CUDNN_A_OP_CONV_FORWARD_CONV_DESC = 702, CUDNN_A_OP_CONV_FORWARD_W = 703,
    CUDNN_A_OP_CONV_FORWARD_X = 704, CUDNN_A_OP_CONV_FORWARD_Y = 705,
    CUDNN_A_OPERATIONGRAPH_HANDLE = 800, CUDNN_A_OPERATIONGRAPH_OPS = 801,
    CUDNN_A_TENSOR_BYTE_ALIGNMENT = 900, CUDNN_A_TENSOR_DATA_TYPE = 901,
    CUDNN_A_TENSOR_DIMENSIONS = 902, CUDNN_A_TENSOR_STRIDES = 903,
    CUDNN_A_TENSOR_UNIQUE_ID = 906,
    CUDNN_A_VARIANT_PACK_UNIQUE_IDS = 1000, CUDNN_A_VARIANT_PACK_DATA_POINTERS = 1001,
    CUDNN_A_VARIANT_PACK_WORKSPACE = 1003,
    CUDNN_A_ENGINE_GLOBAL_INDEX = 1301, CUDNN_A_ENGINE_NUMERICAL_NOTE = 1303
};

typedef struct cudnn_api {
    void *lib;      /* the dlopen handle              */
    char path[256]; /* the file name it was opened by */
    size_t (*GetVersion)(void);
    const char *(*GetErrorString)(cudnn_status);
    cudnn_status (*Create)(cudnn_handle *);
    cudnn_status (*Destroy)(cudnn_handle);
    cudnn_status (*SetStream)(cudnn_handle, void *stream);
    cudnn_status (*BackendCreateDescriptor)(int type, cudnn_desc *);
    cudnn_status (*BackendDestroyDescriptor)(cudnn_desc);
    cudnn_status (*BackendFinalize)(cudnn_desc);
    cudnn_status (*BackendSetAttribute)(cudnn_desc, int name, int type, int64_t count,
                                        const void *values);
    cudnn_status (*BackendGetAttribute)(cudnn_desc, int name, int type, int64_t requested,
                                        int64_t *count, void *values);
    cudnn_status (*BackendExecute)(cudnn_handle, cudnn_desc plan, cudnn_desc variant_pack);
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
