/* Coarse device peaks for the planner's roofline estimates (strategy.h's
 * estimate_us): what a kernel could reach at best on compute and on memory,
 * per SM so that a part with fewer SMs (H100 PCIe, A100 40 GB variants)
 * scales down. They rank strategies against each other; they promise no
 * time: every strategy's estimate is optimistic by the same rule, and the
 * plan times what it builds. */
#ifndef SPF_STRATEGY_ROOFLINE_H
#define SPF_STRATEGY_ROOFLINE_H

#include "spforge.h"

/* Host-side cost of one kernel launch that the roofline adds, microseconds. */
#define ROOFLINE_LAUNCH_US 4.0

typedef enum roofline_unit {
    ROOFLINE_CUDA_CORES = 0,  /* FMA on the SIMT cores                      */
    ROOFLINE_TENSOR_CORES = 1 /* mma: f16 / bf16, and f32 under TF32 math   */
} roofline_unit;

/* Peak FLOP/s (an FMA counts 2) of dev with B and C of dtype under math on
 * unit. Tensor cores have no exact-fp32 mode: F32 with DEFAULT math gets the
 * CUDA-core rate from either unit. CUDA cores run F16X2 as packed half2 FMA,
 * twice the fp32 rate; every other mode accumulates in fp32 at the fp32
 * rate. dev NULL or not available: an H100 SXM (132 SMs), the machine the
 * project is measured on. */
double roofline_peak_flops(const spf_device_info *dev, spf_dtype dtype, spf_math math,
                           roofline_unit unit);

/* Device-memory bandwidth of dev, bytes per second (same fallback). */
double roofline_bandwidth(const spf_device_info *dev);

/* The roofline time of one launch, microseconds: max(flops / peak,
 * bytes / bandwidth) + launches · ROOFLINE_LAUNCH_US. */
double roofline_us(double flops, double bytes, double peak_flops, double bandwidth, int launches);

#endif
