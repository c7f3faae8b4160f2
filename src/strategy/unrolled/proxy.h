/* Proxies of the unrolled kernel (LO-SpMM §5): a short stand-in program
 * whose run time ranks configurations the way their real kernels' would,
 * at a fraction of the compile cost. One proxy stands for every n1 of a
 * shape — the fields that change the tile code: m1, v, prefetch, ksplit
 * (and the dtype and epilogue, fixed per request) — reduced at the three
 * levels of §5.1:
 *
 *   kernel function (§5.1.1): n1 is a kernel parameter, not an immediate.
 *     In the real kernel n1 enters the entry's column arithmetic and the
 *     launch geometry, and, under a K split, the stride of the shared
 *     reduction area: the proxy lays that area out for the largest n1 it
 *     stands for (proxy_info.n1_max), so the tile code is the same for all.
 *   thread-block function (§5.1.2): the A_tiles, described by (B loads =
 *     non-empty columns, fmas = nonzeros), are clustered agglomeratively
 *     (Ward linkage, Euclidean on features divided by their means) into at
 *     most 3 × max(NUM_ATB) clusters; one tile function per cluster, built
 *     from its centroid; a table in the program maps each block to its
 *     cluster's function.
 *   loop block (§5.1.3): a proxy function repeats a proxy iteration — one
 *     B row load and the centroid's mean fmas per load, as immediate-operand
 *     fmas like the real kernel's — NNC_P = min(NNC, 300 / (1 − sparsity))
 *     times, then the real K-split reduction, epilogue and stores.
 *
 * The proxy is generated as a real kernel of a synthetic matrix (one tile
 * per cluster, NNC_P columns spread over K, the fmas dealt round the tile's
 * rows), through the same schedule and emitters (kernel_emit.h), so every
 * instruction pattern — prefetch ring, conversions, K-split groups and
 * barrier, bias, ReLU, vector stores — is the real one. It computes
 * nothing meaningful; it stays in bounds: B rows < k, C rows < m (each
 * block stores its function's rows from min(y · m1, m − rows)), columns
 * clamped and predicated as in the real kernel.
 *
 * Kernel parameters: B, C, bias (as the real kernel's, program.h), then
 * n1 (.u32). Launch per candidate: grid (ceil(n / n1), ceil(m / m1)),
 * block n1 / v · ksplit threads, dynamic shared memory from
 * proxy_shared_bytes (§5.2, Eq. 6), at least proxy_info.reduction_bytes. */
#ifndef SPF_STRATEGY_UNROLLED_PROXY_H
#define SPF_STRATEGY_UNROLLED_PROXY_H

#include "gpu/program.h"
#include "spforge.h"

#include <stdint.h>

/* §5.1.3: NNC_P = min(NNC, PROXY_NNC_BUDGET / (1 − sparsity)). */
#define PROXY_NNC_BUDGET 300.0
/* §5.1.2: at most PROXY_CLUSTERS_PER_ATB × max(NUM_ATB) clusters. */
#define PROXY_CLUSTERS_PER_ATB 3
/* Tiles with distinct features beyond this are first merged on a 64 × 64
 * grid of the normalized features, bounding the clustering's O(P²) work
 * (P points) to ~16 M distance evaluations. */
#define PROXY_CLUSTER_POINTS 4096

/* What Eq. 5 and 6 need of the device (cudaDeviceGetAttribute names). */
typedef struct proxy_device {
    int sm_count;             /* MultiProcessorCount                                */
    int regs_per_sm;          /* MaxRegistersPerMultiprocessor: Eq. 5's regCapacity  */
    int max_threads_per_sm;   /* MaxThreadsPerMultiProcessor                        */
    int max_blocks_per_sm;    /* MaxBlocksPerMultiprocessor                         */
    int smem_per_sm;          /* MaxSharedMemoryPerMultiprocessor: Eq. 6's
                                 maxSmemUsage                                       */
    int smem_per_block_optin; /* MaxSharedMemoryPerBlockOptin                       */
    int smem_reserved;        /* ReservedSharedMemoryPerBlock: Eq. 6's Constant     */
} proxy_device;

/* An H100 / H200 SXM (sm_90): 132 SMs, 64 K registers, 2048 threads and 32
 * blocks per SM, 228 KiB of shared memory per SM, 227 KiB per block, 1 KiB
 * reserved per block. */
void proxy_device_default(proxy_device *d);

/* NUM_ATB of the real kernel of cfg (LO-SpMM Eq. 5): thread blocks active
 * on one SM, min(ceil(NUM_TB / SMs), regCapacity / regUsage) with
 * regUsage = register_forecast (allocated in 8s) × threads, and the limits
 * Eq. 5 leaves implicit: threads and blocks per SM, and the kernel's own
 * K-split shared memory (plus the reserved amount) per block. At least 1.
 * f16x2 accumulation forecasts as F16. */
int proxy_active_blocks(const proxy_device *d, int64_t m, int64_t n, const spf_kernel_config *cfg,
                        spf_dtype dtype);

/* How to size the proxy's dynamic shared memory for NUM_ATB (§5.2). */
typedef enum proxy_smem_policy {
    PROXY_SMEM_EQ6 = 0, /* Eq. 6: maxSmemUsage / NUM_ATB − Constant, rounded down
                           to the 128-byte allocation unit: the most that still
                           lets NUM_ATB blocks share an SM                          */
    PROXY_SMEM_LEAST    /* the least that keeps NUM_ATB + 1 blocks off an SM,
                           rounded up to 128: the same occupancy, and the most
                           L1 the carveout can leave (a proxy's B loads go
                           through L1 like the real kernel's)                    */
} proxy_smem_policy;

/* Dynamic shared bytes for a proxy launch under the policy, at least
 * `need` (the proxy's own reduction area) and at most the per-block
 * opt-in limit. */
int64_t proxy_shared_bytes(const proxy_device *d, int active_blocks, int64_t need,
                           proxy_smem_policy policy);

/* §5.1.3: min(nnc, floor(PROXY_NNC_BUDGET / (1 − sparsity))); nnc when
 * sparsity ≥ 1. */
int32_t proxy_truncated_columns(int32_t nnc, double sparsity);

/* §5.1.2: a partition of tiles into clusters. */
typedef struct proxy_clusters {
    int32_t count;     /* clusters                                           */
    int32_t tiles;
    int32_t *of_tile;  /* tiles entries: the cluster of each tile (owned)    */
    int32_t *size;     /* count: tiles per cluster, each ≥ 1 (owned)         */
    double *nnc;       /* count: centroid, mean non-empty columns (owned)    */
    double *nnz;       /* count: centroid, mean nonzeros (owned)             */
} proxy_clusters;

/* Cluster `tiles` tiles by (nnc[t], nnz[t]) into at most max_clusters
 * clusters (fewer when fewer distinct feature pairs exist), agglomerative
 * with Ward linkage on the features divided by their means (the nearest-
 * neighbour chain over distinct points, weighted by how many tiles share
 * them). Cluster ids follow the order of their smallest (nnc, nnz).
 * out is zeroed first; release with proxy_clusters_free. */
spf_status proxy_cluster(const int32_t *nnc, const int64_t *nnz, int32_t tiles,
                         int32_t max_clusters, proxy_clusters *out);
void proxy_clusters_free(proxy_clusters *c); /* accepts NULL or a zeroed struct */

/* One proxy to generate. */
typedef struct proxy_spec {
    const spf_matrix *a;        /* borrowed; read during the call only                 */
    const int32_t *row_order;   /* the rows in tile order for shape.m1 (LO-SpMM §4), or
                                   NULL for the identity; borrowed                     */
    int64_t n;                  /* columns of B and C                                  */
    spf_kernel_config shape;    /* m1, v, prefetch, ksplit; n1 is ignored              */
    const int32_t *n1;          /* n1_count (≥ 1) n1 values the proxy stands for, each
                                   valid with the shape for n (schedule_config_check)  */
    int n1_count;
    spf_dtype dtype;
    int f16x2_accumulate, bias, relu;
    int sm;                     /* PTX target: 80 or 90                                */
    const proxy_device *device; /* NUM_ATB of Eq. 5; NULL for proxy_device_default     */
} proxy_spec;

typedef struct proxy_info {
    int32_t tiles;          /* A_tiles of the real kernel (grid.y)                      */
    int32_t clusters;       /* proxy tile functions                                     */
    int32_t max_clusters;   /* the bound: 3 × max(NUM_ATB) over the n1 values           */
    int max_active_blocks;  /* max(NUM_ATB)                                             */
    int32_t rows;           /* rows each proxy function stores: min(m1, m)              */
    int32_t nnc_max;        /* the largest centroid NNC (rounded) and its NNC_P         */
    int32_t nnc_p_max;
    int32_t n1_max;         /* stride of the reduction area                             */
    int64_t reduction_bytes;/* dynamic shared memory the proxy's K split needs          */
    int64_t code_bytes;     /* PTX text over all units                                  */
} proxy_info;

/* The proxy kernel's name, e.g. spf_proxy_f32_m8_v4_p2_k1. */
void proxy_kernel_name(const spf_kernel_config *shape, spf_dtype dtype, int f16x2_accumulate,
                       char name[128]);

/* Generate the proxy of q into out (units as unrolled_generate's: an entry
 * unit and chunk units, max_registers the real kernel's cap; grid and
 * block those of n1_max, shared_bytes its reduction_bytes) and describe it
 * in *info (may be NULL). out is zeroed on failure. */
spf_status proxy_generate(const proxy_spec *q, ptx_program *out, proxy_info *info);

#endif
