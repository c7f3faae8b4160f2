/* cuSPARSELt loaded at run time, like cuBLASLt (DESIGN.md decision 2):
 * libspforge.so has no dependency on libcusparseLt, and the cusparselt
 * strategy says "unavailable: <why>" where it is missing. The toolkit does
 * not ship cuSPARSELt's header (its wheel, nvidia-cusparselt-cu13, and its
 * archives do), so the few types and values spforge uses are declared here
 * from the library's ABI as of 0.6: the opaque objects are caller-owned
 * blocks of bytes (512 in 0.6 to 0.10; 1024 here, so a release that grows
 * them within that still fits), and the enumerators keep the values the
 * header gives them; so do cuSPARSE's status, order and operation values
 * it takes (cusparse.h is not included: its deprecated declarations do not
 * compile under -Werror). cuslt_open refuses a release older than 0.6, whose
 * compute types were numbered otherwise. */
#ifndef SPF_STRATEGY_CUSPARSELT_CUSPARSELT_API_H
#define SPF_STRATEGY_CUSPARSELT_CUSPARSELT_API_H

#ifdef SPF_HAVE_CUDA

#include <cuda_runtime.h>
#include <library_types.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cuslt_opaque {
    _Alignas(16) uint8_t data[1024];
} cuslt_opaque;

typedef cuslt_opaque cuslt_handle, cuslt_mat, cuslt_matmul, cuslt_alg, cuslt_plan;

typedef int cuslt_status; /* cuslt_status */

enum {
    CUSLT_STATUS_SUCCESS = 0, /* cuslt_status */
    CUSLT_STATUS_ALLOC_FAILED = 2,
    CUSLT_STATUS_MAPPING_ERROR = 5,
    CUSLT_STATUS_EXECUTION_FAILED = 6,
    CUSLT_STATUS_INTERNAL_ERROR = 7,
    CUSLT_ORDER_COL = 1, /* cusparseOrder_t */
    CUSLT_ORDER_ROW = 2,
    CUSLT_OP_N = 0,      /* cusparseOperation_t: non-transpose */
    CUSLT_SPARSITY_50_PERCENT = 0, /* cusparseLtSparsity_t: 2:4 for 16-bit types */
    CUSLT_COMPUTE_32F = 2,         /* cusparseComputeType (0.6 on)               */
    CUSLT_ACTIVATION_RELU = 0,     /* cusparseLtMatmulDescAttribute_t            */
    CUSLT_ALG_DEFAULT = 0,         /* cusparseLtMatmulAlg_t                      */
    CUSLT_ALG_CONFIG_ID = 0,       /* cusparseLtMatmulAlgAttribute_t             */
    CUSLT_ALG_CONFIG_MAX_ID = 1,
};

/* The oldest release whose numbering the values above are (0.6.0). */
#define CUSLT_VERSION_MIN 600

typedef struct cuslt_api {
    void *lib;
    char path[256];
    int version; /* major · 1000000 + minor · 100 + patch, from the library */
    cuslt_status (*Init)(cuslt_handle *);
    cuslt_status (*Destroy)(const cuslt_handle *);
    cuslt_status (*GetVersion)(const cuslt_handle *, int *);
    const char *(*GetErrorString)(cuslt_status);
    cuslt_status (*DenseDescriptorInit)(const cuslt_handle *, cuslt_mat *, int64_t rows,
                                            int64_t cols, int64_t ld, uint32_t alignment,
                                            cudaDataType type, int order);
    cuslt_status (*StructuredDescriptorInit)(const cuslt_handle *, cuslt_mat *, int64_t rows,
                                                 int64_t cols, int64_t ld, uint32_t alignment,
                                                 cudaDataType type, int order,
                                                 int sparsity);
    cuslt_status (*MatDescriptorDestroy)(const cuslt_mat *);
    cuslt_status (*MatmulDescriptorInit)(const cuslt_handle *, cuslt_matmul *,
                                             int op_a, int op_b,
                                             const cuslt_mat *a, const cuslt_mat *b,
                                             const cuslt_mat *c, const cuslt_mat *d,
                                             int compute);
    cuslt_status (*MatmulDescSetAttribute)(const cuslt_handle *, cuslt_matmul *, int attr,
                                               const void *data, size_t size);
    cuslt_status (*MatmulAlgSelectionInit)(const cuslt_handle *, cuslt_alg *,
                                               const cuslt_matmul *, int alg);
    cuslt_status (*MatmulAlgSelectionDestroy)(const cuslt_alg *);
    cuslt_status (*MatmulAlgSetAttribute)(const cuslt_handle *, cuslt_alg *, int attr,
                                              const void *data, size_t size);
    cuslt_status (*MatmulAlgGetAttribute)(const cuslt_handle *, const cuslt_alg *, int attr,
                                              void *data, size_t size);
    cuslt_status (*MatmulPlanInit)(const cuslt_handle *, cuslt_plan *, const cuslt_matmul *,
                                       const cuslt_alg *);
    cuslt_status (*MatmulPlanDestroy)(const cuslt_plan *);
    cuslt_status (*MatmulGetWorkspace)(const cuslt_handle *, const cuslt_plan *, size_t *);
    cuslt_status (*Matmul)(const cuslt_handle *, const cuslt_plan *, const void *alpha,
                               const void *a, const void *b, const void *beta, const void *c,
                               void *d, void *workspace, cudaStream_t *streams, int32_t count);
    cuslt_status (*SpMMACompressedSize)(const cuslt_handle *, const cuslt_plan *,
                                            size_t *compressed, size_t *buffer);
    cuslt_status (*SpMMACompress)(const cuslt_handle *, const cuslt_plan *, const void *dense,
                                      void *compressed, void *buffer, cudaStream_t stream);
} cuslt_api;

/* Open path (NULL: libcusparseLt.so.0, then libcusparseLt.so) and resolve
 * the table into *out, checking that the release is at least
 * CUSLT_VERSION_MIN (which needs a device: the version is asked of a
 * handle). On failure returns 0 with why in reason, everything closed. */
int cuslt_open(const char *path, cuslt_api *out, char *reason, size_t cap);

void cuslt_close(cuslt_api *api); /* accepts a zeroed table */

/* The process's cuSPARSELt, opened once (thread-safe): the file named by
 * $SPF_CUSPARSELT when set, else cuslt_open's list. NULL when it could
 * not be loaded, with why in reason (never empty). */
const cuslt_api *cuslt_get(char *reason, size_t cap);

#endif /* SPF_HAVE_CUDA */

#endif
