/* spf_struct_sizes: sizeof of every public struct the Python binding
 * mirrors, one "name bytes" line each, as the C compiler lays them out.
 * tests/python/test_binding.py compares them with the ctypes mirrors
 * (python/spforge/_capi.py), whose fields it checks against the header. */
#include "spforge.h"

#include <stdio.h>

#define SIZE(type) printf("%s %zu\n", #type, sizeof(type))

int main(int argc, char **argv)
{
    SIZE(spf_read_options);
    SIZE(spf_gen_options);
    SIZE(spf_matrix_stats);
    SIZE(spf_device_info);
    SIZE(spf_kernel_config);
    SIZE(spf_plan_options);
    SIZE(spf_search_info);
    SIZE(spf_candidate);
    SIZE(spf_plan_info);
    SIZE(spf_matrix_name);
    SIZE(spf_progress);
    SIZE(spf_conv_desc);
    SIZE(spf_conv_info);
    SIZE(spf_dist_layout_info);
    return 0;
}
