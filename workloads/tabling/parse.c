/* Reads the Prolog subset hhtab evaluates: facts and rules over atoms,
 * integers and variables, `:- table Name/Arity, ...` directives, `%` and
 * `/ * * /` comments.  Everything else (compound terms, operators, control
 * constructs, strings, other directives) is refused with one message,
 * "FILE:LINE:COLUMN: what was found", and the first mistake stops the read.
 * The reader never recurses, so no input can exhaust its stack. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "program.h"

typedef enum {
    T_END,    /* end of input */
    T_ATOM,   /* name, quoted name or symbol atom (text in `text`) */
    T_VAR,
    T_INT,
    T_OPEN,   /* "(" right after a name: a call's arguments */
    T_PAREN,  /* "(" after layout */
    T_CLOSE,
    T_COMMA,
    T_STOP,   /* the end-of-clause "." */
    T_NECK,   /* ":-" */
    T_OTHER,  /* a character outside the subset, named in `text` */
} token_kind;

typedef struct lexer {
    const char *name; /* for messages */
    const char *s, *end, *at;
    uint32_t line;
    const char *line_start;
    /* the current token */
    token_kind kind;
    uint32_t tline, tcol;
    char *text; /* atom or variable name, decoded */
    size_t len, cap;
    int64_t value;
    bool quoted;
    bool failed;
    char *error;
    size_t error_size;
} lexer;

static bool fail_at(lexer *lx, uint32_t line, uint32_t col, const char *format, ...)
    __attribute__((format(printf, 4, 5)));

static bool fail_at(lexer *lx, uint32_t line, uint32_t col, const char *format, ...) {
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

#define FAIL(lx, ...) fail_at(lx, (lx)->tline, (lx)->tcol, __VA_ARGS__)

static uint32_t column_of(const lexer *lx, const char *p) {
    return (uint32_t)(p - lx->line_start) + 1;
}

static bool push_char(lexer *lx, char c) {
    if (lx->len + 1 >= lx->cap) {
        size_t cap = lx->cap ? lx->cap * 2 : 64;
        char *text = realloc(lx->text, cap);
        if (text == NULL) return FAIL(lx, "out of memory");
        lx->text = text;
        lx->cap = cap;
    }
    lx->text[lx->len++] = c;
    lx->text[lx->len] = '\0';
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

static bool lex_quoted(lexer *lx) {
    const char *open = lx->at++;
    for (;;) {
        if (lx->at >= lx->end) {
            return FAIL(lx, "quoted atom starting here is never closed");
        }
        char c = *lx->at++;
        if (c == '\'') {
            if (lx->at < lx->end && *lx->at == '\'') {
                lx->at++;
                if (!push_char(lx, '\'')) return false;
                continue;
            }
            break;
        }
        if (c == '\n') return FAIL(lx, "quoted atom is not closed on its line");
        if (c == '\0') {
            return fail_at(lx, lx->line, column_of(lx, lx->at - 1),
                           "quoted atom contains byte 0x00");
        }
        if (c == '\\') {
            if (lx->at >= lx->end) return FAIL(lx, "quoted atom starting here is never closed");
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
        if (!push_char(lx, c)) return false;
    }
    (void)open;
    lx->quoted = true;
    lx->kind = T_ATOM;
    return true;
}

static bool lex_number(lexer *lx, bool negative) {
    const char *start = lx->at;
    if (*lx->at == '0' && lx->at + 1 < lx->end &&
        (lx->at[1] == '\'' || lx->at[1] == 'x' || lx->at[1] == 'o' || lx->at[1] == 'b')) {
        return FAIL(lx, "'0%c' numbers are not supported (only decimal integers)", lx->at[1]);
    }
    uint64_t v = 0;
    bool too_big = false;
    while (lx->at < lx->end && is_digit(*lx->at)) {
        v = v * 10 + (uint64_t)(*lx->at - '0');
        if (v > (uint64_t)INT_LIMIT) too_big = true;
        lx->at++;
    }
    if (lx->at + 1 < lx->end && *lx->at == '.' && is_digit(lx->at[1])) {
        return FAIL(lx, "floating-point number '%.*s.%c...' is not supported (only integers)",
                    (int)(lx->at - start), start, lx->at[1]);
    }
    if (lx->at < lx->end && (is_alnum(*lx->at))) {
        return fail_at(lx, lx->line, column_of(lx, lx->at),
                       "'%c' right after the number '%.*s' (numbers are decimal digits only)",
                       *lx->at, (int)(lx->at - start), start);
    }
    if (too_big || (!negative && v == (uint64_t)INT_LIMIT)) {
        return FAIL(lx, "integer %s%.*s is out of range (at most 61 bits and a sign)",
                    negative ? "-" : "", (int)(lx->at - start), start);
    }
    lx->value = negative ? -(int64_t)v : (int64_t)v;
    lx->kind = T_INT;
    return true;
}

/* Reads the next token into lx; false on a lexical error (message set). */
static bool next_token(lexer *lx) {
    if (lx->text == NULL) { /* never NULL after this: the empty atom '' has text "" */
        lx->text = malloc(64);
        if (lx->text == NULL) return fail_at(lx, lx->line, column_of(lx, lx->at), "out of memory");
        lx->cap = 64;
    }
    lx->len = 0;
    lx->text[0] = '\0';
    lx->quoted = false;
    const char *before = lx->at;
    if (!skip_layout(lx)) return false;
    bool after_layout = lx->at != before;
    lx->tline = lx->line;
    lx->tcol = column_of(lx, lx->at);
    if (lx->at >= lx->end) {
        lx->kind = T_END;
        return true;
    }
    unsigned char c = (unsigned char)*lx->at;
    if (is_lower(c)) {
        while (lx->at < lx->end && is_alnum(*lx->at)) {
            if (!push_char(lx, *lx->at++)) return false;
        }
        lx->kind = T_ATOM;
        return true;
    }
    if (is_upper(c)) {
        while (lx->at < lx->end && is_alnum(*lx->at)) {
            if (!push_char(lx, *lx->at++)) return false;
        }
        lx->kind = T_VAR;
        return true;
    }
    if (is_digit(c)) return lex_number(lx, false);
    if (c == '\'') return lex_quoted(lx);
    if (c == '(') {
        lx->at++;
        lx->kind = after_layout ? T_PAREN : T_OPEN;
        return true;
    }
    if (c == ')' || c == ',') {
        lx->at++;
        lx->kind = c == ')' ? T_CLOSE : T_COMMA;
        return true;
    }
    if (c == '-' && lx->at + 1 < lx->end && is_digit(lx->at[1])) {
        lx->at++;
        return lex_number(lx, true);
    }
    if (is_symbol(c)) {
        const char *start = lx->at;
        while (lx->at < lx->end && is_symbol(*lx->at)) {
            if (!push_char(lx, *lx->at++)) return false;
        }
        unsigned char after = lx->at < lx->end ? (unsigned char)*lx->at : ' ';
        if (lx->at - start == 1 && *start == '.' &&
            (is_layout(after) || after == '%' || after < 0x20 || after >= 0x7f)) {
            lx->kind = T_STOP;
            return true;
        }
        if (lx->at - start == 2 && start[0] == ':' && start[1] == '-') {
            lx->kind = T_NECK;
            return true;
        }
        lx->kind = T_ATOM; /* a symbol atom: only "/" in directives is accepted */
        return true;
    }
    char buf[32];
    lx->kind = T_OTHER;
    switch (c) {
    case '"': return FAIL(lx, "strings (\"...\") are not supported");
    case '`': return FAIL(lx, "back-quoted strings are not supported");
    case '[':
    case ']':
        return FAIL(lx, "lists are not supported (arguments are atoms, integers or variables)");
    case '{': case '}': return FAIL(lx, "curly terms are not supported");
    case '|': return FAIL(lx, "'|' is not supported");
    case '!': return FAIL(lx, "cut (!) is not supported (function-free Horn clauses only)");
    case ';':
        return FAIL(lx, "disjunction (;) is not supported (write one clause per alternative)");
    default: return FAIL(lx, "unexpected %s", describe_byte(c, buf, sizeof buf));
    }
}

/* What the current token is, for "expected X, found Y" messages. */
static const char *found(const lexer *lx, char *buf, size_t size) {
    switch (lx->kind) {
    case T_END: return "the end of the file";
    case T_ATOM: snprintf(buf, size, "'%s'", lx->text ? lx->text : ""); return buf;
    case T_VAR: snprintf(buf, size, "variable %s", lx->text); return buf;
    case T_INT: snprintf(buf, size, "integer %lld", (long long)lx->value); return buf;
    case T_OPEN: case T_PAREN: return "'('";
    case T_CLOSE: return "')'";
    case T_COMMA: return "','";
    case T_STOP: return "'.'";
    case T_NECK: return "':-'";
    default: return "an unexpected character";
    }
}

#define MAX_BODY 1024

typedef struct parser {
    lexer lx;
    program *prog;
    /* the clause being read */
    char **var_names;
    uint32_t nvars, cap_vars;
    term args[MAX_ARITY];
} parser;

static bool clause_var(parser *ps, term *out) {
    lexer *lx = &ps->lx;
    if (strcmp(lx->text, "_") != 0) {
        for (uint32_t i = 0; i < ps->nvars; i++) {
            if (ps->var_names[i] && strcmp(ps->var_names[i], lx->text) == 0) {
                *out = make_ref(i);
                return true;
            }
        }
    }
    if (ps->nvars == MAX_CLAUSE_VARS) {
        return FAIL(lx, "more than %d variables in one clause", MAX_CLAUSE_VARS);
    }
    if (ps->nvars == ps->cap_vars) {
        uint32_t cap = ps->cap_vars ? ps->cap_vars * 2 : 16;
        char **names = realloc(ps->var_names, cap * sizeof *names);
        if (names == NULL) return FAIL(lx, "out of memory");
        ps->var_names = names;
        ps->cap_vars = cap;
    }
    char *name = NULL;
    if (strcmp(lx->text, "_") != 0) {
        name = strdup(lx->text);
        if (name == NULL) return FAIL(lx, "out of memory");
    }
    ps->var_names[ps->nvars] = name;
    *out = make_ref(ps->nvars++);
    return true;
}

static void forget_vars(parser *ps) {
    for (uint32_t i = 0; i < ps->nvars; i++) free(ps->var_names[i]);
    ps->nvars = 0;
}

/* An unquoted atom of symbol characters (->, \+, =, ...): an operator, which
 * the subset does not have. */
static bool is_operator(const lexer *lx) {
    return lx->kind == T_ATOM && !lx->quoted && is_symbol((unsigned char)lx->text[0]);
}

/* Reads "name" or "name(arg, ...)" (the name is the current token) into
 * ps->args; leaves the token after it current.  `what`: "head", "goal", ... */
static bool read_call(parser *ps, const char *what, uint32_t *name, uint32_t *arity) {
    lexer *lx = &ps->lx;
    char buf[160];
    if (lx->kind != T_ATOM) {
        if (lx->kind == T_VAR) return FAIL(lx, "a variable (%s) cannot be a %s", lx->text, what);
        if (lx->kind == T_INT) {
            return FAIL(lx, "a number (%lld) cannot be a %s", (long long)lx->value, what);
        }
        if (lx->kind == T_PAREN || lx->kind == T_OPEN) {
            return FAIL(lx, "parenthesised goals are not supported (expected a %s)", what);
        }
        return FAIL(lx, "expected a %s, found %s", what, found(lx, buf, sizeof buf));
    }
    if (is_operator(lx)) {
        if (strcmp(lx->text, "\\+") == 0) return FAIL(lx, "negation (\\+) is not supported");
        if (strcmp(lx->text, "->") == 0) return FAIL(lx, "if-then-else (->) is not supported");
        return FAIL(lx, "operator '%s' is not supported (expected a %s)", lx->text, what);
    }
    if (!program_atom(ps->prog, lx->text, lx->len, name)) return FAIL(lx, "out of memory");
    uint32_t line = lx->tline, col = lx->tcol;
    *arity = 0;
    if (!next_token(lx)) return false;
    if (lx->kind != T_OPEN) return true;
    for (;;) {
        if (!next_token(lx)) return false;
        term arg = UNBOUND;
        if (lx->kind == T_VAR) {
            if (!clause_var(ps, &arg)) return false;
        } else if (lx->kind == T_INT) {
            arg = make_int(lx->value);
        } else if (lx->kind == T_ATOM && !is_operator(lx)) {
            uint32_t id;
            if (!program_atom(ps->prog, lx->text, lx->len, &id)) return FAIL(lx, "out of memory");
            arg = make_atom(id);
        } else if (lx->kind == T_ATOM) {
            return FAIL(lx, "operator '%s' is not supported (arguments are atoms, integers or "
                        "variables)", lx->text);
        } else {
            return FAIL(lx, "expected an argument (atom, integer or variable), found %s",
                        found(lx, buf, sizeof buf));
        }
        uint32_t aline = lx->tline, acol = lx->tcol;
        bool compound = lx->kind == T_ATOM;
        char aname[64];
        snprintf(aname, sizeof aname, "%s", lx->kind == T_ATOM ? lx->text : "");
        if (!next_token(lx)) return false;
        if (compound && lx->kind == T_OPEN) {
            return fail_at(lx, aline, acol, "compound term %s(...) is not supported (arguments "
                           "are atoms, integers or variables)", aname);
        }
        if (*arity == MAX_ARITY) {
            return fail_at(lx, line, col, "more than %d arguments", MAX_ARITY);
        }
        ps->args[(*arity)++] = arg;
        if (lx->kind == T_CLOSE) break;
        if (is_operator(lx)) {
            return FAIL(lx, "operator '%s' is not supported (arguments are atoms, integers or "
                        "variables)", lx->text);
        }
        if (lx->kind != T_COMMA) {
            return FAIL(lx, "expected ',' or ')' in the arguments of %s, found %s",
                        ps->prog->atom_names[*name], found(lx, buf, sizeof buf));
        }
    }
    return next_token(lx);
}

static bool define_pred(parser *ps, pred *p, uint32_t line, uint32_t col, const char *what) {
    if (p->def_what == NULL) {
        p->def_what = what;
        p->def_line = line;
        p->def_column = col;
    }
    (void)ps;
    return true;
}

/* ":- table name/arity, ... ." (the ":-" was read). */
static bool read_directive(parser *ps) {
    lexer *lx = &ps->lx;
    char buf[160];
    if (!next_token(lx)) return false;
    if (lx->kind != T_ATOM || lx->quoted || strcmp(lx->text, "table") != 0) {
        if (lx->kind == T_ATOM) {
            return FAIL(lx, "directive '%s' is not supported (only ':- table Name/Arity.')",
                        lx->text);
        }
        return FAIL(lx, "expected a directive (':- table Name/Arity.'), found %s",
                    found(lx, buf, sizeof buf));
    }
    for (;;) {
        if (!next_token(lx)) return false;
        if (lx->kind != T_ATOM || is_operator(lx)) {
            return FAIL(lx, "expected Name/Arity after 'table', found %s",
                        found(lx, buf, sizeof buf));
        }
        uint32_t name, line = lx->tline, col = lx->tcol;
        if (!program_atom(ps->prog, lx->text, lx->len, &name)) return FAIL(lx, "out of memory");
        if (!next_token(lx)) return false;
        if (lx->kind != T_ATOM || lx->quoted || strcmp(lx->text, "/") != 0) {
            return FAIL(lx, "expected '/' after the predicate name in a table directive, found %s",
                        found(lx, buf, sizeof buf));
        }
        if (!next_token(lx)) return false;
        if (lx->kind != T_INT || lx->value < 0 || lx->value > MAX_ARITY) {
            return FAIL(lx, "expected an arity from 0 to %d, found %s", MAX_ARITY,
                        found(lx, buf, sizeof buf));
        }
        pred *p = program_pred(ps->prog, name, (uint32_t)lx->value, true);
        if (p == NULL) return FAIL(lx, "out of memory");
        p->tabled = true;
        define_pred(ps, p, line, col, "table directive");
        if (!next_token(lx)) return false;
        if (lx->kind == T_STOP) return true;
        if (lx->kind == T_ATOM && !lx->quoted && strcmp(lx->text, "as") == 0) {
            return FAIL(lx, "table modes ('as ...') are not supported");
        }
        if (lx->kind != T_COMMA) {
            return FAIL(lx, "expected ',' or '.' after a table specification, found %s",
                        found(lx, buf, sizeof buf));
        }
    }
}

static literal *make_literal(parser *ps, pred *p, uint32_t line, uint32_t col) {
    literal *l = program_alloc(ps->prog, sizeof *l + p->arity * sizeof(term));
    if (l == NULL) return NULL;
    l->p = p;
    l->line = line;
    l->column = col;
    memcpy(l->args, ps->args, p->arity * sizeof(term));
    return l;
}

static bool read_clause(parser *ps) {
    lexer *lx = &ps->lx;
    char buf[160];
    forget_vars(ps);
    uint32_t line = lx->tline, col = lx->tcol;
    uint32_t name, arity;
    if (!read_call(ps, "clause head", &name, &arity)) return false;
    const char *hname = ps->prog->atom_names[name];
    if (arity == 0 && strcmp(hname, "true") == 0) {
        return fail_at(lx, line, col, "'true' cannot be redefined");
    }
    pred *p = program_pred(ps->prog, name, arity, true);
    if (p == NULL) return FAIL(lx, "out of memory");
    term head[MAX_ARITY];
    memcpy(head, ps->args, arity * sizeof(term));
    literal *body[MAX_BODY];
    uint32_t nbody = 0;
    if (lx->kind == T_NECK) {
        for (;;) {
            if (!next_token(lx)) return false;
            uint32_t gline = lx->tline, gcol = lx->tcol;
            uint32_t gname, garity;
            if (!read_call(ps, "goal", &gname, &garity)) return false;
            if (!(garity == 0 && strcmp(ps->prog->atom_names[gname], "true") == 0)) {
                if (nbody == MAX_BODY) {
                    return fail_at(lx, gline, gcol, "more than %d goals in one clause body",
                                   MAX_BODY);
                }
                pred *g = program_pred(ps->prog, gname, garity, true);
                if (g == NULL || (body[nbody] = make_literal(ps, g, gline, gcol)) == NULL) {
                    return FAIL(lx, "out of memory");
                }
                nbody++;
            }
            if (lx->kind == T_STOP) break;
            if (is_operator(lx)) {
                return FAIL(lx, "operator '%s' is not supported (clause bodies are goals "
                            "separated by ',')", lx->text);
            }
            if (lx->kind != T_COMMA) {
                return FAIL(lx, "expected ',' or '.' after a goal, found %s",
                            found(lx, buf, sizeof buf));
            }
        }
    } else if (lx->kind != T_STOP) {
        if (is_operator(lx)) {
            return FAIL(lx, "operator '%s' is not supported (expected ':-' or '.')", lx->text);
        }
        return FAIL(lx, "expected ':-' or '.' after the clause head, found %s",
                    found(lx, buf, sizeof buf));
    }
    clause *c = program_alloc(ps->prog, sizeof *c);
    if (c == NULL) return FAIL(lx, "out of memory");
    c->p = p;
    c->nvars = ps->nvars;
    c->nbody = nbody;
    c->line = line;
    c->column = col;
    c->head = program_alloc(ps->prog, (arity ? arity : 1) * sizeof(term));
    c->body = program_alloc(ps->prog, (nbody ? nbody : 1) * sizeof(literal *));
    if (c->head == NULL || c->body == NULL) return FAIL(lx, "out of memory");
    memcpy(c->head, head, arity * sizeof(term));
    memcpy(c->body, body, nbody * sizeof(literal *));
    if (nbody > 0) p->facts_only = false;
    for (uint32_t i = 0; i < arity; i++) {
        if (!is_const(head[i])) p->facts_only = false;
    }
    if (p->nclauses == p->cap_clauses) {
        uint32_t cap = p->cap_clauses ? p->cap_clauses * 2 : 4;
        clause **clauses = realloc(p->clauses, cap * sizeof *clauses);
        if (clauses == NULL) return FAIL(lx, "out of memory");
        p->clauses = clauses;
        p->cap_clauses = cap;
    }
    p->clauses[p->nclauses++] = c;
    define_pred(ps, p, line, col, "clause");
    return true;
}

/* Every called predicate must have clauses or a table directive. */
static bool check_calls(parser *ps) {
    for (pred *p = ps->prog->first_pred; p != NULL; p = p->next) {
        for (uint32_t c = 0; c < p->nclauses; c++) {
            for (uint32_t b = 0; b < p->clauses[c]->nbody; b++) {
                literal *l = p->clauses[c]->body[b];
                if (l->p->nclauses == 0 && !l->p->tabled) {
                    return fail_at(&ps->lx, l->line, l->column,
                                   "%s/%u is called but has no clauses (unknown procedure)",
                                   ps->prog->atom_names[l->p->name], l->p->arity);
                }
            }
        }
    }
    return true;
}

program *program_parse(const char *name, const char *text, size_t len, char *error,
                       size_t error_size) {
    parser ps = {0};
    ps.lx.name = name;
    ps.lx.s = ps.lx.at = ps.lx.line_start = text;
    ps.lx.end = text + len;
    ps.lx.line = 1;
    ps.lx.error = error;
    ps.lx.error_size = error_size;
    ps.prog = program_new();
    bool ok = ps.prog != NULL && next_token(&ps.lx);
    if (ps.prog == NULL) snprintf(error, error_size, "%s: out of memory", name);
    while (ok && ps.lx.kind != T_END) {
        if (ps.lx.kind == T_NECK) {
            ok = read_directive(&ps);
        } else {
            ok = read_clause(&ps);
        }
        ok = ok && next_token(&ps.lx);
    }
    ok = ok && check_calls(&ps);
    if (ok && !program_finish(ps.prog)) {
        snprintf(error, error_size, "%s: out of memory", name);
        ok = false;
    }
    forget_vars(&ps);
    free(ps.var_names);
    free(ps.lx.text);
    if (!ok) {
        program_free(ps.prog);
        return NULL;
    }
    return ps.prog;
}

program *program_read(const char *path, char *error, size_t error_size) {
    size_t len;
    char *text = cli_read_file(path, &len, error, error_size);
    if (text == NULL) return NULL;
    program *prog = program_parse(path, text, len, error, error_size);
    free(text);
    return prog;
}

bool query_parse(program *prog, const char *text, query *q, char *error, size_t error_size) {
    parser ps = {0};
    ps.lx.name = "--query";
    ps.lx.s = ps.lx.at = ps.lx.line_start = text;
    ps.lx.end = text + strlen(text);
    ps.lx.line = 1;
    ps.lx.error = error;
    ps.lx.error_size = error_size;
    ps.prog = prog;
    char buf[160];
    uint32_t name, arity;
    bool ok = next_token(&ps.lx);
    uint32_t line = ps.lx.tline, col = ps.lx.tcol;
    ok = ok && read_call(&ps, "query", &name, &arity);
    if (ok && ps.lx.kind == T_STOP) ok = next_token(&ps.lx);
    if (ok && ps.lx.kind != T_END) {
        ok = FAIL(&ps.lx, "expected the end of the query (one goal), found %s",
                  found(&ps.lx, buf, sizeof buf));
    }
    pred *p = ok ? program_pred(prog, name, arity, false) : NULL;
    if (ok && (p == NULL || (p->nclauses == 0 && !p->tabled))) {
        ok = fail_at(&ps.lx, line, col, "%s/%u is not defined in the program (unknown procedure)",
                     prog->atom_names[name], arity);
    }
    if (ok) {
        q->goal = make_literal(&ps, p, line, col);
        q->nvars = ps.nvars;
        q->var_names = program_alloc(prog, (ps.nvars + 1) * sizeof(char *));
        if (q->goal == NULL || q->var_names == NULL) {
            ok = FAIL(&ps.lx, "out of memory");
        } else {
            for (uint32_t i = 0; i < ps.nvars; i++) {
                const char *v = ps.var_names[i] ? ps.var_names[i] : "_";
                q->var_names[i] = program_alloc(prog, strlen(v) + 1);
                if (q->var_names[i]) strcpy(q->var_names[i], v);
            }
        }
    }
    forget_vars(&ps);
    free(ps.var_names);
    free(ps.lx.text);
    return ok;
}
