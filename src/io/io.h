/* The per-format readers and writers behind spf_matrix_read and
 * spf_matrix_write, and the file opening they share.
 *
 * Error statuses for input files (every message starts with the file path):
 *   SPF_ERR_IO              the file cannot be opened or read
 *   SPF_ERR_PARSE           the bytes do not follow the format: syntax, counts
 *                           that disagree, truncation, indices out of range
 *   SPF_ERR_OVERFLOW        a number too large for its type, a size beyond
 *                           int32 indices
 *   SPF_ERR_INVALID_MATRIX  a well-formed file describing an invalid matrix:
 *                           repeated entries, unsorted .smtx rows, a diagonal
 *                           entry in a skew-symmetric matrix
 *   SPF_ERR_UNSUPPORTED     valid input of a kind not handled (MM array or
 *                           complex, big-endian or Fortran-order .npy)
 *   SPF_ERR_OUT_OF_MEMORY   the memory the header declares would exceed the
 *                           read limit, or an allocation failed
 *
 * The readers get options whose max_bytes is resolved (read_limit_resolve):
 * > 0 is the limit, < 0 none. */
#ifndef SPF_IO_IO_H
#define SPF_IO_IO_H

#include "core/budget.h"
#include "spforge.h"

#include <stdio.h>

/* The limit that o->max_bytes, $SPFORGE_READ_MAX_BYTES and the work budget
 * (core/budget.h) give: > 0 bytes, or -1 for none. */
spf_status read_limit_resolve(const char *path, const spf_read_options *o, int64_t *limit);

/* SPF_OK if a read of path needing `need` bytes (for `what`) fits limit
 * (from read_limit_resolve), else SPF_ERR_OUT_OF_MEMORY saying so. */
spf_status read_limit_check(const char *path, int64_t limit, int64_t need, const char *what);

spf_status mtx_read(const char *path, const spf_read_options *options, spf_matrix **out);
spf_status smtx_read(const char *path, const spf_read_options *options, spf_matrix **out);
spf_status npy_read(const char *path, const spf_read_options *options, spf_matrix **out);

/* Read a 1-D .npy of exactly count values (float32, float16 or float64) into
 * values (count floats, caller-owned). */
spf_status npy_read_values(const char *path, int64_t count, float *values);

/* Writers: the whole file to f (opened by the caller, who checks the stream
 * for write errors). */
spf_status mtx_write(const spf_matrix *a, FILE *f);
spf_status smtx_write(const spf_matrix *a, FILE *f);
spf_status npy_write(const spf_matrix *a, FILE *f);

#endif
