/* The copy engine's tensor maps (gpu/tensor_map.h) without a GPU: what
 * they refuse before any driver call (a base not 16-byte aligned, C not a
 * multiple of 8, a box or stride the engine cannot take, NULL), each with
 * an error that names it; and a valid map, which the driver encodes
 * (SPF_OK, no device memory is touched) or, on a machine without one, is
 * refused as unsupported with the entry point's name. CUDA builds only. */
#include "check.h"

#ifdef SPF_HAVE_CUDA
#include "gpu/tensor_map.h"

#include <string.h>

static void check_im2col(void)
{
    CUtensorMap map;
    const int64_t nhwc[4] = {2, 14, 13, 64};
    const int32_t lower[2] = {-1, -1}, upper[2] = {-1, -1};
    void *const aligned = (void *)(uintptr_t)0x10000, *const off = (void *)(uintptr_t)0x10008;
    CHECK_STATUS(tensor_map_im2col(&map, SPF_DTYPE_F16, off, nhwc, lower, upper, 1, 16, 64),
                 SPF_ERR_UNSUPPORTED);
    CHECK(strstr(spf_last_error(), "16-byte aligned") != NULL);
    const int64_t odd_c[4] = {2, 14, 13, 12};
    CHECK_STATUS(tensor_map_im2col(&map, SPF_DTYPE_F16, aligned, odd_c, lower, upper, 1, 16, 64),
                 SPF_ERR_UNSUPPORTED);
    CHECK(strstr(spf_last_error(), "multiple of 8") != NULL);
    /* 128 channels are 256 bytes: past the 128-byte swizzle's row */
    CHECK_STATUS(tensor_map_im2col(&map, SPF_DTYPE_F16, aligned, nhwc, lower, upper, 1, 16, 128),
                 SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(tensor_map_im2col(&map, SPF_DTYPE_F16, aligned, nhwc, lower, upper, 1, 1025, 64),
                 SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(tensor_map_im2col(&map, SPF_DTYPE_F16, aligned, nhwc, lower, upper, 9, 16, 64),
                 SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(tensor_map_im2col(&map, SPF_DTYPE_F32, aligned, nhwc, lower, upper, 1, 16, 64),
                 SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(tensor_map_im2col(NULL, SPF_DTYPE_F16, aligned, nhwc, lower, upper, 1, 16, 64),
                 SPF_ERR_INVALID_ARGUMENT);
    const spf_status st =
        tensor_map_im2col(&map, SPF_DTYPE_BF16, aligned, nhwc, lower, upper, 2, 64, 64);
    CHECK_MSG(st == SPF_OK ||
                  (st == SPF_ERR_UNSUPPORTED && strstr(spf_last_error(), "cuTensorMapEncode")),
              "a valid im2col map: status %d, %s", (int)st, spf_last_error());
    printf("a valid im2col map: %s\n", st == SPF_OK ? "encoded" : spf_last_error());
}

static void check_2d(void)
{
    CUtensorMap map;
    CHECK(!tensor_map_fits((void *)(uintptr_t)0x10008, 64, 64, 64));
    CHECK(!tensor_map_fits((void *)(uintptr_t)0x10000, 64, 60, 60)); /* 120-byte pitch */
    CHECK(tensor_map_fits((void *)(uintptr_t)0x10000, 64, 60, 64));
    CHECK_STATUS(tensor_map_2d(&map, SPF_DTYPE_F16, (void *)(uintptr_t)0x10008, 64, 64, 64, 64, 64),
                 SPF_ERR_UNSUPPORTED);
    CHECK(strstr(spf_last_error(), "16-byte aligned") != NULL);
    CHECK_STATUS(
        tensor_map_2d(&map, SPF_DTYPE_F16, (void *)(uintptr_t)0x10000, 64, 64, 64, 64, 128),
        SPF_ERR_INVALID_ARGUMENT);
}
#endif

int main(int argc, char **argv)
{
#ifdef SPF_HAVE_CUDA
    check_im2col();
    check_2d();
#else
    SKIP("built without CUDA: no tensor maps to check");
#endif
    return check_report();
}
