/* NCCL loaded at run time (core/dynlib.h; DESIGN.md decision 2): the
 * distributed plans (dist_plan.c) reach its point-to-point calls through
 * the table below, so libspforge.so has no dependency on libnccl and says
 * why where it is missing. The few types NCCL's ABI fixes are declared
 * here, so no nccl.h is needed to build. */
#ifndef SPF_DIST_NCCL_API_H
#define SPF_DIST_NCCL_API_H

#include <stddef.h>

typedef struct ncclComm *nccl_comm_t;     /* ncclComm_t                          */
typedef int nccl_result;                /* ncclResult_t: 0 is ncclSuccess      */
enum { NCCL_SUCCESS = 0, NCCL_INT8 = 0 }; /* ncclSuccess, ncclInt8 (bytes)      */

typedef struct nccl_api {
    void *lib;      /* the dlopen handle               */
    char path[256]; /* the file name it was opened by  */
    nccl_result (*GroupStart)(void);
    nccl_result (*GroupEnd)(void);
    nccl_result (*Send)(const void *buf, size_t count, int type, int peer, nccl_comm_t comm,
                        void *stream);
    nccl_result (*Recv)(void *buf, size_t count, int type, int peer, nccl_comm_t comm,
                        void *stream);
    nccl_result (*CommCount)(const nccl_comm_t comm, int *count);
    nccl_result (*CommUserRank)(const nccl_comm_t comm, int *rank);
    nccl_result (*CommCuDevice)(const nccl_comm_t comm, int *device);
    const char *(*GetErrorString)(nccl_result result);
    /* for the tests, which make their communicators in one process */
    nccl_result (*CommInitAll)(nccl_comm_t *comms, int count, const int *devices);
    nccl_result (*CommDestroy)(nccl_comm_t comm);
} nccl_api;

/* The process's NCCL, opened once (thread-safe): the file named by
 * $SPF_NCCL when set, else libnccl.so.2, then libnccl.so. NULL when it
 * could not be loaded, with why in reason (never empty). */
const nccl_api *nccl_get(char *reason, size_t cap);

#endif
