/* The structured kernels' configurations (names, refusals, shared memory,
 * threads): host code, no device needed. */
#include "strategy/structured/sp_kernel.h"

#include "core/error.h"

#include <stdio.h>
#include <string.h>

/* The shapes that earn their kernels (bench/results/kernel-budget/): on the
 * 440 rows of the predictor's sweeps the tile kernel's m32 n128,
 * m64 n128 and m128 n128 and the wgmma kernel's m64 n128 were never within
 * 2 % of the fastest config; m32 n64 stays as V:2:M's tile for V = 32
 * (bm divides V), the wgmma kernel's m128 n256 and m256 n128 as the TMA
 * kernel's fallbacks. */
const int sp_tile_shapes[SP_TILE_SHAPES][2] = {{64, 64}, {128, 64}, {32, 64}};
const int sp_wgmma_shapes[SP_WGMMA_SHAPES][2] = {{128, 256}, {128, 128}, {256, 128}, {64, 64}};
/* the TMA kernel falls back on the wgmma kernel of its shape (of m64 n64
 * for m128 n64) */
const int sp_tma_shapes[SP_TMA_SHAPES][2] = {{128, 256}, {256, 128}, {128, 128}, {128, 64}};

static int has_shape(const int (*shapes)[2], int count, const sp_config *c)
{
    for (int i = 0; i < count; i++)
        if (shapes[i][0] == c->bm && shapes[i][1] == c->bn)
            return 1;
    return 0;
}

int sp_nb_for(int64_t n)
{
    return n <= 8 ? 1 : n <= 16 ? 2 : n <= 32 ? 4 : 8;
}

int sp_stream_nb_min(int64_t n)
{
    /* past N = 32 also column blocks of 32: nb 8's rings of 64 columns
     * leave room for few warps */
    return n > 32 ? sp_nb_for(n) / 2 : sp_nb_for(n);
}

int sp_config_in_space(const sp_config *c, int64_t n, const sp_pattern *p, int hopper)
{
    sp_config space[SP_SPACE_MAX];
    int count = sp_tuning_space(n, p, hopper, space, SP_SPACE_MAX);
    for (int i = 0; i < count && i < SP_SPACE_MAX; i++) {
        const sp_config *s = &space[i];
        if (s->kind == c->kind && s->nb == c->nb && s->rt == c->rt && s->warps == c->warps &&
            s->stages == c->stages && s->bm == c->bm && s->bn == c->bn &&
            s->a_staged == c->a_staged && s->split_k == c->split_k)
            return 1;
    }
    return 0;
}

static const char *colvec_refusal(const sp_config *c, const sp_pattern *p)
{
    if (p && !p->vec)
        return "the column-vector kernel takes column vectors only";
    if (c->nb != 1 && c->nb != 2 && c->nb != 4 && c->nb != 8)
        return "nb must be 1, 2, 4 or 8";
    if (c->rt != 1)
        return "rt must be 1";
    if (c->warps < 1 || c->warps > 16)
        return "warps must be 1 to 16";
    if (c->stages < 2 || c->stages > 5)
        return "stages must be 2 to 5";
    if (c->warps * c->stages * SP_COLVEC_STAGE_BYTES(c->nb) > SP_MAX_SMEM)
        return "the warps' stages exceed 227 KB of shared memory";
    return NULL;
}

static const char *stream_refusal(const sp_config *c, const sp_pattern *p)
{
    if (c->nb != 1 && c->nb != 2 && c->nb != 4 && c->nb != 8)
        return "nb must be 1, 2, 4 or 8";
    if (c->rt != 1 && c->rt != 2 && c->rt != 4)
        return "rt must be 1, 2 or 4";
    if (c->rt == 4 && c->nb > 4)
        return "rt 4 takes nb up to 4 (the accumulators of 4 × 8 blocks pass the registers)";
    if (c->rt == 2 && c->nb > 4) /* never within 2 % of the fastest: bench/results/kernel-budget/ */
        return "rt 2 takes nb up to 4";
    if (c->warps < 1 || c->warps > (c->nb >= 4 ? 8 : 16))
        return "warps must be 1 to 16 (to 8 for nb 4 and 8: the register budget)";
    if (c->stages < 2 || c->stages > 5)
        return "stages must be 2 to 5";
    if (c->warps * c->stages * SP_STREAM_STAGE_BYTES(c->nb, c->rt) > SP_MAX_SMEM)
        return "the warps' stages exceed 227 KB of shared memory";
    if (p && p->v && 16 * c->rt > p->v)
        return "a block's row tiles must share one block of V rows";
    return NULL;
}

static const char *tile_refusal(const sp_config *c, const sp_pattern *p)
{
    if (!has_shape(sp_tile_shapes, SP_TILE_SHAPES, c))
        return "the tile must be m32, m64 or m128 by n64";
    if (c->stages < 2 || c->stages > 4)
        return "stages must be 2 to 4";
    if (p && p->v && p->v % c->bm != 0)
        return "a block's rows must lie in one block of V rows (bm dividing V)";
    return NULL;
}

static const char *wgmma_refusal(const sp_config *c, const sp_pattern *p)
{
    if (!has_shape(sp_wgmma_shapes, SP_WGMMA_SHAPES, c))
        return "the wgmma tile must be m64 n64, m128 n128, m128 n256 or m256 n128";
    if (c->stages < 2 || c->stages > 4)
        return "stages must be 2 to 4";
    if (p && p->v && p->v % c->bm != 0)
        return "a block's rows must lie in one block of V rows (bm dividing V)";
    return NULL;
}

static const char *tma_refusal(const sp_config *c, const sp_pattern *p)
{
    if (!has_shape(sp_tma_shapes, SP_TMA_SHAPES, c))
        return "the TMA tile must be m128 n64, m128 n128, m128 n256 or m256 n128";
    if (c->split_k != 0 && c->split_k != 2 && c->split_k != 4)
        return "split_k must be 0 (K not split), 2 or 4";
    if (c->split_k && (c->bm != 128 || c->bn > 128))
        return "K splits on the m128 n64 and m128 n128 tiles only";
    /* unstaged, these were never within 2 % of the fastest
     * (bench/results/kernel-budget/) */
    if (!c->a_staged && c->bm == 128 && c->bn <= 128)
        return "the m128 n64 and m128 n128 tiles stage A";
    if (c->stages < 2 || c->stages > SP_TMA_STAGES_MAX)
        return "stages must be 2 to 8";
    if (sp_config_smem(c) > SP_MAX_SMEM)
        return "the stages exceed 227 KB of shared memory";
    if (p && p->v)
        return "the TMA kernel takes 2:4 only (V:2:M's gathered rows of B, a tensor copy a row, "
               "were too slow; on Hopper at N >= 256 the strategy runs V:2:M as 2:4)";
    return NULL;
}

const char *sp_config_refusal(const sp_config *c, const sp_pattern *p)
{
    if (c->a_staged && c->kind != SP_TMA)
        return "only the TMA kernel stages A";
    if (c->split_k && c->kind != SP_TMA)
        return "only the TMA kernel splits K";
    if (c->kind == SP_COLVEC)
        return colvec_refusal(c, p);
    if (p && p->vec)
        return "column vectors take the column-vector kernel only (the others run mma.sp)";
    if (c->kind == SP_STREAM)
        return stream_refusal(c, p);
    if (c->kind == SP_TILE)
        return tile_refusal(c, p);
    if (c->kind == SP_WGMMA)
        return wgmma_refusal(c, p);
    if (c->kind == SP_TMA)
        return tma_refusal(c, p);
    return "unknown kernel";
}

static void add(sp_config c, const sp_pattern *p, sp_config *out, int cap, int *count)
{
    if (sp_config_refusal(&c, p))
        return;
    if (*count < cap)
        out[*count] = c;
    (*count)++;
}

int sp_tuning_space(int64_t n, const sp_pattern *p, int hopper, sp_config *out, int cap)
{
    int count = 0;
    for (int nb = sp_stream_nb_min(n); p->vec && nb <= sp_nb_for(n); nb *= 2)
        for (int warps = 2; warps <= 16; warps *= 2)
            for (int stages = 2; stages <= 5; stages++)
                add((sp_config){.kind = SP_COLVEC, .nb = nb, .rt = 1, .warps = warps,
                                .stages = stages},
                    p, out, cap, &count);
    for (int nb = sp_stream_nb_min(n); n <= 128 && nb <= 8; nb *= 2)
        for (int rt = 1; rt <= 4; rt *= 2)
            for (int warps = 2; warps <= 16; warps *= 2)
                for (int stages = 2; stages <= 5; stages++)
                    add((sp_config){.kind = SP_STREAM, .nb = nb, .rt = rt, .warps = warps,
                                    .stages = stages},
                        p, out, cap, &count);
    for (int i = 0; n >= 16 && i < SP_TILE_SHAPES; i++)
        for (int stages = 2; stages <= 4; stages++)
            add((sp_config){.kind = SP_TILE, .bm = sp_tile_shapes[i][0],
                            .bn = sp_tile_shapes[i][1], .stages = stages},
                p, out, cap, &count);
    for (int i = 0; n >= 16 && hopper && i < SP_WGMMA_SHAPES; i++)
        for (int stages = 2; stages <= 4; stages++)
            add((sp_config){.kind = SP_WGMMA, .bm = sp_wgmma_shapes[i][0],
                            .bn = sp_wgmma_shapes[i][1], .stages = stages},
                p, out, cap, &count);
    for (int i = 0; n >= 64 && hopper && i < SP_TMA_SHAPES; i++)
        for (int split_k = 0; split_k <= 4; split_k += 2)
            for (int a_staged = 0; a_staged <= 1; a_staged++)
                for (int stages = 3; stages <= 6; stages += stages == 4 ? 2 : 1)
                    add((sp_config){.kind = SP_TMA, .bm = sp_tma_shapes[i][0],
                                    .bn = sp_tma_shapes[i][1], .stages = stages,
                                    .a_staged = a_staged, .split_k = split_k},
                        p, out, cap, &count);
    return count;
}

size_t sp_config_smem(const sp_config *c)
{
    if (c->kind == SP_TILE || c->kind == SP_WGMMA)
        return (size_t)c->stages * SP_TILE_STAGE_BYTES(c->bm, c->bn);
    if (c->kind == SP_TMA) {
        size_t ring = (size_t)c->stages * SP_TMA_STAGE_BYTES(c->bm, c->bn, c->a_staged);
        size_t epilogue = SP_TMA_EPILOGUE_BYTES(c->bm, c->bn);
        return (ring > epilogue ? ring : epilogue) + SP_TMA_SPLIT_BYTES(c->bm, c->bn, c->split_k) +
               1024;
    }
    if (c->kind == SP_COLVEC)
        return (size_t)c->warps * (size_t)c->stages * SP_COLVEC_STAGE_BYTES(c->nb);
    /* the warps' rings; their sums (rt·nb·4 a lane) take less */
    return (size_t)c->warps * (size_t)c->stages * SP_STREAM_STAGE_BYTES(c->nb, c->rt);
}

int sp_config_threads(const sp_config *c)
{
    if (c->kind == SP_WGMMA) /* one warpgroup at bm 64, two beyond */
        return c->bm == 64 ? 128 : 256;
    if (c->kind == SP_TMA) /* two consumer warpgroups and the producer */
        return 384;
    if (c->kind == SP_TILE) /* warps of 32 rows; 2 along N at bm 64 and 128, else bn / 32 */
        return 32 * (c->bm / 32) * (c->bm == 32 ? c->bn / 32 : 2);
    return 32 * c->warps;
}

void sp_config_name(const sp_config *c, char *buf, size_t size)
{
    if (c->kind == SP_TILE || c->kind == SP_WGMMA || c->kind == SP_TMA)
        snprintf(buf, size, "%sm%dn%ds%d%s%s",
                 c->kind == SP_WGMMA ? "w" : c->kind == SP_TMA ? "t" : "", c->bm, c->bn,
                 c->stages, c->a_staged ? "a" : "",
                 c->split_k == 2 ? "k2" : c->split_k == 4 ? "k4" : "");
    else if (c->kind == SP_COLVEC)
        snprintf(buf, size, "cv_nb%d_w%d_s%d", c->nb, c->warps, c->stages);
    else
        snprintf(buf, size, "nb%d_rt%d_w%d_s%d", c->nb, c->rt, c->warps, c->stages);
}

spf_status sp_config_parse(const char *name, sp_config *out)
{
    CHECK_ARG(name != NULL && out != NULL);
    sp_config c = {0};
    int used = 0;
    if (name[0] == 'm' || name[0] == 'w' || name[0] == 't') {
        c.kind = name[0] == 'w' ? SP_WGMMA : name[0] == 't' ? SP_TMA : SP_TILE;
        const char *shape = name + (name[0] != 'm');
        if (sscanf(shape, "m%dn%ds%d%n", &c.bm, &c.bn, &c.stages, &used) != 3)
            used = -1;
        else if (c.kind == SP_TMA && shape[used] == 'a')
            c.a_staged = 1, used++;
        if (used >= 0 && c.kind == SP_TMA && shape[used] == 'k' &&
            (shape[used + 1] == '2' || shape[used + 1] == '4'))
            c.split_k = shape[used + 1] - '0', used += 2;
        if (used < 0 || shape[used] != '\0')
            return FAIL(SPF_ERR_PARSE, "structured config \"%s\": expected [w]m<BM>n<BN>s<S> or "
                        "tm<BM>n<BN>s<S>[a][k2|k4]", name);
    } else if (name[0] == 'c') {
        c.kind = SP_COLVEC, c.rt = 1;
        if (sscanf(name, "cv_nb%d_w%d_s%d%n", &c.nb, &c.warps, &c.stages, &used) != 3 ||
            name[used] != '\0')
            return FAIL(SPF_ERR_PARSE, "structured config \"%s\": expected cv_nb<B>_w<W>_s<S>",
                        name);
    } else if (sscanf(name, "nb%d_rt%d_w%d_s%d%n", &c.nb, &c.rt, &c.warps, &c.stages, &used) != 4 ||
               name[used] != '\0') {
        return FAIL(SPF_ERR_PARSE, "structured config \"%s\": expected nb<B>_rt<R>_w<W>_s<S>, "
                    "m<BM>n<BN>s<S>, wm<BM>n<BN>s<S>, tm<BM>n<BN>s<S>[a][k2|k4] or "
                    "cv_nb<B>_w<W>_s<S>", name);
    }
    *out = c;
    return SPF_OK;
}

spf_status sp_config_from_name(const char *name, sp_config *out)
{
    sp_config c;
    spf_status st = sp_config_parse(name, &c);
    if (st != SPF_OK)
        return st;
    const char *why = sp_config_refusal(&c, NULL);
    if (why)
        return FAIL(SPF_ERR_PARSE, "structured config \"%s\": %s", name, why);
    *out = c;
    return SPF_OK;
}
