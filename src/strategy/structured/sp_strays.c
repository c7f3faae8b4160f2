/* The strays on the device (sp_strays.h): host side. */
#include "strategy/structured/sp_strays.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/matrix.h"

#include <string.h>

#ifdef SPF_HAVE_CUDA
#include "gpu/cuda_check.h"
#include "gpu/device_upload.h"

spf_status sp_strays_upload(const spf_matrix *a, sp_strays *out)
{
    CHECK_ARG(out != NULL);
    memset(out, 0, sizeof *out);
    CHECK_ARG(a != NULL && a->values != NULL);
    int64_t rows = 0, count = a->row_ptr[a->rows];
    for (int64_t r = 0; r < a->rows; r++)
        rows += a->row_ptr[r + 1] > a->row_ptr[r];
    if (count > INT32_MAX || a->rows > INT32_MAX)
        return FAIL(SPF_ERR_OVERFLOW, "structured: %lld strays in %lld rows pass 32-bit indices",
                    (long long)count, (long long)a->rows);
    if (rows == 0)
        return SPF_OK;
    spf_status status = SPF_OK;
    int32_t *row = mem_alloc_array((size_t)rows, sizeof *row);
    int32_t *ptr = mem_alloc_array((size_t)rows + 1, sizeof *ptr);
    if (!row || !ptr)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "structured: the rows of %lld strays", (long long)count);
    int32_t at = 0;
    ptr[0] = 0;
    for (int64_t r = 0; r < a->rows; r++)
        if (a->row_ptr[r + 1] > a->row_ptr[r])
            row[at] = (int32_t)r, ptr[++at] = (int32_t)a->row_ptr[r + 1];
    out->rows = (int32_t)rows;
    TRY(device_upload((void **)&out->row, row, rows, sizeof *row, &out->bytes));
    TRY(device_upload((void **)&out->ptr, ptr, rows + 1, sizeof *ptr, &out->bytes));
    TRY(device_upload((void **)&out->col, a->col_idx, count, sizeof *out->col, &out->bytes));
    TRY(device_upload((void **)&out->val, a->values, count, sizeof *out->val, &out->bytes));
fail:
    if (status != SPF_OK)
        sp_strays_release(out);
    mem_free(row);
    mem_free(ptr);
    return status;
}

void sp_strays_release(sp_strays *d)
{
    if (!d)
        return;
    cuda_free_quiet(d->row);
    cuda_free_quiet(d->ptr);
    cuda_free_quiet(d->col);
    cuda_free_quiet(d->val);
    memset(d, 0, sizeof *d);
}

#endif
