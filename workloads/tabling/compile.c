/* The compiler of hhtab's reader: from a clause's parse tree (parser.c) to
 * the program's clauses, with the checks that refuse what hhtab does not
 * evaluate; and the reading entry points of program.h (program_parse,
 * program_read, query_parse).
 *
 * The head's and each goal's arguments become terms, built-ins literals of
 * their own kind, and `\+ G` a call of a hidden predicate (not found by its
 * name) whose only clause has G as its body and G's variables as
 * arguments. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "parser.h"
#include "program.h"

#define MAX_BODY 1024

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


program *program_parse(const char *name, const char *text, size_t len, char *error,
                       size_t error_size) {
    parser ps;
    parser_init(&ps, program_new(name), name, text, len, error, error_size);
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
    parser_init(&ps, prog, "--query", text, strlen(text), error, error_size);
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
