/* Outputs that must not share memory with their inputs. */
#ifndef SPF_CORE_OVERLAP_H
#define SPF_CORE_OVERLAP_H

#include "spforge.h"

#include <stdint.h>

/* A product C = A·B (+ bias) reads B and bias while it writes C, so a C
 * that shares a byte with either gives wrong numbers without an error.
 * SPF_ERR_INVALID_ARGUMENT from func naming both byte ranges when
 * [c, c + c_bytes) overlaps [b, b + b_bytes) or [bias, bias + bias_bytes)
 * (bias may be NULL); b and bias may overlap each other. Device pointers
 * share one address space with the host (UVA), so GPU buffers are checked
 * the same way. */
spf_status output_disjoint(const char *func, const void *c, uint64_t c_bytes, const void *b,
                           uint64_t b_bytes, const void *bias, uint64_t bias_bytes);

#endif
