/* The warpgroup conv kernel with the weights 2:4 by wgmma.sp and strays
 * (conv_wg_kernel.cuh), for every wgmma N. */
#include "conv/kernels/conv_wg_kernel.cuh"

template <typename T, int BN>
struct sparse {
    static const void *kernel()
    {
        return reinterpret_cast<const void *>(conv_wg_kernel<T, BN, true>);
    }
};

const void *conv_wg_kernel_sparse(spf_dtype dtype, int bn)
{
    return wg_kernel_of<sparse>(dtype, bn);
}
