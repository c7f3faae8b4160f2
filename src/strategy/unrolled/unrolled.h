/* The generated, fully unrolled SpMM kernel for one (pattern, values, N,
 * dtype, config): PTX text in an entry unit plus chunk units of tile
 * functions (program.h), built from the schedule (schedule.h).
 *
 * LO-SpMM §6.1 Algorithm 2 and SparseRT §3.5: every nonzero of A is the
 * immediate operand of an fma, accumulators live in registers, B rows of
 * non-empty columns are loaded `prefetch` columns ahead at immediate byte
 * offsets (N is fixed, so row k of B sits k · N · sizeof(dtype) bytes past
 * the thread's base pointer); SparseRT §3.4: K split among thread groups
 * with a shared-memory reduction.
 *
 * The kernel (parameters B, C, bias: program.h) runs on a grid of
 * (ceil(N / n1) column tiles, ceil(M / m1) row tiles). Thread tid of a
 * block is thread tid mod (n1 / v) of group tid / (n1 / v); it owns
 * columns [x · n1 + t · v, + v) of its block's column tile x. The entry
 * calls the tile's function indirectly, through a table of function
 * addresses indexed by blockIdx.y; the function is .noreturn and ends the
 * thread with exit. B and
 * C must be aligned to v · sizeof(dtype) bytes (any cudaMalloc pointer is);
 * bias is M float32 in original row order.
 *
 * Compile the chunk units with ptxas --device-function-maxrregcount =
 * program.max_registers (and 32 more if a unit still spills): ptxas -c
 * leaves the ABI's callee-saved registers idle in a function it compiles
 * without a cap, about doubling its register count (measured, ptxas 13.0:
 * m1 = 8, v = 4 used 150 registers uncapped, 94 under the cap of 96, no
 * spills); .noreturn lets it use them under a cap without saving them. */
#ifndef SPF_STRATEGY_UNROLLED_UNROLLED_H
#define SPF_STRATEGY_UNROLLED_UNROLLED_H

#include "conv/conv_gather.h"
#include "gpu/program.h"
#include "spforge.h"

#include <stdint.h>

/* Instructions per chunk unit of the unrolled kernel (schedule_unit_end).
 * Chunks of 64 rows cut a 1040×168 layer at 0.95 (8.3 k nonzeros) into 17
 * units of ~500 nonzeros, and ptxas's start-up made each configuration cost
 * 1-4.5 s of CPU (H200 host, FULL-space tuning, 2026-11-22); ~4 k
 * instructions per unit is under half a second of ptxas. */
#define UNROLLED_UNIT_INSTRUCTIONS 4096

/* Registers per thread the tile functions are given (the register cap of
 * program.max_registers before it is clamped to 255), from the config and
 * the storage type alone: the planner's register forecast (LO-SpMM §3.2). */
int64_t unrolled_register_need(const spf_kernel_config *cfg, spf_dtype dtype);

/* The kernel's name, e.g. spf_unrolled_f32_m8_n128_v4_p2_k1 (STYLE.md 6);
 * f16x2 accumulation is written as the dtype "f16x2". */
void unrolled_kernel_name(const spf_kernel_config *cfg, spf_dtype dtype, int f16x2_accumulate,
                          char name[128]);

/* Generate the program for C = A·B (+ bias) (ReLU).
 *   a:          the matrix (read during the call only)
 *   row_order:  m row indices, a permutation (LO-SpMM Algorithm 1's
 *               reordering), or NULL; C rows are still stored in original
 *               order (DESIGN.md decision 4)
 *   n:          columns of B and C, ≥ 1
 *   dtype:      storage of B and C; accumulation in fp32, or in f16x2 when
 *               f16x2_accumulate is set (F16 with v = 2 or 4 only; A values
 *               are rounded to f16 and every fma rounds to f16: on the PTX
 *               interpreter of test_unrolled_emulate, with 3–10 nonzeros per
 *               row, the results differ from fp32 accumulation by up to
 *               about 1e-3 relative; the GPU tests measure it for real)
 *   bias, relu: epilogue switches (bias: the kernel's third parameter)
 *   sm:         80 or 90
 *   code_budget: the most instructions (schedule_instructions' estimate)
 *               the kernel may have, ≤ 0 for no limit; beyond it
 *               SPF_ERR_UNSUPPORTED, and the planner uses the generic kernel
 *   out:        filled on success (free with ptx_program_free); zeroed on
 *               failure */
spf_status unrolled_generate(const spf_matrix *a, const int32_t *row_order, int64_t n,
                             const spf_kernel_config *cfg, spf_dtype dtype, int f16x2_accumulate,
                             int bias, int relu, int sm, int64_t code_budget, ptx_program *out);

/* The same kernel with B the implicit im2col of a convolution's input
 * (issue 14 item 2; SparseRT, paper 004 §4.3): every load of B is the
 * input element under its nonzero's tap, at an immediate offset from the
 * thread's window corner (conv_gather_offset), guarded by the thread's tap
 * mask where the tap can fall in the padding (zero there), so no im2col
 * exists in memory. a is C_out × C·R·S with its columns in gather's B-row
 * order; n is gather->cols; the kernel's B parameter is the launch's input
 * (an NCHW image, or the NHWC batch), its C the output (n_first, a
 * position's C_out channels contiguous, under NHWC). v must be 1, no
 * f16x2. unrolled_gather_check says what the kernel cannot take. */
spf_status unrolled_generate_gather(const spf_matrix *a, const int32_t *row_order,
                                    const conv_gather *gather, const spf_kernel_config *cfg,
                                    spf_dtype dtype, int bias, int relu, int sm,
                                    int64_t code_budget, ptx_program *out);
spf_status unrolled_gather_check(const spf_matrix *a, const conv_gather *gather,
                                 const spf_kernel_config *cfg, spf_dtype dtype);

/* The instruction estimate unrolled_generate holds against code_budget,
 * without generating (the planner's cheap filter). Same arguments. */
spf_status unrolled_estimate(const spf_matrix *a, const int32_t *row_order, int64_t n,
                             const spf_kernel_config *cfg, spf_dtype dtype, int f16x2_accumulate,
                             int bias, int relu, int64_t *instructions);

#endif
