/* Internal interface between the generator dispatcher (generate.c) and the
 * generators kept in files of their own. */
#ifndef SPF_CORE_GENERATE_H
#define SPF_CORE_GENERATE_H

#include "core/rng.h"
#include "spforge.h"

/* The R-MAT pattern of validated options, drawn from r (values left unset). */
spf_status gen_rmat(const spf_gen_options *o, rng *r, spf_matrix **out);

#endif
