/* Tensor maps for the copy engine (tensor_map.h); CUDA builds only. */
#ifdef SPF_HAVE_CUDA
#include "gpu/tensor_map.h"

#include "core/error.h"
#include "gpu/cuda_check.h"

#include <cudaTypedefs.h>
#include <pthread.h>
#include <stdio.h>

static PFN_cuTensorMapEncodeTiled_v12000 encode;
static PFN_cuTensorMapEncodeIm2col_v12000 encode_im2col;
static char encode_missing[160], im2col_missing[160];
static pthread_once_t encode_once = PTHREAD_ONCE_INIT;

/* The driver's entry point `name` into *fn, or NULL and why into missing. */
static void entry_load(const char *name, void **fn, char *missing, size_t cap)
{
    enum cudaDriverEntryPointQueryResult found;
    cudaError_t err = cudaGetDriverEntryPointByVersion(name, fn, 12000, cudaEnableDefault, &found);
    if (err != cudaSuccess || found != cudaDriverEntryPointSuccess || !*fn) {
        (void)cudaGetLastError();
        *fn = NULL;
        snprintf(missing, cap, "driver entry point %s not found (%s)", name,
                 cudaGetErrorString(err));
    }
}

static void encode_load(void)
{
    entry_load("cuTensorMapEncodeTiled", (void **)&encode, encode_missing, sizeof encode_missing);
    entry_load("cuTensorMapEncodeIm2col", (void **)&encode_im2col, im2col_missing,
               sizeof im2col_missing);
}

int tensor_map_fits(const void *base, int64_t rows, int64_t cols, int64_t pitch)
{
    return (uintptr_t)base % 16 == 0 && pitch * 2 % 16 == 0 && pitch >= cols && rows > 0 &&
           cols > 0 && rows <= UINT32_MAX && pitch <= UINT32_MAX;
}

spf_status tensor_map_2d(CUtensorMap *out, spf_dtype dtype, const void *base, int64_t rows,
                         int64_t cols, int64_t pitch, int box_rows, int box_cols)
{
    CHECK_ARG(out != NULL && base != NULL);
    CHECK_ARG(dtype == SPF_DTYPE_F16 || dtype == SPF_DTYPE_BF16);
    CHECK_ARG(box_cols * 2 <= 128 && box_rows >= 1 && box_rows <= 256);
    if (!tensor_map_fits(base, rows, cols, pitch))
        return FAIL(SPF_ERR_UNSUPPORTED, "tensor map: %lld × %lld elements with a pitch of %lld at "
                    "%p: the copy engine wants a 16-byte aligned base and pitch",
                    (long long)rows, (long long)cols, (long long)pitch, base);
    pthread_once(&encode_once, encode_load);
    if (!encode)
        return FAIL(SPF_ERR_UNSUPPORTED, "tensor map: %s", encode_missing);
    const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
    const cuuint64_t strides[1] = {(cuuint64_t)pitch * 2};
    const cuuint32_t box[2] = {(cuuint32_t)box_cols, (cuuint32_t)box_rows};
    const cuuint32_t steps[2] = {1, 1};
    CUresult res = encode(out,
                          dtype == SPF_DTYPE_F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                          2, (void *)base, dims, strides, box, steps, CU_TENSOR_MAP_INTERLEAVE_NONE,
                          CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                          CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (res != CUDA_SUCCESS)
        return FAIL(SPF_ERR_UNSUPPORTED, "tensor map: cuTensorMapEncodeTiled of %lld × %lld "
                    "(pitch %lld, box %d × %d) failed with driver error %d", (long long)rows,
                    (long long)cols, (long long)pitch, box_rows, box_cols, (int)res);
    return SPF_OK;
}

spf_status tensor_map_nhwc(CUtensorMap *out, spf_dtype dtype, const void *base,
                           const int64_t nhwc[4], int channels, int box_w, int box_h,
                           int box_n, int step)
{
    CHECK_ARG(out != NULL && base != NULL && nhwc != NULL);
    CHECK_ARG(dtype == SPF_DTYPE_F16 || dtype == SPF_DTYPE_BF16);
    CHECK_ARG(step >= 1 && step <= 8);
    CHECK_ARG(channels >= 8 && channels * 2 <= 128 && box_w >= 1 && box_w * step <= 256 &&
              box_h >= 1 && box_h * step <= 256 && box_n >= 1 && box_n <= 256);
    if ((uintptr_t)base % 16 != 0 || nhwc[3] % 8 != 0)
        return FAIL(SPF_ERR_UNSUPPORTED, "tensor map: the copy engine wants a 16-byte aligned "
                    "base and pixel, and the input is at %p with %lld channels", base,
                    (long long)nhwc[3]);
    pthread_once(&encode_once, encode_load);
    if (!encode)
        return FAIL(SPF_ERR_UNSUPPORTED, "tensor map: %s", encode_missing);
    const cuuint64_t dims[4] = {(cuuint64_t)nhwc[3], (cuuint64_t)nhwc[2], (cuuint64_t)nhwc[1],
                                (cuuint64_t)nhwc[0]};
    const cuuint64_t strides[3] = {dims[0] * 2, dims[0] * dims[1] * 2,
                                   dims[0] * dims[1] * dims[2] * 2};
    /* a box of box_w · step pixels, stepped by `step`, brings box_w */
    const cuuint32_t box[4] = {(cuuint32_t)channels, (cuuint32_t)(box_w * step),
                               (cuuint32_t)(box_h * step), (cuuint32_t)box_n};
    const cuuint32_t steps[4] = {1, (cuuint32_t)step, (cuuint32_t)step, 1};
    CUresult res = encode(out,
                          dtype == SPF_DTYPE_F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                          4, (void *)base, dims, strides, box, steps, CU_TENSOR_MAP_INTERLEAVE_NONE,
                          CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                          CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (res != CUDA_SUCCESS)
        return FAIL(SPF_ERR_UNSUPPORTED, "tensor map: cuTensorMapEncodeTiled of NHWC %lld × %lld × "
                    "%lld × %lld (box %d × %d × %d × %d, step %d) failed with driver error %d",
                    (long long)nhwc[0], (long long)nhwc[1], (long long)nhwc[2], (long long)nhwc[3],
                    channels, box_w, box_h, box_n, step, (int)res);
    return SPF_OK;
}

spf_status tensor_map_words_3d(CUtensorMap *out, const void *base, const uint64_t dims[3],
                               const uint64_t strides[2], const uint32_t box[3])
{
    CHECK_ARG(out != NULL && base != NULL && dims != NULL && strides != NULL && box != NULL);
    if ((uintptr_t)base % 16 != 0 || strides[0] % 16 != 0 || strides[1] % 16 != 0)
        return FAIL(SPF_ERR_UNSUPPORTED, "tensor map: words at %p with strides %llu, %llu: the "
                    "copy engine wants 16-byte alignment", base, (unsigned long long)strides[0],
                    (unsigned long long)strides[1]);
    pthread_once(&encode_once, encode_load);
    if (!encode)
        return FAIL(SPF_ERR_UNSUPPORTED, "tensor map: %s", encode_missing);
    const cuuint64_t d[3] = {dims[0], dims[1], dims[2]};
    const cuuint64_t st[2] = {strides[0], strides[1]};
    const cuuint32_t b[3] = {box[0], box[1], box[2]};
    const cuuint32_t steps[3] = {1, 1, 1};
    CUresult res = encode(out, CU_TENSOR_MAP_DATA_TYPE_UINT32, 3, (void *)base, d, st, b, steps,
                          CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                          CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (res != CUDA_SUCCESS)
        return FAIL(SPF_ERR_UNSUPPORTED, "tensor map: cuTensorMapEncodeTiled of %llu × %llu × "
                    "%llu words (box %u × %u × %u) failed with driver error %d",
                    (unsigned long long)dims[0], (unsigned long long)dims[1],
                    (unsigned long long)dims[2], box[0], box[1], box[2], (int)res);
    return SPF_OK;
}

spf_status tensor_map_im2col(CUtensorMap *out, spf_dtype dtype, const void *base,
                             const int64_t nhwc[4], const int32_t lower[2], const int32_t upper[2],
                             int stride, int pixels, int channels)
{
    CHECK_ARG(out != NULL && base != NULL && nhwc != NULL && lower != NULL && upper != NULL);
    CHECK_ARG(dtype == SPF_DTYPE_F16 || dtype == SPF_DTYPE_BF16);
    CHECK_ARG(channels * 2 <= 128 && channels % 8 == 0 && pixels >= 1 && pixels <= 1024);
    CHECK_ARG(stride >= 1 && stride <= 8);
    const int64_t n = nhwc[0], h = nhwc[1], w = nhwc[2], c = nhwc[3];
    if ((uintptr_t)base % 16 != 0 || c % 8 != 0 || n < 1 || h < 1 || w < 1 ||
        n * h * w * c * 2 >= (1LL << 40) || n > UINT32_MAX)
        return FAIL(SPF_ERR_UNSUPPORTED, "tensor map: an NHWC tensor of %lld × %lld × %lld × %lld "
                    "at %p: the copy engine wants a 16-byte aligned base, C a multiple of 8 and "
                    "strides under 2^40 bytes", (long long)n, (long long)h, (long long)w,
                    (long long)c, base);
    pthread_once(&encode_once, encode_load);
    if (!encode_im2col)
        return FAIL(SPF_ERR_UNSUPPORTED, "tensor map: %s", im2col_missing);
    const cuuint64_t dims[4] = {(cuuint64_t)c, (cuuint64_t)w, (cuuint64_t)h, (cuuint64_t)n};
    const cuuint64_t strides[3] = {(cuuint64_t)(c * 2), (cuuint64_t)(w * c * 2),
                                   (cuuint64_t)(h * w * c * 2)};
    const int lo[2] = {lower[0], lower[1]}, hi[2] = {upper[0], upper[1]};
    const cuuint32_t steps[4] = {1, (cuuint32_t)stride, (cuuint32_t)stride, 1};
    CUresult res = encode_im2col(out,
                                 dtype == SPF_DTYPE_F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                        : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                                 4, (void *)base, dims, strides, lo, hi, (cuuint32_t)channels,
                                 (cuuint32_t)pixels, steps, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                 CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                 CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (res != CUDA_SUCCESS)
        return FAIL(SPF_ERR_UNSUPPORTED, "tensor map: cuTensorMapEncodeIm2col of %lld × %lld × "
                    "%lld × %lld (corners %d, %d and %d, %d; stride %d; %d pixels × %d "
                    "channels) failed with driver error %d", (long long)n, (long long)h,
                    (long long)w, (long long)c, lo[0], lo[1], hi[0], hi[1], stride, pixels,
                    channels, (int)res);
    return SPF_OK;
}

#endif
