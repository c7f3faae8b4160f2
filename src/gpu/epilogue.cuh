/* The epilogue the precompiled kernels (tc, tcfrag, panel) share, and how
 * their launches take its operands. */
#ifndef SPF_GPU_EPILOGUE_CUH
#define SPF_GPU_EPILOGUE_CUH

#include <stdint.h>

#include "gpu/mma_ptx.cuh"
#include "plan/problem.h"

/* v, a sum of C row `out` of a launch's arguments a (fields bias, relu),
 * with the bias added and ReLU applied. */
template <typename Args>
__device__ __forceinline__ float epilogue_value(const Args &a, int64_t out, float v)
{
    if (a.bias)
        v += a.bias[out];
    if (a.relu)
        v = fmaxf(v, 0.0f);
    return v;
}

/* Store v as C element (row, j) of a launch's arguments a (their fields
 * row_map: the C row of each format row or NULL; bias; relu; c, c_row,
 * c_col): bias added, ReLU applied, converted to T. */
template <typename T, typename Args>
__device__ __forceinline__ void store(const Args &a, int64_t row, int j, float v)
{
    int64_t out = a.row_map ? a.row_map[row] : row;
    static_cast<T *>(a.c)[out * a.c_row + j * a.c_col] =
        elem<T>::from_float(epilogue_value(a, out, v));
}

/* A launch's operands into the kernel's argument struct a (fields b,
 * b_row, b_col, c, c_row, c_col, bias, relu, vector_b), for es-byte
 * elements: vector_b when B's base and every row start allow 16-byte
 * pieces. Host code. */
template <typename Args> inline void take_operands(Args &a, const spmm_operands *op, int es)
{
    a.b = op->b;
    a.b_row = op->b_row;
    a.b_col = op->b_col;
    a.c = op->c;
    a.c_row = op->c_row;
    a.c_col = op->c_col;
    a.bias = op->bias;
    a.relu = op->relu;
    int64_t pitch = op->b_layout == SPF_LAYOUT_N_FIRST ? op->b_col : op->b_row;
    a.vector_b = reinterpret_cast<uintptr_t>(op->b) % 16 == 0 && (pitch * es) % 16 == 0;
}

#endif
