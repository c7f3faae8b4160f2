/* What the conv kernels' GPU tests share (test_conv_window.c,
 * test_conv_tc.c): a case's tensors staged on the device, the input
 * optionally one element past 16 bytes (the kernels' element path); the
 * output poisoned with NaN before a launch and read back after it; and
 * main, which skips visibly (exit 77) without a device. */
#ifndef SPF_TESTS_GPU_CONV_KERNEL_TEST_H
#define SPF_TESTS_GPU_CONV_KERNEL_TEST_H

#include "conv_case.h"

#ifdef SPF_HAVE_CUDA
#include "core/dtype.h"
#include "gpu/host_run.h"

#include <cuda_runtime_api.h>

typedef struct conv_io {
    void *in, *residual, *bias, *out; /* device; residual and bias NULL where the case has none */
    const void *input;                /* in, or one element past it: what a launch reads      */
    void *raw;                        /* host: the output as the kernel wrote it              */
    size_t out_bytes;
} conv_io;

static inline void conv_io_stage(const conv_case *t, spf_dtype dtype, int bias, int misaligned,
                                 conv_io *io)
{
    memset(io, 0, sizeof *io);
    const size_t es = dtype_size(dtype);
    const int lead = misaligned ? 1 : 0;
    float *in = malloc((size_t)(t->in_count + 1) * sizeof *in);
    in[0] = 0.0f;
    memcpy(in + lead, t->in, (size_t)t->in_count * sizeof *in);
    CHECK_OK(host_stage(dtype, in, t->in_count + lead, &io->in, NULL));
    free(in);
    CHECK_OK(host_stage(dtype, t->residual, t->out_count, &io->residual, NULL));
    CHECK_OK(host_stage(SPF_DTYPE_F32, bias ? t->bias : NULL, t->k, &io->bias, NULL));
    io->out_bytes = (size_t)t->out_count * es;
    CUDA_OK(cudaMalloc(&io->out, io->out_bytes));
    io->input = io->in ? (const char *)io->in + lead * es : NULL;
    io->raw = malloc(io->out_bytes);
}

/* NaN over the output: a place the launch never writes fails the check. */
static inline void conv_io_poison(conv_io *io)
{
    CUDA_OK(cudaMemset(io->out, 0xff, io->out_bytes));
}

/* After a launch: the output into t->out as floats. */
static inline void conv_io_read(conv_io *io, spf_dtype dtype, conv_case *t)
{
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemcpy(io->raw, io->out, io->out_bytes, cudaMemcpyDeviceToHost));
    dtype_to_float(dtype, io->raw, t->out, t->out_count);
}

static inline void conv_io_free(conv_io *io)
{
    cudaFree(io->in);
    cudaFree(io->residual);
    cudaFree(io->bias);
    cudaFree(io->out);
    free(io->raw);
}
#endif

/* main's body: run_all(quick) on a device, then "N <what> checked". */
static inline int conv_kernel_main(int argc, char **argv, const char *what,
                                   void (*run_all)(int quick), const int *runs)
{
    spf_device_info info;
    CHECK_OK(spf_device_query(0, &info));
    if (!info.available) {
        if (check_failed)
            return check_report();
        check_report();
        SKIP("no CUDA device (%s): %s not run", info.reason, what);
    }
    run_all(argc > 1 && strcmp(argv[1], "--quick") == 0);
    printf("%d %s checked\n", *runs, what);
    CHECK(*runs > 0);
    return check_report();
}

#endif
