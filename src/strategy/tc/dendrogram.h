/* Step I of the data-affinity reordering (affinity.h; paper 002 §3.2,
 * Algorithm 1 lines 1-8), dendrogram construction as in Rabbit Order
 * (paper 002 ref. [32], Arai et al., IPDPS 2016, §III), which the paper
 * follows: every vertex, in ascending degree (ties by index), looks at the
 * communities its community has edges to and merges into the one of
 * largest modularity gain ΔQ (Eq. 3.2) when that gain is positive; the
 * merge makes it a child of that community's root in the dendrogram.
 *
 * Only the vertex whose turn it is ever merges, so it is always a root
 * then; the communities that merged into it have left it their edges,
 * compacted to one entry per neighbouring community when each had its
 * turn, and it gathers them with its own. Rabbit Order calls this
 * incremental aggregation: every edge is read once from A and then carried
 * up in compacted lists, near-linear in practice. The pass is sequential,
 * as in the paper (Rabbit Order's parallel merging is not attempted). */
#ifndef SPF_STRATEGY_TC_DENDROGRAM_H
#define SPF_STRATEGY_TC_DENDROGRAM_H

#include "strategy/tc/affinity_graph.h"

/* A neighbouring community of a merged vertex and the edge weight to it. */
typedef struct dendrogram_link {
    int64_t w;
    int32_t to;
} dendrogram_link;

typedef struct dendrogram {
    int64_t n;                 /* vertices                                              */
    int32_t *up;               /* towards the community's root; up[v] == v at a root    */
    int64_t *k;                /* at a root: the community's degree (Eq. 3.2's k)       */
    int32_t *child, *sibling;  /* first child (latest merged), next sibling; -1: none   */
    dendrogram_link **list;    /* a merged vertex's compacted edges until its root's
                                  turn; NULL once gathered or when never needed          */
    int64_t *list_len;
    int64_t *acc;              /* zero between turns: the weight to each root           */
    int32_t *touched;          /* the roots acc holds weight for                        */
    unsigned char *done;       /* turn taken                                            */
} dendrogram;

/* Build the dendrogram of g (its column lists holding rows as
 * themselves). d is zeroed first and owns its arrays (dendrogram_free). */
spf_status dendrogram_build(const affinity_graph *g, dendrogram *d);

/* The non-empty rows of g's matrix in DFS pre-order of the dendrogram
 * (Algorithm 1 line 11): top-level roots ascending, each vertex before its
 * children, children in the order they merged. rows: a->rows int32,
 * caller-owned; *count: how many were written. */
spf_status dendrogram_rows(const affinity_graph *g, const dendrogram *d, int32_t *rows,
                           int64_t *count);

void dendrogram_free(dendrogram *d); /* accepts a zeroed dendrogram */

#endif
