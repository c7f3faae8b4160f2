/* Whether plans ask for the early start (gpu/early_start.h): on compute
 * capability 9.0 or newer, unless SPFORGE_PDL is "0" (any other value, or
 * none, leaves it on); never below 9.0, whatever the environment says. */
#define _POSIX_C_SOURCE 200809L

#include "check.h"

#include "gpu/early_start.h"

int main(int argc, char **argv)
{
    CHECK(unsetenv("SPFORGE_PDL") == 0);
    CHECK(early_start_wanted(9) == 1);
    CHECK(early_start_wanted(10) == 1);
    CHECK(early_start_wanted(8) == 0);
    CHECK(setenv("SPFORGE_PDL", "0", 1) == 0);
    CHECK(early_start_wanted(9) == 0);
    CHECK(early_start_wanted(8) == 0);
    CHECK(setenv("SPFORGE_PDL", "1", 1) == 0);
    CHECK(early_start_wanted(9) == 1);
    CHECK(early_start_wanted(7) == 0);
    /* only "0" turns it off: "00" or "" are not the documented value */
    CHECK(setenv("SPFORGE_PDL", "", 1) == 0);
    CHECK(early_start_wanted(9) == 1);
    return check_report();
}
