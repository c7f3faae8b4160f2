/* Per-SM peaks of the architectures spforge targets (CMake builds sm_80 and
 * sm_90), from NVIDIA's data sheets, divided by the SM count of the part the
 * sheet describes. Dense throughput, no 2:4 sparsity. */
#include "strategy/roofline.h"

typedef struct sm_peaks {
    double tensor_f16;  /* FLOP/s per SM, f16 / bf16 mma (fp32 or fp16 accumulation) */
    double tensor_tf32; /* FLOP/s per SM, TF32 mma                                    */
    double fma_f32;     /* FLOP/s per SM, fp32 FMA on the CUDA cores                  */
    double bandwidth;   /* bytes/s per SM of device memory                            */
} sm_peaks;

/* H100 SXM5: 989 TFLOP/s f16 / bf16, 495 TF32, 67 fp32, 3.35 TB/s, 132 SMs
 * (H200 has the same SMs and 4.8 TB/s: its memory estimate is pessimistic). */
static const sm_peaks sm90 = {989e12 / 132, 494.5e12 / 132, 67e12 / 132, 3.35e12 / 132};
/* A100 SXM4 40 GB: 312 TFLOP/s f16 / bf16, 156 TF32, 19.5 fp32, 1.555 TB/s,
 * 108 SMs. */
static const sm_peaks sm80 = {312e12 / 108, 156e12 / 108, 19.5e12 / 108, 1.555e12 / 108};

enum { FALLBACK_SMS = 132 };

/* The figures of the newest known architecture not newer than dev's. */
static const sm_peaks *peaks_of(const spf_device_info *dev, int *sms)
{
    if (!dev || !dev->available || dev->sm_count <= 0) {
        *sms = FALLBACK_SMS;
        return &sm90;
    }
    *sms = dev->sm_count;
    return dev->cc_major >= 9 ? &sm90 : &sm80;
}

double roofline_peak_flops(const spf_device_info *dev, spf_dtype dtype, spf_math math,
                           roofline_unit unit)
{
    int sms;
    const sm_peaks *p = peaks_of(dev, &sms);
    double per_sm;
    if (unit == ROOFLINE_TENSOR_CORES && dtype != SPF_DTYPE_F32)
        per_sm = p->tensor_f16;
    else if (unit == ROOFLINE_TENSOR_CORES && math == SPF_MATH_TF32)
        per_sm = p->tensor_tf32;
    else if (math == SPF_MATH_F16X2)
        per_sm = 2 * p->fma_f32;
    else
        per_sm = p->fma_f32;
    return per_sm * sms;
}

double roofline_bandwidth(const spf_device_info *dev)
{
    int sms;
    const sm_peaks *p = peaks_of(dev, &sms);
    return p->bandwidth * sms;
}

double roofline_us(double flops, double bytes, double peak_flops, double bandwidth, int launches)
{
    double compute_s = flops / peak_flops, memory_s = bytes / bandwidth;
    return (compute_s > memory_s ? compute_s : memory_s) * 1e6 + launches * ROOFLINE_LAUNCH_US;
}
