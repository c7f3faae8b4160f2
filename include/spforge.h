/*
 * spforge — sparse-matrix × dense-matrix multiplication (SpMM) kernels found by a
 * low-cost search, for NVIDIA GPUs, with a CPU reference path everywhere.
 *
 * This is the one public header. Conventions (see docs in the repository):
 *   A is M×K sparse (CSR, int32 column indices, int64 sizes), B is K×N dense
 *   row-major, C = A·B (+ bias per row, + ReLU) is M×N dense row-major; a
 *   plan may instead take B as N×K and give C as N×M (spf_layout: X and Y of
 *   a Linear layer Y = X·Wᵀ with W = A, as torch holds them).
 *
 * Every fallible call returns an spf_status (0 = success, negative = error;
 * values are stable). On error, spf_last_error() gives a per-thread detail
 * message naming the function and what was wrong (for input files: the file,
 * the line or byte offset, and what was expected). The library never aborts
 * and never prints unless a log callback is installed.
 *
 * Ownership: constructors take an out-pointer, set it to NULL first and hand
 * the caller a handle to free with the matching *_free (which accepts NULL).
 *
 * Threads (tests/unit/test_threads.c, tests/gpu/test_threads.c):
 *   - Calls on different objects may run at once from any threads: reading,
 *     generating, writing, stats, the reference, spf_plan_create, and so on.
 *   - Calls that only read an object may share it: any number of threads may
 *     at once read a const spf_matrix (stats, reference, write, clone,
 *     spf_plan_create or spf_plan_cache_peek on it) or use one plan
 *     (spf_plan_execute, spf_plan_get_info, spf_plan_write_tuning_log).
 *     spf_plan_execute on one plan from several threads, and on several
 *     CUDA streams, at once is safe: it keeps no state between calls; each
 *     call needs its own C (and the plan's device current on the calling
 *     thread, as for one thread).
 *     A DENSE plan whose cuBLASLt algorithm needs a workspace (its info's
 *     config names one) keeps one per plan and runs such launches one after
 *     another on the GPU (an event, no host synchronization); inside a
 *     stream capture that order is the graph's to keep.
 *   - Freeing an object, or editing a matrix's values in place, must not
 *     overlap any other call on that object.
 *   - spf_last_error() is per thread: it reports the last failing call of the
 *     calling thread, whatever other threads do.
 *   - spf_set_allocator is process-wide: call it before creating objects
 *     (see its comment) and while no other thread is inside the library.
 *     Its functions are called from any thread, the library's worker
 *     threads included, several at once: they must be thread-safe.
 *   - spf_set_log_callback is process-wide and may be called at any time; a
 *     call already logging on another thread may still reach the previous
 *     callback once. The callback is called from any thread, several at
 *     once: it must be thread-safe.
 *   - The library reads environment variables (SPFORGE_CACHE_DIR,
 *     SPFORGE_CACHE_MAX_BYTES, SPFORGE_READ_MAX_BYTES, SPFORGE_MAX_BYTES,
 *     SPFORGE_RANK_MODEL,
 *     SPF_PTXAS, SPF_CUBLASLT, CUDA_HOME, PATH, TMPDIR, HOME) during calls:
 *     do not setenv / putenv while another thread is inside it.
 *   - Plans may be created at once with the plan cache on, by threads or
 *     processes: each compiles in its own temporary folder, and cache
 *     entries are written under unique temporary names and renamed. A plan
 *     that times kernels (AUTO, search, exhaustive) measures less well while
 *     other work shares the GPU.
 */
#ifndef SPFORGE_H
#define SPFORGE_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32) && defined(SPF_BUILD_SHARED)
#define SPF_API __declspec(dllexport)
#elif defined(__GNUC__)
#define SPF_API __attribute__((visibility("default")))
#else
#define SPF_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define SPF_VERSION_MAJOR 0
#define SPF_VERSION_MINOR 1
#define SPF_VERSION_PATCH 0
#define SPF_VERSION_STRING "0.1.0"

/* ---------------------------------------------------------------- status */

typedef enum spf_status {
    SPF_OK = 0,
    SPF_ERR_INVALID_ARGUMENT = -1, /* a NULL pointer, a negative size, an unknown option */
    SPF_ERR_OUT_OF_MEMORY = -2,    /* an allocation failed                               */
    SPF_ERR_IO = -3,               /* a file could not be opened, read or written        */
    SPF_ERR_PARSE = -4,            /* a file's contents are malformed                    */
    SPF_ERR_UNSUPPORTED = -5,      /* valid input of a kind this version does not handle */
    SPF_ERR_OVERFLOW = -6,         /* a size beyond int32 indices or int64 byte counts   */
    SPF_ERR_INVALID_MATRIX = -7,   /* a matrix fails validation (order, range, dupes)    */
    SPF_ERR_NO_DEVICE = -8,        /* no usable CUDA device (or driver)                  */
    SPF_ERR_CUDA = -9,             /* a CUDA runtime / driver call failed                */
    SPF_ERR_COMPILE = -10,         /* generated code failed to compile or link           */
    SPF_ERR_VERIFY = -11,          /* a result failed its check against the reference    */
    SPF_ERR_INTERNAL = -12,        /* a broken internal invariant: a bug, please report  */
    SPF_ERR_CANCELLED = -13        /* the caller's progress callback asked to stop       */
} spf_status;

/* A static, human-readable name for a status ("invalid argument", ...). */
SPF_API const char *spf_status_string(spf_status status);

/* The detail message of the last failing call on this thread ("" if none).
 * Valid until the next spforge call on the same thread. */
SPF_API const char *spf_last_error(void);

/* The library version as a string, e.g. "0.1.0". */
SPF_API const char *spf_version(void);

/* ------------------------------------------------------ logging, memory */

typedef enum spf_log_level { SPF_LOG_DEBUG = 0, SPF_LOG_INFO = 1, SPF_LOG_WARN = 2 } spf_log_level;
typedef void (*spf_log_fn)(spf_log_level level, const char *message, void *user);

/* Install a log callback (NULL: silent, the default). Process-wide. */
SPF_API void spf_set_log_callback(spf_log_fn fn, void *user);

/* An allocator for every host allocation the library makes (tests inject a
 * failing one). Pass NULL to restore malloc / realloc / free. Process-wide;
 * set it before creating any object, and free objects with the allocator
 * that created them. */
typedef struct spf_allocator {
    void *(*alloc)(size_t size, void *user);
    void *(*realloc)(void *ptr, size_t size, void *user);
    void (*free)(void *ptr, void *user);
    void *user;
} spf_allocator;
SPF_API void spf_set_allocator(const spf_allocator *allocator);

/* The work budget: the most host memory one call may allocate for what its
 * input describes (a shape a file declares, a generator's options, a dense
 * conversion, the operands the CLI makes). Every such size is computed
 * without overflow and checked before anything is allocated; beyond the
 * budget the call fails with SPF_ERR_OUT_OF_MEMORY, "... needs N bytes, over
 * the work budget of M bytes", naming the input. bytes: > 0 the budget,
 * < 0 none, 0 the default: $SPFORGE_MAX_BYTES if set, else
 * SPF_MAX_BYTES_DEFAULT or half the machine's physical memory, the smaller.
 * Process-wide. spf_max_bytes returns the budget in force (-1: none; 0 for
 * a malformed $SPFORGE_MAX_BYTES, which the calls then refuse). */
#define SPF_MAX_BYTES_DEFAULT ((int64_t)4 << 30)
SPF_API void spf_set_max_bytes(int64_t bytes);
SPF_API int64_t spf_max_bytes(void);

/* ------------------------------------------------------------- matrices */

/* A sparse matrix in CSR form with float32 values: row offsets int64
 * (rows + 1 entries, 0 .. nnz), column indices int32 sorted ascending and
 * unique within each row. rows and cols are each at most INT32_MAX. */
typedef struct spf_matrix spf_matrix;

/* What to do with repeated (row, col) entries when building from COO or
 * reading a file. REJECT is the default everywhere: a repeated entry in a
 * weight file is more often a bug than an intent. */
typedef enum spf_duplicates { SPF_DUPLICATES_REJECT = 0, SPF_DUPLICATES_SUM = 1 } spf_duplicates;

/* Build from CSR arrays (host, caller-owned, copied). values may be NULL for
 * a pattern (values are then drawn uniform in [-1, 1] from seed). The arrays
 * must satisfy the CSR invariants above and every value must be finite;
 * otherwise SPF_ERR_INVALID_MATRIX with the first offending row named (and
 * the column, for a NaN or infinite value). */
SPF_API spf_status spf_matrix_create_csr(int64_t rows, int64_t cols, int64_t nnz,
                                         const int64_t *row_ptr,  /* rows + 1 */
                                         const int32_t *col_idx,  /* nnz      */
                                         const float *values,     /* nnz or NULL */
                                         uint64_t seed, spf_matrix **out);

/* Build from COO triplets (host, caller-owned, copied; any order). Indices
 * are 0-based. Duplicates are summed or rejected as asked. A NaN or
 * infinite value, or duplicates that sum to one, is SPF_ERR_INVALID_MATRIX
 * naming the (row, column). */
SPF_API spf_status spf_matrix_create_coo(int64_t rows, int64_t cols, int64_t nnz,
                                         const int32_t *row_idx, /* nnz */
                                         const int32_t *col_idx, /* nnz */
                                         const float *values,    /* nnz or NULL (seeded random) */
                                         spf_duplicates duplicates, uint64_t seed,
                                         spf_matrix **out);

/* A deep copy. */
SPF_API spf_status spf_matrix_clone(const spf_matrix *a, spf_matrix **out);

SPF_API void spf_matrix_free(spf_matrix *a);

SPF_API int64_t spf_matrix_rows(const spf_matrix *a);
SPF_API int64_t spf_matrix_cols(const spf_matrix *a);
SPF_API int64_t spf_matrix_nnz(const spf_matrix *a);
/* Borrowed views into the matrix (valid until spf_matrix_free). */
SPF_API const int64_t *spf_matrix_row_ptr(const spf_matrix *a);
SPF_API const int32_t *spf_matrix_col_idx(const spf_matrix *a);
SPF_API const float *spf_matrix_values(const spf_matrix *a);

/* Write the COO triplets (row-major order) into caller-owned host arrays of
 * nnz entries each; any of the three may be NULL to skip it. */
SPF_API spf_status spf_matrix_to_coo(const spf_matrix *a, int32_t *row_idx, int32_t *col_idx,
                                     float *values);

/* Re-check every CSR invariant, and that every value is finite (useful
 * after editing values in place); SPF_ERR_INVALID_MATRIX naming the first
 * offending row (and column, for a value). */
SPF_API spf_status spf_matrix_validate(const spf_matrix *a);

/* Pattern statistics. nnz per row: min / mean / max / coefficient of
 * variation (stddev / mean); bandwidth = max |row - col| over nonzeros. */
typedef struct spf_matrix_stats {
    int64_t rows, cols, nnz;
    double density;           /* nnz / (rows * cols), 0 for an empty shape */
    int64_t row_nnz_min, row_nnz_max;
    double row_nnz_mean, row_nnz_cv;
    int64_t empty_rows, empty_cols;
    int64_t bandwidth;
    uint64_t pattern_hash;    /* 64-bit hash of (rows, cols, row_ptr, col_idx) */
    uint64_t values_hash;     /* 64-bit hash of the value bits                */
} spf_matrix_stats;
SPF_API spf_status spf_matrix_stats_compute(const spf_matrix *a, spf_matrix_stats *out);

/* ------------------------------------------------------------ file I/O */

typedef enum spf_format {
    SPF_FORMAT_AUTO = 0, /* from the file name: .mtx, .smtx, .npy */
    SPF_FORMAT_MTX = 1,  /* Matrix Market coordinate, 1-based      */
    SPF_FORMAT_SMTX = 2, /* DLMC pattern format                    */
    SPF_FORMAT_NPY = 3   /* NumPy 2-D dense array, C order          */
} spf_format;

typedef struct spf_read_options {
    spf_format format;         /* default AUTO                                      */
    spf_duplicates duplicates; /* default REJECT                                    */
    uint64_t seed;             /* values of pattern-only files (.smtx, pattern .mtx) */
    const char *values_path;   /* .smtx only: a .npy of nnz float32 values in file
                                  order, used instead of random values; or NULL
                                  (given for another format: SPF_ERR_INVALID_ARGUMENT) */
    double npy_sparsity;       /* .npy only: < 0 keeps every nonzero (default -1);
                                  in [0, 1) prunes by magnitude to that sparsity
                                  (>= 0 for another format: SPF_ERR_INVALID_ARGUMENT) */
    int64_t max_bytes;         /* the most host memory one read may allocate (bytes):
                                  0 (default) = $SPFORGE_READ_MAX_BYTES if set, else
                                  the work budget (spf_set_max_bytes); < 0 = no limit */
} spf_read_options;

/* The read limit when neither max_bytes, $SPFORGE_READ_MAX_BYTES nor the
 * work budget sets one (the budget's default), so a file of a few bytes
 * cannot declare a shape that makes a read allocate more than that. */
#define SPF_READ_MAX_BYTES_DEFAULT SPF_MAX_BYTES_DEFAULT

/* Fill with the defaults named above (seed 1, max_bytes 0). */
SPF_API void spf_read_options_init(spf_read_options *options);

/* Read a matrix; options may be NULL for the defaults.
 *
 * Memory: a read allocates the matrix, 8·(rows + 1) + 8·nnz bytes, and while
 * it reads, .mtx: 24 bytes per entry (a symmetric file's stored entries
 * count twice) and 4 per stored entry of a pattern file; .npy: the dense
 * array as float32, 4·rows·cols; .smtx: nothing more. Each reader computes this from the
 * header (for .npy, the CSR part again once nnz is known) and checks it
 * against the read limit (max_bytes) before allocating: beyond it the read
 * fails with SPF_ERR_OUT_OF_MEMORY, "... would exceed the read limit of N
 * bytes", naming the file, the bytes needed and the limit. A malformed
 * $SPFORGE_READ_MAX_BYTES (not an integer) is SPF_ERR_INVALID_ARGUMENT. */
SPF_API spf_status spf_matrix_read(const char *path, const spf_read_options *options,
                                   spf_matrix **out);

/* Write a matrix: .mtx (real general, 1-based, values to 9 significant
 * digits, so float32 survives the round trip), .smtx (pattern only) or .npy
 * (dense float32). The file is written to a temporary file created
 * exclusively in the target's folder (never through a symbolic link, a name
 * unique to the call, so threads and processes writing one path do not mix
 * their bytes), synced and renamed over the target: a failed write leaves
 * the target as it was and no temporary file behind. */
SPF_API spf_status spf_matrix_write(const spf_matrix *a, const char *path, spf_format format);

/* ----------------------------------------------------------- generators */

typedef enum spf_generator {
    SPF_GEN_UNIFORM = 0,       /* each row keeps round((1-s)·K) random columns                 */
    SPF_GEN_MAGNITUDE = 1,     /* Gaussian matrix, smallest |w| pruned to sparsity s           */
    SPF_GEN_COLUMN_VECTOR = 2, /* vectors of vector_length rows in one column kept or pruned  */
    SPF_GEN_VNM = 3,           /* V:N:M: per V×M block, N of M columns kept (vector_length=V) */
    SPF_GEN_RMAT = 4           /* R-MAT power-law graph, rows = cols = 2^k rounded by shape    */
} spf_generator;

typedef struct spf_gen_options {
    spf_generator kind;
    int64_t rows, cols;
    double sparsity;       /* fraction of zeros in [0, 1); UNIFORM, MAGNITUDE, COLUMN_VECTOR, RMAT */
    uint64_t seed;
    int32_t vector_length; /* COLUMN_VECTOR: l; VNM: V (1 gives plain N:M, e.g. 2:4)            */
    int32_t n, m;          /* VNM: keep n of every m columns (2:4 is n = 2, m = 4); m must
                              divide cols and n ≤ min(4, m) (STuning-DL: each V×M block keeps 4
                              columns, each row n of those); the last block of rows may be short */
    double rmat_a, rmat_b, rmat_c; /* RMAT quadrant probabilities (d = 1 - a - b - c)           */
} spf_gen_options;

/* Defaults: UNIFORM, 768×768, sparsity 0.9, seed 1, vector_length 4, 2:4,
 * R-MAT (0.57, 0.19, 0.19). */
SPF_API void spf_gen_options_init(spf_gen_options *options);

/* Generate a matrix; values uniform in [-1, 1] (MAGNITUDE keeps the
 * surviving Gaussian weights). Same options and seed, same matrix. */
SPF_API spf_status spf_matrix_generate(const spf_gen_options *options, spf_matrix **out);

/* Fill count floats uniform in [-1, 1] from seed (dense operands for tests,
 * the CLI and benchmarks). */
SPF_API void spf_fill_uniform(float *data, int64_t count, uint64_t seed);

/* ------------------------------------------------- CPU reference SpMM */

typedef enum spf_accumulate { SPF_ACCUMULATE_F32 = 0, SPF_ACCUMULATE_F64 = 1 } spf_accumulate;

/* C = A·B (+ bias[row]) (then max(·, 0) if relu), on the host.
 *   b:    K×N row-major float32, caller-owned host buffer
 *   c:    M×N row-major float32, caller-owned host buffer, overwritten
 *   bias: M floats or NULL
 *   threads: worker threads, 0 = all online cores
 * Accumulation is in float or double as asked; the sum runs over a row's
 * nonzeros in column order. c must not overlap b or bias:
 * SPF_ERR_INVALID_ARGUMENT, nothing written. */
SPF_API spf_status spf_reference_spmm(const spf_matrix *a, int64_t n, const float *b, float *c,
                                      const float *bias, int relu, spf_accumulate accumulate,
                                      int threads);

/* The oracle: the same product accumulated and returned in double. */
SPF_API spf_status spf_reference_spmm_f64(const spf_matrix *a, int64_t n, const float *b,
                                          double *c, const float *bias, int relu, int threads);

/* ‖c − ref‖_F / ‖ref‖_F over count entries (‖c − ref‖_F if ref is all
 * zeros; +inf if any entry of c is NaN or infinite). */
SPF_API double spf_relative_error(const float *c, const double *ref, int64_t count);

/* -------------------------------------------------------------- devices */

typedef struct spf_device_info {
    int available;            /* 0 when there is no usable CUDA device; then reason says why */
    int device;               /* ordinal queried                                            */
    char name[256];
    int cc_major, cc_minor;   /* compute capability                                         */
    int sm_count;
    int max_threads_per_sm;
    int max_shared_per_block_optin; /* bytes                                                */
    int l2_bytes;
    int64_t total_memory;     /* bytes                                                      */
    int driver_version;       /* e.g. 13000 for 13.0; 0 if no driver                        */
    int runtime_version;      /* the CUDA runtime linked into spforge                       */
    char reason[256];         /* why not available ("no CUDA device", "no driver", ...)     */
} spf_device_info;

/* Query device `device` (0 for the first). Returns SPF_OK and available = 0
 * on a machine without a GPU or driver: the absence of a GPU is not an
 * error. Errors are for bad arguments only. */
SPF_API spf_status spf_device_query(int device, spf_device_info *out);


/* ---------------------------------------------------------------- plans */

/* Storage type of B and C; A is held in the plan as its strategy needs
 * (fp32 values, immediates, or dense in the storage type). */
typedef enum spf_dtype { SPF_DTYPE_F32 = 0, SPF_DTYPE_F16 = 1, SPF_DTYPE_BF16 = 2 } spf_dtype;

/* "f32", "f16", "bf16" ("?" for an unknown value); from_name also takes
 * numpy's and torch's "float32", "float16", "bfloat16". */
SPF_API const char *spf_dtype_name(spf_dtype dtype);
SPF_API spf_status spf_dtype_from_name(const char *name, spf_dtype *out);

/* How the arithmetic may run, as torch users know it. The self-check's
 * tolerance follows the dtype and the math mode (BENCHMARKS.md). */
typedef enum spf_math {
    SPF_MATH_DEFAULT = 0, /* exact fp32 arithmetic for F32; fp32 accumulation for F16 / BF16   */
    SPF_MATH_TF32 = 1,    /* F32 only: TF32 tensor cores allowed where a strategy has them
                             (torch.backends.cuda.matmul.allow_tf32 = True)                   */
    SPF_MATH_F16X2 = 2    /* F16 only: accumulate in fp16 (faster, less accurate)              */
} spf_math;

/* How a plan times the candidates it chooses among (BENCHMARKS.md). COLD:
 * every launch follows a read that evicts the L2, its time subtracted, so
 * a kernel is chosen for the time it takes where users run it, in a model
 * whose layers stream their weights from HBM in turn; a kernel that wins
 * only with its weights resident in the 60 MB L2 is not chosen. HOT: the
 * same buffers launched back to back, for launch-bound studies of a
 * matrix called alone. */
typedef enum spf_timing {
    SPF_TIMING_COLD = 0,
    SPF_TIMING_HOT = 1
} spf_timing;

/* "default", "tf32", "f16x2". */
SPF_API const char *spf_math_name(spf_math math);
SPF_API spf_status spf_math_from_name(const char *name, spf_math *out);

/* Where N is in B and C (row-major both ways). N_LAST: B is K×N and C is
 * M×N. N_FIRST: B is N×K and C is N×M — X and Y of Y = X·Wᵀ (W = A), the
 * way a Linear layer is called, so no transpose is needed around a call. */
typedef enum spf_layout { SPF_LAYOUT_N_LAST = 0, SPF_LAYOUT_N_FIRST = 1 } spf_layout;

/* "n_last", "n_first" (from_name also takes "kn" / "mn" and "nk" / "nm"). */
SPF_API const char *spf_layout_name(spf_layout layout);
SPF_API spf_status spf_layout_from_name(const char *name, spf_layout *out);

/* The execution strategies (src/strategy/<name>/). Values are stable. */
typedef enum spf_strategy {
    SPF_STRATEGY_AUTO = 0,     /* the planner decides: never slower than DENSE when allowed    */
    SPF_STRATEGY_UNROLLED = 1, /* generated code, A values as immediates (LO-SpMM / SparseRT)  */
    SPF_STRATEGY_GENERIC = 2,  /* precompiled CSR kernel on CUDA cores, any matrix             */
    SPF_STRATEGY_CPU = 3,      /* the CPU reference on host buffers (no GPU)                   */
    SPF_STRATEGY_DENSE = 4,    /* A expanded to dense, cuBLASLt (loaded at run time)           */
    SPF_STRATEGY_TC = 5,       /* tensor cores: A as 16×16 bitmap tiles, mma (f16, bf16, TF32)  */
    SPF_STRATEGY_TCFRAG = 6,   /* tensor cores at small N: A as a fragment-ordered stream (f16, bf16) */
    SPF_STRATEGY_PANEL = 7,    /* CUDA cores at small N, high sparsity: 16-bit entries by K panels */
    SPF_STRATEGY_STRUCTURED = 8, /* tensor cores: 2:4, V:2:M (mma.sp), column vectors (f16, bf16) */
    SPF_STRATEGY_CUSPARSELT = 9  /* 2:4 by cuSPARSELt (loaded at run time; f16, bf16)      */
} spf_strategy;

/* "auto", "unrolled", "generic", "cpu", "dense" ("?" for an unknown
 * value): the one list the CLI, the binding, the bench and the tests use. */
SPF_API const char *spf_strategy_name(spf_strategy strategy);
SPF_API spf_status spf_strategy_from_name(const char *name, spf_strategy *out);

/* One configuration of the generated kernel (LO-SpMM §3.1 hierarchical 2-D
 * tiling; SparseRT §3.4 K split). Its name encodes it, e.g.
 * spf_unrolled_f32_m8_n128_v4_p2_k1. */
typedef struct spf_kernel_config {
    int32_t m1;       /* rows of A per thread block (A_tile height)            */
    int32_t n1;       /* columns of C per thread block                         */
    int32_t v;        /* columns per thread: 1, 2 or 4 (vector loads of B)     */
    int32_t prefetch; /* B rows loaded ahead into registers (Algorithm 2's d)  */
    int32_t ksplit;   /* thread groups sharing a tile's K range (1 = no split) */
} spf_kernel_config;

/* The configuration space the exhaustive tuner walks (issue 3's bounded
 * space). COMPACT: m1 ∈ {2, 4, 8, 16, 32}, (v, n1) ∈ {(1, 32), (1, 64),
 * (2, 64), (4, 128), (4, 256)}, prefetch 2, ksplit ∈ {1, 2, 4} — at most 75
 * configurations, minutes of ptxas fewer than FULL on a real layer. FULL:
 * m1 ∈ {1, 2, 4, 8, 16, 32} × n1 ∈ {32, 64, 128, 256} × v ∈ {1, 2, 4} ×
 * prefetch ∈ {0, 1, 2, 4} × ksplit ∈ {1, 2, 4}, at most 864. Both less the
 * combinations that are invalid for N. */
typedef enum spf_tune_space { SPF_TUNE_SPACE_COMPACT = 0, SPF_TUNE_SPACE_FULL = 1 } spf_tune_space;

/* Progress of spf_plan_create (spf_plan_options.progress): planning,
 * search and tuning can take seconds to minutes. The work is a tree of
 * stages; each stage sends a BEGIN event, STEP events as its count moves
 * on and an END event. Stages nest (depth): PLAN holds everything, the
 * planner's CANDIDATES hold one BUILD per strategy built (and a TIME where
 * AUTO times it), a BUILD holds its strategy's stages (the unrolled
 * strategy's REORDER, CONSTRAINTS and RANK, for the rank model's choice or
 * the search; the search's PROXIES and FINAL; exhaustive TUNE), and those
 * hold the COMPILE of their PTX. Stages a plan does not need do
 * not appear: a CPU plan sends PLAN, CANDIDATES and one BUILD; a plan
 * loaded from the plan cache PLAN alone. Events start once the arguments
 * are checked (a refused argument sends none). Values are stable; later
 * versions may add stages (spf_stage_name says "?" for one it does not
 * know). */
typedef enum spf_stage {
    SPF_STAGE_PLAN = 0,        /* the whole call: its BEGIN is the first event, its END
                                  the last (status: what spf_plan_create returns)        */
    SPF_STAGE_CANDIDATES = 1,  /* the planner: done of total strategies built            */
    SPF_STAGE_BUILD = 2,       /* one strategy's build; text: its name ("unrolled")      */
    SPF_STAGE_TIME = 3,        /* AUTO times a built strategy; text: its name            */
    SPF_STAGE_REFERENCE = 4,   /* the self-check's inputs and CPU reference (device plans) */
    SPF_STAGE_REORDER = 5,     /* LO-SpMM Algorithm 1: done of total row orders (per m1) */
    SPF_STAGE_CONSTRAINTS = 6, /* the search's constraints and features over the tile
                                  space: total = its configurations                      */
    SPF_STAGE_RANK = 7,        /* the rank model over the survivors                      */
    SPF_STAGE_PROXIES = 8,     /* done of total candidates timed through proxies         */
    SPF_STAGE_FINAL = 9,       /* the search's real kernels: done of total compiled,
                                  checked and timed                                      */
    SPF_STAGE_TUNE = 10,       /* exhaustive tuning: done of total configurations        */
    SPF_STAGE_COMPILE = 11,    /* PTX assembled: done of total units (chunk functions)   */
    SPF_STAGE_VERIFY = 12      /* the kept kernel checked against the CPU reference      */
} spf_stage;

/* "plan", "candidates", "build", "time", "reference", "reorder",
 * "constraints", "rank", "proxies", "final", "tune", "compile", "verify"
 * ("?" for an unknown value). */
SPF_API const char *spf_stage_name(spf_stage stage);

typedef enum spf_progress_phase {
    SPF_PROGRESS_BEGIN = 0, /* the stage starts: done = 0                               */
    SPF_PROGRESS_STEP = 1,  /* done moved on                                            */
    SPF_PROGRESS_END = 2    /* the stage ended: done = total when status is SPF_OK      */
} spf_progress_phase;

/* One event. The library fills it; size is the library's sizeof, and
 * fields are only ever added at the end: a caller built against a later
 * header reads a field only when it ends within size. */
typedef struct spf_progress {
    uint32_t size;            /* sizeof(spf_progress) of the library that sent it     */
    spf_stage stage;
    spf_progress_phase phase;
    int depth;                /* PLAN 0, a stage inside it 1, inside that 2, ...      */
    int64_t done, total;      /* 0 ≤ done ≤ total, total ≥ 1; done never goes down
                                 within a stage                                       */
    double elapsed_s;         /* wall seconds since spf_plan_create began             */
    double stage_s;           /* wall seconds since this stage began                  */
    spf_status status;        /* SPF_OK, except in END events: how the stage ended
                                 (under AUTO a failed BUILD is one candidate out, not
                                 the call)                                            */
    const char *text;         /* a short description, never NULL, e.g. "unrolled",
                                 "spf_unrolled_f32_m32_n64_v1_p2_k4"; valid during the
                                 call only                                            */
} spf_progress;

/* The progress callback: return 0 to go on, nonzero to cancel. It is
 * called from the thread that called spf_plan_create, inside that call,
 * never from the library's worker threads and never twice at once (work
 * done by workers, such as PTX units assembled in parallel, is counted
 * and reported from the calling thread). BEGIN and END events always
 * come; a STEP event only 100 ms or more after the event before it (the
 * count it carries includes the steps not sent). After a nonzero return the
 * library stops at its next check (a PTX unit in flight finishes first),
 * frees everything it built and returns SPF_ERR_CANCELLED; the only event
 * still sent is PLAN's END, whose return value is ignored. The callback
 * may call the library (spf_last_error stays that of the plan). */
typedef int (*spf_progress_fn)(const spf_progress *event, void *user);

/* A growable struct: spf_plan_options_init sets size to the size this
 * header declares, and the library reads only the fields that size covers
 * (fields added later keep their defaults for a caller built earlier). */
typedef struct spf_plan_options {
    uint32_t size;             /* sizeof(spf_plan_options), set by spf_plan_options_init */
    spf_strategy strategy;     /* default AUTO                                           */
    spf_dtype dtype;           /* default F32                                            */
    spf_math math;             /* default DEFAULT (exact)                                */
    spf_layout b_layout;       /* default N_LAST: B is K×N                               */
    spf_layout c_layout;       /* default N_LAST: C is M×N                               */
    int dense;                 /* 1 (default): AUTO may choose the DENSE strategy, and
                                  times it as the floor; 0 forbids it (for a user whose
                                  reason to prune is memory: DENSE holds M×K values)     */
    int bias;                  /* the kernel adds bias[row]                              */
    int relu;                  /* the kernel applies max(., 0) last                      */
    int device;                /* CUDA device ordinal, default 0                         */
    int verify;                /* check the compiled kernel once against the CPU
                                  reference before returning (default 1; DESIGN.md 6)    */
    int exhaustive;            /* tune over every configuration of a space (default 0)   */
    spf_tune_space tune_space; /* with exhaustive or search: which space (default
                                  COMPACT; the search is meant for FULL, spforge tune's
                                  default)                                               */
    const spf_kernel_config *config; /* force one configuration (UNROLLED), or NULL: then,
                                  without search or exhaustive, the rank model's first
                                  choice (float32), else a fixed default                 */
    int host_threads;          /* compile / reference threads, 0: $SPFORGE_THREADS, else
                                  $OMP_NUM_THREADS, else the CPUs the process may use     */
    int reorder;               /* LO-SpMM Algorithm 1 row order for the unrolled kernel,
                                  kept only where it does not raise the non-empty columns
                                  per tile (default 0); with exhaustive or search, one
                                  order per m1 of the space. For the tc strategy's
                                  CONDENSED format (graphs): Acc-SpMM's data-affinity
                                  row order (paper 002 §3.2), kept where it condenses
                                  into fewer tiles                                       */
    int search;                /* low-cost search (LO-SpMM §3–5): the tune_space pruned by
                                  the constraints, ranked by the rank model, the top
                                  search_top_k evaluated (through proxies when
                                  search_proxies), the best compiled (default 0; excludes
                                  exhaustive and config)                                 */
    int search_top_k;          /* candidates the rank model passes on (0: the default,
                                  10 or 5 % of the constraints' survivors, whichever
                                  is more)                                               */
    int search_proxies;        /* time proxies of the top-K and compile, check and time
                                  the fastest 5 (default 1); 0 compiles and times each
                                  of the top-K real kernels instead                      */
    int cache;                 /* look the plan up in, and store it to, the on-disk plan
                                  cache ($SPFORGE_CACHE_DIR, else ~/.cache/spforge;
                                  SPFORGE_CACHE_DIR=off turns it off for the process;
                                  DESIGN.md decision 5) (default 1). The folder holds
                                  GPU code this process runs: it is used only if owned
                                  by this user, writable by no one else and not a
                                  symbolic link (otherwise a warning, and the plan is
                                  built, not stored). Entries over 256 MiB are refused;
                                  all together are kept under $SPFORGE_CACHE_MAX_BYTES
                                  (bytes, default 2 GiB) by removing the least
                                  recently used                                          */
    /* Added after the first layout (options.size tells which a caller has). */
    spf_progress_fn progress;  /* called with the progress of spf_plan_create, or NULL
                                  (default: nothing is reported, nothing changes)        */
    void *progress_user;       /* passed to progress as is                               */
    spf_timing timing;         /* how candidates are timed (default SPF_TIMING_COLD)     */
} spf_plan_options;

SPF_API void spf_plan_options_init(spf_plan_options *options);

/* The unrolled strategy's configuration by name, e.g. "m32_n64_v1_p2_k4"
 * (the form of spf_plan_info.config); name_size ≥ 48 always suffices. */
SPF_API spf_status spf_kernel_config_name(const spf_kernel_config *config, char *name,
                                          size_t name_size);
SPF_API spf_status spf_kernel_config_from_name(const char *name, spf_kernel_config *out);

/* A compiled, ready-to-run SpMM for one matrix, one N and one dtype. */
typedef struct spf_plan spf_plan;

/* Build a plan for C = A·B with B of n columns. a is read during the call
 * only. Returns SPF_ERR_NO_DEVICE for GPU strategies without a device. */
SPF_API spf_status spf_plan_create(const spf_matrix *a, int64_t n, const spf_plan_options *options,
                                   spf_plan **out);

/* Run the plan on `stream` (a cudaStream_t, NULL for the default stream).
 *   b:    device buffer, K×n (N_FIRST: n×K) row-major of the plan's dtype, caller-owned
 *   c:    device buffer, M×n (N_FIRST: n×M) row-major of the plan's dtype, caller-owned,
 *         overwritten
 *   bias: device buffer of M float32 (plans made with bias), else NULL
 * c must not overlap b or bias (by their byte ranges above; the same
 * buffer included): SPF_ERR_INVALID_ARGUMENT, since the product would read
 * what it has already overwritten. b and bias may overlap each other.
 * DENSE plans need b, c and bias aligned to 16 bytes (cudaMalloc and torch
 * give 256): SPF_ERR_UNSUPPORTED otherwise.
 * Neither allocates nor synchronizes: the call can be captured in a CUDA
 * graph. For a CPU plan the three buffers are host buffers. */
SPF_API spf_status spf_plan_execute(const spf_plan *plan, const void *b, void *c, const float *bias,
                                    void *stream);

/* What the low-cost search did (spf_plan_options.search): the candidates
 * left after each stage, in the order they run (LO-SpMM §3–5), and the
 * wall time of each step. A stage that did not run keeps the count of the
 * one before it and 0 seconds. */
typedef struct spf_search_info {
    int space;                /* configurations of the tune space valid for N     */
    int after_register;       /* §3.2 register forecast within the cap            */
    int after_utilization;    /* §3.3 warps and blocks                            */
    int after_balance;        /* §3.4 COV_row and WASTE_col                       */
    int after_rank;           /* §3.5 top-K of the rank model                     */
    int evaluated;            /* candidates run (proxies or real kernels)         */
    double analysis_s;        /* tile statistics and features                     */
    double reorder_s;         /* Algorithm 1, once per m1                         */
    double rank_s;            /* rank model inference                             */
    double proxy_build_s, proxy_compile_s, proxy_run_s; /* §5                      */
    double final_compile_s;   /* the chosen kernel: generate, compile, link, load */
    double selfcheck_s;       /* its check against the CPU reference              */
    double total_s;           /* the whole search                                 */
} spf_search_info;

/* What became of one strategy in the planner (spf_plan_info.candidates). */
typedef enum spf_candidate_outcome {
    SPF_CANDIDATE_CHOSEN = 0,   /* built, timed (under AUTO) and kept                 */
    SPF_CANDIDATE_SLOWER = 1,   /* built and timed, slower than the chosen one        */
    SPF_CANDIDATE_REFUSED = 2,  /* the strategy does not support the problem: detail
                                   says why                                           */
    SPF_CANDIDATE_SKIPPED = 3,  /* supported, not built: its estimate was far behind  */
    SPF_CANDIDATE_FAILED = 4    /* its build failed (over the code budget, a compile
                                   error): detail says why                            */
} spf_candidate_outcome;

typedef struct spf_candidate {
    spf_strategy strategy;
    spf_candidate_outcome outcome;
    double estimate_us;       /* the planner's calibrated estimate (0 if none)    */
    double kernel_us;         /* measured median of the GPU's time, replayed in a
                                 CUDA graph (0 if not timed)                      */
    char detail[160];         /* the kernel's name when built, else the reason    */
} spf_candidate;

#define SPF_MAX_CANDIDATES 8

/* "chosen", "slower", "refused", "skipped", "failed" ("?" for an unknown
 * value): the names the CLI, the bench and the binding print. */
SPF_API const char *spf_candidate_outcome_name(spf_candidate_outcome outcome);

/* A growable struct: set size = sizeof(spf_plan_info) before
 * spf_plan_get_info, which fills only the fields that size covers. */
typedef struct spf_plan_info {
    uint32_t size;            /* set by the caller: sizeof(spf_plan_info)         */
    spf_strategy strategy;    /* the strategy that runs (never AUTO)              */
    spf_dtype dtype;
    spf_math math;
    spf_layout b_layout, c_layout;
    char config[64];          /* the strategy's configuration by name (UNROLLED:
                                 spf_kernel_config_from_name reads it back)       */
    char kernel_name[128];
    int registers;            /* per thread, from the compiler (0 if unknown)     */
    int64_t code_bytes;       /* size of the generated PTX                        */
    int configs_tried;        /* configurations compiled and timed by the tuner   */
    double generate_s, compile_s, link_s, load_s, tune_s, verify_s;
    double kernel_us;         /* best measured kernel time (0 if not measured)    */
    double verify_error;      /* relative error of the self-check (-1 if skipped) */
    spf_search_info search;   /* the low-cost search, when one ran                */
    int from_cache;           /* 1: loaded from the plan cache, nothing compiled  */
    int64_t device_bytes;     /* device memory the plan holds (DENSE: M×K values) */
    double plan_s;            /* wall time of spf_plan_create                     */
    int candidate_count;      /* the strategies the planner considered, in order  */
    spf_candidate candidates[SPF_MAX_CANDIDATES];
    /* Added after the first layout (info.size tells which a caller has). */
    char assembler[16];       /* what turned the generated PTX into SASS:
                                 "inprocess" (the PTX Compiler API linked into
                                 the library), "ptxas" (the program) or "driver"
                                 (the driver linker, from PTX); "" when nothing
                                 was assembled (from_cache, precompiled kernels).
                                 $SPFORGE_ASSEMBLER forces one (README)          */
} spf_plan_info;

SPF_API spf_status spf_plan_get_info(const spf_plan *plan, spf_plan_info *out);

/* Whether spf_plan_create(a, n, options) would load its plan from the plan
 * cache, without making it: *found = 1 and *out (size set as for
 * spf_plan_get_info) the info that plan would have (from_cache = 1; plan_s
 * and load_s the time of this lookup), else *found = 0 and *out as it was.
 * Nothing is uploaded, decoded or compiled: a caller that runs the chosen
 * strategy itself (a layer whose AUTO plan is DENSE running its framework's
 * dense GEMM) learns the choice in the time of a file read. An entry that
 * cannot be used is no hit. Host strategies are never cached (*found = 0);
 * SPF_ERR_NO_DEVICE for device strategies without a device, as
 * spf_plan_create. a is read during the call only. */
SPF_API spf_status spf_plan_cache_peek(const spf_matrix *a, int64_t n,
                                       const spf_plan_options *options, spf_plan_info *out,
                                       int *found);

/* A matrix named by a hash its owner made of it, where it lives: a layer's
 * weight on its GPU, whose CSR would otherwise cross to the host only to be
 * hashed for the plan cache's key. The plan cache records under such a
 * name what it holds for the matrix itself (spf_plan_cache_note) and says
 * it back from the name alone (spf_plan_cache_peek_named). Two matrices of
 * one name (a collision of the owner's hash) share that record, so it is
 * a decision, never a plan: a caller uses it to choose how to run (its own
 * dense GEMM on its own weight where the plan would be DENSE) and makes
 * any other plan from the matrix, under the matrix's own key. */
typedef struct spf_matrix_name {
    uint32_t size;        /* set by the caller: sizeof(spf_matrix_name)      */
    int64_t rows, cols;   /* the matrix's shape                              */
    int64_t nnz;          /* its stored entries                              */
    uint64_t hash[2];     /* 128 bits of the owner's hash of its entries     */
} spf_matrix_name;

/* Record under name what the plan cache holds for spf_plan_create(a, n,
 * options): *noted = 1 when it held that plan (then a peek of the name
 * finds its info), 0 when it did not (a miss, the cache off, a host
 * strategy), nothing recorded. name must have a's shape and nnz. */
SPF_API spf_status spf_plan_cache_note(const spf_matrix *a, const spf_matrix_name *name,
                                       int64_t n, const spf_plan_options *options, int *noted);

/* spf_plan_cache_peek by a name spf_plan_cache_note recorded: *found = 1
 * and *out the info of the plan noted (from_cache = 1), else *found = 0.
 * Nothing about the matrix is read but its name. */
SPF_API spf_status spf_plan_cache_peek_named(const spf_matrix_name *name, int64_t n,
                                             const spf_plan_options *options,
                                             spf_plan_info *out, int *found);

/* Per-configuration tuner results (exhaustive tuning, or the search's
 * evaluated candidates), for training the rank model: writes a CSV with one
 * row per configuration tried. */
SPF_API spf_status spf_plan_write_tuning_log(const spf_plan *plan, const char *path);

SPF_API void spf_plan_free(spf_plan *plan);

/* ---- Sparse 2-D convolution (issue 14): out = W ⊛ in (+ bias) (+ residual)
 * (ReLU), W a sparse K_out × (C·R·S) matrix whose columns are ordered
 * (c, r, s), c slowest: torch's conv.weight.reshape(K_out, -1) (DLMC's
 * ResNet-50 files store (r, s, c): python/spforge/resnet50.py permutes
 * them). Dilation 1, groups 1. The output has K_out channels, height P =
 * (H + 2·padding − R) / stride + 1 and width Q alike, in the input's
 * layout. */
typedef enum spf_conv_layout {
    SPF_CONV_NCHW = 0, /* N×C×H×W, torch's default                     */
    SPF_CONV_NHWC = 1  /* N×H×W×C, torch's channels_last                */
} spf_conv_layout;

typedef struct spf_conv_desc {
    uint32_t size;            /* sizeof(spf_conv_desc), set by spf_conv_desc_init */
    int64_t batch;            /* N (default 1)                                   */
    int64_t channels;         /* C, the weights' columns over R·S (required)    */
    int64_t height, width;    /* H, W of the input (required)                    */
    int64_t kernel_h, kernel_w; /* R, S (default 1)                              */
    int64_t stride;           /* along both axes (default 1)                     */
    int64_t padding;          /* zeros on every side (default 0)                 */
    spf_conv_layout layout;   /* of the input, the residual and the output (NCHW) */
    int residual;             /* execute adds a residual tensor of the output's
                                 shape before the ReLU (a bottleneck's skip)     */
} spf_conv_desc;

SPF_API void spf_conv_desc_init(spf_conv_desc *desc);

/* How a conv plan runs (spf_conv_info.path). */
typedef enum spf_conv_path {
    SPF_CONV_DIRECT = 0, /* 1×1, stride 1, padding 0: the input is B as it is */
    SPF_CONV_IM2COL = 1, /* explicit im2col into the plan's workspace, then the
                            SpMM plan on it (the fallback and the baseline)  */
    SPF_CONV_IMPLICIT = 2, /* a CUDA-core kernel reads the input itself (no
                            im2col in memory): NHWC's window kernel (1×1
                            included; it adds the residual too) or the
                            generic strategy's gather; AUTO times them
                            against DIRECT / IM2COL and keeps the fastest;
                            GENERIC takes them alone                        */
    SPF_CONV_DENSE = 3   /* cuDNN's convolution on the weights expanded dense
                            (loaded at run time: $SPF_CUDNN, libcudnn.so.9,
                            .so.8, .so), then bias, residual and ReLU in one
                            pass: the floor AUTO times beside the others
                            (options.dense 0 leaves it out), and what DENSE
                            takes where cuDNN loads (else cuBLASLt on the
                            explicit im2col)                                */
} spf_conv_path;

/* "direct", "im2col", "implicit", "dense" */
SPF_API const char *spf_conv_path_name(spf_conv_path path);

/* A compiled convolution for one weight matrix, one input shape and one
 * dtype: an SpMM plan (spf_plan_create, with options' strategy, dtype,
 * math, dense, bias, relu, device, verify, cache, search...) over the
 * columns of the im2col, B and C in the layouts the conv layout gives:
 * NHWC is one SpMM of N·P·Q columns with B and C n_first (C is the NHWC
 * output as it is); NCHW one SpMM of P·Q columns per image, B and C
 * n_last. options' b_layout and c_layout are ignored. In NCHW with a
 * batch, AUTO leaves the dense strategy out (and DENSE is refused) when an
 * image of the input (1×1 direct) or of the output is not a multiple of 16
 * bytes: cuBLASLt's algorithm needs B and C aligned so. */
typedef struct spf_conv_plan spf_conv_plan;

typedef struct spf_conv_info {
    uint32_t size;            /* set by the caller: sizeof(spf_conv_info)         */
    spf_conv_path path;
    int64_t out_h, out_w;     /* P, Q                                            */
    int64_t spmm_n;           /* columns of each SpMM launch                     */
    int launches;             /* SpMM launches an execute makes (NCHW: N)        */
    int64_t workspace_bytes;  /* the im2col buffer the plan holds (0: DIRECT)    */
    int host;                 /* 1: a CPU plan (host buffers), 0: device buffers */
    double im2col_us, implicit_us; /* AUTO's times of one execute by the explicit
                                 path (DIRECT or IM2COL) and by the fastest
                                 implicit kernel (µs of GPU time, replayed in
                                 a CUDA graph; the residual add included; 0:
                                 not timed)                                    */
    spf_plan_info spmm;       /* the SpMM plan's info (its size is set here); for
                                 IMPLICIT the kernel's name ("window_...",
                                 "convtc_...", "convwg_...") and shape; for
                                 DENSE "cudnn_<algorithm>_<dtype>", strategy
                                 DENSE. For both, candidates lists the
                                 fastest config of each implicit kernel kind
                                 timed (the warpgroup kernel's dense and
                                 sparse weights apart), CHOSEN the one kept */
    double dense_us;          /* AUTO's time of one execute by the dense path
                                 (as im2col_us; 0: not timed)                  */
} spf_conv_info;

/* Build a conv plan. weights is read during the call only, and must be
 * K_out × channels·kernel_h·kernel_w. SPF_ERR_INVALID_ARGUMENT names the
 * field of desc that is out of range. */
SPF_API spf_status spf_conv_plan_create(const spf_matrix *weights, const spf_conv_desc *desc,
                                        const spf_plan_options *options, spf_conv_plan **out);

/* Run it on `stream` (a cudaStream_t, NULL for the default stream).
 *   input:    the N×C×H×W (or N×H×W×C) tensor of the plan's dtype
 *   output:   N×K_out×P×Q (or N×P×Q×K_out) of the plan's dtype, overwritten
 *   bias:     K_out float32 (plans made with options.bias), else NULL
 *   residual: an output-shaped tensor of the plan's dtype (desc.residual),
 *             else NULL
 * Device buffers, or host buffers for a host plan (info.host). output must
 * not overlap input, bias or residual: SPF_ERR_INVALID_ARGUMENT. Plans on
 * the DENSE path take input and output 16-byte aligned, IMPLICIT plans on
 * the warpgroup kernel (info.spmm.kernel_name "convwg_...") input, output
 * and residual (cudaMalloc and torch give 256): SPF_ERR_UNSUPPORTED naming
 * the buffer otherwise, before any launch. Neither
 * allocates nor synchronizes; an IM2COL plan's workspace is its own, so
 * one plan runs one execute at a time (launch it on one stream, or make a
 * plan per stream). */
SPF_API spf_status spf_conv_plan_execute(const spf_conv_plan *plan, const void *input,
                                         void *output, const float *bias, const void *residual,
                                         void *stream);

SPF_API spf_status spf_conv_plan_get_info(const spf_conv_plan *plan, spf_conv_info *out);

SPF_API void spf_conv_plan_free(spf_conv_plan *plan);

/* The CPU reference of a conv (float32 host buffers, every output summed
 * in double over W's row): what spforge conv and the tests check against. */
SPF_API spf_status spf_reference_conv2d(const spf_matrix *weights, const spf_conv_desc *desc,
                                        const float *input, const float *bias,
                                        const float *residual, int relu, float *output);

/* ---- Distributed SpMM's layout (issue 15): A split by rows over P ranks
 * (P GPUs, a process each), rank r computing C's rows of part r; B held
 * whole by every rank, or split by rows (rank s holding rows b_start[s] ..
 * b_start[s+1] − 1), when rank r needs the rows of B its part's columns
 * name. Host functions: every rank holds the whole pattern of A and works
 * out every rank's part itself, so nothing but B's rows is exchanged. */

/* row_start (parts + 1 entries, caller-owned): part p is rows
 * row_start[p] .. row_start[p+1] − 1 of a, contiguous, balanced by work
 * (nonzeros + 4 per row: the split minimising the largest part's, exactly); no
 * part is empty when a has at least `parts` rows. parts: 1 to 65536. */
SPF_API spf_status spf_partition_rows(const spf_matrix *a, int parts, int64_t *row_start);

/* One rank's share when B is split by rows: A_own, its part's columns
 * that its own rows of B hold (numbered within them), and A_remote, the
 * others (numbered in the receive buffer: the rows received from rank 0,
 * then rank 1, ..., each sender's in increasing order), both ordinary
 * matrices for spf_plan_create: C's rows = A_own·B_mine + A_remote·recv. */
typedef struct spf_dist_layout spf_dist_layout;

typedef struct spf_dist_layout_info {
    uint32_t size;            /* set by the caller: sizeof(spf_dist_layout_info)  */
    int ranks, rank;
    int64_t row0, rows;       /* its rows of A and C                              */
    int64_t b_row0, b_rows;   /* its rows of B                                    */
    int64_t own_nnz, remote_nnz;
    int64_t recv_rows;        /* rows of B it receives, from every other rank     */
    int64_t send_rows;        /* rows of its B it sends, to every other rank      */
} spf_dist_layout_info;

/* Rank `rank`'s share of a (read during the call only) for the splits
 * row_start and b_start (ranks + 1 entries each, from 0 to a's rows and
 * columns, never down: SPF_ERR_INVALID_ARGUMENT otherwise). */
SPF_API spf_status spf_dist_layout_create(const spf_matrix *a, int ranks, int rank,
                                          const int64_t *row_start, const int64_t *b_start,
                                          spf_dist_layout **out);
SPF_API spf_status spf_dist_layout_get_info(const spf_dist_layout *layout,
                                            spf_dist_layout_info *out);
/* A_own (rows × b_rows) and A_remote (rows × recv_rows; NULL when it
 * receives nothing): borrowed, valid until spf_dist_layout_free. */
SPF_API const spf_matrix *spf_dist_layout_own(const spf_dist_layout *layout);
SPF_API const spf_matrix *spf_dist_layout_remote(const spf_dist_layout *layout);
/* The exchange, into caller arrays (any may be NULL): recv_count and
 * send_count (ranks entries: rows received from / sent to each rank),
 * send_index (send_rows entries: the rows of its B to send, numbered
 * within its rows, rank 0's first, each rank's in increasing order). */
SPF_API spf_status spf_dist_layout_lists(const spf_dist_layout *layout, int64_t *recv_count,
                                         int64_t *send_count, int32_t *send_index);
SPF_API void spf_dist_layout_free(spf_dist_layout *layout);

/* ---- Distributed SpMM through NCCL (issue 15; docs/distributed.md): one
 * process (or thread) a GPU, each with its rank of an NCCL communicator.
 * Rank r computes C's rows of its part with two ordinary plans: A_own on
 * its own rows of B, started at once, and A_remote on the rows of B it
 * receives, which arrive meanwhile (one NCCL group of sends and receives
 * on a stream of the plan's own); the second product is added in. B
 * replicated on every rank needs none of this: an ordinary plan of the
 * rank's rows (spf_partition_rows) is that.
 *
 * NCCL is loaded at run time: the file $SPF_NCCL names, else libnccl.so.2,
 * then libnccl.so; where none loads, SPF_ERR_UNSUPPORTED says what was
 * tried. */
typedef struct spf_dist_plan spf_dist_plan;

/* Rank r's plan, made on every rank with the same arguments but the
 * communicator. a: the whole A, read during the call only. nccl_comm: an
 * ncclComm_t, the caller's (kept, not freed): its size is the ranks, its
 * rank r, its device the plans'. row_start and b_start (ranks + 1 entries,
 * or NULL): the splits of A's rows (NULL: spf_partition_rows') and of B's
 * rows (NULL: as A's rows, which needs a square A). options: as for
 * spf_plan_create, for both plans (device: the communicator's; B and C
 * row-major only; bias and ReLU applied once, after the sum). */
SPF_API spf_status spf_dist_plan_create(const spf_matrix *a, int64_t n, void *nccl_comm,
                                        const int64_t *row_start, const int64_t *b_start,
                                        const spf_plan_options *options, spf_dist_plan **out);
/* Rank r's rows of C on stream (a cudaStream_t of the plan's device, which
 * must be current): b its rows of B (b_rows × n, info), c its rows of C
 * (rows × n, overwritten), bias its rows' (rows float32, plans made with
 * bias) or NULL; device buffers of the plan's dtype. Every rank must call
 * it, each plan's executes in the same order on every rank (NCCL's rule);
 * one plan's executes run one after another on the GPU (its buffers are
 * shared). Neither allocates nor synchronizes the host. */
SPF_API spf_status spf_dist_plan_execute(const spf_dist_plan *plan, const void *b, void *c,
                                         const float *bias, void *stream);
SPF_API spf_status spf_dist_plan_get_info(const spf_dist_plan *plan, spf_dist_layout_info *out);
SPF_API void spf_dist_plan_free(spf_dist_plan *plan);

#ifdef __cplusplus
}
#endif

#endif /* SPFORGE_H */
