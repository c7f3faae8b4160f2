/* Fuzz target of a .smtx pattern read with its values from a .npy
 * (spf_read_options.values_path). The input is the two files one after
 * the other: the .npy starts at the first "\x93NUMPY" (its magic), so a
 * seed is simply `cat pattern.smtx values.npy`; without the magic the
 * values file is empty. The checks are fuzz_reader.c's: a pair that reads
 * gives a valid matrix, one that does not gives a detail naming a file. */
#include "fuzz_input.h"
#include "spforge.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char NPY_MAGIC[] = "\x93NUMPY";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t split = size;
    size_t magic = sizeof NPY_MAGIC - 1;
    for (size_t i = 0; i + magic <= size; i++) {
        if (memcmp(data + i, NPY_MAGIC, magic) == 0) {
            split = i;
            break;
        }
    }
    char values[4096];
    snprintf(values, sizeof values, "%s", fuzz_write("values.npy", data + split, size - split));
    const char *pattern = fuzz_write("pattern.smtx", data, split);

    spf_read_options ro;
    spf_read_options_init(&ro);
    ro.max_bytes = FUZZ_READ_MAX_BYTES;
    ro.values_path = values;
    spf_matrix *a = NULL;
    spf_status st = spf_matrix_read(pattern, &ro, &a);
    if (st == SPF_OK && spf_matrix_validate(a) != SPF_OK) {
        fprintf(stderr, "reader accepted an invalid matrix: %s\n", spf_last_error());
        abort();
    }
    if (st != SPF_OK && (a != NULL || (!strstr(spf_last_error(), "pattern.smtx") &&
                                       !strstr(spf_last_error(), "values.npy")))) {
        fprintf(stderr, "error %s without a file in its detail, or with a matrix: '%s'\n",
                spf_status_string(st), spf_last_error());
        abort();
    }
    spf_matrix_free(a);
    return 0;
}
