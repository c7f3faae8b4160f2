/* Fuzz target of one matrix reader: the input is a whole file, read by
 * spf_matrix_read as input.<FUZZ_EXT> (built three times: mtx, smtx, npy).
 *
 * Besides the sanitizers, two properties of io.h are checked, each an
 * abort (a finding) when broken: a file that reads must give a matrix
 * that passes spf_matrix_validate, and a file that does not must give a
 * status with a detail naming the file. A file rejected for a repeated
 * entry is read again with SPF_DUPLICATES_SUM, and a .npy that reads is
 * read again pruned to sparsity 0.5, so those paths are fuzzed too. */
#include "fuzz_input.h"
#include "spforge.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FUZZ_EXT
#error "FUZZ_EXT (the file extension: \"mtx\", \"smtx\" or \"npy\") must be defined"
#endif

static void check_read(const char *path, const spf_read_options *ro, spf_status *status)
{
    spf_matrix *a = NULL;
    spf_status st = spf_matrix_read(path, ro, &a);
    if (st == SPF_OK) {
        if (spf_matrix_validate(a) != SPF_OK) {
            fprintf(stderr, "reader accepted an invalid matrix: %s\n", spf_last_error());
            abort();
        }
    } else if (a != NULL || !strstr(spf_last_error(), "input." FUZZ_EXT)) {
        fprintf(stderr, "error %s without the file in its detail, or with a matrix: '%s'\n",
                spf_status_string(st), spf_last_error());
        abort();
    }
    spf_matrix_free(a);
    *status = st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write("input." FUZZ_EXT, data, size);
    spf_read_options ro;
    spf_read_options_init(&ro);
    ro.max_bytes = FUZZ_READ_MAX_BYTES;
    spf_status st;
    check_read(path, &ro, &st);
    if (st == SPF_ERR_INVALID_MATRIX) {
        ro.duplicates = SPF_DUPLICATES_SUM;
        check_read(path, &ro, &st);
    }
    if (st == SPF_OK && strcmp(FUZZ_EXT, "npy") == 0) {
        ro.npy_sparsity = 0.5;
        check_read(path, &ro, &st);
    }
    return 0;
}
