/* SLG resolution with local scheduling.
 *
 * A derivation is a chain of frames: a clause, the literal it is at, and its
 * environment, a flat array of slots holding the clause's variables, then
 * its call's variables, then variables that answers brought in.  A slot is
 * unbound or holds a term: a constant, REF(another slot), or a compound
 * whose variables are slots of the same environment (the clause's own
 * compounds are such) or none (ground compounds, shared by every frame).
 * Frames are never changed once another may see them: each solution of a
 * call continues in a fresh copy with the new bindings, so a frame can be
 * kept as a continuation.  Built-ins (=, is, comparisons, \+) continue in
 * the frame they run in: no one else holds it yet.  The body's end returns
 * the solution to the caller's frame (a non-tabled call) or adds it as an
 * answer to the generator the chain belongs to.
 *
 * Terms cross from one clause's environment to another's only as canonical
 * terms (variables VAR(k), numbered by first occurrence): a call's pattern,
 * a solution, an answer.  Compounds a derivation builds live on the
 * thread's term heap, given back when the derivation step that made them
 * returns; a continuation kept for later copies what it refers to.
 *
 * A tabled call looks its variant up in the subgoal trie.  A complete table is
 * read; a new subgoal is evaluated at once (its clauses run to the end), and
 * if it is the leader of its strongly connected component (Tarjan's low-link
 * over the completion stack), the component's consumers are resumed until no
 * answer is left unconsumed, then all of it is complete; a call to an
 * incomplete subgoal becomes a consumer: its continuation is copied to this
 * thread's arena, takes the answers there are and waits for the others.
 * FS with several threads: a subgoal another thread is evaluating is waited
 * for (table_wait_complete), then read as a complete table.
 * Each consumer takes each answer once, so "repeated" counts exactly the
 * derivations of an answer already in the table. */
#include "engine.h"

#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "arith.h"
#include "terms.h"

typedef struct frame {
    const clause *cl;
    struct frame *parent; /* the caller, at its call literal; NULL: generator clause or query */
    sgframe *gen;         /* the subgoal this derivation makes answers for; NULL: the query */
    struct frame *copy;   /* once captured: the arena copy (itself, for an arena frame) */
    uint32_t lit;         /* the literal to run next (for a caller: the call) */
    uint32_t ncall;       /* the call's variables: slots cl->nvars .. cl->nvars + ncall - 1 */
    uint32_t nslots;      /* then variables that answers brought in */
    term env[];
} frame;

/* How the solutions of a clause's last literal become answers of its
 * generator directly (no frame, no return): answer variable j is fixed[j]
 * when from[j] < 0, else the value of the literal's from[j]-th variable. */
typedef struct direct_plan {
    uint32_t n; /* the generator's call variables */
    int32_t *from;
    term *fixed;
} direct_plan;

/* How each answer of a tabled call becomes answers of its generator
 * through a predicate of facts that is the clause's last literal (the join
 * of a left recursion such as path(X,Z) :- path(X,Y), edge(Y,Z)), without
 * a frame: `arg` is the facts literal's arguments and `ans` the
 * generator's answer, each a constant, REF(j) for the call's answer term j,
 * or VAR(k) for the facts literal's k-th new variable (first in argument
 * first_at[k]). */
typedef struct fact_join {
    const pred *p;
    uint32_t nout, nans;
    term *arg;
    uint32_t *first_at;
    term *ans;
} fact_join;

struct consumer {
    sgframe *of;       /* the subgoal it takes answers from */
    tnode *cursor;     /* the last answer taken; NULL: none yet */
    uint64_t taken;
    frame *k;          /* the continuation: the caller's frame at the call */
    consumer *next;    /* the other consumers of `of` */
    bool direct;       /* plan holds: each answer taken is an answer of k->gen */
    direct_plan plan;
    bool joins;        /* join holds: each answer joins the facts after the call */
    fact_join join;
    uint32_t nroots;
    uint32_t roots[];  /* the call's variables: slots of k's environment */
};
struct engine {
    const program *prog;
    tablespace *ts;
    unsigned thread;
    bool shared_answers; /* FS: other threads add answers to the same tables */
    table_thread counts;
    /* The completion stack: incomplete subgoals, oldest first. */
    sgframe **stack;
    uint32_t depth, cap;
    /* Subgoals with answers their consumers have not taken. */
    sgframe **work;
    uint32_t work_len, work_cap;
    hh_arena *arena; /* consumers and captured frames, reset when the completion stack empties */
    term_heap th;    /* compounds of derivations, and the scratch stacks of term operations */
    evaluation ev;   /* arithmetic's view of the program and th */
    /* \+: where the first solution of the negated goal jumps to. */
    jmp_buf *negation_exit;
    /* The query */
    uint64_t solutions;
    uint32_t query_vars;
    solution_fn emit;
    void *emit_ctx;
};

#define FRAME_WORDS(n) \
    ((sizeof(frame) + sizeof(term) * (size_t)(n) + sizeof(term) - 1) / sizeof(term))

/* The generator of a \+ goal's derivations: their first solution ends it. */
static sgframe negation_goal;

static void run(engine *e, frame *f);

/* ---- terms of frames ---- */

/* The solution of a finished clause (seen through ov, if not NULL) for its
 * call: the call's variables, canonical with one numbering.  Returns how
 * many variables it has.  Always inline: finish calls it on every
 * solution (GCC stopped inlining it on its own once canon_term moved to
 * terms.c). */
static inline __attribute__((always_inline)) uint32_t
solution_tuple(engine *e, const frame *f, const overlay *ov, term *tuple) {
    uint32_t nv = f->cl->nvars;
    uint32_t seen[f->nslots + 1];
    canon cv = {seen, 0};
    for (uint32_t j = 0; j < f->ncall; j++) {
        term t = deref_over(f->env, ov, make_ref(nv + j));
        if (is_ground(t)) tuple[j] = t;
        else if (is_ref(t)) tuple[j] = canon_var(&cv, ref_slot(t));
        else tuple[j] = canon_term(&e->th, f->env, ov, t, &cv);
    }
    return cv.n;
}

/* Binds the call's variables (roots) to a solution (canonical, nv
 * variables): a variable of the solution aliases the slot it first meets,
 * or a fresh slot of f if it first occurs inside a compound. */
static inline void bind_tuple(engine *e, frame *f, const uint32_t *roots, uint32_t m,
                              const term *tuple, uint32_t nv) {
    uint32_t slot_of[nv + 1];
    uint32_t assigned = 0;
    for (uint32_t j = 0; j < m; j++) {
        term t = tuple[j];
        if (is_var(t)) {
            if (var_index(t) == assigned) slot_of[assigned++] = roots[j];
            else f->env[roots[j]] = make_ref(slot_of[var_index(t)]);
        } else if (is_ground(t)) {
            f->env[roots[j]] = t;
        } else {
            f->env[roots[j]] = instantiate(&e->th, f->env, &f->nslots, t, slot_of, &assigned);
        }
    }
}

/* ---- answers from the tries ---- */

/* An answer's terms (m of them) from its leaf; returns how many variables
 * it has. */
static inline uint32_t read_answer(engine *e, const tnode *leaf, uint32_t m, term *tuple) {
    const tnode *n = leaf;
    uint32_t nv = 0;
    for (uint32_t j = m; j-- > 0; n = n->parent) {
        tuple[j] = n->token;
        if (is_var(n->token) && var_index(n->token) >= nv) nv = var_index(n->token) + 1;
    }
    if (n->parent == NULL) return nv; /* one token per term: no compound */
    uint32_t len = answer_length(leaf);
    ensure_tokens(&e->th, len);
    answer_tokens(leaf, e->th.tokens, len);
    return unflatten(&e->th, e->th.tokens, m, tuple);
}

/* ---- frames ---- */

static inline void frame_next(frame *dst, const frame *src) {
    memcpy(dst, src, sizeof(frame) + src->nslots * sizeof(term));
    dst->copy = NULL;
    dst->lit = src->lit + 1;
}

/* The arena copy of f and its callers, for a consumer to resume later. */
static frame *capture(engine *e, frame *f) {
    if (f->copy != NULL) return f->copy;
    size_t bytes = sizeof(frame) + f->nslots * sizeof(term);
    frame *h = arena_take(e->arena, bytes);
    memcpy(h, f, bytes);
    for (uint32_t i = 0; i < h->nslots; i++) {
        if (is_compound(h->env[i])) h->env[i] = keep(&e->th, e->arena, h->env[i]);
    }
    h->parent = f->parent ? capture(e, f->parent) : NULL;
    h->copy = h;
    f->copy = h;
    return h;
}

/* ---- the completion stack and the worklist ---- */

static void push_completion(engine *e, sgframe *s) {
    if (e->depth == e->cap) e->stack = grow_array(e->stack, &e->cap, e->depth + 1, sizeof *e->stack);
    s->dfn = s->lowlink = e->depth;
    s->work_base = e->work_len;
    s->on_stack = true;
    e->stack[e->depth++] = s;
}

static void queue(engine *e, sgframe *s) {
    if (s->queued) return;
    if (e->work_len == e->work_cap) {
        e->work = grow_array(e->work, &e->work_cap, e->work_len + 1, sizeof *e->work);
    }
    s->queued = true;
    e->work[e->work_len++] = s;
}

static inline void add_answer(engine *e, sgframe *gen, const term *tuple) {
    uint32_t ntokens;
    const term *tokens = flatten(&e->th, tuple, gen->nvars, &ntokens);
    if (table_add_answer(e->ts, &e->counts, gen, tokens, ntokens) && gen->consumers != NULL) {
        queue(e, gen);
    }
}

static inline void lower(sgframe *gen, uint32_t link) {
    if (link < gen->lowlink) gen->lowlink = link;
}

/* ---- indexes ---- */

/* The numbers of the clauses that may match a call, in order: the merge of
 * up to three lists of an index (a key's own, those of a compound's functor,
 * those that match every key), which share no number. */
typedef struct index_walk {
    const uint32_t *list[3];
    uint32_t n[3], at[3];
    uint32_t nlists;
} index_walk;

/* The rows (or clauses) an index lists for key itself; false if none. */
static inline bool index_rows(const arg_index *ix, term key, const uint32_t **list, uint32_t *n) {
    for (uint32_t s = key_slot(key, ix->mask); ix->keys[s] != UNBOUND; s = (s + 1) & ix->mask) {
        if (ix->keys[s] == key) {
            *list = ix->numbers + ix->start[s];
            *n = ix->count[s];
            return true;
        }
    }
    return false;
}

static void walk_add(index_walk *w, const uint32_t *list, uint32_t n) {
    if (n == 0) return;
    w->list[w->nlists] = list;
    w->n[w->nlists] = n;
    w->at[w->nlists++] = 0;
}

static void walk_add_key(index_walk *w, const arg_index *ix, term key) {
    const uint32_t *list;
    uint32_t n;
    if (index_rows(ix, key, &list, &n)) walk_add(w, list, n);
}

/* The clauses of p whose first argument may match `first` (not a variable),
 * whose index_key is key; false if none. */
static bool first_arg_walk(const pred *p, term first, term key, index_walk *w) {
    w->nlists = 0;
    if (!p->ground_keys || !is_compound(first)) {
        walk_add_key(w, &p->clause_index, key);
    } else if (is_ground(first)) {
        /* Ground compounds equal to it, and compounds of its functor with variables. */
        walk_add_key(w, &p->clause_index, ground_compound_key(first));
        walk_add_key(w, &p->clause_index, key);
    } else {
        walk_add_key(w, &p->functor_index, key);
    }
    walk_add(w, p->clause_index.always, p->clause_index.n_always);
    return w->nlists > 0;
}

static inline bool index_next(index_walk *w, uint32_t *out) {
    uint32_t best = 3;
    for (uint32_t i = 0; i < w->nlists; i++) {
        if (w->at[i] < w->n[i] &&
            (best == 3 || w->list[i][w->at[i]] < w->list[best][w->at[best]])) {
            best = i;
        }
    }
    if (best == 3) return false;
    *out = w->list[best][w->at[best]++];
    return true;
}

/* ---- answers to callers ---- */

/* Whether f's literal is the last of a generator's clause and every variable
 * of the generator's call is ground already or one of the literal's
 * variables (slots in roots): then the plan says how each solution of the
 * literal is an answer (arrays of f's call variables, from the caller). */
static bool make_plan(const frame *f, const uint32_t *roots, uint32_t nroots, direct_plan *plan) {
    if (f->parent != NULL || f->gen == NULL || f->gen == &negation_goal ||
        f->lit + 1 != f->cl->nbody) {
        return false;
    }
    uint32_t nv = f->cl->nvars;
    plan->n = f->ncall;
    for (uint32_t j = 0; j < plan->n; j++) {
        term t = deref(f->env, make_ref(nv + j));
        plan->fixed[j] = t;
        plan->from[j] = -1;
        if (is_ground(t)) continue;
        if (!is_ref(t)) return false; /* a compound with variables */
        for (uint32_t k = 0; k < nroots && plan->from[j] < 0; k++) {
            if (roots[k] == ref_slot(t)) plan->from[j] = (int32_t)k;
        }
        if (plan->from[j] < 0) return false; /* stays unbound: not a ground answer */
    }
    return true;
}

/* The answer a plan makes of a solution (values of the literal's variables). */
static inline void plan_answer(engine *e, sgframe *gen, const direct_plan *plan,
                               const term *values) {
    term out[plan->n + 1];
    for (uint32_t j = 0; j < plan->n; j++) {
        out[j] = plan->from[j] < 0 ? plan->fixed[j] : values[plan->from[j]];
    }
    add_answer(e, gen, out);
}

static inline bool all_ground(const term *tuple, uint32_t n) {
    for (uint32_t j = 0; j < n; j++) {
        if (!is_ground(tuple[j])) return false;
    }
    return true;
}

/* Continues f after its call with one solution (canonical, nv variables). */
static void continue_with(engine *e, const frame *f, const uint32_t *roots, uint32_t m,
                          const term *tuple, uint32_t nv) {
    term buf[FRAME_WORDS(f->nslots + nv)];
    frame *child = (frame *)buf;
    frame_next(child, f);
    bind_tuple(e, child, roots, m, tuple, nv);
    run(e, child);
}

/* The arity of the facts literal after f's, or 0. */
static uint32_t next_facts_arity(const frame *f) {
    if (f->lit + 1 >= f->cl->nbody || f->cl->body[f->lit + 1]->kind != L_FACTS) return 0;
    return f->cl->body[f->lit + 1]->p->arity;
}

/* Whether f's call (its m variables in roots) is followed by a call of
 * facts that ends a generator's clause, its arguments and the generator's
 * call variables each a constant, an answer term of the call or a new
 * variable of the facts: then j says how (arrays from the caller: arg of
 * the facts' arity, first_at and ans of f's call variables). */
static bool make_join(const frame *f, const uint32_t *roots, uint32_t m, fact_join *j) {
    if (f->parent != NULL || f->gen == NULL || f->gen == &negation_goal ||
        f->lit + 2 != f->cl->nbody || f->cl->body[f->lit + 1]->kind != L_FACTS) {
        return false;
    }
    const literal *l = f->cl->body[f->lit + 1];
    j->p = l->p;
    j->nout = 0;
    j->nans = f->ncall;
    uint32_t out_slot[l->p->arity + 1];
    /* A term of f as the join sees it: a constant, REF(answer term), VAR(new). */
    for (uint32_t pass = 0; pass < 2; pass++) {
        uint32_t n = pass == 0 ? l->p->arity : f->ncall;
        for (uint32_t i = 0; i < n; i++) {
            term t = deref(f->env, pass == 0 ? l->args[i] : make_ref(f->cl->nvars + i));
            term *to = pass == 0 ? &j->arg[i] : &j->ans[i];
            if (is_const(t) || (pass == 1 && is_ground(t))) {
                *to = t;
                continue;
            }
            if (!is_ref(t)) return false; /* a compound with variables */
            uint32_t k = 0;
            while (k < m && roots[k] != ref_slot(t)) k++;
            if (k < m) {
                *to = make_ref(k);
                continue;
            }
            for (k = 0; k < j->nout && out_slot[k] != ref_slot(t); k++) continue;
            if (k == j->nout) {
                if (pass == 1) return false; /* stays unbound: not a ground answer */
                out_slot[k] = ref_slot(t);
                j->first_at[j->nout++] = i;
            }
            *to = make_var(k);
        }
    }
    return true;
}

/* The generator's answers that one (ground) answer of the call makes
 * through the facts of join j. */
static void join_answer(engine *e, const fact_join *j, sgframe *gen, const term *tuple) {
    const pred *p = j->p;
    uint32_t a = p->arity;
    term args[a + 1];
    int indexed = -1;
    for (uint32_t i = 0; i < a; i++) {
        term t = j->arg[i];
        if (is_ref(t)) t = tuple[ref_slot(t)];
        if (is_compound(t)) return; /* rows hold constants only */
        if (indexed < 0 && is_const(t)) indexed = (int)i;
        args[i] = t;
    }
    const uint32_t *listed = NULL;
    uint32_t n = p->nrows;
    if (indexed >= 0 && !index_rows(&p->row_index[indexed], args[indexed], &listed, &n)) return;
    term out[j->nout + 1], answer[j->nans + 1];
    for (uint32_t x = 0; x < n; x++) {
        const term *row = p->rows + (size_t)(listed ? listed[x] : x) * a;
        for (uint32_t k = 0; k < j->nout; k++) out[k] = row[j->first_at[k]];
        bool match = true;
        for (uint32_t i = 0; i < a && match; i++) {
            match = row[i] == (is_var(args[i]) ? out[var_index(args[i])] : args[i]);
        }
        if (!match) continue;
        for (uint32_t k = 0; k < j->nans; k++) {
            term t = j->ans[k];
            answer[k] = is_ref(t) ? tuple[ref_slot(t)] : is_var(t) ? out[var_index(t)] : t;
        }
        add_answer(e, gen, answer);
    }
}

/* Continues f after its call with each answer of a complete table. */
static void consume_complete(engine *e, frame *f, const uint32_t *roots, uint32_t m,
                             const answers *ans) {
    if (f->parent == NULL && f->gen == NULL && f->lit + 1 == f->cl->nbody && e->emit == NULL) {
        /* The query's last call, answers only counted: one solution each. */
        e->solutions += atomic_load_explicit(&ans->count, memory_order_acquire);
        return;
    }
    term tuple[m + 1];
    int32_t from[f->ncall + 1];
    term fixed[f->ncall + 1];
    direct_plan plan = {0, from, fixed};
    bool direct = make_plan(f, roots, m, &plan);
    uint32_t facts_arity = next_facts_arity(f);
    term join_arg[facts_arity + 1], join_ans[f->ncall + 1];
    uint32_t first_at[facts_arity + 1];
    fact_join join = {NULL, 0, 0, join_arg, first_at, join_ans};
    bool joins = !direct && make_join(f, roots, m, &join);
    for (tnode *a = answer_next(ans, NULL); a != NULL; a = answer_next(ans, a)) {
        hh_arena_mark mark = heap_mark(&e->th);
        uint32_t nv = read_answer(e, a, m, tuple);
        if (direct && all_ground(tuple, m)) plan_answer(e, f->gen, &plan, tuple);
        else if (joins && all_ground(tuple, m)) join_answer(e, &join, f->gen, tuple);
        else continue_with(e, f, roots, m, tuple, nv);
        heap_release(&e->th, mark);
    }
}

static void resume(engine *e, const consumer *c, const tnode *answer) {
    hh_arena_mark mark = heap_mark(&e->th);
    term tuple[c->nroots + 1];
    uint32_t nv = read_answer(e, answer, c->nroots, tuple);
    if (c->direct && all_ground(tuple, c->nroots)) plan_answer(e, c->k->gen, &c->plan, tuple);
    else if (c->joins && all_ground(tuple, c->nroots)) join_answer(e, &c->join, c->k->gen, tuple);
    else continue_with(e, c->k, c->roots, c->nroots, tuple, nv);
    heap_release(&e->th, mark);
}

/* Gives the consumer every answer it has not taken yet. */
static void drain(engine *e, consumer *c) {
    for (;;) {
        tnode *a = answer_next(c->of->ans, c->cursor);
        if (a == NULL) return;
        c->cursor = a;
        c->taken++;
        resume(e, c, a);
    }
}

static bool caught_up(const sgframe *s, uint64_t count) {
    for (const consumer *c = s->consumers; c != NULL; c = c->next) {
        if (c->taken < count) return false;
    }
    return true;
}

/* Runs the leader's component to its fixpoint; completes it unless it turns
 * out to depend on an older subgoal. */
static void fixpoint(engine *e, sgframe *leader) {
    uint32_t d = leader->dfn;
    for (;;) {
        while (e->work_len > leader->work_base) {
            sgframe *t = e->work[--e->work_len];
            t->queued = false;
            if (!t->on_stack) continue;
            for (consumer *c = t->consumers; c != NULL; c = c->next) drain(e, c);
        }
        /* Every consumer caught up?  With answers shared between threads
         * (FS), each count must also hold still across the check: then at
         * the check's end every consumer had taken every answer at once.
         * A subgoal without consumers here feeds no derivation of this
         * component: its answers are all there once its clauses have run,
         * whatever another thread still inserts (it can only find them). */
        bool settled = true;
        for (uint32_t i = d; i < e->depth && settled; i++) {
            sgframe *t = e->stack[i];
            if (t->consumers == NULL) continue;
            t->checked = atomic_load_explicit(&t->ans->count, memory_order_acquire);
            if (!caught_up(t, t->checked)) {
                queue(e, t);
                settled = false;
            }
        }
        for (uint32_t i = d; i < e->depth && settled && e->shared_answers; i++) {
            sgframe *t = e->stack[i];
            if (t->consumers == NULL) continue;
            if (atomic_load_explicit(&t->ans->count, memory_order_acquire) != t->checked) {
                queue(e, t);
                settled = false;
            }
        }
        if (settled) break;
    }
    uint32_t low = leader->lowlink;
    for (uint32_t i = d; i < e->depth; i++) {
        if (e->stack[i]->lowlink < low) low = e->stack[i]->lowlink;
    }
    if (low < d) {
        leader->lowlink = low;
        return;
    }
    for (uint32_t i = d; i < e->depth; i++) {
        sgframe *t = e->stack[i];
        answers_set_complete(t->ans);
        t->on_stack = false;
        t->consumers = NULL;
    }
    if (e->shared_answers) table_completed(e->ts);
    e->depth = d;
    if (d == 0) hh_arena_reset(e->arena);
}

/* ---- calls ---- */

/* A predicate of ground facts: rows matched against the call directly; as
 * the last literal of a generator's clause, each matching row is an answer. */
static void call_facts(engine *e, frame *f, const literal *l) {
    const pred *p = l->p;
    uint32_t a = p->arity, m = 0;
    term cargs[a + 1];
    uint32_t roots[a + 1], var_of[a + 1], first_at[a + 1];
    int indexed = -1;
    for (uint32_t i = 0; i < a; i++) {
        cargs[i] = deref(f->env, l->args[i]);
        if (is_const(cargs[i])) {
            if (indexed < 0) indexed = (int)i;
            continue;
        }
        if (is_compound(cargs[i])) return; /* rows hold constants only */
        uint32_t k = 0;
        while (k < m && roots[k] != ref_slot(cargs[i])) k++;
        if (k == m) {
            roots[m] = ref_slot(cargs[i]);
            first_at[m++] = i;
        }
        var_of[i] = k;
    }
    const uint32_t *listed = NULL;
    uint32_t n = p->nrows;
    if (indexed >= 0 && !index_rows(&p->row_index[indexed], cargs[indexed], &listed, &n)) return;
    int32_t from[f->ncall + 1];
    term fixed[f->ncall + 1];
    direct_plan plan = {0, from, fixed};
    bool direct = make_plan(f, roots, m, &plan);
    term values[m + 1];
    for (uint32_t x = 0; x < n; x++) {
        const term *row = p->rows + (size_t)(listed ? listed[x] : x) * a;
        bool match = true;
        for (uint32_t k = 0; k < m; k++) values[k] = row[first_at[k]];
        for (uint32_t i = 0; i < a && match; i++) {
            match = row[i] == (is_const(cargs[i]) ? cargs[i] : values[var_of[i]]);
        }
        if (!match) continue;
        if (direct) plan_answer(e, f->gen, &plan, values);
        else continue_with(e, f, roots, m, values, 0);
    }
}

/* Starts clause c for a call with pattern tok (m variables): its frame's
 * head unified with the call, then its body. */
static void start_clause(engine *e, const clause *c, const term *tok, uint32_t m, frame *parent,
                         sgframe *gen) {
    uint32_t nslots = c->nvars + m;
    term buf[FRAME_WORDS(nslots)];
    frame *g = (frame *)buf;
    g->cl = c;
    g->parent = parent;
    g->gen = gen;
    g->copy = NULL;
    g->lit = 0;
    g->ncall = m;
    g->nslots = nslots;
    memset(g->env, 0, nslots * sizeof(term));
    hh_arena_mark mark = heap_mark(&e->th);
    for (uint32_t i = 0; i < c->p->arity; i++) {
        term p = tok[i], h = c->head[i];
        bool ok;
        if (is_var(p)) ok = unify(&e->th, g->env, h, make_ref(c->nvars + var_index(p)));
        else ok = unify_call(&e->th, g->env, &g->nslots, c->nvars, m, h, p);
        if (!ok) {
            heap_release(&e->th, mark);
            return;
        }
    }
    run(e, g);
    heap_release(&e->th, mark);
}

/* Runs every clause of p that may match the pattern. */
static void each_clause(engine *e, const pred *p, const term *tok, uint32_t m, frame *parent,
                        sgframe *gen) {
    term key = p->arity > 0 ? index_key(tok[0]) : UNBOUND;
    if (key != UNBOUND) {
        index_walk w;
        uint32_t c;
        if (!first_arg_walk(p, tok[0], key, &w)) return;
        while (index_next(&w, &c)) start_clause(e, p->clauses[c], tok, m, parent, gen);
        return;
    }
    for (uint32_t c = 0; c < p->nclauses; c++) start_clause(e, p->clauses[c], tok, m, parent, gen);
}

static void call_rules(engine *e, frame *f, const literal *l) {
    term tok[l->p->arity + 1];
    uint32_t roots[f->nslots + 1];
    uint32_t m = make_pattern(&e->th, f->env, l->args, l->p->arity, tok, roots);
    each_clause(e, l->p, tok, m, f, f->gen);
}

/* Evaluates a new subgoal's clauses: every answer they give goes to s. */
static void generate(engine *e, sgframe *s, const term *tok, uint32_t m) {
    const pred *p = s->p;
    if (!p->facts_only) {
        each_clause(e, p, tok, m, NULL, s);
        return;
    }
    term tuple[p->arity + 1];
    for (uint32_t r = 0; r < p->nrows; r++) {
        const term *row = p->rows + (size_t)r * p->arity;
        bool match = true;
        uint32_t bound = 0;
        for (uint32_t i = 0; i < p->arity && match; i++) {
            if (is_const(tok[i])) {
                match = row[i] == tok[i];
            } else if (!is_var(tok[i])) {
                match = false; /* a compound: rows hold constants only */
            } else if (var_index(tok[i]) == bound) {
                tuple[bound++] = row[i];
            } else {
                match = tuple[var_index(tok[i])] == row[i];
            }
        }
        if (match) add_answer(e, s, tuple);
    }
    (void)m;
}

static void call_tabled(engine *e, frame *f, const literal *l) {
    term tok[l->p->arity + 1];
    uint32_t roots[f->nslots + 1];
    uint32_t m = make_pattern(&e->th, f->env, l->args, l->p->arity, tok, roots);
    uint32_t ntokens;
    const term *tokens = flatten(&e->th, tok, l->p->arity, &ntokens);
    sgframe *s;
    answers *ans;
    tnode *leaf = table_subgoal(e->ts, e->thread, &e->counts, l->p, tokens, ntokens, m, &s, &ans);
    if (ans != NULL && answers_complete(ans)) {
        consume_complete(e, f, roots, m, ans);
        return;
    }
    /* FS: another thread is evaluating the subgoal; wait for its answers
     * rather than derive them all again beside it. */
    if (s == NULL && e->shared_answers && table_wait_complete(e->ts, &e->counts, leaf)) {
        consume_complete(e, f, roots, m, ans);
        return;
    }
    if (s == NULL) {
        s = table_new_frame(e->ts, e->thread, &e->counts, leaf, l->p, m);
        push_completion(e, s);
        generate(e, s, tok, m);
        if (s->lowlink == s->dfn) fixpoint(e, s);
        if (answers_complete(s->ans)) {
            consume_complete(e, f, roots, m, s->ans);
            return;
        }
        if (f->gen) lower(f->gen, s->lowlink);
    } else if (f->gen) {
        lower(f->gen, s->dfn);
    }
    if (f->gen == NULL) stop_evaluation("internal error: an incomplete table at the top level");
    consumer *c = arena_take(e->arena, sizeof *c + m * sizeof(uint32_t));
    c->of = s;
    c->cursor = NULL;
    c->taken = 0;
    c->k = capture(e, f);
    c->nroots = m;
    memcpy(c->roots, roots, m * sizeof(uint32_t));
    uint32_t nout = f->ncall;
    c->plan.from = arena_take(e->arena, (nout + 1) * sizeof(int32_t));
    c->plan.fixed = arena_take(e->arena, (nout + 1) * sizeof(term));
    c->direct = make_plan(f, roots, m, &c->plan);
    for (uint32_t j = 0; c->direct && j < nout; j++) {
        c->plan.fixed[j] = keep(&e->th, e->arena, c->plan.fixed[j]);
    }
    uint32_t facts_arity = next_facts_arity(f);
    c->join.arg = arena_take(e->arena, (facts_arity + 1) * sizeof(term));
    c->join.first_at = arena_take(e->arena, (facts_arity + 1) * sizeof(uint32_t));
    c->join.ans = arena_take(e->arena, (nout + 1) * sizeof(term));
    c->joins = !c->direct && make_join(f, roots, m, &c->join);
    for (uint32_t j = 0; c->joins && j < nout; j++) {
        c->join.ans[j] = keep(&e->th, e->arena, c->join.ans[j]);
    }
    c->next = s->consumers;
    s->consumers = c;
    drain(e, c);
}

/* ---- built-ins ---- */

/* \+ G: G is the body of p's one clause, p's arguments G's variables.
 * True when p has no solution; the first one ends the search. */
static bool negation_holds(engine *e, frame *f, const literal *l) {
    term tok[l->p->arity + 1];
    uint32_t roots[f->nslots + 1];
    uint32_t m = make_pattern(&e->th, f->env, l->args, l->p->arity, tok, roots);
    jmp_buf here;
    jmp_buf *outer = e->negation_exit;
    hh_arena_mark mark = heap_mark(&e->th);
    e->negation_exit = &here;
    bool found;
    if (setjmp(here) == 0) {
        each_clause(e, l->p, tok, m, NULL, &negation_goal);
        found = false;
    } else {
        found = true;
    }
    e->negation_exit = outer;
    heap_release(&e->th, mark);
    return !found;
}

/* Runs a built-in in f: false if it fails. */
static bool builtin(engine *e, frame *f, const literal *l) {
    if (l->kind == L_FAIL) return false;
    if (l->kind == L_NOT) return negation_holds(e, f, l);
    term a = l->args[0], b = l->args[1];
    switch (l->kind) {
    case L_UNIFY: return unify(&e->th, f->env, a, b);
    case L_NOT_UNIFY: {
        term scratch[f->nslots + 1];
        memcpy(scratch, f->env, f->nslots * sizeof(term));
        return !unify(&e->th, scratch, a, b);
    }
    case L_IDENTICAL: return match(&e->th, f->env, a, b, false);
    case L_NOT_IDENTICAL: return !match(&e->th, f->env, a, b, false);
    case L_IS: return unify(&e->th, f->env, a, make_int(eval(&e->ev, f->env, b, l)));
    case L_LT: return eval(&e->ev, f->env, a, l) < eval(&e->ev, f->env, b, l);
    case L_GT: return eval(&e->ev, f->env, a, l) > eval(&e->ev, f->env, b, l);
    case L_LE: return eval(&e->ev, f->env, a, l) <= eval(&e->ev, f->env, b, l);
    case L_GE: return eval(&e->ev, f->env, a, l) >= eval(&e->ev, f->env, b, l);
    case L_ARITH_EQ: return eval(&e->ev, f->env, a, l) == eval(&e->ev, f->env, b, l);
    case L_ARITH_NE: return eval(&e->ev, f->env, a, l) != eval(&e->ev, f->env, b, l);
    default: stop_evaluation("internal error: a call run as a built-in");
    }
}

/* ---- the derivation ---- */

/* Hands a solution of the query to the caller's function (kept out of
 * finish, whose stack frame every derivation pays for). */
static __attribute__((noinline)) void emit_solution(engine *e, const frame *f) {
    term values[e->query_vars + 1];
    uint32_t seen[f->nslots + 1];
    canon cv = {seen, 0};
    for (uint32_t i = 0; i < e->query_vars; i++) {
        term t = deref(f->env, make_ref(i));
        values[i] = is_const(t) ? t : is_ref(t) ? canon_var(&cv, ref_slot(t))
                                                 : canon_term(&e->th, f->env, NULL, t, &cv);
    }
    e->emit(e->emit_ctx, values, e->query_vars);
}

/* The variables of p's call (the literal it is at), in the order
 * make_pattern numbers them, into roots (room for p's slots); their number. */
static inline uint32_t call_roots(engine *e, const frame *p, uint32_t *roots) {
    const literal *l = p->cl->body[p->lit];
    canon cv = {roots, 0};
    for (uint32_t i = 0; i < l->p->arity; i++) {
        term t = deref(p->env, l->args[i]);
        if (is_ref(t)) canon_var(&cv, ref_slot(t));
        else if (!is_ground(t)) collect_vars(&e->th, p->env, t, &cv);
    }
    return cv.n;
}

/* The clause's body is done: a solution for its caller, an answer for its
 * generator, or a solution of the query.  A caller whose call was its last
 * literal is finished at once, while the solution is ground: its own
 * solution is read through the one it received, without a frame (a
 * recursion returns in a loop, as a last call would). */
static void finish(engine *e, frame *f) {
    if (f->parent == NULL && f->gen == &negation_goal) longjmp(*e->negation_exit, 1);
    term first[f->ncall + 1];
    term *tuple = first;
    uint32_t nv = solution_tuple(e, f, NULL, tuple);
    if (f->parent == NULL) {
        if (f->gen != NULL) {
            add_answer(e, f->gen, tuple);
            return;
        }
        e->solutions++;
        if (e->emit) emit_solution(e, f);
        return;
    }
    frame *p = f->parent;
    while (nv == 0 && p->lit + 1 == p->cl->nbody && (p->parent != NULL || p->gen != NULL)) {
        if (p->parent == NULL && p->gen == &negation_goal) longjmp(*e->negation_exit, 1);
        uint32_t roots[p->nslots + 1];
        overlay ov = {roots, call_roots(e, p, roots), tuple};
        tuple = arena_take(e->th.heap, (p->ncall + 1) * sizeof(term));
        nv = solution_tuple(e, p, &ov, tuple);
        if (p->parent == NULL) {
            add_answer(e, p->gen, tuple);
            return;
        }
        p = p->parent;
    }
    uint32_t roots[p->nslots + 1];
    uint32_t m = call_roots(e, p, roots);
    continue_with(e, p, roots, m, tuple, nv);
}

static void run(engine *e, frame *f) {
    check_stack(&e->th);
    hh_arena_mark mark = heap_mark(&e->th);
    for (;;) {
        if (f->lit == f->cl->nbody) {
            finish(e, f);
            break;
        }
        const literal *l = f->cl->body[f->lit];
        if (l->kind == L_TABLED) {
            call_tabled(e, f, l);
            break;
        }
        if (l->kind == L_FACTS) {
            call_facts(e, f, l);
            break;
        }
        if (l->kind == L_RULES) {
            call_rules(e, f, l);
            break;
        }
        if (!builtin(e, f, l)) break;
        /* Continued in place: f is this call's own (any copy kept of it
         * holds the literal before). */
        f->lit++;
        f->copy = NULL;
    }
    heap_release(&e->th, mark);
}

/* ---- the engine ---- */

bool engine_memory_create(engine_memory *m) {
    m->heap = hh_arena_create();
    m->consumers = hh_arena_create();
    return m->heap != NULL && m->consumers != NULL;
}

void engine_memory_destroy(engine_memory *m) {
    hh_arena_destroy(m->heap);
    hh_arena_destroy(m->consumers);
}

engine *engine_new(const program *prog, tablespace *ts, unsigned thread, const char *stack_floor,
                   engine_memory *memory) {
    engine *e = calloc(1, sizeof *e);
    if (e == NULL) return NULL;
    e->prog = prog;
    e->ts = ts;
    e->thread = thread;
    e->shared_answers = tablespace_shares_answers(ts);
    e->counts.thread = thread;
    e->ev.prog = prog;
    e->ev.th = &e->th;
    /* What an earlier engine left in them is forgotten; their chunks serve again. */
    hh_arena_reset(memory->heap);
    hh_arena_reset(memory->consumers);
    e->arena = memory->consumers;
    term_heap_init(&e->th, stack_floor, memory->heap);
    return e;
}

void engine_free(engine *e) {
    if (e == NULL) return;
    term_heap_free(&e->th);
    free(e->stack);
    free(e->work);
    free(e);
}

void engine_query(engine *e, const query *q, solution_fn emit, void *ctx) {
    clause top = {0};
    literal *body[1] = {q->goal};
    top.p = q->goal->p;
    top.nvars = q->nvars;
    top.nbody = 1;
    top.body = body;
    e->emit = emit;
    e->emit_ctx = ctx;
    e->query_vars = q->nvars;
    e->solutions = 0;
    term buf[FRAME_WORDS(q->nvars)];
    frame *f = (frame *)buf;
    f->cl = &top;
    f->parent = NULL;
    f->gen = NULL;
    f->copy = NULL;
    f->lit = 0;
    f->ncall = 0;
    f->nslots = q->nvars;
    memset(f->env, 0, q->nvars * sizeof(term));
    run(e, f);
}

uint64_t engine_solutions(const engine *e) { return e->solutions; }
table_thread *engine_counts(engine *e) { return &e->counts; }
