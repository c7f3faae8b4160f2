/* The internal layout of spf_matrix, shared by every module of the library. */
#ifndef SPF_CORE_MATRIX_H
#define SPF_CORE_MATRIX_H

#include "spforge.h"

#include <stdint.h>

struct spf_matrix {
    int64_t rows, cols, nnz;
    int64_t *row_ptr; /* rows + 1 */
    int32_t *col_idx; /* nnz, sorted and unique within each row */
    float *values;    /* nnz */
    /* matrix_pattern_hash and matrix_values_hash once computed (0 before;
     * core/hash.c): the arrays are not changed after the matrix is made. */
    uint64_t pattern_hash, values_hash;
    /* A number no other matrix of this process has (matrix_alloc, from 1):
     * what a memo of facts about one matrix keys on (sp_pattern_detect's). */
    uint64_t id;
};

/* Allocate an uninitialised matrix of the given shape and nnz (row_ptr,
 * col_idx and values allocated, contents undefined). Checks the shape
 * limits (rows, cols <= INT32_MAX, nnz <= rows * cols). */
spf_status matrix_alloc(int64_t rows, int64_t cols, int64_t nnz, spf_matrix **out);

/* The nonzeros i of a with mask[i] == keep (a->nnz entries), in a's
 * shape: a matrix split by a per-nonzero mask (the 2:4 part of a matrix
 * and its strays). */
spf_status matrix_part(const spf_matrix *a, const uint8_t *mask, uint8_t keep, spf_matrix **out);

/* a as a dense row-major host array of rows × cols floats (mem_free it;
 * NULL when out of memory): the weights the dense kernels take. */
float *matrix_dense(const spf_matrix *a);

/* Check the CSR invariants of raw arrays, and that every value is finite
 * (values may be NULL: pattern only); the message names the first
 * offending row and entry (row and column for a value). */
spf_status csr_check(int64_t rows, int64_t cols, int64_t nnz, const int64_t *row_ptr,
                     const int32_t *col_idx, const float *values);

#endif
