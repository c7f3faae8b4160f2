/* Synthetic sparse matrices: the pruning patterns of DNN weights (uniform,
 * magnitude, column-vector, V:N:M) and, in gen_rmat.c, R-MAT graphs. Every
 * draw comes from one rng seeded with options->seed, so the same options
 * give the same matrix on every machine. */
#include "core/generate.h"

#include "core/alloc.h"
#include "core/budget.h"
#include "core/error.h"
#include "core/matrix.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* VENOM (STuning-DL §II, ref. [5]): a V×M block keeps 4 of its M columns,
 * the width of the 2:4 sparse tensor-core operand; each row then keeps N of
 * those 4. Narrower blocks (M < 4) keep all their columns. */
enum { VNM_KEPT_COLUMNS = 4 };

void spf_gen_options_init(spf_gen_options *options)
{
    if (!options)
        return;
    memset(options, 0, sizeof *options);
    options->kind = SPF_GEN_UNIFORM;
    options->rows = 768;
    options->cols = 768;
    options->sparsity = 0.9;
    options->seed = 1;
    options->vector_length = 4;
    options->n = 2;
    options->m = 4;
    options->rmat_a = 0.57;
    options->rmat_b = 0.19;
    options->rmat_c = 0.19;
}

static int uses_sparsity(spf_generator kind) { return kind != SPF_GEN_VNM; }

static spf_status validate(const spf_gen_options *o)
{
    if (o->kind < SPF_GEN_UNIFORM || o->kind > SPF_GEN_RMAT)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "unknown generator kind %d", (int)o->kind);
    if (o->rows < 0 || o->cols < 0)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "negative shape %lld x %lld", (long long)o->rows,
                    (long long)o->cols);
    if (o->rows > INT32_MAX || o->cols > INT32_MAX)
        return FAIL(SPF_ERR_OVERFLOW, "shape %lld x %lld exceeds int32 indices (max %d)",
                    (long long)o->rows, (long long)o->cols, INT32_MAX);
    if (uses_sparsity(o->kind) && !(o->sparsity >= 0.0 && o->sparsity < 1.0))
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "sparsity %g outside [0, 1)", o->sparsity);
    if ((o->kind == SPF_GEN_COLUMN_VECTOR || o->kind == SPF_GEN_VNM) && o->vector_length < 1)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "vector_length %d must be at least 1",
                    (int)o->vector_length);
    if (o->kind == SPF_GEN_VNM) {
        if (o->m < 1 || o->n < 1)
            return FAIL(SPF_ERR_INVALID_ARGUMENT, "V:N:M needs n >= 1 and m >= 1 (got %d:%d)",
                        (int)o->n, (int)o->m);
        int kept = o->m < VNM_KEPT_COLUMNS ? o->m : VNM_KEPT_COLUMNS;
        if (o->n > kept)
            return FAIL(SPF_ERR_INVALID_ARGUMENT, "V:N:M with n = %d, m = %d: a block keeps %d "
                        "columns, so n must be at most %d", (int)o->n, (int)o->m, kept, kept);
        /* Whole blocks only, as VENOM's storage format requires; a last
         * partial block of rows (rows % V != 0) is allowed. */
        if (o->cols % o->m != 0)
            return FAIL(SPF_ERR_INVALID_ARGUMENT, "V:N:M needs m = %d to divide cols = %lld",
                        (int)o->m, (long long)o->cols);
    }
    if (o->kind == SPF_GEN_RMAT) {
        double a = o->rmat_a, b = o->rmat_b, c = o->rmat_c;
        if (!(a >= 0.0 && b >= 0.0 && c >= 0.0 && a + b + c <= 1.0 + 1e-12))
            return FAIL(SPF_ERR_INVALID_ARGUMENT, "R-MAT probabilities a = %g, b = %g, c = %g must "
                        "be >= 0 with a + b + c <= 1", a, b, c);
    }
    return SPF_OK;
}

static int cmp_i32(const void *pa, const void *pb)
{
    int32_t a = *(const int32_t *)pa, b = *(const int32_t *)pb;
    return (a > b) - (a < b);
}

/* Move k distinct entries of perm[0 .. len) chosen uniformly to its front
 * (partial Fisher–Yates). Any starting order of perm gives a uniform subset,
 * so callers reuse one array across draws without resetting it. */
static void choose_front(rng *r, int32_t *perm, int64_t len, int64_t k)
{
    for (int64_t t = 0; t < k; t++) {
        int64_t j = t + (int64_t)rng_below(r, (uint64_t)(len - t));
        int32_t tmp = perm[t];
        perm[t] = perm[j];
        perm[j] = tmp;
    }
}

static int32_t *identity_perm(int64_t len)
{
    int32_t *p = mem_alloc_array((size_t)len, sizeof *p);
    if (p)
        for (int64_t i = 0; i < len; i++)
            p[i] = (int32_t)i;
    return p;
}

/* Rows that keep few of many columns draw them by Floyd's algorithm into a
 * hash set of about 2k slots instead of shuffling a permutation of all K
 * (which would take 4·K bytes for a handful of nonzeros: 8 GiB for a
 * 1 x 2^31 shape). Below these sizes the permutation is cheap, and it keeps
 * the matrices of earlier releases for the same seed. */
enum { PERM_MAX_COLS = 1 << 24, PERM_MIN_FRACTION = 64 };

static int use_floyd(int64_t cols, int64_t k)
{
    return cols > PERM_MAX_COLS && cols > PERM_MIN_FRACTION * k;
}

/* Insert v into the open-addressing set (cap slots, a power of two, -1
 * empty); 0 if it was there already. */
static int set_insert(int32_t *set, int64_t cap, int32_t v)
{
    uint64_t i = ((uint64_t)(uint32_t)v * 0x9e3779b97f4a7c15ULL) >> 32 & (uint64_t)(cap - 1);
    for (;; i = (i + 1) & (uint64_t)(cap - 1)) {
        if (set[i] == v)
            return 0;
        if (set[i] < 0) {
            set[i] = v;
            return 1;
        }
    }
}

/* k distinct values of [0, len) chosen uniformly (Floyd), into out. */
static void choose_floyd(rng *r, int64_t len, int64_t k, int32_t *out, int32_t *set, int64_t cap)
{
    memset(set, 0xff, (size_t)cap * sizeof *set);
    for (int64_t j = len - k, n = 0; j < len; j++, n++) {
        int32_t t = (int32_t)rng_below(r, (uint64_t)j + 1);
        out[n] = set_insert(set, cap, t) ? t : (set_insert(set, cap, (int32_t)j), (int32_t)j);
    }
}

/* The scratch of a row group's draw: the permutation of all K, or Floyd's
 * set; *cap gets the set's slots (0 for the permutation). */
static int32_t *draw_scratch(int64_t cols, int64_t k, int64_t *cap)
{
    *cap = 0;
    if (!use_floyd(cols, k))
        return identity_perm(cols);
    for (*cap = 2; *cap < 2 * k; *cap *= 2) {
    }
    return mem_alloc_array((size_t)*cap, sizeof(int32_t));
}

/* UNIFORM (group = 1) and COLUMN_VECTOR (group = l): each group of `group`
 * consecutive rows shares one set of round((1-s)·K) random columns, so a
 * kept column is a vector of `group` rows (the column-vector pruning of
 * STuning-DL / VectorSparse; the last group may be shorter). */
static spf_status gen_row_groups(const spf_gen_options *o, int64_t group, rng *r, spf_matrix **out)
{
    spf_status status = SPF_OK;
    spf_matrix *a = NULL;
    int32_t *scratch = NULL;
    int64_t k = llround((1.0 - o->sparsity) * (double)o->cols), cap = 0;
    char shape[64];
    snprintf(shape, sizeof shape, "%lld x %lld at sparsity %g", (long long)o->rows,
             (long long)o->cols, o->sparsity);
    int64_t scratch_bytes = bytes_mul(use_floyd(o->cols, k) ? 4 * k : o->cols, 4);
    TRY(budget_check(shape, bytes_add(csr_bytes(o->rows, bytes_mul(o->rows, k)), scratch_bytes),
                     "the generated matrix and the generator's scratch"));
    scratch = draw_scratch(o->cols, k, &cap);
    if (!scratch && o->cols)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "column draw scratch for %lld columns", (long long)o->cols);
    TRY(matrix_alloc(o->rows, o->cols, o->rows * k, &a));
    for (int64_t g = 0; g < o->rows; g += group) {
        int32_t *first = a->col_idx + g * k;
        if (cap) {
            choose_floyd(r, o->cols, k, first, scratch, cap);
        } else {
            choose_front(r, scratch, o->cols, k);
            memcpy(first, scratch, (size_t)k * sizeof *scratch);
        }
        qsort(first, (size_t)k, sizeof *first, cmp_i32);
        int64_t end = o->rows - g < group ? o->rows : g + group;
        for (int64_t i = g; i < end; i++) {
            if (i > g)
                memcpy(a->col_idx + i * k, first, (size_t)k * sizeof *first);
            a->row_ptr[i + 1] = (i + 1) * k;
        }
    }
    mem_free(scratch);
    *out = a;
    return SPF_OK;
fail:
    mem_free(scratch);
    spf_matrix_free(a);
    return status;
}

/* V:N:M (STuning-DL §II, VENOM): per V×M block keep 4 columns (all if
 * M < 4), then per row of the block keep N of those. V = 1 is plain N:M. */
static spf_status gen_vnm(const spf_gen_options *o, rng *r, spf_matrix **out)
{
    spf_status status = SPF_OK;
    spf_matrix *a = NULL;
    int64_t kept = o->m < VNM_KEPT_COLUMNS ? o->m : VNM_KEPT_COLUMNS;
    int64_t blocks = o->cols / o->m, per_row = blocks * o->n;
    int32_t *perm = identity_perm(o->m);
    int32_t *block_cols = mem_alloc_array((size_t)(blocks * kept), sizeof *block_cols);
    if (!perm || (!block_cols && blocks))
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "V:N:M scratch for %lld blocks", (long long)blocks);
    TRY(matrix_alloc(o->rows, o->cols, o->rows * per_row, &a));
    for (int64_t g = 0; g < o->rows; g += o->vector_length) {
        for (int64_t cb = 0; cb < blocks; cb++) {
            int32_t *bc = block_cols + cb * kept;
            choose_front(r, perm, o->m, kept);
            for (int64_t t = 0; t < kept; t++)
                bc[t] = (int32_t)(cb * o->m + perm[t]);
            qsort(bc, (size_t)kept, sizeof *bc, cmp_i32);
        }
        int64_t end = o->rows - g < o->vector_length ? o->rows : g + o->vector_length;
        for (int64_t i = g; i < end; i++) {
            int32_t *row = a->col_idx + i * per_row;
            for (int64_t cb = 0; cb < blocks; cb++) {
                /* Shuffling the block's own kept list is fine: it stays a set. */
                choose_front(r, block_cols + cb * kept, kept, o->n);
                memcpy(row + cb * o->n, block_cols + cb * kept, (size_t)o->n * sizeof *row);
                qsort(row + cb * o->n, (size_t)o->n, sizeof *row, cmp_i32);
            }
            a->row_ptr[i + 1] = (i + 1) * per_row;
        }
    }
    mem_free(perm);
    mem_free(block_cols);
    *out = a;
    return SPF_OK;
fail:
    mem_free(perm);
    mem_free(block_cols);
    spf_matrix_free(a);
    return status;
}

/* |w| as an order-preserving integer: a non-negative float's bit pattern
 * sorts like its value. */
static uint32_t magnitude_key(float w)
{
    uint32_t bits;
    memcpy(&bits, &w, sizeof bits);
    return bits & 0x7fffffffu;
}

enum { RADIX = 1 << 16 };

/* In a histogram of RADIX buckets, the bucket holding the `need`-th largest
 * entry (need >= 1), and through *above the number of entries in buckets
 * strictly higher. */
static uint32_t bucket_of_rank(const int64_t *hist, int64_t need, int64_t *above)
{
    int64_t cum = 0;
    uint32_t b = RADIX - 1;
    for (;; b--) {
        if (cum + hist[b] >= need || b == 0)
            break;
        cum += hist[b];
    }
    *above = cum;
    return b;
}

/* MAGNITUDE: an M×K matrix of N(0, 1) weights pruned globally to the
 * round((1-s)·M·K) largest |w|, as magnitude pruning of a dense layer does.
 * The threshold comes from a two-pass radix select on the 31-bit magnitude
 * keys (linear time); ties at the threshold go to the earliest entries in
 * row-major order, so the result is deterministic. */
static spf_status gen_magnitude(const spf_gen_options *o, rng *r, spf_matrix **out)
{
    spf_status status = SPF_OK;
    spf_matrix *a = NULL;
    int64_t total = o->rows * o->cols;
    int64_t keep = llround((1.0 - o->sparsity) * (double)total);
    char shape[64];
    snprintf(shape, sizeof shape, "%lld x %lld", (long long)o->rows, (long long)o->cols);
    float *w = NULL;
    int64_t *hist = NULL;
    TRY(budget_check(shape, bytes_add(bytes_mul(total, sizeof(float)), csr_bytes(o->rows, keep)),
                     "the dense Gaussian matrix and its pruned CSR form"));
    w = mem_alloc_array((size_t)total, sizeof *w);
    hist = mem_alloc_array(RADIX, sizeof *hist);
    if ((!w && total) || !hist)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "dense %lld x %lld Gaussian matrix", (long long)o->rows,
                  (long long)o->cols);
    for (int64_t i = 0; i < total; i++)
        w[i] = (float)rng_normal(r);

    uint32_t threshold = UINT32_MAX; /* above every key: nothing kept when keep = 0 */
    int64_t ties = 0;
    if (keep > 0) {
        memset(hist, 0, RADIX * sizeof *hist);
        for (int64_t i = 0; i < total; i++)
            hist[magnitude_key(w[i]) >> 16]++;
        int64_t above_hi, above_lo;
        uint32_t hi = bucket_of_rank(hist, keep, &above_hi);
        memset(hist, 0, RADIX * sizeof *hist);
        for (int64_t i = 0; i < total; i++) {
            uint32_t key = magnitude_key(w[i]);
            if (key >> 16 == hi)
                hist[key & 0xffffu]++;
        }
        uint32_t lo = bucket_of_rank(hist, keep - above_hi, &above_lo);
        threshold = hi << 16 | lo;
        ties = keep - above_hi - above_lo;
    }

    TRY(matrix_alloc(o->rows, o->cols, keep, &a));
    int64_t nz = 0;
    for (int64_t i = 0; i < o->rows; i++) {
        for (int64_t j = 0; j < o->cols; j++) {
            float v = w[i * o->cols + j];
            uint32_t key = magnitude_key(v);
            if (key > threshold || (key == threshold && ties > 0)) {
                ties -= key == threshold;
                a->col_idx[nz] = (int32_t)j;
                a->values[nz++] = v;
            }
        }
        a->row_ptr[i + 1] = nz;
    }
    if (nz != keep)
        FAIL_GOTO(SPF_ERR_INTERNAL, "magnitude selection kept %lld of %lld", (long long)nz,
                  (long long)keep);
    mem_free(w);
    mem_free(hist);
    *out = a;
    return SPF_OK;
fail:
    mem_free(w);
    mem_free(hist);
    spf_matrix_free(a);
    return status;
}

spf_status spf_matrix_generate(const spf_gen_options *options, spf_matrix **out)
{
    error_clear();
    CHECK_ARG(out);
    *out = NULL;
    CHECK_ARG(options);
    spf_status status = validate(options);
    if (status != SPF_OK)
        return status;
    rng r;
    rng_seed(&r, options->seed);
    spf_matrix *a = NULL;
    switch (options->kind) {
    case SPF_GEN_UNIFORM: status = gen_row_groups(options, 1, &r, &a); break;
    case SPF_GEN_COLUMN_VECTOR:
        status = gen_row_groups(options, options->vector_length, &r, &a);
        break;
    case SPF_GEN_MAGNITUDE: status = gen_magnitude(options, &r, &a); break;
    case SPF_GEN_VNM: status = gen_vnm(options, &r, &a); break;
    case SPF_GEN_RMAT: status = gen_rmat(options, &r, &a); break;
    }
    if (status != SPF_OK)
        return status;
    /* The pattern's draws come first; the values continue the same stream. */
    if (options->kind != SPF_GEN_MAGNITUDE)
        spf_fill_uniform(a->values, a->nnz, rng_next(&r));
    *out = a;
    return SPF_OK;
}
