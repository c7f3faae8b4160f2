/* The panel kernel's configurations (names, refusals, shared memory, rows
 * per block): host code, no device needed. */
#include "strategy/panel/panel_kernel.h"

#include "core/error.h"

#include <stdio.h>
#include <string.h>

int panel_nc_for(int mma, int64_t n)
{
    if (mma)
        return n <= 16 ? 16 : n <= 32 ? 32 : 64;
    return n <= 8 ? 8 : n <= 16 ? 16 : 32;
}

const char *panel_config_refusal(const panel_config *c, int32_t width)
{
    if (c->mma != 0 && c->mma != 1)
        return "mma must be 0 or 1";
    if (!c->mma && c->nc != 8 && c->nc != 16 && c->nc != 32)
        return "nc must be 8, 16 or 32 on CUDA cores";
    if (c->mma && c->nc != 16 && c->nc != 32 && c->nc != 64)
        return "nc must be 16, 32 or 64 on tensor cores";
    if (c->warps != 4 && c->warps != 8 && c->warps != 16)
        return "warps must be 4, 8 or 16";
    if (c->width < 8 || c->width > PANEL_MAX_WIDTH || c->width % 8 != 0)
        return "the panel width must be a multiple of 8 up to 65536";
    if (c->rows < 1 || c->rows > PANEL_MAX_ROWS)
        return "rows per block must be 1 to 512";
    if (c->width != width)
        return "the format was built with another panel width";
    return NULL;
}

size_t panel_config_smem(const panel_config *c)
{
    /* 16-bit elements of B; fp32 sums */
    return 2 * (size_t)c->width * (size_t)c->nc * 2 + (size_t)c->rows * (size_t)c->nc * 4;
}

int panel_rows_for(int64_t m, int64_t n, int nc, int sms, int blocks_per_sm)
{
    int64_t col_blocks = (n + nc - 1) / nc;
    int64_t slots = (int64_t)(sms > 0 ? sms : 1) * (blocks_per_sm > 0 ? blocks_per_sm : 1);
    /* row blocks per column block that one wave holds */
    int64_t row_blocks = slots / (col_blocks > 0 ? col_blocks : 1);
    if (row_blocks < 1)
        row_blocks = 1;
    int64_t rows = (m + row_blocks - 1) / row_blocks;
    return (int)(rows < 1 ? 1 : rows > PANEL_MAX_ROWS ? PANEL_MAX_ROWS : rows);
}

void panel_config_name(const panel_config *c, char *buf, size_t size)
{
    snprintf(buf, size, "%snc%d_w%d_p%d_r%d", c->mma ? "mma_" : "", c->nc, c->warps, c->width,
             c->rows);
}

spf_status panel_config_from_name(const char *name, panel_config *out)
{
    CHECK_ARG(name != NULL && out != NULL);
    panel_config c = {0};
    int used = 0;
    const char *rest = name;
    if (strncmp(rest, "mma_", 4) == 0)
        c.mma = 1, rest += 4;
    if (sscanf(rest, "nc%d_w%d_p%d_r%d%n", &c.nc, &c.warps, &c.width, &c.rows, &used) != 4 ||
        rest[used] != '\0')
        return FAIL(SPF_ERR_PARSE, "panel config \"%s\": expected [mma_]nc<C>_w<W>_p<P>_r<R>",
                    name);
    const char *why = panel_config_refusal(&c, c.width);
    if (why)
        return FAIL(SPF_ERR_PARSE, "panel config \"%s\": %s", name, why);
    *out = c;
    return SPF_OK;
}
