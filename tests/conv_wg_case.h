/* What the warpgroup conv kernel's two tests share (unit/test_conv_wg.c
 * replays its stage rows on the CPU, gpu/test_conv_wg.c runs it): shapes it
 * takes (NHWC, C and K multiples of 64) with padded rows from 3 to 58
 * pixels, a last block of rows cut short, padding 0 to 2, 1×1 and 3×3,
 * batch 3, and small images several to a block, the last block's cut
 * short by the batch; C from 64 to 512 (1 to 8 chunks, to split); stride
 * 2 (the input's parity planes) on even and odd sizes, 3×3 and 1×1. */
#ifndef SPF_TESTS_CONV_WG_CASE_H
#define SPF_TESTS_CONV_WG_CASE_H

#include "conv_case.h"

#include "conv/conv_wg.h"

static const conv_dims conv_wg_dims[] = {
    {"3x3 on one position, C = 64", 1, 64, 1, 1, 64, 3, 3, 1, 1},
    {"3x3 on 7x7 (layer4's rows), K = 128", 1, 64, 7, 7, 128, 3, 3, 1, 1},
    {"3x3 padding 0 on 6x5, batch 3", 3, 64, 6, 5, 64, 3, 3, 1, 0},
    {"3x3 on 13x11, C = 128, batch 2", 2, 128, 13, 11, 64, 3, 3, 1, 1},
    {"3x3 on 28x28 (layer2's rows), C = 192", 1, 192, 28, 28, 64, 3, 3, 1, 1},
    {"3x3 on 56x56 (layer1's rows)", 1, 64, 56, 56, 64, 3, 3, 1, 1},
    {"3x3 on 14x14 (layer3's rows), C = 256", 1, 256, 14, 14, 64, 3, 3, 1, 1},
    {"3x3 on 7x7, C = 512 (8 chunks), K = 128, batch 2", 2, 512, 7, 7, 128, 3, 3, 1, 1},
    {"1x1 on 9x10, C = 128, K = 192", 1, 128, 9, 10, 192, 1, 1, 1, 0},
    {"3x3 padding 2 on 5x4", 2, 64, 5, 4, 64, 3, 3, 1, 2},
    {"3x3 on 3x4, batch 7 (images a block)", 7, 64, 3, 4, 64, 3, 3, 1, 1},
    {"1x1 on 2x3, batch 5", 5, 128, 2, 3, 64, 1, 1, 1, 0},
    {"3x3 stride 2 on 56x56 (layer2.0's), C = 128", 1, 128, 56, 56, 64, 3, 3, 2, 1},
    {"3x3 stride 2 padding 0 on 13x11, batch 2", 2, 64, 13, 11, 64, 3, 3, 2, 0},
    {"3x3 stride 2 on 14x14 (layer4.0's), C = 512, K = 128", 1, 512, 14, 14, 128, 3, 3, 2, 1},
    {"3x3 stride 2 on 7x6, batch 5 (images a block)", 5, 64, 7, 6, 64, 3, 3, 2, 1},
    {"1x1 stride 2 on 9x7, C = 128, batch 3", 3, 128, 9, 7, 64, 1, 1, 2, 0},
};
#define CONV_WG_DIMS ((int)(sizeof conv_wg_dims / sizeof conv_wg_dims[0]))

/* the widths: conv_wg_widths (conv_wg.h), the planner's */

#endif
