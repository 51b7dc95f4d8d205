/* Tries (see trie.h): linking children, growing child tables, the epochs
 * that free a replaced table once no thread can be reading it, and the one
 * walk over whole tries.
 *
 * A writer never changes what a reader may be looking at: a new node is
 * complete before a release store publishes it, and a table that grows is
 * copied, the old one kept until every thread has passed a quiescent point
 * (a reader still in it may miss the newest nodes, never find a wrong one;
 * a reader that misses takes the writer's lock and looks again). */
#include <stdlib.h>
#include <string.h>

#include "trie.h"

struct trie_lock trie_locks[N_LOCKS];

/* ---- child tables ---- */

static size_t ctable_bytes(uint32_t slots) { return sizeof(ctable) + (size_t)slots * sizeof(slot); }

/* The pool kind of a table of `slots`, or -1 beyond pool objects (16 KiB). */
static int ctable_kind(uint32_t slots) {
    for (int i = 0; i < N_CTABLE_SIZES; i++) {
        if (slots == CTABLE_MIN << i) return K_CTABLE + i;
    }
    return -1;
}

static ctable *ctable_alloc(trie_space *tr, int64_t *bytes, uint32_t slots) {
    int kind = ctable_kind(slots);
    ctable *t = kind >= 0 ? object_alloc(tr->mem, bytes, kind)
                          : big_object_alloc(tr->mem, bytes, ctable_bytes(slots));
    memset(t, 0, ctable_bytes(slots));
    t->mask = slots - 1;
    return t;
}

static void ctable_free(trie_space *tr, int64_t *bytes, ctable *t) {
    int kind = ctable_kind(t->mask + 1);
    if (kind >= 0) object_free(tr->mem, bytes, kind, t);
    else big_object_free(tr->mem, bytes, t, ctable_bytes(t->mask + 1));
}

static void slot_put(ctable *tab, tnode *n) {
    uint64_t mix = token_mix(n->token);
    uint32_t i = mix_index(mix) & tab->mask;
    while (atomic_load_explicit(&tab->slots[i], memory_order_relaxed) != 0) i = (i + 1) & tab->mask;
    atomic_store_explicit(&tab->slots[i], (uintptr_t)n | mix_tag(mix), memory_order_release);
    tab->count++;
}

/* ---- epochs ---- */

bool trie_space_init(trie_space *tr, const object_memory *mem, unsigned threads) {
    tr->mem = mem;
    tr->threads = threads;
    atomic_init(&tr->epoch, 0);
    tr->seen = aligned_alloc(64, threads * sizeof *tr->seen);
    tr->retired = calloc(threads, sizeof *tr->retired);
    if (tr->seen == NULL || tr->retired == NULL) return false;
    memset(tr->seen, 0, threads * sizeof *tr->seen);
    return true;
}

void trie_space_free(trie_space *tr) {
    free(tr->seen);
    free(tr->retired);
}

void trie_quiesce(trie_space *tr, unsigned thread) {
    uint64_t now = atomic_load_explicit(&tr->epoch, memory_order_acquire);
    atomic_store_explicit(&tr->seen[thread].epoch, now, memory_order_release);
}

/* A replaced table: freed at once if no other thread can be reading it,
 * else kept until every thread has been quiescent since; each retirement
 * frees what has become safe of this thread's earlier ones. */
static void retire(trie_space *tr, unsigned thread, int64_t *bytes, ctable *old, bool readers) {
    if (!readers) {
        ctable_free(tr, bytes, old);
        return;
    }
    /* Sequentially consistent with the reads of `seen` below: see
     * trie_unpark, whose thread comes back from quiescence. */
    old->retired_epoch = atomic_fetch_add(&tr->epoch, 1);
    old->retired_next = tr->retired[thread];
    tr->retired[thread] = old;
    uint64_t oldest = UINT64_MAX;
    for (unsigned t = 0; t < tr->threads; t++) {
        uint64_t e = atomic_load(&tr->seen[t].epoch);
        if (e < oldest) oldest = e;
    }
    for (ctable **link = &tr->retired[thread]; *link != NULL;) {
        ctable *r = *link;
        if (r->retired_epoch < oldest) {
            *link = r->retired_next;
            ctable_free(tr, bytes, r);
        } else {
            link = &r->retired_next;
        }
    }
}

void trie_run_start(trie_space *tr) {
    uint64_t now = atomic_load_explicit(&tr->epoch, memory_order_relaxed);
    for (unsigned t = 0; t < tr->threads; t++) {
        atomic_store_explicit(&tr->seen[t].epoch, now, memory_order_relaxed);
    }
}

void trie_thread_done(trie_space *tr, unsigned thread) {
    atomic_store_explicit(&tr->seen[thread].epoch, UINT64_MAX, memory_order_release);
}

void trie_park(trie_space *tr, unsigned thread) {
    /* Quiescent while it waits: else the tables the others replace would
     * pile up unfreed (and every retirement would walk them all). */
    atomic_store_explicit(&tr->seen[thread].epoch, UINT64_MAX, memory_order_release);
}

void trie_unpark(trie_space *tr, unsigned thread) {
    /* Back in the tables: a retirer that read "quiescent" before this
     * thread's epoch was stored had raised the epoch before, so the second
     * read sees a change and the loop stores the raised epoch, whose raise
     * published the replacement (all sequentially consistent). */
    for (;;) {
        uint64_t now = atomic_load(&tr->epoch);
        atomic_store(&tr->seen[thread].epoch, now);
        if (atomic_load(&tr->epoch) == now) break;
    }
}

void trie_free_retired(trie_space *tr, int64_t *bytes) {
    for (unsigned t = 0; t < tr->threads; t++) {
        while (tr->retired[t] != NULL) {
            ctable *r = tr->retired[t];
            tr->retired[t] = r->retired_next;
            ctable_free(tr, bytes, r);
        }
    }
}

/* ---- linking ---- */

void child_link(trie_space *tr, unsigned thread, int64_t *bytes, tnode *parent, tnode *n,
                const place *at, bool readers) {
    if (at->tab != NULL) {
        ctable *tab = at->tab;
        if ((tab->count + 1) * 4 <= (tab->mask + 1) * 3) {
            uintptr_t v = (uintptr_t)n | mix_tag(token_mix(n->token));
            atomic_store_explicit(&tab->slots[at->slot], v, memory_order_release);
            tab->count++;
            return;
        }
        ctable *bigger = ctable_alloc(tr, bytes, (tab->mask + 1) * 2);
        for (uint32_t i = 0; i <= tab->mask; i++) {
            uintptr_t v = atomic_load_explicit(&tab->slots[i], memory_order_relaxed);
            if (v != 0) slot_put(bigger, slot_node(v));
        }
        slot_put(bigger, n);
        atomic_store_explicit(&parent->down, (uintptr_t)bigger | 1u, memory_order_release);
        retire(tr, thread, bytes, tab, readers);
        return;
    }
    uintptr_t d = atomic_load_explicit(&parent->down, memory_order_relaxed);
    if (at->length < LIST_MAX) {
        atomic_store_explicit(&n->sibling, (tnode *)d, memory_order_relaxed);
        atomic_store_explicit(&parent->down, (uintptr_t)n, memory_order_release);
        return;
    }
    ctable *tab = ctable_alloc(tr, bytes, CTABLE_MIN);
    for (tnode *m = (tnode *)d; m != NULL; m = next_sibling(m, memory_order_relaxed)) {
        slot_put(tab, m);
    }
    slot_put(tab, n);
    atomic_store_explicit(&parent->down, (uintptr_t)tab | 1u, memory_order_release);
}

void trie_free_children(trie_space *tr, int64_t *bytes, tnode *node) {
    uintptr_t d = atomic_load_explicit(&node->down, memory_order_relaxed);
    if (is_table(d)) ctable_free(tr, bytes, as_table(d));
    atomic_store_explicit(&node->down, 0, memory_order_relaxed);
}

/* ---- the walk ---- */

typedef struct walk_frame {
    tnode *node;
    child_iter children;
    uint64_t left; /* terms still to come below node */
    uint32_t depth;
} walk_frame;

void trie_walk(tnode *root, uint32_t terms, bool flat, trie_visit visit, void *arg) {
    if (terms == 0) return;
    size_t cap = 64, n = 0;
    walk_frame *stack = malloc(cap * sizeof *stack);
    if (stack == NULL) table_out_of_memory();
    stack[n].node = root;
    stack[n].left = terms;
    stack[n].depth = 0;
    child_iter_start(&stack[n++].children, root);
    while (n > 0) {
        walk_frame *f = &stack[n - 1];
        tnode *m = child_iter_next(&f->children);
        if (m == NULL) {
            /* All its children done: the node itself (the root is the caller's). */
            if (--n > 0) visit(arg, f->node, f->depth, false);
            continue;
        }
        uint64_t left = flat ? f->left - 1 : terms_after(m->token, f->left);
        uint32_t depth = f->depth + 1;
        if (left == 0) {
            visit(arg, m, depth, true);
            continue;
        }
        if (n == cap) {
            cap *= 2;
            walk_frame *bigger = realloc(stack, cap * sizeof *stack);
            if (bigger == NULL) table_out_of_memory();
            stack = bigger;
        }
        stack[n].node = m;
        stack[n].left = left;
        stack[n].depth = depth;
        child_iter_start(&stack[n++].children, m);
    }
    free(stack);
}
