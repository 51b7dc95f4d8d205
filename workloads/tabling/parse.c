/* Reads the Prolog hhtab evaluates: facts and rules over atoms, integers,
 * variables, compound terms and lists, with the standard operators; bodies
 * of calls, `true`, `fail`, `=`, `\=`, `==`, `\==`, `is` and arithmetic
 * comparisons, and `\+` of goals that call no tabled predicate;
 * `:- table Name/Arity, ...` directives; `%` and `/ * * /` comments.
 * Everything else (strings, floats, cut, disjunction, if-then-else, other
 * directives, table modes) is refused with one message,
 * "FILE:LINE:COLUMN: what was found", and the first mistake stops the read.
 *
 * Two steps per clause.  The reader turns tokens into a parse tree whose
 * nodes know where they were written (an operator-precedence parser with
 * explicit stacks: it never recurses, so no input can exhaust its stack).
 * The compiler turns the tree into a clause: the head's and each goal's
 * arguments become terms, `\+ G` becomes a call of a hidden predicate whose
 * only clause has G as its body. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "program.h"

/* ---- tokens ---- */

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

#define FAIL_TOKEN(lx, tk, ...) fail_at(lx, (tk)->line, (tk)->col, __VA_ARGS__)

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
static bool next_token(lexer *lx, token *tk) {
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
static const char *found(const token *tk, char *buf, size_t size) {
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

/* ---- operators ---- */

typedef enum { OP_XFX, OP_XFY, OP_YFX, OP_FY, OP_FX } op_type;
typedef struct op_def {
    const char *name;
    uint16_t priority;
    op_type type;
} op_def;

/* SWI-Prolog's operators that a program of this subset may meet. */
static const op_def INFIX[] = {
    {":-", 1200, OP_XFX}, {"-->", 1200, OP_XFX}, {";", 1100, OP_XFY}, {"->", 1050, OP_XFY},
    {"*->", 1050, OP_XFY}, {"=", 700, OP_XFX}, {"\\=", 700, OP_XFX}, {"==", 700, OP_XFX},
    {"\\==", 700, OP_XFX}, {"@<", 700, OP_XFX}, {"@>", 700, OP_XFX}, {"@=<", 700, OP_XFX},
    {"@>=", 700, OP_XFX}, {"=..", 700, OP_XFX}, {"is", 700, OP_XFX}, {"=:=", 700, OP_XFX},
    {"=\\=", 700, OP_XFX}, {"<", 700, OP_XFX}, {">", 700, OP_XFX}, {"=<", 700, OP_XFX},
    {">=", 700, OP_XFX}, {"as", 700, OP_XFX}, {":", 200, OP_XFY}, {"+", 500, OP_YFX},
    {"-", 500, OP_YFX}, {"/\\", 500, OP_YFX}, {"\\/", 500, OP_YFX}, {"*", 400, OP_YFX},
    {"/", 400, OP_YFX}, {"//", 400, OP_YFX}, {"mod", 400, OP_YFX}, {"rem", 400, OP_YFX},
    {"<<", 400, OP_YFX}, {">>", 400, OP_YFX}, {"div", 400, OP_YFX}, {"rdiv", 400, OP_YFX},
    {"xor", 400, OP_YFX}, {"**", 200, OP_XFX}, {"^", 200, OP_XFY},
};
static const op_def PREFIX[] = {
    {":-", 1200, OP_FX}, {"?-", 1200, OP_FX}, {"table", 1150, OP_FX}, {"dynamic", 1150, OP_FX},
    {"discontiguous", 1150, OP_FX}, {"initialization", 1150, OP_FX}, {"multifile", 1150, OP_FX},
    {"\\+", 900, OP_FY}, {"-", 200, OP_FY}, {"+", 200, OP_FY}, {"\\", 200, OP_FY},
};
static const op_def COMMA_OP = {",", 1000, OP_XFY};
static const op_def BAR_OP = {"|", 1100, OP_XFY};

static const op_def *find_op(const op_def *table, size_t n, const token *tk) {
    if (tk->kind != T_NAME) return NULL;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(table[i].name, tk->text) == 0) return &table[i];
    }
    return NULL;
}
static const op_def *infix_op(const token *tk) {
    if (tk->kind == T_COMMA) return &COMMA_OP;
    if (tk->kind == T_BAR) return &BAR_OP;
    return find_op(INFIX, sizeof INFIX / sizeof INFIX[0], tk);
}
static const op_def *prefix_op(const token *tk) {
    return find_op(PREFIX, sizeof PREFIX / sizeof PREFIX[0], tk);
}

/* ---- the parse tree ---- */

typedef enum { N_ATOM, N_INT, N_VAR, N_COMPOUND } node_kind;

/* A node of one clause's parse tree.  Nodes are made bottom-up, so a
 * node's subtree is the nodes from `start` to itself. */
typedef struct pnode {
    node_kind kind;
    uint32_t line, col;
    uint32_t start;
    uint32_t arity;  /* N_COMPOUND */
    uint32_t kids;   /* N_COMPOUND: where its arguments' node numbers are in `kids` */
    uint32_t name;   /* N_ATOM, N_COMPOUND: atom id */
    uint32_t var;    /* N_VAR: the clause's variable number */
    int64_t value;   /* N_INT */
} pnode;

#define MAX_BODY 1024

typedef struct parser {
    lexer lx;
    program *prog;
    token tk[2]; /* the current token and the one after it */
    token *cur, *next;
    /* the clause being read */
    pnode *nodes;
    uint32_t nnodes, cap_nodes;
    uint32_t *kids;
    uint32_t nkids, cap_kids;
    char **var_names; /* NULL for _ */
    uint32_t nvars, cap_vars;
    /* explicit stacks of the reader */
    struct rctx *ctx;
    uint32_t nctx, cap_ctx;
    uint32_t *operands;
    uint32_t noperands, cap_operands;
    /* the compiler's */
    term *terms; /* per node */
    uint32_t *var_slot; /* clause variable -> slot of the clause being compiled */
    uint32_t cap_terms, cap_var_slot;
} parser;

static bool grow(void **array, uint32_t *cap, uint32_t need, size_t item) {
    if (need <= *cap) return true;
    uint32_t n = *cap ? *cap : 64;
    while (n < need) n *= 2;
    void *bigger = realloc(*array, (size_t)n * item);
    if (bigger == NULL) return false;
    *array = bigger;
    *cap = n;
    return true;
}
#define GROW(ps, array, cap, need) grow((void **)&(array), &(cap), (need), sizeof *(array))

static bool advance(parser *ps) {
    token *t = ps->cur;
    ps->cur = ps->next;
    ps->next = t;
    return next_token(&ps->lx, ps->next);
}

static bool new_node(parser *ps, node_kind kind, uint32_t line, uint32_t col, uint32_t *out) {
    if (!GROW(ps, ps->nodes, ps->cap_nodes, ps->nnodes + 1)) {
        return fail_at(&ps->lx, line, col, "out of memory");
    }
    pnode *n = &ps->nodes[ps->nnodes];
    memset(n, 0, sizeof *n);
    n->kind = kind;
    n->line = line;
    n->col = col;
    n->start = ps->nnodes;
    *out = ps->nnodes++;
    return true;
}

/* A compound of the top `arity` operands. */
static bool compound_node(parser *ps, uint32_t name, uint32_t arity, uint32_t line, uint32_t col,
                          uint32_t *out) {
    if (arity > MAX_ARITY) return fail_at(&ps->lx, line, col, "more than %d arguments", MAX_ARITY);
    if (!GROW(ps, ps->kids, ps->cap_kids, ps->nkids + arity) ||
        !new_node(ps, N_COMPOUND, line, col, out)) {
        return fail_at(&ps->lx, line, col, "out of memory");
    }
    pnode *n = &ps->nodes[*out];
    n->name = name;
    n->arity = arity;
    n->kids = ps->nkids;
    ps->noperands -= arity;
    memcpy(ps->kids + ps->nkids, ps->operands + ps->noperands, arity * sizeof *ps->kids);
    ps->nkids += arity;
    if (arity > 0) n->start = ps->nodes[ps->kids[n->kids]].start;
    return true;
}

static bool push_operand(parser *ps, uint32_t node) {
    if (!GROW(ps, ps->operands, ps->cap_operands, ps->noperands + 1)) {
        return fail_at(&ps->lx, ps->cur->line, ps->cur->col, "out of memory");
    }
    ps->operands[ps->noperands++] = node;
    return true;
}

static bool atom_of(parser *ps, const token *tk, uint32_t *id) {
    if (!program_atom(ps->prog, tk->text, tk->len, id)) {
        return FAIL_TOKEN(&ps->lx, tk, "out of memory");
    }
    return true;
}

static bool var_node(parser *ps, uint32_t *out) {
    token *tk = ps->cur;
    uint32_t v = ps->nvars;
    if (strcmp(tk->text, "_") != 0) {
        for (uint32_t i = 0; i < ps->nvars; i++) {
            if (ps->var_names[i] && strcmp(ps->var_names[i], tk->text) == 0) v = i;
        }
    }
    if (v == ps->nvars) {
        if (ps->nvars == MAX_CLAUSE_VARS) {
            return FAIL_TOKEN(&ps->lx, tk, "more than %d variables in one clause",
                              MAX_CLAUSE_VARS);
        }
        char *name = NULL;
        if (strcmp(tk->text, "_") != 0 && (name = strdup(tk->text)) == NULL) {
            return FAIL_TOKEN(&ps->lx, tk, "out of memory");
        }
        if (!GROW(ps, ps->var_names, ps->cap_vars, ps->nvars + 1)) {
            free(name);
            return FAIL_TOKEN(&ps->lx, tk, "out of memory");
        }
        ps->var_names[ps->nvars++] = name;
    }
    if (!new_node(ps, N_VAR, tk->line, tk->col, out)) return false;
    ps->nodes[*out].var = v;
    return true;
}

/* What the reader is in the middle of. */
typedef enum { R_TOP, R_PAREN, R_ARGS, R_LIST, R_LIST_TAIL, R_PREFIX, R_INFIX } rctx_kind;
typedef struct rctx {
    rctx_kind kind;
    uint32_t maxp;       /* the priority an operand here may have */
    uint32_t name;       /* R_ARGS: the functor; R_PREFIX, R_INFIX: the operator */
    uint32_t priority;   /* R_PREFIX, R_INFIX: the operator's */
    uint32_t line, col;  /* where it started */
    uint32_t count;      /* R_ARGS, R_LIST: operands so far */
} rctx;

static bool push_ctx(parser *ps, rctx c) {
    if (!GROW(ps, ps->ctx, ps->cap_ctx, ps->nctx + 1)) {
        return fail_at(&ps->lx, c.line, c.col, "out of memory");
    }
    ps->ctx[ps->nctx++] = c;
    return true;
}

static bool ends_operand(const token *tk) {
    return tk->kind == T_END || tk->kind == T_STOP || tk->kind == T_CLOSE ||
           tk->kind == T_LIST_END || tk->kind == T_CURLY_END || tk->kind == T_COMMA ||
           tk->kind == T_BAR;
}

/* Reads one term ending with `end` (T_STOP or T_END) into the parse tree;
 * *root is its node.  The current token is its first; `end` is consumed. */
static bool read_term(parser *ps, token_kind end, uint32_t *root) {
    char buf[160];
    lexer *lx = &ps->lx;
    ps->nctx = 0;
    ps->noperands = 0;
    if (!push_ctx(ps, (rctx){R_TOP, 1200, 0, 0, ps->cur->line, ps->cur->col, 0})) return false;
    uint32_t node = 0, priority = 0;
    for (;;) {
        /* Wanting an operand: a primary term, or the start of a bigger one. */
        token *tk = ps->cur;
        uint32_t line = tk->line, col = tk->col; /* tk is the lookahead's after advance() */
        uint32_t maxp = ps->ctx[ps->nctx - 1].maxp;
        bool have = false;
        switch (tk->kind) {
        case T_INT:
            if (tk->value >= INT_LIMIT) {
                return FAIL_TOKEN(lx, tk, "integer %lld is out of range (at most 61 bits and a "
                                  "sign)", (long long)tk->value);
            }
            if (!new_node(ps, N_INT, tk->line, tk->col, &node)) return false;
            ps->nodes[node].value = tk->value;
            have = true;
            break;
        case T_VAR:
            if (!var_node(ps, &node)) return false;
            have = true;
            break;
        case T_OPEN:
        case T_PAREN:
            if (!push_ctx(ps, (rctx){R_PAREN, 1200, 0, 0, tk->line, tk->col, 0})) return false;
            break;
        case T_LIST:
            if (ps->next->kind == T_LIST_END) {
                if (!new_node(ps, N_ATOM, tk->line, tk->col, &node)) return false;
                ps->nodes[node].name = ATOM_NIL;
                if (!advance(ps)) return false;
                have = true;
            } else if (!push_ctx(ps, (rctx){R_LIST, 999, 0, 0, tk->line, tk->col, 0})) {
                return false;
            }
            break;
        case T_CURLY:
            return FAIL_TOKEN(lx, tk, "curly terms ({...}) are not supported");
        case T_NAME: {
            uint32_t name;
            if (!atom_of(ps, tk, &name)) return false;
            const op_def *pre = prefix_op(tk);
            if (ps->next->kind == T_OPEN) {
                if (!advance(ps)) return false;
                if (!push_ctx(ps, (rctx){R_ARGS, 999, name, 0, line, col, 0})) return false;
                break;
            }
            if (!tk->quoted && strcmp(tk->text, "-") == 0 && ps->next->kind == T_INT &&
                !ps->next->after_layout) {
                if (!advance(ps)) return false;
                if (!new_node(ps, N_INT, line, col, &node)) return false;
                ps->nodes[node].value = -ps->cur->value;
                have = true;
                break;
            }
            const op_def *in_next = infix_op(ps->next);
            bool operand_next = !ends_operand(ps->next) && (in_next == NULL ||
                                                            prefix_op(ps->next) != NULL);
            if (pre != NULL && pre->priority <= maxp && operand_next) {
                uint32_t argp = pre->type == OP_FY ? pre->priority : pre->priority - 1u;
                if (!push_ctx(ps, (rctx){R_PREFIX, argp, name, pre->priority, tk->line, tk->col,
                                         0})) {
                    return false;
                }
                break;
            }
            if (!new_node(ps, N_ATOM, tk->line, tk->col, &node)) return false;
            ps->nodes[node].name = name;
            have = true;
            break;
        }
        default:
            return FAIL_TOKEN(lx, tk, "expected a term, found %s", found(tk, buf, sizeof buf));
        }
        if (!advance(ps)) return false;
        if (!have) continue;
        priority = 0;
        /* Having an operand: extend it with infix operators, or finish what
         * it is the last operand of. */
        for (;;) {
            rctx *c = &ps->ctx[ps->nctx - 1];
            const op_def *op = infix_op(ps->cur);
            if (op != NULL && !(ps->cur->kind == T_BAR && c->kind == R_LIST) &&
                !(ps->cur->kind == T_COMMA && (c->kind == R_ARGS || c->kind == R_LIST))) {
                uint32_t leftp = op->type == OP_YFX ? op->priority : op->priority - 1u;
                uint32_t rightp = op->type == OP_XFY ? op->priority : op->priority - 1u;
                if (op->priority <= c->maxp && priority <= leftp) {
                    uint32_t name;
                    if (!program_atom(ps->prog, op->name, strlen(op->name), &name)) {
                        return FAIL_TOKEN(lx, ps->cur, "out of memory");
                    }
                    if (!push_operand(ps, node) ||
                        !push_ctx(ps, (rctx){R_INFIX, rightp, name, op->priority, ps->cur->line,
                                             ps->cur->col, 0}) ||
                        !advance(ps)) {
                        return false;
                    }
                    break; /* wanting its right operand */
                }
            }
            bool clash = op != NULL && c->kind != R_INFIX && c->kind != R_PREFIX;
            if (c->kind == R_INFIX || c->kind == R_PREFIX) {
                if (!push_operand(ps, node) ||
                    !compound_node(ps, c->name, c->kind == R_INFIX ? 2 : 1, c->line, c->col,
                                   &node)) {
                    return false;
                }
                priority = c->priority;
                ps->nctx--;
                continue;
            }
            if (c->kind == R_TOP) {
                if (ps->cur->kind == end) {
                    *root = node;
                    return end == T_END || advance(ps);
                }
                /* A query may end with '.'. */
                if (end == T_END && ps->cur->kind == T_STOP && ps->next->kind == T_END) {
                    *root = node;
                    return true;
                }
                if (clash) {
                    return FAIL_TOKEN(lx, ps->cur, "operator priority clash at %s",
                                      found(ps->cur, buf, sizeof buf));
                }
                return FAIL_TOKEN(lx, ps->cur, "expected an operator or %s, found %s",
                                  end == T_STOP ? "the end of the clause ('.')"
                                                : "the end of the query",
                                  found(ps->cur, buf, sizeof buf));
            }
            if (c->kind == R_PAREN) {
                if (ps->cur->kind != T_CLOSE) {
                    return FAIL_TOKEN(lx, ps->cur, "expected an operator or ')', found %s",
                                      found(ps->cur, buf, sizeof buf));
                }
                if (!advance(ps)) return false;
                priority = 0;
                ps->nctx--;
                continue;
            }
            if (!push_operand(ps, node)) return false;
            c->count++;
            if (c->kind == R_ARGS) {
                if (ps->cur->kind == T_COMMA) {
                    if (!advance(ps)) return false;
                    break;
                }
                if (ps->cur->kind != T_CLOSE) {
                    return FAIL_TOKEN(lx, ps->cur, "expected ',' or ')' in the arguments of %s, "
                                      "found %s", ps->prog->atom_names[c->name],
                                      found(ps->cur, buf, sizeof buf));
                }
                if (!compound_node(ps, c->name, c->count, c->line, c->col, &node)) return false;
            } else { /* R_LIST, R_LIST_TAIL */
                if (c->kind == R_LIST && ps->cur->kind == T_COMMA) {
                    if (!advance(ps)) return false;
                    break;
                }
                if (c->kind == R_LIST && ps->cur->kind == T_BAR) {
                    c->kind = R_LIST_TAIL;
                    if (!advance(ps)) return false;
                    break;
                }
                if (ps->cur->kind != T_LIST_END) {
                    return FAIL_TOKEN(lx, ps->cur, "expected %s in a list, found %s",
                                      c->kind == R_LIST ? "',', '|' or ']'" : "']'",
                                      found(ps->cur, buf, sizeof buf));
                }
                uint32_t elements = c->count;
                if (c->kind == R_LIST) {
                    uint32_t nil;
                    if (!new_node(ps, N_ATOM, ps->cur->line, ps->cur->col, &nil)) return false;
                    ps->nodes[nil].name = ATOM_NIL;
                    if (!push_operand(ps, nil)) return false;
                } else {
                    elements--;
                }
                /* [E1, ..., En | Tail]: '[|]'(E1, '[|]'(..., '[|]'(En, Tail))). */
                uint32_t list_name = ps->prog->functors[F_LIST].name;
                for (uint32_t i = 0; i < elements; i++) {
                    if (!compound_node(ps, list_name, 2, c->line, c->col, &node) ||
                        (i + 1 < elements && !push_operand(ps, node))) {
                        return false;
                    }
                }
            }
            if (!advance(ps)) return false;
            priority = 0;
            ps->nctx--;
        }
    }
}

/* ---- from the parse tree to terms and clauses ---- */

static const pnode *kid(const parser *ps, const pnode *n, uint32_t i) {
    return &ps->nodes[ps->kids[n->kids + i]];
}
static uint32_t kid_index(const parser *ps, const pnode *n, uint32_t i) {
    return ps->kids[n->kids + i];
}
static bool is_named(const parser *ps, const pnode *n, uint32_t functor) {
    const functor_def *f = &ps->prog->functors[functor];
    return (n->kind == N_COMPOUND || n->kind == N_ATOM) && n->name == f->name &&
           (n->kind == N_COMPOUND ? n->arity : 0) == f->arity;
}
static const char *name_of(const parser *ps, const pnode *n) {
    return ps->prog->atom_names[n->name];
}
static bool fail_node(parser *ps, const pnode *n, const char *format, ...)
    __attribute__((format(printf, 3, 4)));
static bool fail_node(parser *ps, const pnode *n, const char *format, ...) {
    char message[400];
    va_list ap;
    va_start(ap, format);
    vsnprintf(message, sizeof message, format, ap);
    va_end(ap);
    return fail_at(&ps->lx, n->line, n->col, "%s", message);
}

/* The term of node `root`'s subtree, its variables REF(var_slot[v]).  The
 * subtree is the nodes start .. root, children before parents: one pass. */
static bool convert(parser *ps, uint32_t root, term *out) {
    uint32_t first = ps->nodes[root].start;
    if (!GROW(ps, ps->terms, ps->cap_terms, ps->nnodes)) {
        return fail_node(ps, &ps->nodes[root], "out of memory");
    }
    for (uint32_t i = first; i <= root; i++) {
        const pnode *n = &ps->nodes[i];
        switch (n->kind) {
        case N_ATOM: ps->terms[i] = make_atom(n->name); break;
        case N_INT: ps->terms[i] = make_int(n->value); break;
        case N_VAR: ps->terms[i] = make_ref(ps->var_slot[n->var]); break;
        case N_COMPOUND: {
            uint32_t f;
            compound *c = program_alloc(ps->prog, sizeof *c + n->arity * sizeof(term));
            if (c == NULL || !program_functor(ps->prog, n->name, n->arity, &f)) {
                return fail_node(ps, n, "out of memory");
            }
            c->functor = f;
            c->arity = (uint16_t)n->arity;
            c->flags = C_KEEP | C_GROUND;
            for (uint32_t a = 0; a < n->arity; a++) {
                c->args[a] = ps->terms[kid_index(ps, n, a)];
                if (!is_ground(c->args[a])) c->flags &= (uint16_t)~C_GROUND;
            }
            ps->terms[i] = compound_term(c);
            break;
        }
        }
    }
    *out = ps->terms[root];
    return true;
}

/* Built-in predicates: their names cannot be defined, and in a body they
 * are literals of their own kind. */
static const struct {
    uint32_t functor;
    literal_kind kind;
} BUILTINS[] = {
    {F_UNIFY, L_UNIFY}, {F_NOT_UNIFY, L_NOT_UNIFY}, {F_IDENTICAL, L_IDENTICAL},
    {F_NOT_IDENTICAL, L_NOT_IDENTICAL}, {F_IS, L_IS}, {F_LT, L_LT}, {F_GT, L_GT},
    {F_LE, L_LE}, {F_GE, L_GE}, {F_ARITH_EQ, L_ARITH_EQ}, {F_ARITH_NE, L_ARITH_NE},
};

static bool is_control(const parser *ps, const pnode *n) {
    static const uint32_t CONTROL[] = {F_COMMA, F_SEMICOLON, F_BAR, F_ARROW, F_SOFT_ARROW, F_NOT};
    for (size_t i = 0; i < sizeof CONTROL / sizeof CONTROL[0]; i++) {
        if (is_named(ps, n, CONTROL[i])) return true;
    }
    if (n->kind != N_ATOM) return false;
    return n->name == ATOM_TRUE || n->name == ATOM_FAIL || n->name == ATOM_FALSE ||
           n->name == ATOM_CUT;
}

static int builtin_of(const parser *ps, const pnode *n) {
    for (size_t i = 0; i < sizeof BUILTINS / sizeof BUILTINS[0]; i++) {
        if (is_named(ps, n, BUILTINS[i].functor)) return (int)i;
    }
    return -1;
}

static literal *new_literal(parser *ps, literal_kind kind, pred *p, uint32_t nargs,
                            const pnode *at) {
    literal *l = program_alloc(ps->prog, sizeof *l + nargs * sizeof(term));
    if (l == NULL) {
        fail_node(ps, at, "out of memory");
        return NULL;
    }
    l->kind = kind;
    l->p = p;
    l->line = at->line;
    l->column = at->col;
    return l;
}

/* A \+ goal waiting to become the clause of its hidden predicate: its node
 * and the clause variables it has, in the order of the predicate's arguments. */
typedef struct negated {
    uint32_t goal;
    pred *p;
    uint32_t *vars;
    uint32_t nvars;
} negated;

typedef struct pending_negations {
    negated *items;
    uint32_t n, cap;
} pending_negations;

/* A literal calling a hidden predicate made for `\+ G`, whose arguments are
 * G's variables; G itself waits in `later`. */
static literal *negation(parser *ps, const pnode *at, uint32_t goal, pending_negations *later) {
    uint32_t *vars = malloc(ps->nvars * sizeof *vars + 1);
    bool *seen = calloc(ps->nvars + 1, sizeof *seen);
    if (vars == NULL || seen == NULL) {
        free(vars);
        free(seen);
        fail_node(ps, at, "out of memory");
        return NULL;
    }
    uint32_t n = 0;
    for (uint32_t i = ps->nodes[goal].start; i <= goal; i++) {
        const pnode *v = &ps->nodes[i];
        if (v->kind == N_VAR && !seen[v->var]) {
            seen[v->var] = true;
            vars[n++] = v->var;
        }
    }
    free(seen);
    pred *p;
    literal *l = NULL;
    if (n > MAX_ARITY) {
        fail_node(ps, at, "a \\+ goal with more than %d variables", MAX_ARITY);
    } else if ((p = program_alloc(ps->prog, sizeof *p)) == NULL ||
               !GROW(ps, later->items, later->cap, later->n + 1)) {
        fail_node(ps, at, "out of memory");
    } else {
        /* Hidden: on the list of predicates, not found by its name. */
        p->name = ps->prog->functors[F_NOT].name;
        p->arity = n;
        p->facts_only = false;
        if (ps->prog->last_pred) ps->prog->last_pred->next = p;
        else ps->prog->first_pred = p;
        ps->prog->last_pred = p;
        l = new_literal(ps, L_NOT, p, n, at);
        if (l != NULL) {
            for (uint32_t i = 0; i < n; i++) l->args[i] = make_ref(ps->var_slot[vars[i]]);
            later->items[later->n++] = (negated){goal, p, vars, n};
            return l;
        }
    }
    free(vars);
    return NULL;
}

/* The items of a tree of ',' (a body, the specs of a table directive),
 * left to right: node numbers in a new array (the caller frees it), their
 * number in *n; NULL on no memory. */
static uint32_t *comma_items(parser *ps, uint32_t node, uint32_t *n) {
    uint32_t *items = NULL, *stack = NULL, cap_items = 0, cap_stack = 0, depth = 0;
    bool ok = GROW(ps, stack, cap_stack, 1);
    if (ok) stack[depth++] = node;
    *n = 0;
    while (ok && depth > 0) {
        const pnode *x = &ps->nodes[stack[--depth]];
        if (is_named(ps, x, F_COMMA)) {
            ok = GROW(ps, stack, cap_stack, depth + 2);
            if (ok) {
                stack[depth++] = kid_index(ps, x, 1);
                stack[depth++] = kid_index(ps, x, 0);
            }
        } else if ((ok = GROW(ps, items, cap_items, *n + 1))) {
            items[(*n)++] = (uint32_t)(x - ps->nodes);
        }
    }
    free(stack);
    if (!ok) {
        free(items);
        fail_node(ps, &ps->nodes[node], "out of memory");
        return NULL;
    }
    return items;
}

/* The literals of a body (a tree of ','), left to right, into body[]. */
static bool compile_body(parser *ps, uint32_t body_node, literal **body, uint32_t *nbody,
                         pending_negations *later) {
    uint32_t ngoals;
    uint32_t *goals = comma_items(ps, body_node, &ngoals);
    bool ok = goals != NULL;
    for (uint32_t k = 0; ok && k < ngoals; k++) {
        const pnode *g = &ps->nodes[goals[k]];
        literal *l = NULL;
        if (g->kind == N_VAR) {
            const char *v = ps->var_names[g->var];
            ok = fail_node(ps, g, "a variable (%s) cannot be a goal (call/1 is not supported)",
                           v ? v : "_");
            break;
        }
        if (g->kind == N_INT) {
            ok = fail_node(ps, g, "a number (%lld) cannot be a goal", (long long)g->value);
            break;
        }
        if (g->kind == N_ATOM && g->name == ATOM_TRUE) continue;
        if (g->kind == N_ATOM && (g->name == ATOM_FAIL || g->name == ATOM_FALSE)) {
            l = new_literal(ps, L_FAIL, NULL, 0, g);
        } else if (g->kind == N_ATOM && g->name == ATOM_CUT) {
            ok = fail_node(ps, g, "cut (!) is not supported");
            break;
        } else if (is_named(ps, g, F_SEMICOLON) || is_named(ps, g, F_BAR)) {
            ok = fail_node(ps, g, "disjunction (%s) is not supported (write one clause per "
                           "alternative)", name_of(ps, g));
            break;
        } else if (is_named(ps, g, F_ARROW) || is_named(ps, g, F_SOFT_ARROW)) {
            ok = fail_node(ps, g, "if-then-else (%s) is not supported", name_of(ps, g));
            break;
        } else if (is_named(ps, g, F_NOT)) {
            l = negation(ps, g, kid_index(ps, g, 0), later);
        } else {
            int b = builtin_of(ps, g);
            pred *p = NULL;
            uint32_t arity = g->kind == N_COMPOUND ? g->arity : 0;
            if (b < 0 && (p = program_pred(ps->prog, g->name, arity, true)) == NULL) {
                ok = fail_node(ps, g, "out of memory");
                break;
            }
            l = new_literal(ps, b < 0 ? L_RULES : BUILTINS[b].kind, p, arity, g);
            for (uint32_t a = 0; l != NULL && a < arity; a++) {
                if (!convert(ps, kid_index(ps, g, a), &l->args[a])) l = NULL;
            }
        }
        if (l == NULL) {
            ok = false;
            break;
        }
        if (*nbody == MAX_BODY) {
            ok = fail_node(ps, g, "more than %d goals in one clause body", MAX_BODY);
            break;
        }
        body[(*nbody)++] = l;
    }
    free(goals);
    return ok;
}

static bool add_clause(parser *ps, pred *p, clause *c, const pnode *at) {
    if (p->nclauses == p->cap_clauses) {
        uint32_t cap = p->cap_clauses ? p->cap_clauses * 2 : 4;
        clause **clauses = realloc(p->clauses, cap * sizeof *clauses);
        if (clauses == NULL) return fail_node(ps, at, "out of memory");
        p->clauses = clauses;
        p->cap_clauses = cap;
    }
    p->clauses[p->nclauses++] = c;
    return true;
}

/* A clause of p: head arguments (nodes, or the hidden predicate's variables)
 * and a body. */
static bool make_clause(parser *ps, pred *p, const pnode *head, const uint32_t *hidden_vars,
                        uint32_t body_node, bool has_body, uint32_t nslots,
                        pending_negations *later) {
    literal **body = malloc(MAX_BODY * sizeof *body);
    uint32_t nbody = 0;
    clause *c = program_alloc(ps->prog, sizeof *c);
    term *args = program_alloc(ps->prog, (p->arity ? p->arity : 1) * sizeof(term));
    bool ok = body != NULL && c != NULL && args != NULL;
    if (!ok) fail_node(ps, head, "out of memory");
    for (uint32_t a = 0; ok && a < p->arity; a++) {
        if (hidden_vars) args[a] = make_ref(ps->var_slot[hidden_vars[a]]);
        else ok = convert(ps, kid_index(ps, head, a), &args[a]);
    }
    ok = ok && (!has_body || compile_body(ps, body_node, body, &nbody, later));
    if (ok) {
        c->p = p;
        c->nvars = nslots;
        c->nbody = nbody;
        c->head = args;
        c->body = program_alloc(ps->prog, (nbody ? nbody : 1) * sizeof(literal *));
        ok = c->body != NULL ? true : fail_node(ps, head, "out of memory");
    }
    if (ok) {
        memcpy(c->body, body, nbody * sizeof *body);
        if (nbody > 0) p->facts_only = false;
        for (uint32_t a = 0; a < p->arity; a++) {
            if (!is_const(args[a])) p->facts_only = false;
        }
        ok = add_clause(ps, p, c, head);
    }
    free(body);
    return ok;
}

/* The hidden clauses of \+ goals, each with its own slots: G's variables
 * are the predicate's arguments; a \+ inside G adds another. */
static bool compile_negations(parser *ps, pending_negations *later) {
    bool ok = true;
    for (uint32_t i = 0; i < later->n; i++) {
        negated *ng = &later->items[i];
        if (ok) {
            for (uint32_t v = 0; v < ng->nvars; v++) ps->var_slot[ng->vars[v]] = v;
            ok = make_clause(ps, ng->p, &ps->nodes[ng->goal], ng->vars, ng->goal, true, ng->nvars,
                             later);
            ng = &later->items[i]; /* later may have grown */
        }
        free(ng->vars);
    }
    later->n = 0;
    return ok;
}

/* ":- table Name/Arity, ... ." (the directive's argument). */
static bool table_directive(parser *ps, uint32_t spec_node) {
    char buf[160];
    uint32_t nspecs;
    uint32_t *specs = comma_items(ps, spec_node, &nspecs);
    bool ok = specs != NULL;
    for (uint32_t k = 0; ok && k < nspecs; k++) {
        const pnode *s = &ps->nodes[specs[k]];
        if (is_named(ps, s, F_AS)) {
            ok = fail_node(ps, s, "table modes ('as ...') are not supported");
            break;
        }
        if (s->kind != N_COMPOUND || !is_named(ps, s, F_DIV)) {
            if (s->kind == N_COMPOUND) {
                ok = fail_node(ps, s, "answer subsumption (mode-directed tabling, %s(...)) is "
                               "not supported", name_of(ps, s));
            } else {
                snprintf(buf, sizeof buf, s->kind == N_ATOM ? "'%s'" : "a variable or number",
                         s->kind == N_ATOM ? name_of(ps, s) : "");
                ok = fail_node(ps, s, "expected Name/Arity in a table directive, found %s", buf);
            }
            break;
        }
        const pnode *name = kid(ps, s, 0), *arity = kid(ps, s, 1);
        if (name->kind != N_ATOM) {
            ok = fail_node(ps, name, "expected a predicate name before '/' in a table directive");
            break;
        }
        if (arity->kind != N_INT || arity->value < 0 || arity->value > MAX_ARITY) {
            if (arity->kind == N_ATOM) snprintf(buf, sizeof buf, "'%s'", name_of(ps, arity));
            else if (arity->kind == N_INT) snprintf(buf, sizeof buf, "%lld", (long long)arity->value);
            else snprintf(buf, sizeof buf, "a term");
            ok = fail_node(ps, arity, "expected an arity from 0 to %d, found %s", MAX_ARITY, buf);
            break;
        }
        pred *p = program_pred(ps->prog, name->name, (uint32_t)arity->value, true);
        if (p == NULL) {
            ok = fail_node(ps, s, "out of memory");
            break;
        }
        p->tabled = true;
    }
    free(specs);
    return ok;
}

static void forget_clause(parser *ps) {
    for (uint32_t i = 0; i < ps->nvars; i++) free(ps->var_names[i]);
    ps->nvars = 0;
    ps->nnodes = 0;
    ps->nkids = 0;
}

static bool identity_slots(parser *ps) {
    if (!GROW(ps, ps->var_slot, ps->cap_var_slot, ps->nvars + 1)) {
        return fail_at(&ps->lx, ps->cur->line, ps->cur->col, "out of memory");
    }
    for (uint32_t v = 0; v < ps->nvars; v++) ps->var_slot[v] = v;
    return true;
}

/* One clause or directive: the current token is its first. */
static bool read_clause(parser *ps) {
    forget_clause(ps);
    uint32_t root;
    if (!read_term(ps, T_STOP, &root) || !identity_slots(ps)) return false;
    const pnode *r = &ps->nodes[root];
    if (is_named(ps, r, F_DIRECTIVE)) {
        const pnode *d = kid(ps, r, 0);
        if (is_named(ps, d, F_TABLE)) return table_directive(ps, kid_index(ps, d, 0));
        if (d->kind == N_ATOM || d->kind == N_COMPOUND) {
            return fail_node(ps, d, "directive '%s' is not supported (only ':- table "
                             "Name/Arity, ...')", name_of(ps, d));
        }
        return fail_node(ps, d, "expected a directive (':- table Name/Arity.')");
    }
    if (is_named(ps, r, F_QUERY_DIRECTIVE)) {
        return fail_node(ps, r, "directive '?-' is not supported (only ':- table Name/Arity, "
                         "...')");
    }
    if (is_named(ps, r, F_DCG)) return fail_node(ps, r, "DCG rules (-->) are not supported");
    bool has_body = is_named(ps, r, F_NECK);
    const pnode *head = has_body ? kid(ps, r, 0) : r;
    if (head->kind == N_VAR) {
        const char *v = ps->var_names[head->var];
        return fail_node(ps, head, "a variable (%s) cannot be a clause head", v ? v : "_");
    }
    if (head->kind == N_INT) {
        return fail_node(ps, head, "a number (%lld) cannot be a clause head",
                         (long long)head->value);
    }
    if (is_control(ps, head) || builtin_of(ps, head) >= 0) {
        return fail_node(ps, head, "'%s'/%u is built in and cannot be redefined",
                         name_of(ps, head), head->kind == N_COMPOUND ? head->arity : 0);
    }
    uint32_t arity = head->kind == N_COMPOUND ? head->arity : 0;
    pred *p = program_pred(ps->prog, head->name, arity, true);
    if (p == NULL) return fail_node(ps, head, "out of memory");
    pending_negations later = {0};
    bool ok = make_clause(ps, p, head, NULL, has_body ? kid_index(ps, r, 1) : 0, has_body,
                          ps->nvars, &later) &&
              compile_negations(ps, &later);
    for (uint32_t i = 0; i < later.n; i++) free(later.items[i].vars);
    free(later.items);
    return ok;
}

/* Built-ins of SWI-Prolog a program may expect, named in the message for a
 * call without clauses. */
static bool swi_builtin(const char *name, uint32_t arity) {
    static const char *const NAMES[] = {
        "call", "findall", "bagof", "setof", "forall", "aggregate_all", "between", "length",
        "append", "member", "memberchk", "nth0", "nth1", "reverse", "msort", "sort", "succ",
        "plus", "write", "writeln", "print", "nl", "format", "atom", "number", "integer",
        "var", "nonvar", "compound", "atomic", "callable", "is_list", "ground", "functor",
        "arg", "=..", "copy_term", "assert", "asserta", "assertz", "retract", "once",
        "ignore", "not", "tab", "halt", "atom_codes", "atom_chars", "atom_length",
        "number_codes", "char_code", "sub_atom", "atom_concat", "abs", "max_list",
        "min_list", "sum_list", "last", "numlist", "@<", "@>", "@=<", "@>=", "compare"};
    for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++) {
        if (strcmp(NAMES[i], name) == 0) return true;
    }
    (void)arity;
    return false;
}

/* Every called predicate must have clauses or a table directive; a \+ goal
 * may not reach a tabled predicate. */
static bool check_calls(parser *ps) {
    for (pred *p = ps->prog->first_pred; p != NULL; p = p->next) {
        for (uint32_t c = 0; c < p->nclauses; c++) {
            for (uint32_t b = 0; b < p->clauses[c]->nbody; b++) {
                const literal *l = p->clauses[c]->body[b];
                if (l->p == NULL) continue;
                const char *name = ps->prog->atom_names[l->p->name];
                if (l->kind == L_NOT && l->p->reaches != NULL) {
                    return fail_at(&ps->lx, l->line, l->column,
                                   "negation (\\+) of a goal that calls a tabled predicate "
                                   "(%s/%u) is not supported",
                                   ps->prog->atom_names[l->p->reaches->name],
                                   l->p->reaches->arity);
                }
                if (l->p->nclauses == 0 && !l->p->tabled) {
                    return fail_at(&ps->lx, l->line, l->column,
                                   "%s/%u is called but has no clauses (unknown procedure%s)",
                                   name, l->p->arity,
                                   swi_builtin(name, l->p->arity)
                                       ? "; hhtab's built-ins are true, fail, false, =, \\=, ==, "
                                         "\\==, is, <, >, =<, >=, =:=, =\\= and \\+"
                                       : "");
                }
            }
        }
    }
    return true;
}

static void parser_init(parser *ps, const char *name, const char *text, size_t len,
                        char *error, size_t error_size) {
    memset(ps, 0, sizeof *ps);
    ps->lx.name = name;
    ps->lx.at = ps->lx.line_start = text;
    ps->lx.end = text + len;
    ps->lx.line = 1;
    ps->lx.error = error;
    ps->lx.error_size = error_size;
    ps->cur = &ps->tk[0];
    ps->next = &ps->tk[1];
}

static bool parser_start(parser *ps) {
    return next_token(&ps->lx, ps->cur) && next_token(&ps->lx, ps->next);
}

static void parser_free(parser *ps) {
    forget_clause(ps);
    free(ps->var_names);
    free(ps->nodes);
    free(ps->kids);
    free(ps->ctx);
    free(ps->operands);
    free(ps->terms);
    free(ps->var_slot);
    free(ps->tk[0].text);
    free(ps->tk[1].text);
}

program *program_parse(const char *name, const char *text, size_t len, char *error,
                       size_t error_size) {
    parser ps;
    parser_init(&ps, name, text, len, error, error_size);
    ps.prog = program_new(name);
    bool ok = ps.prog != NULL && parser_start(&ps);
    if (ps.prog == NULL) snprintf(error, error_size, "%s: out of memory", name);
    while (ok && ps.cur->kind != T_END) ok = read_clause(&ps);
    if (ok && !program_finish(ps.prog)) {
        snprintf(error, error_size, "%s: out of memory", name);
        ok = false;
    }
    ok = ok && check_calls(&ps);
    parser_free(&ps);
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
    parser ps;
    parser_init(&ps, "--query", text, strlen(text), error, error_size);
    ps.prog = prog;
    uint32_t root = 0;
    bool ok = parser_start(&ps) && read_term(&ps, T_END, &root) && identity_slots(&ps);
    const pnode *g = ok ? &ps.nodes[root] : NULL;
    pred *p = NULL;
    if (ok && is_named(&ps, g, F_COMMA)) {
        ok = fail_node(&ps, g, "expected the end of the query (one goal), found ','");
    } else if (ok && g->kind == N_VAR) {
        const char *v = ps.var_names[g->var];
        ok = fail_node(&ps, g, "a variable (%s) cannot be the query", v ? v : "_");
    } else if (ok && g->kind == N_INT) {
        ok = fail_node(&ps, g, "a number (%lld) cannot be the query", (long long)g->value);
    } else if (ok) {
        uint32_t arity = g->kind == N_COMPOUND ? g->arity : 0;
        p = program_pred(prog, g->name, arity, false);
        if (is_control(&ps, g) || builtin_of(&ps, g) >= 0) {
            ok = fail_node(&ps, g, "the query must call a predicate of the program, not the "
                           "built-in '%s'/%u", name_of(&ps, g), arity);
        } else if (p == NULL || (p->nclauses == 0 && !p->tabled)) {
            ok = fail_node(&ps, g, "%s/%u is not defined in the program (unknown procedure)",
                           name_of(&ps, g), arity);
        }
    }
    if (ok) {
        uint32_t arity = p->arity;
        q->goal = new_literal(&ps, program_call_kind(p), p, arity, g);
        for (uint32_t a = 0; q->goal != NULL && a < arity; a++) {
            if (!convert(&ps, kid_index(&ps, g, a), &q->goal->args[a])) q->goal = NULL;
        }
        q->nvars = ps.nvars;
        ok = q->goal != NULL;
    }
    parser_free(&ps);
    return ok;
}
