/* The epilogue the precompiled tensor-core kernels (tc, tcfrag) share. */
#ifndef SPF_GPU_EPILOGUE_CUH
#define SPF_GPU_EPILOGUE_CUH

#include <stdint.h>

#include "gpu/mma_ptx.cuh"

/* Store v as C element (row, j) of a launch's arguments a (their fields
 * row_map: the C row of each format row or NULL; bias; relu; c, c_row,
 * c_col): bias added, ReLU applied, converted to T. */
template <typename T, typename Args>
__device__ __forceinline__ void store(const Args &a, int64_t row, int j, float v)
{
    int64_t out = a.row_map ? a.row_map[row] : row;
    if (a.bias)
        v += a.bias[out];
    if (a.relu)
        v = fmaxf(v, 0.0f);
    static_cast<T *>(a.c)[out * a.c_row + j * a.c_col] = elem<T>::from_float(v);
}

#endif
