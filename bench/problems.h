/* The problem sets of spforge-bench (docs BENCHMARKS.md "Problem sets"):
 *   sparsert20  the 20 SpMM shapes of SparseRT (paper 004) Table 1, uniform
 *               random pruning (default sparsity 0.9 and 0.95);
 *   large       BERT-base FFN / attention (N = 4096) and LLM layers
 *               (N ∈ {16, 64, 256, 2048}: decode to prefill), sparsity
 *               0.5, 0.7, 0.9, 0.95, 0.98;
 *   dlmc        the real DLMC weights under data/dlmc: ResNet-50 with N =
 *               H·W × {1, 8}, Transformer with N ∈ {256, 2048};
 *   graphs      the Matrix Market files under data/ with N ∈ {32, 128, 256}
 *               (generic kernel and cuSPARSE only);
 *   rank        64 seeded random shapes over LO-SpMM Table 3's ranges, the
 *               rank model's training problems (problems.c says which);
 *   structured  the BERT and LLM layers pruned with structure (issue 13):
 *               2:4, V:2:8 and V:2:16 with V ∈ {64, 128}, column
 *               vectors of 4, 8, 16 rows at sparsity 0.75 and 0.9, and
 *               2:4 and V128:2:8 with strays in one row of 256. */
#ifndef SPF_BENCH_PROBLEMS_H
#define SPF_BENCH_PROBLEMS_H

#include "spforge.h"

#include <stdint.h>

typedef struct bench_problem {
    char set[16];
    char name[320];    /* unique within a run; --filter matches it      */
    char use[16];      /* RN50, NLP, MbNetV1, BERT, LLM, dlmc, graph     */
    char path[1024];   /* file-backed problems; "" for generated ones   */
    int64_t m, k, n;   /* m, k are 0 until a file is read               */
    double sparsity;   /* the pruning target, or -1 for files           */
    int graph;         /* graphs: generic kernel and cuSPARSE only      */
    uint64_t seed;     /* generated matrices: the generator's seed (0: 1) */
    spf_generator kind;  /* generated matrices: UNIFORM (0) unless structured */
    int vector_length;   /* VNM: V (1 for N:M); COLUMN_VECTOR: its length  */
    int keep, group;     /* VNM: keep N of M columns                       */
    int64_t strays;      /* rows given a third nonzero in a run after the
                            generator (core/strays.h): 2:4 / V:N:M strays  */
} bench_problem;

typedef struct bench_selection {
    const double *sparsities; /* NULL: each set's defaults             */
    int sparsity_count;
    const char *filter;       /* substring of the name, or NULL         */
    int quick;                /* a small subset (the device check)      */
    const char *data_dir;     /* the extracted data/ folder             */
} bench_selection;

/* The problems of one set, in a stable order; *out is freed with free().
 * SPF_ERR_INVALID_ARGUMENT for an unknown set, SPF_ERR_IO when a data-backed
 * set finds no files. */
spf_status problems_list(const char *set, const bench_selection *sel, bench_problem **out,
                         int *count);

/* Build (generate or read) the matrix of a problem; fills m and k. */
spf_status problem_matrix(bench_problem *p, spf_matrix **out);

#endif
