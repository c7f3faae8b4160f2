/* cuBLASLt loaded at run time (DESIGN.md decision 2: the library links
 * only the static CUDA runtime; cuBLAS and cuSPARSE are linked by the
 * benchmark tool alone). <cublasLt.h> gives the types; every function is
 * reached through the table below, filled by dlopen / dlsym, so
 * libspforge.so has no dependency on libcublasLt and works where it is
 * missing (the dense strategy then says why it is unavailable).
 *
 * Descriptors are initialised in caller-owned storage (the *Init_internal
 * entry points behind the header's inline cublasLt*Init): nothing to
 * destroy, and a launch can build its operation descriptor on the stack,
 * which keeps concurrent launches of one plan from sharing mutable state. */
#ifndef SPF_STRATEGY_DENSE_CUBLASLT_H
#define SPF_STRATEGY_DENSE_CUBLASLT_H

#ifdef SPF_HAVE_CUDA
/* The header declares one function as f() (cublasLtLoggerForceDisable). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <cublasLt.h>
#pragma GCC diagnostic pop
#include <stddef.h>

typedef struct cublaslt_api {
    void *lib;        /* the dlopen handle                  */
    char path[256];   /* the file name it was opened by     */
    cublasStatus_t (*Create)(cublasLtHandle_t *);
    cublasStatus_t (*Destroy)(cublasLtHandle_t);
    size_t (*GetVersion)(void);
    const char *(*GetStatusString)(cublasStatus_t);
    cublasStatus_t (*MatmulDescInit_internal)(cublasLtMatmulDesc_t, size_t, cublasComputeType_t,
                                              cudaDataType_t);
    cublasStatus_t (*MatmulDescSetAttribute)(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t,
                                             const void *, size_t);
    cublasStatus_t (*MatrixLayoutInit_internal)(cublasLtMatrixLayout_t, size_t, cudaDataType,
                                                uint64_t, uint64_t, int64_t);
    cublasStatus_t (*MatmulPreferenceInit_internal)(cublasLtMatmulPreference_t, size_t);
    cublasStatus_t (*MatmulPreferenceSetAttribute)(cublasLtMatmulPreference_t,
                                                   cublasLtMatmulPreferenceAttributes_t,
                                                   const void *, size_t);
    cublasStatus_t (*MatmulAlgoGetHeuristic)(cublasLtHandle_t, cublasLtMatmulDesc_t,
                                             cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                             cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                             cublasLtMatmulPreference_t, int,
                                             cublasLtMatmulHeuristicResult_t[], int *);
    cublasStatus_t (*MatmulAlgoCheck)(cublasLtHandle_t, cublasLtMatmulDesc_t,
                                      cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                      cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                      const cublasLtMatmulAlgo_t *,
                                      cublasLtMatmulHeuristicResult_t *);
    cublasStatus_t (*MatmulAlgoConfigGetAttribute)(const cublasLtMatmulAlgo_t *,
                                                   cublasLtMatmulAlgoConfigAttributes_t, void *,
                                                   size_t, size_t *);
    cublasStatus_t (*MatmulAlgoConfigSetAttribute)(cublasLtMatmulAlgo_t *,
                                                   cublasLtMatmulAlgoConfigAttributes_t,
                                                   const void *, size_t);
    cublasStatus_t (*Matmul)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void *, const void *,
                             cublasLtMatrixLayout_t, const void *, cublasLtMatrixLayout_t,
                             const void *, const void *, cublasLtMatrixLayout_t, void *,
                             cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t *, void *, size_t,
                             cudaStream_t);
} cublaslt_api;

/* Open path (NULL: libcublasLt.so.13, then .so.12, then libcublasLt.so,
 * the first that opens and has every symbol) and resolve the table into
 * *out. On failure returns 0, closes what it opened and writes why into
 * reason, naming each file tried ("libcublasLt.so.13, libcublasLt.so.12,
 * libcublasLt.so: cannot open shared object file: ..."). */
int cublaslt_open(const char *path, cublaslt_api *out, char *reason, size_t cap);

void cublaslt_close(cublaslt_api *api); /* accepts a zeroed table */

/* The process's cuBLASLt, opened once (thread-safe): the file named by
 * $SPF_CUBLASLT when set, else cublaslt_open's list. NULL when it could not
 * be loaded, with why in reason (never empty). It stays loaded until the
 * process ends. */
const cublaslt_api *cublaslt_get(char *reason, size_t cap);

#endif /* SPF_HAVE_CUDA */

#endif
