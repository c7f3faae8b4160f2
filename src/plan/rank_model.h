/* The rank model of LO-SpMM §3.5: a tree ensemble (LambdaMART, trained by
 * scripts/train_rank_model.py with LightGBM's lambdarank objective) that
 * scores configurations of one problem from their features
 * (rank_features.h); only the order of the scores means anything, and the
 * top K go on to the proxies (§5).
 *
 * The model file (version 1), plain text, one item per line; '#' lines and
 * blank lines are comments, anywhere:
 *
 *   spforge-rank-model 1
 *   features <count> <name> ...       rank_feature_names, same count, same order
 *   trees <T>
 *   tree <nodes>                      T times, each followed by its nodes:
 *   <i> split <feature> <threshold> <left> <right>
 *   <i> leaf <value>
 *   end
 *
 * Node lines are numbered 0, 1, ... within a tree (at most 127 nodes, so
 * at most 64 leaves: rank_model.c scores a tree through a 64-bit set of
 * its leaves; LightGBM's num_leaves ≤ 64), node 0 is the root; a
 * split sends a feature vector x to <left> when x[feature] <= threshold
 * (a NaN goes right), else to <right>; children come after their parent
 * (so a tree has no cycle) and every node but the root is the child of
 * exactly one split. The score is the sum over trees of the leaf reached.
 * Numbers are C decimal (strtod / strtol), thresholds and values finite;
 * written so they round-trip (Python's repr, %.17g), the C scores equal
 * LightGBM's bit for bit (tests/fixtures/rank). Scoring 756 configurations
 * with the committed model (60 trees of 12 leaves) takes 0.25–0.5 ms on
 * the 2-core development host. */
#ifndef SPF_PLAN_RANK_MODEL_H
#define SPF_PLAN_RANK_MODEL_H

#include "spforge.h"

#include <stddef.h>

/* The format version this parser reads, and its bounds on a model. */
#define RANK_MODEL_VERSION 1
#define RANK_MODEL_MAX_TREES 10000
#define RANK_MODEL_MAX_NODES 127 /* per tree */

typedef struct rank_model rank_model;

/* The features a model scores, by name, in order: a model file's
 * `features` line must list exactly these. LO-SpMM's search scores the
 * rank_feature_names (rank_schema_search); the structured strategy's
 * predictor its own (sp_predict.h). */
typedef struct rank_schema {
    const char *const *names;
    int count;
} rank_schema;
extern const rank_schema rank_schema_search;

/* Parse a model of schema s from text (len bytes, need not be
 * NUL-terminated). Errors are SPF_ERR_PARSE with "<origin>:<line>:
 * expected <what>, got '<token>'". *out is NULL on failure; free it with
 * rank_model_free. rank_model_parse: of rank_schema_search. */
spf_status rank_model_parse_as(const rank_schema *s, const char *text, size_t len,
                               const char *origin, rank_model **out);
spf_status rank_model_parse(const char *text, size_t len, const char *origin, rank_model **out);

/* The model of schema s read from the file at path (origin of its
 * messages); rank_model_read: of rank_schema_search. */
spf_status rank_model_read_as(const rank_schema *s, const char *path, rank_model **out);
spf_status rank_model_read(const char *path, rank_model **out);

/* A process's model of one schema, loaded on first use and kept
 * (thread-safe; never free it): the file named by the environment
 * variable env when that is set and not empty, else the text embedded in
 * the library at build time (origin names it in messages). */
typedef struct rank_model_source {
    const rank_schema *schema;
    const char *env;
    const unsigned char *text;
    const size_t *size;
    const char *origin;
} rank_model_source;
spf_status rank_model_load(const rank_model_source *src, rank_model **slot, const rank_model **out);

/* The search's model (rank_model_load): the file named by
 * SPFORGE_RANK_MODEL, else models/rank_model.txt as embedded. A file that
 * fails to load is an error, not a silent fall-back to the embedded
 * model; a failed load is retried on the next call, a successful one is
 * final (later changes of the variable are not seen). */
spf_status rank_model_default(const rank_model **out);

/* The model's score of one configuration's features (its schema's count;
 * rank_features for the search's): higher = predicted faster. */
double rank_model_score(const rank_model *m, const double *features);

/* The indices of the k best-scored of count feature vectors (features:
 * count × the schema's count doubles, row-major), best first, ties by the
 * smaller index: best_first receives min(k, count) indices (caller-owned).
 * count ≥ 0, k ≥ 1. */
spf_status rank_model_top_k(const rank_model *m, const double *features, int count, int k,
                            int *best_first);

void rank_model_free(rank_model *m); /* accepts NULL */

#endif
