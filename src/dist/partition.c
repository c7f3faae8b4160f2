/* partition.h: the balanced row split and a rank's exchange. */
#include "dist/partition.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/matrix.h"

#include <string.h>

/* The cost of rows [0, i): nonzeros + DIST_ROW_COST · rows. */
static int64_t cost_before(const spf_matrix *a, int64_t i)
{
    return a->row_ptr[i] + DIST_ROW_COST * i;
}

/* The last row end e ≥ pos with cost(pos .. e - 1) ≤ bound (e = pos when
 * even row pos alone is over it). */
static int64_t reach(const spf_matrix *a, int64_t pos, int64_t bound)
{
    int64_t lo = pos, hi = a->rows; /* the answer is in [lo, hi] */
    const int64_t base = cost_before(a, pos);
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo + 1) / 2;
        if (cost_before(a, mid) - base <= bound)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* Whether `parts` parts of cost ≤ bound cover every row (greedy). */
static int fits(const spf_matrix *a, int parts, int64_t bound)
{
    int64_t pos = 0;
    for (int p = 0; p < parts && pos < a->rows; p++) {
        const int64_t end = reach(a, pos, bound);
        if (end == pos)
            return 0;
        pos = end;
    }
    return pos == a->rows;
}

spf_status dist_partition_rows(const spf_matrix *a, int parts, int64_t *row_start)
{
    CHECK_ARG(a != NULL && row_start != NULL);
    if (parts < 1 || parts > DIST_MAX_RANKS)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "partition: %d parts, expected 1 to %d", parts,
                    DIST_MAX_RANKS);
    /* the least bound that fits: between the largest row and the total */
    int64_t lo = 1, hi = cost_before(a, a->rows);
    for (int64_t i = 0; i < a->rows; i++) {
        const int64_t c = a->row_ptr[i + 1] - a->row_ptr[i] + 1;
        lo = c > lo ? c : lo;
    }
    hi = hi > lo ? hi : lo;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (fits(a, parts, mid))
            hi = mid;
        else
            lo = mid + 1;
    }
    /* greedy under that bound, each part leaving a row for every part
     * after it while rows last (then those parts take one row each, at
     * most the bound; the last takes what is left, which the bound fits) */
    int64_t pos = 0;
    row_start[0] = 0;
    for (int p = 0; p < parts; p++) {
        const int64_t later = parts - p - 1;
        int64_t end = p + 1 == parts ? a->rows : reach(a, pos, lo);
        if (a->rows - later > pos && end > a->rows - later)
            end = a->rows - later;
        if (end < pos)
            end = pos;
        row_start[p + 1] = pos = end;
    }
    return SPF_OK;
}

void dist_partition_cost(const spf_matrix *a, int parts, const int64_t *row_start,
                         int64_t *largest, double *mean)
{
    *largest = 0;
    for (int p = 0; p < parts; p++) {
        const int64_t c = cost_before(a, row_start[p + 1]) - cost_before(a, row_start[p]);
        *largest = c > *largest ? c : *largest;
    }
    *mean = (double)cost_before(a, a->rows) / parts;
}

/* Whether starts (count + 1 entries) runs from 0 to total, never down. */
static int split_valid(const int64_t *starts, int count, int64_t total)
{
    if (starts[0] != 0 || starts[count] != total)
        return 0;
    for (int i = 0; i < count; i++)
        if (starts[i + 1] < starts[i])
            return 0;
    return 1;
}

/* A's row split of `ranks` parts and B's of `b_parts`, checked for `what`. */
static spf_status splits_check(const char *what, const spf_matrix *a, int ranks,
                               const int64_t *row_start, int b_parts, const int64_t *b_start)
{
    if (!split_valid(row_start, ranks, a->rows) || !split_valid(b_start, b_parts, a->cols))
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "%s: the row splits must run from 0 to A's %lld "
                    "rows and B's %lld rows, never down", what, (long long)a->rows,
                    (long long)a->cols);
    return SPF_OK;
}

/* Rows [row0, row0 + rows) of a, the entries whose column `keep` maps to
 * a value ≥ 0, that column replaced by it; cols columns. */
static spf_status select_columns(const spf_matrix *a, int64_t row0, int64_t rows,
                                 const int32_t *keep, int64_t cols, spf_matrix **out)
{
    int64_t nnz = 0;
    for (int64_t q = a->row_ptr[row0]; q < a->row_ptr[row0 + rows]; q++)
        nnz += keep[a->col_idx[q]] >= 0;
    spf_status status = matrix_alloc(rows, cols, nnz, out);
    if (status != SPF_OK)
        return status;
    spf_matrix *m = *out;
    int64_t at = 0;
    m->row_ptr[0] = 0;
    for (int64_t i = 0; i < rows; i++) {
        for (int64_t q = a->row_ptr[row0 + i]; q < a->row_ptr[row0 + i + 1]; q++)
            if (keep[a->col_idx[q]] >= 0) {
                m->col_idx[at] = keep[a->col_idx[q]];
                m->values[at++] = a->values[q];
            }
        m->row_ptr[i + 1] = at;
    }
    return SPF_OK;
}

spf_status dist_exchange_make(const spf_matrix *a, int ranks, int rank, const int64_t *row_start,
                              const int64_t *b_start, dist_exchange *out)
{
    CHECK_ARG(a != NULL && row_start != NULL && b_start != NULL && out != NULL);
    memset(out, 0, sizeof *out);
    if (ranks < 1 || ranks > DIST_MAX_RANKS || rank < 0 || rank >= ranks)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "exchange: rank %d of %d ranks (at most %d)", rank,
                    ranks, DIST_MAX_RANKS);
    spf_status status = splits_check("exchange", a, ranks, row_start, ranks, b_start);
    if (status != SPF_OK)
        return status;
    const int64_t b0 = b_start[rank], b1 = b_start[rank + 1];
    int32_t *place = mem_alloc_array((size_t)(a->cols > 0 ? a->cols : 1), sizeof *place);
    int32_t *stamp = mem_alloc_array((size_t)(b1 > b0 ? b1 - b0 : 1), sizeof *stamp);
    out->ranks = ranks, out->rank = rank;
    out->row0 = row_start[rank], out->rows = row_start[rank + 1] - row_start[rank];
    out->recv_count = mem_calloc((size_t)ranks, sizeof *out->recv_count);
    out->recv_offset = mem_calloc((size_t)ranks + 1, sizeof *out->recv_offset);
    out->send_count = mem_calloc((size_t)ranks, sizeof *out->send_count);
    out->send_offset = mem_calloc((size_t)ranks + 1, sizeof *out->send_offset);
    if (!place || !stamp || !out->recv_count || !out->recv_offset || !out->send_count ||
        !out->send_offset)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "exchange: the maps of %lld columns",
                  (long long)a->cols);

    /* A_own: the columns this rank's shard holds, numbered within it */
    for (int64_t c = 0; c < a->cols; c++)
        place[c] = c >= b0 && c < b1 ? (int32_t)(c - b0) : -1;
    TRY(select_columns(a, out->row0, out->rows, place, b1 - b0, &out->own));

    /* A_remote: the others it names, numbered in column order, which is
     * the order of their owners and, within one, of their rows */
    for (int64_t c = 0; c < a->cols; c++)
        place[c] = -1;
    for (int64_t q = a->row_ptr[out->row0]; q < a->row_ptr[out->row0 + out->rows]; q++) {
        const int32_t c = a->col_idx[q];
        if (c < b0 || c >= b1)
            place[c] = 0;
    }
    int owner = 0;
    for (int64_t c = 0; c < a->cols; c++) {
        if (place[c] < 0)
            continue;
        while (c >= b_start[owner + 1])
            owner++;
        place[c] = (int32_t)out->recv_rows++;
        out->recv_count[owner]++;
    }
    for (int s = 0; s < ranks; s++)
        out->recv_offset[s + 1] = out->recv_offset[s] + out->recv_count[s];
    if (out->recv_rows > 0)
        TRY(select_columns(a, out->row0, out->rows, place, out->recv_rows, &out->remote));

    /* what each other rank needs of this shard: its rows' columns here,
     * counted (each column once: marked with the peer's number), then
     * listed in increasing order, the order in which the peer numbers
     * them (marked again with a second number, the shard scanned) */
    for (int64_t c = 0; c < b1 - b0; c++)
        stamp[c] = -1;
    for (int q = 0; q < ranks; q++) {
        for (int64_t e = a->row_ptr[row_start[q]]; q != rank && e < a->row_ptr[row_start[q + 1]];
             e++) {
            const int32_t c = a->col_idx[e];
            if (c >= b0 && c < b1 && stamp[c - b0] != q)
                stamp[c - b0] = q, out->send_count[q]++;
        }
        out->send_offset[q + 1] = out->send_offset[q] + out->send_count[q];
    }
    out->send_rows = out->send_offset[ranks];
    out->send_index = mem_alloc_array((size_t)(out->send_rows > 0 ? out->send_rows : 1),
                                      sizeof *out->send_index);
    if (!out->send_index)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "exchange: a send list of %lld rows",
                  (long long)out->send_rows);
    for (int q = 0; q < ranks; q++) {
        if (out->send_count[q] == 0)
            continue;
        for (int64_t e = a->row_ptr[row_start[q]]; e < a->row_ptr[row_start[q + 1]]; e++) {
            const int32_t c = a->col_idx[e];
            if (c >= b0 && c < b1)
                stamp[c - b0] = ranks + q;
        }
        int64_t at = out->send_offset[q];
        for (int64_t c = 0; c < b1 - b0; c++)
            if (stamp[c] == ranks + q)
                out->send_index[at++] = (int32_t)c;
    }
fail:
    mem_free(place);
    mem_free(stamp);
    if (status != SPF_OK)
        dist_exchange_free(out);
    return status;
}

/* The rank owning B row c (b_start sorted; the last rank whose start is
 * at most c among the non-empty ones). */
static int owner_of(const int64_t *b_start, int ranks, int64_t c)
{
    int lo = 0, hi = ranks - 1;
    while (lo < hi) {
        const int mid = lo + (hi - lo + 1) / 2;
        if (b_start[mid] <= c)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

spf_status dist_volume_make(const spf_matrix *a, int ranks, int layer_ranks, int group,
                            const int64_t *row_start, const int64_t *b_start, dist_volume *out)
{
    CHECK_ARG(a != NULL && row_start != NULL && b_start != NULL && out != NULL);
    memset(out, 0, sizeof *out);
    if (ranks < 1 || ranks > DIST_MAX_RANKS || group < 1 || layer_ranks < 1 ||
        ranks % layer_ranks != 0)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "volume: %d ranks (1 to %d) in layers of %d (a "
                    "divisor) and groups of %d (at least 1)", ranks, DIST_MAX_RANKS, layer_ranks,
                    group);
    const int q = layer_ranks;
    spf_status status = splits_check("volume", a, ranks, row_start, q, b_start);
    if (status != SPF_OK)
        return status;
    int32_t *seen = mem_alloc_array((size_t)(a->cols > 0 ? a->cols : 1), sizeof *seen);
    int32_t *peer_seen = mem_alloc_array((size_t)ranks, sizeof *peer_seen);
    out->own_nnz = mem_calloc((size_t)ranks, sizeof *out->own_nnz);
    out->remote_nnz = mem_calloc((size_t)ranks, sizeof *out->remote_nnz);
    out->recv_rows = mem_calloc((size_t)ranks, sizeof *out->recv_rows);
    out->recv_rows_far = mem_calloc((size_t)ranks, sizeof *out->recv_rows_far);
    out->send_rows = mem_calloc((size_t)ranks, sizeof *out->send_rows);
    out->recv_peers = mem_calloc((size_t)ranks, sizeof *out->recv_peers);
    if (!seen || !peer_seen || !out->own_nnz || !out->remote_nnz || !out->recv_rows ||
        !out->recv_rows_far || !out->send_rows || !out->recv_peers)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "volume: the marks of %lld columns", (long long)a->cols);
    for (int64_t c = 0; c < a->cols; c++)
        seen[c] = -1;
    for (int r = 0; r < ranks; r++)
        peer_seen[r] = -1;
    for (int r = 0; r < ranks; r++) {
        const int layer0 = r / q * q, me = r % q; /* the first rank of r's layer, r within it */
        for (int64_t k = a->row_ptr[row_start[r]]; k < a->row_ptr[row_start[r + 1]]; k++) {
            const int32_t c = a->col_idx[k];
            if (c >= b_start[me] && c < b_start[me + 1]) {
                out->own_nnz[r]++;
                continue;
            }
            out->remote_nnz[r]++;
            if (seen[c] == r)
                continue;
            seen[c] = r; /* a row of B rank r receives: from its layer's holder of it */
            const int s = layer0 + owner_of(b_start, q, c);
            out->recv_rows[r]++;
            out->recv_rows_far[r] += s / group != r / group;
            out->send_rows[s]++;
            if (peer_seen[s] != r)
                peer_seen[s] = r, out->recv_peers[r]++;
        }
    }
fail:
    mem_free(seen);
    mem_free(peer_seen);
    if (status != SPF_OK)
        dist_volume_free(out);
    return status;
}

void dist_volume_free(dist_volume *v)
{
    mem_free(v->own_nnz);
    mem_free(v->remote_nnz);
    mem_free(v->recv_rows);
    mem_free(v->recv_rows_far);
    mem_free(v->send_rows);
    mem_free(v->recv_peers);
    memset(v, 0, sizeof *v);
}

void dist_exchange_free(dist_exchange *x)
{
    spf_matrix_free(x->own);
    spf_matrix_free(x->remote);
    mem_free(x->recv_count);
    mem_free(x->recv_offset);
    mem_free(x->send_count);
    mem_free(x->send_offset);
    mem_free(x->send_index);
    memset(x, 0, sizeof *x);
}
