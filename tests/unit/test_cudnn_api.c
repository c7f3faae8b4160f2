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
_Static_assert((int)CUDNN_CROSS_CORRELATION == (int)CUDNN_CROSS_CORR, "mode");
_Static_assert((int)CUDNN_HEUR_MODE_A == (int)CUDNN_HEUR_A &&
                   (int)CUDNN_HEUR_MODE_FALLBACK == (int)CUDNN_HEUR_FALLBACK, "heuristics");
_Static_assert((int)CUDNN_NUMERICAL_NOTE_TENSOR_CORE == (int)CUDNN_NOTE_TENSOR_CORE &&
                   (int)CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS == (int)CUDNN_NOTE_DOWN_CONVERT &&
                   (int)CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION ==
                       (int)CUDNN_NOTE_REDUCED_REDUCTION, "numerical notes");
_Static_assert(sizeof(cudnnBackendNumericalNote_t) == sizeof(int), "note size");
#define SAME(mine, theirs) _Static_assert((int)(mine) == (int)(theirs), #theirs)
SAME(CUDNN_D_CONVOLUTION, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
SAME(CUDNN_D_ENGINE, CUDNN_BACKEND_ENGINE_DESCRIPTOR);
SAME(CUDNN_D_ENGINECFG, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
SAME(CUDNN_D_ENGINEHEUR, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
SAME(CUDNN_D_EXECUTION_PLAN, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
SAME(CUDNN_D_OP_CONV_FORWARD, CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
SAME(CUDNN_D_OPERATIONGRAPH, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
SAME(CUDNN_D_VARIANT_PACK, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
SAME(CUDNN_D_TENSOR, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
SAME(CUDNN_T_HANDLE, CUDNN_TYPE_HANDLE);
SAME(CUDNN_T_DATA_TYPE, CUDNN_TYPE_DATA_TYPE);
SAME(CUDNN_T_INT64, CUDNN_TYPE_INT64);
SAME(CUDNN_T_FLOAT, CUDNN_TYPE_FLOAT);
SAME(CUDNN_T_VOID_PTR, CUDNN_TYPE_VOID_PTR);
SAME(CUDNN_T_CONVOLUTION_MODE, CUDNN_TYPE_CONVOLUTION_MODE);
SAME(CUDNN_T_HEUR_MODE, CUDNN_TYPE_HEUR_MODE);
SAME(CUDNN_T_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE);
SAME(CUDNN_T_BACKEND_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR);
SAME(CUDNN_A_CONVOLUTION_COMP_TYPE, CUDNN_ATTR_CONVOLUTION_COMP_TYPE);
SAME(CUDNN_A_CONVOLUTION_CONV_MODE, CUDNN_ATTR_CONVOLUTION_CONV_MODE);
SAME(CUDNN_A_CONVOLUTION_DILATIONS, CUDNN_ATTR_CONVOLUTION_DILATIONS);
SAME(CUDNN_A_CONVOLUTION_FILTER_STRIDES, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES);
SAME(CUDNN_A_CONVOLUTION_POST_PADDINGS, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS);
SAME(CUDNN_A_CONVOLUTION_PRE_PADDINGS, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS);
SAME(CUDNN_A_CONVOLUTION_SPATIAL_DIMS, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS);
SAME(CUDNN_A_ENGINEHEUR_MODE, CUDNN_ATTR_ENGINEHEUR_MODE);
SAME(CUDNN_A_ENGINEHEUR_OPERATION_GRAPH, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH);
SAME(CUDNN_A_ENGINEHEUR_RESULTS, CUDNN_ATTR_ENGINEHEUR_RESULTS);
SAME(CUDNN_A_ENGINECFG_ENGINE, CUDNN_ATTR_ENGINECFG_ENGINE);
SAME(CUDNN_A_EXECUTION_PLAN_HANDLE, CUDNN_ATTR_EXECUTION_PLAN_HANDLE);
SAME(CUDNN_A_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG);
SAME(CUDNN_A_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE);
SAME(CUDNN_A_OP_CONV_FORWARD_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA);
SAME(CUDNN_A_OP_CONV_FORWARD_BETA, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA);
SAME(CUDNN_A_OP_CONV_FORWARD_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC);
SAME(CUDNN_A_OP_CONV_FORWARD_W, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W);
SAME(CUDNN_A_OP_CONV_FORWARD_X, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X);
SAME(CUDNN_A_OP_CONV_FORWARD_Y, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y);
SAME(CUDNN_A_OPERATIONGRAPH_HANDLE, CUDNN_ATTR_OPERATIONGRAPH_HANDLE);
SAME(CUDNN_A_OPERATIONGRAPH_OPS, CUDNN_ATTR_OPERATIONGRAPH_OPS);
SAME(CUDNN_A_TENSOR_BYTE_ALIGNMENT, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT);
SAME(CUDNN_A_TENSOR_DATA_TYPE, CUDNN_ATTR_TENSOR_DATA_TYPE);
SAME(CUDNN_A_TENSOR_DIMENSIONS, CUDNN_ATTR_TENSOR_DIMENSIONS);
SAME(CUDNN_A_TENSOR_STRIDES, CUDNN_ATTR_TENSOR_STRIDES);
SAME(CUDNN_A_TENSOR_UNIQUE_ID, CUDNN_ATTR_TENSOR_UNIQUE_ID);
SAME(CUDNN_A_VARIANT_PACK_UNIQUE_IDS, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
SAME(CUDNN_A_VARIANT_PACK_DATA_POINTERS, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
SAME(CUDNN_A_VARIANT_PACK_WORKSPACE, CUDNN_ATTR_VARIANT_PACK_WORKSPACE);
SAME(CUDNN_A_ENGINE_GLOBAL_INDEX, CUDNN_ATTR_ENGINE_GLOBAL_INDEX);
SAME(CUDNN_A_ENGINE_NUMERICAL_NOTE, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE);
#undef SAME
#pragma GCC diagnostic pop
#endif
#endif

int main(int argc, char **argv)
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
