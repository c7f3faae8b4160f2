/* Tokens that carry their own capacity (token.h says why). */
#include "io/token.h"

#include <stdio.h>
#include <string.h>

void token_clear(token *t)
{
    t->len = t->stored = 0;
    t->text[0] = '\0';
}

void token_push(token *t, char c)
{
    if (t->stored + 1 < TOKEN_CAP) {
        t->text[t->stored++] = c;
        t->text[t->stored] = '\0';
    }
    t->len++;
}

const char *token_quote(const token *t, char out[TOKEN_QUOTED_CAP])
{
    size_t o = 0, shown = t->stored < TOKEN_SHOWN ? t->stored : TOKEN_SHOWN;
    out[o++] = '\'';
    for (size_t i = 0; i < shown; i++) {
        unsigned char c = (unsigned char)t->text[i];
        if (c >= 0x20 && c < 0x7f)
            out[o++] = (char)c;
        else
            o += (size_t)snprintf(out + o, TOKEN_QUOTED_CAP - o, "\\x%02x", c);
    }
    if (t->len > shown) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o++] = '\'';
    out[o] = '\0';
    return out;
}
