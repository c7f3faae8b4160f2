#include "strategy/unrolled/row_orders.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/log.h"
#include "core/matrix.h"
#include "core/parallel.h"
#include "core/progress.h"
#include "strategy/unrolled/reorder.h"
#include "strategy/unrolled/schedule.h"

#include <string.h>

typedef struct orders_job {
    const spf_matrix *a;
    row_orders *out;
} orders_job;

static spf_status reorder_range(void *ctx, int64_t begin, int64_t end, int worker)
{
    (void)worker;
    orders_job *j = ctx;
    size_t rows = (size_t)(j->a->rows ? j->a->rows : 1);
    for (int64_t i = begin; i < end; i++) {
        int32_t m1 = j->out->m1[i];
        if (m1 == 1)
            continue; /* the identity (row_orders.h) */
        /* Too many tiles for a schedule: no kernel of this m1 exists, so
         * Algorithm 1 (slowest with many tiles) is not run for it. */
        spf_status st = schedule_tiles_check(j->a->rows, m1);
        if (st != SPF_OK) {
            log_msg(SPF_LOG_INFO, "reorder: m1 = %d left in row order: %s", (int)m1,
                    spf_last_error());
            error_clear();
            continue;
        }
        int32_t *order = mem_alloc_array(rows, sizeof *order);
        if (!order)
            return FAIL(SPF_ERR_OUT_OF_MEMORY, "row order of %lld rows", (long long)j->a->rows);
        st = reorder_rows(j->a, m1, REORDER_NNZ_SLACK, order);
        if (st != SPF_OK) {
            mem_free(order);
            return st;
        }
        j->out->order[i] = order;
    }
    return SPF_OK;
}

static int has_m1(const int32_t *list, int count, int32_t m1)
{
    for (int i = 0; i < count; i++)
        if (list[i] == m1)
            return 1;
    return 0;
}

spf_status row_orders_create(const spf_matrix *a, const spf_kernel_config *configs, int count,
                             int threads, row_orders *out)
{
    spf_status status = SPF_OK;
    if (!out)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "no output");
    *out = (row_orders){0};
    if (!a || count < 0 || (count > 0 && !configs))
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "no matrix or configurations");
    out->m1 = mem_alloc_array((size_t)(count ? count : 1), sizeof *out->m1);
    if (!out->m1)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "%d m1 values", count);
    for (int i = 0; i < count; i++) {
        if (configs[i].m1 < 1)
            FAIL_GOTO(SPF_ERR_INVALID_ARGUMENT, "configuration %d: m1 = %d", i, (int)configs[i].m1);
        if (has_m1(out->m1, out->count, configs[i].m1))
            continue;
        /* insertion keeps the values ascending */
        int at = out->count++;
        while (at > 0 && out->m1[at - 1] > configs[i].m1) {
            out->m1[at] = out->m1[at - 1];
            at--;
        }
        out->m1[at] = configs[i].m1;
    }
    out->order = mem_calloc((size_t)(out->count ? out->count : 1), sizeof *out->order);
    if (!out->order)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "%d row orders", out->count);
    orders_job job = {a, out};
    TRY(progress_begin(SPF_STAGE_REORDER, out->count, "%d row orders (one per m1)", out->count));
    status = progress_end(SPF_STAGE_REORDER, parallel_for_progress(SPF_STAGE_REORDER, out->count, 1,
                                                                   threads, reorder_range, &job));
    if (status == SPF_OK)
        return SPF_OK;
fail:
    row_orders_free(out);
    return status;
}

const int32_t *row_orders_find(const row_orders *o, int32_t m1)
{
    for (int i = 0; o && i < o->count; i++)
        if (o->m1[i] == m1)
            return o->order[i];
    return NULL;
}

void row_orders_free(row_orders *o)
{
    if (!o)
        return;
    for (int i = 0; o->order && i < o->count; i++)
        mem_free(o->order[i]);
    mem_free(o->order);
    mem_free(o->m1);
    memset(o, 0, sizeof *o);
}
