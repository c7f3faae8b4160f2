/* Tensor maps for the copy engine of Hopper (cp.async.bulk.tensor): the
 * description of a global 2-D matrix of 2-byte elements and of the box a
 * copy takes (CUDA driver API "Tensor Map Object Management"). The driver's
 * encoder is reached through cudaGetDriverEntryPointByVersion, as jit.h
 * reaches the linker, so nothing links libcuda (DESIGN.md decision 2). */
#ifndef SPF_GPU_TENSOR_MAP_H
#define SPF_GPU_TENSOR_MAP_H

#include "spforge.h"

#include <cuda.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The map of a rows × cols matrix of F16 or BF16 elements at base, row r
 * starting pitch elements after row r − 1 (columns contiguous), copied in
 * boxes of box_rows × box_cols with the 128-byte swizzle (box_cols · 2 ≤
 * 128); elements past the matrix read as zeros. SPF_ERR_UNSUPPORTED when
 * the copy engine cannot take the matrix (base not 16-byte aligned, pitch
 * · 2 not a multiple of 16, a dimension past 2^32) or the driver has no
 * encoder; the detail names which. */
spf_status tensor_map_2d(CUtensorMap *out, spf_dtype dtype, const void *base, int64_t rows,
                         int64_t cols, int64_t pitch, int box_rows, int box_cols);

/* The map of a 3-D array of 4-byte words at base, dims[0] contiguous,
 * dimension d + 1 strides[d] bytes apart (multiples of 16), copied in
 * boxes of box[0] × box[1] × box[2] words (box[0] · 4 a multiple of 16,
 * each at most 256) without swizzling; words past the array read as zeros.
 * SPF_ERR_UNSUPPORTED as tensor_map_2d. */
spf_status tensor_map_words_3d(CUtensorMap *out, const void *base, const uint64_t dims[3],
                               const uint64_t strides[2], const uint32_t box[3]);

/* The im2col map of an NHWC tensor of F16 or BF16 elements at base (n
 * images of h × w pixels of c channels, c a multiple of 8), copied in
 * boxes of `pixels` pixels × `channels` channels (channels · 2 ≤ 128) with
 * the 128-byte swizzle, the pixels `stride` apart within the pixel box of
 * corners lower and upper (W first; cuTensorMapEncodeIm2col's); pixels
 * outside the tensor read as zeros. SPF_ERR_UNSUPPORTED as tensor_map_2d. */
spf_status tensor_map_im2col(CUtensorMap *out, spf_dtype dtype, const void *base,
                             const int64_t nhwc[4], const int32_t lower[2], const int32_t upper[2],
                             int stride, int pixels, int channels);

/* The tiled map of an NHWC tensor of F16 or BF16 elements at base (n
 * images of h × w pixels of c channels, c a multiple of 8), copied in
 * boxes of `channels` channels (channels · 2 ≤ 128) × box_w pixels ×
 * box_h rows × box_n images with the 128-byte swizzle, the pixels and
 * rows `step` apart (1 to 8; box_w · step and box_h · step at most 256:
 * the copy engine's element strides); a box may start outside the tensor
 * (negative coordinates), and what it covers outside reads as zeros.
 * SPF_ERR_UNSUPPORTED as tensor_map_2d. */
spf_status tensor_map_nhwc(CUtensorMap *out, spf_dtype dtype, const void *base,
                           const int64_t nhwc[4], int channels, int box_w, int box_h,
                           int box_n, int step);

/* Whether tensor_map_2d takes a matrix at base with this pitch (no driver
 * call). */
int tensor_map_fits(const void *base, int64_t rows, int64_t cols, int64_t pitch);

#ifdef __cplusplus
}
#endif

#endif
