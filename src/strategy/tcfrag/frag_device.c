/* The fragment stream and a schedule's workspace on the device
 * (frag_kernel.h). */
#include "strategy/tcfrag/frag_kernel.h"

#include "core/error.h"

#include <string.h>

#ifdef SPF_HAVE_CUDA
#include "gpu/cuda_check.h"
#include "gpu/device_upload.h"

spf_status frag_device_upload(const frag_format *f, const int32_t *row_map, frag_device *out)
{
    CHECK_ARG(out != NULL);
    memset(out, 0, sizeof *out);
    CHECK_ARG(f != NULL);
    spf_status status = SPF_OK;
    frag_device *d = out;
    d->rows = f->rows, d->cols = f->cols, d->groups = f->groups, d->dtype = f->dtype;
    d->group = f->group, d->chunks = f->chunks, d->largest = f->largest;
    int64_t cells = f->groups * f->chunks;
    TRY(device_upload((void **)&d->data, f->data, f->offset[cells], 1, &d->bytes));
    TRY(device_upload((void **)&d->offset, f->offset, cells + 1, sizeof *f->offset, &d->bytes));
    TRY(device_upload((void **)&d->chunk_step, f->chunk_step, f->chunks + 1, sizeof *f->chunk_step,
               &d->bytes));
    if (row_map)
        TRY(device_upload((void **)&d->row_map, row_map, f->rows, sizeof *row_map, &d->bytes));
    return SPF_OK;
fail:
    frag_device_release(d);
    return status;
}

void frag_device_release(frag_device *d)
{
    if (!d)
        return;
    cuda_free_quiet(d->data);
    cuda_free_quiet(d->offset);
    cuda_free_quiet(d->chunk_step);
    cuda_free_quiet(d->row_map);
    memset(d, 0, sizeof *d);
}

spf_status frag_schedule_make(const frag_device *d, const frag_config *c, int64_t n, int sms,
                              int blocks_per_sm, frag_schedule *out)
{
    CHECK_ARG(out != NULL);
    memset(out, 0, sizeof *out);
    CHECK_ARG(d != NULL && c != NULL && n >= 1);
    spf_status status = SPF_OK;
    out->ksplit = frag_parts(d->groups, d->chunks, n, c, sms, blocks_per_sm);
    if (out->ksplit > 1) {
        int64_t nb = 8 * (int64_t)c->nt, col_blocks = (n + nb - 1) / nb;
        int64_t row_blocks = (d->groups + c->warps - 1) / c->warps;
        int64_t floats = row_blocks * c->warps * c->group * FRAG_TILE * col_blocks * nb;
        TRY(device_upload((void **)&out->workspace, NULL, floats, sizeof(float), &out->bytes));
        TRY(device_upload((void **)&out->counters, NULL, row_blocks * col_blocks, sizeof(int32_t),
                   &out->bytes));
    }
    return SPF_OK;
fail:
    frag_schedule_release(out);
    return status;
}

void frag_schedule_release(frag_schedule *s)
{
    if (!s)
        return;
    cuda_free_quiet(s->workspace);
    cuda_free_quiet(s->counters);
    memset(s, 0, sizeof *s);
}

#endif
