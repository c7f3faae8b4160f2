/* Problem sets of spforge-bench; see problems.h and BENCHMARKS.md. */
#define _DEFAULT_SOURCE /* scandir, alphasort, DT_* */
#include "problems.h"

#include "core/error.h"
#include "core/rng.h"
#include "core/strays.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT_OF(array) ((int)(sizeof(array) / sizeof(array)[0]))

enum { SHAPE_MAX_NS = 4 };

typedef struct shape {
    const char *use;
    int64_t m, k;
    int64_t n[SHAPE_MAX_NS]; /* one problem per N; 0 ends a shorter list */
} shape;

/* SparseRT (paper 004) Table 1: ResNet-50, Transformer and MobileNetV1
 * layers, M×K weights with N = batch × spatial size or tokens. */
static const shape sparsert20[] = {
    {"RN50", 64, 256, {3136}},     {"RN50", 256, 64, {3136}},     {"RN50", 128, 512, {784}},
    {"RN50", 512, 128, {784}},     {"RN50", 256, 1024, {196}},    {"RN50", 1024, 256, {196}},
    {"RN50", 512, 2048, {49}},     {"RN50", 2048, 512, {49}},     {"NLP", 2048, 512, {256}},
    {"NLP", 512, 2048, {256}},     {"NLP", 512, 512, {256}},      {"MbNetV1", 64, 32, {12544}},
    {"MbNetV1", 128, 64, {3136}},  {"MbNetV1", 128, 128, {3136}}, {"MbNetV1", 256, 128, {784}},
    {"MbNetV1", 256, 256, {784}},  {"MbNetV1", 512, 256, {196}},  {"MbNetV1", 512, 512, {196}},
    {"MbNetV1", 1024, 512, {49}},  {"MbNetV1", 1024, 1024, {49}},
};
/* --quick: one shape of each kind (a 1×1 conv, a long-K conv, NLP, MobileNet). */
static const int sparsert20_quick[] = {0, 4, 8, 13};

/* BENCHMARKS.md: BERT-base FFN and attention at N = 4096 tokens; LLM layers
 * from decode (N = 16 tokens) to prefill (N = 2048). */
#define LLM_NS {16, 64, 256, 2048}
static const shape large[] = {
    {"BERT", 768, 768, {4096}},    {"BERT", 3072, 768, {4096}},  {"BERT", 768, 3072, {4096}},
    {"LLM", 4096, 4096, LLM_NS},   {"LLM", 11008, 4096, LLM_NS}, {"LLM", 4096, 11008, LLM_NS},
};
/* --quick: the two smaller BERT layers and LLM 4096×4096 at its first N
 * (decode; the large layers' plans and references take the longest). */
static const int large_quick[] = {0, 1, 3};

/* The structured set (issue 13): the BERT and LLM layers of `large`
 * pruned with a pattern each. */
typedef struct pattern {
    const char *name;
    spf_generator kind;
    int vector_length, keep, group;
    int stray_share; /* one row in this many crowded (core/strays.h); 0: none */
} pattern;
static const pattern structured_patterns[] = {
    {"2:4", SPF_GEN_VNM, 1, 2, 4, 0},
    {"V64:2:8", SPF_GEN_VNM, 64, 2, 8, 0},
    {"V128:2:8", SPF_GEN_VNM, 128, 2, 8, 0},
    {"V64:2:16", SPF_GEN_VNM, 64, 2, 16, 0},
    {"V128:2:16", SPF_GEN_VNM, 128, 2, 16, 0},
    {"colvec4", SPF_GEN_COLUMN_VECTOR, 4, 0, 0, 0},
    {"colvec8", SPF_GEN_COLUMN_VECTOR, 8, 0, 0, 0},
    {"colvec16", SPF_GEN_COLUMN_VECTOR, 16, 0, 0, 0},
    /* strays in one row of 256: the structured kernel and a CSR pass */
    {"2:4 strays", SPF_GEN_VNM, 1, 2, 4, 256},
    {"V128:2:8 strays", SPF_GEN_VNM, 128, 2, 8, 256},
};
static const double colvec_sparsities[] = {0.75, 0.9};
/* The structured set's LLM N: decode at batch 1 too, and N = 512, where
 * the 2:4 target over dense begins. */
static const int64_t structured_llm_ns[] = {1, 16, 64, 256, 512, 2048};
/* --quick: 2:4 and V128:2:8 on LLM 4096×4096 at N = 16 */
static const int structured_quick_patterns[] = {0, 2};

static const double sparsert20_sparsities[] = {0.9, 0.95};
static const double large_sparsities[] = {0.5, 0.7, 0.9, 0.95, 0.98};
static const double dlmc_sparsities[] = {0.9, 0.95};

/* A growing list of problems. */
typedef struct plist {
    bench_problem *items;
    int count, cap;
    const bench_selection *sel;
} plist;

static spf_status plist_add(plist *l, const bench_problem *p)
{
    if (l->sel->filter && !strstr(p->name, l->sel->filter))
        return SPF_OK;
    if (l->count == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        bench_problem *grown = realloc(l->items, (size_t)cap * sizeof *grown);
        if (!grown)
            return SPF_ERR_OUT_OF_MEMORY;
        l->items = grown;
        l->cap = cap;
    }
    l->items[l->count++] = *p;
    return SPF_OK;
}

static int in_list(const int *list, int count, int value)
{
    for (int i = 0; i < count; ++i)
        if (list[i] == value)
            return 1;
    return 0;
}

static void sparsities_of(const bench_selection *sel, const double *defaults, int ndefaults,
                          const double **out, int *count)
{
    static const double quick_sparsity = 0.9;
    if (sel->sparsities) {
        *out = sel->sparsities;
        *count = sel->sparsity_count;
    } else if (sel->quick) {
        *out = &quick_sparsity;
        *count = 1;
    } else {
        *out = defaults;
        *count = ndefaults;
    }
}

/* Sparsity outermost, then shapes, then each shape's N (--quick: its
 * first N only). */
static spf_status add_shapes(plist *l, const char *set, const shape *shapes, int nshapes,
                             const int *quick, int nquick, const double *defaults, int ndefaults)
{
    const double *sp;
    int nsp;
    sparsities_of(l->sel, defaults, ndefaults, &sp, &nsp);
    for (int s = 0; s < nsp; ++s)
        for (int i = 0; i < nshapes; ++i) {
            if (l->sel->quick && !in_list(quick, nquick, i))
                continue;
            for (int j = 0; j < SHAPE_MAX_NS && shapes[i].n[j] > 0; ++j) {
                if (l->sel->quick && j > 0)
                    break;
                bench_problem p = {.m = shapes[i].m, .k = shapes[i].k, .n = shapes[i].n[j],
                                   .sparsity = sp[s]};
                snprintf(p.set, sizeof p.set, "%s", set);
                snprintf(p.use, sizeof p.use, "%s", shapes[i].use);
                snprintf(p.name, sizeof p.name, "%s %lldx%lld N=%lld s%g", shapes[i].use,
                         (long long)p.m, (long long)p.k, (long long)p.n, sp[s]);
                spf_status st = plist_add(l, &p);
                if (st != SPF_OK)
                    return st;
            }
        }
    return SPF_OK;
}

/* Every pattern × the BERT and LLM shapes × their N (the LLM shapes' from
 * N = 1); column vectors at
 * each sparsity (--sparsity, or 0.75 and 0.9), V:N:M at its own 1 - N/M. */
static spf_status add_structured(plist *l)
{
    const double *sp;
    int nsp;
    sparsities_of(l->sel, colvec_sparsities, COUNT_OF(colvec_sparsities), &sp, &nsp);
    for (int pi = 0; pi < COUNT_OF(structured_patterns); ++pi) {
        const pattern *pat = &structured_patterns[pi];
        int vnm = pat->kind == SPF_GEN_VNM;
        if (l->sel->quick && !in_list(structured_quick_patterns,
                                      COUNT_OF(structured_quick_patterns), pi))
            continue;
        for (int s = 0; s < (vnm ? 1 : nsp); ++s)
            for (int i = 0; i < COUNT_OF(large); ++i) {
                if (l->sel->quick && i != 3)
                    continue;
                const int llm = strcmp(large[i].use, "LLM") == 0;
                const int64_t *ns = llm ? structured_llm_ns : large[i].n;
                const int nn = llm ? COUNT_OF(structured_llm_ns) : SHAPE_MAX_NS;
                for (int j = 0; j < nn && ns[j] > 0; ++j) {
                    if (l->sel->quick && ns[j] != 16)
                        continue;
                    bench_problem p = {.m = large[i].m, .k = large[i].k, .n = ns[j],
                                       .kind = pat->kind, .vector_length = pat->vector_length,
                                       .keep = pat->keep, .group = pat->group,
                                       .strays = pat->stray_share
                                                     ? large[i].m / pat->stray_share : 0};
                    p.sparsity = vnm ? 1.0 - (double)pat->keep / pat->group : sp[s];
                    snprintf(p.set, sizeof p.set, "structured");
                    snprintf(p.use, sizeof p.use, "%s", large[i].use);
                    if (vnm)
                        snprintf(p.name, sizeof p.name, "%s %lldx%lld N=%lld %s", large[i].use,
                                 (long long)p.m, (long long)p.k, (long long)p.n, pat->name);
                    else
                        snprintf(p.name, sizeof p.name, "%s %lldx%lld N=%lld %s s%g",
                                 large[i].use, (long long)p.m, (long long)p.k, (long long)p.n,
                                 pat->name, sp[s]);
                    spf_status st = plist_add(l, &p);
                    if (st != SPF_OK)
                        return st;
                }
            }
    }
    return SPF_OK;
}

/* The rank model's training problems: LO-SpMM Table 3's shape ranges (M
 * and K in 2^6 .. 2^11), with N widened to 2^5 .. 2^12 because the dlmc
 * and sparsert20 sets run N from 49 to 25 088, and sparsity drawn from
 * {0.7, 0.8, 0.9, 0.95, 0.98}. M, K and N are log-uniform, rounded to a
 * multiple of 8 (N: 1 in 4 left odd, as real N = H·W often is). Seeded,
 * so a list is the same on every machine; each matrix gets its own seed. */
enum { RANK_PROBLEMS = 64, RANK_QUICK = 4 };

static int64_t log_uniform(rng *r, int lo_exp, int hi_exp, int64_t multiple)
{
    double x = exp2(lo_exp + (hi_exp - lo_exp) * rng_uniform(r));
    int64_t v = (int64_t)(x / (double)multiple + 0.5) * multiple;
    return v < multiple ? multiple : v;
}

static spf_status add_rank(plist *l)
{
    static const double sparsities[] = {0.7, 0.8, 0.9, 0.95, 0.98};
    rng r;
    rng_seed(&r, 20261122);
    int count = l->sel->quick ? RANK_QUICK : RANK_PROBLEMS;
    for (int i = 0; i < count; ++i) {
        bench_problem p = {.m = log_uniform(&r, 6, 11, 8), .k = log_uniform(&r, 6, 11, 8)};
        p.n = log_uniform(&r, 5, 12, rng_below(&r, 4) == 0 ? 1 : 8);
        p.sparsity = sparsities[rng_below(&r, 5)];
        p.seed = 1000 + (uint64_t)i;
        snprintf(p.set, sizeof p.set, "rank");
        snprintf(p.use, sizeof p.use, "rank");
        snprintf(p.name, sizeof p.name, "rank%02d %lldx%lld N=%lld s%g", i, (long long)p.m,
                 (long long)p.k, (long long)p.n, p.sparsity);
        spf_status st = plist_add(l, &p);
        if (st != SPF_OK)
            return st;
    }
    return SPF_OK;
}

static int is_smtx(const struct dirent *e)
{
    size_t len = strlen(e->d_name);
    return len > 5 && strcmp(e->d_name + len - 5, ".smtx") == 0;
}

/* H·W of a ResNet-50 layer from rn50_batchsizes.txt ("name,HW" lines), 0 if absent. */
static int64_t rn50_spatial(const char *data_dir, const char *layer)
{
    char path[1200], line[512];
    snprintf(path, sizeof path, "%s/dlmc/rn50_batchsizes.txt", data_dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int64_t hw = 0;
    size_t len = strlen(layer);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, layer, len) == 0 && line[len] == ',') {
            hw = strtoll(line + len + 1, NULL, 10);
            break;
        }
    fclose(f);
    return hw;
}

/* One model's folder at one sparsity; N from `ns` (Transformer) or from the
 * layer's H·W × {1, 8} (ResNet-50). */
static spf_status add_dlmc_dir(plist *l, const char *model, double sparsity, const int64_t *ns,
                               int nn, int *found)
{
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/dlmc/%s/magnitude_pruning/%g", l->sel->data_dir, model, sparsity);
    struct dirent **names = NULL;
    int count = scandir(dir, &names, is_smtx, alphasort);
    spf_status st = SPF_OK;
    for (int i = 0; i < count; ++i) {
        char stem[256];
        snprintf(stem, sizeof stem, "%.*s", (int)(strlen(names[i]->d_name) - 5), names[i]->d_name);
        int64_t hw = ns ? 0 : rn50_spatial(l->sel->data_dir, stem);
        int64_t rn50_ns[2] = {hw, 8 * hw};
        const int64_t *cols = ns ? ns : rn50_ns;
        int ncols = ns ? nn : (hw > 0 ? 2 : 0);
        for (int j = 0; j < ncols && st == SPF_OK; ++j) {
            /* --quick: a long-K 3×3 conv at batch 1 and one Transformer FFN. */
            if (l->sel->quick && !(ns ? strstr(stem, "layer_0_ffn_conv1") && j == 0
                                      : strcmp(stem, "bottleneck_2_block_group3_1_1") == 0 && j == 0))
                continue;
            bench_problem p = {.n = cols[j], .sparsity = sparsity};
            snprintf(p.set, sizeof p.set, "dlmc");
            snprintf(p.use, sizeof p.use, "%s", ns ? "NLP" : "RN50");
            if (snprintf(p.path, sizeof p.path, "%s/%s", dir, names[i]->d_name) >=
                (int)sizeof p.path)
                continue; /* a path too long to hold */
            snprintf(p.name, sizeof p.name, "%s/%g/%s N=%lld", model, sparsity, stem,
                     (long long)cols[j]);
            st = plist_add(l, &p);
            ++*found;
        }
        free(names[i]);
    }
    free(names);
    return st;
}

static spf_status add_dlmc(plist *l)
{
    static const int64_t transformer_ns[] = {256, 2048};
    const double *sp;
    int nsp, found = 0;
    sparsities_of(l->sel, dlmc_sparsities, COUNT_OF(dlmc_sparsities), &sp, &nsp);
    for (int s = 0; s < nsp; ++s) {
        spf_status st = add_dlmc_dir(l, "rn50", sp[s], NULL, 0, &found);
        if (st == SPF_OK)
            st = add_dlmc_dir(l, "transformer", sp[s], transformer_ns, 2, &found);
        if (st != SPF_OK)
            return st;
    }
    if (!found)
        return FAIL(SPF_ERR_IO, "no DLMC files under %s/dlmc", l->sel->data_dir);
    return SPF_OK;
}

static int compare_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every .mtx below dir (DLMC excluded), as paths relative to the data folder. */
static spf_status collect_mtx(const char *root, const char *rel, char ***paths, int *count, int *cap)
{
    char dir[1200];
    snprintf(dir, sizeof dir, "%s%s%s", root, *rel ? "/" : "", rel);
    DIR *d = opendir(dir);
    if (!d)
        return SPF_OK;
    spf_status st = SPF_OK;
    struct dirent *e;
    while (st == SPF_OK && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || (!*rel && strcmp(e->d_name, "dlmc") == 0))
            continue;
        char sub[1024];
        snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
        size_t len = strlen(e->d_name);
        if (e->d_type == DT_DIR) {
            st = collect_mtx(root, sub, paths, count, cap);
        } else if (len > 4 && strcmp(e->d_name + len - 4, ".mtx") == 0) {
            if (*count == *cap) {
                *cap = *cap ? 2 * *cap : 64;
                char **grown = realloc(*paths, (size_t)*cap * sizeof *grown);
                if (!grown) {
                    st = FAIL(SPF_ERR_OUT_OF_MEMORY, "graph list");
                    break;
                }
                *paths = grown;
            }
            (*paths)[(*count)++] = strdup(sub);
        }
    }
    closedir(d);
    return st;
}

static spf_status add_graphs(plist *l)
{
    static const int64_t ns[] = {32, 128, 256};
    char **paths = NULL;
    int count = 0, cap = 0;
    spf_status st = collect_mtx(l->sel->data_dir, "", &paths, &count, &cap);
    if (st == SPF_OK && count == 0)
        st = FAIL(SPF_ERR_IO, "no .mtx files under %s", l->sel->data_dir);
    if (st == SPF_OK)
        qsort(paths, (size_t)count, sizeof *paths, compare_str);
    for (int i = 0; i < count; ++i) {
        /* --quick: the first two graphs at N = 128. */
        for (int j = 0; j < 3 && st == SPF_OK && paths[i]; ++j) {
            if (l->sel->quick && (i >= 2 || ns[j] != 128))
                continue;
            bench_problem p = {.n = ns[j], .sparsity = -1, .graph = 1};
            snprintf(p.set, sizeof p.set, "graphs");
            snprintf(p.use, sizeof p.use, "graph");
            snprintf(p.path, sizeof p.path, "%s/%s", l->sel->data_dir, paths[i]);
            snprintf(p.name, sizeof p.name, "%.*s N=%lld", (int)(strlen(paths[i]) - 4), paths[i],
                     (long long)ns[j]);
            st = plist_add(l, &p);
        }
        free(paths[i]);
    }
    free(paths);
    return st;
}

spf_status problems_list(const char *set, const bench_selection *sel, bench_problem **out,
                         int *count)
{
    plist l = {.sel = sel};
    spf_status st;
    *out = NULL;
    *count = 0;
    if (strcmp(set, "sparsert20") == 0)
        st = add_shapes(&l, set, sparsert20, COUNT_OF(sparsert20), sparsert20_quick,
                        COUNT_OF(sparsert20_quick), sparsert20_sparsities,
                        COUNT_OF(sparsert20_sparsities));
    else if (strcmp(set, "large") == 0)
        st = add_shapes(&l, set, large, COUNT_OF(large), large_quick, COUNT_OF(large_quick),
                        large_sparsities, COUNT_OF(large_sparsities));
    else if (strcmp(set, "dlmc") == 0)
        st = add_dlmc(&l);
    else if (strcmp(set, "graphs") == 0)
        st = add_graphs(&l);
    else if (strcmp(set, "rank") == 0)
        st = add_rank(&l);
    else if (strcmp(set, "structured") == 0)
        st = add_structured(&l);
    else
        st = FAIL(SPF_ERR_INVALID_ARGUMENT, "unknown problem set \"%s\" (sparsert20, large, "
                  "dlmc, graphs, rank, structured)", set);
    if (st != SPF_OK) {
        free(l.items);
        return st;
    }
    *out = l.items;
    *count = l.count;
    return SPF_OK;
}

spf_status problem_matrix(bench_problem *p, spf_matrix **out)
{
    spf_status st;
    if (p->path[0]) {
        st = spf_matrix_read(p->path, NULL, out);
    } else {
        spf_gen_options o;
        spf_gen_options_init(&o);
        o.kind = p->kind;
        if (p->kind == SPF_GEN_VNM || p->kind == SPF_GEN_COLUMN_VECTOR)
            o.vector_length = p->vector_length;
        if (p->kind == SPF_GEN_VNM)
            o.n = p->keep, o.m = p->group;
        o.rows = p->m;
        o.cols = p->k;
        o.sparsity = p->sparsity;
        o.seed = p->seed ? p->seed : 1;
        st = spf_matrix_generate(&o, out);
        spf_matrix *crowded = NULL;
        if (st == SPF_OK && p->strays > 0) {
            st = matrix_crowd_rows(*out, p->strays, &crowded);
            spf_matrix_free(*out);
            *out = crowded;
        }
    }
    if (st == SPF_OK) {
        p->m = spf_matrix_rows(*out);
        p->k = spf_matrix_cols(*out);
    }
    return st;
}
