/* The strays on the device (sp_strays.h): host side. */
#include "strategy/structured/sp_strays.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/matrix.h"

#include <string.h>

#ifdef SPF_HAVE_CUDA
#include "gpu/cuda_check.h"
#include "gpu/device_upload.h"

spf_status sp_strays_upload(const spf_matrix *a, const uint8_t *stray, sp_strays *out)
{
    CHECK_ARG(out != NULL);
    memset(out, 0, sizeof *out);
    CHECK_ARG(a != NULL && stray != NULL);
    int64_t rows = 0, count = 0;
    for (int64_t r = 0; r < a->rows; r++) {
        int64_t here = 0;
        for (int64_t i = a->row_ptr[r]; i < a->row_ptr[r + 1]; i++)
            here += stray[i] != 0;
        rows += here > 0;
        count += here;
    }
    if (count > INT32_MAX || a->rows > INT32_MAX)
        return FAIL(SPF_ERR_OVERFLOW, "structured: %lld strays in %lld rows pass 32-bit indices",
                    (long long)count, (long long)a->rows);
    if (rows == 0)
        return SPF_OK;
    spf_status status = SPF_OK;
    int32_t *row = mem_alloc_array((size_t)rows, sizeof *row);
    int32_t *ptr = mem_alloc_array((size_t)rows + 1, sizeof *ptr);
    int32_t *col = mem_alloc_array((size_t)count, sizeof *col);
    float *val = mem_alloc_array((size_t)count, sizeof *val);
    if (!row || !ptr || !col || !val)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "structured: %lld strays", (long long)count);
    int32_t at = 0, n = 0;
    ptr[0] = 0;
    for (int64_t r = 0; r < a->rows; r++) {
        for (int64_t i = a->row_ptr[r]; i < a->row_ptr[r + 1]; i++)
            if (stray[i]) {
                col[n] = a->col_idx[i];
                val[n++] = a->values ? a->values[i] : 1.0f;
            }
        if (n > ptr[at])
            row[at] = (int32_t)r, ptr[++at] = n;
    }
    out->rows = (int32_t)rows;
    TRY(device_upload((void **)&out->row, row, rows, sizeof *row, &out->bytes));
    TRY(device_upload((void **)&out->ptr, ptr, rows + 1, sizeof *ptr, &out->bytes));
    TRY(device_upload((void **)&out->col, col, count, sizeof *col, &out->bytes));
    TRY(device_upload((void **)&out->val, val, count, sizeof *val, &out->bytes));
fail:
    if (status != SPF_OK)
        sp_strays_release(out);
    mem_free(row);
    mem_free(ptr);
    mem_free(col);
    mem_free(val);
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
