/* The model: a launch is bound by the slowest of
 *   - device memory: the format once, B once, C once;
 *   - the staging traffic from L2: per tile and column block its masks,
 *     values and 16 rows of B (Hopper's L2 feeds about three times the
 *     device-memory bandwidth);
 *   - instruction issue: the decode of a tile costs about DECODE_INSTR
 *     warp instructions per column block, plus the mma and B fragment
 *     reads per n8 tile;
 *   - the longest chain: a warp walks its unit's tiles one after another,
 *     each costing a memory latency divided by the tiles in flight
 *     (stages − 1), in as many waves as the units fill the device.
 * Constants are from the H100 / H200 (roofline.h gives the device's
 * bandwidth); the strategy times the first few anyway. */
#include "strategy/tc/tc_rank.h"

#include "core/dtype.h"
#include "core/matrix.h"
#include "strategy/roofline.h"

#include <math.h>
#include <stdlib.h>

/* Measured, not designed: Nsight Compute on the H100 (commit 788ec20, LLM
 * 4096×4096 at 0.7, N = 16, unit kernel nt2) counted about 430 warp
 * instructions per tile and 2.5 issued per cycle per SM (11 cycles
 * between a warp's instructions, 28 warps active): the kernels are
 * instruction-bound, 3-4× slower than dense fp16 there
 * (bench/results/tc/README.md). */
#define DECODE_INSTR 420.0   /* warp instructions per tile and column block  */
#define NT_INSTR 6.0         /* per n8 tile: fragments and mma (TF32: twice) */
#define ISSUE_PER_US 4.4e3   /* warp instructions per µs per SM (2.5 × 1.755 GHz) */
#define L2_OVER_DRAM 3.0
#define LATENCY_US 0.8       /* one tile's copies, issue to use             */
#define SMEM_PER_SM 233472.0 /* bytes (H100 / H200: 228 KiB)               */
#define MAX_WARPS_PER_SM 64.0

static int sm_count(const spf_device_info *dev)
{
    return dev && dev->available && dev->sm_count > 0 ? dev->sm_count : 132;
}

/* The model for given tiles, bytes of the format and the heaviest unit. */
/* Warps of config c an SM holds, by shared memory (registers allow more). */
static int resident_of(const problem *p, const tc_config *c)
{
    double blocks = floor(SMEM_PER_SM / (double)tc_config_smem(c, p->dtype, p->b_layout));
    return (int)fmin(blocks * c->warps, MAX_WARPS_PER_SM);
}

static double model_us(const problem *p, double tiles, double format_bytes, double heaviest,
                       double units, const tc_config *c, const spf_device_info *dev)
{
    double es = (double)dtype_size(p->dtype), n = (double)p->n, nb = 8.0 * c->nt;
    double blocks = ceil(n / nb), sms = sm_count(dev), bw = roofline_bandwidth(dev);
    double dram = format_bytes + ((double)p->k + (double)p->m) * n * es;
    double windows = ceil((double)p->m / TC_TILE), kblocks = ceil((double)p->k / TC_TILE);
    /* B's rows per tile (unit kernel) or per column block of a warp group */
    double b_rows = c->group ? ceil(windows / c->warps) * kblocks : tiles;
    double staged = blocks * (tiles * 32.0 + format_bytes + b_rows * 16 * nb * es);
    double instr = tiles * blocks * (DECODE_INSTR + NT_INSTR * c->nt * (es == 4 ? 2 : 1));
    double resident = resident_of(p, c);
    if (resident < 1)
        return INFINITY;
    if (c->group) { /* a warp walks every column block of its K part */
        double parts = c->split ? tc_group_parts((int64_t)windows, p->k, (int64_t)blocks, c->warps,
                                                 (int)sms, (int)resident)
                                : 1.0;
        units = windows * parts;
        heaviest = ceil(kblocks / parts);
    }
    double waves = ceil(units * blocks / (sms * resident));
    double chain = waves * heaviest * LATENCY_US / (c->stages - 1);
    double us = fmax(fmax(dram / bw * 1e6, staged / (L2_OVER_DRAM * bw) * 1e6),
                     fmax(instr / (sms * ISSUE_PER_US), chain));
    return us + ROOFLINE_LAUNCH_US;
}

/* The units and heaviest unit tc_units_build would make (without
 * building them). */
static void units_of(const problem *p, const tc_format *f, const tc_config *c, int sms,
                     double *units, double *heaviest)
{
    double chunk = c->split ? (double)tc_unit_chunk(f->tiles, sms, resident_of(p, c)) : INFINITY;
    *units = 0, *heaviest = 0;
    for (int64_t w = 0; w < f->windows; w++) {
        double t = (double)(f->window_tile[w + 1] - f->window_tile[w]);
        double parts = t > chunk ? ceil(t / chunk) : 1;
        *units += parts;
        *heaviest = fmax(*heaviest, ceil(t / parts));
    }
}

double tc_model_us(const problem *p, const tc_format *f, const tc_config *c,
                   const spf_device_info *dev)
{
    double units, heaviest;
    units_of(p, f, c, sm_count(dev), &units, &heaviest);
    return model_us(p, (double)f->tiles, (double)f->bytes, heaviest, units, c, dev);
}

static int nt_for(int64_t n)
{
    int nt = 1;
    while (nt < 8 && 8 * nt < n)
        nt *= 2;
    return nt;
}

tc_estimate tc_estimate_problem(const problem *p, const spf_device_info *dev)
{
    double m = (double)p->m, k = (double)p->k, nnz = (double)p->a->nnz;
    double blocks = ceil(m / TC_TILE) * ceil(k / TC_TILE);
    double density = m * k > 0 ? nnz / (m * k) : 0;
    double tiles = fmin(blocks * (1.0 - pow(1.0 - density, TC_TILE * TC_TILE)), nnz);
    double es = (double)dtype_size(p->dtype);
    double bytes = nnz * es + tiles * (TC_QUADRANTS * 8 + 12 + 8);
    double windows = ceil(m / TC_TILE);
    tc_config c = {.nt = nt_for(p->n), .stages = 3, .warps = 4, .split = 1};
    double heaviest =
        windows > 0 ? (double)tc_unit_chunk((int64_t)tiles, sm_count(dev), resident_of(p, &c)) : 0;
    tc_estimate e = {.tiles = tiles};
    e.us = model_us(p, tiles, bytes, fmin(heaviest, tiles), windows, &c, dev);
    return e;
}

typedef struct scored {
    tc_config c;
    double us;
} scored;

static int faster_first(const void *x, const void *y)
{
    double a = ((const scored *)x)->us, b = ((const scored *)y)->us;
    return a < b ? -1 : a > b;
}

int tc_rank_configs(const problem *p, const tc_format *f, const spf_device_info *dev,
                    tc_config *out, int cap)
{
    static const int nts[] = {1, 2, 4, 8}, stages[] = {2, 3, 4}, warps[] = {4, 8};
    scored s[TC_MAX_CONFIGS];
    int count = 0, widest = nt_for(p->n);
    int smem_limit = dev && dev->available ? dev->max_shared_per_block_optin : 232448;
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 3; b++)
            for (int w = 0; w < 2; w++)
                for (int sp = 0; sp < 4; sp++) {
                    tc_config c = {nts[a], stages[b], warps[w], sp & 1, sp >> 1};
                    if (c.nt > widest || (p->n + 8 * c.nt - 1) / (8 * c.nt) > 65535 || tc_config_refusal(&c, p->dtype, p->b_layout, f->mode) ||
                        tc_config_smem(&c, p->dtype, p->b_layout) > (size_t)smem_limit)
                        continue;
                    s[count].c = c;
                    s[count].us = tc_model_us(p, f, &c, dev);
                    count++;
                }
    qsort(s, (size_t)count, sizeof *s, faster_first);
    int n = count < cap ? count : cap;
    for (int i = 0; i < n; i++)
        out[i] = s[i].c;
    return n;
}
