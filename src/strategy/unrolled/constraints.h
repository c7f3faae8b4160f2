/* The three constraints that prune the tile space before anything is
 * compiled (LO-SpMM §3.2–3.4), each a function of one configuration, and
 * space_reduce, which applies them in the paper's order and counts what is
 * left after each: space → register → utilization → balance.
 *
 * The low-cost search (src/gpu/search.h) calls space_reduce on
 * tile_space_create(n, space) with the plan's dtype and the device's SM
 * count, before ranking; with reordering its tile_problem carries one row
 * order per m1 (tile_problem.orders), so COV_row is measured on the order
 * each m1's kernel runs. The exhaustive tuner applies no constraint. */
#ifndef SPF_STRATEGY_UNROLLED_CONSTRAINTS_H
#define SPF_STRATEGY_UNROLLED_CONSTRAINTS_H

#include "strategy/unrolled/tiling.h"
#include "spforge.h"

/* Registers one thread may hold (the ISA's limit) and one block may hold
 * (the register file of an SM, sm_80 / sm_90). */
#define CONSTRAINT_MAX_REGISTERS 255
#define CONSTRAINT_BLOCK_REGISTERS 65536
/* SMs of an H100 / H200 SXM, the default target. */
#define CONSTRAINT_DEFAULT_SMS 132

typedef struct constraint_options {
    spf_dtype dtype;       /* storage of B and C (default F32; f16x2 accumulation
                              forecasts as F16)                                   */
    int max_registers;     /* per-thread cap, ≤ 255; lower it to ask for
                              occupancy (default 255)                             */
    int block_registers;   /* per-block register file (default 65536)            */
    int sm_count;          /* SMs of the target (default 132)                     */
    double th_row;         /* COV_row threshold (default 0.25, LO-SpMM §3.4)      */
    double th_col;         /* WASTE_col threshold (default 0.25)                  */
    int balance_floor;     /* space_reduce: when no survivor meets a threshold,
                              raise it to the best value among them (default 1;
                              0 applies the paper's thresholds as they are)      */
} constraint_options;

void constraint_options_init(constraint_options *o);

/* Registers per thread the generated kernel will use, forecast from the
 * configuration and dtype without generating or compiling (LO-SpMM §3.2):
 * the register cap the codegen gives ptxas, less the 2 ptxas leaves under
 * it (constraints.c gives the measurements and the error). */
int register_forecast(const spf_kernel_config *cfg, spf_dtype dtype);

/* Each constraint: 1 keeps the configuration, 0 drops it. */

/* §3.2: the forecast within max_registers per thread, and the block's
 * threads × forecast (allocated in units of 8 per thread) within the
 * register file, so the launch cannot fail for resources. */
int constraint_register(const tile_problem *p, const spf_kernel_config *cfg,
                        const constraint_options *o);

/* §3.3: threads per block a multiple of the warp size, and at least half as
 * many blocks (Eq. 1) as SMs. */
int constraint_utilization(const tile_problem *p, const spf_kernel_config *cfg,
                           const constraint_options *o);

/* §3.4: COV_row ≤ th_row and WASTE_col ≤ th_col (tiling.h defines both). */
int constraint_balance(const tile_problem *p, const spf_kernel_config *cfg,
                       const constraint_options *o);

/* The stages of space_reduce, in order. */
typedef enum constraint_stage {
    CONSTRAINT_STAGE_SPACE = 0,   /* the space before any constraint */
    CONSTRAINT_STAGE_REGISTER,
    CONSTRAINT_STAGE_UTILIZATION,
    CONSTRAINT_STAGE_BALANCE,
    CONSTRAINT_STAGES
} constraint_stage;

const char *constraint_stage_name(constraint_stage s);

/* Apply the constraints in stage order to s, keeping the survivors in place
 * (order preserved, s->count updated), and write the count after each stage
 * into counts (CONSTRAINT_STAGES entries; counts[0] is the space's size).
 * With balance_floor, the balance stage uses max(th_row, least COV_row of
 * the survivors) and max(th_col, least WASTE_col): LO-SpMM §3.4 drops a
 * tile size because a better balanced one exists, and where none meets
 * 0.25 (n = 49 or 100: every n1 ≥ 32 pads 28% or more) the paper's rule
 * would leave the planner nothing. o may be NULL for the defaults. */
spf_status space_reduce(const tile_problem *p, const constraint_options *o, tile_space *s,
                        int counts[CONSTRAINT_STAGES]);

#endif
