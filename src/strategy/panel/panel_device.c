/* The panel format on the device (panel_kernel.h). */
#include "strategy/panel/panel_kernel.h"

#include "core/error.h"

#include <string.h>

#ifdef SPF_HAVE_CUDA
#include "gpu/cuda_check.h"
#include "gpu/device_upload.h"

spf_status panel_device_upload(const panel_format *f, panel_device *out)
{
    CHECK_ARG(out != NULL);
    memset(out, 0, sizeof *out);
    CHECK_ARG(f != NULL);
    spf_status status = SPF_OK;
    panel_device *d = out;
    d->rows = f->rows, d->cols = f->cols, d->dtype = f->dtype;
    d->width = f->width, d->panels = f->panels;
    TRY(device_upload((void **)&d->ptr, f->ptr, (int64_t)f->panels * f->rows + 1, sizeof *f->ptr,
                      &d->bytes));
    TRY(device_upload((void **)&d->entry, f->entry, f->nnz, sizeof *f->entry, &d->bytes));
    return SPF_OK;
fail:
    panel_device_release(d);
    return status;
}

void panel_device_release(panel_device *d)
{
    if (!d)
        return;
    cuda_free_quiet(d->ptr);
    cuda_free_quiet(d->entry);
    memset(d, 0, sizeof *d);
}

#endif
