/* The table space: tries with lock-free lookup and locked insertion, the
 * answer lists consumers walk, and the memory behind them: one hugeheap pool
 * per kind of object (--alloc pool: the paper's one data type per page) or
 * one malloc each (--alloc malloc).
 *
 * A trie node's children are a list while they are few and an open-addressing
 * table beyond that, each slot a node pointer tagged with 16 bits of its
 * token's hash (most slots that do not match are passed without reading the
 * node).  A writer never changes what a
 * reader may be looking at: a new node is complete before a release store
 * publishes it, and a table that grows is copied, the old one kept until
 * every thread has passed a quiescent point (a reader still in it may miss
 * the newest nodes, never find a wrong one).  A reader that misses takes a lock and looks again: the
 * parent's in a subgoal trie (one writer per parent node at a time: TLWL),
 * the whole trie's in an answer trie (where one thread inserts, but in FS
 * where waiting for another thread could deadlock). */
#include "table.h"

#include <linux/futex.h> /* FS threads wait for another's subgoal on a futex */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cpu_relax.h"
#include "hugeheap.h"

/* The kinds of object, each with a pool of its own. */
enum {
    K_SG_NODE,
    K_ANS_NODE,
    K_FRAME,
    K_ENTRY,
    K_BUCKET,
    K_CTABLE, /* K_CTABLE + i: child tables of CTABLE_MIN << i slots */
    N_CTABLE_POOLS = 6,
    N_KINDS = K_CTABLE + N_CTABLE_POOLS,
};

#define LIST_MAX 8      /* children kept in a list up to this many */
#define CTABLE_MIN 16u  /* slots of a new child table (a power of two) */
#define N_LOCKS 1024

/* A slot: node | tag << SLOT_TAG_SHIFT, 0 when empty.  User-space addresses
 * stay below 2^48 (x86-64, AArch64 with 48-bit addresses). */
typedef _Atomic(uintptr_t) slot;
#define SLOT_TAG_SHIFT 48
#define SLOT_PTR_MASK (((uintptr_t)1 << SLOT_TAG_SHIFT) - 1)

typedef struct ctable {
    uint32_t mask;                    /* slots - 1 */
    uint32_t count;                   /* written under the parent's lock */
    struct ctable *retired_next;      /* once replaced by a bigger table */
    uint64_t retired_epoch;           /* the epoch it was replaced in */
    slot slots[];
} ctable;

/* Each thread's last quiescent epoch and (FS) what it waits for, on a
 * cache line of its own. */
#define NOT_WAITING (-1)
typedef struct epoch_seen {
    _Atomic(uint64_t) epoch;
    atomic_int waits_for;            /* a thread, or NOT_WAITING */
    atomic_uint wake;                /* futex word it sleeps on, raised to wake it */
    _Atomic(const answers *) waits_on; /* the answers it waits to be complete */
    char pad[64 - 2 * sizeof(uint64_t) - 2 * sizeof(atomic_int)];
} epoch_seen;

struct tablespace {
    const program *prog;
    table_design design;
    unsigned threads;
    bool pools;
    /* Written by several threads: subgoal tries (SS, FS) and answer tries
     * (FS), when there is more than one thread. */
    bool shared_subgoals, shared_answers;
    hh_pool *pool[N_KINDS];
    size_t size[N_KINDS];
    /* Subgoal trie roots: shared (SS, FS) or one per thread (NS). */
    _Atomic(tnode *) *shared_roots;
    tnode **private_roots; /* [thread * ntabled + table_id] */
    /* Replaced child tables of shared tries wait for every thread to pass
     * a quiescent point (the end of a table operation) after they were
     * replaced, then the thread that replaced them frees them. */
    _Atomic(uint64_t) epoch;
    epoch_seen *seen;  /* [thread] */
    ctable **retired;  /* [thread]: what it replaced, newest first */
    /* FS: how many threads wait for another's subgoal to complete (on a
     * cache line of its own: read at every completion). */
    _Alignas(64) atomic_int waiters;
};

static struct {
    atomic_int held;
    char pad[64 - sizeof(atomic_int)];
} locks[N_LOCKS];

_Noreturn void table_out_of_memory(void) {
    static const char message[] = "hhtab: out of memory for the tables\n";
    if (write(2, message, sizeof message - 1) < 0) _exit(3);
    _exit(3);
}

static atomic_int *lock_of(const void *p) {
    uintptr_t a = (uintptr_t)p;
    return &locks[((a >> 4) ^ (a >> 14)) & (N_LOCKS - 1)].held;
}

static void spin_lock(atomic_int *l) {
    while (atomic_exchange_explicit(l, 1, memory_order_acquire) != 0) {
        while (atomic_load_explicit(l, memory_order_relaxed) != 0) sched_yield();
    }
}

static void spin_unlock(atomic_int *l) { atomic_store_explicit(l, 0, memory_order_release); }

static inline bool try_lock(atomic_int *l) {
    return atomic_load_explicit(l, memory_order_relaxed) == 0 &&
           atomic_exchange_explicit(l, 1, memory_order_acquire) == 0;
}

/* ---- memory ---- */

static size_t ctable_bytes(uint32_t slots) { return sizeof(ctable) + (size_t)slots * sizeof(slot); }

static int ctable_kind(uint32_t slots) {
    for (int i = 0; i < N_CTABLE_POOLS; i++) {
        if (slots == CTABLE_MIN << i) return K_CTABLE + i;
    }
    return -1; /* larger than a pool object may be */
}

static void *obj_alloc(tablespace *ts, table_thread *c, int kind) {
    void *p = ts->pools ? hh_pool_alloc(ts->pool[kind]) : malloc(ts->size[kind]);
    if (p == NULL) table_out_of_memory();
    c->bytes += (int64_t)ts->size[kind];
    return p;
}

static void obj_free(tablespace *ts, table_thread *c, int kind, void *p) {
    if (ts->pools) hh_pool_free(ts->pool[kind], p);
    else free(p);
    c->bytes -= (int64_t)ts->size[kind];
}

static ctable *ctable_alloc(tablespace *ts, table_thread *c, uint32_t slots) {
    int kind = ctable_kind(slots);
    ctable *t;
    if (kind >= 0) {
        t = obj_alloc(ts, c, kind);
    } else {
        /* Beyond pool objects (16 KiB): hugeheap's or the system's malloc. */
        t = ts->pools ? hh_malloc(ctable_bytes(slots)) : malloc(ctable_bytes(slots));
        if (t == NULL) table_out_of_memory();
        c->bytes += (int64_t)ctable_bytes(slots);
    }
    memset(t, 0, ctable_bytes(slots));
    t->mask = slots - 1;
    return t;
}

static void ctable_free(tablespace *ts, table_thread *c, ctable *t) {
    int kind = ctable_kind(t->mask + 1);
    if (kind >= 0) {
        obj_free(ts, c, kind, t);
        return;
    }
    c->bytes -= (int64_t)ctable_bytes(t->mask + 1);
    if (ts->pools) hh_free(t);
    else free(t);
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
    ts->pools = alloc == ALLOC_POOL;
    ts->shared_subgoals = design != DESIGN_NS && threads > 1;
    ts->shared_answers = design == DESIGN_FS && threads > 1;
    ts->size[K_SG_NODE] = sizeof(tnode);
    ts->size[K_ANS_NODE] = sizeof(tnode);
    ts->size[K_FRAME] = sizeof(sgframe);
    ts->size[K_ENTRY] = sizeof(sgentry) + threads * sizeof(sgframe *);
    ts->size[K_BUCKET] = threads * sizeof(sgframe *);
    for (int i = 0; i < N_CTABLE_POOLS; i++) ts->size[K_CTABLE + i] = ctable_bytes(CTABLE_MIN << i);
    for (int k = 0; k < N_KINDS && ts->pools; k++) {
        ts->pool[k] = hh_pool_create(ts->size[k]);
        if (ts->pool[k] == NULL) {
            tablespace_free(ts);
            return NULL;
        }
    }
    size_t n = prog->ntabled ? prog->ntabled : 1;
    ts->shared_roots = calloc(n, sizeof *ts->shared_roots);
    ts->private_roots = calloc(n * threads, sizeof *ts->private_roots);
    ts->seen = calloc(threads, sizeof *ts->seen);
    ts->retired = calloc(threads, sizeof *ts->retired);
    if (!ts->shared_roots || !ts->private_roots || !ts->seen || !ts->retired) {
        tablespace_free(ts);
        return NULL;
    }
    for (unsigned t = 0; t < threads; t++) atomic_init(&ts->seen[t].waits_for, NOT_WAITING);
    return ts;
}

void tablespace_free(tablespace *ts) {
    if (ts == NULL) return;
    for (int k = 0; k < N_KINDS; k++) {
        if (ts->pool[k]) hh_pool_destroy(ts->pool[k]);
    }
    free(ts->shared_roots);
    free(ts->private_roots);
    free(ts->seen);
    free(ts->retired);
    free(ts);
}

bool tablespace_shares_answers(const tablespace *ts) { return ts->shared_answers; }

void table_memory(const tablespace *ts, table_memory_report *r) {
    r->pool_pages = 0;
    for (int k = 0; k < N_KINDS && ts->pools; k++) {
        hh_pool_stats st;
        hh_pool_get_stats(ts->pool[k], &st);
        r->pool_pages += st.pages;
    }
}

/* ---- tries ---- */

static inline uint64_t token_mix(term t) { return t * 0x9E3779B97F4A7C15u; }
static inline uint32_t mix_index(uint64_t mix) { return (uint32_t)(mix >> 32); }
static inline uintptr_t mix_tag(uint64_t mix) {
    return (uintptr_t)((mix >> 16) & 0xffff) << SLOT_TAG_SHIFT;
}
static inline tnode *slot_node(uintptr_t v) { return (tnode *)(v & SLOT_PTR_MASK); }

static inline bool is_table(uintptr_t down) { return down & 1u; }
static inline tnode *next_sibling(const tnode *n, memory_order order) {
    return atomic_load_explicit(&n->sibling, order);
}
static inline ctable *as_table(uintptr_t down) { return (ctable *)(down - 1); }

/* The child of parent with token t, or NULL (lock-free). */
static inline tnode *child_find(const tnode *parent, term t) {
    uintptr_t d = atomic_load_explicit(&parent->down, memory_order_acquire);
    if (is_table(d)) {
        const ctable *tab = as_table(d);
        uint64_t mix = token_mix(t);
        uintptr_t tag = mix_tag(mix);
        for (uint32_t i = mix_index(mix) & tab->mask;; i = (i + 1) & tab->mask) {
            uintptr_t v = atomic_load_explicit(&tab->slots[i], memory_order_acquire);
            if (v == 0) return NULL;
            if ((v & ~SLOT_PTR_MASK) == tag && slot_node(v)->token == t) return slot_node(v);
        }
    }
    for (tnode *n = (tnode *)d; n != NULL; n = next_sibling(n, memory_order_acquire)) {
        if (n->token == t) return n;
    }
    return NULL;
}

static void slot_put(ctable *tab, tnode *n) {
    uint64_t mix = token_mix(n->token);
    uint32_t i = mix_index(mix) & tab->mask;
    while (atomic_load_explicit(&tab->slots[i], memory_order_relaxed) != 0) i = (i + 1) & tab->mask;
    atomic_store_explicit(&tab->slots[i], (uintptr_t)n | mix_tag(mix), memory_order_release);
    tab->count++;
}

/* Where a new child goes: an empty slot of the parent's table, or the head
 * of its list (then how long the list is). */
typedef struct place {
    ctable *tab;
    uint32_t slot;
    uint32_t length;
} place;

/* For the parent's writer (its lock held, or a private trie): the child with
 * token t, or NULL and where a new one would go, in one pass. */
static inline tnode *child_locate(const tnode *parent, term t, place *at) {
    uintptr_t d = atomic_load_explicit(&parent->down, memory_order_relaxed);
    if (is_table(d)) {
        ctable *tab = as_table(d);
        uint64_t mix = token_mix(t);
        uintptr_t tag = mix_tag(mix);
        for (uint32_t i = mix_index(mix) & tab->mask;; i = (i + 1) & tab->mask) {
            uintptr_t v = atomic_load_explicit(&tab->slots[i], memory_order_relaxed);
            if (v == 0) {
                at->tab = tab;
                at->slot = i;
                return NULL;
            }
            if ((v & ~SLOT_PTR_MASK) == tag && slot_node(v)->token == t) return slot_node(v);
        }
    }
    uint32_t length = 0;
    for (tnode *n = (tnode *)d; n != NULL; n = next_sibling(n, memory_order_relaxed)) {
        if (n->token == t) return n;
        length++;
    }
    at->tab = NULL;
    at->length = length;
    return NULL;
}

/* A quiescent point of a thread in a shared table space: it holds no
 * pointer into a child table (the end of a table operation). */
static inline void quiesce(tablespace *ts, unsigned thread) {
    uint64_t now = atomic_load_explicit(&ts->epoch, memory_order_acquire);
    atomic_store_explicit(&ts->seen[thread].epoch, now, memory_order_release);
}

/* A replaced table: freed at once if no other thread can be reading it,
 * else kept until every thread has been quiescent since; each retirement
 * frees what has become safe of this thread's earlier ones. */
static void retire(tablespace *ts, table_thread *c, ctable *old, bool shared) {
    if (!shared) {
        ctable_free(ts, c, old);
        return;
    }
    /* Sequentially consistent with the reads of `seen` below: see
     * table_wait_complete, whose thread comes back from quiescence. */
    old->retired_epoch = atomic_fetch_add(&ts->epoch, 1);
    old->retired_next = ts->retired[c->thread];
    ts->retired[c->thread] = old;
    uint64_t oldest = UINT64_MAX;
    for (unsigned t = 0; t < ts->threads; t++) {
        uint64_t e = atomic_load(&ts->seen[t].epoch);
        if (e < oldest) oldest = e;
    }
    for (ctable **link = &ts->retired[c->thread]; *link != NULL;) {
        ctable *r = *link;
        if (r->retired_epoch < oldest) {
            *link = r->retired_next;
            ctable_free(ts, c, r);
        } else {
            link = &r->retired_next;
        }
    }
}

void table_run_start(tablespace *ts) {
    uint64_t now = atomic_load_explicit(&ts->epoch, memory_order_relaxed);
    for (unsigned t = 0; t < ts->threads; t++) {
        atomic_store_explicit(&ts->seen[t].epoch, now, memory_order_relaxed);
    }
}

void table_thread_done(tablespace *ts, unsigned thread) {
    atomic_store_explicit(&ts->seen[thread].epoch, UINT64_MAX, memory_order_release);
}

/* Links the finished node n under parent where child_locate said (the
 * parent's writer): a slot, or the list, which becomes a table when long. */
static void child_link(tablespace *ts, table_thread *c, tnode *parent, tnode *n, const place *at,
                       bool shared) {
    if (at->tab != NULL) {
        ctable *tab = at->tab;
        if ((tab->count + 1) * 4 <= (tab->mask + 1) * 3) {
            uintptr_t v = (uintptr_t)n | mix_tag(token_mix(n->token));
            atomic_store_explicit(&tab->slots[at->slot], v, memory_order_release);
            tab->count++;
            return;
        }
        ctable *bigger = ctable_alloc(ts, c, (tab->mask + 1) * 2);
        for (uint32_t i = 0; i <= tab->mask; i++) {
            uintptr_t v = atomic_load_explicit(&tab->slots[i], memory_order_relaxed);
            if (v != 0) slot_put(bigger, slot_node(v));
        }
        slot_put(bigger, n);
        atomic_store_explicit(&parent->down, (uintptr_t)bigger | 1u, memory_order_release);
        retire(ts, c, tab, shared);
        return;
    }
    uintptr_t d = atomic_load_explicit(&parent->down, memory_order_relaxed);
    if (at->length < LIST_MAX) {
        atomic_store_explicit(&n->sibling, (tnode *)d, memory_order_relaxed);
        atomic_store_explicit(&parent->down, (uintptr_t)n, memory_order_release);
        return;
    }
    ctable *tab = ctable_alloc(ts, c, CTABLE_MIN);
    for (tnode *m = (tnode *)d; m != NULL; m = next_sibling(m, memory_order_relaxed)) {
        slot_put(tab, m);
    }
    slot_put(tab, n);
    atomic_store_explicit(&parent->down, (uintptr_t)tab | 1u, memory_order_release);
}

/* What a new leaf needs before it is published. */
typedef enum { MAKE_INNER, MAKE_SUBGOAL, MAKE_ANSWER } make_kind;

static tnode *new_node(tablespace *ts, table_thread *c, int kind, term token, tnode *parent) {
    tnode *n = obj_alloc(ts, c, kind);
    n->token = token;
    n->parent = parent;
    atomic_init(&n->down, 0);
    atomic_init(&n->sibling, NULL);
    return n;
}

static void answers_init(tablespace *ts, table_thread *c, answers *a, uint32_t depth, bool shared) {
    a->root = new_node(ts, c, K_ANS_NODE, UNBOUND, NULL);
    a->depth = depth;
    atomic_init(&a->first, NULL);
    atomic_init(&a->last, NULL);
    atomic_init(&a->count, 0);
    atomic_init(&a->complete, false);
    (void)shared;
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
        sgframe **bucket = obj_alloc(ts, c, K_BUCKET);
        memset(bucket, 0, ts->size[K_BUCKET]);
        atomic_init(&leaf->down, (uintptr_t)bucket);
    } else if (ts->design == DESIGN_FS) {
        sgentry *e = obj_alloc(ts, c, K_ENTRY);
        e->owner = c->thread;
        memset(e->frames, 0, ts->threads * sizeof(sgframe *));
        answers_init(ts, c, &e->ans, nvars, true);
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
    if (lock != NULL && c->spare[kind] == NULL) c->spare[kind] = obj_alloc(ts, c, kind);
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
            n = obj_alloc(ts, c, kind);
        }
        n->token = t;
        n->parent = parent;
        atomic_init(&n->down, 0);
        atomic_init(&n->sibling, NULL);
        if (make == MAKE_SUBGOAL) subgoal_leaf_init(ts, c, n, nvars);
        if (make == MAKE_ANSWER) answers_append(ans, n);
        child_link(ts, c, parent, n, &at, readers);
        *created = true;
    }
    if (lock) spin_unlock(lock);
    return n;
}

/* The subgoal trie of tabled predicate t that thread sees (NULL: none yet). */
static tnode *view_root(tablespace *ts, unsigned thread, uint32_t t) {
    if (ts->design == DESIGN_NS) return ts->private_roots[(size_t)thread * ts->prog->ntabled + t];
    return atomic_load_explicit(&ts->shared_roots[t], memory_order_acquire);
}

static tnode *subgoal_root(tablespace *ts, unsigned thread, table_thread *c, const pred *p) {
    if (ts->design == DESIGN_NS) {
        tnode **root = &ts->private_roots[(size_t)thread * ts->prog->ntabled + p->table_id];
        if (*root == NULL) {
            *root = new_node(ts, c, K_SG_NODE, UNBOUND, NULL);
        }
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
                     const term *pattern, uint32_t nvars, sgframe **frame, answers **ans) {
    bool shared = ts->shared_subgoals;
    tnode *node = subgoal_root(ts, thread, c, p);
    for (uint32_t i = 0; i < p->arity; i++) {
        bool leaf = i + 1 == p->arity, created;
        node = trie_child(ts, c, node, pattern[i], K_SG_NODE, shared, shared,
                          leaf ? MAKE_SUBGOAL : MAKE_INNER, NULL, nvars, &created);
    }
    if (shared) quiesce(ts, thread);
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
    sgframe *f = obj_alloc(ts, c, K_FRAME);
    memset(f, 0, sizeof *f);
    f->p = p;
    f->nvars = nvars;
    uintptr_t d = atomic_load_explicit(&leaf->down, memory_order_acquire);
    switch (ts->design) {
    case DESIGN_NS:
        answers_init(ts, c, &f->own, nvars, false);
        f->ans = &f->own;
        atomic_store_explicit(&leaf->down, (uintptr_t)f, memory_order_relaxed);
        break;
    case DESIGN_SS:
        answers_init(ts, c, &f->own, nvars, false);
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
        t = atomic_load(&ts->seen[t].waits_for);
        if (t == NOT_WAITING) return false;
        if (t == (int)thread) return true;
    }
    return false;
}

bool table_wait_complete(tablespace *ts, unsigned thread, const tnode *leaf) {
    sgentry *e = (sgentry *)atomic_load_explicit(&leaf->down, memory_order_acquire);
    if (e->owner == thread) return false;
    /* Published before the cycle is looked for (both sequentially
     * consistent): of threads that start waiting for one another at once,
     * the last to publish sees the others' edges, so a cycle never forms
     * unseen; each thread in a cycle that it sees evaluates the subgoal. */
    atomic_store(&ts->seen[thread].waits_for, (int)e->owner);
    if (waits_close_cycle(ts, thread, e->owner)) {
        atomic_store(&ts->seen[thread].waits_for, NOT_WAITING);
        return false;
    }
    /* Quiescent while it waits: else the tables the others replace would
     * pile up unfreed (and every retirement would walk them all). */
    epoch_seen *me = &ts->seen[thread];
    atomic_store_explicit(&me->epoch, UINT64_MAX, memory_order_release);
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
    /* Back in the tables: a retirer that read "quiescent" before this
     * thread's epoch was stored had raised the epoch before, so the second
     * read sees a change and the loop stores the raised epoch, whose raise
     * published the replacement (all sequentially consistent). */
    for (;;) {
        uint64_t now = atomic_load(&ts->epoch);
        atomic_store(&ts->seen[thread].epoch, now);
        if (atomic_load(&ts->epoch) == now) break;
    }
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
        const answers *on = atomic_load(&ts->seen[t].waits_on);
        if (on == NULL || !answers_complete(on)) continue;
        atomic_fetch_add(&ts->seen[t].wake, 1);
        syscall(SYS_futex, &ts->seen[t].wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    }
}

bool table_add_answer(tablespace *ts, table_thread *c, sgframe *frame, const term *tuple) {
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
        for (; j < frame->nvars; j++) {
            tnode *m = child_find(n, tuple[j]);
            if (m == NULL) break;
            n = m;
        }
        bool found = frame->nvars == 0
                         ? atomic_load_explicit(&a->count, memory_order_acquire) > 0
                         : j == frame->nvars;
        if (!found) {
            if (c->spare[K_ANS_NODE] == NULL) c->spare[K_ANS_NODE] = obj_alloc(ts, c, K_ANS_NODE);
            lock = lock_of(a->root);
            spin_lock(lock);
        }
    }
    if (!shared || lock != NULL) {
        /* A call without variables has at most one answer: its root. */
        if (frame->nvars == 0 && atomic_load_explicit(&a->count, memory_order_relaxed) == 0) {
            answers_append(a, a->root);
            created = true;
        }
        for (; j < frame->nvars; j++) {
            bool leaf = j + 1 == frame->nvars;
            n = trie_child(ts, c, n, tuple[j], K_ANS_NODE, false, shared,
                           leaf ? MAKE_ANSWER : MAKE_INNER, a, 0, &created);
        }
    }
    if (lock) spin_unlock(lock);
    if (shared) quiesce(ts, c->thread);
    if (!created) {
        c->repeated++;
        return false;
    }
    c->inserted++;
    return true;
}

/* ---- abolishing ---- */

/* Frees the trie below node (depth levels of children), not node itself;
 * leaf(node) is called for each node at the last level first. */
static void free_below(tablespace *ts, table_thread *c, tnode *node, uint32_t depth, int kind) {
    if (depth == 0) return;
    uintptr_t d = atomic_load_explicit(&node->down, memory_order_relaxed);
    if (is_table(d)) {
        ctable *tab = as_table(d);
        for (uint32_t i = 0; i <= tab->mask; i++) {
            tnode *m = slot_node(atomic_load_explicit(&tab->slots[i], memory_order_relaxed));
            if (m == NULL) continue;
            free_below(ts, c, m, depth - 1, kind);
            obj_free(ts, c, kind, m);
        }
        ctable_free(ts, c, tab);
    } else {
        for (tnode *m = (tnode *)d; m != NULL;) {
            tnode *next = next_sibling(m, memory_order_relaxed);
            free_below(ts, c, m, depth - 1, kind);
            obj_free(ts, c, kind, m);
            m = next;
        }
    }
    atomic_store_explicit(&node->down, 0, memory_order_relaxed);
}

static void free_answers(tablespace *ts, table_thread *c, answers *a) {
    if (a->depth > 0) free_below(ts, c, a->root, a->depth, K_ANS_NODE);
    obj_free(ts, c, K_ANS_NODE, a->root);
    a->root = NULL;
}

/* Calls visit(leaf) for each leaf of the subgoal trie below node. */
typedef void (*leaf_visitor)(tablespace *ts, unsigned thread, void *arg, tnode *leaf);

static void each_leaf(tablespace *ts, unsigned thread, void *arg, tnode *node, uint32_t depth,
                      leaf_visitor visit) {
    if (depth == 0) {
        visit(ts, thread, arg, node);
        return;
    }
    uintptr_t d = atomic_load_explicit(&node->down, memory_order_acquire);
    if (is_table(d)) {
        ctable *tab = as_table(d);
        for (uint32_t i = 0; i <= tab->mask; i++) {
            tnode *m = slot_node(atomic_load_explicit(&tab->slots[i], memory_order_acquire));
            if (m != NULL) each_leaf(ts, thread, arg, m, depth - 1, visit);
        }
    } else {
        for (tnode *m = (tnode *)d; m != NULL; m = next_sibling(m, memory_order_acquire)) {
            each_leaf(ts, thread, arg, m, depth - 1, visit);
        }
    }
}

static void free_private_leaf(tablespace *ts, unsigned thread, void *arg, tnode *leaf) {
    table_thread *c = arg;
    uintptr_t d = atomic_load_explicit(&leaf->down, memory_order_relaxed);
    sgframe **slot = NULL;
    switch (ts->design) {
    case DESIGN_NS: {
        sgframe *f = (sgframe *)d;
        if (f == NULL) return;
        free_answers(ts, c, &f->own);
        obj_free(ts, c, K_FRAME, f);
        atomic_store_explicit(&leaf->down, 0, memory_order_relaxed);
        return;
    }
    case DESIGN_SS: slot = &((sgframe **)d)[thread]; break;
    case DESIGN_FS: slot = &((sgentry *)d)->frames[thread]; break;
    }
    sgframe *f = *slot;
    if (f == NULL) return;
    if (ts->design == DESIGN_SS) free_answers(ts, c, &f->own);
    obj_free(ts, c, K_FRAME, f);
    *slot = NULL;
}

static void free_shared_leaf(tablespace *ts, unsigned thread, void *arg, tnode *leaf) {
    table_thread *c = arg;
    (void)thread;
    uintptr_t d = atomic_load_explicit(&leaf->down, memory_order_relaxed);
    if (ts->design == DESIGN_SS) {
        obj_free(ts, c, K_BUCKET, (void *)d);
    } else {
        sgentry *e = (sgentry *)d;
        free_answers(ts, c, &e->ans);
        obj_free(ts, c, K_ENTRY, e);
    }
    atomic_store_explicit(&leaf->down, 0, memory_order_relaxed);
}

void table_abolish_private(tablespace *ts, unsigned thread, table_thread *c) {
    for (int kind = K_SG_NODE; kind <= K_ANS_NODE; kind++) {
        if (c->spare[kind] != NULL) obj_free(ts, c, kind, c->spare[kind]);
        c->spare[kind] = NULL;
    }
    for (uint32_t t = 0; t < ts->prog->ntabled; t++) {
        const pred *p = ts->prog->tabled[t];
        tnode *root = view_root(ts, thread, t);
        if (root == NULL) continue;
        each_leaf(ts, thread, c, root, p->arity, free_private_leaf);
        if (ts->design == DESIGN_NS) {
            free_below(ts, c, root, p->arity, K_SG_NODE);
            obj_free(ts, c, K_SG_NODE, root);
            ts->private_roots[(size_t)thread * ts->prog->ntabled + t] = NULL;
        }
    }
}

void table_abolish_shared(tablespace *ts, table_thread *c) {
    for (uint32_t t = 0; t < ts->prog->ntabled && ts->design != DESIGN_NS; t++) {
        const pred *p = ts->prog->tabled[t];
        tnode *root = atomic_load_explicit(&ts->shared_roots[t], memory_order_relaxed);
        if (root == NULL) continue;
        each_leaf(ts, 0, c, root, p->arity, free_shared_leaf);
        free_below(ts, c, root, p->arity, K_SG_NODE);
        obj_free(ts, c, K_SG_NODE, root);
        atomic_store_explicit(&ts->shared_roots[t], NULL, memory_order_relaxed);
    }
    for (unsigned t = 0; t < ts->threads; t++) {
        while (ts->retired[t] != NULL) {
            ctable *r = ts->retired[t];
            ts->retired[t] = r->retired_next;
            ctable_free(ts, c, r);
        }
    }
}

/* ---- what the tables hold, as one thread sees them ---- */

static uint64_t count_below(const tnode *node, uint32_t depth) {
    if (depth == 0) return 0;
    uint64_t n = 0;
    uintptr_t d = atomic_load_explicit(&node->down, memory_order_acquire);
    if (is_table(d)) {
        const ctable *tab = as_table(d);
        for (uint32_t i = 0; i <= tab->mask; i++) {
            const tnode *m = slot_node(atomic_load_explicit(&tab->slots[i], memory_order_acquire));
            if (m != NULL) n += 1 + count_below(m, depth - 1);
        }
    } else {
        for (const tnode *m = (const tnode *)d; m != NULL;
             m = next_sibling(m, memory_order_acquire)) {
            n += 1 + count_below(m, depth - 1);
        }
    }
    return n;
}

static void stats_leaf(tablespace *ts, unsigned thread, void *arg, tnode *leaf) {
    table_stats *s = arg;
    uintptr_t d = atomic_load_explicit(&leaf->down, memory_order_acquire);
    const answers *a = NULL;
    switch (ts->design) {
    case DESIGN_NS: a = d ? ((sgframe *)d)->ans : NULL; break;
    case DESIGN_SS: a = ((sgframe **)d)[thread] ? ((sgframe **)d)[thread]->ans : NULL; break;
    case DESIGN_FS: a = &((sgentry *)d)->ans; break;
    }
    s->calls++;
    if (a == NULL) return;
    uint64_t n = atomic_load_explicit(&a->count, memory_order_acquire);
    s->answer_nodes += 1 + count_below(a->root, a->depth);
    s->unique += n;
    if (n > 0) {
        if (s->answer_depth_max < a->depth) s->answer_depth_max = a->depth;
        if (s->unique == n || a->depth < s->answer_depth_min) s->answer_depth_min = a->depth;
        s->answer_depth_sum += n * a->depth;
    }
}

void table_view_stats(tablespace *ts, unsigned thread, table_stats *s) {
    memset(s, 0, sizeof *s);
    for (uint32_t t = 0; t < ts->prog->ntabled; t++) {
        const pred *p = ts->prog->tabled[t];
        tnode *root = view_root(ts, thread, t);
        if (root == NULL) continue;
        s->subgoal_nodes += 1 + count_below(root, p->arity);
        uint64_t before = s->calls;
        each_leaf(ts, thread, s, root, p->arity, stats_leaf);
        if (s->calls > before) {
            if (s->subgoal_depth_max < p->arity) s->subgoal_depth_max = p->arity;
            if (before == 0 || p->arity < s->subgoal_depth_min) s->subgoal_depth_min = p->arity;
            s->subgoal_depth_sum += (s->calls - before) * p->arity;
        }
    }
}
