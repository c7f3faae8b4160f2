#include "plan/rank_model.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/file.h"
#include "plan/rank_features.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The trees are scored the QuickScorer way (Lucchese et al., SIGIR 2015):
 * a tree's leaves are numbered left to right and the leaves x may still
 * reach are a 64-bit set, all at first; every split whose test x fails
 * (x[feature] > threshold, or NaN: x goes right) removes the leaves of its
 * left subtree, and the leftmost leaf left is the one a walk from the root
 * would reach. Every split of a tree is tested, but the tests do not
 * depend on each other, so there is no chain of dependent loads and no
 * branch on the data; rank_model_top_k runs each test over all vectors in
 * a row. */
typedef struct rank_split {
    double threshold;
    uint64_t keep;   /* the leaves still reachable when x fails the test:
                        all but the left subtree's                        */
    int32_t feature;
} rank_split;

typedef struct rank_tree {
    int32_t first_split, splits; /* into rank_model.splits */
    int32_t first_leaf;          /* into rank_model.leaves, left to right */
} rank_tree;

struct rank_model {
    int32_t feature_count; /* its schema's */
    int32_t tree_count;
    rank_tree *trees;
    rank_split *splits; /* split_count, tree after tree */
    double *leaves;     /* leaf_count, tree after tree  */
    size_t split_count, split_cap, leaf_count, leaf_cap;
};

/* One tree's nodes as the text gives them (a leaf: feature −1, value its
 * score; a split: value its threshold), before conversion. */
typedef struct text_node {
    double value;
    int32_t feature, left, right;
} text_node;

/* models/rank_model.txt, generated into the build by cmake/embed_text.cmake. */
extern const unsigned char rank_model_embedded[];
extern const size_t rank_model_embedded_size;

/* ---- the parser: lines of blank-separated tokens, each error naming
 * origin:line, what was expected and what came */

typedef struct cursor {
    const char *p, *end;      /* the text not yet read                      */
    const char *line, *eol;   /* the current line (without its newline)     */
    const char *origin;
    long line_no;             /* 1-based number of the current line; at the
                                 end of the text, the line after the last   */
    int eof;                  /* next_line found no more content            */
} cursor;

enum { TOKEN_CAP = 64 };

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* Advance to the next line that is not blank or a '#' comment; 0 at the end
 * of the text. */
static int next_line(cursor *c)
{
    while (c->p < c->end) {
        const char *nl = memchr(c->p, '\n', (size_t)(c->end - c->p));
        c->line = c->p;
        c->eol = nl ? nl : c->end;
        c->p = nl ? nl + 1 : c->end;
        c->line_no++;
        const char *q = c->line;
        while (q < c->eol && is_blank(*q))
            q++;
        if (q < c->eol && *q != '#')
            return 1;
    }
    if (!c->eof)
        c->line_no++;
    c->line = c->eol = c->end;
    c->eof = 1;
    return 0;
}

/* The next token of the current line: its start and length (0 at the end
 * of the line). */
static size_t next_token(cursor *c, const char **tok)
{
    while (c->line < c->eol && is_blank(*c->line))
        c->line++;
    const char *start = c->line;
    while (c->line < c->eol && !is_blank(*c->line))
        c->line++;
    *tok = start;
    return (size_t)(c->line - start);
}

static spf_status expected(const cursor *c, const char *what, const char *tok, size_t len)
{
    if (len == 0)
        return FAIL(SPF_ERR_PARSE, "%s:%ld: expected %s, got %s", c->origin, c->line_no, what,
                    c->eof ? "end of file" : "end of line");
    /* Quote at most 40 bytes, and nothing past a NUL. */
    size_t cut = len < 40 ? len : 40;
    const char *nul = memchr(tok, '\0', cut);
    int shown = (int)(nul ? (size_t)(nul - tok) : cut);
    return FAIL(SPF_ERR_PARSE, "%s:%ld: expected %s, got '%.*s%s'", c->origin, c->line_no, what,
                shown, tok, (size_t)shown < len ? "..." : "");
}

/* The current line must have ended. */
static spf_status end_line(cursor *c)
{
    const char *tok;
    size_t len = next_token(c, &tok);
    return len ? expected(c, "end of line", tok, len) : SPF_OK;
}

/* Move to the next content line; its absence is an error naming what. */
static spf_status need_line(cursor *c, const char *what)
{
    return next_line(c) ? SPF_OK : expected(c, what, NULL, 0);
}

static spf_status keyword(cursor *c, const char *word)
{
    const char *tok;
    size_t len = next_token(c, &tok);
    if (len != strlen(word) || memcmp(tok, word, len) != 0) {
        char what[40];
        snprintf(what, sizeof what, "'%s'", word);
        return expected(c, what, tok, len);
    }
    return SPF_OK;
}

/* The next token as a NUL-terminated string in buf (for strtol / strtod),
 * its text in *tok and its length in *len; 0 when it is empty or does not
 * fit, which the caller reports with expected(). */
static int token_string(cursor *c, char buf[TOKEN_CAP], const char **tok, size_t *len)
{
    *len = next_token(c, tok);
    if (*len == 0 || *len >= TOKEN_CAP)
        return 0;
    memcpy(buf, *tok, *len);
    buf[*len] = '\0';
    return 1;
}

/* A decimal integer token in [lo, hi]. */
static spf_status integer(cursor *c, const char *what, long lo, long hi, long *out)
{
    const char *tok;
    size_t len;
    char buf[TOKEN_CAP], *endp;
    if (!token_string(c, buf, &tok, &len))
        return expected(c, what, tok, len);
    errno = 0;
    long v = strtol(buf, &endp, 10);
    if (endp != buf + len || errno != 0 || v < lo || v > hi)
        return expected(c, what, tok, len);
    *out = v;
    return SPF_OK;
}

/* A finite decimal real token. */
static spf_status real(cursor *c, const char *what, double *out)
{
    const char *tok;
    size_t len;
    char buf[TOKEN_CAP], *endp;
    if (!token_string(c, buf, &tok, &len))
        return expected(c, what, tok, len);
    double v = strtod(buf, &endp);
    if (endp != buf + len || !isfinite(v))
        return expected(c, what, tok, len);
    *out = v;
    return SPF_OK;
}

/* "spforge-rank-model 1" and the feature list. */
const rank_schema rank_schema_search = {rank_feature_names, RANK_FEATURE_COUNT};

static spf_status parse_header(cursor *c, const rank_schema *s)
{
    spf_status status;
    long version, count;
    char what[96];
    if ((status = need_line(c, "'spforge-rank-model'")) != SPF_OK ||
        (status = keyword(c, "spforge-rank-model")) != SPF_OK ||
        (status = integer(c, "a format version", 0, 1000000, &version)) != SPF_OK)
        return status;
    if (version != RANK_MODEL_VERSION)
        return FAIL(SPF_ERR_UNSUPPORTED, "%s:%ld: format version %ld; this library reads %d",
                    c->origin, c->line_no, version, RANK_MODEL_VERSION);
    if ((status = end_line(c)) != SPF_OK || (status = need_line(c, "'features'")) != SPF_OK ||
        (status = keyword(c, "features")) != SPF_OK)
        return status;
    snprintf(what, sizeof what, "the feature count %d", s->count);
    if ((status = integer(c, what, s->count, s->count, &count)) != SPF_OK)
        return status;
    /* The model's features must be ours, in our order: a model trained on
     * other columns would score garbage without any other sign. */
    for (int f = 0; f < s->count; f++) {
        const char *tok;
        size_t len = next_token(c, &tok);
        if (len != strlen(s->names[f]) || memcmp(tok, s->names[f], len) != 0) {
            snprintf(what, sizeof what, "feature %d '%s'", f, s->names[f]);
            return expected(c, what, tok, len);
        }
    }
    return end_line(c);
}

/* Grow *array (*cap entries of size bytes) to hold need entries. */
static spf_status grow(void **array, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return SPF_OK;
    size_t grown = 2 * *cap > need ? 2 * *cap : need;
    void *more = mem_realloc_array(*array, grown, size);
    if (!more)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "%zu rank-model entries of %zu bytes", grown, size);
    *array = more;
    *cap = grown;
    return SPF_OK;
}

/* Append a checked tree (nodes[0] the root, children after parents) to
 * m as QuickScorer's splits and leaves. */
static spf_status add_tree(rank_model *m, const text_node *nodes, int32_t count)
{
    spf_status status;
    int32_t leaf_of[RANK_MODEL_MAX_NODES], stack[RANK_MODEL_MAX_NODES], depth = 0, leaves = 0;
    uint64_t below[RANK_MODEL_MAX_NODES]; /* the leaves of each node's subtree */
    if ((status = grow((void **)&m->splits, &m->split_cap, m->split_count + (size_t)count,
                       sizeof *m->splits)) != SPF_OK ||
        (status = grow((void **)&m->leaves, &m->leaf_cap, m->leaf_count + (size_t)count,
                       sizeof *m->leaves)) != SPF_OK)
        return status;
    /* Leaves numbered left to right: depth first, left child first. */
    stack[depth++] = 0;
    while (depth > 0) {
        int32_t n = stack[--depth];
        if (nodes[n].feature < 0) {
            m->leaves[m->leaf_count + (size_t)leaves] = nodes[n].value;
            leaf_of[n] = leaves++;
        } else {
            stack[depth++] = nodes[n].right;
            stack[depth++] = nodes[n].left;
        }
    }
    /* Subtrees from the last node back: children come after parents. */
    rank_tree *t = &m->trees[m->tree_count];
    t->first_split = (int32_t)m->split_count;
    t->first_leaf = (int32_t)m->leaf_count;
    t->splits = 0;
    for (int32_t n = count - 1; n >= 0; n--)
        below[n] = nodes[n].feature < 0 ? (uint64_t)1 << leaf_of[n]
                                        : below[nodes[n].left] | below[nodes[n].right];
    for (int32_t n = 0; n < count; n++)
        if (nodes[n].feature >= 0)
            m->splits[m->split_count + (size_t)t->splits++] =
                (rank_split){nodes[n].value, ~below[nodes[n].left], nodes[n].feature};
    m->split_count += (size_t)t->splits;
    m->leaf_count += (size_t)leaves;
    m->tree_count++;
    return SPF_OK;
}

/* One tree: "tree <nodes>" and its node lines, appended to m. */
static spf_status parse_tree(cursor *c, rank_model *m)
{
    spf_status status;
    long count;
    text_node nodes[RANK_MODEL_MAX_NODES];
    unsigned char parents[RANK_MODEL_MAX_NODES] = {0};
    if ((status = need_line(c, "'tree'")) != SPF_OK || (status = keyword(c, "tree")) != SPF_OK ||
        (status = integer(c, "a node count from 1 to 127", 1, RANK_MODEL_MAX_NODES, &count)) !=
            SPF_OK ||
        (status = end_line(c)) != SPF_OK)
        return status;
    for (long i = 0; i < count; i++) {
        text_node *n = &nodes[i];
        char what[64];
        long index, feature, left, right;
        const char *tok;
        snprintf(what, sizeof what, "node %ld", i);
        if ((status = need_line(c, what)) != SPF_OK ||
            (status = integer(c, what, i, i, &index)) != SPF_OK)
            return status;
        size_t len = next_token(c, &tok);
        if (len == 4 && memcmp(tok, "leaf", 4) == 0) {
            n->feature = n->left = n->right = -1;
            if ((status = real(c, "a finite leaf value", &n->value)) != SPF_OK)
                return status;
        } else if (len == 5 && memcmp(tok, "split", 5) == 0) {
            /* Children after the parent and inside the tree: no cycle, no
             * reference outside it. */
            snprintf(what, sizeof what, "a child index from %ld to %ld", i + 1, count - 1);
            if ((status = integer(c, "a feature index", 0, m->feature_count - 1, &feature)) !=
                    SPF_OK ||
                (status = real(c, "a finite threshold", &n->value)) != SPF_OK ||
                (status = integer(c, what, i + 1, count - 1, &left)) != SPF_OK ||
                (status = integer(c, what, i + 1, count - 1, &right)) != SPF_OK)
                return status;
            if (left == right)
                return FAIL(SPF_ERR_PARSE, "%s:%ld: node %ld: both children are node %ld",
                            c->origin, c->line_no, i, left);
            if (parents[left]++ || parents[right]++)
                return FAIL(SPF_ERR_PARSE, "%s:%ld: node %ld: node %ld already has a parent",
                            c->origin, c->line_no, i, parents[left] > 1 ? left : right);
            n->feature = (int32_t)feature;
            n->left = (int32_t)left;
            n->right = (int32_t)right;
        } else {
            return expected(c, "'split' or 'leaf'", tok, len);
        }
        if ((status = end_line(c)) != SPF_OK)
            return status;
    }
    for (long i = 1; i < count; i++)
        if (!parents[i])
            return FAIL(SPF_ERR_PARSE, "%s:%ld: tree ends with node %ld not a child of any split",
                        c->origin, c->line_no, i);
    return add_tree(m, nodes, (int32_t)count);
}

spf_status rank_model_parse_as(const rank_schema *s, const char *text, size_t len,
                               const char *origin, rank_model **out)
{
    spf_status status = SPF_OK;
    rank_model *m = NULL;
    CHECK_ARG(out != NULL);
    *out = NULL;
    CHECK_ARG(s != NULL && s->count > 0 && (text != NULL || len == 0));
    cursor c = {.p = text, .end = text + len, .origin = origin ? origin : "rank model"};
    long trees;
    m = mem_calloc(1, sizeof *m);
    if (!m)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "a rank model");
    m->feature_count = s->count;
    TRY(parse_header(&c, s));
    TRY(need_line(&c, "'trees'"));
    TRY(keyword(&c, "trees"));
    TRY(integer(&c, "a tree count from 1 to 10000", 1, RANK_MODEL_MAX_TREES, &trees));
    TRY(end_line(&c));
    m->trees = mem_alloc_array((size_t)trees, sizeof *m->trees);
    if (!m->trees)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "%ld rank-model trees", trees);
    for (long t = 0; t < trees; t++)
        TRY(parse_tree(&c, m));
    TRY(need_line(&c, "'end'"));
    TRY(keyword(&c, "end"));
    TRY(end_line(&c));
    if (next_line(&c))
        FAIL_GOTO(SPF_ERR_PARSE, "%s:%ld: expected end of file after 'end'", c.origin, c.line_no);
    *out = m;
    m = NULL;
fail:
    rank_model_free(m);
    return status;
}

spf_status rank_model_parse(const char *text, size_t len, const char *origin, rank_model **out)
{
    return rank_model_parse_as(&rank_schema_search, text, len, origin, out);
}

spf_status rank_model_read_as(const rank_schema *s, const char *path, rank_model **out)
{
    spf_status status = SPF_OK;
    char *text = NULL;
    CHECK_ARG(out != NULL);
    *out = NULL;
    CHECK_ARG(path != NULL);
    FILE *f = NULL;
    int64_t size = 0;
    spf_status opened = file_open_read(path, &f, &size);
    if (opened != SPF_OK) {
        error_prefix("rank model");
        return opened;
    }
    /* A model is tens of kilobytes; anything past 64 MiB is not one. */
    const int64_t max_bytes = 64LL << 20;
    if (size > max_bytes)
        FAIL_GOTO(SPF_ERR_PARSE, "rank model %s: %lld bytes, more than %lld", path,
                  (long long)size, (long long)max_bytes);
    text = mem_alloc((size_t)size + 1);
    if (!text)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "reading rank model %s", path);
    if (fread(text, 1, (size_t)size, f) != (size_t)size)
        FAIL_GOTO(SPF_ERR_IO, "reading rank model %s: %s", path,
                  ferror(f) ? strerror(errno) : "shorter than its size");
    TRY(rank_model_parse_as(s, text, (size_t)size, path, out));
fail:
    fclose(f);
    mem_free(text);
    return status;
}

spf_status rank_model_read(const char *path, rank_model **out)
{
    return rank_model_read_as(&rank_schema_search, path, out);
}

/* One lock for every source's slot: loads are rare and short. */
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

spf_status rank_model_load(const rank_model_source *src, rank_model **slot, const rank_model **out)
{
    CHECK_ARG(out != NULL);
    *out = NULL;
    CHECK_ARG(src != NULL && slot != NULL);
    /* A mutex rather than pthread_once: a failed load (no memory, a bad
     * override file) is retried by the next caller instead of kept. */
    spf_status status = SPF_OK;
    pthread_mutex_lock(&load_lock);
    if (!*slot) {
        const char *path = getenv(src->env);
        if (path && path[0])
            status = rank_model_read_as(src->schema, path, slot);
        else
            status = rank_model_parse_as(src->schema, (const char *)src->text, *src->size,
                                         src->origin, slot);
    }
    *out = *slot;
    pthread_mutex_unlock(&load_lock);
    return status;
}

spf_status rank_model_default(const rank_model **out)
{
    static const rank_model_source search = {&rank_schema_search, "SPFORGE_RANK_MODEL",
                                             rank_model_embedded, &rank_model_embedded_size,
                                             "models/rank_model.txt (embedded)"};
    static rank_model *model;
    return rank_model_load(&search, &model, out);
}

/* Add the model's score of count vectors to out (count entries, zeroed by
 * the caller): vector i's feature f at x[f·feature_stride + i] (so one
 * row-major vector is feature_stride 1, count 1). reach: count words of
 * scratch. Each score sums the trees in order, as LightGBM does. */
static void score_vectors(const rank_model *m, const double *x, size_t feature_stride, int count,
                          uint64_t *reach, double *out)
{
    for (int32_t t = 0; t < m->tree_count; t++) {
        const rank_tree *tree = &m->trees[t];
        for (int i = 0; i < count; i++)
            reach[i] = ~(uint64_t)0;
        for (int32_t s = 0; s < tree->splits; s++) {
            const rank_split *split = &m->splits[tree->first_split + s];
            const double *column = x + (size_t)split->feature * feature_stride;
            /* Locals, so the compiler sees that reach does not alias them
             * and vectorizes the test. */
            const double threshold = split->threshold;
            const uint64_t keep = split->keep;
            for (int i = 0; i < count; i++)
                reach[i] &= column[i] <= threshold ? ~(uint64_t)0 : keep;
        }
        const double *leaves = m->leaves + tree->first_leaf;
        for (int i = 0; i < count; i++)
            out[i] += leaves[__builtin_ctzll(reach[i])]; /* never 0: the exit leaf stays */
    }
}

double rank_model_score(const rank_model *m, const double *features)
{
    double score = 0.0;
    uint64_t reach;
    score_vectors(m, features, 1, 1, &reach, &score);
    return score;
}

typedef struct scored {
    double score;
    int index;
} scored;

/* Higher score first; equal scores by the smaller index. */
static int scored_compare(const void *pa, const void *pb)
{
    const scored *a = pa, *b = pb;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

spf_status rank_model_top_k(const rank_model *m, const double *features, int count, int k,
                            int *best_first)
{
    spf_status status = SPF_OK;
    CHECK_ARG(m != NULL && count >= 0 && k >= 1 && best_first != NULL);
    CHECK_ARG(features != NULL || count == 0);
    size_t n = (size_t)count + 1;
    /* Features transposed (one feature of every vector in a row), so each
     * split's test runs down a contiguous column. */
    const size_t features_per = (size_t)m->feature_count;
    double *columns = mem_alloc_array(n * features_per, sizeof *columns);
    double *scores = mem_calloc(n, sizeof *scores);
    uint64_t *reach = mem_alloc_array(n, sizeof *reach);
    scored *order = mem_alloc_array(n, sizeof *order);
    if (!columns || !scores || !reach || !order)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "scores of %d configurations", count);
    for (int i = 0; i < count; i++)
        for (size_t f = 0; f < features_per; f++)
            columns[f * (size_t)count + (size_t)i] = features[(size_t)i * features_per + f];
    score_vectors(m, columns, (size_t)count, count, reach, scores);
    for (int i = 0; i < count; i++)
        order[i] = (scored){scores[i], i};
    qsort(order, (size_t)count, sizeof *order, scored_compare);
    for (int i = 0; i < k && i < count; i++)
        best_first[i] = order[i].index;
fail:
    mem_free(columns);
    mem_free(scores);
    mem_free(reach);
    mem_free(order);
    return status;
}

void rank_model_free(rank_model *m)
{
    if (!m)
        return;
    mem_free(m->trees);
    mem_free(m->splits);
    mem_free(m->leaves);
    mem_free(m);
}
