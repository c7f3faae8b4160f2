#include "gpu/program.h"

#include "core/alloc.h"

#include <string.h>

void ptx_program_free(ptx_program *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->unit_count; i++)
        mem_free(p->units[i].text);
    mem_free(p->units);
    memset(p, 0, sizeof *p);
}
