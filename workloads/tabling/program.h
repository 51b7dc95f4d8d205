/* A loaded logic program: terms, predicates, clauses and the indexes the
 * evaluator uses.  Terms are function-free (atoms, integers, variables), so a
 * term is one tagged 64-bit word and a clause's variables are slots of a flat
 * environment. */
#ifndef HHTAB_PROGRAM_H
#define HHTAB_PROGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A term, by its two low bits:
 *   01  atom, id in the upper bits         10  integer, 62-bit signed value
 *   11  REF: environment slot (upper bits) 00  0 = unbound slot; otherwise
 *       VAR(k), the k-th distinct variable of a call pattern or an answer
 *       (the token trie levels store for a variable). */
typedef uint64_t term;

#define TERM_TAG(t) ((t) & 3u)
#define TAG_VAR 0u
#define TAG_ATOM 1u
#define TAG_INT 2u
#define TAG_REF 3u
#define UNBOUND ((term)0)
#define INT_LIMIT ((int64_t)1 << 61) /* integers lie in [-INT_LIMIT, INT_LIMIT) */

static inline term make_atom(uint32_t id) { return ((term)id << 2) | TAG_ATOM; }
static inline term make_int(int64_t v) { return ((term)v << 2) | TAG_INT; }
static inline term make_ref(uint32_t slot) { return ((term)slot << 2) | TAG_REF; }
static inline term make_var(uint32_t k) { return (term)(k + 1) << 2; }
static inline bool is_const(term t) { return TERM_TAG(t) == TAG_ATOM || TERM_TAG(t) == TAG_INT; }
static inline uint32_t ref_slot(term t) { return (uint32_t)(t >> 2); }
static inline uint32_t var_index(term t) { return (uint32_t)(t >> 2) - 1; }
static inline uint32_t atom_id(term t) { return (uint32_t)(t >> 2); }
static inline int64_t int_value(term t) { return (int64_t)t >> 2; }

#define MAX_ARITY 64
#define MAX_CLAUSE_VARS 1024

typedef struct pred pred;

/* A body literal: a call of p with arguments that are constants or REF(slot)
 * of the clause's own variables. */
typedef struct literal {
    pred *p;
    uint32_t line, column;
    term args[];
} literal;

typedef struct clause {
    pred *p;
    uint32_t nvars; /* slots 0 .. nvars-1 of its environment */
    uint32_t nbody;
    uint32_t line, column;
    term *head;     /* p->arity arguments: constants or REF(slot) */
    literal **body;
} clause;

/* Constant -> list of row or clause numbers, for one argument position. */
typedef struct arg_index {
    term *keys;       /* open addressing, UNBOUND = empty */
    uint32_t *start;  /* where the key's numbers begin in `numbers` */
    uint32_t *count;
    uint32_t mask;
    uint32_t *numbers;
    uint32_t *always; /* clause index only: clauses whose argument is a variable */
    uint32_t n_always;
} arg_index;

/* Where an index's probe for key starts (its slots are mask + 1). */
static inline uint32_t key_slot(term key, uint32_t mask) {
    return (uint32_t)((key * 0x9E3779B97F4A7C15u) >> 32) & mask;
}

struct pred {
    uint32_t name; /* atom id */
    uint32_t arity;
    bool tabled;
    bool facts_only; /* every clause a fact with constant arguments */
    uint32_t def_line, def_column; /* first clause, table directive or call (for messages) */
    const char *def_what;          /* which of those */
    clause **clauses;
    uint32_t nclauses, cap_clauses;
    /* facts_only: the rows, arity terms each, and an index per argument. */
    term *rows;
    uint32_t nrows;
    arg_index *row_index;
    /* otherwise: clauses by first argument */
    arg_index clause_index;
    uint32_t table_id; /* tabled: index into the table space's entries */
    pred *next;        /* all predicates, in order of appearance */
};

typedef struct program {
    char **atom_names;
    uint32_t natoms, cap_atoms;
    uint32_t *atom_hash; /* atom id + 1, 0 = empty */
    uint32_t atom_hash_mask;
    pred **pred_hash;
    uint32_t pred_hash_mask, npreds;
    pred *first_pred, *last_pred;
    uint32_t ntabled;
    pred **tabled; /* by table_id */
    void *blocks;  /* every allocation of the program, freed together */
} program;

program *program_new(void);
void program_free(program *prog);
/* The atom's id, adding it if new; false on no memory. */
bool program_atom(program *prog, const char *name, size_t len, uint32_t *id);
pred *program_pred(program *prog, uint32_t name, uint32_t arity, bool create);
void *program_alloc(program *prog, size_t size); /* zeroed; NULL on no memory */
/* After the last clause: builds the indexes and tabled list; false on no memory. */
bool program_finish(program *prog);

/* Reads a program (see parse.c for the accepted text).  NULL on an error, with
 * "FILE:LINE:COLUMN: what was found" in error. */
program *program_read(const char *path, char *error, size_t error_size);
/* The same from a buffer; name is what messages call it. */
program *program_parse(const char *name, const char *text, size_t len, char *error,
                       size_t error_size);

/* A query: one call, its variables' names. */
typedef struct query {
    literal *goal;
    uint32_t nvars;
    char **var_names;
} query;

/* Parses "name(arg, ...)" against prog; false with "--query: 1:COLUMN: ..." in error. */
bool query_parse(program *prog, const char *text, query *q, char *error, size_t error_size);

/* Writes t as writeq would (atoms quoted when needed); variables as A, B, ... */
void write_term(const program *prog, term t, char *out, size_t size);

#endif
