#include "spforge.h"

#include <stdio.h>

int main(void)
{
    printf("spforge %s\n", spf_version());
    return 0;
}
