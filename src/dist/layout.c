/* The public face of dist/partition.h (spforge.h: spf_partition_rows,
 * spf_dist_layout_*): a rank's exchange behind an opaque handle. */
#include "dist/partition.h"

#include "core/alloc.h"
#include "core/error.h"
#include "plan/options.h"

#include <string.h>

struct spf_dist_layout {
    dist_exchange x;
    int64_t b_row0, b_rows;
};

spf_status spf_partition_rows(const spf_matrix *a, int parts, int64_t *row_start)
{
    return dist_partition_rows(a, parts, row_start);
}

spf_status spf_dist_layout_create(const spf_matrix *a, int ranks, int rank,
                                  const int64_t *row_start, const int64_t *b_start,
                                  spf_dist_layout **out)
{
    CHECK_ARG(out != NULL);
    *out = NULL;
    spf_dist_layout *l = mem_calloc(1, sizeof *l);
    if (!l)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "a distributed layout");
    spf_status status = dist_exchange_make(a, ranks, rank, row_start, b_start, &l->x);
    if (status != SPF_OK) {
        mem_free(l);
        return status;
    }
    l->b_row0 = b_start[rank];
    l->b_rows = b_start[rank + 1] - b_start[rank];
    *out = l;
    return SPF_OK;
}

spf_status dist_layout_info(const dist_exchange *x, int64_t b_row0, int64_t b_rows,
                            spf_dist_layout_info *out)
{
    CHECK_ARG(x != NULL && out != NULL);
    if (out->size < sizeof *out || out->size > GROWABLE_MAX)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "info.size %u: expected %zu or the larger size of "
                    "a later header (set it to sizeof(spf_dist_layout_info))", out->size,
                    sizeof *out);
    *out = (spf_dist_layout_info){.size = sizeof *out, .ranks = x->ranks, .rank = x->rank,
                                  .row0 = x->row0, .rows = x->rows, .b_row0 = b_row0,
                                  .b_rows = b_rows, .own_nnz = spf_matrix_nnz(x->own),
                                  .remote_nnz = x->remote ? spf_matrix_nnz(x->remote) : 0,
                                  .recv_rows = x->recv_rows, .send_rows = x->send_rows};
    return SPF_OK;
}

spf_status spf_dist_layout_get_info(const spf_dist_layout *layout, spf_dist_layout_info *out)
{
    CHECK_ARG(layout != NULL);
    return dist_layout_info(&layout->x, layout->b_row0, layout->b_rows, out);
}

const spf_matrix *spf_dist_layout_own(const spf_dist_layout *layout)
{
    return layout ? layout->x.own : NULL;
}

const spf_matrix *spf_dist_layout_remote(const spf_dist_layout *layout)
{
    return layout ? layout->x.remote : NULL;
}

spf_status spf_dist_layout_lists(const spf_dist_layout *layout, int64_t *recv_count,
                                 int64_t *send_count, int32_t *send_index)
{
    CHECK_ARG(layout != NULL);
    const dist_exchange *x = &layout->x;
    if (recv_count)
        memcpy(recv_count, x->recv_count, (size_t)x->ranks * sizeof *recv_count);
    if (send_count)
        memcpy(send_count, x->send_count, (size_t)x->ranks * sizeof *send_count);
    if (send_index && x->send_rows > 0)
        memcpy(send_index, x->send_index, (size_t)x->send_rows * sizeof *send_index);
    return SPF_OK;
}

void spf_dist_layout_free(spf_dist_layout *layout)
{
    if (!layout)
        return;
    dist_exchange_free(&layout->x);
    mem_free(layout);
}
