/* spf_matrix_read / spf_matrix_write: choose the format, open the file, and
 * write through a temporary file renamed into place (core/file.h: never a
 * partial file under the target, never a write through a planted link). */
#define _POSIX_C_SOURCE 200809L

#include "io/io.h"

#include "core/error.h"
#include "core/file.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

void spf_read_options_init(spf_read_options *options)
{
    if (!options)
        return;
    *options = (spf_read_options){.format = SPF_FORMAT_AUTO,
                                  .duplicates = SPF_DUPLICATES_REJECT,
                                  .seed = 1,
                                  .values_path = NULL,
                                  .npy_sparsity = -1.0,
                                  .max_bytes = 0};
}

spf_status read_limit_resolve(const char *path, const spf_read_options *o, int64_t *limit)
{
    *limit = o->max_bytes;
    if (*limit == 0 && env_bytes("SPFORGE_READ_MAX_BYTES", limit) < 0)
        return error_set(SPF_ERR_INVALID_ARGUMENT, path, "$SPFORGE_READ_MAX_BYTES: "
                         "expected an integer byte count in [%lld, %lld], got '%s'",
                         (long long)INT64_MIN, (long long)INT64_MAX,
                         getenv("SPFORGE_READ_MAX_BYTES"));
    if (*limit == 0)
        return budget_limit(limit);
    if (*limit < 0)
        *limit = -1;
    return SPF_OK;
}

spf_status read_limit_check(const char *path, int64_t limit, int64_t need, const char *what)
{
    if (limit < 0 || need <= limit)
        return SPF_OK;
    return error_set(SPF_ERR_OUT_OF_MEMORY, path, "reading %s needs %lld bytes, which would "
                     "exceed the read limit of %lld bytes (raise it with "
                     "spf_read_options.max_bytes, $SPFORGE_READ_MAX_BYTES, --max-read-bytes or the "
                     "work budget: $SPFORGE_MAX_BYTES, --max-bytes; < 0 for none)", what, (long long)need, (long long)limit);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    if (n < m)
        return 0;
    for (size_t i = 0; i < m; i++)
        if (tolower((unsigned char)s[n - m + i]) != suffix[i])
            return 0;
    return 1;
}

static const char *format_name(spf_format format)
{
    return format == SPF_FORMAT_MTX ? "mtx" : format == SPF_FORMAT_SMTX ? "smtx" : "npy";
}

/* The format named by the file's extension (case-insensitive). */
static spf_status format_resolve(const char *path, spf_format format, spf_format *out)
{
    if (format == SPF_FORMAT_MTX || format == SPF_FORMAT_SMTX || format == SPF_FORMAT_NPY) {
        *out = format;
        return SPF_OK;
    }
    if (format != SPF_FORMAT_AUTO)
        return error_set(SPF_ERR_INVALID_ARGUMENT, path, "unknown format %d", (int)format);
    if (ends_with(path, ".smtx"))
        *out = SPF_FORMAT_SMTX;
    else if (ends_with(path, ".mtx"))
        *out = SPF_FORMAT_MTX;
    else if (ends_with(path, ".npy"))
        *out = SPF_FORMAT_NPY;
    else
        return error_set(SPF_ERR_UNSUPPORTED, path, "unknown file extension (expected .mtx, "
                         ".smtx or .npy, or name the format explicitly)");
    return SPF_OK;
}

spf_status spf_matrix_read(const char *path, const spf_read_options *options, spf_matrix **out)
{
    error_clear();
    CHECK_ARG(out);
    *out = NULL;
    CHECK_ARG(path);
    spf_read_options resolved;
    if (options)
        resolved = *options;
    else
        spf_read_options_init(&resolved);
    const spf_read_options *o = &resolved;
    if (o->duplicates != SPF_DUPLICATES_REJECT && o->duplicates != SPF_DUPLICATES_SUM)
        return error_set(SPF_ERR_INVALID_ARGUMENT, path, "unknown duplicates policy %d",
                         (int)o->duplicates);
    if (!(o->npy_sparsity < 0) && !(o->npy_sparsity >= 0 && o->npy_sparsity < 1))
        return error_set(SPF_ERR_INVALID_ARGUMENT, path, "npy_sparsity %g is not < 0 (keep "
                         "nonzeros) or in [0, 1)", o->npy_sparsity);
    spf_format format = SPF_FORMAT_AUTO;
    spf_status status = format_resolve(path, o->format, &format);
    /* An option of another format is a mistake to report, not to ignore:
     * the values would silently not be the ones asked for. */
    if (status == SPF_OK && o->values_path && format != SPF_FORMAT_SMTX)
        status = error_set(SPF_ERR_INVALID_ARGUMENT, path, "values_path (--values) applies to "
                           ".smtx files only, and this is a .%s file", format_name(format));
    if (status == SPF_OK && !(o->npy_sparsity < 0) && format != SPF_FORMAT_NPY)
        status = error_set(SPF_ERR_INVALID_ARGUMENT, path, "npy_sparsity (--sparsity) applies "
                           "to .npy files only, and this is a .%s file", format_name(format));
    if (status == SPF_OK)
        status = read_limit_resolve(path, o, &resolved.max_bytes);
    if (status != SPF_OK)
        return status;
    switch (format) {
    case SPF_FORMAT_MTX: return mtx_read(path, o, out);
    case SPF_FORMAT_SMTX: return smtx_read(path, o, out);
    default: return npy_read(path, o, out);
    }
}

/* The writer of the format, on an open stream. */
static spf_status write_stream(const spf_matrix *a, spf_format format, FILE *f)
{
    switch (format) {
    case SPF_FORMAT_MTX: return mtx_write(a, f);
    case SPF_FORMAT_SMTX: return smtx_write(a, f);
    default: return npy_write(a, f);
    }
}

spf_status spf_matrix_write(const spf_matrix *a, const char *path, spf_format format)
{
    error_clear();
    CHECK_ARG(a);
    CHECK_ARG(path);
    spf_format resolved = SPF_FORMAT_AUTO;
    spf_status status = format_resolve(path, format, &resolved);
    if (status != SPF_OK)
        return status;
    file_replace w;
    status = file_replace_begin(&w, path, 0666);
    if (status != SPF_OK)
        return status;
    status = write_stream(a, resolved, w.file);
    if (status != SPF_OK) {
        error_prefix("%s", path);
        file_replace_abort(&w);
    } else {
        status = file_replace_commit(&w);
    }
    return status;
}
