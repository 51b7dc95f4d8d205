/* The parser of hhtab's reader: from tokens to one clause's parse tree, an
 * operator-precedence parser with explicit stacks (it never recurses, so no
 * input can exhaust its stack) over SWI-Prolog's operators.  Nodes know
 * where they were written, for the compiler's messages (compile.c). */
#ifndef HHTAB_PARSER_H
#define HHTAB_PARSER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "lexer.h"
#include "program.h"

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

/* Room for `need` items in *array (capacity doubled from 64, in *cap);
 * false on no memory. */
static inline bool grow(void **array, uint32_t *cap, uint32_t need, size_t item) {
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

/* A parser over text; name is what messages call it. */
void parser_init(parser *ps, program *prog, const char *name, const char *text, size_t len,
                 char *error, size_t error_size);
/* Reads the first two tokens; false with the message on an error. */
bool parser_start(parser *ps);
void parser_free(parser *ps);
/* Forgets the clause read last: its nodes and variables. */
void forget_clause(parser *ps);

/* Reads one term ending with `end` (T_STOP or T_END) into the parse tree;
 * *root is its node.  The current token is its first; `end` is consumed. */
bool read_term(parser *ps, token_kind end, uint32_t *root);

#endif
