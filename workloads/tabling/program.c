/* The program's storage: atoms, functors, predicates, the argument indexes
 * built once every clause is read, and writing terms back as Prolog text. */
#include "program.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hugeheap.h"

/* The program's memory is one hh_arena, freed with the program: nothing in
 * it is freed alone.  Zeroed here, since callers rely on it and an arena
 * promises nothing about fresh memory. */
void *program_alloc(program *prog, size_t size) {
    void *p = hh_arena_alloc(prog->memory, size, 16);
    if (p != NULL) memset(p, 0, size);
    return p;
}

static const char *const FIXED_ATOMS[N_FIXED_ATOMS] = {"[]", "true", "fail", "false", "!"};

static const struct {
    const char *name;
    uint32_t arity;
} FIXED_FUNCTORS[N_FIXED_FUNCTORS] = {
    [F_LIST] = {"[|]", 2},      [F_COMMA] = {",", 2},       [F_NECK] = {":-", 2},
    [F_DIRECTIVE] = {":-", 1},  [F_QUERY_DIRECTIVE] = {"?-", 1},
    [F_SEMICOLON] = {";", 2},   [F_BAR] = {"|", 2},         [F_ARROW] = {"->", 2},
    [F_SOFT_ARROW] = {"*->", 2}, [F_NOT] = {"\\+", 1},      [F_DCG] = {"-->", 2},
    [F_AS] = {"as", 2},         [F_TABLE] = {"table", 1},   [F_UNIFY] = {"=", 2},
    [F_NOT_UNIFY] = {"\\=", 2}, [F_IDENTICAL] = {"==", 2},  [F_NOT_IDENTICAL] = {"\\==", 2},
    [F_IS] = {"is", 2},         [F_LT] = {"<", 2},          [F_GT] = {">", 2},
    [F_LE] = {"=<", 2},         [F_GE] = {">=", 2},         [F_ARITH_EQ] = {"=:=", 2},
    [F_ARITH_NE] = {"=\\=", 2}, [F_ADD] = {"+", 2},         [F_SUB] = {"-", 2},
    [F_MUL] = {"*", 2},         [F_INT_DIV] = {"//", 2},    [F_DIV] = {"/", 2},
    [F_FLOOR_DIV] = {"div", 2}, [F_MOD] = {"mod", 2},       [F_REM] = {"rem", 2},
    [F_MIN] = {"min", 2},       [F_MAX] = {"max", 2},       [F_NEG] = {"-", 1},
    [F_PLUS] = {"+", 1},        [F_ABS] = {"abs", 1},       [F_SIGN] = {"sign", 1},
    [F_SHIFT_RIGHT] = {">>", 2}, [F_SHIFT_LEFT] = {"<<", 2}, [F_BIT_AND] = {"/\\", 2},
    [F_BIT_OR] = {"\\/", 2},    [F_XOR] = {"xor", 2},       [F_BIT_NOT] = {"\\", 1},
    [F_POWER] = {"^", 2},       [F_STAR_POWER] = {"**", 2}, [F_GCD] = {"gcd", 2},
    [F_MSB] = {"msb", 1},
};

static bool add_atom_name(program *prog, const char *name, size_t len, uint32_t *id) {
    if (prog->natoms == prog->cap_atoms) {
        uint32_t cap = prog->cap_atoms ? prog->cap_atoms * 2 : 256;
        char **names = realloc(prog->atom_names, cap * sizeof *names);
        if (names == NULL) return false;
        prog->atom_names = names;
        prog->cap_atoms = cap;
    }
    char *copy = malloc(len + 1);
    if (copy == NULL) return false;
    memcpy(copy, name, len);
    copy[len] = '\0';
    *id = prog->natoms;
    prog->atom_names[prog->natoms++] = copy;
    return true;
}

program *program_new(const char *name) {
    program *prog = calloc(1, sizeof *prog);
    if (prog == NULL) return NULL;
    prog->name = name;
    prog->atom_hash_mask = 1023;
    prog->functor_hash_mask = 255;
    prog->pred_hash_mask = 255;
    prog->atom_hash = calloc(prog->atom_hash_mask + 1, sizeof *prog->atom_hash);
    prog->functor_hash = calloc(prog->functor_hash_mask + 1, sizeof *prog->functor_hash);
    prog->pred_hash = calloc(prog->pred_hash_mask + 1, sizeof *prog->pred_hash);
    prog->memory = hh_arena_create();
    bool ok = prog->atom_hash && prog->functor_hash && prog->pred_hash && prog->memory;
    /* [] is not found by its name: the quoted atom '[]' is another atom. */
    uint32_t id;
    ok = ok && add_atom_name(prog, "[]", 2, &id);
    for (uint32_t i = 1; ok && i < N_FIXED_ATOMS; i++) {
        ok = program_atom(prog, FIXED_ATOMS[i], strlen(FIXED_ATOMS[i]), &id) && id == i;
    }
    for (uint32_t i = 0; ok && i < N_FIXED_FUNCTORS; i++) {
        uint32_t name_id;
        const char *name_text = FIXED_FUNCTORS[i].name;
        ok = program_atom(prog, name_text, strlen(name_text), &name_id) &&
             program_functor(prog, name_id, FIXED_FUNCTORS[i].arity, &id) && id == i;
    }
    if (!ok) {
        program_free(prog);
        return NULL;
    }
    return prog;
}

void program_free(program *prog) {
    if (prog == NULL) return;
    for (pred *p = prog->first_pred; p != NULL; p = p->next) free(p->clauses);
    hh_arena_destroy(prog->memory);
    for (uint32_t i = 0; i < prog->natoms; i++) free(prog->atom_names[i]);
    free(prog->atom_names);
    free(prog->atom_hash);
    free(prog->functors);
    free(prog->functor_hash);
    free(prog->pred_hash);
    free(prog);
}

static uint64_t hash_bytes(const char *s, size_t len) {
    uint64_t h = 1469598103934665603u;
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211u;
    return h;
}

/* Doubles an open-addressing table of ids + 1; where(id) is an id's home slot. */
static bool grow_id_hash(uint32_t **table, uint32_t *mask,
                         uint32_t (*where)(const program *, uint32_t, uint32_t),
                         const program *prog) {
    uint32_t bigger_mask = *mask * 2 + 1;
    uint32_t *bigger = calloc((size_t)bigger_mask + 1, sizeof *bigger);
    if (bigger == NULL) return false;
    for (uint32_t i = 0; i < *mask + 1; i++) {
        uint32_t id1 = (*table)[i];
        if (id1 == 0) continue;
        uint32_t s = where(prog, id1 - 1, bigger_mask);
        while (bigger[s] != 0) s = (s + 1) & bigger_mask;
        bigger[s] = id1;
    }
    free(*table);
    *table = bigger;
    *mask = bigger_mask;
    return true;
}

static uint32_t atom_home(const program *prog, uint32_t id, uint32_t mask) {
    const char *name = prog->atom_names[id];
    return (uint32_t)hash_bytes(name, strlen(name)) & mask;
}

bool program_atom(program *prog, const char *name, size_t len, uint32_t *id) {
    uint32_t i = (uint32_t)hash_bytes(name, len) & prog->atom_hash_mask;
    for (; prog->atom_hash[i] != 0; i = (i + 1) & prog->atom_hash_mask) {
        const char *known = prog->atom_names[prog->atom_hash[i] - 1];
        if (strncmp(known, name, len) == 0 && known[len] == '\0') {
            *id = prog->atom_hash[i] - 1;
            return true;
        }
    }
    if (memchr(name, '\0', len) != NULL) return false; /* the reader refuses these first */
    if (!add_atom_name(prog, name, len, id)) return false;
    prog->atom_hash[i] = *id + 1;
    if (prog->natoms * 2 > prog->atom_hash_mask) {
        return grow_id_hash(&prog->atom_hash, &prog->atom_hash_mask, atom_home, prog);
    }
    return true;
}

static uint32_t functor_slot(uint32_t name, uint32_t arity, uint32_t mask) {
    return (uint32_t)(((uint64_t)name * 0x9E3779B97F4A7C15u + arity) >> 20) & mask;
}

static uint32_t functor_home(const program *prog, uint32_t id, uint32_t mask) {
    return functor_slot(prog->functors[id].name, prog->functors[id].arity, mask);
}

bool program_functor(program *prog, uint32_t name, uint32_t arity, uint32_t *id) {
    uint32_t i = functor_slot(name, arity, prog->functor_hash_mask);
    for (; prog->functor_hash[i] != 0; i = (i + 1) & prog->functor_hash_mask) {
        const functor_def *f = &prog->functors[prog->functor_hash[i] - 1];
        if (f->name == name && f->arity == arity) {
            *id = prog->functor_hash[i] - 1;
            return true;
        }
    }
    if (prog->nfunctors == prog->cap_functors) {
        uint32_t cap = prog->cap_functors ? prog->cap_functors * 2 : 128;
        functor_def *bigger = realloc(prog->functors, cap * sizeof *bigger);
        if (bigger == NULL) return false;
        prog->functors = bigger;
        prog->cap_functors = cap;
    }
    *id = prog->nfunctors;
    prog->functors[prog->nfunctors++] = (functor_def){name, arity};
    prog->functor_hash[i] = *id + 1;
    if (prog->nfunctors * 2 > prog->functor_hash_mask) {
        return grow_id_hash(&prog->functor_hash, &prog->functor_hash_mask, functor_home, prog);
    }
    return true;
}

pred *program_pred(program *prog, uint32_t name, uint32_t arity, bool create) {
    uint32_t i = functor_slot(name, arity, prog->pred_hash_mask);
    for (; prog->pred_hash[i] != NULL; i = (i + 1) & prog->pred_hash_mask) {
        pred *p = prog->pred_hash[i];
        if (p->name == name && p->arity == arity) return p;
    }
    if (!create) return NULL;
    if ((prog->npreds + 1) * 2 > prog->pred_hash_mask) {
        uint32_t mask = prog->pred_hash_mask * 2 + 1;
        pred **table = calloc((size_t)mask + 1, sizeof *table);
        if (table == NULL) return NULL;
        for (pred *q = prog->first_pred; q != NULL; q = q->next) {
            uint32_t j = functor_slot(q->name, q->arity, mask);
            while (table[j] != NULL) j = (j + 1) & mask;
            table[j] = q;
        }
        free(prog->pred_hash);
        prog->pred_hash = table;
        prog->pred_hash_mask = mask;
        i = functor_slot(name, arity, mask);
        while (prog->pred_hash[i] != NULL) i = (i + 1) & mask;
    }
    pred *p = program_alloc(prog, sizeof *p);
    if (p == NULL) return NULL;
    p->name = name;
    p->arity = arity;
    p->facts_only = true;
    prog->pred_hash[i] = p;
    prog->npreds++;
    if (prog->last_pred) prog->last_pred->next = p;
    else prog->first_pred = p;
    prog->last_pred = p;
    return p;
}

term index_key(term t) {
    if (is_const(t)) return t;
    if (is_compound(t)) {
        const compound *c = term_compound(t);
        return make_functor_token(c->functor, c->arity);
    }
    return UNBOUND;
}

static uint64_t mix_token(uint64_t h, term token) {
    h = (h ^ token) * 0x100000001B3u;
    return h ^ (h >> 29);
}

/* Mixes a ground term's tokens in preorder into h, at most *budget of them:
 * the bound keeps a long list from costing its length, and the recursion
 * (on all arguments but the last, which loops) from going deep. */
static uint64_t mix_ground(uint64_t h, term t, uint32_t *budget) {
    while (*budget > 0) {
        (*budget)--;
        if (!is_compound(t)) return mix_token(h, t);
        const compound *c = term_compound(t);
        h = mix_token(h, make_functor_token(c->functor, c->arity));
        if (c->arity == 0) return h;
        for (uint32_t a = 0; a + 1u < c->arity; a++) h = mix_ground(h, c->args[a], budget);
        t = c->args[c->arity - 1u];
    }
    return h;
}

term ground_compound_key(term t) {
    uint32_t budget = 32;
    return (mix_ground(0xCBF29CE484222325u, t, &budget) << 4) | 13u;
}

/* Builds the index of `n` items whose key is keys_of[i] (UNBOUND: the item
 * matches every key and goes to `always`), keeping item order per key. */
static bool build_index(program *prog, arg_index *ix, const term *keys_of, size_t stride,
                        uint32_t n) {
    uint32_t mask = 15;
    while (mask + 1 < n * 2u) mask = mask * 2 + 1;
    ix->mask = mask;
    ix->keys = program_alloc(prog, ((size_t)mask + 1) * sizeof *ix->keys);
    ix->start = program_alloc(prog, ((size_t)mask + 1) * sizeof *ix->start);
    ix->count = program_alloc(prog, ((size_t)mask + 1) * sizeof *ix->count);
    ix->numbers = program_alloc(prog, ((size_t)n + 1) * sizeof *ix->numbers);
    ix->always = program_alloc(prog, ((size_t)n + 1) * sizeof *ix->always);
    if (!ix->keys || !ix->start || !ix->count || !ix->numbers || !ix->always) return false;
    for (uint32_t i = 0; i < n; i++) {
        term key = keys_of[(size_t)i * stride];
        if (key == UNBOUND) {
            ix->always[ix->n_always++] = i;
            continue;
        }
        uint32_t s = key_slot(key, mask);
        while (ix->keys[s] != UNBOUND && ix->keys[s] != key) s = (s + 1) & mask;
        ix->keys[s] = key;
        ix->count[s]++;
    }
    uint32_t at = 0;
    for (uint32_t s = 0; s <= mask; s++) {
        ix->start[s] = at;
        at += ix->count[s];
        ix->count[s] = 0;
    }
    for (uint32_t i = 0; i < n; i++) {
        term key = keys_of[(size_t)i * stride];
        if (key == UNBOUND) continue;
        uint32_t s = key_slot(key, mask);
        while (ix->keys[s] != key) s = (s + 1) & mask;
        ix->numbers[ix->start[s] + ix->count[s]++] = i;
    }
    return true;
}

static literal_kind call_kind(const pred *p) {
    return p->tabled ? L_TABLED : p->facts_only ? L_FACTS : L_RULES;
}

/* Which tabled predicate each non-tabled one reaches through its calls (a
 * \+ goal may not): repeated until nothing changes, no recursion. */
static void find_reached_tables(program *prog) {
    for (bool changed = true; changed;) {
        changed = false;
        for (pred *p = prog->first_pred; p != NULL; p = p->next) {
            if (p->tabled || p->reaches != NULL) continue;
            for (uint32_t c = 0; c < p->nclauses && p->reaches == NULL; c++) {
                const clause *cl = p->clauses[c];
                for (uint32_t b = 0; b < cl->nbody && p->reaches == NULL; b++) {
                    const pred *q = cl->body[b]->p;
                    if (q == NULL) continue;
                    p->reaches = q->tabled ? q : q->reaches;
                }
            }
            changed |= p->reaches != NULL;
        }
    }
}

bool program_finish(program *prog) {
    uint32_t ntabled = 0;
    for (pred *p = prog->first_pred; p != NULL; p = p->next) {
        if (p->tabled) p->table_id = ntabled++;
        if (p->nclauses == 0) p->facts_only = !p->tabled;
        if (p->facts_only && p->nclauses > 0) {
            p->nrows = p->nclauses;
            size_t width = p->arity ? p->arity : 1;
            p->rows = program_alloc(prog, (size_t)p->nrows * width * sizeof(term));
            if (p->rows == NULL) return false;
            for (uint32_t r = 0; r < p->nrows; r++) {
                memcpy(p->rows + (size_t)r * p->arity, p->clauses[r]->head,
                       p->arity * sizeof(term));
            }
            if (p->arity > 0) {
                p->row_index = program_alloc(prog, p->arity * sizeof *p->row_index);
                if (p->row_index == NULL) return false;
                for (uint32_t a = 0; a < p->arity; a++) {
                    if (!build_index(prog, &p->row_index[a], p->rows + a, p->arity, p->nrows)) {
                        return false;
                    }
                }
            }
        } else if (p->arity > 0 && p->nclauses > 0) {
            term *first = program_alloc(prog, p->nclauses * sizeof *first);
            if (first == NULL) return false;
            for (uint32_t c = 0; c < p->nclauses; c++) {
                term head = p->clauses[c]->head[0];
                first[c] = index_key(head);
                p->ground_keys |= is_compound(head) && is_ground(head);
            }
            if (p->ground_keys) {
                if (!build_index(prog, &p->functor_index, first, 1, p->nclauses)) return false;
                for (uint32_t c = 0; c < p->nclauses; c++) {
                    term head = p->clauses[c]->head[0];
                    if (is_compound(head) && is_ground(head)) first[c] = ground_compound_key(head);
                }
            }
            if (!build_index(prog, &p->clause_index, first, 1, p->nclauses)) return false;
        }
    }
    for (pred *p = prog->first_pred; p != NULL; p = p->next) {
        for (uint32_t c = 0; c < p->nclauses; c++) {
            for (uint32_t b = 0; b < p->clauses[c]->nbody; b++) {
                literal *l = p->clauses[c]->body[b];
                if (l->kind <= L_RULES) l->kind = call_kind(l->p);
            }
        }
    }
    find_reached_tables(prog);
    prog->ntabled = ntabled;
    prog->tabled = program_alloc(prog, (ntabled + 1) * sizeof *prog->tabled);
    if (prog->tabled == NULL) return false;
    for (pred *p = prog->first_pred; p != NULL; p = p->next) {
        if (p->tabled) prog->tabled[p->table_id] = p;
    }
    return true;
}

literal_kind program_call_kind(const pred *p) { return call_kind(p); }

/* ---- writing terms ---- */

bool text_add(text *t, const char *s, size_t n) {
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (t->len + n + 1 > cap) cap *= 2;
        char *bigger = realloc(t->s, cap);
        if (bigger == NULL) return false;
        t->s = bigger;
        t->cap = cap;
    }
    memcpy(t->s + t->len, s, n);
    t->len += n;
    t->s[t->len] = '\0';
    return true;
}

static bool add_str(text *t, const char *s) { return text_add(t, s, strlen(s)); }

static bool is_symbol_char(char c) { return c && strchr("#$&*+-./:<=>?@^~\\", c) != NULL; }

/* Whether writeq leaves the atom bare: a letter-digit word starting with a
 * lower-case letter, a word of symbol characters (but '.' and comment
 * openers), or a solo atom. */
static bool bare_atom(const char *s) {
    if (s[0] >= 'a' && s[0] <= 'z') {
        for (const char *c = s; *c; c++) {
            if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                  (*c >= '0' && *c <= '9') || *c == '_')) {
                return false;
            }
        }
        return true;
    }
    if (is_symbol_char(s[0])) {
        for (const char *c = s; *c; c++) {
            if (!is_symbol_char(*c)) return false;
        }
        return strcmp(s, ".") != 0 && strncmp(s, "/*", 2) != 0;
    }
    return strcmp(s, "!") == 0 || strcmp(s, ";") == 0 || strcmp(s, "{}") == 0;
}

static bool write_atom(const program *prog, uint32_t id, text *out) {
    if (id == ATOM_NIL) return add_str(out, "[]");
    const char *name = prog->atom_names[id];
    if (bare_atom(name)) return add_str(out, name);
    bool ok = add_str(out, "'");
    for (const char *c = name; *c && ok; c++) {
        if (*c == '\'' || *c == '\\') {
            char esc[2] = {'\\', *c};
            ok = text_add(out, esc, 2);
        } else if (*c == '\n') {
            ok = add_str(out, "\\n");
        } else if (*c == '\t') {
            ok = add_str(out, "\\t");
        } else {
            ok = text_add(out, c, 1);
        }
    }
    return ok && add_str(out, "'");
}

/* What write_term still has to write, last first. */
typedef struct pending {
    enum { W_TERM, W_STR, W_LIST_TAIL } kind;
    term t;
    const char *s;
} pending;

bool write_term(const program *prog, term t, const term *values, text *out) {
    pending *stack = NULL;
    size_t n = 0, cap = 0;
    bool ok = true;
#define PUSH(k, tt, ss)                                                    \
    do {                                                                   \
        if (n == cap) {                                                    \
            cap = cap ? cap * 2 : 64;                                      \
            pending *bigger = realloc(stack, cap * sizeof *stack);         \
            if (bigger == NULL) {                                          \
                ok = false;                                                \
                break;                                                     \
            }                                                              \
            stack = bigger;                                                \
        }                                                                  \
        stack[n++] = (pending){(k), (tt), (ss)};                           \
    } while (0)
    PUSH(W_TERM, t, NULL);
    while (ok && n > 0) {
        pending w = stack[--n];
        if (w.kind == W_STR) {
            ok = add_str(out, w.s);
            continue;
        }
        term x = w.t;
        if (is_ref(x)) x = values ? values[ref_slot(x)] : UNBOUND;
        if (w.kind == W_LIST_TAIL) {
            if (x == make_atom(ATOM_NIL)) {
                ok = add_str(out, "]");
            } else if (is_compound(x) && term_compound(x)->functor == F_LIST) {
                ok = add_str(out, ",");
                PUSH(W_LIST_TAIL, term_compound(x)->args[1], NULL);
                PUSH(W_TERM, term_compound(x)->args[0], NULL);
            } else {
                ok = add_str(out, "|");
                PUSH(W_STR, 0, "]");
                PUSH(W_TERM, x, NULL);
            }
            continue;
        }
        char buf[32];
        if (is_int(x)) {
            snprintf(buf, sizeof buf, "%lld", (long long)int_value(x));
            ok = add_str(out, buf);
        } else if (is_atom(x)) {
            ok = write_atom(prog, atom_id(x), out);
        } else if (is_var(x)) {
            uint32_t k = var_index(x);
            if (k < 26) snprintf(buf, sizeof buf, "%c", 'A' + k);
            else snprintf(buf, sizeof buf, "%c%u", 'A' + k % 26, k / 26);
            ok = add_str(out, buf);
        } else if (is_compound(x)) {
            const compound *c = term_compound(x);
            if (c->functor == F_LIST) {
                ok = add_str(out, "[");
                PUSH(W_LIST_TAIL, c->args[1], NULL);
                PUSH(W_TERM, c->args[0], NULL);
                continue;
            }
            ok = write_atom(prog, prog->functors[c->functor].name, out) && add_str(out, "(");
            PUSH(W_STR, 0, ")");
            for (uint32_t i = c->arity; i-- > 0 && ok;) {
                PUSH(W_TERM, c->args[i], NULL);
                if (i > 0) PUSH(W_STR, 0, ",");
            }
        } else {
            ok = add_str(out, "_");
        }
    }
#undef PUSH
    free(stack);
    return ok;
}

bool write_solution(const program *prog, const query *q, const term *values, text *out) {
    const literal *g = q->goal;
    bool ok = write_atom(prog, g->p->name, out);
    for (uint32_t i = 0; ok && i < g->p->arity; i++) {
        ok = add_str(out, i ? "," : "(") && write_term(prog, g->args[i], values, out);
    }
    return ok && add_str(out, g->p->arity ? ")\n" : "\n");
}
