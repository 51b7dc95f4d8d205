/* Terms of one thread's derivations (see terms.h): unification, canonical
 * forms, and the flattening that turns canonical tuples into the tries'
 * tokens and back. */
#include "terms.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trie.h" /* terms_after: how a token opens terms */

void term_heap_init(term_heap *th, const char *stack_floor, hh_arena *heap) {
    memset(th, 0, sizeof *th);
    th->stack_floor = stack_floor;
    th->heap = heap;
}

void term_heap_free(term_heap *th) {
    free(th->tokens);
    free(th->emits);
    free(th->fills);
    free(th->chain);
}

_Noreturn void stop_evaluation(const char *message) {
    fprintf(stderr, "hhtab: %s\n", message);
    fflush(stderr);
    _exit(3);
}

_Noreturn void stop_out_of_memory(void) { table_out_of_memory(); }

_Noreturn void stop_nested_too_deeply(void) {
    stop_evaluation("evaluation nested too deeply: a chain of calls, each waiting for the next, "
                    "used up the thread's stack (deep recursion through non-tabled predicates, a "
                    "long chain of new tabled calls, or a deeply nested term)");
}

void *grow_array(void *array, uint32_t *cap, uint32_t need, size_t item) {
    uint32_t n = *cap ? *cap : 64;
    while (n < need) n *= 2;
    void *bigger = realloc(array, (size_t)n * item);
    if (bigger == NULL) table_out_of_memory();
    *cap = n;
    return bigger;
}

/* ---- unification ---- */

bool match(term_heap *th, term *env, term a, term b, bool bind) {
    for (;;) {
        a = deref(env, a);
        b = deref(env, b);
        if (a == b) return true;
        if (bind && is_ref(a)) {
            if (is_ref(b) && ref_slot(b) > ref_slot(a)) env[ref_slot(b)] = a;
            else env[ref_slot(a)] = b;
            return true;
        }
        if (bind && is_ref(b)) {
            env[ref_slot(b)] = a;
            return true;
        }
        if (!is_compound(a) || !is_compound(b)) return false;
        const compound *x = term_compound(a), *y = term_compound(b);
        if (x->functor != y->functor) return false;
        check_stack(th);
        uint32_t last = x->arity - 1u;
        for (uint32_t i = 0; i < last; i++) {
            if (!match(th, env, x->args[i], y->args[i], bind)) return false;
        }
        a = x->args[last];
        b = y->args[last];
    }
}

/* (terms.h) Recursion on all arguments but the last, which loops. */
bool unify_call(term_heap *th, term *env, uint32_t *nslots, uint32_t base, uint32_t ncall,
                term h, term p) {
    for (;;) {
        if (is_var(p)) return unify(th, env, h, make_ref(base + var_index(p)));
        h = deref(env, h);
        if (is_ref(h)) {
            if (is_ground(p)) {
                env[ref_slot(h)] = p;
            } else {
                uint32_t slot_of[ncall + 1];
                for (uint32_t k = 0; k < ncall; k++) slot_of[k] = base + k;
                uint32_t all = ncall;
                env[ref_slot(h)] = instantiate(th, env, nslots, p, slot_of, &all);
            }
            return true;
        }
        if (is_ground(p) && (is_const(p) || h == p)) return h == p;
        if (!is_compound(h)) return false;
        /* p is a compound; a ground one means the same here (its arguments
         * need no dereferencing), one with variables is matched against
         * h's arguments. */
        const compound *x = term_compound(h), *y = term_compound(p);
        if (x->functor != y->functor) return false;
        check_stack(th);
        uint32_t last = x->arity - 1u;
        for (uint32_t i = 0; i < last; i++) {
            if (!unify_call(th, env, nslots, base, ncall, x->args[i], y->args[i])) return false;
        }
        h = x->args[last];
        p = y->args[last];
    }
}

/* ---- canonical terms ---- */

/* Fixes the groundness of the compounds made since `base` on the chain:
 * each was marked C_GROUND if its arguments but the last are ground; last
 * is the term that ended the chain. */
static void settle_chain(term_heap *th, uint32_t base, term last) {
    bool ground = is_ground(last);
    while (th->chain_len > base) {
        compound *c = th->chain[--th->chain_len];
        ground = ground && (c->flags & C_GROUND);
        c->flags = ground ? C_GROUND : 0;
    }
}

/* The canonical form of term t of env (seen through ov, if not NULL): its
 * unbound slots become VAR(k) in cv's numbering; a ground compound is
 * itself, others are copied onto the heap (recursion on all arguments but
 * the last, which loops). */
term canon_term(term_heap *th, const term *env, const overlay *ov, term t, canon *cv) {
    term result;
    term *out = &result;
    uint32_t base = th->chain_len;
    for (;;) {
        t = deref_over(env, ov, t);
        if (is_ground(t)) {
            *out = t;
            break;
        }
        if (is_ref(t)) {
            *out = canon_var(cv, ref_slot(t));
            break;
        }
        const compound *x = term_compound(t);
        check_stack(th);
        compound *y = new_compound(th->heap, x->functor, x->arity, C_GROUND);
        *out = compound_term(y);
        uint32_t last = x->arity - 1u;
        for (uint32_t i = 0; i < last; i++) {
            term a = deref_over(env, ov, x->args[i]);
            if (is_ref(a)) a = canon_var(cv, ref_slot(a));
            else if (!is_ground(a)) a = canon_term(th, env, ov, a, cv);
            y->args[i] = a;
            if (!is_ground(a)) y->flags = 0;
        }
        if (th->chain_len == th->chain_cap) {
            th->chain = grow_array(th->chain, &th->chain_cap, th->chain_len + 1, sizeof *th->chain);
        }
        th->chain[th->chain_len++] = y;
        out = &y->args[last];
        t = x->args[last];
    }
    settle_chain(th, base, *out);
    return result;
}

/* The unbound slots of t in the order make_pattern numbers them. */
void collect_vars(term_heap *th, const term *env, term t, canon *cv) {
    for (;;) {
        t = deref(env, t);
        if (is_ref(t)) {
            canon_var(cv, ref_slot(t));
            return;
        }
        if (!is_compound(t) || (term_compound(t)->flags & C_GROUND)) return;
        const compound *x = term_compound(t);
        check_stack(th);
        uint32_t last = x->arity - 1u;
        for (uint32_t i = 0; i < last; i++) collect_vars(th, env, x->args[i], cv);
        t = x->args[last];
    }
}

/* (terms.h) Recursion on all arguments but the last, which loops. */
term instantiate(term_heap *th, term *env, uint32_t *nslots, term t, uint32_t *slot_of,
                 uint32_t *assigned) {
    term result;
    term *out = &result;
    for (;;) {
        if (is_var(t)) {
            uint32_t k = var_index(t);
            if (k == *assigned) {
                slot_of[(*assigned)++] = *nslots;
                env[(*nslots)++] = UNBOUND;
            }
            *out = make_ref(slot_of[k]);
            return result;
        }
        if (is_ground(t)) {
            *out = t;
            return result;
        }
        const compound *x = term_compound(t);
        check_stack(th);
        compound *y = new_compound(th->heap, x->functor, x->arity, 0);
        *out = compound_term(y);
        uint32_t last = x->arity - 1u;
        for (uint32_t i = 0; i < last; i++) {
            y->args[i] = instantiate(th, env, nslots, x->args[i], slot_of, assigned);
        }
        out = &y->args[last];
        t = x->args[last];
    }
}

/* A term kept beyond the derivation step that made it: compounds not kept
 * yet are copied to the arena. */
term keep(term_heap *th, hh_arena *arena, term t) {
    term result;
    term *out = &result;
    for (;;) {
        if (!is_compound(t) || (term_compound(t)->flags & C_KEEP)) {
            *out = t;
            return result;
        }
        const compound *x = term_compound(t);
        check_stack(th);
        compound *y = new_compound(arena, x->functor, x->arity, x->flags | C_KEEP);
        *out = compound_term(y);
        uint32_t last = x->arity - 1u;
        for (uint32_t i = 0; i < last; i++) y->args[i] = keep(th, arena, x->args[i]);
        out = &y->args[last];
        t = x->args[last];
    }
}

/* ---- flattened terms, for the tries ---- */

/* Terms flatten still has to emit: `left` of them, the next at `at`, or in
 * a list (cell set) each cell's head, then the last cell's tail. */
struct emit {
    const term *at;
    const compound *cell;
    uint64_t left;
};

/* Terms unflatten still has to fill in: `left` slots, the next at `at`,
 * then `stride` terms further, but the last at `tail` when it is set (a
 * list's cells, laid out one after the other: each head, the last tail). */
struct fill {
    term *at, *tail;
    uint64_t left;
    uint32_t stride;
};

/* The tokens of a canonical tuple with a compound (from the i-th term on),
 * in th->tokens.  A term is dropped from the stack when its last part is
 * taken, so a list's spine or a last argument does not deepen it. */
__attribute__((noinline)) const term *flatten_compounds(term_heap *th, const term *tuple,
                                                        uint32_t n, uint32_t i,
                                                        uint32_t *ntokens) {
    uint32_t len = i, depth = 0;
    ensure_tokens(th, n);
    memcpy(th->tokens, tuple, i * sizeof(term));
    if (th->emits_cap < 1) th->emits = grow_array(th->emits, &th->emits_cap, 1, sizeof *th->emits);
    th->emits[depth++] = (struct emit){tuple + i, NULL, n - i};
    while (depth > 0) {
        struct emit *top = &th->emits[depth - 1];
        term t;
        if (top->cell == NULL) {
            t = *top->at++;
        } else if (top->left > 1) {
            t = top->cell->args[0];
            if (top->left > 2) top->cell = term_compound(top->cell->args[1]);
        } else {
            t = top->cell->args[1];
        }
        if (--top->left == 0) depth--;
        ensure_tokens(th, len + 1);
        if (!is_compound(t)) {
            th->tokens[len++] = t;
            continue;
        }
        if (depth == th->emits_cap) {
            th->emits = grow_array(th->emits, &th->emits_cap, depth + 1, sizeof *th->emits);
        }
        const compound *c = term_compound(t);
        if (c->functor != F_LIST) {
            th->tokens[len++] = make_functor_token(c->functor, c->arity);
            th->emits[depth++] = (struct emit){c->args, NULL, c->arity};
            continue;
        }
        uint64_t cells = 0;
        for (term l = t; is_compound(l) && term_compound(l)->functor == F_LIST; cells++) {
            l = term_compound(l)->args[1];
        }
        th->tokens[len++] = make_list_token(cells);
        th->emits[depth++] = (struct emit){NULL, c, cells + 1};
    }
    *ntokens = len;
    return th->tokens;
}

/* Builds m canonical terms from n tokens (compounds on the heap); returns
 * how many variables they have.  A compound is marked ground when its term
 * (one of the m) has no variable. */
uint32_t unflatten(term_heap *th, const term *tokens, uint32_t m, term *tuple) {
    uint32_t nv = 0, i = 0;
    for (uint32_t j = 0; j < m; j++) {
        /* The j-th term's tokens: find its end and whether a variable is in it. */
        uint64_t left = 1;
        uint32_t end = i;
        bool ground = true;
        while (left > 0) {
            term t = tokens[end++];
            left = terms_after(t, left);
            if (is_var(t)) {
                ground = false;
                if (var_index(t) + 1 > nv) nv = var_index(t) + 1;
            }
        }
        uint16_t flags = ground ? C_GROUND : 0;
        /* Slots still to fill; a compound's is dropped when its last slot
         * is taken, so a list's spine does not deepen the stack. */
        uint32_t depth = 0;
        for (; i < end; i++) {
            term t = tokens[i];
            struct fill opened = {NULL, NULL, 0, 1};
            if (is_list_token(t)) {
                /* n cells, one after the other, each the next's tail */
                uint64_t cells = list_token_length(t);
                term *block = arena_take(th->heap, cells * 3 * sizeof(term));
                for (uint64_t k = 0; k < cells; k++) {
                    compound *c = (compound *)(block + 3 * k);
                    c->functor = F_LIST;
                    c->arity = 2;
                    c->flags = flags;
                    if (k + 1 < cells) c->args[1] = compound_term((compound *)(block + 3 * k + 3));
                }
                opened = (struct fill){block + 1, block + 3 * cells - 1, cells + 1, 3};
                t = compound_term((compound *)block);
            } else if (is_opener_token(t)) {
                compound *c = new_compound(th->heap, functor_token_id(t), functor_token_arity(t),
                                           flags);
                opened = (struct fill){c->args, NULL, c->arity, 1};
                t = compound_term(c);
            }
            if (depth == 0) {
                tuple[j] = t;
            } else {
                struct fill *top = &th->fills[depth - 1];
                *top->at = t;
                top->at = --top->left == 1 && top->tail ? top->tail : top->at + top->stride;
                if (top->left == 0) depth--;
            }
            if (opened.left > 0) {
                if (depth == th->fills_cap) {
                    th->fills = grow_array(th->fills, &th->fills_cap, depth + 1, sizeof *th->fills);
                }
                th->fills[depth++] = opened;
            }
        }
    }
    return nv;
}
