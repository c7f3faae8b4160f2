/* A minimal test harness: CHECK macros that count, print the failing
 * expression with its location, and a closing "N passed, N failed" line.
 * A test program returns check_report(); SKIP() exits 77 (ctest: skipped)
 * after printing why. */
#ifndef SPF_TESTS_CHECK_H
#define SPF_TESTS_CHECK_H

#include "spforge.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_passed, check_failed;

#define CHECK(cond)                                                                        \
    do {                                                                                   \
        if (cond) {                                                                        \
            check_passed++;                                                                \
        } else {                                                                           \
            check_failed++;                                                                \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);       \
        }                                                                                  \
    } while (0)

#define CHECK_MSG(cond, ...)                                                               \
    do {                                                                                   \
        if (cond) {                                                                        \
            check_passed++;                                                                \
        } else {                                                                           \
            check_failed++;                                                                \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);       \
            fprintf(stderr, __VA_ARGS__);                                                  \
            fputc('\n', stderr);                                                           \
        }                                                                                  \
    } while (0)

/* A call must return the expected status; prints the detail message if not. */
#define CHECK_STATUS(call, expected)                                                       \
    do {                                                                                   \
        spf_status got_ = (call);                                                          \
        CHECK_MSG(got_ == (expected), "%s returned %d (%s), expected %d; detail: %s",      \
                  #call, (int)got_, spf_status_string(got_), (int)(expected),              \
                  spf_last_error());                                                       \
    } while (0)

#define CHECK_OK(call) CHECK_STATUS(call, SPF_OK)

#define CHECK_EQ_I64(a, b)                                                                 \
    do {                                                                                   \
        long long a_ = (long long)(a), b_ = (long long)(b);                                \
        CHECK_MSG(a_ == b_, "%lld != %lld", a_, b_);                                       \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                              \
    do {                                                                                   \
        double a_ = (double)(a), b_ = (double)(b);                                         \
        CHECK_MSG(fabs(a_ - b_) <= (tol), "%.17g vs %.17g (tol %g)", a_, b_, (double)(tol)); \
    } while (0)

/* The detail message must contain a substring. */
#define CHECK_DETAIL(substr)                                                               \
    CHECK_MSG(strstr(spf_last_error(), (substr)) != NULL, "detail \"%s\" lacks \"%s\"",    \
              spf_last_error(), (substr))

#define SKIP(...)                                                                          \
    do {                                                                                   \
        printf("SKIP: ");                                                                  \
        printf(__VA_ARGS__);                                                               \
        printf("\n");                                                                      \
        exit(77);                                                                          \
    } while (0)

/* An injectable allocator (STYLE.md 13) that fails every allocation once
 * `left` have been made; `live` counts the blocks not yet freed, so a test
 * can check that a failing call leaked nothing. */
typedef struct budget {
    int left, live;
} budget;

static inline void *budget_alloc(size_t size, void *user)
{
    budget *b = user;
    if (b->left-- <= 0)
        return NULL;
    b->live++;
    return malloc(size ? size : 1);
}

static inline void *budget_realloc(void *ptr, size_t size, void *user)
{
    budget *b = user;
    if (b->left-- <= 0)
        return NULL;
    b->live += ptr == NULL;
    return realloc(ptr, size ? size : 1);
}

static inline void budget_free(void *ptr, void *user)
{
    ((budget *)user)->live -= ptr != NULL;
    free(ptr);
}

static inline spf_allocator budget_allocator(budget *b)
{
    return (spf_allocator){budget_alloc, budget_realloc, budget_free, b};
}

static inline int check_report(void)
{
    printf("%d passed, %d failed\n", check_passed, check_failed);
    return check_failed ? 1 : 0;
}

/* The extracted data folder, or NULL (with a visible message) if absent. */
static inline const char *check_data_dir(void)
{
    const char *d = getenv("SPF_DATA_DIR");
    char probe[4096];
    if (d) {
        snprintf(probe, sizeof probe, "%s/dlmc", d);
        FILE *f = fopen(probe, "r");
        if (f) {
            fclose(f);
            return d;
        }
    }
    printf("NOTE: no extracted data (run scripts/extract-data.sh with ../shared beside the "
           "repo); real-data checks skipped\n");
    return NULL;
}

#endif
