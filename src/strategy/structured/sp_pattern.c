/* Pattern detection (sp_pattern.h): one pass over the nonzeros per
 * candidate pattern (column vectors: sp_colvec.c). A V:2:M pattern that
 * holds for V holds for every V' dividing V (a block of V rows is a union
 * of blocks of V'), so V = 16 is tried first and a failure there rules out
 * M. Only when no pattern holds exactly are the rows outside each one
 * counted (sp_pattern_outside). */
#include "strategy/structured/sp_pattern.h"

#include "core/alloc.h"
#include "core/matrix.h"
#include "core/memo.h"
#include "strategy/structured/sp_colvec.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { KEPT = 4, MAX_PER_ROW = 2 };

static const int32_t groups_tried[] = {32, 16, 8}; /* the fewest bytes first */
static const int32_t blocks_tried[] = {128, 64, 32}; /* after 16 */

static int64_t outside(const spf_matrix *a, const sp_pattern *p, int64_t limit, uint8_t *out);

/* Where a pattern first fails, for the reason. */
typedef struct miss {
    int64_t row, col; /* the row (the block's first for a union), a column of the group */
    int count;        /* nonzeros in the row's group, or distinct columns of the block's */
    int union_miss;   /* 1: the block's union of columns; 0: one row's count          */
} miss;

/* The first nonzero of row r that breaks the pattern, or -1: the third in
 * a group of m columns or, with counts (outside_vnm), one in a column not
 * kept (count < 0). */
static int64_t row_outside(const spf_matrix *a, int64_t r, int32_t m, const int32_t *count)
{
    int64_t group = -1;
    int n = 0;
    for (int64_t i = a->row_ptr[r]; i < a->row_ptr[r + 1]; i++) {
        int64_t g = a->col_idx[i] / m;
        n = g == group ? n + 1 : 1;
        group = g;
        if (n > MAX_PER_ROW || (count && count[a->col_idx[i]] < 0))
            return i;
    }
    return -1;
}

static int holds_24(const spf_matrix *a, miss *at)
{
    for (int64_t r = 0; r < a->rows; r++) {
        int64_t i = row_outside(a, r, KEPT, NULL);
        if (i >= 0) { /* the third of its run */
            *at = (miss){r, a->col_idx[i], MAX_PER_ROW + 1, 0};
            return 0;
        }
    }
    return 1;
}

/* V:2:M over blocks of v rows: seen[g·KEPT ..] holds the distinct columns
 * of group g in the current block, used[g] how many (groups entries). */
static int holds_vnm(const spf_matrix *a, int32_t m, int32_t v, int32_t *seen, int8_t *used,
                     int64_t groups, miss *at)
{
    for (int64_t r0 = 0; r0 < a->rows; r0 += v) {
        memset(used, 0, (size_t)groups);
        int64_t end = a->rows - r0 < v ? a->rows : r0 + v;
        for (int64_t r = r0; r < end; r++) {
            int64_t group = -1;
            int count = 0;
            for (int64_t i = a->row_ptr[r]; i < a->row_ptr[r + 1]; i++) {
                int32_t col = a->col_idx[i];
                int64_t g = col / m;
                count = g == group ? count + 1 : 1;
                group = g;
                if (count > MAX_PER_ROW) {
                    *at = (miss){r, col, count, 0};
                    return 0;
                }
                int32_t *s = seen + g * KEPT;
                int k = 0;
                while (k < used[g] && s[k] != col)
                    k++;
                if (k < used[g])
                    continue;
                if (used[g] == KEPT) {
                    *at = (miss){r0, col, KEPT + 1, 1};
                    return 0;
                }
                s[used[g]++] = col;
            }
        }
    }
    return 1;
}

/* The rows with more nonzeros than a row inside a pattern of groups of m
 * columns holds (MAX_PER_ROW a group), counted up to limit + 1: from
 * row_ptr alone, where outside() reads every nonzero of up to limit rows
 * for each of the patterns tried (a 0.7-pruned 11008×4096 layer: 115 ms
 * of a plan for none found). */
static int64_t rows_over(const spf_matrix *a, int32_t m, int64_t limit)
{
    int64_t most = MAX_PER_ROW * ((a->cols + m - 1) / m), over = 0;
    for (int64_t r = 0; r < a->rows && over <= limit; r++)
        over += a->row_ptr[r + 1] - a->row_ptr[r] > most;
    return over;
}

static int detect(const spf_matrix *a, sp_pattern *out, char *reason, size_t cap)
{
    miss m24 = {0}, m8 = {0};
    int64_t groups = (a->cols + KEPT * 2 - 1) / (KEPT * 2) + 1; /* the most: M = 8 */
    int32_t *seen = mem_alloc_array((size_t)groups * KEPT, sizeof *seen);
    int8_t *used = mem_alloc((size_t)groups);
    int found = 0;
    if (!seen || !used) {
        snprintf(reason, cap, "out of memory checking for a V:2:M pattern");
        goto done;
    }
    for (size_t mi = 0; mi < sizeof groups_tried / sizeof *groups_tried && !found; mi++) {
        int32_t m = groups_tried[mi];
        int64_t gm = (a->cols + m - 1) / m;
        miss at;
        if (!holds_vnm(a, m, 16, seen, used, gm, &at)) {
            m8 = at; /* the last tried: M = 8 */
            continue;
        }
        *out = (sp_pattern){.group = m, .v = 16};
        for (size_t vi = 0; vi < sizeof blocks_tried / sizeof *blocks_tried; vi++)
            if (holds_vnm(a, m, blocks_tried[vi], seen, used, gm, &at)) {
                out->v = blocks_tried[vi];
                break;
            }
        found = 1;
    }
    if (!found && holds_24(a, &m24)) {
        *out = (sp_pattern){.group = KEPT};
        found = 1;
    }
    /* with strays: the first pattern, in the same order, that leaves at
     * most rows / SP_OUTSIDE_SHARE rows out */
    for (size_t mi = 0; !found && seen && used && mi <= sizeof groups_tried / sizeof *groups_tried;
         mi++) {
        const int32_t *vs = mi < sizeof groups_tried / sizeof *groups_tried ? blocks_tried : NULL;
        for (int vi = 0; !found && vi < (vs ? 4 : 1); vi++) {
            sp_pattern p = vs ? (sp_pattern){.group = groups_tried[mi], .v = vi < 3 ? vs[vi] : 16}
                              : (sp_pattern){.group = KEPT};
            int64_t limit = a->rows / SP_OUTSIDE_SHARE;
            int64_t rows_out = rows_over(a, p.group, limit) > limit ? limit + 1
                                                                     : outside(a, &p, limit, NULL);
            if (rows_out > 0 && rows_out <= limit) {
                p.outside = (int32_t)rows_out;
                *out = p;
                found = 1;
            }
        }
    }
    char colvec[200];
    if (!found && seen && used && sp_colvec_detect(a, out, colvec, sizeof colvec))
        found = 1;
    if (!found && seen && used)
        snprintf(reason, cap, "not 2:4 (row %lld has %d nonzeros in columns %lld-%lld) nor "
                 "V:2:M for M = 8, 16, 32 (at V = 16, %s %lld, columns %lld-%lld: %s); %s",
                 (long long)m24.row, m24.count, (long long)(m24.col / KEPT * KEPT),
                 (long long)(m24.col / KEPT * KEPT + KEPT - 1), m8.union_miss ? "rows from" : "row",
                 (long long)m8.row, (long long)(m8.col / 8 * 8), (long long)(m8.col / 8 * 8 + 7),
                 m8.union_miss ? "more than 4 distinct columns" : "more than 2 nonzeros", colvec);
    if (!found && seen && used) {
        size_t at = strlen(reason);
        snprintf(reason + at, cap - at, "; with strays, each leaves out more than 1/%d of the "
                 "rows", SP_OUTSIDE_SHARE);
    }
done:
    mem_free(seen);
    mem_free(used);
    return found;
}

/* What detect found for a matrix (by its id): a plan asks for it in
 * supports(), the estimate and the build, and sparsify makes a plan for
 * each of a layer's N from one matrix; each search reads every nonzero
 * (8-21 ms on a 0.7-pruned 7B layer, which has none). */
typedef struct detected {
    int found;
    sp_pattern pattern;
    char reason[512];
} detected;

enum { DETECTED_SLOTS = 64 };

static unsigned char detected_storage[DETECTED_SLOTS][MEMO_SLOT_BYTES(uint64_t, detected)];
static memo detected_memo = MEMO_INIT(detected_storage, uint64_t, detected);

int sp_pattern_detect(const spf_matrix *a, sp_pattern *out, char *reason, size_t cap)
{
    detected d;
    if (!memo_find(&detected_memo, &a->id, &d)) {
        memset(&d, 0, sizeof d);
        d.pattern = *out; /* what a caller's default is where none is found */
        d.found = detect(a, &d.pattern, d.reason, sizeof d.reason);
        memo_put(&detected_memo, &a->id, &d);
    }
    if (d.found)
        *out = d.pattern;
    else if (cap)
        snprintf(reason, cap, "%s", d.reason);
    return d.found;
}

/* V:2:M: the columns of the block of rows r0 .. end - 1 counted, then
 * count[c] made negative (-count - 1) for a column not among the four of
 * its group of m the most rows use (ties to the smaller column); stamp[c]
 * == r0 marks the columns the block uses. */
static void keep_columns(const spf_matrix *a, int32_t m, int64_t r0, int64_t end, int32_t *count,
                         int64_t *stamp)
{
    for (int64_t r = r0; r < end; r++)
        for (int64_t i = a->row_ptr[r]; i < a->row_ptr[r + 1]; i++) {
            int32_t c = a->col_idx[i];
            if (stamp[c] != r0)
                stamp[c] = r0, count[c] = 0;
            count[c]++;
        }
    for (int64_t g0 = 0; g0 < a->cols; g0 += m) {
        int64_t g1 = a->cols - g0 < m ? a->cols : g0 + m;
        for (int64_t c = g0; c < g1; c++) {
            if (stamp[c] != r0)
                continue;
            int above = 0;
            for (int64_t d = g0; d < g1 && above < KEPT; d++)
                above += stamp[d] == r0 && count[d] > 0 &&
                         (count[d] > count[c] || (count[d] == count[c] && d < c));
            if (above >= KEPT)
                count[c] = -count[c] - 1;
        }
    }
}

/* V:2:M: the four columns of each group most rows of a block use. */
static int64_t outside_vnm(const spf_matrix *a, int32_t m, int32_t v, int64_t limit, uint8_t *out,
                           int32_t *count, int64_t *stamp)
{
    int64_t rows_out = 0;
    for (int64_t c = 0; c < a->cols; c++)
        stamp[c] = -1;
    for (int64_t r0 = 0; r0 < a->rows && rows_out <= limit; r0 += v) {
        int64_t end = a->rows - r0 < v ? a->rows : r0 + v;
        keep_columns(a, m, r0, end, count, stamp);
        for (int64_t r = r0; r < end; r++) {
            int bad = row_outside(a, r, m, count) >= 0;
            rows_out += bad;
            if (out)
                out[r] = (uint8_t)bad;
        }
    }
    return rows_out;
}

/* sp_pattern_outside, stopping once more than limit rows are out */
static int64_t outside(const spf_matrix *a, const sp_pattern *p, int64_t limit, uint8_t *out)
{
    if (p->vec)
        return 0; /* column vectors store their strays (sp_colvec.h) */
    if (p->v == 0) { /* 2:4: a row with three or four in a run */
        int64_t rows_out = 0;
        for (int64_t r = 0; r < a->rows && rows_out <= limit; r++) {
            int bad = row_outside(a, r, KEPT, NULL) >= 0;
            rows_out += bad;
            if (out)
                out[r] = (uint8_t)bad;
        }
        return rows_out;
    }
    int32_t *count = mem_alloc_array((size_t)a->cols + 1, sizeof *count);
    int64_t *stamp = mem_alloc_array((size_t)a->cols + 1, sizeof *stamp);
    int64_t rows_out =
        count && stamp ? outside_vnm(a, p->group, p->v, limit, out, count, stamp) : -1;
    mem_free(count);
    mem_free(stamp);
    return rows_out;
}

int64_t sp_pattern_outside(const spf_matrix *a, const sp_pattern *p, uint8_t *out)
{
    return outside(a, p, INT64_MAX, out);
}

static float magnitude(const spf_matrix *a, int64_t i)
{
    return a->values ? fabsf(a->values[i]) : 1.0f;
}

/* Mark row r's strays (stray[i] for its nonzeros i): in each group of m
 * columns, every nonzero but the two largest in magnitude (the earlier on
 * ties) of those in kept columns (count: V:2:M, sp_pattern_outside; NULL:
 * every column kept). Returns how many. */
static int64_t row_strays(const spf_matrix *a, int64_t r, int32_t m, const int32_t *count,
                          uint8_t *stray)
{
    int64_t strays = 0;
    for (int64_t i = a->row_ptr[r], end; i < a->row_ptr[r + 1]; i = end) {
        int64_t g = a->col_idx[i] / m, best[MAX_PER_ROW] = {-1, -1};
        for (end = i; end < a->row_ptr[r + 1] && a->col_idx[end] / m == g; end++) {
            stray[end] = 1;
            if (count && count[a->col_idx[end]] < 0)
                continue;
            if (best[0] < 0 || magnitude(a, end) > magnitude(a, best[0]))
                best[1] = best[0], best[0] = end;
            else if (best[1] < 0 || magnitude(a, end) > magnitude(a, best[1]))
                best[1] = end;
        }
        strays += end - i;
        for (int b = 0; b < MAX_PER_ROW; b++)
            if (best[b] >= 0)
                stray[best[b]] = 0, strays--;
    }
    return strays;
}

int64_t sp_pattern_strays(const spf_matrix *a, const sp_pattern *p, uint8_t *stray)
{
    if (p->vec) {
        memset(stray, 0, (size_t)a->row_ptr[a->rows]);
        return 0;
    }
    int64_t strays = 0;
    if (p->v == 0) {
        for (int64_t r = 0; r < a->rows; r++)
            strays += row_strays(a, r, KEPT, NULL, stray);
        return strays;
    }
    int32_t *count = mem_alloc_array((size_t)a->cols + 1, sizeof *count);
    int64_t *stamp = mem_alloc_array((size_t)a->cols + 1, sizeof *stamp);
    if (!count || !stamp) {
        mem_free(count);
        mem_free(stamp);
        return -1;
    }
    for (int64_t c = 0; c < a->cols; c++)
        stamp[c] = -1;
    for (int64_t r0 = 0; r0 < a->rows; r0 += p->v) {
        int64_t end = a->rows - r0 < p->v ? a->rows : r0 + p->v;
        keep_columns(a, p->group, r0, end, count, stamp);
        for (int64_t r = r0; r < end; r++)
            strays += row_strays(a, r, p->group, count, stray);
    }
    mem_free(count);
    mem_free(stamp);
    return strays;
}

void sp_pattern_name(const sp_pattern *p, char *buf, size_t cap)
{
    if (p->vec)
        snprintf(buf, cap, "colvec%d%s", p->vec, p->permuted ? "p" : "");
    else if (p->v == 0)
        snprintf(buf, cap, "2:4");
    else
        snprintf(buf, cap, "V%d:2:%d", p->v, p->group);
}

int sp_pattern_from_name(const char *name, sp_pattern *out)
{
    int v, keep, group, used = 0;
    if (strcmp(name, "2:4") == 0) {
        *out = (sp_pattern){.group = 4, .v = 0};
        return 1;
    }
    if (strncmp(name, "colvec", 6) == 0 && name[6] >= '1' && name[6] <= '9' &&
        sscanf(name, "colvec%d%n", &v, &used) == 1 && (v == 4 || v == 8 || v == 16) &&
        (name[used] == '\0' || strcmp(name + used, "p") == 0)) {
        *out = (sp_pattern){.vec = v, .permuted = name[used] == 'p'};
        return 1;
    }
    used = 0;
    if (sscanf(name, "V%d:%d:%d%n", &v, &keep, &group, &used) != 3 || name[used] != '\0' ||
        keep != 2 || (group != 8 && group != 16 && group != 32) ||
        (v != 16 && v != 32 && v != 64 && v != 128))
        return 0;
    *out = (sp_pattern){.group = group, .v = v};
    return 1;
}

int64_t sp_pattern_condensed_cols(const sp_pattern *p, int64_t k)
{
    return p->v == 0 ? k : (k + p->group - 1) / p->group * KEPT;
}
