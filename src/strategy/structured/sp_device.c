/* The structured format on the device, and the launch of a config by its
 * kernel (sp_kernel.h). */
#include "strategy/structured/sp_kernel.h"

#include "core/error.h"

#include <string.h>

#ifdef SPF_HAVE_CUDA
#include "gpu/cuda_check.h"
#include "gpu/device_upload.h"

spf_status sp_device_upload(const sp_format *f, sp_device *out)
{
    CHECK_ARG(out != NULL);
    memset(out, 0, sizeof *out);
    CHECK_ARG(f != NULL);
    spf_status status = SPF_OK;
    sp_device *d = out;
    d->rows = f->rows, d->cols = f->cols, d->tiles = f->tiles, d->pairs = f->pairs;
    d->dtype = f->dtype, d->pattern = f->pattern;
    if (f->pattern.vec) { /* sp_colvec.h */
        TRY(device_upload((void **)&d->values, f->values, f->steps * 8 * f->pattern.vec + 1,
                          sizeof *f->values, &d->bytes));
        TRY(device_upload((void **)&d->gather, f->gather, f->steps * 16 + 1, sizeof *f->gather,
                          &d->bytes));
        TRY(device_upload((void **)&d->step_ptr, f->step_ptr, f->tiles + 1, sizeof *f->step_ptr,
                          &d->bytes));
        if (f->pattern.permuted)
            TRY(device_upload((void **)&d->row_map, f->row_map, f->rows + 1, sizeof *f->row_map,
                              &d->bytes));
        return SPF_OK;
    }
    int64_t words = f->tiles * f->pairs * 256;
    TRY(device_upload((void **)&d->values, f->values, words + 1, sizeof *f->values, &d->bytes));
    TRY(device_upload((void **)&d->meta, f->meta, words / 8 + 1, sizeof *f->meta, &d->bytes));
    if (f->gather) {
        int64_t blocks = (f->rows + f->pattern.v - 1) / f->pattern.v;
        TRY(device_upload((void **)&d->gather, f->gather, blocks * f->pairs * 64,
                          sizeof *f->gather, &d->bytes));
    }
    return SPF_OK;
fail:
    sp_device_release(d);
    return status;
}

void sp_device_release(sp_device *d)
{
    if (!d)
        return;
    cuda_free_quiet(d->values);
    cuda_free_quiet(d->meta);
    cuda_free_quiet(d->gather);
    cuda_free_quiet(d->step_ptr);
    cuda_free_quiet(d->row_map);
    memset(d, 0, sizeof *d);
}

spf_status sp_config_occupancy(const sp_config *c, const sp_device *d, int *blocks)
{
    if (c->kind == SP_COLVEC)
        return sp_colvec_occupancy(c, d, blocks);
    if (c->kind == SP_WGMMA)
        return sp_wgmma_occupancy(c, d, blocks);
    if (c->kind == SP_TMA)
        return sp_tma_occupancy(c, d, blocks);
    return c->kind == SP_TILE ? sp_tile_occupancy(c, d, blocks) : sp_stream_occupancy(c, d, blocks);
}

spf_status sp_launch(const sp_device *d, const sp_config *c, const spmm_operands *op,
                     void *stream)
{
    if (c->kind == SP_COLVEC)
        return sp_colvec_launch(d, c, op, stream);
    if (c->kind == SP_WGMMA)
        return sp_wgmma_launch(d, c, op, stream);
    if (c->kind == SP_TMA)
        return sp_tma_launch(d, c, op, stream);
    return c->kind == SP_TILE ? sp_tile_launch(d, c, op, stream)
                              : sp_stream_launch(d, c, op, stream);
}

#endif
