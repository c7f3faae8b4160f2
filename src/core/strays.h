/* Stray nonzeros added to a structured matrix: what a 2:4 or V:N:M
 * pruning leaves behind when a few weights are kept outside the pattern
 * (issue 13: the structured strategy must still take such a matrix). For
 * the tests and the bench's structured set. */
#ifndef SPF_CORE_STRAYS_H
#define SPF_CORE_STRAYS_H

#include "spforge.h"

/* a with `count` rows, spread evenly (row i·rows / count), each given
 * nonzeros of value 0.5 in its fullest run of four columns until it holds
 * three (three in run 0 for an empty row): a row that is then neither
 * 2:4 nor V:2:M. A new matrix; a is left alone. */
spf_status matrix_crowd_rows(const spf_matrix *a, int64_t count, spf_matrix **out);

#endif
