/* A small JSON writer into a growing buffer (the CLI's --json output, later
 * tuning logs and bench results). Compact output, keys in call order.
 *
 *   json_writer w;
 *   json_init(&w);
 *   json_object_begin(&w, NULL);
 *   json_int(&w, "nnz", 58982);
 *   json_double(&w, "density", 0.1);   // shortest round-trip digits; null if not finite
 *   json_object_end(&w);
 *   char *text; TRY(json_finish(&w, &text));   // caller frees text with mem_free
 *
 * Each value call takes its key when the enclosing container is an object
 * and NULL when it is an array or the top level. Errors (allocation, a key
 * where none belongs, unbalanced containers) are sticky and reported once,
 * by json_finish. */
#ifndef SPF_CORE_JSON_H
#define SPF_CORE_JSON_H

#include "spforge.h"

#include <stddef.h>
#include <stdint.h>

enum { JSON_MAX_DEPTH = 32 };

typedef struct json_writer {
    char *buf; /* owned; NUL-terminated while status is SPF_OK */
    size_t len, cap;
    int depth;
    unsigned char is_object[JSON_MAX_DEPTH]; /* per open container: object or array */
    unsigned char has_items[JSON_MAX_DEPTH]; /* per open container: a comma is due  */
    spf_status status;                       /* first error, sticky                 */
} json_writer;

void json_init(json_writer *w);
void json_object_begin(json_writer *w, const char *key);
void json_object_end(json_writer *w);
void json_array_begin(json_writer *w, const char *key);
void json_array_end(json_writer *w);
/* value NULL writes null. */
void json_string(json_writer *w, const char *key, const char *value);
void json_int(json_writer *w, const char *key, int64_t value);
void json_uint(json_writer *w, const char *key, uint64_t value);
void json_bool(json_writer *w, const char *key, int value);
/* The shortest of %.15g / %.17g that reads back as the same double; NaN and
 * infinities (which JSON cannot hold) are written as null. */
void json_double(json_writer *w, const char *key, double value);
void json_null(json_writer *w, const char *key);

/* Check that every container was closed and hand over the text (caller
 * frees it with mem_free); on error the buffer is freed and *out is NULL. */
spf_status json_finish(json_writer *w, char **out);
/* Free the buffer of an unfinished writer (a failure path). */
void json_discard(json_writer *w);

#endif
