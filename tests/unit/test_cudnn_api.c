/* cuDNN's loader (src/conv/cudnn_api.h) on the CPU: a missing file is
 * refused naming it; where the toolkit's libcudnn is installed it opens
 * and every entry point resolves (the symbol names are right); and where
 * cudnn.h is, the types declared for its ABI match it. */
#define _POSIX_C_SOURCE 200809L

#include "test_util.h"

#include "conv/cudnn_api.h"

#include <glob.h>
#include <stddef.h>

#if defined(__has_include)
#if __has_include(<cudnn.h>)
#define HAVE_CUDNN_H 1
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <cudnn.h>
/* the values and layout cudnn_api.h declares, as cudnn.h gives them */
_Static_assert((int)CUDNN_STATUS_SUCCESS == (int)CUDNN_OK, "status");
_Static_assert((int)CUDNN_DATA_FLOAT == (int)CUDNN_FLOAT &&
                   (int)CUDNN_DATA_HALF == (int)CUDNN_HALF &&
                   (int)CUDNN_DATA_BFLOAT16 == (int)CUDNN_BFLOAT16, "data types");
_Static_assert((int)CUDNN_TENSOR_NCHW == (int)CUDNN_NCHW &&
                   (int)CUDNN_TENSOR_NHWC == (int)CUDNN_NHWC, "formats");
_Static_assert((int)CUDNN_CROSS_CORRELATION == (int)CUDNN_CROSS_CORR, "mode");
_Static_assert((int)CUDNN_TENSOR_OP_MATH == (int)CUDNN_TENSOR_OP &&
                   (int)CUDNN_FMA_MATH == (int)CUDNN_FMA, "math");
_Static_assert(sizeof(cudnnConvolutionFwdAlgoPerf_t) == sizeof(cudnn_algo_perf), "perf size");
_Static_assert(offsetof(cudnnConvolutionFwdAlgoPerf_t, memory) ==
                   offsetof(cudnn_algo_perf, memory), "perf memory");
_Static_assert(offsetof(cudnnConvolutionFwdAlgoPerf_t, status) ==
                   offsetof(cudnn_algo_perf, status), "perf status");
_Static_assert(sizeof(cudnnConvolutionFwdAlgo_t) == sizeof(int), "algo");
#pragma GCC diagnostic pop
#endif
#endif

int main(void)
{
    cudnn_api api;
    char reason[700];
    CHECK(cudnn_open("/nonexistent/libcudnn.so.9", &api, reason, sizeof reason) == 0);
    CHECK_MSG(strstr(reason, "/nonexistent/libcudnn.so.9") != NULL, "%s", reason);
    CHECK(api.lib == NULL && api.Create == NULL);
    cudnn_close(&api);

    /* the toolkit's libcudnn where it is installed */
    static const char *const patterns[] = {"/usr/local/cuda/lib/libcudnn.so.[0-9]",
                                           "/usr/local/cuda/lib64/libcudnn.so.[0-9]",
                                           "/usr/lib/x86_64-linux-gnu/libcudnn.so.[0-9]"};
    int opened = 0;
    for (size_t p = 0; p < sizeof patterns / sizeof *patterns; p++) {
        glob_t g;
        if (glob(patterns[p], 0, NULL, &g) != 0)
            continue;
        for (size_t i = 0; i < g.gl_pathc; i++) {
            int ok = cudnn_open(g.gl_pathv[i], &api, reason, sizeof reason);
            CHECK_MSG(ok, "%s: %s", g.gl_pathv[i], reason);
            if (ok) {
                CHECK(api.GetVersion() >= 8000);
                printf("%s: cuDNN %zu, every entry point resolved\n", g.gl_pathv[i],
                       api.GetVersion());
                opened++;
            }
            cudnn_close(&api);
        }
        globfree(&g);
    }
    if (!opened)
        printf("NOTE: no libcudnn in the toolkit's folders: its entry points not checked\n");
#ifndef HAVE_CUDNN_H
    printf("NOTE: no cudnn.h: the declared types not checked against it\n");
#endif
    return check_report();
}
