/* The PTX of the unrolled kernel family, shared by the real kernel
 * (unrolled.c) and its proxies (proxy.c, LO-SpMM §5): one .noreturn tile
 * function per tile of a schedule (its columns, K-split groups, reduction,
 * epilogue and stores), and the entry that computes each thread's base
 * pointers and calls its block's tile function through a table of function
 * addresses. unrolled.h describes the kernel these pieces make. */
#ifndef SPF_STRATEGY_UNROLLED_KERNEL_EMIT_H
#define SPF_STRATEGY_UNROLLED_KERNEL_EMIT_H

#include "conv/conv_gather.h"
#include "gpu/program.h"
#include "strategy/unrolled/ptx.h"
#include "strategy/unrolled/schedule.h"
#include "spforge.h"

#include <stdint.h>

/* What every tile function of one kernel shares. */
typedef struct tile_gen {
    const schedule *s;
    spf_dtype dtype;
    int f16x2;         /* accumulate in f16x2 (F16, v = 2 or 4)                        */
    int bias, relu;
    int es;            /* bytes per element of B and C                                 */
    int raw;           /* registers holding one loaded B row segment                   */
    int tile_relative; /* 0: a tile stores its rows at their original indices (row_list);
                          1 (proxies): at rows 0 .. rows - 1 counted from the C and bias
                          pointers the entry passes, which point at the block's rows     */
    const conv_gather *gather; /* B is a convolution's implicit im2col (v = 1; the
                          entry's B pointer is the input): the load of B row kk is
                          at conv_gather_offset(kk) from the column's base, guarded
                          where its tap can fall in the padding, and C is stored
                          n_first when gather->nhwc. NULL: B in memory          */
    int64_t c_row_bytes; /* bytes between two rows of C: n · es, or es (n_first)   */
    char name[128];    /* the entry; tile function t is <name>_t<t>                    */
} tile_gen;

/* "f32", "f16", "bf16", or "f16x2" for f16x2 accumulation (kernel names). */
const char *kernel_dtype_tag(spf_dtype dtype, int f16x2);

/* Check what a kernel of the family can be generated for: dtype F32, F16 or
 * BF16; f16x2 only with F16 and v = 2 or 4 (cfg may be NULL); B (k × n)
 * and C (m × n) within the 32-bit immediate byte offsets. */
spf_status kernel_check_request(const spf_matrix *a, int64_t n, spf_dtype dtype, int f16x2,
                                const spf_kernel_config *cfg);

/* Fill g for schedule s (borrowed for g's lifetime); tile_relative 0. */
void tile_gen_init(tile_gen *g, const schedule *s, spf_dtype dtype, int f16x2, int bias, int relu,
                   const char name[128]);

/* The register cap for the tile functions (ptx_program.max_registers):
 * unrolled_register_need, at most 255. */
unsigned tile_register_cap(const tile_gen *g);

/* Instructions per nonzero: v fmas (f16x2: a mov of the value pair and
 * v/2 fmas). */
int tile_fma_per_entry(const tile_gen *g);

/* Append the .visible .func <name>_t<tile> to unit (a module begun with
 * ptx_module_header). */
spf_status tile_emit(const tile_gen *g, int32_t tile, ptx_buf *unit);

/* How the entry picks a block's tile function and rows. */
typedef struct entry_dispatch {
    int32_t functions;       /* tile functions <name>_t0 .. _t<functions - 1>            */
    /* Real kernel: cluster NULL; block y calls function y, n1 is the
     * schedule's (an immediate), the kernel parameters are B, C, bias.
     * Proxy (LO-SpMM §5.1.1–5.1.2): block y calls function cluster[y]
     * (a .global table of `blocks` u16 in the entry unit), n1 is the
     * kernel's fourth parameter (.u32), and the C and bias pointers passed
     * to the tile function are advanced to row min(y · m1, m - rows), so
     * that a tile_relative function's `rows` rows land inside C. */
    const uint16_t *cluster;
    int32_t blocks;          /* grid.y: ceil(m / m1)                                      */
    int64_t m;               /* rows of C                                                 */
    int32_t rows;            /* rows each tile function stores, ≤ m                       */
} entry_dispatch;

/* Append the whole entry module (header, declarations of the tile
 * functions, the tables, the .entry <g->name>) to u. */
spf_status entry_emit(const tile_gen *g, int sm, const entry_dispatch *d, ptx_buf *u);

/* A program's text: units[0] the entry module (entry_emit), then chunk
 * units of whole tile functions of g->s, each about
 * UNROLLED_UNIT_INSTRUCTIONS (schedule_unit_end); also out->entry and
 * out->max_registers (tile_register_cap). The rest of out (geometry) is
 * the caller's; on failure out keeps what was made, for
 * ptx_program_free. */
spf_status kernel_emit_units(const tile_gen *g, int sm, const entry_dispatch *d, ptx_program *out);

#endif
