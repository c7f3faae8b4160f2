/* The tc format and its units on the device (tc_kernel.h). */
#include "strategy/tc/tc_kernel.h"

#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"

#include <string.h>

#ifdef SPF_HAVE_CUDA
#include "gpu/cuda_check.h"
#include "gpu/device_upload.h"

/* The workspace of split windows is windows·16 × n floats; past this a
 * config does without splitting. */
#define WORKSPACE_MAX_BYTES ((int64_t)256 << 20)

spf_status tc_device_upload(const tc_format *f, const int32_t *row_map, tc_device *out)
{
    CHECK_ARG(out != NULL);
    memset(out, 0, sizeof *out);
    CHECK_ARG(f != NULL);
    spf_status status = SPF_OK;
    tc_device *d = out;
    d->rows = f->rows, d->cols = f->cols, d->windows = f->windows, d->tiles = f->tiles;
    d->dtype = f->dtype, d->mode = f->mode;
    int64_t *b = &d->bytes;
    TRY(device_upload((void **)&d->window_tile, f->window_tile, f->windows + 1,
                      sizeof *f->window_tile, b));
    TRY(device_upload((void **)&d->tile_col, f->tile_col, f->tiles, sizeof *f->tile_col, b));
    TRY(device_upload((void **)&d->tile_value, f->tile_value, f->tiles + 1,
                      sizeof *f->tile_value, b));
    TRY(device_upload((void **)&d->tile_mask, f->tile_mask, f->tiles * TC_QUADRANTS,
               sizeof *f->tile_mask, b));
    TRY(device_upload(&d->values, f->values, f->tile_value[f->tiles], dtype_size(f->dtype), b));
    if (f->mode == TC_FORMAT_CONDENSED) {
        TRY(device_upload((void **)&d->window_col, f->window_col, f->windows + 1,
                          sizeof *f->window_col, b));
        TRY(device_upload((void **)&d->col_list, f->col_list, f->window_col[f->windows],
                   sizeof *f->col_list, b));
    }
    if (row_map)
        TRY(device_upload((void **)&d->row_map, row_map, f->rows, sizeof *row_map, b));
    return SPF_OK;
fail:
    tc_device_release(d);
    return status;
}

void tc_device_release(tc_device *d)
{
    if (!d)
        return;
    cuda_free_quiet(d->window_tile);
    cuda_free_quiet(d->tile_col);
    cuda_free_quiet(d->tile_value);
    cuda_free_quiet(d->tile_mask);
    cuda_free_quiet(d->values);
    cuda_free_quiet(d->window_col);
    cuda_free_quiet(d->col_list);
    cuda_free_quiet(d->row_map);
    memset(d, 0, sizeof *d);
}

spf_status tc_schedule_make(const tc_format *f, const tc_config *c, int64_t n, int sms,
                            int resident_warps, tc_schedule *out)
{
    CHECK_ARG(out != NULL);
    memset(out, 0, sizeof *out);
    CHECK_ARG(f != NULL && c != NULL && n >= 1);
    spf_status status = SPF_OK;
    tc_unit *units = NULL;
    int64_t nb = 8 * (int64_t)c->nt, blocks = (n + nb - 1) / nb;
    int split = c->split && f->windows * TC_TILE * blocks * nb * 4 <= WORKSPACE_MAX_BYTES;
    out->split = c->split;
    out->ksplit = 1;
    if (c->group) {
        out->ksplit =
            split ? tc_group_parts(f->windows, f->cols, blocks, c->warps, sms, resident_warps) : 1;
        out->max_parts = out->ksplit;
    } else {
        TRY(tc_units_build(f, split, sms, resident_warps, &units, &out->units, &out->max_parts));
        TRY(device_upload((void **)&out->unit, units, out->units, sizeof *units, &out->bytes));
    }
    if (out->max_parts > 1) {
        int64_t floats = f->windows * TC_TILE * blocks * nb, slots = f->windows * blocks;
        TRY(device_upload((void **)&out->workspace, NULL, floats, sizeof(float), &out->bytes));
        TRY(device_upload((void **)&out->counters, NULL, slots, sizeof(int32_t), &out->bytes));
    }
    mem_free(units);
    return SPF_OK;
fail:
    mem_free(units);
    tc_schedule_release(out);
    return status;
}

void tc_schedule_release(tc_schedule *s)
{
    if (!s)
        return;
    cuda_free_quiet(s->unit);
    cuda_free_quiet(s->workspace);
    cuda_free_quiet(s->counters);
    memset(s, 0, sizeof *s);
}

#endif
