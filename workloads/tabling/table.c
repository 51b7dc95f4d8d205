/* The table space: the three designs' subgoal and answer tables on tries
 * (trie.c), the answer lists consumers walk, FS threads waiting for one
 * another's subgoals, abolishing and counting the tables, and the memory
 * behind them: one hugeheap pool per kind of object (--alloc pool: the
 * paper's one data type per page) or one malloc each (--alloc malloc).
 *
 * Writers take the parent node's lock in a subgoal trie (one writer per
 * parent node at a time: TLWL), the whole trie's in an answer trie (where
 * one thread inserts, but in FS where waiting for another thread could
 * deadlock). */
#include "table.h"

#include <linux/futex.h> /* FS threads wait for another's subgoal on a futex */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- memory ---- */

static inline void *table_obj_alloc(tablespace *ts, table_thread *c, int kind) {
    return object_alloc(&ts->mem, &c->bytes, kind);
}

static inline void table_obj_free(tablespace *ts, table_thread *c, int kind, void *p) {
    object_free(&ts->mem, &c->bytes, kind, p);
}

tablespace *tablespace_new(const program *prog, table_design design, table_alloc alloc,
                           unsigned threads) {
    /* Aligned: its futex words sit on cache lines of their own. */
    tablespace *ts = aligned_alloc(_Alignof(tablespace), sizeof *ts);
    if (ts == NULL) return NULL;
    memset(ts, 0, sizeof *ts);
    ts->prog = prog;
    ts->design = design;
    ts->threads = threads;
    ts->mem.pools = alloc == ALLOC_POOL;
    ts->shared_subgoals = design != DESIGN_NS && threads > 1;
    ts->shared_answers = design == DESIGN_FS && threads > 1;
    ts->mem.size[K_SG_NODE] = sizeof(tnode);
    ts->mem.size[K_ANS_NODE] = sizeof(tnode);
    ts->mem.size[K_FRAME] = sizeof(sgframe);
    ts->mem.size[K_ENTRY] = sizeof(sgentry) + threads * sizeof(sgframe *);
    ts->mem.size[K_BUCKET] = threads * sizeof(sgframe *);
    for (int i = 0; i < N_CTABLE_SIZES; i++) {
        ts->mem.size[K_CTABLE + i] = sizeof(ctable) + (size_t)(CTABLE_MIN << i) * sizeof(slot);
    }
    if (!object_memory_open(&ts->mem)) {
        tablespace_free(ts);
        return NULL;
    }
    size_t n = prog->ntabled ? prog->ntabled : 1;
    ts->shared_roots = calloc(n, sizeof *ts->shared_roots);
    ts->private_roots = calloc(n * threads, sizeof *ts->private_roots);
    ts->waits = aligned_alloc(64, threads * sizeof *ts->waits);
    if (!trie_space_init(&ts->tries, &ts->mem, threads) || !ts->shared_roots ||
        !ts->private_roots || !ts->waits) {
        tablespace_free(ts);
        return NULL;
    }
    memset(ts->waits, 0, threads * sizeof *ts->waits);
    for (unsigned t = 0; t < threads; t++) atomic_init(&ts->waits[t].waits_for, NOT_WAITING);
    return ts;
}

void tablespace_free(tablespace *ts) {
    if (ts == NULL) return;
    object_memory_close(&ts->mem);
    trie_space_free(&ts->tries);
    free(ts->shared_roots);
    free(ts->private_roots);
    free(ts->waits);
    free(ts);
}

bool tablespace_shares_answers(const tablespace *ts) { return ts->shared_answers; }

void table_memory(const tablespace *ts, table_memory_report *r) {
    r->pool_pages = object_memory_pages(&ts->mem);
}

void table_run_start(tablespace *ts) { trie_run_start(&ts->tries); }
void table_thread_done(tablespace *ts, unsigned thread) { trie_thread_done(&ts->tries, thread); }

/* ---- nodes, answers, subgoal leaves ---- */

/* What a new leaf needs before it is published. */
typedef enum { MAKE_INNER, MAKE_SUBGOAL, MAKE_ANSWER } make_kind;

static tnode *new_node(tablespace *ts, table_thread *c, int kind, term token, tnode *parent) {
    tnode *n = table_obj_alloc(ts, c, kind);
    n->token = token;
    n->parent = parent;
    atomic_init(&n->down, 0);
    atomic_init(&n->sibling, NULL);
    return n;
}

static void answers_init(tablespace *ts, table_thread *c, answers *a, uint32_t nvars) {
    a->root = new_node(ts, c, K_ANS_NODE, UNBOUND, NULL);
    a->nvars = nvars;
    atomic_init(&a->compounds, false);
    atomic_init(&a->first, NULL);
    atomic_init(&a->last, NULL);
    atomic_init(&a->count, 0);
    atomic_init(&a->complete, false);
}

/* Appends leaf to the answer list, before the leaf is published in the trie:
 * the old last linked to it, then the count raised.  Appenders hold the
 * answer trie's lock (or the trie is private); a consumer that meets a link
 * not made yet stops there and takes the rest later, and a completion check,
 * which compares consumers with the count, waits for it. */
static void answers_append(answers *a, tnode *leaf) {
    tnode *prev = atomic_load_explicit(&a->last, memory_order_relaxed);
    atomic_store_explicit(&a->last, leaf, memory_order_relaxed);
    if (prev != NULL) atomic_store_explicit(&prev->down, (uintptr_t)leaf, memory_order_release);
    else atomic_store_explicit(&a->first, leaf, memory_order_release);
    atomic_store_explicit(&a->count, atomic_load_explicit(&a->count, memory_order_relaxed) + 1,
                          memory_order_release);
}

/* A subgoal leaf's down field: nothing yet (NS), a bucket of frames (SS) or
 * an entry with its answers (FS). */
static void subgoal_leaf_init(tablespace *ts, table_thread *c, tnode *leaf, uint32_t nvars) {
    if (ts->design == DESIGN_SS) {
        sgframe **bucket = table_obj_alloc(ts, c, K_BUCKET);
        memset(bucket, 0, ts->mem.size[K_BUCKET]);
        atomic_init(&leaf->down, (uintptr_t)bucket);
    } else if (ts->design == DESIGN_FS) {
        sgentry *e = table_obj_alloc(ts, c, K_ENTRY);
        e->owner = c->thread;
        memset(e->frames, 0, ts->threads * sizeof(sgframe *));
        answers_init(ts, c, &e->ans, nvars);
        atomic_init(&leaf->down, (uintptr_t)e);
    }
}

/* The child of parent with token t, made if missing; *created says which.
 * Locked: looked for without the parent's lock until the lock is taken, then
 * again under it before making.  Readers: other threads may be reading the
 * trie (a replaced child table waits for them).
 * Always inlined: the answer path calls it for every derivation, and its
 * arguments are mostly constants there. */
static inline __attribute__((always_inline)) tnode *
trie_child(tablespace *ts, table_thread *c, tnode *parent, term t, int kind, bool locked,
           bool readers, make_kind make, answers *ans, uint32_t nvars, bool *created) {
    tnode *n;
    *created = false;
    atomic_int *lock = locked ? lock_of(parent) : NULL;
    if (lock != NULL && c->spare[kind] == NULL) c->spare[kind] = table_obj_alloc(ts, c, kind);
    /* The paper's trylock: while another writer holds the parent, it may be
     * inserting this very token, so look again instead of waiting. */
    for (unsigned tries = 0; lock != NULL; tries++) {
        if ((n = child_find(parent, t)) != NULL) return n;
        if (try_lock(lock)) break;
        if (tries < 64) cpu_relax();
        else sched_yield(); /* the holder may not be running */
    }
    place at = {NULL, 0, 0};
    n = child_locate(parent, t, &at);
    if (n == NULL) {
        if (c->spare[kind] != NULL) {
            n = c->spare[kind];
            c->spare[kind] = NULL;
        } else {
            n = table_obj_alloc(ts, c, kind);
        }
        n->token = t;
        n->parent = parent;
        atomic_init(&n->down, 0);
        atomic_init(&n->sibling, NULL);
        if (make == MAKE_SUBGOAL) subgoal_leaf_init(ts, c, n, nvars);
        if (make == MAKE_ANSWER) answers_append(ans, n);
        child_link(&ts->tries, c->thread, &c->bytes, parent, n, &at, readers);
        *created = true;
    }
    if (lock) spin_unlock(lock);
    return n;
}

/* ---- subgoals ---- */

/* The subgoal trie of tabled predicate t that thread sees (NULL: none yet). */
static tnode *view_root(tablespace *ts, unsigned thread, uint32_t t) {
    if (ts->design == DESIGN_NS) return ts->private_roots[(size_t)thread * ts->prog->ntabled + t];
    return atomic_load_explicit(&ts->shared_roots[t], memory_order_acquire);
}

static tnode *subgoal_root(tablespace *ts, unsigned thread, table_thread *c, const pred *p) {
    if (ts->design == DESIGN_NS) {
        tnode **root = &ts->private_roots[(size_t)thread * ts->prog->ntabled + p->table_id];
        if (*root == NULL) *root = new_node(ts, c, K_SG_NODE, UNBOUND, NULL);
        return *root;
    }
    _Atomic(tnode *) *shared = &ts->shared_roots[p->table_id];
    tnode *root = atomic_load_explicit(shared, memory_order_acquire);
    if (root != NULL) return root;
    atomic_int *lock = lock_of(shared);
    spin_lock(lock);
    root = atomic_load_explicit(shared, memory_order_relaxed);
    if (root == NULL) {
        root = new_node(ts, c, K_SG_NODE, UNBOUND, NULL);
        if (p->arity == 0) subgoal_leaf_init(ts, c, root, 0);
        atomic_store_explicit(shared, root, memory_order_release);
    }
    spin_unlock(lock);
    return root;
}

tnode *table_subgoal(tablespace *ts, unsigned thread, table_thread *c, const pred *p,
                     const term *tokens, uint32_t ntokens, uint32_t nvars, sgframe **frame,
                     answers **ans) {
    bool shared = ts->shared_subgoals;
    tnode *node = subgoal_root(ts, thread, c, p);
    for (uint32_t i = 0; i < ntokens; i++) {
        bool leaf = i + 1 == ntokens, created;
        node = trie_child(ts, c, node, tokens[i], K_SG_NODE, shared, shared,
                          leaf ? MAKE_SUBGOAL : MAKE_INNER, NULL, nvars, &created);
    }
    if (shared) trie_quiesce(&ts->tries, thread);
    uintptr_t d = atomic_load_explicit(&node->down, memory_order_acquire);
    switch (ts->design) {
    case DESIGN_NS:
        *frame = (sgframe *)d;
        *ans = *frame ? (*frame)->ans : NULL;
        break;
    case DESIGN_SS:
        *frame = ((sgframe **)d)[thread];
        *ans = *frame ? (*frame)->ans : NULL;
        break;
    case DESIGN_FS:
        *frame = ((sgentry *)d)->frames[thread];
        *ans = &((sgentry *)d)->ans;
        break;
    }
    return node;
}

sgframe *table_new_frame(tablespace *ts, unsigned thread, table_thread *c, tnode *leaf,
                         const pred *p, uint32_t nvars) {
    sgframe *f = table_obj_alloc(ts, c, K_FRAME);
    memset(f, 0, sizeof *f);
    f->p = p;
    f->nvars = nvars;
    uintptr_t d = atomic_load_explicit(&leaf->down, memory_order_acquire);
    switch (ts->design) {
    case DESIGN_NS:
        answers_init(ts, c, &f->own, nvars);
        f->ans = &f->own;
        atomic_store_explicit(&leaf->down, (uintptr_t)f, memory_order_relaxed);
        break;
    case DESIGN_SS:
        answers_init(ts, c, &f->own, nvars);
        f->ans = &f->own;
        ((sgframe **)d)[thread] = f;
        break;
    case DESIGN_FS:
        f->ans = &((sgentry *)d)->ans;
        ((sgentry *)d)->frames[thread] = f;
        break;
    }
    return f;
}

/* ---- waiting for another thread's subgoal (FS) ---- */

/* Whether the threads waiting for one another from `owner` on come back to
 * `thread` (at most one hop per thread: a cycle elsewhere is not ours). */
static bool waits_close_cycle(tablespace *ts, unsigned thread, unsigned owner) {
    int t = (int)owner;
    for (unsigned hops = 0; hops < ts->threads; hops++) {
        t = atomic_load(&ts->waits[t].waits_for);
        if (t == NOT_WAITING) return false;
        if (t == (int)thread) return true;
    }
    return false;
}

bool table_wait_complete(tablespace *ts, table_thread *c, const tnode *leaf) {
    unsigned thread = c->thread;
    sgentry *e = (sgentry *)atomic_load_explicit(&leaf->down, memory_order_acquire);
    if (e->owner == thread) return false;
    waiting *me = &ts->waits[thread];
    /* Published before the cycle is looked for (both sequentially
     * consistent): of threads that start waiting for one another at once,
     * the last to publish sees the others' edges, so a cycle never forms
     * unseen; each thread in a cycle that it sees evaluates the subgoal. */
    atomic_store(&me->waits_for, (int)e->owner);
    if (waits_close_cycle(ts, thread, e->owner)) {
        atomic_store(&me->waits_for, NOT_WAITING);
        c->wait_cycles++;
        return false;
    }
    trie_park(&ts->tries, thread);
    /* What it waits on, then the count, then the flag (sequentially
     * consistent, as table_completed's flags, then the count, then this):
     * either this thread sees the flag or the completer sees it waiting. */
    atomic_store(&me->waits_on, &e->ans);
    atomic_fetch_add(&ts->waiters, 1);
    for (;;) {
        unsigned wake = atomic_load(&me->wake);
        if (atomic_load(&e->ans.complete)) break;
        /* Returns at once if it was raised since `wake`. */
        syscall(SYS_futex, &me->wake, FUTEX_WAIT_PRIVATE, wake, NULL, NULL, 0);
    }
    atomic_fetch_sub(&ts->waiters, 1);
    atomic_store(&me->waits_on, NULL);
    atomic_store(&me->waits_for, NOT_WAITING);
    trie_unpark(&ts->tries, thread);
    return true;
}

void table_completed(tablespace *ts) {
    /* After the complete flags: a waiter counted after this load sees them;
     * one counted before is woken if what it waits on is complete now (a
     * flag another completer set: woken twice, harmless).  Only those: a
     * right recursion completes a component per subgoal, and waking every
     * waiter at each was a system call each. */
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load(&ts->waiters) == 0) return;
    for (unsigned t = 0; t < ts->threads; t++) {
        const answers *on = atomic_load(&ts->waits[t].waits_on);
        if (on == NULL || !answers_complete(on)) continue;
        atomic_fetch_add(&ts->waits[t].wake, 1);
        syscall(SYS_futex, &ts->waits[t].wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    }
}

/* ---- answers ---- */

bool table_add_answer(tablespace *ts, table_thread *c, sgframe *frame, const term *tokens,
                      uint32_t ntokens) {
    answers *a = frame->ans;
    bool shared = ts->shared_answers, created = false;
    tnode *n = a->root;
    uint32_t j = 0;
    atomic_int *lock = NULL;
    if (shared) {
        /* Looked for without a lock: most derivations find their answer
         * there.  A new one is inserted under the answer trie's one lock,
         * so the list and count need no atomic read-modify-write (with FS
         * waiting, one thread inserts into a trie but where waiting could
         * deadlock: the lock is rarely contended). */
        for (; j < ntokens; j++) {
            tnode *m = child_find(n, tokens[j]);
            if (m == NULL) break;
            n = m;
        }
        bool found = ntokens == 0 ? atomic_load_explicit(&a->count, memory_order_acquire) > 0
                                  : j == ntokens;
        if (!found) {
            if (c->spare[K_ANS_NODE] == NULL) {
                c->spare[K_ANS_NODE] = table_obj_alloc(ts, c, K_ANS_NODE);
            }
            lock = lock_of(a->root);
            spin_lock(lock);
        }
    }
    if (!shared || lock != NULL) {
        /* A call without variables has at most one answer: its root. */
        if (ntokens == 0 && atomic_load_explicit(&a->count, memory_order_relaxed) == 0) {
            answers_append(a, a->root);
            created = true;
        }
        for (; j < ntokens; j++) {
            bool leaf = j + 1 == ntokens;
            n = trie_child(ts, c, n, tokens[j], K_ANS_NODE, false, shared,
                           leaf ? MAKE_ANSWER : MAKE_INNER, a, 0, &created);
        }
    }
    if (lock) spin_unlock(lock);
    if (shared) trie_quiesce(&ts->tries, c->thread);
    if (!created) {
        c->repeated++;
        return false;
    }
    if (ntokens != frame->nvars) atomic_store_explicit(&a->compounds, true, memory_order_relaxed);
    c->inserted++;
    return true;
}

/* ---- abolishing, and what the tables held: one walk per trie ----
 *
 * Each walk frees a trie's nodes, leaves first, and counts them when the
 * trie is part of thread 0's view: thread 0's own pass counts the subgoal
 * tries (its own in NS, the shared ones in SS and FS) and in NS and SS its
 * answer tries; in FS the answer tries are shared and counted by the last
 * thread's pass, which frees them. */

typedef struct abolish {
    tablespace *ts;
    table_thread *c;
    unsigned thread;
    bool subgoal_trie; /* its leaves hold frames, buckets or entries */
    bool shared_part;  /* the last thread's pass: shared buckets and entries */
    bool free_nodes;   /* the nodes too (not a thread's pass over shared nodes) */
    /* Where this pass counts subgoal tries' and answer tries' nodes, calls
     * and answers (as thread 0 sees them); NULL where it counts none. */
    table_stats *count_subgoals, *count_answers;
} abolish;

static void free_answers(const abolish *ab, answers *a);

static void count_leaf(uint64_t *n, uint64_t *min, uint64_t *max, uint64_t *sum, uint32_t depth) {
    if (*n == 0 || depth < *min) *min = depth;
    if (depth > *max) *max = depth;
    *sum += depth;
    (*n)++;
}

/* What a subgoal leaf holds: this thread's frame (and in NS and SS its
 * answers), or in the last thread's pass the shared bucket or entry. */
static void free_subgoal_leaf(const abolish *ab, tnode *leaf) {
    tablespace *ts = ab->ts;
    uintptr_t d = atomic_load_explicit(&leaf->down, memory_order_relaxed);
    if (ab->shared_part) {
        if (ts->design == DESIGN_SS) {
            table_obj_free(ts, ab->c, K_BUCKET, (void *)d);
        } else {
            sgentry *e = (sgentry *)d;
            free_answers(ab, &e->ans);
            table_obj_free(ts, ab->c, K_ENTRY, e);
        }
        atomic_store_explicit(&leaf->down, 0, memory_order_relaxed);
        return;
    }
    sgframe **slot = NULL, *ns_frame = (sgframe *)d;
    switch (ts->design) {
    case DESIGN_NS: slot = &ns_frame; break;
    case DESIGN_SS: slot = &((sgframe **)d)[ab->thread]; break;
    case DESIGN_FS: slot = &((sgentry *)d)->frames[ab->thread]; break;
    }
    sgframe *f = *slot;
    if (f == NULL) return;
    if (ts->design != DESIGN_FS) free_answers(ab, &f->own);
    table_obj_free(ts, ab->c, K_FRAME, f);
    *slot = NULL;
    if (ts->design == DESIGN_NS) atomic_store_explicit(&leaf->down, 0, memory_order_relaxed);
}

static void abolish_visit(void *arg, tnode *node, uint32_t depth, bool leaf) {
    const abolish *ab = arg;
    table_stats *s = ab->subgoal_trie ? ab->count_subgoals : ab->count_answers;
    if (s != NULL && ab->subgoal_trie) {
        s->subgoal_nodes++;
        if (leaf) {
            count_leaf(&s->calls, &s->subgoal_depth_min, &s->subgoal_depth_max,
                       &s->subgoal_depth_sum, depth);
        }
    } else if (s != NULL) {
        s->answer_nodes++;
        if (leaf) {
            count_leaf(&s->unique, &s->answer_depth_min, &s->answer_depth_max,
                       &s->answer_depth_sum, depth);
        }
    }
    if (leaf && ab->subgoal_trie) free_subgoal_leaf(ab, node);
    if (!ab->free_nodes) return;
    if (!leaf) trie_free_children(&ab->ts->tries, &ab->c->bytes, node);
    table_obj_free(ab->ts, ab->c, ab->subgoal_trie ? K_SG_NODE : K_ANS_NODE, node);
}

/* An answer trie; without variables its root is the one answer, if any. */
static void free_answers(const abolish *ab, answers *a) {
    abolish answer_trie = *ab;
    answer_trie.subgoal_trie = false;
    answer_trie.free_nodes = true;
    if (a->nvars > 0) {
        trie_walk(a->root, a->nvars, !atomic_load_explicit(&a->compounds, memory_order_relaxed),
                  abolish_visit, &answer_trie);
        trie_free_children(&ab->ts->tries, &ab->c->bytes, a->root);
    }
    if (ab->count_answers != NULL) {
        ab->count_answers->answer_nodes++;
        if (a->nvars == 0 && atomic_load_explicit(&a->count, memory_order_relaxed) > 0) {
            table_stats *s = ab->count_answers;
            count_leaf(&s->unique, &s->answer_depth_min, &s->answer_depth_max,
                       &s->answer_depth_sum, 0);
        }
    }
    table_obj_free(ab->ts, ab->c, K_ANS_NODE, a->root);
    a->root = NULL;
}

/* A subgoal trie: what `ab` says of its leaves, and (NS, or the last
 * thread's pass) its nodes.  A root without arguments is its own leaf. */
static void abolish_subgoals(abolish *ab, tnode *root, const pred *p) {
    if (ab->count_subgoals != NULL) ab->count_subgoals->subgoal_nodes++;
    if (p->arity == 0) {
        table_stats *s = ab->count_subgoals;
        if (s != NULL) {
            count_leaf(&s->calls, &s->subgoal_depth_min, &s->subgoal_depth_max,
                       &s->subgoal_depth_sum, 0);
        }
        if (atomic_load_explicit(&root->down, memory_order_relaxed) != 0) {
            free_subgoal_leaf(ab, root);
        }
    } else {
        trie_walk(root, p->arity, false, abolish_visit, ab);
        if (ab->free_nodes) trie_free_children(&ab->ts->tries, &ab->c->bytes, root);
    }
    if (ab->free_nodes) table_obj_free(ab->ts, ab->c, K_SG_NODE, root);
}

void table_abolish_private(tablespace *ts, unsigned thread, table_thread *c, table_stats *view) {
    for (int kind = K_SG_NODE; kind <= K_ANS_NODE; kind++) {
        if (c->spare[kind] != NULL) table_obj_free(ts, c, kind, c->spare[kind]);
        c->spare[kind] = NULL;
    }
    /* This thread's frames; in NS its whole tries (the others' stay). */
    abolish ab = {ts, c, thread, true, false, ts->design == DESIGN_NS, view,
                  ts->design == DESIGN_FS ? NULL : view};
    for (uint32_t t = 0; t < ts->prog->ntabled; t++) {
        tnode *root = view_root(ts, thread, t);
        if (root == NULL) continue;
        abolish_subgoals(&ab, root, ts->prog->tabled[t]);
        if (ts->design == DESIGN_NS) {
            ts->private_roots[(size_t)thread * ts->prog->ntabled + t] = NULL;
        }
    }
}

void table_abolish_shared(tablespace *ts, table_thread *c, table_stats *view) {
    abolish ab = {ts, c, 0, true, true, true, NULL, ts->design == DESIGN_FS ? view : NULL};
    for (uint32_t t = 0; t < ts->prog->ntabled && ts->design != DESIGN_NS; t++) {
        tnode *root = atomic_load_explicit(&ts->shared_roots[t], memory_order_relaxed);
        if (root == NULL) continue;
        abolish_subgoals(&ab, root, ts->prog->tabled[t]);
        atomic_store_explicit(&ts->shared_roots[t], NULL, memory_order_relaxed);
    }
    trie_free_retired(&ts->tries, &c->bytes);
}
