/* A loaded logic program: terms, predicates, clauses and the indexes the
 * evaluator uses.
 *
 * A term is one tagged 64-bit word: an atom, an integer, a variable, or a
 * pointer to a compound (functor and arguments).  Two kinds of variable
 * exist.  In a clause's environment a variable is REF(slot), a slot of the
 * flat environment of one activation of the clause; a compound built from a
 * clause's text holds REF(slot) of that clause, so it means something in
 * every environment of that clause.  In a *canonical* term (a call pattern, a
 * solution, an answer) the variables are VAR(k), numbered by first
 * occurrence; canonical terms belong to no environment and cross from one
 * clause's frame to another's.  A compound is *ground* when no variable is
 * anywhere inside it: ground compounds mean the same everywhere and are
 * shared by pointer. */
#ifndef HHTAB_PROGRAM_H
#define HHTAB_PROGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A term, by its low bits:
 *   ..00  0 = an unbound slot; otherwise VAR(k) (k + 1 in the upper bits)
 *   .001  atom (id in the upper bits)
 *   .101  opener token, only in flattened terms: bit 3 clear, a compound's
 *         functor (id and arity above), whose arguments follow; bit 3 set,
 *         a list of n elements (n above), whose elements then tail follow
 *   ..10  integer, 62-bit signed value
 *   .011  REF(slot): an environment slot
 *   .111  compound: its address (8-byte aligned) */
typedef uint64_t term;

#define UNBOUND ((term)0)
#define INT_LIMIT ((int64_t)1 << 61) /* integers lie in [-INT_LIMIT, INT_LIMIT) */

static inline term make_atom(uint32_t id) { return ((term)id << 3) | 1u; }
static inline term make_int(int64_t v) { return ((term)v << 2) | 2u; }
static inline term make_ref(uint32_t slot) { return ((term)slot << 3) | 3u; }
static inline term make_var(uint32_t k) { return (term)(k + 1) << 2; }
static inline term make_functor_token(uint32_t id, uint32_t arity) {
    return ((term)id << 11) | ((term)arity << 4) | 5u;
}
static inline term make_list_token(uint64_t length) { return ((term)length << 4) | 13u; }

static inline bool is_atom(term t) { return (t & 7u) == 1u; }
static inline bool is_int(term t) { return (t & 3u) == 2u; }
/* An atom or an integer: a term that is one token and no variable. */
/* The tags .001, .010 and .110: bits 1, 2 and 6 of 0x46. */
static inline bool is_const(term t) { return (0x46u >> (t & 7u)) & 1u; }
static inline bool is_ref(term t) { return (t & 7u) == 3u; }
static inline bool is_var(term t) { return (t & 3u) == 0u && t != UNBOUND; }
static inline bool is_compound(term t) { return (t & 7u) == 7u; }
static inline bool is_opener_token(term t) { return (t & 7u) == 5u; }
static inline bool is_list_token(term t) { return (t & 15u) == 13u; }

static inline uint32_t ref_slot(term t) { return (uint32_t)(t >> 3); }
static inline uint32_t var_index(term t) { return (uint32_t)(t >> 2) - 1; }
static inline uint32_t atom_id(term t) { return (uint32_t)(t >> 3); }
static inline int64_t int_value(term t) { return (int64_t)t >> 2; }
static inline uint32_t functor_token_id(term t) { return (uint32_t)(t >> 11); }
static inline uint32_t functor_token_arity(term t) { return (uint32_t)(t >> 4) & 127u; }
static inline uint64_t list_token_length(term t) { return t >> 4; }
/* How many terms follow an opener token: a functor's arguments, or a
 * list's elements and its tail. */
static inline uint64_t opened_terms(term t) {
    return is_list_token(t) ? list_token_length(t) + 1 : functor_token_arity(t);
}

#define MAX_ARITY 64
#define MAX_CLAUSE_VARS 1024

/* A compound: its functor (an id of the program's functor table) and
 * arguments.  Compounds of the program's text and those an evaluation keeps
 * (consumers) are KEEP; those of one derivation live on a thread's term heap. */
enum { C_GROUND = 1, C_KEEP = 2 };
typedef struct compound {
    uint32_t functor;
    uint16_t arity;
    uint16_t flags;
    term args[];
} compound;

static inline compound *term_compound(term t) { return (compound *)(uintptr_t)(t & ~(term)7); }
static inline term compound_term(const compound *c) { return (term)(uintptr_t)c | 7u; }
/* A term with no variable: a constant or a ground compound. */
static inline bool is_ground(term t) {
    return is_const(t) || (is_compound(t) && (term_compound(t)->flags & C_GROUND));
}

/* Atoms and functors every program has, by id. */
enum {
    ATOM_NIL, /* [] (which is not the atom '[]') */
    ATOM_TRUE,
    ATOM_FAIL,
    ATOM_FALSE,
    ATOM_CUT,
    N_FIXED_ATOMS
};
enum {
    F_LIST, /* '[|]'/2 */
    F_COMMA, F_NECK, F_DIRECTIVE, F_QUERY_DIRECTIVE, F_SEMICOLON, F_BAR, F_ARROW, F_SOFT_ARROW,
    F_NOT, F_DCG, F_AS, F_TABLE,
    /* built-in predicates */
    F_UNIFY, F_NOT_UNIFY, F_IDENTICAL, F_NOT_IDENTICAL, F_IS, F_LT, F_GT, F_LE, F_GE,
    F_ARITH_EQ, F_ARITH_NE,
    /* arithmetic functions */
    F_ADD, F_SUB, F_MUL, F_INT_DIV, F_DIV, F_FLOOR_DIV, F_MOD, F_REM, F_MIN, F_MAX, F_NEG,
    F_PLUS, F_ABS, F_SIGN, F_SHIFT_RIGHT, F_SHIFT_LEFT, F_BIT_AND, F_BIT_OR, F_XOR, F_BIT_NOT,
    F_POWER, F_STAR_POWER, F_GCD, F_MSB,
    N_FIXED_FUNCTORS
};
#define F_FIRST_ARITH F_ADD

typedef struct functor_def {
    uint32_t name; /* atom id */
    uint32_t arity;
} functor_def;

typedef struct pred pred;

/* What a body literal does.  Calls are told apart by how the callee is
 * evaluated (known once the program is read). */
typedef enum {
    L_TABLED,     /* a tabled predicate */
    L_FACTS,      /* a predicate of ground facts */
    L_RULES,      /* any other predicate of the program */
    L_NOT,        /* \+ G: G is the body of p, a hidden predicate of G's variables */
    L_FAIL,
    L_UNIFY,      /* = */
    L_NOT_UNIFY,  /* \= */
    L_IDENTICAL,  /* == */
    L_NOT_IDENTICAL,
    L_IS,
    L_LT, L_GT, L_LE, L_GE, L_ARITH_EQ, L_ARITH_NE,
} literal_kind;

/* A body literal: a call of p, or a built-in of two arguments; arguments are
 * terms of the clause (constants, REF(slot) of its variables, compounds). */
typedef struct literal {
    literal_kind kind;
    pred *p;               /* calls and L_NOT */
    uint32_t line, column; /* for messages */
    term args[];
} literal;

typedef struct clause {
    pred *p;
    uint32_t nvars; /* slots 0 .. nvars-1 of its environment */
    uint32_t nbody;
    term *head;     /* p->arity arguments */
    literal **body;
} clause;

/* Constant (or a compound's functor token) -> list of row or clause
 * numbers, for one argument position. */
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
/* The key an argument is indexed by: a constant, a compound's functor token,
 * or UNBOUND for a variable. */
term index_key(term t);
/* The key that tells ground compounds apart in a first-argument index: a
 * hash of the term's structure (its first tokens), in the tag of list
 * tokens, which no other key has.  Equal terms have equal keys; different
 * ones rarely do, and clauses found by a shared key still have to unify. */
term ground_compound_key(term t);

struct pred {
    uint32_t name; /* atom id */
    uint32_t arity;
    bool tabled;
    bool facts_only; /* every clause a fact with constant arguments */
    const pred *reaches; /* non-tabled: a tabled predicate it calls, maybe through others */
    clause **clauses;
    uint32_t nclauses, cap_clauses;
    /* facts_only: the rows, arity terms each, and an index per argument. */
    term *rows;
    uint32_t nrows;
    arg_index *row_index;
    /* otherwise: clauses by first argument, a constant or a compound's functor;
     * with ground_keys (a clause's first argument is a ground compound) a
     * ground compound by its ground_compound_key instead, and functor_index
     * lists every compound by its functor, for calls whose first argument
     * is a compound with variables.  Facts of compounds, as edge(f(1), f(2)),
     * would otherwise all share their functor's key: a call would try each. */
    arg_index clause_index;
    arg_index functor_index;
    bool ground_keys;
    uint32_t table_id; /* tabled: index into the table space's entries */
    pred *next;        /* all predicates, in order of appearance */
};

typedef struct program {
    const char *name; /* the file, for messages */
    char **atom_names;
    uint32_t natoms, cap_atoms;
    uint32_t *atom_hash; /* atom id + 1, 0 = empty */
    uint32_t atom_hash_mask;
    functor_def *functors;
    uint32_t nfunctors, cap_functors;
    uint32_t *functor_hash; /* functor id + 1, 0 = empty */
    uint32_t functor_hash_mask;
    pred **pred_hash;
    uint32_t pred_hash_mask, npreds;
    pred *first_pred, *last_pred;
    uint32_t ntabled;
    pred **tabled; /* by table_id */
    struct hh_arena *memory; /* the program's memory (program_alloc), freed together */
} program;

program *program_new(const char *name);
void program_free(program *prog);
/* The atom's id, adding it if new; false on no memory. */
bool program_atom(program *prog, const char *name, size_t len, uint32_t *id);
/* The functor's id, adding it if new; false on no memory. */
bool program_functor(program *prog, uint32_t name, uint32_t arity, uint32_t *id);
pred *program_pred(program *prog, uint32_t name, uint32_t arity, bool create);
void *program_alloc(program *prog, size_t size); /* zeroed, 16-aligned; NULL on no memory */
/* After the last clause: literal kinds, indexes, the tabled list; false on no memory. */
bool program_finish(program *prog);
/* How a call of p is evaluated (L_TABLED, L_FACTS or L_RULES), once it is finished. */
literal_kind program_call_kind(const pred *p);

/* Reads a program (the accepted text: the top of docs/HHTAB.md; the reader
 * is lexer.c, parser.c and compile.c).  NULL on an error, with
 * "FILE:LINE:COLUMN: what was found" in error. */
program *program_read(const char *path, char *error, size_t error_size);
/* The same from a buffer; name is what messages call it. */
program *program_parse(const char *name, const char *text, size_t len, char *error,
                       size_t error_size);

/* A query: one call of a predicate of the program. */
typedef struct query {
    literal *goal;
    uint32_t nvars;
} query;

/* Parses one goal against prog; false with "--query:1:COLUMN: ..." in error. */
bool query_parse(program *prog, const char *text, query *q, char *error, size_t error_size);

/* Text that grows (messages, answers). */
typedef struct text {
    char *s;
    size_t len, cap;
} text;
/* Appends; false on no memory (the text keeps what it had). */
bool text_add(text *t, const char *s, size_t n);

/* Appends t as write_term(T, [quoted(true), ignore_ops(true),
 * numbervars(true)]) writes it: atoms quoted where needed, compounds in
 * canonical f(...) form, lists as lists, VAR(k) as A, B, ...  A REF(slot)
 * is written as values[slot] (a canonical term); values may be NULL when t
 * has none.  False on no memory. */
bool write_term(const program *prog, term t, const term *values, text *out);
/* Appends a solution of the query as a line: its goal with the values of
 * its variables (canonical terms, one numbering).  False on no memory. */
bool write_solution(const program *prog, const query *q, const term *values, text *out);

#endif
