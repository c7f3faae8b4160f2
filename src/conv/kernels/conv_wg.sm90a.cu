/* The warpgroup conv kernels' host side (conv_wg.h): the weights on the
 * device, the launch. The kernels are in conv_wg_{staged,resident,
 * sparse}.sm90a.cu. */
#include "conv/kernels/conv_wg_args.cuh"

extern "C" {
#include "core/alloc.h"
#include "core/error.h"
#include "core/matrix.h"
#include "gpu/host_run.h"
}
#include "gpu/cuda_check.h"
#include "gpu/early_start.h"
#include "gpu/smem_limit.cuh"
#include "gpu/tensor_map.h"

#include <cuda_runtime.h>

#include <stdint.h>

/* dst (device, owned) = count bytes of src; status on failure */
static spf_status upload(void **dst, const void *src, size_t count, int64_t *bytes)
{
    spf_status status = CUDA_CHECK(cudaMalloc(dst, count ? count : 1));
    if (status == SPF_OK && count)
        status = CUDA_CHECK(cudaMemcpy(*dst, src, count, cudaMemcpyHostToDevice));
    *bytes += (int64_t)count;
    return status;
}

/* The sparse weights packed on the host (conv_wg_sparse_pack), uploaded
 * as one buffer. */
static spf_status create_sparse(conv_wg *x, const spf_matrix *w)
{
    conv_wg_sparse sp;
    uint8_t *flat = NULL;
    size_t bytes = 0;
    spf_status status = conv_wg_sparse_pack(w, &x->geom, x->dtype, &sp);
    if (status != SPF_OK)
        return status;
    status = conv_wg_sparse_flatten(&sp, &x->geom, &flat, &bytes);
    if (status == SPF_OK)
        status = upload(&x->weights, flat, bytes, &x->bytes);
    mem_free(flat);
    conv_wg_sparse_free(&sp);
    return status;
}

/* g's kernel: its kind's, of the dtype and wgmma N; SPF_ERR_INVALID_ARGUMENT
 * where there is none. */
static spf_status wg_kernel(const conv_wg_geom &g, spf_dtype dtype, const void **k)
{
    *k = g.weights == CONV_WG_RESIDENT ? conv_wg_kernel_resident(dtype, g.bn)
         : g.weights == CONV_WG_SPARSE ? conv_wg_kernel_sparse(dtype, g.bn)
                                       : conv_wg_kernel_staged(dtype, g.bn);
    if (*k)
        return SPF_OK;
    return FAIL(SPF_ERR_INVALID_ARGUMENT, "conv wg: %d positions a block (a multiple of 8 to "
                "256)", g.bn);
}

/* Split over a cluster (conv_wg_split): whether the device places one of
 * g.splits blocks (thread-block clusters, compute capability 9.0; the
 * blocks of a cluster share a GPC). */
static spf_status wg_cluster_check(const conv_wg_geom &g, spf_dtype dtype)
{
    int clusters = 0, fit = 0;
    const void *k = NULL;
    spf_status status = cluster_launch_supported(&clusters);
    if (status == SPF_OK && !clusters)
        status = FAIL(SPF_ERR_UNSUPPORTED, "conv wg: chunks split over a cluster of %d on a "
                      "device without thread-block clusters", g.splits);
    if (status == SPF_OK)
        status = wg_kernel(g, dtype, &k);
    const size_t smem = conv_wg_smem(&g);
    if (status == SPF_OK)
        status = cluster_fit(k, dim3(1, 1, (unsigned)g.splits), CONV_WG_THREADS, smem, g.splits,
                             &fit);
    if (status == SPF_OK && fit < 1)
        status = FAIL(SPF_ERR_UNSUPPORTED, "conv wg: the device places no cluster of %d blocks "
                      "of %zu bytes of shared memory", g.splits, smem);
    return status;
}

extern "C" spf_status conv_wg_create(const spf_matrix *w, const conv_wg_geom *g, spf_dtype dtype,
                                     int relu, conv_wg **out)
{
    CHECK_ARG(w != NULL && g != NULL && out != NULL);
    CHECK_ARG(dtype == SPF_DTYPE_F16 || dtype == SPF_DTYPE_BF16);
    CHECK_ARG(w->rows == g->k && w->cols == (int64_t)g->c * g->r * g->s);
    CHECK_ARG(g->splits == 1 || conv_wg_splits_ok(g, g->splits));
    *out = NULL;
    int device = 0, major = 0;
    spf_status status = CUDA_CHECK(cudaGetDevice(&device));
    if (status == SPF_OK)
        status = CUDA_CHECK(
            cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    if (status != SPF_OK)
        return status;
    if (major < 9)
        return FAIL(SPF_ERR_UNSUPPORTED, "conv wg: wgmma on a device of compute capability %d "
                    "(9.0 or newer)", major);
    conv_wg *x = static_cast<conv_wg *>(mem_calloc(1, sizeof *x));
    float *dense = NULL;
    if (!x)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "conv wg: a kernel");
    x->geom = *g;
    x->dtype = dtype;
    x->relu = relu;
    x->early = early_start_wanted(major);
    if (g->splits > 1 && (status = wg_cluster_check(*g, dtype)) != SPF_OK)
        goto fail;
    if (g->weights == CONV_WG_SPARSE) {
        status = create_sparse(x, w);
        if (status != SPF_OK)
            goto fail;
        *out = x;
        return SPF_OK;
    }
    dense = matrix_dense(w);
    if (!dense) {
        status = FAIL(SPF_ERR_OUT_OF_MEMORY, "conv wg: the weights expanded dense (%lld values)",
                      (long long)(w->rows * w->cols));
        goto fail;
    }
    status = host_stage(dtype, dense, w->rows * w->cols, &x->weights, NULL);
    if (status == SPF_OK)
        status = tensor_map_2d(&x->w_map, dtype, x->weights, w->rows, w->cols, w->cols,
                               CONV_WG_BM, CONV_WG_CHUNK);
    if (status != SPF_OK)
        goto fail;
    x->bytes = w->rows * w->cols * 2;
    mem_free(dense);
    *out = x;
    return SPF_OK;
fail:
    mem_free(dense);
    conv_wg_free(x);
    return status;
}

extern "C" void conv_wg_free(conv_wg *x)
{
    if (!x)
        return;
    (void)cudaFree(x->weights);
    mem_free(x);
}

extern "C" int64_t conv_wg_bytes(const conv_wg *x)
{
    return x ? x->bytes : 0;
}

extern "C" const conv_wg_geom *conv_wg_geometry_of(const conv_wg *x)
{
    return &x->geom;
}

/* x's kernel over its grid: tiles × channel tiles × splits. */
static spf_status wg_launch(const conv_wg *x, const CUtensorMap &in_map, const wg_args &a,
                            cudaStream_t stream)
{
    const conv_wg_geom &g = x->geom;
    const void *k = NULL;
    const size_t smem = conv_wg_smem(&g);
    int blocks = 1, device = 0, sms = 1;
    const int threads = g.weights == CONV_WG_SPARSE ? CONV_WG_SP_THREADS : CONV_WG_THREADS;
    spf_status status = wg_kernel(g, x->dtype, &k);
    if (status == SPF_OK)
        status = smem_occupancy(k, threads, smem, &blocks);
    if (status == SPF_OK)
        status = CUDA_CHECK(cudaGetDevice(&device));
    if (status == SPF_OK)
        status = CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    if (status != SPF_OK)
        return status;
    if (blocks < 1)
        return FAIL(SPF_ERR_UNSUPPORTED, "conv wg: no block of %zu bytes of shared memory fits "
                    "an SM", smem);
    const int channel_tiles = g.k / CONV_WG_BM;
    /* resident: as many blocks as the GPU holds at once, each walking tiles */
    int along = g.tiles;
    if (g.weights == CONV_WG_RESIDENT) {
        const int held = (sms * blocks + channel_tiles - 1) / channel_tiles;
        along = held < along ? held : along;
    }
    const dim3 grid((unsigned)along, (unsigned)channel_tiles, (unsigned)g.splits);
    void *params[] = {const_cast<CUtensorMap *>(&in_map), const_cast<CUtensorMap *>(&x->w_map),
                      const_cast<wg_args *>(&a)};
    return smem_launch_params(k, grid, threads, smem, params, g.splits, x->early, stream);
}

extern "C" spf_status conv_wg_launch(const conv_wg *x, const void *in, void *out,
                                     const float *bias, const void *residual, void *stream)
{
    CHECK_ARG(x != NULL && in != NULL && out != NULL);
    const conv_wg_geom &g = x->geom;
    if ((uintptr_t)out % 16 != 0 || (residual && (uintptr_t)residual % 16 != 0))
        return FAIL(SPF_ERR_UNSUPPORTED, "conv wg: its 16-byte stores take the output and "
                    "residual 16-byte aligned, and the %s is at %p",
                    (uintptr_t)out % 16 ? "output" : "residual",
                    (uintptr_t)out % 16 ? (const void *)out : residual);
    CUtensorMap in_map;
    const int64_t nhwc[4] = {g.n, g.h, g.w, g.c};
    const spf_status status =
        tensor_map_nhwc(&in_map, x->dtype, in, nhwc, CONV_WG_CHUNK, g.wp, g.halo, g.images,
                        g.stride);
    if (status != SPF_OK)
        return status;
    const wg_args a = {g, x->relu, bias, residual, out, static_cast<const uint8_t *>(x->weights)};
    return wg_launch(x, in_map, a, static_cast<cudaStream_t>(stream));
}

