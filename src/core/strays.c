/* Crowded rows (strays.h). */
#include "core/strays.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/matrix.h"

#include <string.h>

enum { RUN = 4, CROWD = 3 };

/* The first column of row r's fullest run (ties to the first). */
static int64_t fullest_run(const spf_matrix *a, int64_t r)
{
    int64_t best = 0, best_n = 0, run = -1, n = 0;
    for (int64_t e = a->row_ptr[r]; e < a->row_ptr[r + 1]; e++) {
        int64_t q = a->col_idx[e] / RUN;
        n = q == run ? n + 1 : 1;
        run = q;
        if (n > best_n)
            best = q, best_n = n;
    }
    return best * RUN;
}

spf_status matrix_crowd_rows(const spf_matrix *a, int64_t count, spf_matrix **out)
{
    CHECK_ARG(a != NULL && out != NULL && count >= 0 && count <= a->rows);
    *out = NULL;
    if (a->cols < CROWD)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "crowding a run needs %d columns, the matrix has "
                    "%lld", CROWD, (long long)a->cols);
    spf_status status = SPF_OK;
    spf_matrix *m = NULL;
    TRY(matrix_alloc(a->rows, a->cols, a->nnz + CROWD * count, &m));
    int64_t at = 0, next = 0; /* the next crowded row: next · rows / count */
    m->row_ptr[0] = 0;
    for (int64_t r = 0; r < a->rows; r++) {
        int crowd = next < count && r == next * a->rows / count;
        int64_t run = crowd ? fullest_run(a, r) : -1, e = a->row_ptr[r];
        int in_run = 0;
        for (int64_t x = a->row_ptr[r]; x < a->row_ptr[r + 1]; x++)
            in_run += a->col_idx[x] >= run && a->col_idx[x] < run + RUN;
        for (int64_t c = run; crowd && c < run + RUN && c < a->cols; c++) {
            /* the row's nonzeros before c, then c: its own or a stray */
            for (; e < a->row_ptr[r + 1] && a->col_idx[e] < c; e++)
                m->col_idx[at] = a->col_idx[e], m->values[at++] = a->values[e];
            if (e < a->row_ptr[r + 1] && a->col_idx[e] == c) {
                m->col_idx[at] = a->col_idx[e], m->values[at++] = a->values[e];
                e++;
            } else if (in_run < CROWD) {
                m->col_idx[at] = (int32_t)c, m->values[at++] = 0.5f;
                in_run++;
            }
        }
        for (; e < a->row_ptr[r + 1]; e++)
            m->col_idx[at] = a->col_idx[e], m->values[at++] = a->values[e];
        m->row_ptr[r + 1] = at;
        next += crowd;
    }
    m->nnz = at;
    *out = m;
    return SPF_OK;
fail:
    spf_matrix_free(m);
    return status;
}
