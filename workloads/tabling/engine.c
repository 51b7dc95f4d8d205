/* SLG resolution with local scheduling, for function-free programs.
 *
 * A derivation is a chain of frames: a clause, the literal it is at, and its
 * environment (a flat array of slots, since terms are constants or
 * variables).  Frames are never changed once made: each solution of a literal
 * continues in a fresh copy with the new bindings, so a frame can be kept as
 * a continuation.  The body's end returns the solution to the caller's frame
 * (a non-tabled call) or adds it as an answer to the generator the chain
 * belongs to.
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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct frame {
    const clause *cl;
    struct frame *parent; /* the caller, at its call literal; NULL: generator clause or query */
    sgframe *gen;         /* the subgoal this derivation makes answers for; NULL: the query */
    struct frame *copy;   /* once captured: the heap copy (itself, for a heap frame) */
    uint32_t lit;         /* the literal to run next (for a caller: the call) */
    uint32_t nslots;      /* clause variables, then the call's variables */
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

struct consumer {
    sgframe *of;       /* the subgoal it takes answers from */
    tnode *cursor;     /* the last answer taken; NULL: none yet */
    uint64_t taken;
    frame *k;          /* the continuation: the caller's frame at the call */
    consumer *next;    /* the other consumers of `of` */
    bool direct;       /* plan holds: each answer taken is an answer of k->gen */
    direct_plan plan;
    uint32_t nroots;
    uint32_t roots[];  /* the call's variables: slots of k's environment */
};

typedef struct chunk {
    struct chunk *next;
    size_t size;
    _Alignas(16) char data[];
} chunk;

struct engine {
    const program *prog;
    tablespace *ts;
    unsigned thread;
    bool shared_answers; /* FS: other threads add answers to the same tables */
    table_thread counts;
    const char *stack_floor;
    /* The completion stack: incomplete subgoals, oldest first. */
    sgframe **stack;
    uint32_t depth, cap;
    /* Subgoals with answers their consumers have not taken. */
    sgframe **work;
    uint32_t work_len, work_cap;
    /* Consumers and captured frames, freed when the completion stack empties. */
    chunk *chunks, *current;
    char *at, *end;
    /* The query */
    uint64_t solutions;
    uint32_t query_vars;
    solution_fn emit;
    void *emit_ctx;
};

#define FRAME_WORDS(n) \
    ((sizeof(frame) + sizeof(term) * (size_t)(n) + sizeof(term) - 1) / sizeof(term))

static void run(engine *e, frame *f);

static _Noreturn void fatal(const char *message) {
    fprintf(stderr, "hhtab: %s\n", message);
    fflush(stderr);
    _exit(3);
}

static void check_stack(const engine *e) {
    if ((const char *)__builtin_frame_address(0) < e->stack_floor) {
        fatal("evaluation nested too deeply: a chain of calls, each waiting for the next, used up "
              "the thread's stack (deep recursion through non-tabled predicates, or a long chain "
              "of new tabled calls)");
    }
}

/* ---- the arena of consumers and captured frames ---- */

static void *arena_alloc(engine *e, size_t size) {
    size = (size + 15) & ~(size_t)15;
    if (e->at == NULL || (size_t)(e->end - e->at) < size) {
        chunk *c = e->current ? e->current->next : e->chunks;
        while (c != NULL && c->size < size) c = c->next;
        if (c == NULL) {
            size_t bytes = size > ((size_t)1 << 20) ? size : (size_t)1 << 20;
            c = malloc(sizeof(chunk) + bytes);
            if (c == NULL) table_out_of_memory();
            c->size = bytes;
            /* Appended after the current chunk: the chunks form one list. */
            if (e->current) {
                c->next = e->current->next;
                e->current->next = c;
            } else {
                c->next = e->chunks;
                e->chunks = c;
            }
        }
        e->current = c;
        e->at = c->data;
        e->end = c->data + c->size;
    }
    void *p = e->at;
    e->at += size;
    return p;
}

static void arena_reset(engine *e) {
    e->current = NULL;
    e->at = e->end = NULL;
}

/* ---- environments ---- */

static inline term deref(const term *env, term t) {
    while (TERM_TAG(t) == TAG_REF) {
        term v = env[ref_slot(t)];
        if (v == UNBOUND) return t;
        t = v;
    }
    return t;
}

/* Unifies two terms (constants or REF) in env. */
static inline bool unify(term *env, term a, term b) {
    a = deref(env, a);
    b = deref(env, b);
    if (a == b) return true;
    if (TERM_TAG(a) == TAG_REF) {
        if (TERM_TAG(b) == TAG_REF && ref_slot(b) > ref_slot(a)) env[ref_slot(b)] = a;
        else env[ref_slot(a)] = b;
        return true;
    }
    if (TERM_TAG(b) == TAG_REF) {
        env[ref_slot(b)] = a;
        return true;
    }
    return false;
}

/* A dereferenced term as a trie token: a constant as it is, an unbound slot
 * as VAR(k), k its place among the distinct slots met so far (in seen). */
static inline term as_token(term t, uint32_t *seen, uint32_t *nseen) {
    if (is_const(t)) return t;
    uint32_t k = 0;
    while (k < *nseen && seen[k] != ref_slot(t)) k++;
    if (k == *nseen) seen[(*nseen)++] = ref_slot(t);
    return make_var(k);
}

/* The call pattern of args under env: tok[i] a constant or VAR(j), roots[j]
 * the slot of the call's j-th distinct variable.  Returns their number. */
static inline uint32_t make_pattern(const term *env, const term *args, uint32_t arity, term *tok,
                                    uint32_t *roots) {
    uint32_t m = 0;
    for (uint32_t i = 0; i < arity; i++) tok[i] = as_token(deref(env, args[i]), roots, &m);
    return m;
}

/* Binds the call's variables (roots) to a solution's tokens; the solution's
 * variables, numbered by first occurrence, alias the slots they first meet. */
static inline void bind_tuple(term *env, const uint32_t *roots, uint32_t m, const term *tuple) {
    uint32_t first[m + 1];
    uint32_t fresh = 0;
    for (uint32_t j = 0; j < m; j++) {
        term tok = tuple[j];
        if (is_const(tok)) {
            env[roots[j]] = tok;
        } else if (var_index(tok) == fresh) {
            first[fresh++] = roots[j];
        } else {
            env[roots[j]] = make_ref(first[var_index(tok)]);
        }
    }
}

/* The solution of a finished clause for its call: the call's variables
 * (slots nvars..nslots-1), unbound ones renumbered by first occurrence. */
static inline uint32_t solution_tuple(const frame *f, term *tuple) {
    uint32_t nv = f->cl->nvars, m = f->nslots - nv, fresh = 0;
    uint32_t seen[m + 1];
    for (uint32_t j = 0; j < m; j++) {
        tuple[j] = as_token(deref(f->env, make_ref(nv + j)), seen, &fresh);
    }
    return m;
}

static inline void frame_next(frame *dst, const frame *src) {
    memcpy(dst, src, sizeof(frame) + src->nslots * sizeof(term));
    dst->copy = NULL;
    dst->lit = src->lit + 1;
}

/* The heap copy of f and its callers, for a consumer to resume later. */
static frame *capture(engine *e, frame *f) {
    if (f->copy != NULL) return f->copy;
    size_t bytes = sizeof(frame) + f->nslots * sizeof(term);
    frame *h = arena_alloc(e, bytes);
    memcpy(h, f, bytes);
    h->parent = f->parent ? capture(e, f->parent) : NULL;
    h->copy = h;
    f->copy = h;
    return h;
}

/* ---- the completion stack and the worklist ---- */

static void *grow(void *array, uint32_t *cap, size_t item) {
    uint32_t n = *cap ? *cap * 2 : 64;
    void *bigger = realloc(array, n * item);
    if (bigger == NULL) table_out_of_memory();
    *cap = n;
    return bigger;
}

static void push_completion(engine *e, sgframe *s) {
    if (e->depth == e->cap) e->stack = grow(e->stack, &e->cap, sizeof *e->stack);
    s->dfn = s->lowlink = e->depth;
    s->work_base = e->work_len;
    s->on_stack = true;
    e->stack[e->depth++] = s;
}

static void queue(engine *e, sgframe *s) {
    if (s->queued) return;
    if (e->work_len == e->work_cap) e->work = grow(e->work, &e->work_cap, sizeof *e->work);
    s->queued = true;
    e->work[e->work_len++] = s;
}

static void add_answer(engine *e, sgframe *gen, const term *tuple) {
    if (table_add_answer(e->ts, &e->counts, gen, tuple) && gen->consumers != NULL) queue(e, gen);
}

static inline void lower(sgframe *gen, uint32_t link) {
    if (link < gen->lowlink) gen->lowlink = link;
}

/* ---- answers to callers ---- */

/* Whether f's literal is the last of a generator's clause and every variable
 * of the generator's call is a constant already or one of the literal's
 * variables (slots in roots): then the plan says how each solution of the
 * literal is an answer (arrays of f's call variables, from the caller). */
static bool make_plan(const frame *f, const uint32_t *roots, uint32_t nroots, direct_plan *plan) {
    if (f->parent != NULL || f->gen == NULL || f->lit + 1 != f->cl->nbody) return false;
    uint32_t nv = f->cl->nvars;
    plan->n = f->nslots - nv;
    for (uint32_t j = 0; j < plan->n; j++) {
        term t = deref(f->env, make_ref(nv + j));
        plan->fixed[j] = t;
        plan->from[j] = -1;
        if (is_const(t)) continue;
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

static inline bool ground(const term *tuple, uint32_t n) {
    for (uint32_t j = 0; j < n; j++) {
        if (!is_const(tuple[j])) return false;
    }
    return true;
}

/* Continues f after its call with one solution (tokens for its variables). */
static void continue_with(engine *e, const frame *f, const uint32_t *roots, uint32_t m,
                          const term *tuple) {
    term buf[FRAME_WORDS(f->nslots)];
    frame *child = (frame *)buf;
    frame_next(child, f);
    bind_tuple(child->env, roots, m, tuple);
    run(e, child);
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
    uint32_t nout = f->nslots - f->cl->nvars + 1;
    int32_t from[nout];
    term fixed[nout];
    direct_plan plan = {0, from, fixed};
    bool direct = make_plan(f, roots, m, &plan);
    for (tnode *a = answer_next(ans, NULL); a != NULL; a = answer_next(ans, a)) {
        answer_tuple(a, m, tuple);
        if (direct && ground(tuple, m)) plan_answer(e, f->gen, &plan, tuple);
        else continue_with(e, f, roots, m, tuple);
    }
}

static void resume(engine *e, const consumer *c, const tnode *answer) {
    term tuple[c->nroots + 1];
    answer_tuple(answer, c->nroots, tuple);
    if (c->direct && ground(tuple, c->nroots)) plan_answer(e, c->k->gen, &c->plan, tuple);
    else continue_with(e, c->k, c->roots, c->nroots, tuple);
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
    if (d == 0) arena_reset(e);
}

/* ---- calls ---- */

/* The numbers of the items an index gives for key, in order: the key's own
 * merged with those that match every key.  *n is set; returns false if none. */
typedef struct index_walk {
    const uint32_t *a, *b;
    uint32_t na, nb, ia, ib;
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

static bool index_lookup(const arg_index *ix, term key, index_walk *w) {
    w->a = NULL;
    w->na = 0;
    index_rows(ix, key, &w->a, &w->na);
    w->b = ix->always;
    w->nb = ix->n_always;
    w->ia = w->ib = 0;
    return w->na + w->nb > 0;
}

static inline bool index_next(index_walk *w, uint32_t *out) {
    if (w->ia < w->na && (w->ib >= w->nb || w->a[w->ia] < w->b[w->ib])) {
        *out = w->a[w->ia++];
        return true;
    }
    if (w->ib < w->nb) {
        *out = w->b[w->ib++];
        return true;
    }
    return false;
}

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
    uint32_t nout = f->nslots - f->cl->nvars + 1;
    int32_t from[nout];
    term fixed[nout];
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
        else continue_with(e, f, roots, m, values);
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
    g->nslots = nslots;
    memset(g->env, 0, nslots * sizeof(term));
    for (uint32_t i = 0; i < c->p->arity; i++) {
        term x = is_const(tok[i]) ? tok[i] : make_ref(c->nvars + var_index(tok[i]));
        if (!unify(g->env, c->head[i], x)) return;
    }
    run(e, g);
}

/* Runs every clause of p that may match the pattern. */
static void each_clause(engine *e, const pred *p, const term *tok, uint32_t m, frame *parent,
                        sgframe *gen) {
    if (p->arity > 0 && is_const(tok[0])) {
        index_walk w;
        uint32_t c;
        if (!index_lookup(&p->clause_index, tok[0], &w)) return;
        while (index_next(&w, &c)) start_clause(e, p->clauses[c], tok, m, parent, gen);
        return;
    }
    for (uint32_t c = 0; c < p->nclauses; c++) start_clause(e, p->clauses[c], tok, m, parent, gen);
}

static void call_rules(engine *e, frame *f, const literal *l) {
    term tok[l->p->arity + 1];
    uint32_t roots[l->p->arity + 1];
    uint32_t m = make_pattern(f->env, l->args, l->p->arity, tok, roots);
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
    uint32_t roots[l->p->arity + 1];
    uint32_t m = make_pattern(f->env, l->args, l->p->arity, tok, roots);
    sgframe *s;
    answers *ans;
    tnode *leaf = table_subgoal(e->ts, e->thread, &e->counts, l->p, tok, m, &s, &ans);
    if (ans != NULL && answers_complete(ans)) {
        consume_complete(e, f, roots, m, ans);
        return;
    }
    /* FS: another thread is evaluating the subgoal; wait for its answers
     * rather than derive them all again beside it. */
    if (s == NULL && e->shared_answers && table_wait_complete(e->ts, e->thread, leaf)) {
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
    if (f->gen == NULL) fatal("internal error: an incomplete table at the top level");
    consumer *c = arena_alloc(e, sizeof *c + m * sizeof(uint32_t));
    c->of = s;
    c->cursor = NULL;
    c->taken = 0;
    c->k = capture(e, f);
    c->nroots = m;
    memcpy(c->roots, roots, m * sizeof(uint32_t));
    uint32_t nout = f->nslots - f->cl->nvars;
    c->plan.from = arena_alloc(e, (nout + 1) * sizeof(int32_t));
    c->plan.fixed = arena_alloc(e, (nout + 1) * sizeof(term));
    c->direct = make_plan(f, roots, m, &c->plan);
    c->next = s->consumers;
    s->consumers = c;
    drain(e, c);
}

/* Hands a solution of the query to the caller's function (kept out of
 * finish, whose stack frame every derivation pays for). */
static __attribute__((noinline)) void emit_solution(engine *e, const frame *f) {
    term values[e->query_vars + 1];
    uint32_t fresh = 0, seen[e->query_vars + 1];
    for (uint32_t i = 0; i < e->query_vars; i++) {
        values[i] = as_token(deref(f->env, make_ref(i)), seen, &fresh);
    }
    e->emit(e->emit_ctx, values, e->query_vars);
}

/* The clause's body is done: a solution for its caller, an answer for its
 * generator, or a solution of the query. */
static void finish(engine *e, frame *f) {
    term tuple[f->nslots - f->cl->nvars + 1];
    uint32_t m = solution_tuple(f, tuple);
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
    const literal *l = p->cl->body[p->lit];
    term tok[l->p->arity + 1];
    uint32_t roots[l->p->arity + 1];
    make_pattern(p->env, l->args, l->p->arity, tok, roots);
    term buf[FRAME_WORDS(p->nslots)];
    frame *child = (frame *)buf;
    frame_next(child, p);
    bind_tuple(child->env, roots, m, tuple);
    run(e, child);
}

static void run(engine *e, frame *f) {
    check_stack(e);
    if (f->lit == f->cl->nbody) {
        finish(e, f);
        return;
    }
    const literal *l = f->cl->body[f->lit];
    if (l->p->tabled) call_tabled(e, f, l);
    else if (l->p->facts_only) call_facts(e, f, l);
    else call_rules(e, f, l);
}

/* ---- the engine ---- */

engine *engine_new(const program *prog, tablespace *ts, unsigned thread, const char *stack_floor) {
    engine *e = calloc(1, sizeof *e);
    if (e == NULL) return NULL;
    e->prog = prog;
    e->ts = ts;
    e->thread = thread;
    e->shared_answers = tablespace_shares_answers(ts);
    e->counts.thread = thread;
    e->stack_floor = stack_floor;
    return e;
}

void engine_free(engine *e) {
    if (e == NULL) return;
    for (chunk *c = e->chunks; c != NULL;) {
        chunk *next = c->next;
        free(c);
        c = next;
    }
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
    f->nslots = q->nvars;
    memset(f->env, 0, q->nvars * sizeof(term));
    run(e, f);
}

uint64_t engine_solutions(const engine *e) { return e->solutions; }
table_thread *engine_counts(engine *e) { return &e->counts; }
