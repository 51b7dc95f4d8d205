/* Tries of tokens, read without locks by every thread and written by one
 * writer per parent node: nodes, their children (a sibling list while they
 * are few, an open-addressing table beyond), the lock array writers take,
 * the epochs after which a replaced child table may be freed, and one walk
 * for everything that visits whole tries (abolishing, which counts them on
 * the way).
 *
 * A path from a root spells terms in preorder: a constant or variable is
 * one token, a compound its functor token and then its arguments' tokens,
 * a list (a chain of '[|]' cells) its length, its elements' tokens and
 * its tail's, as Yap's compact lists do (two nodes per element would be
 * one).
 * A trie knows how many terms its paths spell (a subgoal trie: the
 * predicate's arity; an answer trie: the call's variables), so a node is a
 * leaf when the terms are complete; paths are prefix-free. */
#ifndef HHTAB_TRIE_H
#define HHTAB_TRIE_H

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu_relax.h"
#include "objects.h"
#include "program.h"

/* One node: its token and where it is.  `down` is an inner node's children
 * (a node list, sibling-linked, or with the low bit set a ctable), a subgoal
 * leaf's frame (NS), bucket of frames (SS) or entry (FS), and an answer
 * leaf's next answer, in insertion order. */
typedef struct tnode {
    term token;
    struct tnode *parent;
    _Atomic(uintptr_t) down;
    _Atomic(struct tnode *) sibling;
} tnode;

#define LIST_MAX 8      /* children kept in a list up to this many */
#define CTABLE_MIN 16u  /* slots of a new child table (a power of two) */

/* A slot: node | tag << SLOT_TAG_SHIFT, 0 when empty.  User-space addresses
 * stay below 2^48 (x86-64, AArch64 with 48-bit addresses). */
typedef _Atomic(uintptr_t) slot;
#define SLOT_TAG_SHIFT 48
#define SLOT_PTR_MASK (((uintptr_t)1 << SLOT_TAG_SHIFT) - 1)

/* Each thread's last quiescent epoch, on a cache line of its own. */
typedef struct epoch_seen {
    _Atomic(uint64_t) epoch;
    char pad[64 - sizeof(uint64_t)];
} epoch_seen;

typedef struct ctable ctable;

/* What the tries of one table space share: where their child tables come
 * from, and the epochs after which a replaced child table may be freed
 * (it waits for every thread to pass a quiescent point, the end of a table
 * operation, after it was replaced; then the thread that replaced it frees
 * it).  A writer names itself by its thread and counts the bytes it
 * allocates and frees in a counter of its own. */
typedef struct trie_space {
    const object_memory *mem;
    unsigned threads;
    _Atomic(uint64_t) epoch;
    epoch_seen *seen; /* [thread] */
    ctable **retired; /* [thread]: what it replaced, newest first */
} trie_space;

/* False on no memory. */
bool trie_space_init(trie_space *tr, const object_memory *mem, unsigned threads);
void trie_space_free(trie_space *tr);

struct ctable {
    uint32_t mask;                    /* slots - 1 */
    uint32_t count;                   /* written under the parent's lock */
    struct ctable *retired_next;      /* once replaced by a bigger table */
    uint64_t retired_epoch;           /* the epoch it was replaced in */
    slot slots[];
};

static inline uint64_t token_mix(term t) { return t * 0x9E3779B97F4A7C15u; }
static inline uint32_t mix_index(uint64_t mix) { return (uint32_t)(mix >> 32); }
static inline uintptr_t mix_tag(uint64_t mix) {
    return (uintptr_t)((mix >> 16) & 0xffff) << SLOT_TAG_SHIFT;
}
static inline tnode *slot_node(uintptr_t v) { return (tnode *)(v & SLOT_PTR_MASK); }
static inline bool is_table(uintptr_t down) { return down & 1u; }
static inline ctable *as_table(uintptr_t down) { return (ctable *)(down - 1); }
static inline tnode *next_sibling(const tnode *n, memory_order order) {
    return atomic_load_explicit(&n->sibling, order);
}

/* How many terms still follow a node with token t when `left` terms were
 * still to come above it: a compound's functor opens its arguments, a
 * list's length its elements and tail. */
static inline uint64_t terms_after(term t, uint64_t left) {
    return left - 1u + (is_opener_token(t) ? opened_terms(t) : 0u);
}

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

/* Links the finished node n under parent where child_locate said (the
 * parent's writer): a slot, or the list, which becomes a table when long.
 * readers: other threads may be reading the trie (a replaced table waits for
 * them). */
void child_link(trie_space *tr, unsigned thread, int64_t *bytes, tnode *parent, tnode *n,
                const place *at, bool readers);

/* The children of a node, one after the other; the next is read before a
 * child is returned, so the caller may free it. */
typedef struct child_iter {
    const ctable *tab; /* NULL: a list */
    uint32_t i;
    tnode *next;
} child_iter;

static inline void child_iter_start(child_iter *it, const tnode *parent) {
    uintptr_t d = atomic_load_explicit(&parent->down, memory_order_acquire);
    it->tab = is_table(d) ? as_table(d) : NULL;
    it->i = 0;
    it->next = is_table(d) ? NULL : (tnode *)d;
}

static inline tnode *child_iter_next(child_iter *it) {
    if (it->tab != NULL) {
        while (it->i <= it->tab->mask) {
            uintptr_t v = atomic_load_explicit(&it->tab->slots[it->i++], memory_order_acquire);
            if (v != 0) return slot_node(v);
        }
        return NULL;
    }
    tnode *n = it->next;
    if (n != NULL) it->next = next_sibling(n, memory_order_acquire);
    return n;
}

/* Calls visit(arg, node, depth, leaf) for every node below root whose paths
 * spell `terms` terms, children before their parent (so visit may free
 * the node and its child table); depth counts tokens from the root.  One
 * pass, no recursion.  flat: no path has an opener token, so the nodes at
 * depth `terms` are the leaves (their tokens need not be read: in a big
 * trie each would be a cache miss). */
typedef void (*trie_visit)(void *arg, tnode *node, uint32_t depth, bool leaf);
void trie_walk(tnode *root, uint32_t terms, bool flat, trie_visit visit, void *arg);

/* Frees a node's child table, if it has one (after its children). */
void trie_free_children(trie_space *tr, int64_t *bytes, tnode *node);

/* ---- locks: one writer per parent node (the paper's TLWL with a global
 * array of locks on separate cache lines) ---- */

#define N_LOCKS 1024
extern struct trie_lock {
    atomic_int held;
    char pad[64 - sizeof(atomic_int)];
} trie_locks[N_LOCKS];

static inline atomic_int *lock_of(const void *p) {
    uintptr_t a = (uintptr_t)p;
    return &trie_locks[((a >> 4) ^ (a >> 14)) & (N_LOCKS - 1)].held;
}

static inline void spin_lock(atomic_int *l) {
    while (atomic_exchange_explicit(l, 1, memory_order_acquire) != 0) {
        while (atomic_load_explicit(l, memory_order_relaxed) != 0) sched_yield();
    }
}

static inline void spin_unlock(atomic_int *l) { atomic_store_explicit(l, 0, memory_order_release); }

static inline bool try_lock(atomic_int *l) {
    return atomic_load_explicit(l, memory_order_relaxed) == 0 &&
           atomic_exchange_explicit(l, 1, memory_order_acquire) == 0;
}

/* ---- epochs: when a replaced child table may be freed ---- */

/* A quiescent point of a thread in a shared table space: it holds no
 * pointer into a child table (the end of a table operation). */
void trie_quiesce(trie_space *tr, unsigned thread);
/* Before a run's threads start; when a thread has ended its query. */
void trie_run_start(trie_space *tr);
void trie_thread_done(trie_space *tr, unsigned thread);
/* A thread about to sleep counts as quiescent meanwhile; back, it stores
 * an epoch that every retirer since has seen raised. */
void trie_park(trie_space *tr, unsigned thread);
void trie_unpark(trie_space *tr, unsigned thread);
/* Frees every replaced table (the last thread, tables abolished). */
void trie_free_retired(trie_space *tr, int64_t *bytes);

#endif
