/* Terms of one thread's derivations: dereferencing and unification in a
 * clause's environment, canonical forms (the variables VAR(k) of calls,
 * solutions and answers) and the flattened tokens the tries store.
 *
 * An environment is a flat array of slots: unbound, or a term (a constant,
 * REF(another slot), or a compound whose variables are slots of the same
 * environment, or none).  Compounds a derivation builds live on the
 * thread's term heap, an hh_arena released to a mark when the derivation
 * step that made them returns; keep() copies a term to a longer-lived arena.
 *
 * The hot operations (deref, unify's first step, canon_var, flatten of a
 * tuple without compounds, allocation on the heap) are inline here: the
 * scheduler calls them on every derivation step. */
#ifndef HHTAB_TERMS_H
#define HHTAB_TERMS_H

#include <stdbool.h>
#include <stdint.h>

#include "hugeheap.h"
#include "program.h"

/* The memory and scratch stacks of one thread's term operations. */
typedef struct term_heap {
    hh_arena *heap;          /* compounds of derivations, given back to marks */
    const char *stack_floor; /* the lowest address the thread's C stack may reach */
    /* Flattened terms for the tables, and the stacks that make and read them. */
    term *tokens;
    uint32_t tokens_cap;
    struct emit *emits;
    uint32_t emits_cap;
    struct fill *fills;
    uint32_t fills_cap;
    compound **chain; /* canonical compounds whose groundness waits for their last argument */
    uint32_t chain_len, chain_cap;
} term_heap;

/* heap: the arena of the compounds (the caller's, which outlives th). */
void term_heap_init(term_heap *th, const char *stack_floor, hh_arena *heap);
/* Frees the scratch stacks; the heap stays the caller's. */
void term_heap_free(term_heap *th);

/* Stops the program with "hhtab: message" (exit code 3). */
_Noreturn void stop_evaluation(const char *message);
/* No memory: stops with the tables' message (table_out_of_memory). */
_Noreturn void stop_out_of_memory(void);
/* The C stack is nearly used up: stops with a message instead of crashing. */
_Noreturn void stop_nested_too_deeply(void);

static inline void check_stack(const term_heap *th) {
    if ((const char *)__builtin_frame_address(0) < th->stack_floor) stop_nested_too_deeply();
}

/* array with room for `need` items of `item` bytes (capacity doubled from
 * 64, in *cap); stops the program on no memory. */
void *grow_array(void *array, uint32_t *cap, uint32_t need, size_t item);

/* ---- memory ---- */

/* size bytes, 16-aligned, from an arena; stops the program on no memory. */
static inline void *arena_take(hh_arena *arena, size_t size) {
    void *p = hh_arena_alloc_inline(arena, size, 16);
    if (__builtin_expect(p == NULL, 0)) stop_out_of_memory();
    return p;
}

static inline hh_arena_mark heap_mark(const term_heap *th) { return hh_arena_save(th->heap); }
static inline void heap_release(term_heap *th, hh_arena_mark mark) {
    hh_arena_release(th->heap, mark);
}

static inline compound *new_compound(hh_arena *arena, uint32_t functor, uint32_t arity,
                                     uint16_t flags) {
    compound *c = arena_take(arena, sizeof(compound) + arity * sizeof(term));
    c->functor = functor;
    c->arity = (uint16_t)arity;
    c->flags = flags;
    return c;
}

/* ---- terms in an environment ---- */

static inline term deref(const term *env, term t) {
    while (is_ref(t)) {
        term v = env[ref_slot(t)];
        if (v == UNBOUND) return t;
        t = v;
    }
    return t;
}

/* Unifies two terms of env, binding its slots (bind), or without bind
 * tells whether they are identical (==): the same constants, the same
 * unbound slots, compounds alike all the way down. */
bool match(term_heap *th, term *env, term a, term b, bool bind);

/* The first step inline (binding a slot, or comparing constants): most
 * unifications end there; compounds go on in match. */
static inline bool unify(term_heap *th, term *env, term a, term b) {
    a = deref(env, a);
    b = deref(env, b);
    if (a == b) return true;
    if (is_ref(a)) {
        if (is_ref(b) && ref_slot(b) > ref_slot(a)) env[ref_slot(b)] = a;
        else env[ref_slot(a)] = b;
        return true;
    }
    if (is_ref(b)) {
        env[ref_slot(b)] = a;
        return true;
    }
    if (!is_compound(a) || !is_compound(b)) return false;
    return match(th, env, a, b, true);
}

/* Unifies a term h of env with a canonical term p whose VAR(k) are the
 * call variables, slots base + k (k < ncall); variables p brings in take
 * fresh slots from *nslots on. */
bool unify_call(term_heap *th, term *env, uint32_t *nslots, uint32_t base, uint32_t ncall,
                term h, term p);

/* ---- canonical terms ---- */

/* The unbound slots met so far, in order: slot seen[k] is VAR(k). */
typedef struct canon {
    uint32_t *seen;
    uint32_t n;
} canon;

/* A call's solution seen through its caller's environment before it is
 * bound there: unbound slot roots[k] holds tuple[k] (ground). */
typedef struct overlay {
    const uint32_t *roots;
    uint32_t n;
    const term *tuple;
} overlay;

static inline term deref_over(const term *env, const overlay *ov, term t) {
    while (is_ref(t)) {
        term v = env[ref_slot(t)];
        if (v == UNBOUND) {
            for (uint32_t k = 0; ov != NULL && k < ov->n; k++) {
                if (ov->roots[k] == ref_slot(t)) return ov->tuple[k];
            }
            return t;
        }
        t = v;
    }
    return t;
}

static inline term canon_var(canon *cv, uint32_t slot) {
    uint32_t k = 0;
    while (k < cv->n && cv->seen[k] != slot) k++;
    if (k == cv->n) cv->seen[cv->n++] = slot;
    return make_var(k);
}

/* The canonical form of term t of env (seen through ov, if not NULL): its
 * unbound slots become VAR(k) in cv's numbering; a ground compound is
 * itself, others are copied onto the heap. */
term canon_term(term_heap *th, const term *env, const overlay *ov, term t, canon *cv);

/* The call pattern of args under env: tok[i] canonical, roots[j] the slot
 * of the call's j-th distinct variable (room for every slot of env).
 * Returns their number. */
static inline uint32_t make_pattern(term_heap *th, const term *env, const term *args,
                                    uint32_t arity, term *tok, uint32_t *roots) {
    canon cv = {roots, 0};
    for (uint32_t i = 0; i < arity; i++) {
        term t = deref(env, args[i]);
        if (is_ground(t)) tok[i] = t;
        else if (is_ref(t)) tok[i] = canon_var(&cv, ref_slot(t));
        else tok[i] = canon_term(th, env, NULL, t, &cv);
    }
    return cv.n;
}

/* The unbound slots of t in the order make_pattern numbers them. */
void collect_vars(term_heap *th, const term *env, term t, canon *cv);

/* A canonical term's compounds for env: VAR(k) is slot_of[k], or when k is
 * the next new variable a fresh slot *nslots of env (then recorded in
 * slot_of). */
term instantiate(term_heap *th, term *env, uint32_t *nslots, term t, uint32_t *slot_of,
                 uint32_t *assigned);

/* A term kept beyond the derivation step that made it: compounds not kept
 * yet are copied to arena. */
term keep(term_heap *th, hh_arena *arena, term t);

/* ---- flattened terms, for the tries ---- */

static inline void ensure_tokens(term_heap *th, uint32_t n) {
    if (__builtin_expect(n > th->tokens_cap, 0)) {
        th->tokens = grow_array(th->tokens, &th->tokens_cap, n, sizeof(term));
    }
}

/* The tokens of a canonical tuple with a compound (from the i-th term on),
 * in th->tokens. */
const term *flatten_compounds(term_heap *th, const term *tuple, uint32_t n, uint32_t i,
                              uint32_t *ntokens);

/* A canonical tuple's tokens in preorder: the tuple itself if it has no
 * compound, else in th->tokens.  *ntokens is set. */
static inline const term *flatten(term_heap *th, const term *tuple, uint32_t n,
                                  uint32_t *ntokens) {
    for (uint32_t i = 0; i < n; i++) {
        if (is_compound(tuple[i])) return flatten_compounds(th, tuple, n, i, ntokens);
    }
    *ntokens = n;
    return tuple;
}

/* Builds m canonical terms from tokens (compounds on the heap); returns
 * how many variables they have.  A compound is marked ground when its term
 * (one of the m) has no variable. */
uint32_t unflatten(term_heap *th, const term *tokens, uint32_t m, term *tuple);

#endif
