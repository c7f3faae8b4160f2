/* The warpgroup conv kernel's host side (conv/conv_wg.h) without a GPU:
 * for every shape of conv_wg_case.h and every block width the geometry
 * takes, each block's stage replayed as the copy engine fills it (of plane
 * (a, b), image m's halo row y, pixel x at the plane's row
 * (m·halo + y)·wp + x: input row stride·(oh0 + y) + a − pad, pixel
 * stride·x + b − pad; zeros outside the input and past the batch) and
 * every stored position's every tap read through conv_wg_row, as the kernel's B
 * descriptors do: the row must lie in the box and hold the input pixel
 * the reference reads (conv_gather_from), and every output position must
 * be stored by exactly one block. The taps of the positions never stored
 * must stay within the stage's rows. The accumulators' layout (row
 * 16·warp + lane / 4 (+ 8), column 8·(i / 4) + 2·(lane % 4) (+ 1)) must
 * cover the 64 × bn tile once. Every geometry is replayed with the weights
 * brought by each stage, resident and sparse (the positions are the
 * same). The sparse blocks and strays (conv_wg_sparse_pack) are read back
 * through the structured format's decoder into every weight exactly once.
 * Then ResNet-50's shapes (stages, rows, shared memory) and the
 * refusals. */
#include "conv_wg_case.h"

#include "core/alloc.h"
#include "strategy/structured/sp_format.h"

static int64_t taps_checked, taps_wrong, stored_wrong, reach_wrong;

static void replay(const conv_dims *d, const conv_wg_geom *g)
{
    const conv_gather cg = conv_dims_gather(d);
    const int32_t per_image = g->halo * g->wp, box_rows = g->images * per_image;
    const int32_t st = g->stride, across = conv_wg_planes_w(g), plane_rows = conv_wg_plane_rows(g);
    if (box_rows > plane_rows || plane_rows * conv_wg_planes(g) != g->stage_rows ||
        plane_rows % 8 != 0)
        reach_wrong++;
    int32_t *stores = calloc((size_t)cg.cols, sizeof *stores);
    const int32_t tiles = (g->n + g->images - 1) / g->images;
    for (int32_t tile = 0; tile < tiles; tile++)
        for (int32_t rt = 0; rt < g->row_tiles; rt++) {
            const int32_t image0 = tile * g->images, oh0 = rt * g->rows;
            for (int32_t pos = 0; pos < g->bn; pos++) {
                const int32_t m = pos / per_image, at = pos % per_image;
                const int32_t i = at / g->wp, j = at % g->wp, image = image0 + m;
                const int stored = m < g->images && image < g->n && i < g->rows && j < g->q &&
                                   oh0 + i < g->p;
                for (int32_t r = 0; r < g->r; r++)
                    for (int32_t s = 0; s < g->s; s++) {
                        const int32_t row = conv_wg_row(g, pos, r, s);
                        if (row >= g->stage_rows)
                            reach_wrong++;
                        if (!stored)
                            continue;
                        /* the pixel the stage holds at row, as the boxes fill
                         * it: plane (a, b), then image, then the plane's row
                         * and pixel, `stride` input rows and pixels apart */
                        const int32_t plane = row / plane_rows, prow = row % plane_rows;
                        const int32_t a = plane / across, b = plane % across;
                        const int32_t bm = prow / per_image, brow = prow % per_image;
                        const int32_t y = st * (oh0 + brow / g->wp) + a - g->pad;
                        const int32_t x = st * (brow % g->wp) + b - g->pad;
                        const int32_t bimage = image0 + bm;
                        const int inside = prow < box_rows && bimage < g->n && y >= 0 &&
                                           y < g->h && x >= 0 && x < g->w;
                        const int64_t holds =
                            inside ? (((int64_t)bimage * g->h + y) * g->w + x) * g->c : -1;
                        const int32_t col = (image * g->p + oh0 + i) * g->q + j;
                        const int32_t kk = (r * g->s + s) * g->c; /* channel 0 of the tap */
                        const int64_t want = conv_gather_from(&cg, kk, col);
                        taps_checked++;
                        if (holds != want || prow >= box_rows) {
                            if (taps_wrong++ < 5)
                                printf("  %s bn%d: images %d.. rows %d.. position %d tap (%d, "
                                       "%d): stage row %d holds %lld, the reference reads %lld\n",
                                       d->label, g->bn, image0, oh0, pos, r, s, row,
                                       (long long)holds, (long long)want);
                        }
                    }
                if (stored)
                    stores[(image * g->p + oh0 + i) * g->q + j]++;
            }
        }
    for (int32_t col = 0; col < cg.cols; col++)
        stored_wrong += stores[col] != 1;
    free(stores);
}

static void check_accumulators(int bn)
{
    int *seen = calloc((size_t)(64 * bn), sizeof *seen);
    for (int t = 0; t < CONV_WG_THREADS; t++)
        for (int i = 0; i < bn / 2; i++) {
            const int warp = t / 32, lane = t % 32;
            const int col = 8 * (i / 4) + 2 * (lane % 4) + i % 2;
            const int row = 16 * warp + lane / 4 + 8 * ((i / 2) % 2);
            seen[row * bn + col]++;
        }
    int wrong = 0;
    for (int e = 0; e < 64 * bn; e++)
        wrong += seen[e] != 1;
    CHECK_MSG(wrong == 0, "bn %d: %d accumulator elements not held exactly once", bn, wrong);
    free(seen);
}

/* Split over a cluster of `parts` blocks at wgmma N = bn, the kernel's
 * two phases replayed (kernels/conv_wg_device.cuh): wg_split_send's
 * (every block, each thread's accumulators: run u = i / 8 to block
 * u mod parts, row (u / parts)·16 + position mod 16 of its slot `rank`,
 * written there or into the slot sent there whole) and
 * wg_epilogue_store's reads (block `part`, the k of its turn, row
 * runs·16 + tid / 8 of each slot). Each position below bn must be stored
 * by exactly one block, and every slot row it reads must hold that
 * position and channel from that slot's block, written once. */
static void check_split(int bn, int parts)
{
    enum { PASS = CONV_WG_PASS };
    conv_wg_geom g;
    memset(&g, 0, sizeof g);
    g.bn = bn;
    g.splits = parts;
    const int share = conv_wg_share_rows(&g);
    /* written[((owner·parts + rank)·share + row)·64 + channel]: position + 1 */
    int *written = calloc((size_t)parts * parts * share * 64, sizeof *written);
    int *stored = calloc((size_t)bn, sizeof *stored), bad = 0;
    for (int rank = 0; rank < parts; rank++)
        for (int t = 0; t < CONV_WG_THREADS; t++) {
            const int lane = t % 32, row0 = 16 * (t / 32) + lane / 4;
            int owner = 0, row = 0;
            for (int u = 0; u < (bn / 2 + 7) / 8; u++) {
                for (int i = 8 * u; i < 8 * u + 8 && i < bn / 2; i++) {
                    const int col = 8 * (i / 4) + 2 * (lane % 4) + i % 2;
                    const int r = row + 8 * (i / 4 % 2) + 2 * (lane % 4) + i % 2;
                    const int ch = row0 + 8 * (i / 2 % 2);
                    int *w = &written[(((size_t)owner * parts + rank) * share + r) * 64 + ch];
                    bad += r >= share || *w != 0;
                    *w = col + 1;
                }
                if (++owner == parts)
                    owner = 0, row += PASS;
            }
        }
    for (int part = 0; part < parts; part++)
        for (int t = 0; t < CONV_WG_THREADS; t++) {
            int turn = part, runs = 0;
            for (int k = 0; k < (bn + PASS - 1) / PASS; k++) {
                const int pos = t / 8 + PASS * k, run = runs, mine = turn == 0;
                runs += mine;
                if (--turn < 0)
                    turn = parts - 1;
                if (!mine || pos >= bn)
                    continue;
                stored[pos] += t % 8 == 0;
                for (int rank = 0; rank < parts; rank++)
                    for (int c = 8 * (t % 8); c < 8 * (t % 8) + 8; c++)
                        bad += written[(((size_t)part * parts + rank) * share + run * PASS +
                                        t / 8) * 64 + c] != pos + 1;
            }
        }
    for (int pos = 0; pos < bn; pos++)
        bad += stored[pos] != 1;
    CHECK_MSG(bad == 0, "bn %d split %d ways: %d slots or positions wrong", bn, parts, bad);
    free(written);
    free(stored);
}

static conv_wg_geom geometry_of(const conv_dims *d, int bn, conv_wg_weights weights)
{
    const conv_gather g = conv_dims_gather(d);
    conv_wg_geom geom;
    char reason[200];
    memset(&geom, 0, sizeof geom);
    CHECK_MSG(conv_wg_geometry(&g, (int32_t)d->k, bn, weights, &geom, reason, sizeof reason),
              "%s bn%d refused: %s", d->label, bn, reason);
    return geom;
}

static void refused(const conv_dims *d, int bn, conv_wg_weights weights, spf_conv_layout layout,
                    const char *why)
{
    conv_gather g = conv_dims_gather(d);
    g.nhwc = layout == SPF_CONV_NHWC;
    conv_wg_geom geom;
    char reason[200] = "";
    CHECK_MSG(!conv_wg_geometry(&g, (int32_t)d->k, bn, weights, &geom, reason, sizeof reason),
              "%s bn%d: taken", d->label, bn);
    CHECK_MSG(strstr(reason, why) != NULL, "%s bn%d: the reason \"%s\" does not say \"%s\"",
              d->label, bn, reason, why);
}

/* Random weights of d (K × taps·C, columns in (r, s, c) order) at
 * `density`, packed sparse, read back: the 2:4 part through the
 * structured format's decoder (the blocks put back in its order), each
 * stray added where that part holds nothing; every weight, rounded to f16,
 * must come back, and the strays must be those past two in a run of
 * four, a block's by output channel in whole groups of
 * CONV_WG_STRAY_GROUP (the last filled out with zeros), each entry marked
 * CONV_WG_STRAY_MORE exactly where the next in its group adds to the same
 * sum. Row 3 at `hot`: one output channel with many strays, so runs that
 * cross groups. */
static void check_sparse_pack(const conv_dims *d, double density, double hot, uint64_t seed)
{
    const conv_wg_geom g = geometry_of(d, 128, CONV_WG_SPARSE);
    const int64_t rows = d->k, cols = d->c * d->r * d->s, taps = d->r * d->s;
    double *row_density = malloc((size_t)rows * sizeof *row_density);
    for (int64_t i = 0; i < rows; i++)
        row_density[i] = i == 3 ? hot : density;
    spf_matrix *w = random_csr(rows, cols, row_density, seed);
    free(row_density);
    float *want = dense_rounded(w, SPF_DTYPE_F16);
    float *got = calloc((size_t)(rows * cols), sizeof *got);
    const int64_t nnz = spf_matrix_nnz(w);
    int64_t strays = 0;
    for (int64_t e = 0; e < rows * cols; e += 4) {
        int run = 0;
        for (int j = 0; j < 4; j++)
            run += want[e + j] != 0.0f;
        strays += run > 2 ? run - 2 : 0;
    }
    conv_wg_sparse sp;
    CHECK_OK(conv_wg_sparse_pack(w, &g, SPF_DTYPE_F16, &sp));
    CHECK_MSG(sp.stray_count == strays, "%s: %lld strays, want %lld", d->label,
              (long long)sp.stray_count, (long long)strays);
    /* the blocks back in the format's order: tile 4·mb + w, pair t·chunks + ch */
    sp_format f;
    memset(&f, 0, sizeof f);
    f.rows = rows, f.cols = cols, f.dtype = SPF_DTYPE_F16, f.pattern.group = 4;
    f.tiles = rows / 16, f.pairs = cols / 64;
    f.values = calloc((size_t)(f.tiles * f.pairs * 256), sizeof *f.values);
    f.meta = calloc((size_t)(f.tiles * f.pairs * 32), sizeof *f.meta);
    const size_t block = conv_wg_sparse_block(&g);
    for (int64_t b = 0; b < sp.block_count; b++)
        for (int64_t t = 0; t < taps; t++)
            for (int w4 = 0; w4 < 4; w4++) {
                const int64_t mb = b / g.chunks, ch = b % g.chunks;
                const int64_t tp = (4 * mb + w4) * f.pairs + t * g.chunks + ch;
                const uint8_t *src = sp.blocks + (size_t)b * block;
                memcpy(f.values + tp * 256, src + (t * 4 + w4) * 1024, 1024);
                memcpy(f.meta + tp * 32, src + taps * CONV_WG_SP_VALUES + (t * 4 + w4) * 128, 128);
            }
    CHECK_OK(sp_format_to_dense(&f, got));
    int64_t misplaced = 0, unordered = 0, marked_wrong = 0, ragged = 0, placed = 0;
    for (int64_t b = 0; b < sp.block_count; b++) {
        const int32_t first = sp.stray_ptr[b], last = sp.stray_ptr[b + 1];
        ragged += (last - first) % CONV_WG_STRAY_GROUP != 0;
        for (int32_t i = first; i < last; i++) {
            const uint32_t key = sp.strays[2 * i], next = i + 1 < last ? sp.strays[2 * i + 2] : 0;
            const int64_t m = conv_wg_stray_m(key), at = key & CONV_WG_STRAY_AT;
            const int64_t c = at % CONV_WG_ROW / 2, shift = at / CONV_WG_ROW;
            const int64_t t = shift / g.wp * d->s + shift % g.wp; /* conv_wg_row's inverse */
            const int64_t row = b / g.chunks * 64 + m, col = t * d->c + b % g.chunks * 64 + c;
            const int group_end = (i - first) % CONV_WG_STRAY_GROUP == CONV_WG_STRAY_GROUP - 1;
            const int same = !group_end && conv_wg_stray_m(next) == m;
            marked_wrong += !(key & CONV_WG_STRAY_MORE) != !same;
            unordered += i + 1 < last && conv_wg_stray_m(next) < m;
            if (sp.strays[2 * i + 1] == 0) /* +0.0f: the last group's fill */
                continue;
            float v;
            memcpy(&v, &sp.strays[2 * i + 1], sizeof v);
            misplaced += got[row * cols + col] != 0.0f;
            got[row * cols + col] += v;
            placed++;
        }
    }
    CHECK_MSG(placed == strays && sp.stray_entries == sp.stray_ptr[sp.block_count],
              "%s: %lld strays placed of %lld, %lld entries", d->label, (long long)placed,
              (long long)strays, (long long)sp.stray_entries);
    int64_t wrong = 0;
    for (int64_t e = 0; e < rows * cols; e++)
        wrong += got[e] != want[e];
    /* the device's one buffer holds the three parts where the kernel looks */
    uint8_t *flat = NULL;
    size_t flat_bytes = 0;
    CHECK_OK(conv_wg_sparse_flatten(&sp, &g, &flat, &flat_bytes));
    CHECK(conv_wg_strays_at(&g) % 16 == 0 &&
          flat_bytes == conv_wg_strays_at(&g) + (size_t)sp.stray_entries * 8);
    CHECK(memcmp(flat, sp.blocks, conv_wg_stray_ptr_at(&g)) == 0);
    CHECK(memcmp(flat + conv_wg_stray_ptr_at(&g), sp.stray_ptr,
                 ((size_t)sp.block_count + 1) * sizeof *sp.stray_ptr) == 0);
    CHECK(memcmp(flat + conv_wg_strays_at(&g), sp.strays, (size_t)sp.stray_entries * 8) == 0);
    mem_free(flat);
    CHECK_MSG(misplaced == 0 && wrong == 0 && unordered == 0 && marked_wrong == 0 && ragged == 0,
              "%s at %.2f: %lld strays on a 2:4 value, %lld out of output channel order, %lld "
              "marked wrong, %lld blocks not whole groups, %lld weights wrong",
              d->label, density, (long long)misplaced, (long long)unordered,
              (long long)marked_wrong, (long long)ragged, (long long)wrong);
    printf("%s at density %.2f: %lld nonzeros, %lld strays in %lld entries, read back\n",
           d->label, density, (long long)nnz, (long long)strays, (long long)sp.stray_entries);
    free(f.values);
    free(f.meta);
    conv_wg_sparse_free(&sp);
    spf_matrix_free(w);
    free(want);
    free(got);
}

int main(int argc, char **argv)
{
    int geometries = 0, several = 0; /* several: blocks of more than one image */
    for (int i = 0; i < CONV_WG_DIMS; i++)
        for (int b = 0; b < CONV_WG_WIDTHS; b++)
            for (int weights = CONV_WG_STAGED; weights <= CONV_WG_SPARSE; weights++) {
                const conv_gather g = conv_dims_gather(&conv_wg_dims[i]);
                conv_wg_geom geom;
                char reason[200];
                if (!conv_wg_geometry(&g, (int32_t)conv_wg_dims[i].k, conv_wg_widths[b],
                                      (conv_wg_weights)weights, &geom, reason, sizeof reason)) {
                    /* only a box row wider than the block, or resident
                     * weights past shared memory */
                    CHECK_MSG(g.q + (g.s - 1) / g.stride > conv_wg_widths[b] ||
                                  (weights == CONV_WG_RESIDENT &&
                                   strstr(reason, "past shared memory")),
                              "%s bn%d refused: %s", conv_wg_dims[i].label, conv_wg_widths[b],
                              reason);
                    continue;
                }
                /* wgmma's N: the tile's positions up to the narrowest N built, within
                 * the width asked for */
                const int32_t positions = ((geom.images - 1) * geom.halo + geom.rows) * geom.wp;
                CHECK(geom.rows >= 1 && geom.bn == conv_wg_mma_n(positions) &&
                      geom.bn <= conv_wg_widths[b]);
                /* the rows and images evened out: no tile two rows (or two
                 * images) shorter than another */
                CHECK(geom.row_tiles * geom.rows - geom.p < geom.row_tiles);
                CHECK((geom.n + geom.images - 1) / geom.images * geom.images - geom.n <
                      (geom.n + geom.images - 1) / geom.images);
                CHECK(conv_wg_smem(&geom) <= CONV_WG_SMEM && geom.weights == weights);
                replay(&conv_wg_dims[i], &geom);
                geometries++;
                several += geom.images > 1 && geom.n % geom.images != 0;
            }
    printf("%d geometries, %lld taps replayed\n", geometries, (long long)taps_checked);
    CHECK(geometries >= 3 * CONV_WG_DIMS);
    CHECK_MSG(several >= 2, "%d geometries of several images a block, the last cut short", several);
    CHECK_MSG(taps_wrong == 0, "%lld taps read the wrong stage row", (long long)taps_wrong);
    CHECK_MSG(stored_wrong == 0, "%lld output positions not stored exactly once",
              (long long)stored_wrong);
    CHECK_MSG(reach_wrong == 0, "%lld taps past the stage's rows", (long long)reach_wrong);
    for (int bn = 8; bn <= 256; bn += 8)
        check_accumulators(bn);
    /* wgmma's N: the narrowest built at or past the positions */
    static const int32_t built[] = {
#define BUILT(n) n,
        CONV_WG_MMA_NS(BUILT)
#undef BUILT
    };
    const int count = (int)(sizeof built / sizeof built[0]);
    CHECK(built[0] == 8 && built[count - 1] == 256);
    for (int i = 0; i < count; i++)
        CHECK(built[i] % 8 == 0 && built[i] != CONV_WG_N_SERIALIZED &&
              (i == 0 || built[i] > built[i - 1]));
    for (int32_t positions = 1; positions <= 256; positions++) {
        const int32_t n = conv_wg_mma_n(positions);
        int narrowest = 0;
        while (built[narrowest] < positions)
            narrowest++;
        CHECK_MSG(n == built[narrowest], "%d positions: N %d", positions, n);
    }

    /* ResNet-50's 3x3 layers at batch 32 */
    const conv_dims layer1 = {"layer1", 32, 64, 56, 56, 64, 3, 3, 1, 1};
    conv_wg_geom g1 = geometry_of(&layer1, 256, CONV_WG_STAGED), single;
    CHECK(g1.wp == 58 && g1.rows == 4 && g1.halo == 6 && g1.bn == 232 && g1.stage_rows == 352 &&
          g1.stages == 1 && g1.row_tiles == 14 && g1.tiles == 32 * 14);
    CHECK(conv_wg_smem(&g1) == 1024 + 352 * 128 + 9 * 8192 + 24);
    CHECK(!conv_wg_one_stage(&g1, &single)); /* one chunk: one stage already */
    /* resident at 128 positions (2 rows of 58: N = 120): 72 KB of weights,
     * two stages of 240 rows and the sums (rows of 68 floats: 16-byte
     * aligned); at 256 (N = 232) it all fits too */
    conv_wg_geom g1w = geometry_of(&layer1, 128, CONV_WG_RESIDENT);
    CHECK(g1w.bn == 120 && g1w.stage_rows == 240 && g1w.stages == 2 &&
          g1w.weights == CONV_WG_RESIDENT && !conv_wg_one_stage(&g1w, &single));
    CHECK(conv_wg_smem(&g1w) == 1024 + 9 * 8192 + 2 * 240 * 128 + 120 * 68 * 4 + 24);
    conv_wg_geom g1w256 = geometry_of(&layer1, 256, CONV_WG_RESIDENT);
    CHECK(conv_wg_smem(&g1w256) == 1024 + 9 * 8192 + 2 * 352 * 128 + 232 * 68 * 4 + 24);
    const conv_dims layer4 = {"layer4", 32, 512, 7, 7, 512, 3, 3, 1, 1};
    conv_wg_geom g4 = geometry_of(&layer4, 64, CONV_WG_STAGED);
    CHECK(g4.wp == 9 && g4.rows == 7 && g4.images == 1 && g4.stage_rows == 88 && g4.chunks == 8 &&
          g4.stages == 2 && g4.row_tiles == 1);
    /* 64 positions (N 63 → 64) in 83 KB a stage: two stages one block an SM,
     * one stage two */
    CHECK(g4.bn == 64 && conv_wg_one_stage(&g4, &single) && single.stages == 1);
    CHECK(conv_wg_smem(&single) == 1024 + 88 * 128 + 9 * 8192 + 24);
    /* three 9×9 padded images in 256 positions: 2·81 + 7·9 = 225, N 232;
     * 11 tiles of three images for 32 */
    conv_wg_geom g4w = geometry_of(&layer4, 256, CONV_WG_STAGED);
    CHECK(g4w.images == 3 && g4w.rows == 7 && g4w.halo == 9 && g4w.bn == 232 && g4w.tiles == 11);
    char name[64];
    conv_wg_name(&g4w, SPF_DTYPE_F16, name, sizeof name);
    CHECK_MSG(strcmp(name, "convwg_f16_bn232_r7_i3_s2") == 0, "name %s", name);
    /* 4 images, 3 at most a block: 2 tiles of 2 (N 144), not 3 and 1 */
    const conv_dims four = {"7x7, batch 4", 4, 64, 7, 7, 64, 3, 3, 1, 1};
    conv_wg_geom g44 = geometry_of(&four, 256, CONV_WG_STAGED);
    CHECK_MSG(g44.images == 2 && g44.tiles == 2 && g44.bn == 144, "images %d tiles %d bn %d",
              g44.images, g44.tiles, g44.bn);
    /* layer2 (28 rows of 30): 4 tiles of 7 rows (N 210 → 216), not 8 */
    const conv_dims layer2 = {"layer2", 32, 128, 28, 28, 128, 3, 3, 1, 1};
    conv_wg_geom g2 = geometry_of(&layer2, 256, CONV_WG_STAGED);
    CHECK(g2.rows == 7 && g2.row_tiles == 4 && g2.bn == 216);
    /* sparse on layer3 at 256 positions (14 rows of 16: N 224): 264 input
     * rows and 9 taps' 2:4 blocks (41 472 bytes, to 41 984) a stage, two
     * stages beside the sums; the staged dense one also with one stage,
     * two blocks an SM */
    const conv_dims layer3 = {"layer3", 32, 256, 14, 14, 256, 3, 3, 1, 1};
    conv_wg_geom g3s = geometry_of(&layer3, 256, CONV_WG_SPARSE);
    CHECK(g3s.bn == 224 && g3s.stage_rows == 264 && g3s.stages == 2 &&
          conv_wg_sparse_block(&g3s) == 41472 && !conv_wg_one_stage(&g3s, &single));
    CHECK(conv_wg_smem(&g3s) == 1024 + 2 * (264 * 128 + 41984) + 224 * 65 * 4 + 24);
    conv_wg_name(&g3s, SPF_DTYPE_BF16, name, sizeof name);
    CHECK_MSG(strcmp(name, "convwg_bf16_bn224_r14_i1_s2_sp") == 0, "name %s", name);
    const conv_wg_geom g3 = geometry_of(&layer3, 256, CONV_WG_STAGED);
    CHECK(g3.stages == 2 && conv_wg_one_stage(&g3, &single) && single.stages == 1 &&
          single.bn == 224);
    /* where the wgmma's sums go apart: a stage (75 776 bytes) holds
     * layer3's (58 240), and layer2's (77 824: 280 rows) its 56 160; a
     * single stage (layer1's one chunk) and a 1×1's small stages (128 rows
     * and 5 KB of weights against 128 positions' 33 280) do not */
    CHECK(conv_wg_sums_in_stage(&g3s) && !conv_wg_sums_in_stage(&g1));
    const conv_wg_geom g2s = geometry_of(&layer2, 256, CONV_WG_SPARSE);
    const conv_wg_geom g1s = geometry_of(&layer1, 256, CONV_WG_SPARSE);
    const conv_dims wide_1x1 = {"1x1, C = 256", 1, 256, 16, 16, 64, 1, 1, 1, 0};
    const conv_wg_geom g11s = geometry_of(&wide_1x1, 128, CONV_WG_SPARSE);
    CHECK(g2s.stages == 2 && g2s.stage_rows == 280 && conv_wg_sums_in_stage(&g2s));
    CHECK(g1s.stages == 1 && !conv_wg_sums_in_stage(&g1s));
    CHECK(g11s.stages == 2 && !conv_wg_sums_in_stage(&g11s));
    check_sparse_pack(&layer3, 0.1, 0.1, 31);
    check_sparse_pack(&layer3, 0.1, 0.95, 34);            /* one busy channel */
    check_sparse_pack(&conv_wg_dims[3], 0.5, 0.5, 32); /* many strays */
    const conv_dims one = {"1x1, K = 128", 1, 128, 4, 4, 128, 1, 1, 1, 0};
    check_sparse_pack(&one, 0.3, 0.3, 33);

    for (int bn = 8; bn <= 256; bn += 8)
        for (int parts = 2; parts <= CONV_WG_MAX_SPLITS; parts *= 2)
            check_split(bn, parts);
    /* split over a cluster: layer3 at batch 1 (4 chunks) two or four ways,
     * one chunk a block then one stage; not three ways, not past
     * CONV_WG_MAX_SPLITS, not resident or sparse, not split twice */
    const conv_dims layer3_b1 = {"layer3, batch 1", 1, 256, 14, 14, 256, 3, 3, 1, 1};
    const conv_wg_geom g3b1 = geometry_of(&layer3_b1, 32, CONV_WG_STAGED);
    conv_wg_geom split, twice;
    CHECK(g3b1.splits == 1 && g3b1.chunks == 4 && g3b1.stages == 2);
    CHECK(conv_wg_split(&g3b1, 2, &split) && split.splits == 2 && split.stages == 2 &&
          conv_wg_one_stage(&split, &single) && single.splits == 2 && single.stages == 1);
    CHECK(conv_wg_split(&g3b1, 4, &split) && split.splits == 4 && split.stages == 1);
    /* 2 runs of 16 positions, one a block: 4 slots of 16 rows received and 4
     * sent, past the stage */
    CHECK(conv_wg_share_rows(&split) == 16 && conv_wg_sums_bytes(&split) == 2 * 4 * 16 * 68 * 4 &&
          conv_wg_smem(&split) == 1024 + 72 * 128 + 9 * 8192 + 2 * 4 * 16 * 68 * 4 + 24);
    conv_wg_name(&split, SPF_DTYPE_F16, name, sizeof name);
    CHECK_MSG(strcmp(name, "convwg_f16_bn32_r2_i1_s1_z4") == 0, "name %s", name);
    const conv_dims c384 = {"C = 384 (6 chunks)", 1, 384, 14, 14, 64, 3, 3, 1, 1};
    const conv_wg_geom g6 = geometry_of(&c384, 32, CONV_WG_STAGED);
    CHECK(conv_wg_split(&g6, 2, &twice) && !conv_wg_split(&g6, 3, &twice) &&
          !conv_wg_split(&g6, 6, &twice)); /* powers of two only */
    CHECK(!conv_wg_split(&split, 2, &twice) && !conv_wg_split(&g3b1, 3, &twice) &&
          !conv_wg_split(&g3b1, 8, &twice) && !conv_wg_split(&g3b1, 1, &twice));
    CHECK(!conv_wg_split(&g3s, 2, &twice) && !conv_wg_split(&g1w, 2, &twice));
    conv_wg_geom g4s;
    CHECK(conv_wg_split(&g4, CONV_WG_MAX_SPLITS, &g4s) && g4s.stages == 1 &&
          !conv_wg_split(&g4, CONV_WG_MAX_SPLITS * 2, &twice));
    CHECK(!conv_wg_split(&g1, 2, &twice)); /* one chunk */

    /* refusals, each with its reason */
    const conv_dims strided = {"stride 3", 1, 64, 8, 8, 64, 3, 3, 3, 1};
    refused(&strided, 128, CONV_WG_STAGED, SPF_CONV_NHWC, "stride 1 or 2");
    const conv_dims narrow = {"C = 32", 1, 32, 8, 8, 64, 3, 3, 1, 1};
    refused(&narrow, 128, CONV_WG_STAGED, SPF_CONV_NHWC, "multiples of 64");
    const conv_dims odd_k = {"K = 70", 1, 64, 8, 8, 70, 3, 3, 1, 1};
    refused(&odd_k, 128, CONV_WG_STAGED, SPF_CONV_NHWC, "multiples of 64");
    refused(&layer4, 64, CONV_WG_STAGED, SPF_CONV_NCHW, "NHWC");
    refused(&layer4, 16, CONV_WG_STAGED, SPF_CONV_NHWC, "32, 64, 128 or 256");
    refused(&layer4, 64, CONV_WG_RESIDENT, SPF_CONV_NHWC, "past shared memory");
    const conv_dims wide = {"W = 100", 1, 64, 4, 100, 64, 3, 3, 1, 1};
    refused(&wide, 64, CONV_WG_STAGED, SPF_CONV_NHWC, "wider than");
    const conv_dims seven = {"7x7", 1, 64, 9, 9, 64, 7, 7, 1, 3};
    refused(&seven, 64, CONV_WG_STAGED, SPF_CONV_NHWC, "past shared memory");
    return check_report();
}
