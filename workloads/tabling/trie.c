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

#include "table.h"

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

static ctable *ctable_alloc(tablespace *ts, table_thread *c, uint32_t slots) {
    int kind = ctable_kind(slots);
    ctable *t = kind >= 0 ? table_obj_alloc(ts, c, kind)
                          : table_big_alloc(ts, c, ctable_bytes(slots));
    memset(t, 0, ctable_bytes(slots));
    t->mask = slots - 1;
    return t;
}

static void ctable_free(tablespace *ts, table_thread *c, ctable *t) {
    int kind = ctable_kind(t->mask + 1);
    if (kind >= 0) table_obj_free(ts, c, kind, t);
    else table_big_free(ts, c, t, ctable_bytes(t->mask + 1));
}

static void slot_put(ctable *tab, tnode *n) {
    uint64_t mix = token_mix(n->token);
    uint32_t i = mix_index(mix) & tab->mask;
    while (atomic_load_explicit(&tab->slots[i], memory_order_relaxed) != 0) i = (i + 1) & tab->mask;
    atomic_store_explicit(&tab->slots[i], (uintptr_t)n | mix_tag(mix), memory_order_release);
    tab->count++;
}

/* ---- epochs ---- */

void trie_quiesce(tablespace *ts, unsigned thread) {
    uint64_t now = atomic_load_explicit(&ts->epoch, memory_order_acquire);
    atomic_store_explicit(&ts->seen[thread].epoch, now, memory_order_release);
}

/* A replaced table: freed at once if no other thread can be reading it,
 * else kept until every thread has been quiescent since; each retirement
 * frees what has become safe of this thread's earlier ones. */
static void retire(tablespace *ts, table_thread *c, ctable *old, bool readers) {
    if (!readers) {
        ctable_free(ts, c, old);
        return;
    }
    /* Sequentially consistent with the reads of `seen` below: see
     * trie_unpark, whose thread comes back from quiescence. */
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

void trie_run_start(tablespace *ts) {
    uint64_t now = atomic_load_explicit(&ts->epoch, memory_order_relaxed);
    for (unsigned t = 0; t < ts->threads; t++) {
        atomic_store_explicit(&ts->seen[t].epoch, now, memory_order_relaxed);
    }
}

void trie_thread_done(tablespace *ts, unsigned thread) {
    atomic_store_explicit(&ts->seen[thread].epoch, UINT64_MAX, memory_order_release);
}

void trie_park(tablespace *ts, unsigned thread) {
    /* Quiescent while it waits: else the tables the others replace would
     * pile up unfreed (and every retirement would walk them all). */
    atomic_store_explicit(&ts->seen[thread].epoch, UINT64_MAX, memory_order_release);
}

void trie_unpark(tablespace *ts, unsigned thread) {
    /* Back in the tables: a retirer that read "quiescent" before this
     * thread's epoch was stored had raised the epoch before, so the second
     * read sees a change and the loop stores the raised epoch, whose raise
     * published the replacement (all sequentially consistent). */
    for (;;) {
        uint64_t now = atomic_load(&ts->epoch);
        atomic_store(&ts->seen[thread].epoch, now);
        if (atomic_load(&ts->epoch) == now) break;
    }
}

void trie_free_retired(tablespace *ts, table_thread *c) {
    for (unsigned t = 0; t < ts->threads; t++) {
        while (ts->retired[t] != NULL) {
            ctable *r = ts->retired[t];
            ts->retired[t] = r->retired_next;
            ctable_free(ts, c, r);
        }
    }
}

/* ---- linking ---- */

void child_link(tablespace *ts, table_thread *c, tnode *parent, tnode *n, const place *at,
                bool readers) {
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
        retire(ts, c, tab, readers);
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

void trie_free_children(tablespace *ts, table_thread *c, tnode *node) {
    uintptr_t d = atomic_load_explicit(&node->down, memory_order_relaxed);
    if (is_table(d)) ctable_free(ts, c, as_table(d));
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
