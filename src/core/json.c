#include "core/json.h"

#include "core/alloc.h"
#include "core/error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void json_init(json_writer *w)
{
    memset(w, 0, sizeof *w);
}

static void put(json_writer *w, const char *s, size_t n)
{
    if (w->status != SPF_OK)
        return;
    if (w->len + n + 1 > w->cap) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap < w->len + n + 1) {
            if (cap > SIZE_MAX / 2) {
                w->status = FAIL(SPF_ERR_OVERFLOW, "JSON text beyond %zu bytes", w->len);
                return;
            }
            cap *= 2;
        }
        char *grown = mem_realloc_array(w->buf, cap, 1);
        if (!grown) {
            w->status = FAIL(SPF_ERR_OUT_OF_MEMORY, "cannot grow the JSON text to %zu bytes", cap);
            return;
        }
        w->buf = grown;
        w->cap = cap;
    }
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    w->buf[w->len] = '\0';
}

static void puts_(json_writer *w, const char *s) { put(w, s, strlen(s)); }

/* The length of the well-formed UTF-8 sequence at p (a lead byte >= 0x80:
 * 2 to 4), or 0: no overlong forms, no surrogates, nothing past U+10FFFF. */
static int utf8_length(const unsigned char *p)
{
    int len = p[0] >= 0xc2 && p[0] <= 0xdf ? 2 : p[0] >= 0xe0 && p[0] <= 0xef ? 3
            : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : 0;
    for (int i = 1; i < len; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] > 0x9f) ||
        (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] > 0x8f))
        return 0;
    return len;
}

static void put_escaped(json_writer *w, const char *s)
{
    put(w, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        switch (*p) {
        case '"': puts_(w, "\\\""); break;
        case '\\': puts_(w, "\\\\"); break;
        case '\n': puts_(w, "\\n"); break;
        case '\r': puts_(w, "\\r"); break;
        case '\t': puts_(w, "\\t"); break;
        default:
            if (*p < 0x20) {
                snprintf(esc, sizeof esc, "\\u%04x", *p);
                puts_(w, esc);
            } else if (*p < 0x80) {
                put(w, (const char *)p, 1);
            } else {
                /* A valid UTF-8 sequence passes through; a byte that starts
                 * none (a file name in another encoding) becomes U+FFFD, so
                 * that the output stays valid JSON. */
                int len = utf8_length(p);
                put(w, len ? (const char *)p : "\xef\xbf\xbd", len ? (size_t)len : 3);
                p += len ? len - 1 : 0;
            }
        }
    }
    put(w, "\"", 1);
}

/* The separator and key every value starts with; checks that a key is given
 * exactly when the enclosing container is an object. */
static void value_prefix(json_writer *w, const char *key)
{
    if (w->status != SPF_OK)
        return;
    int in_object = w->depth > 0 && w->is_object[w->depth - 1];
    if (in_object != (key != NULL)) {
        w->status = FAIL(SPF_ERR_INTERNAL, "JSON value %s%s%s %s", key ? "\"" : "", key ? key : "",
                         key ? "\"" : "(no key)",
                         in_object ? "inside an object needs a key" : "outside an object takes no key");
        return;
    }
    if (w->depth == 0 && w->len > 0) {
        w->status = FAIL(SPF_ERR_INTERNAL, "a second JSON value at the top level");
        return;
    }
    if (w->depth > 0) {
        if (w->has_items[w->depth - 1])
            put(w, ",", 1);
        w->has_items[w->depth - 1] = 1;
    }
    if (key) {
        put_escaped(w, key);
        put(w, ":", 1);
    }
}

static void open_container(json_writer *w, const char *key, int is_object)
{
    value_prefix(w, key);
    if (w->status != SPF_OK)
        return;
    if (w->depth == JSON_MAX_DEPTH) {
        w->status = FAIL(SPF_ERR_INTERNAL, "JSON nesting deeper than %d", JSON_MAX_DEPTH);
        return;
    }
    w->is_object[w->depth] = (unsigned char)is_object;
    w->has_items[w->depth] = 0;
    w->depth++;
    put(w, is_object ? "{" : "[", 1);
}

static void close_container(json_writer *w, int is_object)
{
    if (w->status != SPF_OK)
        return;
    if (w->depth == 0 || w->is_object[w->depth - 1] != is_object) {
        w->status = FAIL(SPF_ERR_INTERNAL, "JSON %s closed while none is open",
                         is_object ? "object" : "array");
        return;
    }
    w->depth--;
    put(w, is_object ? "}" : "]", 1);
}

void json_object_begin(json_writer *w, const char *key) { open_container(w, key, 1); }
void json_object_end(json_writer *w) { close_container(w, 1); }
void json_array_begin(json_writer *w, const char *key) { open_container(w, key, 0); }
void json_array_end(json_writer *w) { close_container(w, 0); }

void json_string(json_writer *w, const char *key, const char *value)
{
    value_prefix(w, key);
    if (value)
        put_escaped(w, value);
    else
        puts_(w, "null");
}

void json_int(json_writer *w, const char *key, int64_t value)
{
    char text[32];
    snprintf(text, sizeof text, "%lld", (long long)value);
    value_prefix(w, key);
    puts_(w, text);
}

void json_uint(json_writer *w, const char *key, uint64_t value)
{
    char text[32];
    snprintf(text, sizeof text, "%llu", (unsigned long long)value);
    value_prefix(w, key);
    puts_(w, text);
}

void json_bool(json_writer *w, const char *key, int value)
{
    value_prefix(w, key);
    puts_(w, value ? "true" : "false");
}

void json_null(json_writer *w, const char *key)
{
    value_prefix(w, key);
    puts_(w, "null");
}

void json_double(json_writer *w, const char *key, double value)
{
    value_prefix(w, key);
    if (!isfinite(value)) {
        puts_(w, "null");
        return;
    }
    char text[40];
    snprintf(text, sizeof text, "%.15g", value);
    if (strtod(text, NULL) != value)
        snprintf(text, sizeof text, "%.17g", value);
    puts_(w, text);
}

spf_status json_finish(json_writer *w, char **out)
{
    *out = NULL;
    if (w->status == SPF_OK && w->depth != 0)
        w->status = FAIL(SPF_ERR_INTERNAL, "JSON text ends with %d container(s) open", w->depth);
    if (w->status == SPF_OK && w->len == 0)
        w->status = FAIL(SPF_ERR_INTERNAL, "empty JSON text");
    if (w->status != SPF_OK) {
        spf_status st = w->status;
        json_discard(w);
        return st;
    }
    *out = w->buf;
    w->buf = NULL;
    w->len = w->cap = 0;
    return SPF_OK;
}

void json_discard(json_writer *w)
{
    mem_free(w->buf);
    w->buf = NULL;
    w->len = w->cap = 0;
}
