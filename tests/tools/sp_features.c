/* The structured predictor's features (sp_predict.h) of tuning-log rows,
 * for scripts/train_sp_predictor.py: one line "M K PATTERN N CONFIG" a row
 * on stdin (PATTERN 2:4 or V<v>:2:<m>, CONFIG a config name as
 * spf_sp_sweep logs it), one CSV line of features a row on stdout after a
 * header of their names. Exit 2, naming the line, on a row it cannot
 * read. No device needed. */
#include "strategy/structured/sp_predict.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    for (int f = 0; f < SP_FEATURE_COUNT; f++)
        printf("%s%s", f ? "," : "", sp_feature_names[f]);
    printf("\n");
    char line[256], pattern[64], config[64];
    long long m, k, n;
    for (long line_no = 1; fgets(line, sizeof line, stdin); line_no++) {
        sp_pattern p;
        sp_config c;
        if (sscanf(line, "%lld %lld %63s %lld %63s", &m, &k, pattern, &n, config) != 5 ||
            m < 1 || k < 1 || n < 1 || !sp_pattern_from_name(pattern, &p) ||
            sp_config_parse(config, &c) != SPF_OK) { /* any config the logs name */
            fprintf(stderr, "stdin:%ld: expected M K PATTERN N CONFIG, got: %s", line_no, line);
            return 2;
        }
        double x[SP_FEATURE_COUNT];
        sp_features(m, k, n, &p, &c, x);
        for (int f = 0; f < SP_FEATURE_COUNT; f++)
            printf("%s%.17g", f ? "," : "", x[f]);
        printf("\n");
    }
    return 0;
}
