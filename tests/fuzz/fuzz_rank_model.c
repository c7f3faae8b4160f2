/* Fuzz target of the rank model parser (rank_model_parse, in memory). A
 * model that parses is then scored, so a tree the parser let through that
 * would loop or index out of bounds shows here; one that does not parse
 * must say where ("...: fuzz:<line>: ..."). */
#include "plan/rank_features.h"
#include "plan/rank_model.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rank_model *m = NULL;
    spf_status st = rank_model_parse((const char *)data, size, "fuzz", &m);
    if (st != SPF_OK) {
        if (m != NULL || !strstr(spf_last_error(), "fuzz:")) {
            fprintf(stderr, "parse error %s without its place: '%s'\n", spf_status_string(st),
                    spf_last_error());
            abort();
        }
        return 0;
    }
    /* Three feature vectors: zeros, ones and NaNs (a NaN goes right). */
    double features[3 * RANK_FEATURE_COUNT];
    for (int i = 0; i < RANK_FEATURE_COUNT; i++) {
        features[i] = 0.0;
        features[RANK_FEATURE_COUNT + i] = 1.0;
        features[2 * RANK_FEATURE_COUNT + i] = NAN;
    }
    int best[3];
    if (rank_model_top_k(m, features, 3, 3, best) != SPF_OK)
        abort();
    for (int i = 0; i < 3; i++) {
        if (best[i] < 0 || best[i] > 2)
            abort();
    }
    rank_model_free(m);
    return 0;
}
