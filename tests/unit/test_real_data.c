/* Every .mtx and .smtx file of the extracted dev data set (data/manifest.csv)
 * reads with the default options and has the manifest's shape and nnz (nnz
 * after symmetric expansion). The manifest's dup_rows column is 0 for every
 * file, so the default REJECT policy must accept them all. */
#include "test_util.h"

#include <time.h>

enum { FIELDS = 8 };

static double now_s(void)
{
    struct timespec t;
    timespec_get(&t, TIME_UTC);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Split a CSV line (no quoting in the manifest) into its first fields. */
static int csv_split(char *line, char **field, int max)
{
    int n = 0;
    line[strcspn(line, "\r\n")] = '\0';
    for (char *p = line; n < max; n++) {
        field[n] = p;
        char *comma = strchr(p, ',');
        if (!comma)
            return n + 1;
        *comma = '\0';
        p = comma + 1;
    }
    return n;
}

/* Read one manifest entry and compare; returns 1 if the file was read. */
static int check_file(const char *dir, char **f)
{
    spf_matrix *a = data_matrix(dir, f[0], 1);
    if (!a)
        return 0;
    CHECK_MSG(spf_matrix_rows(a) == atoll(f[2]) && spf_matrix_cols(a) == atoll(f[3]) &&
              spf_matrix_nnz(a) == atoll(f[5]),
              "%s: read %lld x %lld with %lld nonzeros, manifest says %s x %s with %s", f[0],
              (long long)spf_matrix_rows(a), (long long)spf_matrix_cols(a),
              (long long)spf_matrix_nnz(a), f[2], f[3], f[5]);
    CHECK_OK(spf_matrix_validate(a));
    spf_matrix_free(a);
    return 1;
}

int main(int argc, char **argv)
{
    const char *dir = check_data_dir();
    if (!dir)
        SKIP("no extracted data");
    char manifest[4096], line[4096];
    snprintf(manifest, sizeof manifest, "%s/manifest.csv", dir);
    FILE *m = fopen(manifest, "r");
    CHECK_MSG(m != NULL, "cannot open %s", manifest);
    if (!m)
        return check_report();
    char *f[FIELDS];
    CHECK(fgets(line, sizeof line, m) && csv_split(line, f, FIELDS) == FIELDS &&
          strcmp(f[0], "path") == 0 && strcmp(f[5], "nnz") == 0);
    int files = 0, read = 0;
    double t0 = now_s();
    while (fgets(line, sizeof line, m)) {
        if (csv_split(line, f, FIELDS) < FIELDS ||
            (strcmp(f[1], "mtx") != 0 && strcmp(f[1], "smtx") != 0))
            continue;
        files++;
        read += check_file(dir, f);
    }
    double elapsed = now_s() - t0;
    fclose(m);
    CHECK_MSG(files > 300, "only %d .mtx/.smtx files listed in the manifest", files);
    printf("read %d of %d .mtx/.smtx files of the manifest in %.2f s\n", read, files, elapsed);
    return check_report();
}
