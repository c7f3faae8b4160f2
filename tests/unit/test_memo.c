/* core/memo.h: a value found by its key's bytes, replaced by a later put of
 * the key, the oldest entry giving way when every slot is used; and the
 * structured strategy's pattern memo on it (sp_pattern_detect by matrix):
 * the same answer and reason again, each matrix its own. */
#include "check.h"
#include "test_util.h"

#include "core/memo.h"
#include "strategy/structured/sp_pattern.h"

#include <string.h>

typedef struct key {
    int32_t a;
    int64_t b;
} key;

static void test_table(void)
{
    static unsigned char storage[3][MEMO_SLOT_BYTES(key, double)];
    static memo table = MEMO_INIT(storage, key, double);
    key k[4];
    memset(k, 0, sizeof k); /* the padding too: keys compare as bytes */
    for (int i = 0; i < 4; i++)
        k[i].a = i, k[i].b = 10 * i;
    double v = -1;
    CHECK(!memo_find(&table, &k[0], &v) && v == -1);
    for (int i = 0; i < 3; i++)
        memo_put(&table, &k[i], (double[]){i + 0.5});
    CHECK(memo_find(&table, &k[1], &v) && v == 1.5);
    memo_put(&table, &k[1], (double[]){7.0}); /* replaced in its slot */
    CHECK(memo_find(&table, &k[1], &v) && v == 7.0);
    CHECK(memo_find(&table, &k[0], &v) && v == 0.5);
    memo_put(&table, &k[3], (double[]){3.5}); /* full: the oldest (k[0]) goes */
    CHECK(!memo_find(&table, &k[0], &v));
    CHECK(memo_find(&table, &k[3], &v) && v == 3.5);
    CHECK(memo_find(&table, &k[2], &v) && v == 2.5);
    key other = k[2];
    other.b = 21;
    CHECK(!memo_find(&table, &other, &v));
}

static void test_pattern_memo(void)
{
    spf_matrix *plain = gen_matrix(SPF_GEN_UNIFORM, 64, 64, 0.7, 3);
    spf_matrix *twofour = gen_vnm(64, 64, 1, 2, 4, 3);
    for (int round = 0; round < 2; round++) {
        sp_pattern p = {.group = 99};
        char why[300] = "", short_why[12] = "";
        CHECK_MSG(!sp_pattern_detect(plain, &p, why, sizeof why), "round %d", round);
        CHECK(p.group == 99 && strstr(why, "not 2:4") == why);
        CHECK(!sp_pattern_detect(plain, &p, short_why, sizeof short_why));
        CHECK(strlen(short_why) == sizeof short_why - 1);
        CHECK_MSG(sp_pattern_detect(twofour, &p, why, sizeof why), "round %d: %s", round, why);
        CHECK(p.group == 4 && p.v == 0 && p.vec == 0 && p.outside == 0);
    }
    spf_matrix_free(plain);
    spf_matrix_free(twofour);
}

int main(int argc, char **argv)
{
    (void)argc, (void)argv;
    test_table();
    test_pattern_memo();
    return check_report();
}
