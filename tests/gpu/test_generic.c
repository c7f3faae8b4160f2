/* The generic CSR kernel (strategy S2) against the CPU reference accumulated
 * in double: every storage type, N ∈ {1, 3, 49, 127, 256, 3136}, bias and
 * ReLU, empty rows, rows longer than one staged chunk, misaligned buffers
 * (narrower vector loads), every row split, long rows cut into pieces (C
 * in either layout), outputs poisoned with NaN before each launch.
 * The launch-shape choice, its int32 checks and the cutting of long rows
 * run without a GPU; the rest
 * skips visibly (exit 77) when there is no device.
 *
 * `test_generic --quick` runs a small subset (the compute-sanitizer memcheck
 * run of scripts/device-check.sh). */
#include "test_util.h"

#include "core/half.h"
#include "core/rng.h"
#include "strategy/generic/generic.h"

#include <math.h>
#include <stdint.h>

#ifdef SPF_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

/* The problem generic_launch_choose reads: n, dtype and the layouts. */
#define PROBLEM(n_, dtype_) (&(problem){.n = (n_), .dtype = (dtype_)})

static void test_launch_choose(void)
{
    static float buf[64] __attribute__((aligned(16)));
    generic_csr g = {.rows = 100, .ordered = 100, .cols = 50};
    generic_launch l;
    CHECK_OK(generic_launch_choose(&g, PROBLEM(256, SPF_DTYPE_F32), buf, buf, &l));
    CHECK(l.vec == 4 && l.subwarp == 32);
    CHECK_OK(generic_launch_choose(&g, PROBLEM(3, SPF_DTYPE_F32), buf, buf, &l));
    CHECK(l.vec == 1 && l.subwarp == 4);
    CHECK_OK(generic_launch_choose(&g, PROBLEM(49, SPF_DTYPE_BF16), buf, buf, &l));
    CHECK(l.vec == 1 && l.subwarp == 32);
    CHECK_OK(generic_launch_choose(&g, PROBLEM(6, SPF_DTYPE_F16), buf, buf, &l));
    CHECK(l.vec == 2 && l.subwarp == 4);
    CHECK_OK(generic_launch_choose(&g, PROBLEM(40, SPF_DTYPE_F32), buf, buf, &l));
    CHECK(l.vec == 4 && l.subwarp == 16);
    CHECK(l.split == 1); /* no nonzeros: nothing to split */
    /* Row split: few long rows (DLMC ResNet-50 stage 4, N = 49: 512 rows of
     * ~205) take four warps a row; a dense-layer vector (N = 1) eight
     * sub-warps of 4, where a share would drop under 16 nonzeros at 16. */
    generic_csr few_long = {.rows = 512, .ordered = 512, .cols = 2048, .nnz = 512 * 205};
    CHECK_OK(generic_launch_choose(&few_long, PROBLEM(49, SPF_DTYPE_F32), buf, buf, &l));
    CHECK(l.subwarp == 32 && l.split == 4);
    generic_csr vector_rows = {.rows = 1000, .ordered = 1000, .cols = 2048, .nnz = 1000 * 205};
    CHECK_OK(generic_launch_choose(&vector_rows, PROBLEM(1, SPF_DTYPE_F32), buf, buf, &l));
    CHECK(l.subwarp == 4 && l.split == 8);
    /* Enough threads already (4096 rows × 64 columns): no split. */
    generic_csr many = {.rows = 4096, .ordered = 4096, .cols = 1024, .nnz = 4096 * 100};
    CHECK_OK(generic_launch_choose(&many, PROBLEM(256, SPF_DTYPE_F32), buf, buf, &l));
    CHECK(l.split == 1);
    /* Alignment narrows the vector: 4 bytes off is scalar for fp32 and a
     * pair for 16-bit types; 8 bytes off is a float2. */
    CHECK_OK(generic_launch_choose(&g, PROBLEM(256, SPF_DTYPE_F32), buf + 1, buf, &l));
    CHECK(l.vec == 1);
    CHECK_OK(generic_launch_choose(&g, PROBLEM(256, SPF_DTYPE_F32), buf, buf + 2, &l));
    CHECK(l.vec == 2);
    CHECK_OK(generic_launch_choose(&g, PROBLEM(256, SPF_DTYPE_F16), buf + 1, buf, &l));
    CHECK(l.vec == 2);
    char name[64];
    generic_launch_name(&l, name, sizeof name);
    CHECK(strcmp(name, "generic_f16_v2_sw32") == 0);

    /* B as N×K: lanes over a row's nonzeros, V columns a thread, no split;
     * C as N×M stores element by element, so only B's alignment counts. */
    problem nk = {.n = 49, .dtype = SPF_DTYPE_F32, .b_layout = SPF_LAYOUT_N_FIRST,
                  .c_layout = SPF_LAYOUT_N_FIRST};
    CHECK_OK(generic_launch_choose(&few_long, &nk, buf, buf, &l));
    CHECK(l.vec == 4 && l.subwarp == 32 && l.split == 1);
    generic_launch_name(&l, name, sizeof name);
    CHECK(strcmp(name, "generic_f32_v4_sw32_bnk_cnm") == 0);
    nk.n = 3;
    CHECK_OK(generic_launch_choose(&g, &nk, buf, buf, &l));
    CHECK(l.vec == 2 && l.subwarp == 4 && l.split == 1);
    problem cnm = {.n = 256, .dtype = SPF_DTYPE_F32, .c_layout = SPF_LAYOUT_N_FIRST};
    CHECK_OK(generic_launch_choose(&g, &cnm, buf, buf + 1, &l));
    CHECK(l.vec == 4);
    generic_launch_name(&l, name, sizeof name);
    CHECK(strcmp(name, "generic_f32_v4_sw32_cnm") == 0);

    CHECK_STATUS(generic_launch_choose(&g, PROBLEM(0, SPF_DTYPE_F32), buf, buf, &l),
                 SPF_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(generic_launch_choose(&g, PROBLEM(8, (spf_dtype)7), buf, buf, &l),
                 SPF_ERR_INVALID_ARGUMENT);
    generic_csr tall = {.rows = 100000, .ordered = 100000, .cols = 10};
    CHECK_STATUS(generic_launch_choose(&tall, PROBLEM(30000, SPF_DTYPE_F32), buf, buf, &l), SPF_ERR_OVERFLOW);
    CHECK_DETAIL("int32");
    generic_csr wide = {.rows = 10, .ordered = 10, .cols = 3000000};
    CHECK_STATUS(generic_launch_choose(&wide, PROBLEM(1000, SPF_DTYPE_F32), buf, buf, &l), SPF_ERR_OVERFLOW);
}

/* Long rows: which rows are cut (longer than the threshold), in the
 * swizzle's order, into the fewest pieces of near-equal length; and the
 * threshold's rule (generic.c). */
static void test_pieces(void)
{
    /* row lengths 0, 9, 4, 5, 12, 9 */
    int64_t rp[] = {0, 0, 9, 13, 18, 30, 39};
    int32_t ci[39];
    for (int r = 0; r < 6; r++) /* columns 0, 1, ... of each row */
        for (int64_t q = rp[r]; q < rp[r + 1]; q++)
            ci[q] = (int32_t)(q - rp[r]);
    spf_matrix *a = NULL;
    CHECK_OK(spf_matrix_create_csr(6, 13, 39, rp, ci, NULL, 3, &a));
    generic_pieces p;
    CHECK_OK(generic_pieces_build(a, 4, &p));
    /* rows 4 (12: 3 pieces), 1 and 5 (9: 3 each, lower row first), 3 (5: 2) */
    static const int32_t rows[] = {4, 1, 5, 3}, first[] = {0, 3, 6, 9, 11};
    static const int32_t range[] = {18, 22, 22, 26, 26, 30, 0, 3, 3, 6, 6, 9,
                                    30, 33, 33, 36, 36, 39, 13, 15, 15, 18};
    CHECK(p.long_rows == 4 && p.count == 11);
    CHECK(p.long_rows == 4 && memcmp(p.row, rows, sizeof rows) == 0);
    CHECK(p.long_rows == 4 && memcmp(p.first, first, sizeof first) == 0);
    CHECK(p.count == 11 && memcmp(p.range, range, sizeof range) == 0);
    generic_pieces_free(&p);
    CHECK(p.row == NULL && p.count == 0);
    CHECK_OK(generic_pieces_build(a, 12, &p)); /* none longer */
    CHECK(p.long_rows == 0 && p.count == 0 && p.row == NULL);
    CHECK(generic_pieces_build(a, 0, &p) == SPF_ERR_INVALID_ARGUMENT);
    spf_matrix_free(a);

    /* R-MAT, 2^22 vertices, 52.8 M edges, N = 128: half an average
     * resident warp's nonzeros (2^18 threads / 32 = 8192 warps) */
    generic_launch l = {.n = 128, .dtype = SPF_DTYPE_F32, .vec = 4, .subwarp = 32, .split = 1};
    generic_csr g = {.rows = 1 << 22, .ordered = 1 << 22, .cols = 1 << 22, .nnz = 52776558};
    CHECK(generic_long_threshold(&g, &l) == 3221);
    /* even rows (DLMC-like, 460 each): eight times the mean */
    generic_csr even = {.rows = 2048, .ordered = 2048, .cols = 4608, .nnz = 2048 * 460};
    CHECK(generic_long_threshold(&even, &l) == 8 * 460);
    /* small: at least 1024 */
    generic_csr small = {.rows = 1500, .ordered = 1500, .cols = 3000, .nnz = 17000};
    CHECK(generic_long_threshold(&small, &l) == 1024);
    /* none with a row split, or with B as N×K */
    l.split = 2;
    CHECK(generic_long_threshold(&g, &l) == 0);
    l.split = 1;
    l.b_layout = SPF_LAYOUT_N_FIRST;
    CHECK(generic_long_threshold(&g, &l) == 0);
}

#ifdef SPF_HAVE_CUDA
static const char *const dtype_names[] = {"f32", "f16", "bf16"};

/* 75×300: every 11th row empty, row 5 full (300 nonzeros: nine chunks and a
 * tail), row 6 one past a chunk (33), the rest random up to ~25% dense. */
static spf_matrix *matrix_ragged(void)
{
    enum { ROWS = 75, COLS = 300 };
    static int64_t row_ptr[ROWS + 1];
    static int32_t col_idx[ROWS * COLS];
    rng r;
    rng_seed(&r, 42);
    int64_t nnz = 0;
    for (int row = 0; row < ROWS; ++row) {
        row_ptr[row] = nnz;
        if (row % 11 == 0)
            continue;
        double p = row == 5 ? 1.0 : 0.25 * rng_uniform(&r);
        int want6 = 33;
        for (int col = 0; col < COLS; ++col) {
            int keep = row == 6 ? (col % 9 == 0 && want6-- > 0) : rng_uniform(&r) < p;
            if (keep)
                col_idx[nnz++] = col;
        }
    }
    row_ptr[ROWS] = nnz;
    spf_matrix *a = NULL;
    CHECK_OK(spf_matrix_create_csr(ROWS, COLS, nnz, row_ptr, col_idx, NULL, 7, &a));
    return a;
}

static spf_matrix *matrix_empty(void)
{
    int64_t row_ptr[6] = {0};
    int32_t no_cols[1] = {0};
    spf_matrix *a = NULL;
    CHECK_OK(spf_matrix_create_csr(5, 9, 0, row_ptr, no_cols, NULL, 1, &a));
    return a;
}

/* The swizzle on the device is a permutation of the rows in order of
 * non-increasing length. */
static void check_row_order(const spf_matrix *a, const generic_csr *g)
{
    int64_t rows = spf_matrix_rows(a);
    int32_t *order = calloc((size_t)rows + 1, sizeof *order);
    char *seen = calloc((size_t)rows + 1, 1);
    CUDA_OK(cudaMemcpy(order, g->row_order, (size_t)rows * sizeof *order, cudaMemcpyDeviceToHost));
    const int64_t *rp = spf_matrix_row_ptr(a);
    int ok = 1;
    for (int64_t i = 0; i < rows; ++i) {
        int32_t r = order[i];
        if (r < 0 || r >= rows || seen[r]) {
            ok = 0;
            break;
        }
        seen[r] = 1;
        if (i > 0 && rp[r + 1] - rp[r] > rp[order[i - 1] + 1] - rp[order[i - 1]])
            ok = 0;
    }
    CHECK_MSG(ok, "row_order is not a length-sorted permutation");
    free(order);
    free(seen);
}

static size_t elem_bytes(spf_dtype t)
{
    return t == SPF_DTYPE_F32 ? 4 : 2;
}

/* Round to the storage type and pack; `rounded` gets the values the kernel
 * actually reads, so the reference measures the kernel alone. */
static void pack(spf_dtype t, const float *x, int64_t count, void *out, float *rounded)
{
    for (int64_t i = 0; i < count; ++i) {
        if (t == SPF_DTYPE_F32) {
            ((float *)out)[i] = rounded[i] = x[i];
        } else if (t == SPF_DTYPE_F16) {
            uint16_t h = f16_from_float(x[i]);
            ((uint16_t *)out)[i] = h;
            rounded[i] = f16_to_float(h);
        } else {
            uint16_t h = bf16_from_float(x[i]);
            ((uint16_t *)out)[i] = h;
            rounded[i] = bf16_to_float(h);
        }
    }
}

static float unpack1(spf_dtype t, const void *buf, int64_t i)
{
    if (t == SPF_DTYPE_F32)
        return ((const float *)buf)[i];
    uint16_t h = ((const uint16_t *)buf)[i];
    return t == SPF_DTYPE_F16 ? f16_to_float(h) : bf16_to_float(h);
}

/* One launch checked against the double reference. offset shifts B and C
 * by that many elements from cudaMalloc's alignment; split > 0 forces that
 * row split on the chosen shape (where the block holds it); cnm: C as N×M. */
static void run_case(const char *label, const spf_matrix *a, const generic_csr *g, int64_t n,
                     spf_dtype t, int with_bias, int relu, int offset, int split, int cnm,
                     cudaStream_t stream)
{
    int64_t m = spf_matrix_rows(a), k = spf_matrix_cols(a);
    size_t eb = elem_bytes(t);
    float *bf = malloc((size_t)(k * n + 1) * sizeof *bf);
    float *bq = malloc((size_t)(k * n + 1) * sizeof *bq);
    void *bh = malloc((size_t)(k * n + 1) * eb);
    void *ch = malloc((size_t)(m * n + 1) * eb);
    float *cf = malloc((size_t)(m * n + 1) * sizeof *cf);
    double *ref = malloc((size_t)(m * n + 1) * sizeof *ref);
    float *bias = malloc((size_t)m * sizeof *bias + 1);
    spf_fill_uniform(bias, m, 11);
    spf_fill_uniform(bf, k * n, 1000 + (uint64_t)n);
    pack(t, bf, k * n, bh, bq);
    CHECK_OK(spf_reference_spmm_f64(a, n, bq, ref, with_bias ? bias : NULL, relu, 0));

    char *bd = NULL, *cd = NULL;
    float *biasd = NULL;
    CUDA_OK(cudaMalloc((void **)&bd, (size_t)(k * n + offset + 1) * eb));
    CUDA_OK(cudaMalloc((void **)&cd, (size_t)(m * n + offset + 1) * eb));
    CUDA_OK(cudaMalloc((void **)&biasd, (size_t)m * sizeof *bias + 1));
    CUDA_OK(cudaMemcpy(bd + offset * eb, bh, (size_t)(k * n) * eb, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(biasd, bias, (size_t)m * sizeof *bias, cudaMemcpyHostToDevice));
    /* Poison: 0xFF bytes are NaN in all three types, so an output the
     * kernel failed to write shows as an infinite error. */
    CUDA_OK(cudaMemset(cd, 0xFF, (size_t)(m * n + offset + 1) * eb));
    generic_launch l;
    problem prob = {.n = n, .dtype = t, .c_layout = cnm ? SPF_LAYOUT_N_FIRST : SPF_LAYOUT_N_LAST};
    CHECK_OK(generic_launch_choose(g, &prob, bd + offset * eb, cd + offset * eb, &l));
    if (split > 0 && l.subwarp * split <= 128)
        l.split = split;
    if (g->rows > 0)
        CHECK_OK(generic_csr_dispatch(g, &l, bd + offset * eb, cd + offset * eb,
                                      with_bias ? biasd : NULL, relu, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
    CUDA_OK(cudaMemcpy(ch, cd + offset * eb, (size_t)(m * n) * eb, cudaMemcpyDeviceToHost));
    for (int64_t i = 0; i < m * n; ++i) /* read back as M×N */
        cf[i] = unpack1(t, ch, cnm ? i % n * m + i / n : i);
    double err = spf_relative_error(cf, ref, m * n);
    double tol = t == SPF_DTYPE_F32 ? 1e-5 : 1e-2;
    CHECK_MSG(err <= tol, "%s N=%lld %s bias=%d relu=%d offset=%d split=%d cnm=%d: relative error "
              "%.3g > %g", label, (long long)n, dtype_names[t], with_bias, relu, offset, l.split,
              cnm, err, tol);
    /* The element past C stays poisoned: nothing writes beyond M·N. */
    uint32_t past = 0;
    CUDA_OK(cudaMemcpy(&past, cd + (offset + m * n) * eb, eb, cudaMemcpyDeviceToHost));
    CHECK_MSG(past == (eb == 4 ? 0xFFFFFFFFu : 0xFFFFu), "%s N=%lld: wrote past C", label,
              (long long)n);

    cudaFree(bd);
    cudaFree(cd);
    cudaFree(biasd);
    free(bias);
    free(bf);
    free(bq);
    free(bh);
    free(ch);
    free(cf);
    free(ref);
}

static void run_matrix(const char *label, spf_matrix *a, int quick, cudaStream_t stream)
{
    static const int64_t ns[] = {1, 3, 49, 127, 256, 3136};
    if (!a)
        return;
    generic_csr g;
    CHECK_OK(generic_csr_upload(a, &g));
    if (g.row_order) {
        check_row_order(a, &g);
        int variant = 0;
        for (size_t i = 0; i < sizeof ns / sizeof ns[0]; ++i) {
            if (quick && ns[i] != 3 && ns[i] != 256)
                continue;
            for (int t = SPF_DTYPE_F32; t <= SPF_DTYPE_BF16; ++t, ++variant) {
                /* Bias and ReLU cycle through their four combinations. */
                run_case(label, a, &g, ns[i], (spf_dtype)t, variant & 1, (variant >> 1) & 1, 0,
                         0, 0, stream);
                if (ns[i] == 256 && !quick) {
                    run_case(label, a, &g, ns[i], (spf_dtype)t, 1, 1, 1, 0, 0, stream);
                    run_case(label, a, &g, ns[i], (spf_dtype)t, 0, 0, 2, 0, 0, stream);
                }
                /* Every row split the block allows, on the same inputs:
                 * shares that are empty, shorter than a chunk and longer. */
                for (int split = 2; split <= 32; split *= 2)
                    if (!quick || split == 4)
                        run_case(label, a, &g, ns[i], (spf_dtype)t, variant & 1,
                                 (variant >> 1) & 1, 0, split, 0, stream);
            }
        }
    }
    generic_csr_release(&g);
    CHECK(g.row_ptr == NULL && g.values == NULL);
    spf_matrix_free(a);
}

/* Long rows cut into pieces (generic_csr_cut_long_rows, as the generic
 * strategy's plans do): for each N the rows longer than the threshold are
 * cut for that N's shape, and every dtype, bias / ReLU, C layout and a
 * misaligned B and C (narrower vectors on the same pieces) run against the
 * reference. want_long: the rows to be cut, or -1 for some where the shape
 * allows (no row split: small N on few rows splits rows instead). */
static void run_matrix_cut(const char *label, spf_matrix *a, int64_t want_long, int quick,
                           cudaStream_t stream)
{
    static const int64_t ns[] = {1, 3, 49, 127, 256};
    static float aligned[4] __attribute__((aligned(256)));
    int variant = 0, cut = 0;
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; ++i) {
        if (quick && ns[i] != 3 && ns[i] != 256)
            continue;
        for (int t = SPF_DTYPE_F32; t <= SPF_DTYPE_BF16; ++t, ++variant) {
            generic_csr g;
            generic_launch l;
            CHECK_OK(generic_csr_upload(a, &g));
            CHECK_OK(generic_launch_choose(&g, PROBLEM(ns[i], (spf_dtype)t), aligned, aligned, &l));
            CHECK_OK(generic_csr_cut_long_rows(&g, a, &l));
            CHECK_MSG(want_long < 0 ? g.long_rows > 0 || l.split > 1 : g.long_rows == want_long,
                      "%s N=%lld: %d rows cut in %d pieces (row split %d), expected %lld", label,
                      (long long)ns[i], g.long_rows, g.pieces, l.split, (long long)want_long);
            cut += g.pieces > 0;
            for (int cnm = 0; cnm <= 1; cnm++)
                run_case(label, a, &g, ns[i], (spf_dtype)t, (variant + cnm) & 1,
                         ((variant >> 1) + cnm) & 1, 0, 0, cnm, stream);
            if (!quick)
                run_case(label, a, &g, ns[i], (spf_dtype)t, 1, 1, 1, 0, 0, stream);
            generic_csr_release(&g);
            CHECK(g.partial == NULL && g.pieces == 0);
        }
    }
    CHECK_MSG(cut > 0, "%s: no N cut a row", label);
    spf_matrix_free(a);
}

/* generic_csr_upload_nonempty: a launch computes the rows holding
 * nonzeros (bias and ReLU applied) and leaves the empty ones (every 11th
 * row of matrix_ragged, and one drawn empty) as they were: the structured strategy's CSR pass
 * over the rows outside its pattern. */
static void test_nonempty_rows(cudaStream_t stream)
{
    spf_matrix *a = matrix_ragged();
    const int64_t m = spf_matrix_rows(a), k = spf_matrix_cols(a);
    const int64_t *rp = spf_matrix_row_ptr(a);
    generic_csr g;
    CHECK_OK(generic_csr_upload_nonempty(a, &g));
    int64_t nonempty = 0;
    for (int64_t r = 0; r < m; r++)
        nonempty += rp[r + 1] > rp[r];
    CHECK_MSG(g.rows == m && g.ordered == nonempty && nonempty < m, "%d rows, %d ordered, %lld "
              "nonempty", g.rows, g.ordered, (long long)nonempty);
    static const int64_t ns[] = {3, 49};
    for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++)
        for (int t = SPF_DTYPE_F32; t <= SPF_DTYPE_F16; t++) {
            const int64_t n = ns[ni];
            const size_t eb = elem_bytes((spf_dtype)t);
            float *bf = malloc((size_t)(k * n) * sizeof *bf);
            float *bq = malloc((size_t)(k * n) * sizeof *bq);
            float *bias = malloc((size_t)m * sizeof *bias);
            void *bh = malloc((size_t)(k * n) * eb), *ch = malloc((size_t)(m * n) * eb);
            double *ref = malloc((size_t)(m * n) * sizeof *ref);
            spf_fill_uniform(bias, m, 12);
            spf_fill_uniform(bf, k * n, 2000 + (uint64_t)n);
            pack((spf_dtype)t, bf, k * n, bh, bq);
            CHECK_OK(spf_reference_spmm_f64(a, n, bq, ref, bias, 1, 0));
            void *bd = NULL, *cd = NULL;
            float *biasd = NULL;
            CUDA_OK(cudaMalloc(&bd, (size_t)(k * n) * eb));
            CUDA_OK(cudaMalloc(&cd, (size_t)(m * n) * eb));
            CUDA_OK(cudaMalloc((void **)&biasd, (size_t)m * sizeof *bias));
            CUDA_OK(cudaMemcpy(bd, bh, (size_t)(k * n) * eb, cudaMemcpyHostToDevice));
            CUDA_OK(cudaMemcpy(biasd, bias, (size_t)m * sizeof *bias, cudaMemcpyHostToDevice));
            CUDA_OK(cudaMemset(cd, 0xFF, (size_t)(m * n) * eb));
            CHECK_OK(generic_csr_launch(&g, &(problem){.n = n, .dtype = (spf_dtype)t, .relu = 1},
                                        bd, cd, biasd, stream));
            CUDA_OK(cudaStreamSynchronize(stream));
            CUDA_OK(cudaMemcpy(ch, cd, (size_t)(m * n) * eb, cudaMemcpyDeviceToHost));
            int64_t touched = 0;
            double worst = 0, scale = 1e-30;
            for (int64_t i = 0; i < m * n; i++)
                scale = fmax(scale, fabs(ref[i]));
            for (int64_t r = 0; r < m; r++)
                for (int64_t j = 0; j < n; j++) {
                    float got = unpack1((spf_dtype)t, ch, r * n + j);
                    if (rp[r + 1] == rp[r]) {
                        touched += got == got; /* the poison (NaN) is left */
                        continue;
                    }
                    worst = fmax(worst, fabs(got - ref[r * n + j]) / scale);
                }
            CHECK_MSG(touched == 0, "nonempty N=%lld %s: %lld outputs of empty rows written",
                      (long long)n, dtype_names[t], (long long)touched);
            CHECK_MSG(worst <= (t == SPF_DTYPE_F32 ? 1e-5 : 1e-2), "nonempty N=%lld %s: error %.3g",
                      (long long)n, dtype_names[t], worst);
            cudaFree(bd), cudaFree(cd), cudaFree(biasd);
            free(bf), free(bq), free(bias), free(bh), free(ch), free(ref);
        }
    generic_csr_release(&g);
    spf_matrix_free(a);
}

static void test_kernel(int quick)
{
    cudaStream_t stream = NULL;
    CUDA_OK(cudaStreamCreate(&stream));
    run_matrix("ragged 75x300", matrix_ragged(), quick, stream);
    run_matrix("empty 5x9", matrix_empty(), quick, stream);
    test_nonempty_rows(stream);
    /* rows 7, 500, 900 and 1200 (over 1024 nonzeros), not 1300 */
    run_matrix_cut("long rows 1500x3000", matrix_long_rows(5), 4, quick, stream);
    if (!quick) {
        run_matrix_cut("rmat 8192 s0.995", gen_matrix(SPF_GEN_RMAT, 8192, 8192, 0.995, 6), -1,
                       quick, stream);
        run_matrix("uniform 1000x384 s0.9", gen_matrix(SPF_GEN_UNIFORM, 1000, 384, 0.9, 3), quick,
                   stream);
        const char *data = check_data_dir();
        if (data) {
            spf_matrix *a = data_matrix(
                data, "dlmc/rn50/magnitude_pruning/0.9/bottleneck_2_block_group2_1_1.smtx", 1);
            run_matrix("dlmc rn50 conv 0.9", a, quick, stream);
        }
    }
    CUDA_OK(cudaStreamDestroy(stream));
}
#endif

int main(int argc, char **argv)
{
    test_launch_choose();
    test_pieces();
    spf_device_info info;
    CHECK_OK(spf_device_query(0, &info));
    if (!info.available) {
        if (check_failed)
            return check_report();
        check_report();
        SKIP("no CUDA device (%s): generic kernel launches not run", info.reason);
    }
#ifdef SPF_HAVE_CUDA
    test_kernel(argc > 1 && strcmp(argv[1], "--quick") == 0);
#else
    (void)argc, (void)argv;
#endif
    return check_report();
}
