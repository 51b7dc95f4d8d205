/* The program's storage: atoms, predicates, the argument indexes built once
 * every clause is read, and writing constants back as Prolog text. */
#include "program.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every allocation of a program is a block on one list, freed together. */
typedef struct block {
    struct block *next;
    _Alignas(16) char data[];
} block;

void *program_alloc(program *prog, size_t size) {
    block *b = calloc(1, sizeof(block) + size);
    if (b == NULL) return NULL;
    b->next = prog->blocks;
    prog->blocks = b;
    return b->data;
}

program *program_new(void) {
    program *prog = calloc(1, sizeof *prog);
    if (prog == NULL) return NULL;
    prog->atom_hash_mask = 1023;
    prog->pred_hash_mask = 255;
    prog->atom_hash = calloc(prog->atom_hash_mask + 1, sizeof *prog->atom_hash);
    prog->pred_hash = calloc(prog->pred_hash_mask + 1, sizeof *prog->pred_hash);
    if (prog->atom_hash == NULL || prog->pred_hash == NULL) {
        program_free(prog);
        return NULL;
    }
    return prog;
}

void program_free(program *prog) {
    if (prog == NULL) return;
    for (pred *p = prog->first_pred; p != NULL; p = p->next) free(p->clauses);
    for (block *b = prog->blocks; b != NULL;) {
        block *next = b->next;
        free(b);
        b = next;
    }
    for (uint32_t i = 0; i < prog->natoms; i++) free(prog->atom_names[i]);
    free(prog->atom_names);
    free(prog->atom_hash);
    free(prog->pred_hash);
    free(prog);
}

static uint64_t hash_bytes(const char *s, size_t len) {
    uint64_t h = 1469598103934665603u;
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211u;
    return h;
}

static bool grow_atom_hash(program *prog) {
    uint32_t mask = prog->atom_hash_mask * 2 + 1;
    uint32_t *table = calloc((size_t)mask + 1, sizeof *table);
    if (table == NULL) return false;
    for (uint32_t id = 0; id < prog->natoms; id++) {
        const char *name = prog->atom_names[id];
        uint32_t i = (uint32_t)hash_bytes(name, strlen(name)) & mask;
        while (table[i] != 0) i = (i + 1) & mask;
        table[i] = id + 1;
    }
    free(prog->atom_hash);
    prog->atom_hash = table;
    prog->atom_hash_mask = mask;
    return true;
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
    prog->atom_hash[i] = *id + 1;
    if (prog->natoms * 2 > prog->atom_hash_mask) return grow_atom_hash(prog);
    return true;
}

static uint32_t pred_slot(uint32_t name, uint32_t arity, uint32_t mask) {
    return (uint32_t)(((uint64_t)name * 0x9E3779B97F4A7C15u + arity) >> 20) & mask;
}

pred *program_pred(program *prog, uint32_t name, uint32_t arity, bool create) {
    uint32_t i = pred_slot(name, arity, prog->pred_hash_mask);
    for (; prog->pred_hash[i] != NULL; i = (i + 1) & prog->pred_hash_mask) {
        pred *p = prog->pred_hash[i];
        if (p->name == name && p->arity == arity) return p;
    }
    if (!create) return NULL;
    pred *p = program_alloc(prog, sizeof *p);
    if (p == NULL) return NULL;
    p->name = name;
    p->arity = arity;
    p->facts_only = true;
    prog->pred_hash[i] = p;
    if (prog->last_pred) prog->last_pred->next = p;
    else prog->first_pred = p;
    prog->last_pred = p;
    if (++prog->npreds * 2 > prog->pred_hash_mask) {
        uint32_t mask = prog->pred_hash_mask * 2 + 1;
        pred **table = calloc((size_t)mask + 1, sizeof *table);
        if (table == NULL) return NULL;
        for (pred *q = prog->first_pred; q != NULL; q = q->next) {
            uint32_t j = pred_slot(q->name, q->arity, mask);
            while (table[j] != NULL) j = (j + 1) & mask;
            table[j] = q;
        }
        free(prog->pred_hash);
        prog->pred_hash = table;
        prog->pred_hash_mask = mask;
    }
    return p;
}


/* Builds the index of `n` items whose key is keys_of[i] (UNBOUND: the item
 * matches every key and goes to `always`), keeping item order per key. */
static bool build_index(program *prog, arg_index *ix, const term *keys_of, size_t stride,
                        uint32_t n) {
    uint32_t distinct = 0;
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
        if (ix->keys[s] == UNBOUND) {
            ix->keys[s] = key;
            distinct++;
        }
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
    (void)distinct;
    return true;
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
                term a = p->clauses[c]->head[0];
                first[c] = is_const(a) ? a : UNBOUND;
            }
            if (!build_index(prog, &p->clause_index, first, 1, p->nclauses)) return false;
        }
    }
    prog->ntabled = ntabled;
    prog->tabled = program_alloc(prog, (ntabled + 1) * sizeof *prog->tabled);
    if (prog->tabled == NULL) return false;
    for (pred *p = prog->first_pred; p != NULL; p = p->next) {
        if (p->tabled) prog->tabled[p->table_id] = p;
    }
    return true;
}

/* writeq leaves an atom bare when it is a letter-digit word starting with a
 * lower-case letter; everything else is quoted here. */
static bool bare_atom(const char *s) {
    if (!(s[0] >= 'a' && s[0] <= 'z')) return false;
    for (const char *c = s; *c; c++) {
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '_')) {
            return false;
        }
    }
    return true;
}

void write_term(const program *prog, term t, char *out, size_t size) {
    if (size == 0) return;
    if (TERM_TAG(t) == TAG_INT) {
        snprintf(out, size, "%lld", (long long)int_value(t));
    } else if (TERM_TAG(t) == TAG_ATOM) {
        const char *name = prog->atom_names[atom_id(t)];
        if (bare_atom(name)) {
            snprintf(out, size, "%s", name);
            return;
        }
        size_t at = 0;
        out[at++] = '\'';
        for (const char *c = name; *c && at + 4 < size; c++) {
            if (*c == '\'' || *c == '\\') {
                out[at++] = '\\';
                out[at++] = *c;
            } else if (*c == '\n') {
                out[at++] = '\\';
                out[at++] = 'n';
            } else if (*c == '\t') {
                out[at++] = '\\';
                out[at++] = 't';
            } else {
                out[at++] = *c;
            }
        }
        if (at + 1 < size) out[at++] = '\'';
        out[at] = '\0';
    } else if (TERM_TAG(t) == TAG_VAR && t != UNBOUND) {
        uint32_t k = var_index(t);
        if (k < 26) snprintf(out, size, "%c", 'A' + k);
        else snprintf(out, size, "%c%u", 'A' + k % 26, k / 26);
    } else {
        snprintf(out, size, "_");
    }
}
