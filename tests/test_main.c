/* The one executable of the tests and tools (tests/CMakeLists.txt): each
 * program's main is compiled as spf_test_<name>, and tests/<name> is a
 * link to this program, which runs the entry named by the name it was
 * called by or, called as spf_tests, by its first argument. */
#include <stdio.h>
#include <string.h>

#define SPF_TEST(name) int spf_test_##name(int argc, char **argv);
#include "spf_test_list.h"
#undef SPF_TEST

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
} entries[] = {
#define SPF_TEST(name) {#name, spf_test_##name},
#include "spf_test_list.h"
#undef SPF_TEST
};

static int find(const char *name)
{
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
        if (strcmp(entries[i].name, name) == 0)
            return (int)i;
    return -1;
}

int main(int argc, char **argv)
{
    const char *slash = strrchr(argv[0], '/');
    int i = find(slash ? slash + 1 : argv[0]);
    if (i >= 0)
        return entries[i].run(argc, argv);
    if (argc > 1 && (i = find(argv[1])) >= 0)
        return entries[i].run(argc - 1, argv + 1);
    fprintf(stderr, "usage: spf_tests NAME [ARGUMENT...], or a link named NAME; the names:\n");
    for (size_t k = 0; k < sizeof entries / sizeof entries[0]; k++)
        fprintf(stderr, "  %s\n", entries[k].name);
    return 2;
}
