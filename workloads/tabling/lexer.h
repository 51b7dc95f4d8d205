/* The lexer of hhtab's reader: Prolog tokens with their places, and the
 * one error message a read produces ("FILE:LINE:COLUMN: what was found"). */
#ifndef HHTAB_LEXER_H
#define HHTAB_LEXER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    T_END,   /* end of input */
    T_NAME,  /* an atom: letters, symbol characters, a solo character or quoted */
    T_VAR,
    T_INT,
    T_OPEN,  /* "(" right after a name: a compound's arguments */
    T_PAREN, /* "(" after layout or another token */
    T_CLOSE,
    T_LIST,  /* [ */
    T_LIST_END,
    T_CURLY,
    T_CURLY_END,
    T_COMMA,
    T_BAR,
    T_STOP,  /* the end-of-clause "." */
} token_kind;

typedef struct token {
    token_kind kind;
    uint32_t line, col;
    bool quoted;
    bool after_layout; /* layout or a comment right before it */
    int64_t value;
    char *text; /* name or variable, decoded; never NULL once read */
    size_t len, cap;
} token;

typedef struct lexer {
    const char *name; /* for messages */
    const char *end, *at;
    uint32_t line;
    const char *line_start;
    bool failed;
    char *error;
    size_t error_size;
} lexer;

void lexer_init(lexer *lx, const char *name, const char *text, size_t len, char *error,
                size_t error_size);
/* Reads the next token into tk; false with the message on an error. */
bool next_token(lexer *lx, token *tk);

/* Sets the message (the first error only: later ones are consequences);
 * returns false, for `return fail_at(...)`. */
bool fail_at(lexer *lx, uint32_t line, uint32_t col, const char *format, ...)
    __attribute__((format(printf, 4, 5)));
#define FAIL_TOKEN(lx, tk, ...) fail_at(lx, (tk)->line, (tk)->col, __VA_ARGS__)

/* What a token is, for "expected X, found Y" messages (buf may hold it). */
const char *found(const token *tk, char *buf, size_t size);

#endif
