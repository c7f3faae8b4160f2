/* The internal JSON writer: structure, escaping, number round trips, null
 * for non-finite doubles, and its sticky errors (misuse, allocation). */
#include "check.h"
#include "core/alloc.h"
#include "core/json.h"

#include <stdint.h>

/* Finish w and compare the text with want. */
static void check_text(json_writer *w, const char *want)
{
    char *text = NULL;
    CHECK_OK(json_finish(w, &text));
    CHECK_MSG(text && strcmp(text, want) == 0, "got %s, want %s", text ? text : "(null)", want);
    mem_free(text);
}

static void test_structure(void)
{
    json_writer w;
    json_init(&w);
    json_object_begin(&w, NULL);
    json_string(&w, "name", "spforge");
    json_int(&w, "neg", -42);
    json_uint(&w, "seed", UINT64_MAX);
    json_bool(&w, "ok", 1);
    json_null(&w, "none");
    json_array_begin(&w, "list");
    json_int(&w, NULL, 1);
    json_object_begin(&w, NULL);
    json_object_end(&w);
    json_array_begin(&w, NULL);
    json_array_end(&w);
    json_string(&w, NULL, NULL);
    json_array_end(&w);
    json_object_end(&w);
    check_text(&w, "{\"name\":\"spforge\",\"neg\":-42,\"seed\":18446744073709551615,\"ok\":true,"
                   "\"none\":null,\"list\":[1,{},[],null]}");
}

static void test_escaping(void)
{
    json_writer w;
    json_init(&w);
    json_string(&w, NULL, "q\"b\\n\n\t\x01 \xc3\xa9");
    check_text(&w, "\"q\\\"b\\\\n\\n\\t\\u0001 \xc3\xa9\"");
}

static void test_doubles(void)
{
    const double values[] = {0.1, 1.0 / 3.0, 1e-300, -2.5e17, 0.89974, 5e-324};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        json_writer w;
        json_init(&w);
        json_double(&w, NULL, values[i]);
        char *text = NULL;
        CHECK_OK(json_finish(&w, &text));
        CHECK_MSG(text && strtod(text, NULL) == values[i], "%.17g written as %s", values[i], text);
        mem_free(text);
    }
    json_writer w;
    json_init(&w);
    json_double(&w, NULL, 0.1);
    check_text(&w, "0.1"); /* the short form when it reads back exactly */
    json_init(&w);
    json_array_begin(&w, NULL);
    json_double(&w, NULL, NAN);
    json_double(&w, NULL, INFINITY);
    json_double(&w, NULL, -INFINITY);
    json_array_end(&w);
    check_text(&w, "[null,null,null]");
}

static void test_misuse(void)
{
    char *text = (char *)1;
    json_writer w;
    json_init(&w);
    json_object_begin(&w, NULL);
    json_int(&w, NULL, 1); /* a value without a key inside an object */
    CHECK_STATUS(json_finish(&w, &text), SPF_ERR_INTERNAL);
    CHECK(text == NULL);
    CHECK_DETAIL("needs a key");

    json_init(&w);
    json_array_begin(&w, NULL);
    json_int(&w, "k", 1); /* a key inside an array */
    CHECK_STATUS(json_finish(&w, &text), SPF_ERR_INTERNAL);

    json_init(&w);
    json_object_begin(&w, NULL);
    CHECK_STATUS(json_finish(&w, &text), SPF_ERR_INTERNAL); /* left open */
    CHECK_DETAIL("open");

    json_init(&w);
    json_array_begin(&w, NULL);
    json_object_end(&w); /* the wrong closer */
    CHECK_STATUS(json_finish(&w, &text), SPF_ERR_INTERNAL);

    json_init(&w);
    json_int(&w, NULL, 1);
    json_int(&w, NULL, 2); /* two top-level values */
    CHECK_STATUS(json_finish(&w, &text), SPF_ERR_INTERNAL);

    json_init(&w);
    for (int i = 0; i <= JSON_MAX_DEPTH; i++)
        json_array_begin(&w, NULL);
    CHECK_STATUS(json_finish(&w, &text), SPF_ERR_INTERNAL);
    CHECK_DETAIL("deeper");
}

static void *failing_alloc(size_t size, void *user) { (void)size; (void)user; return NULL; }
static void *failing_realloc(void *p, size_t size, void *user) { (void)p; (void)size; (void)user; return NULL; }
static void plain_free(void *p, void *user) { (void)user; free(p); }

static void test_out_of_memory(void)
{
    const spf_allocator failing = {failing_alloc, failing_realloc, plain_free, NULL};
    spf_set_allocator(&failing);
    json_writer w;
    json_init(&w);
    json_object_begin(&w, NULL);
    json_int(&w, "a", 1);
    json_object_end(&w);
    char *text = (char *)1;
    spf_status st = json_finish(&w, &text);
    spf_set_allocator(NULL);
    CHECK_STATUS(st, SPF_ERR_OUT_OF_MEMORY);
    CHECK(text == NULL);
}

int main(int argc, char **argv)
{
    test_structure();
    test_escaping();
    test_doubles();
    test_misuse();
    test_out_of_memory();
    return check_report();
}
