/* The warpgroup conv kernel with dense weights staged with each chunk
 * (conv_wg_kernel.cuh), for every wgmma N. */
#include "conv/kernels/conv_wg_kernel.cuh"

template <typename T, int BN>
struct staged {
    static const void *kernel()
    {
        return reinterpret_cast<const void *>(conv_wg_kernel<T, BN, false>);
    }
};

const void *conv_wg_kernel_staged(spf_dtype dtype, int bn)
{
    return wg_kernel_of<staged>(dtype, bn);
}
