/* The malformed-input corpus: every file in tests/corpus/ gives exactly the
 * status and detail substring that tests/corpus/EXPECTED names for it
 * (STYLE.md 13), every error message starts with the file's path, and the
 * corpus and EXPECTED list the same files. */
#define _POSIX_C_SOURCE 200809L

#include "check.h"

#include <dirent.h>

enum { MAX_FILES = 256, LINE_CAP = 1024 };

typedef struct expectation {
    char name[128];
    char status[64];
    char detail[512];
    int seen; /* the file exists in the corpus folder */
} expectation;

static const struct {
    const char *name;
    spf_status status;
} STATUS_NAMES[] = {
    {"SPF_OK", SPF_OK},
    {"SPF_ERR_INVALID_ARGUMENT", SPF_ERR_INVALID_ARGUMENT},
    {"SPF_ERR_OUT_OF_MEMORY", SPF_ERR_OUT_OF_MEMORY},
    {"SPF_ERR_IO", SPF_ERR_IO},
    {"SPF_ERR_PARSE", SPF_ERR_PARSE},
    {"SPF_ERR_UNSUPPORTED", SPF_ERR_UNSUPPORTED},
    {"SPF_ERR_OVERFLOW", SPF_ERR_OVERFLOW},
    {"SPF_ERR_INVALID_MATRIX", SPF_ERR_INVALID_MATRIX},
};

static int status_parse(const char *name, spf_status *out)
{
    for (size_t i = 0; i < sizeof STATUS_NAMES / sizeof STATUS_NAMES[0]; i++)
        if (strcmp(name, STATUS_NAMES[i].name) == 0) {
            *out = STATUS_NAMES[i].status;
            return 1;
        }
    return 0;
}

/* dir/name into out; 0 (a failed check) if it does not fit. */
static int path_join(char *out, size_t cap, const char *dir, const char *name)
{
    int fits = snprintf(out, cap, "%s/%s", dir, name) < (int)cap;
    CHECK_MSG(fits, "path %s/%s too long", dir, name);
    return fits;
}

/* Copy a field of EXPECTED; 0 (a failed check) if it does not fit. */
static int field_copy(char *out, size_t cap, const char *field)
{
    int fits = snprintf(out, cap, "%s", field) < (int)cap;
    CHECK_MSG(fits, "EXPECTED: field '%s' too long", field);
    return fits;
}

/* EXPECTED: "name<TAB>STATUS<TAB>detail substring" per line; '#' comments. */
static int expected_load(const char *dir, expectation *e, int cap)
{
    char path[4096], line[LINE_CAP];
    FILE *f = path_join(path, sizeof path, dir, "EXPECTED") ? fopen(path, "r") : NULL;
    CHECK_MSG(f != NULL, "cannot open %s", path);
    if (!f)
        return 0;
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '#' || line[0] == '\0')
            continue;
        char *tab1 = strchr(line, '\t'), *tab2 = tab1 ? strchr(tab1 + 1, '\t') : NULL;
        CHECK_MSG(tab1 && tab2 && n < cap, "EXPECTED: malformed line '%s'", line);
        if (!tab1 || !tab2 || n >= cap)
            continue;
        *tab1 = *tab2 = '\0';
        if (field_copy(e[n].name, sizeof e[n].name, line) &&
            field_copy(e[n].status, sizeof e[n].status, tab1 + 1) &&
            field_copy(e[n].detail, sizeof e[n].detail, tab2 + 1))
            e[n++].seen = 0;
    }
    fclose(f);
    return n;
}

/* One corpus file against its expectation. */
static void check_one(const char *dir, const expectation *e)
{
    char path[8192];
    if (!path_join(path, sizeof path, dir, e->name))
        return;
    spf_status want = SPF_OK;
    CHECK_MSG(status_parse(e->status, &want), "%s: unknown status name %s", e->name, e->status);
    spf_matrix *a = (spf_matrix *)1;
    spf_status got = spf_matrix_read(path, NULL, &a);
    const char *detail = spf_last_error();
    CHECK_MSG(got == want, "%s: got %d (%s), expected %s; detail: %s", e->name, (int)got,
              spf_status_string(got), e->status, detail);
    CHECK_MSG(strstr(detail, e->detail) != NULL, "%s: detail \"%s\" lacks \"%s\"", e->name,
              detail, e->detail);
    if (got == SPF_OK) {
        CHECK_MSG(a != NULL, "%s: no matrix", e->name);
        CHECK_OK(spf_matrix_validate(a));
        spf_matrix_stats stats; /* its work is bounded by the file, not the shape */
        CHECK_OK(spf_matrix_stats_compute(a, &stats));
        spf_matrix_free(a);
    } else {
        CHECK_MSG(a == NULL, "%s: out not NULL after an error", e->name);
        CHECK_MSG(strncmp(detail, path, strlen(path)) == 0, "%s: detail \"%s\" does not start "
                  "with the path", e->name, detail);
    }
}

/* Files of the corpus folder that are inputs (not EXPECTED or the script). */
static int is_input(const char *name)
{
    return name[0] != '.' && strcmp(name, "EXPECTED") != 0 && strcmp(name, "make_npy.py") != 0;
}

int main(int argc, char **argv)
{
    const char *src = getenv("SPF_SOURCE_DIR");
    unsetenv("SPFORGE_READ_MAX_BYTES");
    if (!src)
        SKIP("SPF_SOURCE_DIR not set (run through ctest)");
    char dir[4096];
    if (!path_join(dir, sizeof dir, src, "tests/corpus"))
        return check_report();
    static expectation e[MAX_FILES];
    int n = expected_load(dir, e, MAX_FILES);
    CHECK_MSG(n >= 30, "EXPECTED lists only %d files", n);
    DIR *d = opendir(dir);
    CHECK_MSG(d != NULL, "cannot list %s", dir);
    for (struct dirent *ent; d && (ent = readdir(d)) != NULL;) {
        if (!is_input(ent->d_name))
            continue;
        int k = 0;
        while (k < n && strcmp(e[k].name, ent->d_name) != 0)
            k++;
        CHECK_MSG(k < n, "corpus file %s is missing from EXPECTED", ent->d_name);
        if (k < n)
            e[k].seen++;
    }
    if (d)
        closedir(d);
    for (int k = 0; k < n; k++) {
        CHECK_MSG(e[k].seen == 1, "EXPECTED lists %s, which is not in the corpus (or twice)",
                  e[k].name);
        if (e[k].seen)
            check_one(dir, &e[k]);
    }
    printf("%d corpus files checked\n", n);
    return check_report();
}
