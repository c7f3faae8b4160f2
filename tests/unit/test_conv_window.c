/* The window kernel's host side (conv/conv_window.h) without a GPU: its
 * arithmetic replayed on the CPU by the geometry functions the kernel
 * itself calls (the window copied per tile and chunk, the rest of it
 * poisoned with NaN; each nonzero's offset from the format; the epilogue's
 * bias, residual and ReLU), against the conv reference, for every shape
 * of conv_case.h and wider ones, every config, and windows forced into
 * channel chunks (the last one partial); every window read checked to
 * fall inside the staged rows. Then the configs worth timing and the
 * refusals (NCHW, a window row past the budget). */
#include "conv_window_case.h"

#include <math.h>

static int reads_outside; /* window reads past a chunk's staged rows */

/* What the kernel computes, block by block: NHWC out of images × P·Q × K. */
static void replay(const conv_window_format *f, const float *in, const float *bias,
                   const float *residual, int relu, float *out)
{
    const conv_window_geom *g = &f->geom;
    const int32_t pq = g->p * g->q, we = g->wr * g->ww;
    float *win = malloc((size_t)g->cc * we * sizeof *win);
    double *acc = malloc((size_t)g->k * g->pt * sizeof *acc);
    for (int32_t image = 0; image < g->images; image++)
        for (int32_t t = 0; t < g->tiles; t++) {
            const int32_t first = conv_window_first_row(g, t), rows = conv_window_rows(g, t);
            for (int64_t i = 0; i < (int64_t)g->k * g->pt; i++)
                acc[i] = 0;
            for (int32_t ch = 0; ch < g->chunks; ch++) {
                const int32_t c0 = ch * g->cc, cc = g->c - c0 < g->cc ? g->c - c0 : g->cc;
                for (int64_t i = 0; i < (int64_t)g->cc * we; i++)
                    win[i] = NAN;
                for (int32_t cl = 0; cl < cc; cl++)
                    for (int32_t y = 0; y < rows; y++)
                        for (int32_t x = 0; x < g->ww; x++) {
                            const int64_t from = conv_window_source(g, image, first, y, x);
                            win[cl * we + y * g->ww + x] = from < 0 ? 0.0f : in[from + c0 + cl];
                        }
                for (int32_t k = 0; k < g->k; k++)
                    for (int32_t e = f->ptr[k * g->chunks + ch]; e < f->ptr[k * g->chunks + ch + 1];
                         e++) {
                        float v;
                        memcpy(&v, &f->entry[2 * e], sizeof v);
                        const int32_t off = (int32_t)f->entry[2 * e + 1];
                        for (int32_t pl = 0; pl < g->pt && t * g->pt + pl < pq; pl++) {
                            const int32_t at = off + conv_window_position(g, first, t * g->pt + pl);
                            if (at < 0 || at >= cc * we || isnan(win[at])) {
                                reads_outside++;
                                continue;
                            }
                            acc[(int64_t)k * g->pt + pl] += (double)v * win[at];
                        }
                    }
            }
            for (int32_t pl = 0; pl < g->pt && t * g->pt + pl < pq; pl++)
                for (int32_t k = 0; k < g->k; k++) {
                    const int64_t o = ((int64_t)image * pq + t * g->pt + pl) * g->k + k;
                    double y = acc[(int64_t)k * g->pt + pl] + (bias ? bias[k] : 0.0);
                    if (residual)
                        y += residual[o];
                    out[o] = (float)(relu && y < 0 ? 0.0 : y);
                }
        }
    free(win);
    free(acc);
}

/* d's case under config cfg with a window budget of smem_cap bytes; the
 * chunks the geometry took, or 0 when it refused. */
static int32_t check_config(const conv_dims *d, conv_window_config cfg, size_t smem_cap,
                            int variant, uint64_t seed)
{
    const int bias = variant & 1, residual = (variant >> 1) & 1, relu = (variant >> 2) & 1;
    conv_case t;
    conv_case_make(&t, d, SPF_CONV_NHWC, bias, residual, relu, SPF_DTYPE_F32, seed);
    conv_window_format f;
    if (!conv_window_case_format(&t, d, cfg, smem_cap, &f)) {
        conv_case_free(&t);
        return 0;
    }
    const conv_window_geom geom = f.geom;
    CHECK(geom.cc >= 1 && geom.chunks == (geom.c + geom.cc - 1) / geom.cc);
    CHECK((size_t)geom.cc * geom.wr * geom.ww * sizeof(float) <= smem_cap);
    CHECK(conv_window_smem(&geom) <= CONV_WINDOW_SMEM_LIMIT);
    CHECK_EQ_I64(f.ptr[(int64_t)geom.k * geom.chunks], spf_matrix_nnz(t.w));
    reads_outside = 0;
    for (int64_t i = 0; i < t.out_count; i++)
        t.out[i] = NAN;
    replay(&f, t.in, bias ? t.bias : NULL, t.residual, relu, t.out);
    CHECK_MSG(reads_outside == 0, "%s rw%d j%d cc%d: %d reads outside the staged window",
              d->label, cfg.rw, cfg.j, geom.cc, reads_outside);
    const double err = spf_relative_error(t.out, t.want, t.out_count);
    CHECK_MSG(err <= 1e-6, "%s rw%d j%d cc%d chunks %d variant %d: relative error %.3g",
              d->label, cfg.rw, cfg.j, geom.cc, geom.chunks, variant, err);
    conv_window_format_free(&f);
    conv_case_free(&t);
    return geom.chunks;
}

static void check_configs_and_refusals(void)
{
    conv_window_config cfg[CONV_WINDOW_MAX_CONFIGS];
    char reason[160];
    /* 49 positions and 512 channels: every rw; j 1 and 2 (j 4's 128
     * positions would leave most lanes idle) */
    conv_gather g = {.c = 512, .h = 7, .w = 7, .r = 3, .s = 3, .stride = 1, .pad = 1, .p = 7,
                     .q = 7, .cols = 49, .nhwc = 1};
    int n = conv_window_configs(&g, 512, cfg, reason, sizeof reason);
    CHECK_EQ_I64(n, 8);
    for (int i = 0; i < n; i++)
        CHECK(cfg[i].j <= 2);
    /* 4 output channels: rw 1 alone (8 warps of one channel already
     * leave half the block idle) */
    n = conv_window_configs(&g, 4, cfg, reason, sizeof reason);
    CHECK_EQ_I64(n, 2);
    for (int i = 0; i < n; i++)
        CHECK(cfg[i].rw == 1);
    g.nhwc = 0;
    CHECK(conv_window_configs(&g, 4, cfg, reason, sizeof reason) == 0 && strstr(reason, "NCHW"));
    /* a window row of one channel past the budget */
    g = (conv_gather){.c = 3, .h = 8, .w = 40000, .r = 3, .s = 3, .stride = 1, .pad = 1, .p = 8,
                      .q = 40000, .cols = 320000, .nhwc = 1};
    CHECK(conv_window_configs(&g, 8, cfg, reason, sizeof reason) == 0 &&
          strstr(reason, "shared memory"));
    conv_window_geom geom;
    g.w = g.q = 56;
    g.cols = 8 * 56;
    CHECK(conv_window_geometry(&g, 8, (conv_window_config){2, 1}, CONV_WINDOW_SMEM, &geom, reason,
                               sizeof reason));
    char name[64];
    conv_window_name(&geom, SPF_DTYPE_F16, name, sizeof name);
    CHECK_MSG(strcmp(name, "window_f16_rw2_j1_cc3") == 0, "%s", name);
}

int main(int argc, char **argv)
{
    uint64_t seed = 0xa1d0;
    int chunked = 0;
    for (int i = 0; i < CONV_TEST_DIMS + CONV_WINDOW_DIMS; i++) {
        const conv_dims *d = conv_window_dim(i);
        for (int c = 0; c < CONV_WINDOW_ALL; c++) {
            seed += 8;
            const int variant = (int)(seed / 8 % 8);
            CHECK(check_config(d, conv_window_all[c], CONV_WINDOW_SMEM, variant, seed) == 1);
            const conv_gather g = conv_dims_gather(d);
            conv_window_geom geom;
            char reason[160];
            if (conv_window_geometry(&g, (int32_t)d->k, conv_window_all[c], CONV_WINDOW_SMEM,
                                     &geom, reason, sizeof reason))
                chunked += check_config(d, conv_window_all[c], conv_window_chunking_cap(&geom),
                                        variant, seed + 1) > 1;
        }
    }
    CHECK_MSG(chunked >= 9, "%d configs ran in chunks", chunked);
    check_configs_and_refusals();
    return check_report();
}
