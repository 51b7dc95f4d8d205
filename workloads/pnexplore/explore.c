/* Parallel explicit-state exploration: "compute a successor, look it up in a
 * huge shared set, store it if new".
 *
 * - Each thread keeps a current marking and the transitions it enables
 *   (marking.c): moving to the next state to expand changes only the places
 *   where the two markings differ, and re-tests only the transitions that
 *   consume from those places.
 * - A successor is written straight into its record (encoding.h: bytes that
 *   grow with what differs from the initial marking, or one bit a place),
 *   stored where --alloc says (states.c) and named by a 32-bit reference.
 * - The shared store is an open-addressing table of those references: a new
 *   state claims its slot with one compare-and-swap.  It doubles when three
 *   quarters full, with every thread parked at a safe point.  The bucket store
 *   (the thesis's baseline) is B such tables, each behind its own lock.
 * - Each thread works depth-first on a stack of its own, without locks; while
 *   another thread is idle it offers the older half of its stack, and an idle
 *   thread takes such an offer.  The run is over when every thread is idle. */
#include "explore.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "encoding.h"
#include "firing.h"
#include "marking.h"
#include "states.h"

typedef struct table {
    _Atomic(state_ref) *slots;
    uint64_t mask;
    pthread_mutex_t lock; /* bucket store only */
    uint64_t count;       /* bucket store only */
} table;

typedef struct worker worker;

typedef struct shared {
    const net *n;
    const explore_options *opt;
    firing firing;
    encoding encoding;
    state_store states;
    table main;           /* STORE_SHARED */
    table *buckets;       /* STORE_BUCKETS */
    _Atomic(uint64_t) stored; /* states, flushed from the workers in batches */
    _Atomic(unsigned) idle;   /* workers without work: all idle means done */
    _Atomic(int) stop;    /* 1: stop early (reason in `stopped`) */
    char stopped[256];
    pthread_mutex_t stop_lock;
    _Atomic(state_ref) deadlock;
    _Atomic(int) resize_requested;
    /* Resizes are numbered; a thread parks for the one running when it
     * parked, counted by that number's parity, so that a resize that starts
     * the moment the last one ended does not count a thread still leaving
     * the last one (it would swap the table under that thread's feet). */
    _Atomic(unsigned) resize_epoch;
    _Atomic(int) parked[2];
    _Atomic(int) gone; /* threads that ended, or never started */
    /* A resize of the shared table, done by every parked thread together. */
    table rehash_to;
    _Atomic(int) rehash_ready;
    _Atomic(uint64_t) rehash_next, rehash_done;
    _Atomic(int) rehash_helpers; /* threads inside rehash_chunks */
    uint64_t rehash_chunks;
    worker *workers;
    state_cursor *cursors;     /* one per worker: the pages it fills */
    unsigned buckets_made;     /* STORE_BUCKETS: tables mapped so far */
    _Atomic(uint64_t) table_slots; /* of every table together */
} shared;

typedef struct stack {
    state_ref *items;
    size_t top, cap;
} stack;

struct worker {
    shared *s;
    unsigned id;
    pthread_t thread;
    stack own;                /* this thread's alone: no lock */
    pthread_mutex_t lock;     /* guards `offered` */
    stack offered;            /* work put out for idle threads to steal */
    _Atomic(size_t) offered_count;
    uint64_t unflushed;       /* new states not yet added to shared->stored */
    marking current;          /* made when the thread first has work */
    bool has_marking;
    uint8_t *batch;           /* BATCH successor records, marking_room bytes each */
    uint64_t edges, deadlocks, record_bytes;
};

static void stop_with(shared *s, const char *reason) {
    pthread_mutex_lock(&s->stop_lock);
    if (atomic_load(&s->stop) == 0) {
        snprintf(s->stopped, sizeof s->stopped, "%s", reason);
        atomic_store(&s->stop, 1);
    }
    pthread_mutex_unlock(&s->stop_lock);
}

/* ----------------------------------------------------------------- store */

/* Maps an empty table; false (errno says why, `t` untouched) if the kernel
 * refuses. */
static bool table_init(table *t, size_t slots) {
    void *mapped = mmap(NULL, slots * sizeof *t->slots, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mapped == MAP_FAILED) return false;
    madvise(mapped, slots * sizeof *t->slots, MADV_HUGEPAGE);
    t->slots = mapped;
    t->mask = slots - 1;
    t->count = 0;
    pthread_mutex_init(&t->lock, NULL);
    return true;
}

static void table_free(table *t) {
    munmap(t->slots, (t->mask + 1) * sizeof *t->slots);
}

/* Whether the state `ref` has the marking record `m` of `length` bytes (the
 * short records most nets have compared without a call). */
static bool same_marking(const shared *s, state_ref ref, const uint8_t *m, size_t length) {
    const uint8_t *stored = states_marking(&s->states, ref);
    if (stored[0] != m[0] || encoding_length(&s->encoding, stored) != length) return false;
    if (length < 8 || length > 16) return memcmp(stored, m, length) == 0;
    uint64_t a, b, c, d;
    memcpy(&a, stored, 8);
    memcpy(&b, m, 8);
    memcpy(&c, stored + length - 8, 8);
    memcpy(&d, m + length - 8, 8);
    return ((a ^ b) | (c ^ d)) == 0;
}

static uint64_t hash_of(const shared *s, state_ref ref) {
    const uint8_t *m = states_marking(&s->states, ref);
    return encoding_hash(m, encoding_length(&s->encoding, m));
}

/* Stores a new state's record, or stops the run saying why it cannot. */
static state_ref add_record(shared *s, worker *w, const uint8_t *m, size_t length,
                            state_ref parent, uint32_t via) {
    state_ref ref = 0;
    char reason[200];
    switch (states_add(&s->states, &s->cursors[w->id], m, length, parent, via, &ref)) {
    case STATES_ADDED: return ref;
    case STATES_NO_MEMORY: stop_with(s, "out of memory for states"); break;
    case STATES_NO_REFERENCES:
        stop_with(s, s->opt->alloc == ALLOC_ARENA
                         ? "the states outgrow the 4 GiB of records 32-bit references reach"
                         : "the states outgrow the 2^32 that 32-bit references name");
        break;
    case STATES_TOO_LARGE:
        snprintf(reason, sizeof reason, "a state of %zu bytes is too large for --alloc pool "
                 "(%d at most); use --alloc arena or --alloc malloc",
                 s->states.header + length, POOL_LARGEST);
        stop_with(s, reason);
        break;
    }
    return 0;
}

/* The state with marking record `m`: found, or made and inserted (*fresh).
 * 0 when it cannot be stored (the run stops, saying why). */
static state_ref table_insert(shared *s, worker *w, table *t, const uint8_t *m, size_t length,
                              uint64_t h, state_ref parent, uint32_t via, bool *fresh) {
    uint64_t i = h & t->mask;
    state_ref made = 0;
    *fresh = false;
    for (;;) {
        state_ref v = atomic_load_explicit(&t->slots[i], memory_order_acquire);
        if (v == 0) {
            if (made == 0) {
                made = add_record(s, w, m, length, parent, via);
                if (made == 0) return 0;
            }
            if (atomic_compare_exchange_strong_explicit(&t->slots[i], &v, made,
                                                        memory_order_acq_rel,
                                                        memory_order_acquire)) {
                *fresh = true;
                return made;
            }
        }
        if (same_marking(s, v, m, length)) {
            if (made != 0) states_take_back(&s->states, &s->cursors[w->id], made, length);
            return v;
        }
        i = (i + 1) & t->mask;
    }
}

static void table_rehash_into(shared *s, table *from, table *to) {
    for (uint64_t i = 0; i <= from->mask; i++) {
        state_ref v = atomic_load_explicit(&from->slots[i], memory_order_relaxed);
        if (v == 0) continue;
        uint64_t j = hash_of(s, v) & to->mask;
        while (atomic_load_explicit(&to->slots[j], memory_order_relaxed) != 0) j = (j + 1) & to->mask;
        atomic_store_explicit(&to->slots[j], v, memory_order_relaxed);
    }
}

/* Reserves `added` slots against the memory budget; false (and stops the
 * run, saying so) if they do not fit. */
static bool within_budget(shared *s, uint64_t added) {
    uint64_t total = atomic_fetch_add(&s->table_slots, added) + added;
    if (total * sizeof(state_ref) <= s->opt->memory_budget) return true;
    atomic_fetch_sub(&s->table_slots, added);
    char reason[200];
    snprintf(reason, sizeof reason,
             "the state tables would outgrow their memory budget (%zu MiB; raise --memory)",
             s->opt->memory_budget >> 20);
    stop_with(s, reason);
    return false;
}

/* Maps a doubled table of `slots`; false (and stops the run, saying why the
 * kernel refused) if it cannot. */
static bool map_doubled(shared *s, table *t, uint64_t slots) {
    if (table_init(t, slots)) return true;
    atomic_fetch_sub(&s->table_slots, slots / 2);
    char reason[200];
    snprintf(reason, sizeof reason, "cannot map a state table of %llu slots (%s)",
             (unsigned long long)slots, strerror(errno));
    stop_with(s, reason);
    return false;
}

/* Doubles a table (its owner holds it alone), unless the memory budget or
 * the kernel does not allow it: then the run stops, saying which. */
static void grow(shared *s, table *t) {
    uint64_t added = t->mask + 1;
    table bigger;
    if (!within_budget(s, added) || !map_doubled(s, &bigger, added * 2)) return;
    table_rehash_into(s, t, &bigger);
    table_free(t);
    t->slots = bigger.slots;
    t->mask = bigger.mask;
}

#define REHASH_CHUNK 4096 /* old slots a thread moves at a time */

/* Moves chunks of the old shared table into the new one until none is left;
 * any thread parked for the resize lends a hand. */
static void rehash_chunks(shared *s) {
    /* In first, then look: the resizer closes the job, then waits for us to
     * leave, so nobody works on a job that has ended. */
    atomic_fetch_add(&s->rehash_helpers, 1);
    if (!atomic_load(&s->rehash_ready)) {
        atomic_fetch_sub(&s->rehash_helpers, 1);
        return;
    }
    table *from = &s->main, *to = &s->rehash_to;
    uint64_t chunk;
    while ((chunk = atomic_fetch_add(&s->rehash_next, 1)) < s->rehash_chunks) {
        uint64_t end = (chunk + 1) * REHASH_CHUNK;
        if (end > from->mask + 1) end = from->mask + 1;
        for (uint64_t i = chunk * REHASH_CHUNK; i < end; i++) {
            state_ref v = atomic_load_explicit(&from->slots[i], memory_order_relaxed);
            if (v == 0) continue;
            uint64_t j = hash_of(s, v) & to->mask;
            for (;;) {
                state_ref empty = 0;
                if (atomic_compare_exchange_weak_explicit(&to->slots[j], &empty, v,
                                                          memory_order_relaxed,
                                                          memory_order_relaxed)) {
                    break;
                }
                if (empty != 0) j = (j + 1) & to->mask;
            }
        }
        atomic_fetch_add_explicit(&s->rehash_done, 1, memory_order_acq_rel);
    }
    atomic_fetch_sub(&s->rehash_helpers, 1);
}

static void park_if_asked(shared *s) {
    if (atomic_load_explicit(&s->resize_requested, memory_order_acquire) == 0) return;
    unsigned epoch = atomic_load(&s->resize_epoch);
    atomic_fetch_add(&s->parked[epoch & 1], 1);
    while (atomic_load_explicit(&s->resize_requested, memory_order_acquire) != 0 &&
           atomic_load(&s->resize_epoch) == epoch) {
        rehash_chunks(s);
        sched_yield();
    }
    atomic_fetch_sub(&s->parked[epoch & 1], 1);
}

/* Every other thread parks at its next safe point while the shared table
 * doubles, and helps move it. */
static void resize_shared(shared *s) {
    int expected = 0;
    if (!atomic_compare_exchange_strong(&s->resize_requested, &expected, 1)) {
        park_if_asked(s); /* another thread is resizing: wait for it like the rest */
        return;
    }
    unsigned epoch = atomic_load(&s->resize_epoch);
    while (atomic_load(&s->parked[epoch & 1]) + atomic_load(&s->gone) < (int)s->opt->threads - 1) {
        sched_yield();
    }
    uint64_t added = s->main.mask + 1;
    if (!within_budget(s, added) || !map_doubled(s, &s->rehash_to, added * 2)) {
        atomic_fetch_add(&s->resize_epoch, 1);
        atomic_store(&s->resize_requested, 0);
        return;
    }
    s->rehash_chunks = (added + REHASH_CHUNK - 1) / REHASH_CHUNK;
    atomic_store(&s->rehash_next, 0);
    atomic_store(&s->rehash_done, 0);
    atomic_store_explicit(&s->rehash_ready, 1, memory_order_release);
    rehash_chunks(s);
    while (atomic_load_explicit(&s->rehash_done, memory_order_acquire) < s->rehash_chunks) {
        sched_yield();
    }
    atomic_store(&s->rehash_ready, 0);
    while (atomic_load(&s->rehash_helpers) != 0) sched_yield();
    table_free(&s->main);
    s->main.slots = s->rehash_to.slots;
    s->main.mask = s->rehash_to.mask;
    atomic_fetch_add(&s->resize_epoch, 1); /* the parked threads go, before a new resize starts */
    atomic_store(&s->resize_requested, 0);
}

/* Counts a new state; every 64 (or when told to) the count goes to the
 * shared total, which it returns: one atomic add per 64 states, not per state. */
static uint64_t flush_count(shared *s, worker *w, bool now) {
    if (!now && ++w->unflushed < 64) return atomic_load_explicit(&s->stored, memory_order_relaxed);
    uint64_t total = atomic_fetch_add(&s->stored, w->unflushed) + w->unflushed;
    w->unflushed = 0;
    return total;
}

/* The state of marking record `m` (hash `h`): found, or made (*fresh). */
static state_ref store(shared *s, worker *w, const uint8_t *m, size_t length, uint64_t h,
                       state_ref parent, uint32_t via, bool *fresh) {
    state_ref r;
    if (s->opt->store == STORE_SHARED) {
        r = table_insert(s, w, &s->main, m, length, h, parent, via, fresh);
        if (*fresh && flush_count(s, w, false) > (s->main.mask + 1) / 4 * 3) resize_shared(s);
        return r;
    }
    table *t = &s->buckets[(h >> 44) % s->opt->buckets];
    pthread_mutex_lock(&t->lock);
    r = table_insert(s, w, t, m, length, h, parent, via, fresh);
    if (*fresh) {
        flush_count(s, w, false);
        if (++t->count > (t->mask + 1) / 4 * 3) {
            grow(s, t); /* if it cannot, the run stops and says why */
        }
    }
    pthread_mutex_unlock(&t->lock);
    return r;
}

/* ----------------------------------------------------------------- work */

static void stack_push(stack *st, state_ref r) {
    if (st->top == st->cap) {
        st->cap = st->cap ? st->cap * 2 : 1024;
        st->items = realloc(st->items, st->cap * sizeof *st->items);
        if (st->items == NULL) {
            fprintf(stderr, "pnexplore: out of memory for the work stack\n");
            exit(1);
        }
    }
    st->items[st->top++] = r;
}

/* Moves the oldest `count` items of one stack onto another. */
static void stack_move(stack *from, stack *to, size_t count) {
    for (size_t i = 0; i < count; i++) stack_push(to, from->items[i]);
    memmove(from->items, from->items + count, (from->top - count) * sizeof *from->items);
    from->top -= count;
}

/* While another thread is idle and nothing is on offer, put out the older
 * half of this thread's work (shallow states: the most work behind them). */
static void offer(worker *w) {
    shared *s = w->s;
    if (w->own.top < 16 || atomic_load_explicit(&s->idle, memory_order_relaxed) == 0 ||
        atomic_load_explicit(&w->offered_count, memory_order_relaxed) != 0) {
        return;
    }
    pthread_mutex_lock(&w->lock);
    stack_move(&w->own, &w->offered, w->own.top / 2);
    atomic_store_explicit(&w->offered_count, w->offered.top, memory_order_relaxed);
    pthread_mutex_unlock(&w->lock);
}

/* Takes what `from` offers.  The taker stops counting as idle while it holds
 * the lock, before the work leaves the offer: so all threads are idle only
 * when no work is left anywhere. */
static bool take_offer(worker *w, worker *from, bool counted_idle) {
    if (atomic_load_explicit(&from->offered_count, memory_order_relaxed) == 0) return false;
    pthread_mutex_lock(&from->lock);
    bool took = from->offered.top > 0;
    if (took) {
        if (counted_idle) atomic_fetch_sub(&w->s->idle, 1);
        stack_move(&from->offered, &w->own, from->offered.top);
        atomic_store_explicit(&from->offered_count, 0, memory_order_relaxed);
    }
    pthread_mutex_unlock(&from->lock);
    return took;
}

static state_ref next_state(worker *w) {
    if (w->own.top == 0) take_offer(w, w, false); /* take back what nobody took */
    return w->own.top ? w->own.items[--w->own.top] : 0;
}

static bool steal(worker *w) {
    shared *s = w->s;
    for (unsigned k = 1; k < s->opt->threads; k++) {
        if (take_offer(w, &s->workers[(w->id + k) % s->opt->threads], true)) return true;
    }
    return false;
}

#define BATCH 8 /* successors made before any is looked up: their memory misses overlap */

/* The thread's current marking, made at the initial marking when first
 * needed (a thread that never has work never pays for the net's arrays). */
static bool ready_marking(worker *w) {
    if (w->has_marking) return true;
    w->batch = malloc(BATCH * marking_room(&w->s->encoding));
    w->has_marking = w->batch && marking_init(&w->current, &w->s->firing, &w->s->encoding);
    if (!w->has_marking) {
        free(w->batch);
        w->batch = NULL;
        stop_with(w->s, "out of memory for a thread's marking");
    }
    return w->has_marking;
}

static void stop_overflowing(shared *s, uint32_t place) {
    char reason[256];
    snprintf(reason, sizeof reason,
             "place '%.100s' would hold more than %u tokens (is the net unbounded?)",
             s->n->place_names[place], ENCODING_COUNT_MAX);
    stop_with(s, reason);
}

typedef struct successor {
    const uint8_t *record;
    size_t length;
    uint64_t hash;
    uint32_t transition;
} successor;

/* Asks for the memory a lookup of `next` will read: its slot in the shared
 * table, and the record that slot names (arena records only: one load finds
 * them).  The table cannot be resized before this thread's next store. */
static void prefetch_slot(const shared *s, const successor *next) {
    if (s->opt->store == STORE_SHARED) __builtin_prefetch(&s->main.slots[next->hash & s->main.mask]);
}

static void prefetch_record(const shared *s, const successor *next) {
    if (s->opt->store != STORE_SHARED || s->opt->alloc != ALLOC_ARENA) return;
    /* Acquire, as a lookup reads it: the page that names the record is then seen. */
    state_ref v = atomic_load_explicit(&s->main.slots[next->hash & s->main.mask],
                                       memory_order_acquire);
    if (v != 0) __builtin_prefetch(states_record(&s->states, v));
}

/* Looks the successors up and stores the new ones; false if the run stops. */
static bool store_batch(worker *w, state_ref parent, const successor *batch, unsigned count) {
    shared *s = w->s;
    for (unsigned k = 0; k < count; k++) {
        bool fresh;
        state_ref next = store(s, w, batch[k].record, batch[k].length, batch[k].hash, parent,
                               batch[k].transition, &fresh);
        if (next == 0) return false; /* the store stopped the run, saying why */
        if (!fresh) continue;
        w->record_bytes += batch[k].length;
        if (s->opt->max_states &&
            atomic_load_explicit(&s->stored, memory_order_relaxed) >= s->opt->max_states) {
            stop_with(s, "--max-states reached");
        }
        stack_push(&w->own, next);
    }
    return true;
}

static void expand(worker *w, state_ref r) {
    shared *s = w->s;
    if (!ready_marking(w)) return;
    marking *m = &w->current;
    marking_set(m, states_marking(&s->states, r));
    size_t room = marking_room(&s->encoding);
    successor batch[BATCH];
    /* Successors do not change the enabled list: it is this state's throughout. */
    for (uint32_t i = 0; i < m->enabled_count; i += BATCH) {
        if (atomic_load_explicit(&s->stop, memory_order_relaxed)) return;
        unsigned count = m->enabled_count - i < BATCH ? m->enabled_count - i : BATCH;
        for (unsigned k = 0; k < count; k++) {
            uint32_t overflow;
            successor *next = &batch[k];
            next->transition = m->enabled[i + k];
            next->length = marking_successor(m, next->transition, w->batch + k * room,
                                             &next->record, &overflow);
            if (next->length == 0) {
                stop_overflowing(s, overflow);
                return;
            }
            next->hash = encoding_hash(next->record, next->length);
            prefetch_slot(s, next);
        }
        for (unsigned k = 0; k < count; k++) prefetch_record(s, &batch[k]);
        w->edges += count;
        if (!store_batch(w, r, batch, count)) return;
    }
    if (m->enabled_count == 0) {
        w->deadlocks++;
        if (s->opt->stop_at_deadlock) {
            state_ref expected = 0;
            if (atomic_compare_exchange_strong(&s->deadlock, &expected, r)) {
                stop_with(s, "a deadlock was found");
            }
        }
    }
}

static void *work(void *arg) {
    worker *w = arg;
    shared *s = w->s;
    while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
        park_if_asked(s);
        state_ref r = next_state(w);
        if (r != 0) {
            expand(w, r);
            offer(w);
            continue;
        }
        atomic_fetch_add(&s->idle, 1);
        bool found = false;
        while (!found && !atomic_load_explicit(&s->stop, memory_order_relaxed) &&
               atomic_load(&s->idle) < s->opt->threads) {
            park_if_asked(s);
            found = steal(w);
            if (!found) sched_yield();
        }
        if (!found) break; /* everybody idle: nothing left anywhere */
    }
    flush_count(s, w, true);
    /* Leaving: let a resize that waits for everybody go on. */
    atomic_fetch_add(&s->gone, 1);
    return NULL;
}

/* ------------------------------------------------------------ the driver */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t round_pow2(uint64_t x) {
    uint64_t p = 1;
    while (p < x) p <<= 1;
    return p;
}

/* Nothing can be explored: says why in `result`, returns the outcome. */
__attribute__((format(printf, 3, 4)))
static explore_outcome cannot_start(explore_result *result, explore_outcome outcome,
                                    const char *format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(result->stopped, sizeof result->stopped, format, args);
    va_end(args);
    return outcome;
}

/* Makes the state tables: one, or B buckets (which must start within the
 * memory budget). */
static explore_outcome make_tables(shared *s, explore_result *result) {
    const explore_options *opt = s->opt;
    uint64_t slots = 1 << 10; /* doubles as needed: small nets stay small */
    if (opt->store == STORE_SHARED) {
        if (!table_init(&s->main, slots)) {
            return cannot_start(result, EXPLORE_NO_MEMORY, "cannot map the state table (%s)",
                                strerror(errno));
        }
        atomic_store(&s->table_slots, slots);
        return EXPLORE_STARTED;
    }
    uint64_t per = round_pow2(slots / opt->buckets < 64 ? 64 : slots / opt->buckets);
    uint64_t bytes = per * opt->buckets * sizeof(state_ref);
    if (bytes > opt->memory_budget) {
        return cannot_start(result, EXPLORE_REFUSED,
                            "the %u bucket tables start at %llu MiB, more than --memory %zu MiB; "
                            "use fewer buckets or raise --memory", opt->buckets,
                            (unsigned long long)(bytes + (1 << 20) - 1) >> 20,
                            opt->memory_budget >> 20);
    }
    s->buckets = calloc(opt->buckets, sizeof *s->buckets);
    if (s->buckets == NULL) {
        return cannot_start(result, EXPLORE_NO_MEMORY,
                            "cannot allocate the state tables (%u buckets: %s)", opt->buckets,
                            strerror(errno));
    }
    for (; s->buckets_made < opt->buckets; s->buckets_made++) {
        if (!table_init(&s->buckets[s->buckets_made], per)) {
            return cannot_start(result, EXPLORE_NO_MEMORY,
                                "cannot map the state tables (bucket %u of %u: %s)",
                                s->buckets_made + 1, opt->buckets, strerror(errno));
        }
    }
    atomic_store(&s->table_slots, per * opt->buckets);
    return EXPLORE_STARTED;
}

/* Everything a run needs before its threads start: the net's arrays, the
 * tables, where states live, each worker's memory.  On failure it says why;
 * give_back frees what was made either way. */
static explore_outcome prepare(shared *s, explore_result *result) {
    const explore_options *opt = s->opt;
    uint32_t too_many;
    if (!encoding_init(&s->encoding, s->n->n_places, s->n->initial, &too_many)) {
        if (too_many == UINT32_MAX) {
            return cannot_start(result, EXPLORE_NO_MEMORY, "out of memory for the net's arrays");
        }
        return cannot_start(result, EXPLORE_REFUSED,
                            "place '%.100s' starts with more than %u tokens",
                            s->n->place_names[too_many], ENCODING_COUNT_MAX);
    }
    if (!firing_build(&s->firing, s->n)) {
        return cannot_start(result, EXPLORE_NO_MEMORY, "out of memory for the net's arrays");
    }
    explore_outcome outcome = make_tables(s, result);
    if (outcome != EXPLORE_STARTED) return outcome;
    if (!states_init(&s->states, opt->alloc, opt->stop_at_deadlock ? 2 * sizeof(uint32_t) : 0)) {
        return cannot_start(result, EXPLORE_NO_MEMORY, "cannot map the states' page directory (%s)",
                            strerror(errno));
    }
    s->workers = calloc(opt->threads, sizeof *s->workers);
    s->cursors = calloc(opt->threads, sizeof *s->cursors);
    if (s->workers == NULL || s->cursors == NULL) {
        return cannot_start(result, EXPLORE_NO_MEMORY, "cannot allocate %u threads' state (%s)",
                            opt->threads, strerror(errno));
    }
    for (unsigned i = 0; i < opt->threads; i++) {
        worker *w = &s->workers[i];
        w->s = s;
        w->id = i;
        pthread_mutex_init(&w->lock, NULL);
        if (!states_cursor_init(&s->states, &s->cursors[i])) {
            return cannot_start(result, EXPLORE_NO_MEMORY,
                                "cannot allocate the memory of thread %u of %u (%s)", i + 1,
                                opt->threads, strerror(errno));
        }
    }
    return EXPLORE_STARTED;
}

/* Stores the initial marking, starts the threads and waits for them;
 * returns the stop code, or -1 (with `*outcome` and the reason) if a thread
 * could not be started. */
static int run(shared *s, explore_result *result, explore_outcome *outcome) {
    const explore_options *opt = s->opt;
    worker *first = &s->workers[0];
    if (!ready_marking(first)) return 1;
    const uint8_t *record;
    uint32_t overflow;
    size_t length = marking_successor(&first->current, UINT32_MAX, first->batch, &record, &overflow);
    bool fresh;
    state_ref initial = store(s, first, record, length, encoding_hash(record, length), 0, 0, &fresh);
    if (initial == 0) return 1;
    first->record_bytes += length;
    stack_push(&first->own, initial);
    unsigned started = 0;
    int failure = 0;
    while (started < opt->threads &&
           (failure = pthread_create(&s->workers[started].thread, NULL, work,
                                     &s->workers[started])) == 0) {
        started++;
    }
    if (failure) { /* stop the threads that run; count the others as gone */
        stop_with(s, "a thread could not be started");
        atomic_fetch_add(&s->gone, (int)(opt->threads - started));
    }
    for (unsigned i = 0; i < started; i++) pthread_join(s->workers[i].thread, NULL);
    if (failure) {
        *outcome = cannot_start(result, EXPLORE_NO_MEMORY,
                                "cannot start thread %u of %u (%s); use fewer --threads",
                                started + 1, opt->threads, strerror(failure));
        return -1;
    }
    return atomic_load(&s->stop);
}

/* What the run found, into `result`. */
static void collect(shared *s, int code, double seconds, explore_result *result) {
    const explore_options *opt = s->opt;
    result->states = atomic_load(&s->stored);
    uint64_t record_bytes = 0;
    for (unsigned i = 0; i < opt->threads; i++) {
        const worker *w = &s->workers[i];
        result->edges += w->edges;
        result->deadlocks += w->deadlocks;
        record_bytes += w->record_bytes;
        if (!w->has_marking) continue;
        if (w->current.max_in_place > result->max_tokens_in_place) {
            result->max_tokens_in_place = w->current.max_in_place;
        }
        if (w->current.max_total > result->max_tokens_per_marking) {
            result->max_tokens_per_marking = w->current.max_total;
        }
    }
    result->seconds = seconds;
    result->complete = code == 0;
    snprintf(result->stopped, sizeof result->stopped, "%s", code ? s->stopped : "");
    if (result->states) {
        size_t table_bytes = atomic_load(&s->table_slots) * sizeof(state_ref);
        size_t record_memory = states_memory(&s->states, s->cursors, opt->threads);
        result->bytes_per_state = (double)(record_memory + table_bytes) / (double)result->states;
        result->marking_bytes = (double)record_bytes / (double)result->states;
    }
    state_ref dead = atomic_load(&s->deadlock);
    if (dead != 0) {
        result->found_deadlock = true;
        size_t len = 0;
        uint32_t via;
        for (state_ref r = dead; (r = states_parent(&s->states, r, &via)) != 0;) len++;
        result->witness = malloc((len + 1) * sizeof *result->witness);
        if (result->witness == NULL) {
            fprintf(stderr, "pnexplore: out of memory for the deadlock's witness\n");
            exit(1);
        }
        result->witness_length = len;
        for (state_ref r = dead; (r = states_parent(&s->states, r, &via)) != 0;) {
            result->witness[--len] = via;
        }
    }
}

/* Frees whatever prepare and the run made (prepare may have stopped half
 * way: everything not made is NULL or not counted). */
static void give_back(shared *s) {
    const explore_options *opt = s->opt;
    table *tables = opt->store == STORE_SHARED ? &s->main : s->buckets;
    unsigned count = opt->store == STORE_SHARED ? (s->main.slots != NULL) : s->buckets_made;
    for (unsigned b = 0; b < count; b++) table_free(&tables[b]);
    free(s->buckets);
    for (unsigned i = 0; s->workers && i < opt->threads; i++) {
        free(s->workers[i].own.items);
        free(s->workers[i].offered.items);
        if (s->workers[i].has_marking) marking_free(&s->workers[i].current);
        free(s->workers[i].batch);
    }
    for (unsigned i = 0; s->cursors && i < opt->threads; i++) {
        states_cursor_free(&s->states, &s->cursors[i]);
    }
    states_free(&s->states);
    free(s->workers);
    free(s->cursors);
    firing_free(&s->firing);
    encoding_free(&s->encoding);
}

explore_outcome explore(const net *n, const explore_options *options, explore_result *result) {
    memset(result, 0, sizeof *result);
    shared *s = calloc(1, sizeof *s);
    if (s == NULL) return cannot_start(result, EXPLORE_NO_MEMORY, "out of memory");
    s->n = n;
    s->opt = options;
    pthread_mutex_init(&s->stop_lock, NULL);
    explore_outcome outcome = prepare(s, result);
    if (outcome == EXPLORE_STARTED) {
        double start = now();
        int code = run(s, result, &outcome);
        if (code >= 0) collect(s, code, now() - start, result);
    }
    give_back(s);
    free(s);
    return outcome;
}
