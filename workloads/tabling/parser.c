/* The parser of hhtab's reader (see parser.h): operators, the parse tree's
 * nodes, and read_term with its explicit stacks of contexts and operands. */
#include "parser.h"

#include <string.h>

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

/* ---- reading a term ---- */

/* What a step of the reader leaves it doing. */
typedef enum {
    STEP_FAILED,   /* an error, in the lexer's message */
    STEP_GO_ON,    /* nothing decided yet: the caller goes on */
    STEP_WANT,     /* wanting an operand */
    STEP_DONE,     /* the term is read */
} read_step;

/* A name where an operand is wanted: a compound's functor, a negative
 * number, a prefix operator or an atom. */
static bool read_name(parser *ps, uint32_t maxp, uint32_t *node, bool *have) {
    token *tk = ps->cur;
    uint32_t line = tk->line, col = tk->col; /* tk is the lookahead's after advance() */
    uint32_t name;
    if (!atom_of(ps, tk, &name)) return false;
    const op_def *pre = prefix_op(tk);
    if (ps->next->kind == T_OPEN) {
        return advance(ps) && push_ctx(ps, (rctx){R_ARGS, 999, name, 0, line, col, 0});
    }
    if (!tk->quoted && strcmp(tk->text, "-") == 0 && ps->next->kind == T_INT &&
        !ps->next->after_layout) {
        if (!advance(ps) || !new_node(ps, N_INT, line, col, node)) return false;
        ps->nodes[*node].value = -ps->cur->value;
        *have = true;
        return true;
    }
    const op_def *in_next = infix_op(ps->next);
    bool operand_next = !ends_operand(ps->next) && (in_next == NULL ||
                                                    prefix_op(ps->next) != NULL);
    if (pre != NULL && pre->priority <= maxp && operand_next) {
        uint32_t argp = pre->type == OP_FY ? pre->priority : pre->priority - 1u;
        return push_ctx(ps, (rctx){R_PREFIX, argp, name, pre->priority, line, col, 0});
    }
    if (!new_node(ps, N_ATOM, line, col, node)) return false;
    ps->nodes[*node].name = name;
    *have = true;
    return true;
}

/* Wanting an operand: a primary term (*have, its node in *node), or the
 * start of a bigger one (a context pushed).  Consumes its tokens. */
static bool read_operand(parser *ps, uint32_t *node, bool *have) {
    char buf[160];
    token *tk = ps->cur;
    uint32_t maxp = ps->ctx[ps->nctx - 1].maxp;
    *have = false;
    switch (tk->kind) {
    case T_INT:
        if (tk->value >= INT_LIMIT) {
            return FAIL_TOKEN(&ps->lx, tk, "integer %lld is out of range (at most 61 bits and a "
                              "sign)", (long long)tk->value);
        }
        if (!new_node(ps, N_INT, tk->line, tk->col, node)) return false;
        ps->nodes[*node].value = tk->value;
        *have = true;
        break;
    case T_VAR:
        if (!var_node(ps, node)) return false;
        *have = true;
        break;
    case T_OPEN:
    case T_PAREN:
        if (!push_ctx(ps, (rctx){R_PAREN, 1200, 0, 0, tk->line, tk->col, 0})) return false;
        break;
    case T_LIST:
        if (ps->next->kind == T_LIST_END) {
            if (!new_node(ps, N_ATOM, tk->line, tk->col, node)) return false;
            ps->nodes[*node].name = ATOM_NIL;
            if (!advance(ps)) return false;
            *have = true;
        } else if (!push_ctx(ps, (rctx){R_LIST, 999, 0, 0, tk->line, tk->col, 0})) {
            return false;
        }
        break;
    case T_CURLY:
        return FAIL_TOKEN(&ps->lx, tk, "curly terms ({...}) are not supported");
    case T_NAME:
        if (!read_name(ps, maxp, node, have)) return false;
        break;
    default:
        return FAIL_TOKEN(&ps->lx, tk, "expected a term, found %s", found(tk, buf, sizeof buf));
    }
    return advance(ps);
}

/* An infix operator after an operand of priority `priority` in context c:
 * STEP_WANT (its right operand) if it may take the operand, else
 * STEP_GO_ON. */
static read_step read_infix(parser *ps, const rctx *c, const op_def *op, uint32_t node,
                            uint32_t priority) {
    if (op == NULL || (ps->cur->kind == T_BAR && c->kind == R_LIST) ||
        (ps->cur->kind == T_COMMA && (c->kind == R_ARGS || c->kind == R_LIST))) {
        return STEP_GO_ON;
    }
    uint32_t leftp = op->type == OP_YFX ? op->priority : op->priority - 1u;
    uint32_t rightp = op->type == OP_XFY ? op->priority : op->priority - 1u;
    if (op->priority > c->maxp || priority > leftp) return STEP_GO_ON;
    uint32_t name;
    if (!program_atom(ps->prog, op->name, strlen(op->name), &name)) {
        FAIL_TOKEN(&ps->lx, ps->cur, "out of memory");
        return STEP_FAILED;
    }
    if (!push_operand(ps, node) ||
        !push_ctx(ps, (rctx){R_INFIX, rightp, name, op->priority, ps->cur->line, ps->cur->col,
                             0}) ||
        !advance(ps)) {
        return STEP_FAILED;
    }
    return STEP_WANT;
}

/* The whole term's operand is complete: the term ends here, or the next
 * token is a mistake. */
static read_step end_term(parser *ps, token_kind end, uint32_t node, bool clash,
                          uint32_t *root) {
    char buf[160];
    if (ps->cur->kind == end) {
        *root = node;
        return end == T_END || advance(ps) ? STEP_DONE : STEP_FAILED;
    }
    /* A query may end with '.'. */
    if (end == T_END && ps->cur->kind == T_STOP && ps->next->kind == T_END) {
        *root = node;
        return STEP_DONE;
    }
    if (clash) {
        FAIL_TOKEN(&ps->lx, ps->cur, "operator priority clash at %s",
                   found(ps->cur, buf, sizeof buf));
        return STEP_FAILED;
    }
    FAIL_TOKEN(&ps->lx, ps->cur, "expected an operator or %s, found %s",
               end == T_STOP ? "the end of the clause ('.')" : "the end of the query",
               found(ps->cur, buf, sizeof buf));
    return STEP_FAILED;
}

/* After an argument (pushed, counted in c): STEP_WANT after ',', else the
 * compound is complete (*node) at ')' (STEP_GO_ON). */
static read_step end_argument(parser *ps, rctx *c, uint32_t *node) {
    char buf[160];
    if (ps->cur->kind == T_COMMA) return advance(ps) ? STEP_WANT : STEP_FAILED;
    if (ps->cur->kind != T_CLOSE) {
        FAIL_TOKEN(&ps->lx, ps->cur, "expected ',' or ')' in the arguments of %s, found %s",
                   ps->prog->atom_names[c->name], found(ps->cur, buf, sizeof buf));
        return STEP_FAILED;
    }
    return compound_node(ps, c->name, c->count, c->line, c->col, node) ? STEP_GO_ON
                                                                        : STEP_FAILED;
}

/* After an element or the tail of a list (pushed, counted in c):
 * STEP_WANT after ',' or '|', else the list is complete (*node) at ']'
 * (STEP_GO_ON). */
static read_step end_element(parser *ps, rctx *c, uint32_t *node) {
    char buf[160];
    if (c->kind == R_LIST && ps->cur->kind == T_COMMA) return advance(ps) ? STEP_WANT : STEP_FAILED;
    if (c->kind == R_LIST && ps->cur->kind == T_BAR) {
        c->kind = R_LIST_TAIL;
        return advance(ps) ? STEP_WANT : STEP_FAILED;
    }
    if (ps->cur->kind != T_LIST_END) {
        FAIL_TOKEN(&ps->lx, ps->cur, "expected %s in a list, found %s",
                   c->kind == R_LIST ? "',', '|' or ']'" : "']'", found(ps->cur, buf, sizeof buf));
        return STEP_FAILED;
    }
    uint32_t elements = c->count;
    if (c->kind == R_LIST) {
        uint32_t nil;
        if (!new_node(ps, N_ATOM, ps->cur->line, ps->cur->col, &nil)) return STEP_FAILED;
        ps->nodes[nil].name = ATOM_NIL;
        if (!push_operand(ps, nil)) return STEP_FAILED;
    } else {
        elements--;
    }
    /* [E1, ..., En | Tail]: '[|]'(E1, '[|]'(..., '[|]'(En, Tail))). */
    uint32_t list_name = ps->prog->functors[F_LIST].name;
    for (uint32_t i = 0; i < elements; i++) {
        if (!compound_node(ps, list_name, 2, c->line, c->col, node) ||
            (i + 1 < elements && !push_operand(ps, *node))) {
            return STEP_FAILED;
        }
    }
    return STEP_GO_ON;
}

/* Having an operand: extends it with infix operators, or finishes what it
 * is the last operand of, until an operand is wanted again (STEP_WANT) or
 * the term is read (STEP_DONE). */
static read_step reduce(parser *ps, token_kind end, uint32_t node, uint32_t *root) {
    char buf[160];
    uint32_t priority = 0;
    for (;;) {
        rctx *c = &ps->ctx[ps->nctx - 1];
        const op_def *op = infix_op(ps->cur);
        read_step step = read_infix(ps, c, op, node, priority);
        if (step != STEP_GO_ON) return step;
        if (c->kind == R_INFIX || c->kind == R_PREFIX) {
            if (!push_operand(ps, node) ||
                !compound_node(ps, c->name, c->kind == R_INFIX ? 2 : 1, c->line, c->col,
                               &node)) {
                return STEP_FAILED;
            }
            priority = c->priority;
            ps->nctx--;
            continue;
        }
        if (c->kind == R_TOP) return end_term(ps, end, node, op != NULL, root);
        if (c->kind == R_PAREN) {
            if (ps->cur->kind != T_CLOSE) {
                FAIL_TOKEN(&ps->lx, ps->cur, "expected an operator or ')', found %s",
                           found(ps->cur, buf, sizeof buf));
                return STEP_FAILED;
            }
            if (!advance(ps)) return STEP_FAILED;
            priority = 0;
            ps->nctx--;
            continue;
        }
        if (!push_operand(ps, node)) return STEP_FAILED;
        c->count++;
        step = c->kind == R_ARGS ? end_argument(ps, c, &node) : end_element(ps, c, &node);
        if (step != STEP_GO_ON) return step;
        if (!advance(ps)) return STEP_FAILED;
        priority = 0;
        ps->nctx--;
    }
}

/* (parser.h) Alternates between wanting an operand and reducing one. */
bool read_term(parser *ps, token_kind end, uint32_t *root) {
    ps->nctx = 0;
    ps->noperands = 0;
    if (!push_ctx(ps, (rctx){R_TOP, 1200, 0, 0, ps->cur->line, ps->cur->col, 0})) return false;
    for (;;) {
        uint32_t node = 0;
        bool have;
        if (!read_operand(ps, &node, &have)) return false;
        if (!have) continue;
        read_step step = reduce(ps, end, node, root);
        if (step == STEP_FAILED) return false;
        if (step == STEP_DONE) return true;
    }
}

void parser_init(parser *ps, program *prog, const char *name, const char *text, size_t len,
                 char *error, size_t error_size) {
    memset(ps, 0, sizeof *ps);
    lexer_init(&ps->lx, name, text, len, error, error_size);
    ps->prog = prog;
    ps->cur = &ps->tk[0];
    ps->next = &ps->tk[1];
}

bool parser_start(parser *ps) {
    return next_token(&ps->lx, ps->cur) && next_token(&ps->lx, ps->next);
}

void forget_clause(parser *ps) {
    for (uint32_t i = 0; i < ps->nvars; i++) free(ps->var_names[i]);
    ps->nvars = 0;
    ps->nnodes = 0;
    ps->nkids = 0;
}

void parser_free(parser *ps) {
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
