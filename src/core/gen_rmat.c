/* R-MAT power-law graphs (Chakrabarti, Zhan, Faloutsos, "R-MAT: A Recursive
 * Model for Graph Mining", SDM 2004): each edge descends a 2^L × 2^L
 * adjacency matrix, choosing at every level the quadrant a (top left),
 * b (top right), c (bottom left) or d = 1 - a - b - c (bottom right). The
 * square covers rows × cols and draws outside the shape are redrawn. */
#include "core/generate.h"

#include "core/alloc.h"
#include "core/budget.h"
#include "core/error.h"
#include "core/matrix.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Draws (including clipped and repeated ones) allowed per requested edge
 * before giving up: a skewed distribution saturates its likely cells, and
 * then the rest of the density is out of reach. */
enum { DRAWS_PER_EDGE = 64, DRAWS_EXTRA = 4096 };

/* An open-addressing set of row-major cell numbers + 1 (0 marks empty). */
typedef struct cell_set {
    uint64_t *slot;
    uint64_t mask;
} cell_set;

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

/* Insert key (> 0); returns 1 if it was new. The table is sized for twice
 * the edges wanted, so it never fills. */
static int cell_set_insert(cell_set *s, uint64_t key)
{
    for (uint64_t i = mix64(key) & s->mask;; i = (i + 1) & s->mask) {
        if (s->slot[i] == key)
            return 0;
        if (s->slot[i] == 0) {
            s->slot[i] = key;
            return 1;
        }
    }
}

static int cmp_u64(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return (a > b) - (a < b);
}

spf_status gen_rmat(const spf_gen_options *o, rng *r, spf_matrix **out)
{
    spf_status status = SPF_OK;
    spf_matrix *a = NULL;
    cell_set set = {NULL, 0};
    uint64_t *cells = NULL;
    int64_t target = llround((1.0 - o->sparsity) * (double)o->rows * (double)o->cols);
    int levels = 0;
    while (((int64_t)1 << levels) < (o->rows > o->cols ? o->rows : o->cols))
        levels++;

    uint64_t capacity = 16;
    while (capacity < 2 * (uint64_t)target)
        capacity *= 2;
    char shape[64];
    snprintf(shape, sizeof shape, "R-MAT %lld x %lld at sparsity %g", (long long)o->rows,
             (long long)o->cols, o->sparsity);
    /* the set has fewer than 4 slots an edge (at least 16), a cell is 8 bytes */
    TRY(budget_check(shape, bytes_add(bytes_add(bytes_mul(target, 5 * 8), 16 * 8),
                                      csr_bytes(o->rows, target)),
                     "the edge set, its cells and the generated matrix"));
    set.slot = mem_calloc((size_t)capacity, sizeof *set.slot);
    cells = mem_alloc_array((size_t)target, sizeof *cells);
    if (!set.slot || (!cells && target))
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "R-MAT edge set for %lld edges", (long long)target);
    set.mask = capacity - 1;

    double ab = o->rmat_a + o->rmat_b, abc = ab + o->rmat_c;
    int64_t found = 0, draws = 0, max_draws = DRAWS_PER_EDGE * target + DRAWS_EXTRA;
    while (found < target) {
        if (draws++ == max_draws)
            FAIL_GOTO(SPF_ERR_INVALID_ARGUMENT, "R-MAT (a %g, b %g, c %g) on %lld x %lld reached "
                      "only %lld of %lld distinct edges after %lld draws: the skew cannot give "
                      "sparsity %g; ask for a higher sparsity", o->rmat_a, o->rmat_b, o->rmat_c,
                      (long long)o->rows, (long long)o->cols, (long long)found, (long long)target,
                      (long long)max_draws, o->sparsity);
        int64_t row = 0, col = 0;
        for (int l = 0; l < levels; l++) {
            double u = rng_uniform(r);
            row = 2 * row + (u >= ab);
            col = 2 * col + ((u >= o->rmat_a && u < ab) || u >= abc);
        }
        if (row >= o->rows || col >= o->cols)
            continue;
        uint64_t key = (uint64_t)(row * o->cols + col) + 1;
        if (cell_set_insert(&set, key))
            cells[found++] = key - 1;
    }

    qsort(cells, (size_t)target, sizeof *cells, cmp_u64);
    TRY(matrix_alloc(o->rows, o->cols, target, &a));
    int64_t e = 0;
    for (int64_t i = 0; i < o->rows; i++) {
        for (; e < target && cells[e] / (uint64_t)o->cols == (uint64_t)i; e++)
            a->col_idx[e] = (int32_t)(cells[e] % (uint64_t)o->cols);
        a->row_ptr[i + 1] = e;
    }
    mem_free(set.slot);
    mem_free(cells);
    *out = a;
    return SPF_OK;
fail:
    mem_free(set.slot);
    mem_free(cells);
    spf_matrix_free(a);
    return status;
}
