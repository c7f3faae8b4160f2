/* The distributed plan's argument checks on the CPU (spf_dist_plan_*,
 * src/dist/dist_plan.c): no communicator, no matrix or N < 1 is an
 * invalid argument; NCCL that cannot be loaded ($SPF_NCCL naming a
 * missing file) is SPF_ERR_UNSUPPORTED with the file named, before the
 * communicator is touched; a build without CUDA says so. The GPU test
 * (tests/gpu/test_dist_nccl.c) runs the plans. */
#define _POSIX_C_SOURCE 200809L /* setenv */

#include "test_util.h"

#include <stdlib.h>

static void test_arguments(void)
{
    spf_matrix *a = gen_matrix(SPF_GEN_RMAT, 256, 256, 0.95, 1);
    spf_dist_plan *p = (spf_dist_plan *)&p; /* overwritten with NULL */
    int fake_comm = 0;
    CHECK(spf_dist_plan_create(a, 8, NULL, NULL, NULL, NULL, &p) == SPF_ERR_INVALID_ARGUMENT);
    CHECK(p == NULL);
    CHECK(spf_dist_plan_create(NULL, 8, &fake_comm, NULL, NULL, NULL, &p) ==
          SPF_ERR_INVALID_ARGUMENT);
    CHECK(spf_dist_plan_create(a, 0, &fake_comm, NULL, NULL, NULL, &p) ==
          SPF_ERR_INVALID_ARGUMENT);
    CHECK(spf_dist_plan_create(a, 8, &fake_comm, NULL, NULL, NULL, NULL) ==
          SPF_ERR_INVALID_ARGUMENT);
    spf_status st = spf_dist_plan_create(a, 8, &fake_comm, NULL, NULL, NULL, &p);
#ifdef SPF_HAVE_CUDA
    CHECK_MSG(st == SPF_ERR_UNSUPPORTED && strstr(spf_last_error(), "/nonexistent/libnccl.so.2"),
              "status %d: %s", st, spf_last_error());
#else
    CHECK_MSG(st == SPF_ERR_NO_DEVICE && strstr(spf_last_error(), "without CUDA"), "status %d: %s",
              st, spf_last_error());
#endif
    CHECK(p == NULL);
    CHECK(spf_dist_plan_execute(NULL, NULL, NULL, NULL, NULL) != SPF_OK);
    CHECK(spf_dist_plan_get_info(NULL, NULL) != SPF_OK);
    spf_dist_plan_free(NULL);
    spf_matrix_free(a);
}

int main(int argc, char **argv)
{
    /* read once per process, at the first plan */
    setenv("SPF_NCCL", "/nonexistent/libnccl.so.2", 1);
    test_arguments();
    return check_report();
}
