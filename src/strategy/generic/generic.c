/* Host side of the generic CSR kernel (strategy S2): the device copy of A
 * with its row swizzle, the choice of launch shape, and the int32 bounds the
 * kernel relies on. The kernel is src/strategy/generic/kernels/csr_generic.cu. */
#include "strategy/generic/generic.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/matrix.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SPF_HAVE_CUDA
#include "gpu/cuda_check.h"

/* Sputnik's row swizzle (Gale et al., SC'20): rows in order of
 * decreasing length, ties in row order. A counting sort keyed by length,
 * O(rows + longest row). */
static spf_status row_order_build(const spf_matrix *a, int32_t *order)
{
    int64_t longest = 0;
    for (int64_t r = 0; r < a->rows; ++r) {
        int64_t len = a->row_ptr[r + 1] - a->row_ptr[r];
        if (len > longest)
            longest = len;
    }
    int64_t *start = mem_calloc((size_t)longest + 2, sizeof *start);
    if (!start)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "row swizzle: %lld counters", (long long)longest + 2);
    /* Bucket longest - len holds rows of length len, so bucket 0 comes first. */
    for (int64_t r = 0; r < a->rows; ++r)
        start[longest - (a->row_ptr[r + 1] - a->row_ptr[r]) + 1]++;
    for (int64_t i = 1; i <= longest + 1; ++i)
        start[i] += start[i - 1];
    for (int64_t r = 0; r < a->rows; ++r)
        order[start[longest - (a->row_ptr[r + 1] - a->row_ptr[r])]++] = (int32_t)r;
    mem_free(start);
    return SPF_OK;
}

static spf_status device_present(void)
{
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
        (void)cudaGetLastError();
        return FAIL(SPF_ERR_NO_DEVICE, "no CUDA device (%s)",
                    err != cudaSuccess ? cudaGetErrorString(err) : "none present");
    }
    return SPF_OK;
}

static spf_status upload(void **dst, const void *src, size_t count, size_t elem)
{
    /* One element at least, so an empty matrix still gets valid pointers. */
    size_t bytes = (count ? count : 1) * elem;
    spf_status st = CUDA_CHECK(cudaMalloc(dst, bytes));
    if (st == SPF_OK && count)
        st = CUDA_CHECK(cudaMemcpy(*dst, src, count * elem, cudaMemcpyHostToDevice));
    return st;
}

spf_status generic_csr_upload(const spf_matrix *a, generic_csr *out)
{
    CHECK_ARG(out != NULL);
    memset(out, 0, sizeof *out);
    CHECK_ARG(a != NULL);
    if (a->nnz > INT32_MAX)
        return FAIL(SPF_ERR_OVERFLOW, "nnz %lld exceeds the generic kernel's int32 offsets",
                    (long long)a->nnz);

    spf_status status = SPF_OK;
    int32_t *row_ptr = NULL, *order = NULL;
    TRY(device_present());
    row_ptr = mem_alloc_array((size_t)a->rows + 1, sizeof *row_ptr);
    order = mem_alloc_array(a->rows ? (size_t)a->rows : 1, sizeof *order);
    if (!row_ptr || !order)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "host staging for %lld rows", (long long)a->rows);
    for (int64_t r = 0; r <= a->rows; ++r)
        row_ptr[r] = (int32_t)a->row_ptr[r];
    TRY(row_order_build(a, order));

    out->rows = (int32_t)a->rows;
    out->ordered = (int32_t)a->rows;
    out->cols = (int32_t)a->cols;
    out->nnz = (int32_t)a->nnz;
    TRY(upload((void **)&out->row_ptr, row_ptr, (size_t)a->rows + 1, sizeof *row_ptr));
    TRY(upload((void **)&out->col_idx, a->col_idx, (size_t)a->nnz, sizeof *a->col_idx));
    TRY(upload((void **)&out->values, a->values, (size_t)a->nnz, sizeof *a->values));
    TRY(upload((void **)&out->row_order, order, (size_t)a->rows, sizeof *order));
    mem_free(row_ptr);
    mem_free(order);
    return SPF_OK;
fail:
    mem_free(row_ptr);
    mem_free(order);
    generic_csr_release(out);
    return status;
}

void generic_csr_release(generic_csr *g)
{
    if (!g)
        return;
    cuda_free_quiet(g->row_ptr);
    cuda_free_quiet(g->col_idx);
    cuda_free_quiet(g->values);
    cuda_free_quiet(g->row_order);
    cuda_free_quiet(g->long_row);
    cuda_free_quiet(g->piece_first);
    cuda_free_quiet(g->piece_range);
    cuda_free_quiet(g->partial);
    (void)cudaGetLastError();
    memset(g, 0, sizeof *g);
}

spf_status generic_csr_cut_long_rows(generic_csr *g, const spf_matrix *a,
                                     const generic_launch *l)
{
    CHECK_ARG(g != NULL && a != NULL && l != NULL && g->pieces == 0);
    int64_t longest = generic_long_threshold(g, l);
    if (longest == 0)
        return SPF_OK;
    generic_pieces h;
    spf_status status = generic_pieces_build(a, longest, &h);
    if (status != SPF_OK || h.count == 0) {
        generic_pieces_free(&h);
        return status;
    }
    /* partial's offsets p·N are formed in size_t, its rows' in int */
    if ((int64_t)h.count * l->n > INT32_MAX)
        FAIL_GOTO(SPF_ERR_OVERFLOW, "%d long-row pieces × N = %d: 2^31 partial sums or more",
                  h.count, l->n);
    TRY(upload((void **)&g->long_row, h.row, (size_t)h.long_rows, sizeof *h.row));
    TRY(upload((void **)&g->piece_first, h.first, (size_t)h.long_rows + 1, sizeof *h.first));
    TRY(upload((void **)&g->piece_range, h.range, (size_t)h.count * 2, sizeof *h.range));
    TRY(CUDA_CHECK(cudaMalloc((void **)&g->partial, (size_t)h.count * l->n * sizeof(float))));
    g->long_rows = h.long_rows;
    g->pieces = h.count;
    g->partial_n = l->n;
    generic_pieces_free(&h);
    return SPF_OK;
fail:
    generic_pieces_free(&h);
    cuda_free_quiet(g->long_row);
    cuda_free_quiet(g->piece_first);
    cuda_free_quiet(g->piece_range);
    cuda_free_quiet(g->partial);
    g->long_row = g->piece_first = g->piece_range = NULL;
    g->partial = NULL;
    return status;
}

#else /* no CUDA toolkit at build time */

spf_status generic_csr_upload(const spf_matrix *a, generic_csr *out)
{
    CHECK_ARG(out != NULL);
    memset(out, 0, sizeof *out);
    CHECK_ARG(a != NULL);
    return FAIL(SPF_ERR_NO_DEVICE, "built without CUDA");
}

void generic_csr_release(generic_csr *g)
{
    if (g)
        memset(g, 0, sizeof *g);
}

spf_status generic_csr_dispatch(const generic_csr *g, const generic_launch *l, const void *b,
                                void *c, const float *bias, int relu, void *stream)
{
    return FAIL(SPF_ERR_NO_DEVICE, "built without CUDA");
}

spf_status generic_csr_cut_long_rows(generic_csr *g, const spf_matrix *a,
                                     const generic_launch *l)
{
    return FAIL(SPF_ERR_NO_DEVICE, "built without CUDA");
}

#endif

spf_status generic_csr_upload_nonempty(const spf_matrix *a, generic_csr *out)
{
    spf_status status = generic_csr_upload(a, out);
    if (status != SPF_OK)
        return status;
    out->ordered = 0;
    for (int64_t r = 0; r < a->rows; ++r)
        out->ordered += a->row_ptr[r + 1] > a->row_ptr[r];
    return SPF_OK;
}

static size_t dtype_bytes(spf_dtype dtype)
{
    return dtype == SPF_DTYPE_F32 ? 4 : 2;
}

/* Row splitting: a thread walks its share of a row as a chain of dependent
 * load batches, and only many threads in flight hide that latency. While
 * the launch has fewer threads than about one H100 / H200 holds resident
 * (132 SMs × 2048 = 270 k; 2^18 here) and a row's share stays at least
 * SPLIT_MIN_SHARE nonzeros long, double the sub-warps per row, up to a
 * block. */
enum { SPLIT_TARGET_THREADS = 1 << 18, SPLIT_MIN_SHARE = 16, SPLIT_BLOCK = 128 };

static int row_split(const generic_csr *g, int64_t threads_per_row, int subwarp)
{
    if (g->ordered == 0)
        return 1;
    int64_t threads = (int64_t)g->ordered * threads_per_row;
    double mean_len = (double)g->nnz / (double)g->ordered;
    int split = 1;
    while (subwarp * split * 2 <= SPLIT_BLOCK && mean_len / (split * 2) >= SPLIT_MIN_SHARE &&
           threads * split < SPLIT_TARGET_THREADS)
        split *= 2;
    return split;
}

/* A row is cut (generic.h, long rows) when it is longer than all of:
 * CUT_MIN_LEN nonzeros (shorter ones take a sub-warp a few µs); CUT_OVER_MEAN
 * times the mean row (DNN weights' rows are of about one length, and their
 * launches end evenly whatever it is); and half the nonzeros an average
 * resident sub-warp walks over the whole launch (so a piece, started
 * first, ends well before the launch does). */
enum { CUT_MIN_LEN = 1024, CUT_OVER_MEAN = 8 };

int64_t generic_long_threshold(const generic_csr *g, const generic_launch *l)
{
    if (!g || !l || g->ordered == 0 || l->b_layout == SPF_LAYOUT_N_FIRST || l->split > 1)
        return 0;
    int64_t vectors = (l->n + l->vec - 1) / l->vec;
    int64_t column_tiles = (vectors + l->subwarp - 1) / l->subwarp;
    double resident = (double)SPLIT_TARGET_THREADS / l->subwarp;
    double share = (double)g->nnz * (double)column_tiles / resident / 2;
    double mean = (double)g->nnz / (double)g->ordered;
    double longest = CUT_MIN_LEN;
    if (CUT_OVER_MEAN * mean > longest)
        longest = CUT_OVER_MEAN * mean;
    if (share > longest)
        longest = share;
    return (int64_t)longest;
}

static int longer_first(const void *x, const void *y)
{
    const int64_t *a = x, *b = y; /* {length, row} */
    if (a[0] != b[0])
        return a[0] > b[0] ? -1 : 1;
    return (a[1] > b[1]) - (a[1] < b[1]);
}

spf_status generic_pieces_build(const spf_matrix *a, int64_t longest, generic_pieces *out)
{
    CHECK_ARG(out != NULL);
    memset(out, 0, sizeof *out);
    CHECK_ARG(a != NULL && longest >= 1);
    if (a->nnz > INT32_MAX)
        return FAIL(SPF_ERR_OVERFLOW, "nnz %lld: the generic kernel's offsets are int32",
                    (long long)a->nnz);
    spf_status status = SPF_OK;
    int64_t rows = 0, count = 0;
    for (int64_t r = 0; r < a->rows; ++r) {
        int64_t len = a->row_ptr[r + 1] - a->row_ptr[r];
        if (len > longest) {
            rows++;
            count += (len + longest - 1) / longest;
        }
    }
    if (rows == 0)
        return SPF_OK;
    int64_t *keys = mem_alloc_array((size_t)rows * 2, sizeof *keys);
    out->row = mem_alloc_array((size_t)rows, sizeof *out->row);
    out->first = mem_alloc_array((size_t)rows + 1, sizeof *out->first);
    out->range = mem_alloc_array((size_t)count * 2, sizeof *out->range);
    if (!keys || !out->row || !out->first || !out->range)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "%lld long rows in %lld pieces", (long long)rows,
                  (long long)count);
    for (int64_t r = 0, i = 0; r < a->rows; ++r) {
        int64_t len = a->row_ptr[r + 1] - a->row_ptr[r];
        if (len > longest) {
            keys[2 * i] = len;
            keys[2 * i + 1] = r;
            i++;
        }
    }
    /* the swizzle's order (row_order_build), so that its first rows are these */
    qsort(keys, (size_t)rows, 2 * sizeof *keys, longer_first);
    int64_t piece = 0;
    for (int64_t i = 0; i < rows; ++i) {
        int64_t r = keys[2 * i + 1], begin = a->row_ptr[r], len = keys[2 * i];
        int64_t parts = (len + longest - 1) / longest;
        out->row[i] = (int32_t)r;
        out->first[i] = (int32_t)piece;
        for (int64_t q = 0; q < parts; ++q, ++piece) { /* lengths within one of each other */
            out->range[2 * piece] = (int32_t)(begin + len * q / parts);
            out->range[2 * piece + 1] = (int32_t)(begin + len * (q + 1) / parts);
        }
    }
    out->first[rows] = (int32_t)count;
    out->long_rows = (int32_t)rows;
    out->count = (int32_t)count;
    mem_free(keys);
    return SPF_OK;
fail:
    mem_free(keys);
    generic_pieces_free(out);
    return status;
}

void generic_pieces_free(generic_pieces *p)
{
    if (!p)
        return;
    mem_free(p->row);
    mem_free(p->first);
    mem_free(p->range);
    memset(p, 0, sizeof *p);
}

/* B N_FIRST: the lanes of a sub-warp share a row's nonzeros, so as few
 * lanes as cover an average row, from 4 up to a warp (cuSPARSE's CSR-vector
 * rule); V columns of C per thread, each a register accumulator. */
static void shape_n_first(const generic_csr *g, int64_t n, generic_launch *out)
{
    double mean_len = g->ordered ? (double)g->nnz / (double)g->ordered : 0.0;
    int subwarp = 4;
    while (subwarp < 32 && subwarp < mean_len)
        subwarp *= 2;
    out->vec = n >= 4 ? 4 : n >= 2 ? 2 : 1;
    out->subwarp = subwarp;
    out->split = 1;
}

spf_status generic_launch_choose(const generic_csr *g, const problem *p, const void *b,
                                 const void *c, generic_launch *out)
{
    CHECK_ARG(g != NULL && p != NULL && out != NULL && b != NULL && c != NULL);
    const int64_t n = p->n;
    const spf_dtype dtype = p->dtype;
    CHECK_ARG(n >= 1);
    CHECK_ARG(dtype == SPF_DTYPE_F32 || dtype == SPF_DTYPE_F16 || dtype == SPF_DTYPE_BF16);
    CHECK_ARG(p->b_layout == SPF_LAYOUT_N_LAST || p->b_layout == SPF_LAYOUT_N_FIRST);
    CHECK_ARG(p->c_layout == SPF_LAYOUT_N_LAST || p->c_layout == SPF_LAYOUT_N_FIRST);
    /* The kernel forms element offsets col·N or j·K into B and row·N or
     * j·M into C in int32: both below K·N and M·N. */
    if (n > INT32_MAX || (int64_t)g->cols * n > INT32_MAX || (int64_t)g->rows * n > INT32_MAX)
        return FAIL(SPF_ERR_OVERFLOW,
                    "%d×%d matrix with N = %lld: B or C has 2^31 elements or more (int32 offsets)",
                    g->rows, g->cols, (long long)n);
    out->n = (int32_t)n;
    out->dtype = dtype;
    out->b_layout = p->b_layout;
    out->c_layout = p->c_layout;
    int64_t column_tiles;
    if (p->b_layout == SPF_LAYOUT_N_FIRST) {
        shape_n_first(g, n, out);
        column_tiles = (n + out->vec - 1) / out->vec;
    } else {
        /* Widest vector that N and the buffers' alignment allow (Sputnik's
         * vector memory instructions); C as N×M is written element by
         * element, so only an M×N C constrains it. */
        int vec = 4;
        uintptr_t addr = (uintptr_t)b | (p->c_layout == SPF_LAYOUT_N_LAST ? (uintptr_t)c : 0);
        while (vec > 1 && (n % vec != 0 || addr % ((uintptr_t)vec * dtype_bytes(dtype)) != 0))
            vec /= 2;
        /* Sputnik's subwarp tiling: as few threads per row as cover the
         * columns, from 4 (so a small N does not idle most of a warp) up to
         * a warp. */
        int64_t vectors = (n + vec - 1) / vec;
        int subwarp = 4;
        while (subwarp < 32 && subwarp < vectors)
            subwarp *= 2;
        column_tiles = (vectors + subwarp - 1) / subwarp;
        out->vec = vec;
        out->subwarp = subwarp;
        out->split = row_split(g, column_tiles * subwarp, subwarp);
    }
    if (column_tiles > 65535)
        return FAIL(SPF_ERR_OVERFLOW, "N = %lld needs more than 65535 column tiles", (long long)n);
    return SPF_OK;
}

void generic_launch_name(const generic_launch *l, char *buf, size_t size)
{
    static const char *const names[] = {"f32", "f16", "bf16"};
    char split[16] = "";
    if (l->split > 1)
        snprintf(split, sizeof split, "_rs%d", l->split);
    snprintf(buf, size, "generic_%s_v%d_sw%d%s%s%s", names[l->dtype], l->vec, l->subwarp, split,
             l->b_layout == SPF_LAYOUT_N_FIRST ? "_bnk" : "",
             l->c_layout == SPF_LAYOUT_N_FIRST ? "_cnm" : "");
}

spf_status generic_csr_launch(const generic_csr *g, const problem *p, const void *b, void *c,
                              const float *bias, void *stream)
{
    generic_launch l;
    spf_status st = generic_launch_choose(g, p, b, c, &l);
    if (st != SPF_OK)
        return st;
    if (g->ordered == 0)
        return SPF_OK;
    return generic_csr_dispatch(g, &l, b, c, bias, p->relu, stream);
}
