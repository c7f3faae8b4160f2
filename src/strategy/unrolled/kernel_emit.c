#include "strategy/unrolled/kernel_emit.h"

#include "strategy/unrolled/unrolled.h"
#include "core/alloc.h"
#include "core/error.h"
#include "core/matrix.h"

#include <stdio.h>
#include <string.h>

/* The tile function's parameters; the entry passes its registers in this order. */
static const ptx_param tile_params[] = {
    {"b64", "pb"},   /* this thread's first B column, global address      */
    {"b64", "pc"},   /* this thread's first C column, global address      */
    {"b64", "pbias"},/* bias, global address (unused without bias)         */
    {"b32", "psm"},  /* this thread's reduction slot, shared address       */
    {"b32", "pg"},   /* thread group                                       */
    {"b32", "pact"}, /* 1 when the thread's columns lie inside N           */
    {"b32", "pmask"},/* implicit gather: bit r when the thread's window row
                        r lies inside the input, bit 16 + s its column s   */
};
enum { TILE_PARAMS = sizeof tile_params / sizeof tile_params[0] };

const char *kernel_dtype_tag(spf_dtype dtype, int f16x2)
{
    if (f16x2)
        return "f16x2";
    return dtype == SPF_DTYPE_F16 ? "f16" : dtype == SPF_DTYPE_BF16 ? "bf16" : "f32";
}

/* IEEE binary16 bits of x, round to nearest even (A values of the f16x2
 * path; out-of-range values become infinities as on the GPU). */
static uint16_t f16_bits(float x)
{
    uint32_t f;
    memcpy(&f, &x, sizeof f);
    uint32_t sign = (f >> 16) & 0x8000u, e = (f >> 23) & 0xFFu, m = f & 0x7FFFFFu;
    if (e == 0xFF)
        return (uint16_t)(sign | 0x7C00u | (m ? 0x200u : 0u));
    int32_t he = (int32_t)e - 127 + 15;
    if (he >= 31)
        return (uint16_t)(sign | 0x7C00u);
    uint32_t mant = m | 0x800000u, shift = he >= 1 ? 13u : (uint32_t)(14 - he);
    if (shift > 24)
        return (uint16_t)sign;
    uint32_t half = mant >> shift, rest = mant & ((1u << shift) - 1u), mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1u)))
        half++;
    /* Normal numbers carry their exponent; a rounding carry into the next
     * binade (or from subnormal to normal) is absorbed by the addition. */
    uint32_t bits = he >= 1 ? (((uint32_t)he << 10) + (half - 0x400u)) : half;
    return (uint16_t)(sign | bits);
}

/* ------------------------------------------------------ tile functions */

typedef struct tile_ctx {
    const tile_gen *g;
    ptx_buf *b;
    ptx_regs regs;
    ptx_reg pb, pc, pbias, psm, pact;
    ptx_reg *acc;      /* m1 × v f32 accumulators of the current group        */
    ptx_reg *acc16;    /* m1 × v/2 f16x2 accumulators (f16x2 mode)            */
    uint8_t *started;  /* m1: row has its first term                          */
    uint8_t *touched;  /* ksplit × m1: schedule_group_rows of every group     */
    ptx_reg *ring;     /* (prefetch + 1) × raw loaded B registers             */
    ptx_reg *pool;     /* ceil(m1 / ksplit) × v: owned rows' sums (owned_regs) */
    ptx_reg bf[4];     /* one B row segment converted to f32                  */
    ptx_reg h[2], tmp, apair;
    ptx_reg *tap_pred; /* implicit gather, R·S: tap r·S + s inside the input
                          (PTX_REG_NONE where it is for every position)       */
} tile_ctx;

static ptx_reg reg(tile_ctx *x, ptx_reg_class cls) { return ptx_reg_new(&x->regs, cls); }

/* Load B row `col` into the registers dst (ld.global.nc, immediate
 * offset). Under an implicit gather (v = 1) the row's element sits at its
 * tap's offset from the thread's window corner, and a tap that can fall in
 * the padding is loaded only where it does not, zero otherwise. */
static void emit_b_load(tile_ctx *x, const ptx_reg *dst, int32_t col)
{
    const tile_gen *g = x->g;
    int64_t offset = (int64_t)col * g->s->n * g->es;
    ptx_reg guard = PTX_NO_REG;
    if (g->gather) {
        offset = conv_gather_offset(g->gather, col) * g->es;
        guard = x->tap_pred[conv_gather_tap(g->gather, col)];
        if (guard.cls != PTX_REG_NONE) {
            char d[16];
            ptx_ins(x->b, "mov.%s %s, 0", g->dtype == SPF_DTYPE_F32 ? "b32" : "b16",
                    ptx_reg_name(dst[0], d));
        }
    }
    int v = g->s->cfg.v;
    if (g->dtype == SPF_DTYPE_F32)
        ptx_load(x->b, PTX_SPACE_GLOBAL, PTX_CACHE_NC, "f32", v, guard, dst, x->pb, offset);
    else if (v == 1)
        ptx_load(x->b, PTX_SPACE_GLOBAL, PTX_CACHE_NC, "b16", 1, guard, dst, x->pb, offset);
    else
        ptx_load(x->b, PTX_SPACE_GLOBAL, PTX_CACHE_NC, "b32", v / 2, guard, dst, x->pb, offset);
}

/* Whether tap (r, s) of the gather lies inside the input for every output
 * position: its rows and columns over all of P and Q. */
static int tap_always_inside(const conv_gather *c, int32_t tap)
{
    const int64_t dy = tap / c->s - c->pad, dx = tap % c->s - c->pad;
    const int64_t y_last = (int64_t)(c->p - 1) * c->stride + dy;
    const int64_t x_last = (int64_t)(c->q - 1) * c->stride + dx;
    return dy >= 0 && dx >= 0 && y_last < c->h && x_last < c->w;
}

/* The tile function's tap guards from its pmask parameter: for each tap
 * that can fall in the padding, (pmask & need) == need with need its row's
 * and its column's bits. */
static void emit_tap_guards(tile_ctx *x)
{
    const conv_gather *c = x->g->gather;
    ptx_reg mask = reg(x, PTX_REG_B32), t = reg(x, PTX_REG_B32);
    char m[16], tn[16], pn[16];
    ptx_load_param(x->b, "u32", mask, "pmask");
    for (int32_t tap = 0; tap < c->r * c->s; tap++) {
        x->tap_pred[tap] = PTX_NO_REG;
        if (tap_always_inside(c, tap))
            continue;
        const uint32_t need = 1u << (tap / c->s) | 1u << (16 + tap % c->s);
        x->tap_pred[tap] = reg(x, PTX_REG_PRED);
        ptx_ins(x->b, "and.b32 %s, %s, %u", ptx_reg_name(t, tn), ptx_reg_name(mask, m), need);
        ptx_ins(x->b, "setp.eq.u32 %s, %s, %u", ptx_reg_name(x->tap_pred[tap], pn), tn, need);
    }
}

/* The loaded B segment as v f32 registers (fp32 accumulation). */
static const ptx_reg *b_as_f32(tile_ctx *x, const ptx_reg *raw)
{
    const tile_gen *g = x->g;
    int v = g->s->cfg.v;
    if (g->dtype == SPF_DTYPE_F32)
        return raw;
    if (v == 1) {
        if (g->dtype == SPF_DTYPE_F16) {
            ptx_cvt_f32_f16(x->b, x->bf[0], raw[0]);
        } else {
            char t[16], r[16];
            ptx_ins(x->b, "cvt.u32.u16 %s, %s", ptx_reg_name(x->tmp, t), ptx_reg_name(raw[0], r));
            ptx_cvt_f32_bf16_half(x->b, x->bf[0], x->tmp, 0, x->tmp);
        }
        return x->bf;
    }
    for (int p = 0; p < v / 2; p++) {
        if (g->dtype == SPF_DTYPE_F16) {
            ptx_unpack_b32(x->b, x->h[0], x->h[1], raw[p]);
            ptx_cvt_f32_f16(x->b, x->bf[2 * p], x->h[0]);
            ptx_cvt_f32_f16(x->b, x->bf[2 * p + 1], x->h[1]);
        } else {
            ptx_cvt_f32_bf16_half(x->b, x->bf[2 * p], raw[p], 0, x->tmp);
            ptx_cvt_f32_bf16_half(x->b, x->bf[2 * p + 1], raw[p], 1, x->tmp);
        }
    }
    return x->bf;
}

/* acc[slot] += B segment · value for every entry of one column. The first
 * term of a row is a multiply, so accumulators need no zeroing. */
static void emit_column(tile_ctx *x, const sched_column *col, const ptx_reg *raw)
{
    const tile_gen *g = x->g;
    const schedule *s = g->s;
    int v = s->cfg.v;
    const ptx_reg *bseg = g->f16x2 ? raw : b_as_f32(x, raw);
    for (int32_t e = 0; e < col->count; e++) {
        const sched_entry *en = &s->entries[col->first + e];
        if (g->f16x2) {
            /* fma.rn.f16x2 takes registers only: the value, rounded to
             * f16, in both halves of a .b32. */
            uint32_t hb = f16_bits(en->value);
            ptx_mov_b32_imm(x->b, x->apair, hb | (hb << 16));
            for (int p = 0; p < v / 2; p++) {
                ptx_reg *d = &x->acc16[(int64_t)en->slot * (v / 2) + p];
                if (!x->started[en->slot]) {
                    *d = reg(x, PTX_REG_B32);
                    char dn[16], bn[16], an[16];
                    ptx_ins(x->b, "mul.rn.f16x2 %s, %s, %s", ptx_reg_name(*d, dn),
                            ptx_reg_name(bseg[p], bn), ptx_reg_name(x->apair, an));
                } else {
                    ptx_fma_f16x2(x->b, *d, bseg[p], x->apair, *d);
                }
            }
        } else {
            for (int l = 0; l < v; l++) {
                ptx_reg *d = &x->acc[(int64_t)en->slot * v + l];
                if (!x->started[en->slot]) {
                    if (d->cls == PTX_REG_NONE)
                        *d = reg(x, PTX_REG_F32);
                    ptx_mul_f32_imm(x->b, *d, bseg[l], en->value);
                } else {
                    ptx_fma_f32_imm(x->b, *d, bseg[l], en->value, *d);
                }
            }
        }
        x->started[en->slot] = 1;
    }
}

/* The ring registers of column i (counted from the group's first column). */
static const ptx_reg *ring_slot(const tile_ctx *x, int32_t i)
{
    return &x->ring[(int64_t)(i % (x->g->s->cfg.prefetch + 1)) * x->g->raw];
}

/* LO-SpMM Algorithm 2 (lines 14–18): the B row of column i + prefetch is
 * loaded into a ring of prefetch + 1 register sets before column i is
 * computed, so later rows are in flight while the current one is used.
 * This fixes the PTX order only: ptxas 13.0 schedules read-only (.nc)
 * loads as it sees fit, hoisting them across bar.sync and past guards that
 * depend on earlier accumulators (measured: the register count of a tile
 * function did not follow the depth), so the depth is a hint the tuner
 * measures like any other parameter; the register cap (register_cap) is
 * what bounds how far ptxas runs ahead. */
static void emit_columns(tile_ctx *x, int32_t tile, int32_t first, int32_t end)
{
    const schedule *s = x->g->s;
    const sched_column *cols = &s->cols[s->tiles[tile].first_col] + first;
    int32_t count = end - first, depth = s->cfg.prefetch + 1;
    for (int32_t i = 0; i < count && i < depth - 1; i++)
        emit_b_load(x, ring_slot(x, i), cols[i].col);
    for (int32_t i = 0; i < count; i++) {
        if (i + depth - 1 < count)
            emit_b_load(x, ring_slot(x, i + depth - 1), cols[i + depth - 1].col);
        emit_column(x, &cols[i], ring_slot(x, i));
    }
}

/* f16x2 accumulators to f32 (the reduction and epilogue run in f32). */
static void widen_f16x2(tile_ctx *x)
{
    int32_t m1 = x->g->s->cfg.m1, v = x->g->s->cfg.v;
    for (int32_t slot = 0; slot < m1; slot++) {
        if (!x->started[slot])
            continue;
        for (int p = 0; p < v / 2; p++) {
            ptx_reg *lo = &x->acc[(int64_t)slot * v + 2 * p], *hi = lo + 1;
            if (lo->cls == PTX_REG_NONE) {
                *lo = reg(x, PTX_REG_F32);
                *hi = reg(x, PTX_REG_F32);
            }
            ptx_unpack_b32(x->b, x->h[0], x->h[1], x->acc16[(int64_t)slot * (v / 2) + p]);
            ptx_cvt_f32_f16(x->b, *lo, x->h[0]);
            ptx_cvt_f32_f16(x->b, *hi, x->h[1]);
        }
    }
}

/* Byte offset of partial buffer j for row slot in the reduction area:
 * [j][slot][n1] floats, each thread's v lanes contiguous (conflict-free
 * vector stores). */
static int64_t partial_offset(const schedule *s, int32_t j, int32_t slot)
{
    return ((int64_t)j * s->cfg.m1 + slot) * s->cfg.n1 * (int64_t)sizeof(float);
}

/* Convert and store one finished row at its original index. */
static void emit_store(tile_ctx *x, const ptx_reg *val, int32_t row)
{
    const tile_gen *g = x->g;
    int v = g->s->cfg.v;
    int64_t offset = (int64_t)row * g->c_row_bytes;
    if (g->dtype == SPF_DTYPE_F32) {
        ptx_store(x->b, PTX_SPACE_GLOBAL, PTX_CACHE_DEFAULT, "f32", v, x->pact, x->pc, offset, val);
        return;
    }
    int bf16 = g->dtype == SPF_DTYPE_BF16;
    if (v == 1) {
        ptx_cvt_f16_f32(x->b, x->h[0], val[0], bf16);
        ptx_store(x->b, PTX_SPACE_GLOBAL, PTX_CACHE_DEFAULT, "b16", 1, x->pact, x->pc, offset, x->h);
        return;
    }
    ptx_reg packed[2];
    for (int p = 0; p < v / 2; p++) {
        packed[p] = reg(x, PTX_REG_B32);
        ptx_cvt_pack_f32(x->b, packed[p], val[2 * p], val[2 * p + 1], bf16);
    }
    ptx_store(x->b, PTX_SPACE_GLOBAL, PTX_CACHE_DEFAULT, "b32", v / 2, x->pact, x->pc, offset,
              packed);
}

/* The registers holding the sum of an owned row slot. Under a K split they
 * come from a pool shared by every group's code path (row slot = group +
 * i · ksplit uses pool entry i), so where the paths meet at the barrier
 * only one group's rows are live, not all of them. */
static ptx_reg *owned_regs(tile_ctx *x, int32_t slot)
{
    const spf_kernel_config *cfg = &x->g->s->cfg;
    if (cfg->ksplit == 1)
        return &x->acc[(int64_t)slot * cfg->v];
    return &x->pool[(int64_t)(slot / cfg->ksplit) * cfg->v];
}

/* Group g's first phase (SparseRT §3.3–3.4): its columns, its own rows'
 * sums left in their registers (zero for rows it did not touch), and the
 * partial sums of rows it touched but does not own stored to shared
 * memory for their owners. */
static void emit_group_sums(tile_ctx *x, int32_t tile, int32_t group)
{
    const schedule *s = x->g->s;
    const sched_tile *t = &s->tiles[tile];
    const int32_t *gs = &s->group_start[(int64_t)tile * (s->cfg.ksplit + 1)];
    int32_t m1 = s->cfg.m1, v = s->cfg.v;
    memset(x->started, 0, (size_t)m1);
    for (int32_t slot = 0; slot < m1; slot++) {
        int pooled = s->cfg.ksplit > 1 && slot < t->rows && schedule_owner(s, slot) == group;
        for (int l = 0; l < v; l++)
            x->acc[(int64_t)slot * v + l] = pooled ? owned_regs(x, slot)[l] : PTX_NO_REG;
    }
    emit_columns(x, tile, gs[group], gs[group + 1]);
    if (x->g->f16x2)
        widen_f16x2(x);
    char a[16];
    for (int32_t slot = 0; slot < t->rows; slot++) {
        int32_t owner = schedule_owner(s, slot);
        int touched = x->touched[(int64_t)group * m1 + slot];
        if (owner == group && !touched)
            for (int l = 0; l < v; l++) {
                ptx_reg *r = &owned_regs(x, slot)[l];
                if (r->cls == PTX_REG_NONE)
                    *r = reg(x, PTX_REG_F32);
                ptx_ins(x->b, "mov.f32 %s, 0f00000000", ptx_reg_name(*r, a));
            }
        if (owner != group && touched)
            ptx_store(x->b, PTX_SPACE_SHARED, PTX_CACHE_DEFAULT, "f32", v, PTX_NO_REG, x->psm,
                      partial_offset(s, schedule_partial_buffer(s, owner, group), slot),
                      &x->acc[(int64_t)slot * v]);
    }
}

/* Group g's second phase, after the barrier: for each row it owns, the
 * other groups' partials in a fixed order, then bias, ReLU, and the store
 * at the row's original index (tile_relative: at its slot). */
static void emit_group_epilogue(tile_ctx *x, int32_t tile, int32_t group)
{
    const schedule *s = x->g->s;
    const sched_tile *t = &s->tiles[tile];
    int32_t ks = s->cfg.ksplit, m1 = s->cfg.m1, v = s->cfg.v;
    char a[16], bn[16];
    ptx_reg part[4], bias_reg = PTX_NO_REG;
    for (int l = 0; l < v; l++)
        part[l] = reg(x, PTX_REG_F32);
    if (x->g->bias)
        bias_reg = reg(x, PTX_REG_F32);
    for (int32_t slot = 0; slot < t->rows; slot++) {
        if (schedule_owner(s, slot) != group)
            continue;
        ptx_reg *acc = owned_regs(x, slot);
        int32_t row = x->g->tile_relative ? slot : s->row_list[t->first_row + slot];
        for (int32_t j = 0; j + 1 < ks; j++) {
            int32_t writer = schedule_partial_writer(s, group, j);
            if (!x->touched[(int64_t)writer * m1 + slot])
                continue;
            ptx_load(x->b, PTX_SPACE_SHARED, PTX_CACHE_DEFAULT, "f32", v, PTX_NO_REG, part, x->psm,
                     partial_offset(s, j, slot));
            for (int l = 0; l < v; l++)
                ptx_ins(x->b, "add.f32 %s, %s, %s", ptx_reg_name(acc[l], a), a,
                        ptx_reg_name(part[l], bn));
        }
        if (x->g->bias) {
            ptx_load(x->b, PTX_SPACE_GLOBAL, PTX_CACHE_NC, "f32", 1, PTX_NO_REG, &bias_reg, x->pbias,
                     (int64_t)row * (int64_t)sizeof(float));
            for (int l = 0; l < v; l++)
                ptx_ins(x->b, "add.f32 %s, %s, %s", ptx_reg_name(acc[l], a), a,
                        ptx_reg_name(bias_reg, bn));
        }
        if (x->g->relu)
            for (int l = 0; l < v; l++)
                ptx_ins(x->b, "max.f32 %s, %s, 0f00000000", ptx_reg_name(acc[l], a), a);
        emit_store(x, acc, row);
    }
    ptx_ins(x->b, "exit");
}

enum { GROUP_LABEL_CAP = 32 };

/* "<prefix><grp>": where group grp's path starts, the one name that the
 * dispatch branches to and the label marks. */
static const char *group_label(char label[GROUP_LABEL_CAP], const char *prefix, int32_t grp)
{
    snprintf(label, GROUP_LABEL_CAP, "%s%d", prefix, (int)grp);
    return label;
}

/* Branch each group to "<prefix><g>" (group 0 falls through). */
static void emit_group_dispatch(tile_ctx *x, ptx_reg group_reg, ptx_reg p, const char *prefix)
{
    char label[GROUP_LABEL_CAP], pn[16], gn[16];
    for (int32_t grp = 1; grp < x->g->s->cfg.ksplit; grp++) {
        ptx_ins(x->b, "setp.eq.u32 %s, %s, %d", ptx_reg_name(p, pn), ptx_reg_name(group_reg, gn),
                (int)grp);
        ptx_bra(x->b, p, 0, group_label(label, prefix, grp));
    }
}

/* The tile function's body. Under a K split every group runs its sums,
 * then all meet at one bar.sync (the same instruction for the whole CTA,
 * as bar.sync = barrier.sync.aligned requires; a barrier in each group's
 * own path would be undefined, and the unaligned barrier.sync costs a
 * helper call on sm_80), then every group runs its epilogue. */
static void emit_tile_body(tile_ctx *x, int32_t tile, ptx_reg group_reg, ptx_reg p)
{
    int32_t ks = x->g->s->cfg.ksplit;
    if (ks == 1) {
        emit_group_sums(x, tile, 0);
        emit_group_epilogue(x, tile, 0);
        return;
    }
    char label[GROUP_LABEL_CAP];
    emit_group_dispatch(x, group_reg, p, "$S");
    for (int32_t grp = 0; grp < ks; grp++) {
        if (grp)
            ptx_label(x->b, group_label(label, "$S", grp));
        emit_group_sums(x, tile, grp);
        if (grp + 1 < ks)
            ptx_bra(x->b, PTX_NO_REG, 0, "$SYNC");
    }
    ptx_label(x->b, "$SYNC");
    ptx_ins(x->b, "bar.sync 0");
    emit_group_dispatch(x, group_reg, p, "$E");
    for (int32_t grp = 0; grp < ks; grp++) {
        if (grp)
            ptx_label(x->b, group_label(label, "$E", grp));
        emit_group_epilogue(x, tile, grp);
    }
}

spf_status tile_emit(const tile_gen *g, int32_t tile, ptx_buf *unit)
{
    spf_status status = SPF_OK;
    const schedule *s = g->s;
    int32_t m1 = s->cfg.m1, v = s->cfg.v, ks = s->cfg.ksplit;
    ptx_buf body;
    ptx_init(&body);
    tile_ctx x = {.g = g, .b = &body};
    x.acc = mem_alloc_array((size_t)m1 * v, sizeof *x.acc);
    x.acc16 = mem_alloc_array((size_t)m1 * v, sizeof *x.acc16);
    x.started = mem_alloc((size_t)m1);
    x.touched = mem_alloc_array((size_t)ks, (size_t)m1);
    int64_t ring = (int64_t)s->cfg.prefetch + 1;
    x.ring = mem_alloc_array((size_t)ring, (size_t)g->raw * sizeof *x.ring);
    x.pool = mem_alloc_array((size_t)(m1 + ks - 1) / (size_t)ks, (size_t)v * sizeof *x.pool);
    if (g->gather)
        x.tap_pred = mem_alloc_array((size_t)g->gather->r * (size_t)g->gather->s,
                                     sizeof *x.tap_pred);
    if (!x.acc || !x.acc16 || !x.started || !x.touched || !x.ring || !x.pool ||
        (g->gather && !x.tap_pred))
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "tile %d registers", (int)tile);

    x.pb = reg(&x, PTX_REG_B64);
    x.pc = reg(&x, PTX_REG_B64);
    ptx_load_param(&body, "u64", x.pb, "pb");
    ptx_load_param(&body, "u64", x.pc, "pc");
    if (g->bias) {
        x.pbias = reg(&x, PTX_REG_B64);
        ptx_load_param(&body, "u64", x.pbias, "pbias");
    }
    ptx_reg act = reg(&x, PTX_REG_B32);
    ptx_load_param(&body, "u32", act, "pact");
    x.pact = reg(&x, PTX_REG_PRED);
    char pn[16], an[16];
    ptx_ins(&body, "setp.ne.u32 %s, %s, 0", ptx_reg_name(x.pact, pn), ptx_reg_name(act, an));
    if (g->gather)
        emit_tap_guards(&x);
    for (int64_t i = 0; i < ring * g->raw; i++)
        x.ring[i] = reg(&x, g->dtype == SPF_DTYPE_F32 ? PTX_REG_F32
                            : v == 1                  ? PTX_REG_B16
                                                      : PTX_REG_B32);
    if (g->dtype != SPF_DTYPE_F32) { /* conversion scratch */
        for (int l = 0; l < v && !g->f16x2; l++)
            x.bf[l] = reg(&x, PTX_REG_F32);
        x.h[0] = reg(&x, PTX_REG_B16);
        x.h[1] = reg(&x, PTX_REG_B16);
        x.tmp = reg(&x, PTX_REG_B32);
    }
    if (g->f16x2)
        x.apair = reg(&x, PTX_REG_B32);
    for (int32_t grp = 0; grp < ks; grp++)
        schedule_group_rows(s, tile, grp, &x.touched[(int64_t)grp * m1]);

    ptx_reg grp_reg = PTX_NO_REG, p = PTX_NO_REG;
    if (ks > 1) {
        x.psm = reg(&x, PTX_REG_B32);
        ptx_load_param(&body, "u32", x.psm, "psm");
        grp_reg = reg(&x, PTX_REG_B32);
        p = reg(&x, PTX_REG_PRED);
        ptx_load_param(&body, "u32", grp_reg, "pg");
        for (int64_t i = 0; i < (int64_t)(m1 + ks - 1) / ks * v; i++)
            x.pool[i] = reg(&x, PTX_REG_F32);
    }
    emit_tile_body(&x, tile, grp_reg, p);
    TRY(ptx_status(&body));

    char fname[160];
    snprintf(fname, sizeof fname, "%s_t%d", g->name, (int)tile);
    ptx_func_head(unit, PTX_LINK_VISIBLE, 0, 1, fname, tile_params, TILE_PARAMS);
    ptx_body_open(unit);
    ptx_reg_decls(unit, &x.regs);
    ptx_append(unit, body.data, body.len);
    ptx_body_close(unit);
    TRY(ptx_status(unit));
fail:
    ptx_free(&body);
    mem_free(x.acc);
    mem_free(x.acc16);
    mem_free(x.started);
    mem_free(x.touched);
    mem_free(x.ring);
    mem_free(x.pool);
    mem_free(x.tap_pred);
    return status;
}

/* ---------------------------------------------------------------- entry */

/* The entry's implicit gather (v = 1; r3 the thread's column, an output
 * position of the launch): into rd3 the byte offset of its window corner
 * in the input (conv_gather_base), into rd7 that of its C column (n_first
 * under NHWC: a position's K outputs are contiguous), and into r<mask>
 * bit r for each window row r inside the input and bit 16 + s for each
 * column s (emit_tap_guards reads them). Uses r8-r12, rd6 and p0. */
static void entry_gather(const tile_gen *g, int mask, ptx_buf *u)
{
    const conv_gather *c = g->gather;
    ptx_ins(u, "div.u32 %%r8, %%r3, %d", (int)(c->p * c->q)); /* image */
    ptx_ins(u, "mul.lo.u32 %%r12, %%r8, %d", (int)(c->p * c->q));
    ptx_ins(u, "sub.u32 %%r9, %%r3, %%r12"); /* position in the image */
    ptx_ins(u, "div.u32 %%r10, %%r9, %d", (int)c->q);
    ptx_ins(u, "mul.lo.u32 %%r12, %%r10, %d", (int)c->q);
    ptx_ins(u, "sub.u32 %%r11, %%r9, %%r12");
    ptx_ins(u, "mul.lo.u32 %%r10, %%r10, %d", (int)c->stride); /* y0 */
    ptx_ins(u, "mul.lo.u32 %%r11, %%r11, %d", (int)c->stride); /* x0 */
    if (c->nhwc) {
        ptx_ins(u, "mad.lo.u32 %%r12, %%r8, %d, %%r10", (int)c->h);
        ptx_ins(u, "mad.lo.u32 %%r12, %%r12, %d, %%r11", (int)c->w);
        ptx_ins(u, "mul.wide.u32 %%rd3, %%r12, %d", (int)c->c * g->es);
        ptx_ins(u, "mul.wide.u32 %%rd7, %%r3, %lld", (long long)g->s->m * g->es);
    } else {
        ptx_ins(u, "mad.lo.u32 %%r12, %%r10, %d, %%r11", (int)c->w);
        ptx_ins(u, "mul.wide.u32 %%rd3, %%r12, %d", g->es);
        ptx_ins(u, "mul.wide.u32 %%rd6, %%r8, %lld",
                (long long)c->c * c->h * c->w * g->es);
        ptx_ins(u, "add.s64 %%rd3, %%rd3, %%rd6");
        ptx_ins(u, "mul.wide.u32 %%rd7, %%r3, %d", g->es);
    }
    for (int32_t i = 0; i < c->r + c->s; i++) { /* rows, then columns */
        const int row = i < c->r, at = row ? i : i - c->r;
        ptx_ins(u, "add.s32 %%r12, %%r%d, %d", row ? 10 : 11, (int)(at - c->pad));
        ptx_ins(u, "setp.lt.u32 %%p0, %%r12, %d", (int)(row ? c->h : c->w));
        ptx_ins(u, "selp.u32 %%r12, %u, 0, %%p0", 1u << (row ? at : 16 + at));
        ptx_ins(u, "or.b32 %%r%d, %%r%d, %%r12", mask, mask);
    }
}

/* The entry: each thread's base pointers and group, then the block's tile
 * function, taken from a table of function addresses, called indirectly.
 * (A brx.idx branch table with a call site per tile made the entry unit
 * the bottleneck: ptxas took 31.7 s on it for 8192 tiles, 0.6 s with the
 * table; nvlink still counts the tile functions' registers.) Threads past
 * N keep a clamped, valid column (their loads stay in bounds) and store
 * nothing. A proxy's entry (d->cluster) reads n1 from its parameters, so
 * the group split and the column are computed from a register, and looks
 * its block's function up through the cluster table (LO-SpMM Figure 8c). */
spf_status entry_emit(const tile_gen *g, int sm, const entry_dispatch *d, ptx_buf *u)
{
    const schedule *s = g->s;
    const spf_kernel_config *cfg = &s->cfg;
    int proxy = d->cluster != NULL;
    char fname[160];
    ptx_module_header(u, sm);
    for (int32_t t = 0; t < d->functions; t++) {
        snprintf(fname, sizeof fname, "%s_t%d", g->name, (int)t);
        ptx_func_head(u, PTX_LINK_EXTERN, 0, 1, fname, tile_params, TILE_PARAMS);
    }
    snprintf(fname, sizeof fname, "%s_tiles", g->name);
    char prefix[160];
    snprintf(prefix, sizeof prefix, "%s_t", g->name);
    ptx_func_table(u, fname, prefix, d->functions);
    if (proxy) {
        ptx_printf(u, ".global .align 2 .u16 %s_cluster[%d] = {", g->name, (int)d->blocks);
        for (int32_t y = 0; y < d->blocks; y++)
            ptx_printf(u, "%s%u", y ? (y % 16 ? ", " : ",\n    ") : "", (unsigned)d->cluster[y]);
        ptx_printf(u, "};\n\n");
    }
    if (cfg->ksplit > 1)
        ptx_printf(u, ".extern .shared .align 16 .b8 spf_smem[];\n\n");
    static const ptx_param params[] = {{"u64", "B"}, {"u64", "C"}, {"u64", "bias"}, {"u32", "n1"}};
    ptx_func_head(u, PTX_LINK_VISIBLE, 1, 0, g->name, params, proxy ? 4 : 3);
    ptx_body_open(u);
    const int gather = g->gather != NULL && !proxy, mask = proxy ? 11 : gather ? 13 : 8;
    const ptx_regs regs = {.count = {[PTX_REG_PRED] = 1, [PTX_REG_B32] = mask + 1,
                                     [PTX_REG_B64] = proxy || gather ? 8 : 6}};
    ptx_reg_decls(u, &regs);
    /* r0 tid, r1 group, r2 thread in group, r3 column, r4 active, r5 shared,
     * r6 tile, r7 scratch; rd0 B, rd1 C, rd2 bias, rd3 byte offset; the last
     * b32 the tap mask (pmask). A proxy also has r8 n1, r9 threads per
     * group, r10 its first row, rd6; an implicit gather r8-r12, rd6-rd7. */
    char n1[16], group_threads[16];
    snprintf(n1, sizeof n1, "%d", (int)cfg->n1);
    snprintf(group_threads, sizeof group_threads, "%d", (int)s->group_threads);
    ptx_ins(u, "mov.u32 %%r0, %%tid.x");
    if (proxy) {
        ptx_ins(u, "ld.param.u32 %%r8, [n1]");
        ptx_ins(u, "div.u32 %%r9, %%r8, %d", (int)cfg->v);
        snprintf(n1, sizeof n1, "%%r8");
        snprintf(group_threads, sizeof group_threads, "%%r9");
    }
    if (cfg->ksplit > 1) {
        ptx_ins(u, "div.u32 %%r1, %%r0, %s", group_threads);
        ptx_ins(u, "mul.lo.u32 %%r7, %%r1, %s", group_threads);
        ptx_ins(u, "sub.u32 %%r2, %%r0, %%r7");
        ptx_ins(u, "mov.u32 %%r5, spf_smem");
        ptx_ins(u, "mad.lo.u32 %%r5, %%r2, %d, %%r5", (int)(cfg->v * sizeof(float)));
    } else {
        ptx_ins(u, "mov.u32 %%r1, 0");
        ptx_ins(u, "mov.u32 %%r2, %%r0");
        ptx_ins(u, "mov.u32 %%r5, 0");
    }
    ptx_ins(u, "mov.u32 %%r7, %%ctaid.x");
    ptx_ins(u, "mul.lo.u32 %%r3, %%r7, %s", n1);
    ptx_ins(u, "mad.lo.u32 %%r3, %%r2, %d, %%r3", (int)cfg->v);
    ptx_ins(u, "setp.lt.u32 %%p0, %%r3, %lld", (long long)s->n);
    ptx_ins(u, "selp.u32 %%r4, 1, 0, %%p0");
    ptx_ins(u, "min.u32 %%r3, %%r3, %lld", (long long)(s->n - cfg->v));
    ptx_ins(u, "mov.u32 %%r%d, 0", mask);
    if (gather)
        entry_gather(g, mask, u); /* rd3: B's byte offset, rd7: C's */
    else
        ptx_ins(u, "mul.wide.u32 %%rd3, %%r3, %d", g->es);
    ptx_ins(u, "ld.param.u64 %%rd4, [B]");
    ptx_ins(u, "cvta.to.global.u64 %%rd4, %%rd4");
    ptx_ins(u, "add.s64 %%rd0, %%rd4, %%rd3");
    ptx_ins(u, "ld.param.u64 %%rd5, [C]");
    ptx_ins(u, "cvta.to.global.u64 %%rd5, %%rd5");
    ptx_ins(u, "add.s64 %%rd1, %%rd5, %%rd%d", gather ? 7 : 3);
    ptx_ins(u, "ld.param.u64 %%rd2, [bias]");
    if (g->bias)
        ptx_ins(u, "cvta.to.global.u64 %%rd2, %%rd2");
    ptx_ins(u, "mov.u32 %%r6, %%ctaid.y");
    if (proxy) {
        /* The block's rows: its own tile's, pulled back at the end so that
         * all `rows` rows of its function's stores stay inside C. */
        ptx_ins(u, "mul.lo.u32 %%r10, %%r6, %d", (int)cfg->m1);
        ptx_ins(u, "min.u32 %%r10, %%r10, %lld", (long long)(d->m - d->rows));
        ptx_ins(u, "mul.wide.u32 %%rd6, %%r10, %lld", (long long)(s->n * g->es));
        ptx_ins(u, "add.s64 %%rd1, %%rd1, %%rd6");
        if (g->bias) {
            ptx_ins(u, "mul.wide.u32 %%rd6, %%r10, %d", (int)sizeof(float));
            ptx_ins(u, "add.s64 %%rd2, %%rd2, %%rd6");
        }
        ptx_ins(u, "mov.u64 %%rd3, %s_cluster", g->name);
        ptx_ins(u, "mul.wide.u32 %%rd4, %%r6, 2");
        ptx_ins(u, "add.s64 %%rd3, %%rd3, %%rd4");
        ptx_ins(u, "ld.global.nc.u16 %%r6, [%%rd3]");
    }
    ptx_ins(u, "mov.u64 %%rd3, %s_tiles", g->name);
    ptx_ins(u, "mul.wide.u32 %%rd4, %%r6, 8");
    ptx_ins(u, "add.s64 %%rd3, %%rd3, %%rd4");
    ptx_ins(u, "ld.global.nc.u64 %%rd5, [%%rd3]");
    const ptx_reg args[TILE_PARAMS] = {{PTX_REG_B64, 0}, {PTX_REG_B64, 1}, {PTX_REG_B64, 2},
                                       {PTX_REG_B32, 5}, {PTX_REG_B32, 1}, {PTX_REG_B32, 4},
                                       {PTX_REG_B32, mask}};
    ptx_call_indirect(u, (ptx_reg){PTX_REG_B64, 5}, tile_params, 1, args, TILE_PARAMS);
    ptx_ins(u, "ret");
    ptx_body_close(u);
    return ptx_status(u);
}

/* ---------------------------------------------------------- the units */

int tile_fma_per_entry(const tile_gen *g)
{
    return g->f16x2 ? 1 + g->s->cfg.v / 2 : g->s->cfg.v;
}

spf_status kernel_emit_units(const tile_gen *g, int sm, const entry_dispatch *d, ptx_program *out)
{
    spf_status status = SPF_OK;
    const schedule *s = g->s;
    ptx_buf unit;
    ptx_init(&unit);
    int fma = tile_fma_per_entry(g);
    int32_t chunks = 0;
    for (int32_t t = 0; t < s->tile_count; chunks++)
        t = schedule_unit_end(s, t, fma, UNROLLED_UNIT_INSTRUCTIONS);
    out->units = mem_calloc((size_t)chunks + 1, sizeof *out->units);
    if (!out->units)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "%d PTX units", (int)chunks + 1);
    TRY(entry_emit(g, sm, d, &unit));
    TRY(ptx_take(&unit, &out->units[0].text, &out->units[0].size));
    out->unit_count = 1;
    for (int32_t c = 0, first = 0; c < chunks; c++) {
        ptx_module_header(&unit, sm);
        int32_t end = schedule_unit_end(s, first, fma, UNROLLED_UNIT_INSTRUCTIONS);
        for (int32_t t = first; t < end; t++)
            TRY(tile_emit(g, t, &unit));
        first = end;
        TRY(ptx_take(&unit, &out->units[c + 1].text, &out->units[c + 1].size));
        out->unit_count++;
    }
    snprintf(out->entry, sizeof out->entry, "%s", g->name);
    out->max_registers = tile_register_cap(g);
fail:
    ptx_free(&unit);
    return status;
}

/* ------------------------------------------------------------ set-up */

unsigned tile_register_cap(const tile_gen *g)
{
    int64_t need = unrolled_register_need(&g->s->cfg, g->dtype);
    return (unsigned)(need > 255 ? 255 : need);
}

spf_status kernel_check_request(const spf_matrix *a, int64_t n, spf_dtype dtype, int f16x2,
                                const spf_kernel_config *cfg)
{
    if (!a)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "no matrix");
    if (dtype != SPF_DTYPE_F32 && dtype != SPF_DTYPE_F16 && dtype != SPF_DTYPE_BF16)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "dtype %d: not F32, F16 or BF16", (int)dtype);
    if (f16x2 && dtype != SPF_DTYPE_F16)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "f16x2 accumulation needs dtype F16");
    if (f16x2 && cfg && cfg->v == 1)
        return FAIL(SPF_ERR_INVALID_ARGUMENT, "f16x2 accumulation needs v = 2 or 4 (got v = 1)");
    /* Immediate byte offsets and 32-bit column arithmetic in the entry. */
    int64_t es = dtype == SPF_DTYPE_F32 ? 4 : 2;
    if (n > INT32_MAX / es || (a->cols > 0 && a->cols > INT32_MAX / es / n) ||
        a->rows > INT32_MAX / es / n)
        return FAIL(SPF_ERR_UNSUPPORTED,
                    "B (%lld × %lld) or C (%lld × %lld) spans over 2 GiB; offsets must fit 32 bits",
                    (long long)a->cols, (long long)n, (long long)a->rows, (long long)n);
    return SPF_OK;
}

void tile_gen_init(tile_gen *g, const schedule *s, spf_dtype dtype, int f16x2, int bias, int relu,
                   const char name[128])
{
    int v = s->cfg.v;
    *g = (tile_gen){.s = s, .dtype = dtype, .f16x2 = f16x2 != 0, .bias = bias != 0,
                    .relu = relu != 0, .es = dtype == SPF_DTYPE_F32 ? 4 : 2};
    g->raw = dtype == SPF_DTYPE_F32 ? v : v == 1 ? 1 : v / 2;
    g->c_row_bytes = s->n * g->es;
    snprintf(g->name, sizeof g->name, "%s", name);
}
