/* A token read from an input file, kept together with its capacity and the
 * length it had in the file, so a message quoting it can never read past
 * what was stored: the only way to quote one is token_quote, which reads at
 * most the stored bytes and marks a longer token with "...". */
#ifndef SPF_IO_TOKEN_H
#define SPF_IO_TOKEN_H

#include <stddef.h>

enum {
    TOKEN_CAP = 128,                    /* bytes stored, the NUL included      */
    TOKEN_SHOWN = 48,                   /* bytes a message quotes at most      */
    TOKEN_QUOTED_CAP = 4 * TOKEN_SHOWN + 8 /* quotes, \xNN escapes, "..." */
};

typedef struct token {
    size_t len;          /* the token's full length in the file            */
    size_t stored;       /* bytes kept in text: min(len, TOKEN_CAP - 1)    */
    char text[TOKEN_CAP]; /* the first `stored` bytes, NUL-terminated      */
} token;

/* Empty the token. */
void token_clear(token *t);

/* Append byte c: stored while there is room, counted in len always. */
void token_push(token *t, char c);

/* Whether the whole token was stored (text is all of it). */
static inline int token_whole(const token *t) { return t->len == t->stored; }

/* The token as a message shows it, into out: quoted, non-printable bytes as
 * \xNN, cut after TOKEN_SHOWN bytes with "..." when longer. Returns out. */
const char *token_quote(const token *t, char out[TOKEN_QUOTED_CAP]);

#endif
