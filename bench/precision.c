/* The precisions --dtype selects (issue 10): each is a storage type and a
 * math mode of the spforge plans, and the cuBLAS run that is its dense
 * counterpart (BENCHMARKS.md: "beside cuBLAS of the same"). */
#include "bench.h"

#include <string.h>

const precision precisions[PRECISION_COUNT] = {
    {"f32", SPF_DTYPE_F32, SPF_MATH_DEFAULT, COMP_CUBLAS_F32},
    {"tf32", SPF_DTYPE_F32, SPF_MATH_TF32, COMP_CUBLAS_TF32},
    {"f16", SPF_DTYPE_F16, SPF_MATH_DEFAULT, COMP_CUBLAS_F16},
    {"bf16", SPF_DTYPE_BF16, SPF_MATH_DEFAULT, COMP_CUBLAS_BF16},
};

const precision *precision_find(const char *name)
{
    for (int i = 0; i < PRECISION_COUNT; ++i)
        if (strcmp(precisions[i].name, name) == 0)
            return &precisions[i];
    /* numpy's and torch's names of the storage types, exact math */
    spf_dtype dtype;
    if (spf_dtype_from_name(name, &dtype) != SPF_OK)
        return NULL;
    for (int i = 0; i < PRECISION_COUNT; ++i)
        if (precisions[i].dtype == dtype && precisions[i].math == SPF_MATH_DEFAULT)
            return &precisions[i];
    return NULL;
}
