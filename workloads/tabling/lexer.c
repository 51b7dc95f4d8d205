/* The lexer of hhtab's reader (see lexer.h): names (plain, symbolic, solo
 * or quoted), variables, integers (decimal, 0x, 0o, 0b, 0'c), punctuation,
 * layout and comments. */
#include "lexer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "program.h" /* INT_LIMIT */

void lexer_init(lexer *lx, const char *name, const char *text, size_t len, char *error,
                size_t error_size) {
    memset(lx, 0, sizeof *lx);
    lx->name = name;
    lx->at = lx->line_start = text;
    lx->end = text + len;
    lx->line = 1;
    lx->error = error;
    lx->error_size = error_size;
}

bool fail_at(lexer *lx, uint32_t line, uint32_t col, const char *format, ...) {
    if (lx->failed) return false;
    lx->failed = true;
    int n = snprintf(lx->error, lx->error_size, "%s:%u:%u: ", lx->name, line, col);
    if (n < 0 || (size_t)n >= lx->error_size) return false;
    va_list ap;
    va_start(ap, format);
    vsnprintf(lx->error + n, lx->error_size - (size_t)n, format, ap);
    va_end(ap);
    return false;
}

static uint32_t column_of(const lexer *lx, const char *p) {
    return (uint32_t)(p - lx->line_start) + 1;
}

static bool push_char(lexer *lx, token *tk, char c) {
    if (tk->len + 1 >= tk->cap) {
        size_t cap = tk->cap ? tk->cap * 2 : 64;
        char *text = realloc(tk->text, cap);
        if (text == NULL) return FAIL_TOKEN(lx, tk, "out of memory");
        tk->text = text;
        tk->cap = cap;
    }
    tk->text[tk->len++] = c;
    tk->text[tk->len] = '\0';
    return true;
}

static bool is_lower(int c) { return c >= 'a' && c <= 'z'; }
static bool is_upper(int c) { return (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_digit(int c) { return c >= '0' && c <= '9'; }
static bool is_alnum(int c) { return is_lower(c) || is_upper(c) || is_digit(c); }
static bool is_symbol(int c) { return c && strchr("+-*/\\^<>=~:.?@#&$", c) != NULL; }
static bool is_layout(int c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* A byte that is not part of any token, for messages: printable as itself. */
static const char *describe_byte(unsigned char c, char *buf, size_t size) {
    if (c >= 0x21 && c < 0x7f) snprintf(buf, size, "'%c'", c);
    else snprintf(buf, size, "byte 0x%02X", c);
    return buf;
}

/* Skips layout and comments; false on an unterminated block comment. */
static bool skip_layout(lexer *lx) {
    while (lx->at < lx->end) {
        char c = *lx->at;
        if (c == '\n') {
            lx->line++;
            lx->line_start = ++lx->at;
        } else if (is_layout(c)) {
            lx->at++;
        } else if (c == '%') {
            while (lx->at < lx->end && *lx->at != '\n') lx->at++;
        } else if (c == '/' && lx->at + 1 < lx->end && lx->at[1] == '*') {
            uint32_t line = lx->line, col = column_of(lx, lx->at);
            lx->at += 2;
            for (;;) {
                if (lx->at + 1 >= lx->end) {
                    return fail_at(lx, line, col, "comment '/*' is never closed");
                }
                if (lx->at[0] == '*' && lx->at[1] == '/') {
                    lx->at += 2;
                    break;
                }
                if (*lx->at == '\n') {
                    lx->line++;
                    lx->line_start = lx->at + 1;
                }
                lx->at++;
            }
        } else {
            break;
        }
    }
    return true;
}

static bool lex_quoted(lexer *lx, token *tk) {
    lx->at++;
    for (;;) {
        if (lx->at >= lx->end) {
            return FAIL_TOKEN(lx, tk, "quoted atom starting here is never closed");
        }
        char c = *lx->at++;
        if (c == '\'') {
            if (lx->at < lx->end && *lx->at == '\'') {
                lx->at++;
                if (!push_char(lx, tk, '\'')) return false;
                continue;
            }
            break;
        }
        if (c == '\n') return FAIL_TOKEN(lx, tk, "quoted atom is not closed on its line");
        if (c == '\0') {
            return fail_at(lx, lx->line, column_of(lx, lx->at - 1),
                           "quoted atom contains byte 0x00");
        }
        if (c == '\\') {
            if (lx->at >= lx->end) {
                return FAIL_TOKEN(lx, tk, "quoted atom starting here is never closed");
            }
            char e = *lx->at++;
            switch (e) {
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case '\\': c = '\\'; break;
            case '\'': c = '\''; break;
            case '"': c = '"'; break;
            case '`': c = '`'; break;
            default:
                return fail_at(lx, lx->line, column_of(lx, lx->at - 2),
                               "escape '\\%c' in a quoted atom is not supported (use \\n, \\t, "
                               "\\\\ or \\')",
                               is_layout(e) || (unsigned char)e < 0x21 || (unsigned char)e >= 0x7f
                                   ? '?' : e);
            }
        }
        if (!push_char(lx, tk, c)) return false;
    }
    tk->quoted = true;
    tk->kind = T_NAME;
    return true;
}

/* Digits of a base (2, 8, 10 or 16) into tk->value; start is where the
 * number's text begins, for messages. */
static bool lex_digits(lexer *lx, token *tk, const char *start, unsigned base) {
    uint64_t v = 0;
    bool too_big = false, any = false;
    for (; lx->at < lx->end; lx->at++) {
        char c = *lx->at;
        unsigned d = is_digit(c) ? (unsigned)(c - '0')
                     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                            : 99;
        if (d >= base) break;
        any = true;
        if (v > ((uint64_t)INT_LIMIT - d) / base) too_big = true;
        else v = v * base + d;
    }
    if (!any) return FAIL_TOKEN(lx, tk, "a number '%.*s' without digits", (int)(lx->at - start), start);
    if (base == 10 && lx->at + 1 < lx->end && *lx->at == '.' && is_digit(lx->at[1])) {
        return FAIL_TOKEN(lx, tk, "floating-point number '%.*s.%c...' is not supported (only "
                          "integers)", (int)(lx->at - start), start, lx->at[1]);
    }
    if (base == 10 && lx->at + 1 < lx->end && (*lx->at == 'e' || *lx->at == 'E') &&
        (is_digit(lx->at[1]) || ((lx->at[1] == '-' || lx->at[1] == '+') &&
                                 lx->at + 2 < lx->end && is_digit(lx->at[2])))) {
        return FAIL_TOKEN(lx, tk, "floating-point number '%.*s%c...' is not supported (only "
                          "integers)", (int)(lx->at - start), start, *lx->at);
    }
    if (lx->at < lx->end && is_alnum(*lx->at)) {
        return fail_at(lx, lx->line, column_of(lx, lx->at),
                       "'%c' right after the number '%.*s'", *lx->at, (int)(lx->at - start),
                       start);
    }
    if (too_big) {
        return FAIL_TOKEN(lx, tk, "integer %.*s is out of range (at most 61 bits and a sign)",
                          (int)(lx->at - start), start);
    }
    tk->value = (int64_t)v;
    tk->kind = T_INT;
    return true;
}

static bool lex_number(lexer *lx, token *tk) {
    const char *start = lx->at;
    if (*lx->at == '0' && lx->at + 1 < lx->end) {
        char k = lx->at[1];
        if (k == 'x' || k == 'o' || k == 'b') {
            lx->at += 2;
            return lex_digits(lx, tk, start, k == 'x' ? 16 : k == 'o' ? 8 : 2);
        }
        if (k == '\'') {
            unsigned char c = lx->at + 2 < lx->end ? (unsigned char)lx->at[2] : 0;
            if (c <= 0x20 || c >= 0x7f || c == '\'' || c == '\\') {
                return FAIL_TOKEN(lx, tk, "this character code (0'...) is not supported (write "
                                  "the number)");
            }
            lx->at += 3;
            tk->value = c;
            tk->kind = T_INT;
            return true;
        }
    }
    return lex_digits(lx, tk, start, 10);
}

/* Reads the next token into tk; false on a lexical error (message set). */
bool next_token(lexer *lx, token *tk) {
    if (tk->text == NULL && !push_char(lx, tk, 'x')) return false;
    tk->len = 0;
    tk->text[0] = '\0';
    tk->quoted = false;
    const char *before = lx->at;
    if (!skip_layout(lx)) return false;
    tk->after_layout = lx->at != before;
    tk->line = lx->line;
    tk->col = column_of(lx, lx->at);
    if (lx->at >= lx->end) {
        tk->kind = T_END;
        return true;
    }
    unsigned char c = (unsigned char)*lx->at;
    if (is_lower(c) || is_upper(c)) {
        while (lx->at < lx->end && is_alnum(*lx->at)) {
            if (!push_char(lx, tk, *lx->at++)) return false;
        }
        tk->kind = is_lower(c) ? T_NAME : T_VAR;
        return true;
    }
    if (is_digit(c)) return lex_number(lx, tk);
    if (c == '\'') return lex_quoted(lx, tk);
    static const struct {
        char c;
        token_kind kind;
    } PUNCT[] = {{')', T_CLOSE}, {'[', T_LIST}, {']', T_LIST_END}, {'{', T_CURLY},
                 {'}', T_CURLY_END}, {',', T_COMMA}, {'|', T_BAR}};
    if (c == '(') {
        lx->at++;
        tk->kind = tk->after_layout ? T_PAREN : T_OPEN;
        return true;
    }
    for (size_t i = 0; i < sizeof PUNCT / sizeof PUNCT[0]; i++) {
        if (c == PUNCT[i].c) {
            lx->at++;
            tk->kind = PUNCT[i].kind;
            return true;
        }
    }
    if (c == '!' || c == ';') {
        lx->at++;
        tk->kind = T_NAME;
        return push_char(lx, tk, (char)c);
    }
    if (is_symbol(c)) {
        const char *start = lx->at;
        while (lx->at < lx->end && is_symbol(*lx->at)) {
            if (!push_char(lx, tk, *lx->at++)) return false;
        }
        unsigned char after = lx->at < lx->end ? (unsigned char)*lx->at : ' ';
        if (lx->at - start == 1 && *start == '.' &&
            (is_layout(after) || after == '%' || after < 0x20 || after >= 0x7f)) {
            tk->kind = T_STOP;
            return true;
        }
        tk->kind = T_NAME;
        return true;
    }
    char buf[32];
    switch (c) {
    case '"': return FAIL_TOKEN(lx, tk, "strings (\"...\") are not supported");
    case '`': return FAIL_TOKEN(lx, tk, "back-quoted strings are not supported");
    default: return FAIL_TOKEN(lx, tk, "unexpected %s", describe_byte(c, buf, sizeof buf));
    }
}

/* What a token is, for "expected X, found Y" messages. */
const char *found(const token *tk, char *buf, size_t size) {
    switch (tk->kind) {
    case T_END: return "the end of the file";
    case T_NAME: snprintf(buf, size, "'%s'", tk->text); return buf;
    case T_VAR: snprintf(buf, size, "variable %s", tk->text); return buf;
    case T_INT: snprintf(buf, size, "integer %lld", (long long)tk->value); return buf;
    case T_OPEN: case T_PAREN: return "'('";
    case T_CLOSE: return "')'";
    case T_LIST: return "'['";
    case T_LIST_END: return "']'";
    case T_CURLY: return "'{'";
    case T_CURLY_END: return "'}'";
    case T_COMMA: return "','";
    case T_BAR: return "'|'";
    case T_STOP: return "'.'";
    }
    return "?";
}
