/* The table space: subgoal tries, subgoal frames and entries, answer tries,
 * and where their memory comes from, for the three designs of the tabling
 * paper (NS: every thread's tables private; SS: subgoal tries shared, answer
 * tries private; FS: both shared).  Shared tries are read without locks and
 * written under a lock per parent node (subgoal tries: the paper's TLWL with
 * a global array of locks) or per trie (answer tries). */
#ifndef HHTAB_TABLE_H
#define HHTAB_TABLE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "program.h"
#include "trie.h"

typedef struct tablespace tablespace;
typedef struct table_thread table_thread;

typedef enum { DESIGN_NS, DESIGN_SS, DESIGN_FS } table_design;
typedef enum { ALLOC_POOL, ALLOC_MALLOC } table_alloc;

/* The answers of one subgoal: its trie and the list consumers walk.  A path
 * from the root spells one term per variable of the call. */
typedef struct answers {
    tnode *root;
    uint32_t nvars;
    _Atomic(bool) compounds; /* an answer with a compound was added: paths differ in length */
    _Atomic(tnode *) first, last;
    _Atomic(uint64_t) count;
    _Atomic(bool) complete;
} answers;

typedef struct consumer consumer;

/* A thread's view of one subgoal (the paper's subgoal frame). */
typedef struct sgframe {
    answers *ans;           /* own (NS, SS) or the entry's (FS) */
    const pred *p;
    uint32_t nvars;         /* variables of the call: the terms of each answer */
    bool on_stack;          /* on this thread's completion stack (incomplete) */
    bool queued;            /* on the worklist */
    uint32_t dfn, lowlink;  /* completion-stack position; oldest dependency */
    uint32_t work_base;     /* worklist height when pushed: its fixpoint pops above */
    uint64_t checked;       /* answers there were at the last completion check */
    consumer *consumers;
    answers own;            /* NS, SS */
} sgframe;

/* FS: the shared part of a subgoal (the paper's subgoal entry) with the
 * bucket of each thread's frame. */
typedef struct sgentry {
    answers ans;
    unsigned owner; /* the thread that made it, and evaluates it */
    sgframe *frames[];
} sgentry;

/* What one thread keeps of the table space: its counters, and a node of
 * each kind made before it takes a lock (so that a page fault of the
 * allocator never happens while another thread waits for that lock). */
struct table_thread {
    unsigned thread;      /* whose */
    uint64_t inserted;    /* answers this thread added */
    uint64_t repeated;    /* answers this thread derived that were there already */
    uint64_t wait_cycles; /* FS: subgoals it evaluated because waiting would close a cycle */
    int64_t bytes;        /* table memory this thread allocated minus what it freed */
    tnode *spare[2];      /* subgoal, answer trie node */
};

/* FS: what a thread waits for, on a cache line of its own. */
#define NOT_WAITING (-1)
typedef struct waiting {
    atomic_int waits_for;              /* a thread, or NOT_WAITING */
    atomic_uint wake;                  /* futex word it sleeps on, raised to wake it */
    _Atomic(const answers *) waits_on; /* the answers it waits to be complete */
    char pad[64 - 2 * sizeof(atomic_int) - sizeof(void *)];
} waiting;

struct tablespace {
    const program *prog;
    table_design design;
    unsigned threads;
    /* Written by several threads: subgoal tries (SS, FS) and answer tries
     * (FS), when there is more than one thread. */
    bool shared_subgoals, shared_answers;
    object_memory mem;
    /* Subgoal trie roots: shared (SS, FS) or one per thread (NS). */
    _Atomic(tnode *) *shared_roots;
    tnode **private_roots; /* [thread * ntabled + table_id] */
    trie_space tries; /* child tables' memory and epochs (trie.c) */
    waiting *waits;    /* [thread] */
    /* FS: how many threads wait for another's subgoal to complete (on a
     * cache line of its own: read at every completion). */
    _Alignas(64) atomic_int waiters;
};

tablespace *tablespace_new(const program *prog, table_design design, table_alloc alloc,
                           unsigned threads);
void tablespace_free(tablespace *ts);
/* FS with more than one thread: others add answers to this thread's tables. */
bool tablespace_shares_answers(const tablespace *ts);

/* This thread's subgoal frame for p called with the pattern `tokens` (its
 * arguments flattened; nvars variables VAR(k), numbered by first
 * occurrence); creates trie nodes as needed.  *frame is NULL when this
 * thread has none yet; then *ans says whether the subgoal's answers are
 * complete already (FS: another thread completed them), else NULL. */
tnode *table_subgoal(tablespace *ts, unsigned thread, table_thread *c, const pred *p,
                     const term *tokens, uint32_t ntokens, uint32_t nvars, sgframe **frame,
                     answers **ans);
/* Makes this thread's frame for a subgoal leaf (none yet). */
sgframe *table_new_frame(tablespace *ts, unsigned thread, table_thread *c, tnode *leaf,
                         const pred *p, uint32_t nvars);
/* FS with several threads, a subgoal leaf this thread has no frame for and
 * whose answers are not complete: waits until the thread evaluating it has
 * completed them (true), unless this thread made it itself or waiting could
 * close a cycle of threads each waiting for the next (false, counted in
 * c->wait_cycles unless it made it: the caller evaluates the subgoal too, as
 * in the paper's FS). */
bool table_wait_complete(tablespace *ts, table_thread *c, const tnode *leaf);
/* FS with several threads: this thread has completed tables (wakes those
 * waiting for them). */
void table_completed(tablespace *ts);
/* Adds an answer (its nvars terms flattened into ntokens tokens) to the
 * frame's answers: true if it is new. */
bool table_add_answer(tablespace *ts, table_thread *c, sgframe *frame, const term *tokens,
                      uint32_t ntokens);
/* How many tokens an answer has, and its tokens, from its leaf. */
static inline uint32_t answer_length(const tnode *leaf) {
    uint32_t n = 0;
    for (; leaf->parent != NULL; leaf = leaf->parent) n++;
    return n;
}
static inline void answer_tokens(const tnode *leaf, term *tokens, uint32_t n) {
    for (uint32_t j = n; j-- > 0; leaf = leaf->parent) tokens[j] = leaf->token;
}
/* The next answer after `cursor` (NULL: the first one), or NULL. */
static inline tnode *answer_next(const answers *ans, const tnode *cursor) {
    if (cursor == NULL) return atomic_load_explicit(&ans->first, memory_order_acquire);
    return (tnode *)atomic_load_explicit(&cursor->down, memory_order_acquire);
}
static inline bool answers_complete(const answers *ans) {
    return atomic_load_explicit(&ans->complete, memory_order_acquire);
}
static inline void answers_set_complete(answers *ans) {
    atomic_store_explicit(&ans->complete, true, memory_order_release);
}

/* Before a run's threads start, and when each has ended its query: the
 * epochs that say when a replaced child table may be freed. */
void table_run_start(tablespace *ts);
void table_thread_done(tablespace *ts, unsigned thread);

/* What the tables hold as one thread sees them (the paper's Table I). */
typedef struct table_stats {
    uint64_t calls, subgoal_nodes, unique, answer_nodes;
    uint64_t subgoal_depth_min, subgoal_depth_max, subgoal_depth_sum; /* over calls */
    uint64_t answer_depth_min, answer_depth_max, answer_depth_sum;    /* over answers */
} table_stats;

/* Abolishing the tables: each thread frees what is private to it, then the
 * last thread the shared rest.  The walks that free the tables also count
 * what thread 0 saw into `view` (zeroed before): pass it to thread 0's
 * private pass and to the shared pass, NULL to the other threads'. */
void table_abolish_private(tablespace *ts, unsigned thread, table_thread *c, table_stats *view);
void table_abolish_shared(tablespace *ts, table_thread *c, table_stats *view);

/* Memory used by the allocator for the table space's objects. */
typedef struct table_memory_report {
    size_t pool_pages; /* 64 KiB pages the pools hold */
} table_memory_report;
void table_memory(const tablespace *ts, table_memory_report *r);

#endif
