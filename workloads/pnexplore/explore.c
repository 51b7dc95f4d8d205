/* Parallel explicit-state exploration: "compute a successor, look it up in a
 * huge shared set, store it if new".
 *
 * - States are markings packed into bytes: one bit per place while every
 *   place holds at most one token (the exploration restarts with 16-bit
 *   counters the moment one would hold two), stored in per-thread hugeheap
 *   arenas, hugeheap pools, or one malloc each (--alloc).
 * - The shared store is an open-addressing table of tagged pointers: a new
 *   state claims its slot with one compare-and-swap.  It doubles when three
 *   quarters full, with every thread parked at a safe point.  The bucket store
 *   (the thesis's baseline) is B such tables, each behind its own lock.
 * - Each thread works depth-first on a stack of its own, without locks; while
 *   another thread is idle it offers the older half of its stack, and an idle
 *   thread takes such an offer.  The run is over when every thread is idle. */
#include "explore.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "hugeheap.h"

#define TAG_SHIFT 48
#define PTR_MASK ((UINT64_C(1) << TAG_SHIFT) - 1)
#define COUNTER_MAX 65535u

typedef struct record {
    struct record *parent; /* only with --check deadlock */
    uint32_t via;          /* the transition from the parent */
    uint8_t marking[];
} record;

typedef struct table {
    _Atomic(uint64_t) *slots;
    uint64_t mask;
    pthread_mutex_t lock; /* bucket store only */
    uint64_t count;       /* bucket store only */
} table;

typedef struct worker worker;

typedef struct shared {
    const net *n;
    const explore_options *opt;
    bool counters;        /* 16-bit counters, else one bit per place */
    size_t marking_bytes, record_bytes, header_bytes, record_align;
    table main;           /* STORE_SHARED */
    table *buckets;       /* STORE_BUCKETS */
    _Atomic(uint64_t) stored; /* states, flushed from the workers in batches */
    _Atomic(unsigned) idle;   /* workers without work: all idle means done */
    _Atomic(int) stop;    /* 1: stop early (reason in `stopped`), 2: restart with counters */
    char stopped[256];
    pthread_mutex_t stop_lock;
    _Atomic(record *) deadlock;
    _Atomic(int) resize_requested, parked;
    /* A resize of the shared table, done by every parked thread together. */
    table rehash_to;
    _Atomic(int) rehash_ready;
    _Atomic(uint64_t) rehash_next, rehash_done;
    _Atomic(int) rehash_helpers; /* threads inside rehash_chunks */
    uint64_t rehash_chunks;
    worker *workers;
    hh_pool *pool;
    unsigned buckets_made;     /* STORE_BUCKETS: tables mapped so far */
    _Atomic(uint64_t) table_slots; /* of every table together */
} shared;

typedef struct stack {
    record **items;
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
    hh_arena *arena;
    uint64_t edges, deadlocks;
    uint8_t *candidate;   /* a successor, packed */
};

/* ------------------------------------------------------------- markings */

static inline uint32_t tokens_at(const shared *s, const uint8_t *m, uint32_t p) {
    if (s->counters) {
        uint16_t c;
        memcpy(&c, m + 2 * (size_t)p, 2);
        return c;
    }
    return (m[p >> 3] >> (p & 7)) & 1u;
}

/* Sets a place's count in a packed marking; false if it does not fit. */
static inline bool set_tokens(const shared *s, uint8_t *m, uint32_t p, uint64_t count) {
    if (s->counters) {
        if (count > COUNTER_MAX) return false;
        uint16_t c = (uint16_t)count;
        memcpy(m + 2 * (size_t)p, &c, 2);
        return true;
    }
    if (count > 1) return false;
    m[p >> 3] = (uint8_t)((m[p >> 3] & ~(1u << (p & 7))) | (count << (p & 7)));
    return true;
}

/* Packs a whole marking (the initial one); false if a place does not fit. */
static bool pack(const shared *s, const uint32_t *tokens, uint8_t *m, uint32_t *overflow) {
    memset(m, 0, s->marking_bytes);
    for (uint32_t p = 0; p < s->n->n_places; p++) {
        if (!set_tokens(s, m, p, tokens[p])) {
            *overflow = p;
            return false;
        }
    }
    return true;
}

static uint64_t hash_bytes(const uint8_t *m, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, m + i, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
        h ^= h >> 31;
    }
    uint64_t w = 0;
    memcpy(&w, m + i, n - i);
    h = (h ^ w) * 0x94D049BB133111EBull;
    return h ^ (h >> 29);
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

static record *allocate_record(shared *s, worker *w) {
    switch (s->opt->alloc) {
    case ALLOC_POOL: return hh_pool_alloc(s->pool);
    case ALLOC_MALLOC: return malloc(s->record_bytes);
    default: return hh_arena_alloc(w->arena, s->record_bytes, s->record_align);
    }
}

/* The record of the marking: found, or made and inserted (*fresh). NULL when
 * memory runs out. */
static record *table_insert(shared *s, worker *w, table *t, const uint8_t *m, uint64_t h,
                            record *parent, uint32_t via, bool *fresh) {
    uint64_t tag = h >> TAG_SHIFT, i = h & t->mask;
    record *made = NULL;
    *fresh = false;
    for (;;) {
        uint64_t v = atomic_load_explicit(&t->slots[i], memory_order_acquire);
        if (v == 0) {
            if (made == NULL) {
                made = allocate_record(s, w);
                if (made == NULL) return NULL;
                if (s->header_bytes) { /* parents are kept only to show a witness */
                    made->parent = parent;
                    made->via = via;
                }
                memcpy((uint8_t *)made + s->header_bytes, m, s->marking_bytes);
            }
            uint64_t mine = ((uint64_t)(uintptr_t)made) | (tag << TAG_SHIFT);
            if (atomic_compare_exchange_strong_explicit(&t->slots[i], &v, mine,
                                                        memory_order_acq_rel,
                                                        memory_order_acquire)) {
                *fresh = true;
                return made;
            }
        }
        if ((v >> TAG_SHIFT) == tag) {
            record *r = (record *)(uintptr_t)(v & PTR_MASK);
            if (memcmp((uint8_t *)r + s->header_bytes, m, s->marking_bytes) == 0) {
                if (made != NULL && s->opt->alloc != ALLOC_ARENA) { /* lost a race: give it back */
                    if (s->opt->alloc == ALLOC_POOL) {
                        hh_pool_free(s->pool, made);
                    } else {
                        free(made);
                    }
                }
                return r;
            }
        }
        i = (i + 1) & t->mask;
    }
}

static uint64_t table_rehash_into(shared *s, table *from, table *to) {
    uint64_t moved = 0;
    for (uint64_t i = 0; i <= from->mask; i++) {
        uint64_t v = atomic_load_explicit(&from->slots[i], memory_order_relaxed);
        if (v == 0) continue;
        record *r = (record *)(uintptr_t)(v & PTR_MASK);
        uint64_t h = hash_bytes((uint8_t *)r + s->header_bytes, s->marking_bytes);
        uint64_t j = h & to->mask;
        while (atomic_load_explicit(&to->slots[j], memory_order_relaxed) != 0) j = (j + 1) & to->mask;
        atomic_store_explicit(&to->slots[j], v, memory_order_relaxed);
        moved++;
    }
    return moved;
}

static void stop_with(shared *s, int how, const char *reason) {
    pthread_mutex_lock(&s->stop_lock);
    if (atomic_load(&s->stop) == 0) {
        snprintf(s->stopped, sizeof s->stopped, "%s", reason);
        atomic_store(&s->stop, how);
    }
    pthread_mutex_unlock(&s->stop_lock);
}

/* Reserves `added` slots against the memory budget; false (and stops the
 * run, saying so) if they do not fit. */
static bool within_budget(shared *s, uint64_t added) {
    uint64_t total = atomic_fetch_add(&s->table_slots, added) + added;
    if (total * sizeof(uint64_t) <= s->opt->memory_budget) return true;
    atomic_fetch_sub(&s->table_slots, added);
    char reason[200];
    snprintf(reason, sizeof reason,
             "the state tables would outgrow their memory budget (%zu MiB; raise --memory)",
             s->opt->memory_budget >> 20);
    stop_with(s, 1, reason);
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
    stop_with(s, 1, reason);
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
            uint64_t v = atomic_load_explicit(&from->slots[i], memory_order_relaxed);
            if (v == 0) continue;
            record *r = (record *)(uintptr_t)(v & PTR_MASK);
            uint64_t j = hash_bytes((uint8_t *)r + s->header_bytes, s->marking_bytes) & to->mask;
            for (;;) {
                uint64_t empty = 0;
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
    atomic_fetch_add(&s->parked, 1);
    while (atomic_load_explicit(&s->resize_requested, memory_order_acquire) != 0) {
        rehash_chunks(s);
        sched_yield();
    }
    atomic_fetch_sub(&s->parked, 1);
}

/* Every other thread parks at its next safe point while the shared table
 * doubles, and helps move it. */
static void resize_shared(shared *s) {
    int expected = 0;
    if (!atomic_compare_exchange_strong(&s->resize_requested, &expected, 1)) {
        park_if_asked(s); /* another thread is resizing: wait for it like the rest */
        return;
    }
    while (atomic_load(&s->parked) < (int)s->opt->threads - 1) sched_yield();
    uint64_t added = s->main.mask + 1;
    if (!within_budget(s, added) || !map_doubled(s, &s->rehash_to, added * 2)) {
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

static record *store(shared *s, worker *w, const uint8_t *m, record *parent, uint32_t via,
                     bool *fresh) {
    uint64_t h = hash_bytes(m, s->marking_bytes);
    record *r;
    if (s->opt->store == STORE_SHARED) {
        r = table_insert(s, w, &s->main, m, h, parent, via, fresh);
        if (*fresh && flush_count(s, w, false) > (s->main.mask + 1) / 4 * 3) resize_shared(s);
        return r;
    }
    table *t = &s->buckets[(h >> 20) % s->opt->buckets];
    pthread_mutex_lock(&t->lock);
    r = table_insert(s, w, t, m, h, parent, via, fresh);
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

static void stack_push(stack *st, record *r) {
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

static record *next_state(worker *w) {
    if (w->own.top == 0) take_offer(w, w, false); /* take back what nobody took */
    return w->own.top ? w->own.items[--w->own.top] : NULL;
}

static bool steal(worker *w) {
    shared *s = w->s;
    for (unsigned k = 1; k < s->opt->threads; k++) {
        if (take_offer(w, &s->workers[(w->id + k) % s->opt->threads], true)) return true;
    }
    return false;
}

/* The successor of `m` by transition `tr` in `out`: a copy of the marking
 * changed at the transition's places only.  False (with the place) if a place
 * would not fit the encoding. */
static bool fire(const shared *s, const uint8_t *m, const transition *tr, uint8_t *out,
                 uint32_t *overflow) {
    memcpy(out, m, s->marking_bytes);
    for (uint32_t k = 0; k < tr->n_pre; k++) {
        uint32_t p = tr->pre[k].place;
        set_tokens(s, out, p, tokens_at(s, out, p) - tr->pre[k].weight);
    }
    for (uint32_t k = 0; k < tr->n_post; k++) {
        uint32_t p = tr->post[k].place;
        if (!set_tokens(s, out, p, (uint64_t)tokens_at(s, out, p) + tr->post[k].weight)) {
            *overflow = p;
            return false;
        }
    }
    return true;
}

static void expand(worker *w, record *r) {
    shared *s = w->s;
    const net *n = s->n;
    const uint8_t *m = (const uint8_t *)r + s->header_bytes;
    bool enabled_any = false;
    for (uint32_t t = 0; t < n->n_transitions && !atomic_load_explicit(&s->stop, memory_order_relaxed); t++) {
        const transition *tr = &n->transitions[t];
        bool enabled = true;
        for (uint32_t k = 0; k < tr->n_pre && enabled; k++) {
            enabled = tokens_at(s, m, tr->pre[k].place) >= tr->pre[k].weight;
        }
        if (!enabled) continue;
        enabled_any = true;
        w->edges++;
        uint32_t overflow;
        if (!fire(s, m, tr, w->candidate, &overflow)) {
            if (!s->counters) {
                stop_with(s, 2, "a place holds two tokens: counters needed");
            } else {
                char reason[256];
                snprintf(reason, sizeof reason,
                         "place '%.100s' would hold more than %u tokens (is the net unbounded?)",
                         n->place_names[overflow], COUNTER_MAX);
                stop_with(s, 1, reason);
            }
            return;
        }
        bool fresh;
        record *next = store(s, w, w->candidate, s->opt->stop_at_deadlock ? r : NULL, t, &fresh);
        if (next == NULL) {
            stop_with(s, 1, "out of memory for states");
            return;
        }
        if (fresh) {
            if (s->opt->max_states &&
                atomic_load_explicit(&s->stored, memory_order_relaxed) >= s->opt->max_states) {
                stop_with(s, 1, "--max-states reached");
            }
            stack_push(&w->own, next);
        }
    }
    if (!enabled_any) {
        w->deadlocks++;
        if (s->opt->stop_at_deadlock) {
            record *expected = NULL;
            if (atomic_compare_exchange_strong(&s->deadlock, &expected, r)) {
                stop_with(s, 1, "a deadlock was found");
            }
        }
    }
}

static void *work(void *arg) {
    worker *w = arg;
    shared *s = w->s;
    while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
        park_if_asked(s);
        record *r = next_state(w);
        if (r != NULL) {
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
    atomic_fetch_add(&s->parked, 1);
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
    uint64_t bytes = per * opt->buckets * sizeof(uint64_t);
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

/* Everything an attempt needs before its threads start: tables, the pool,
 * each worker's memory.  On failure it says why; give_back frees what was
 * made either way. */
static explore_outcome prepare(shared *s, explore_result *result) {
    const explore_options *opt = s->opt;
    explore_outcome outcome = make_tables(s, result);
    if (outcome != EXPLORE_STARTED) return outcome;
    if (opt->alloc == ALLOC_POOL) {
        s->pool = hh_pool_create(s->record_bytes);
        if (s->pool == NULL && errno == EINVAL) {
            return cannot_start(result, EXPLORE_REFUSED,
                                "a state takes %zu bytes (%u places %s%s), too large for --alloc "
                                "pool; use --alloc arena or --alloc malloc", s->record_bytes,
                                s->n->n_places,
                                s->counters ? "with 16-bit counters" : "at one bit each",
                                s->header_bytes ? ", and its parent for a witness" : "");
        }
        if (s->pool == NULL) {
            return cannot_start(result, EXPLORE_NO_MEMORY, "cannot create the state pool (%s)",
                                strerror(errno));
        }
    }
    s->workers = calloc(opt->threads, sizeof *s->workers);
    if (s->workers == NULL) {
        return cannot_start(result, EXPLORE_NO_MEMORY, "cannot allocate %u threads' state (%s)",
                            opt->threads, strerror(errno));
    }
    for (unsigned i = 0; i < opt->threads; i++) {
        worker *w = &s->workers[i];
        w->s = s;
        w->id = i;
        pthread_mutex_init(&w->lock, NULL);
        w->candidate = calloc(s->marking_bytes + 8, 1);
        if (opt->alloc == ALLOC_ARENA) w->arena = hh_arena_create();
        if (w->candidate == NULL || (opt->alloc == ALLOC_ARENA && w->arena == NULL)) {
            return cannot_start(result, EXPLORE_NO_MEMORY,
                                "cannot allocate the memory of thread %u of %u (%s)", i + 1,
                                opt->threads, strerror(errno));
        }
    }
    return EXPLORE_STARTED;
}

/* Starts the threads from the initial marking and waits for them; returns
 * the stop code, or -1 (with `*outcome` and the reason) if a thread could not
 * be started. */
static int run(shared *s, explore_result *result, explore_outcome *outcome) {
    const explore_options *opt = s->opt;
    worker *first = &s->workers[0];
    uint32_t overflow;
    if (!pack(s, s->n->initial, first->candidate, &overflow)) {
        if (s->counters) {
            snprintf(s->stopped, sizeof s->stopped,
                     "place '%.100s' starts with more than %u tokens", s->n->place_names[overflow],
                     COUNTER_MAX);
        }
        return s->counters ? 1 : 2;
    }
    bool fresh;
    record *initial = store(s, first, first->candidate, NULL, 0, &fresh);
    if (initial == NULL) {
        snprintf(s->stopped, sizeof s->stopped, "out of memory for states");
        return 1;
    }
    stack_push(&first->own, initial);
    unsigned started = 0;
    int failure = 0;
    while (started < opt->threads &&
           (failure = pthread_create(&s->workers[started].thread, NULL, work,
                                     &s->workers[started])) == 0) {
        started++;
    }
    if (failure) { /* stop the threads that run; count the others as gone */
        stop_with(s, 1, "a thread could not be started");
        atomic_fetch_add(&s->parked, (int)(opt->threads - started));
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

/* What the attempt found, into `result`. */
static void collect(shared *s, int code, double seconds, explore_result *result) {
    const explore_options *opt = s->opt;
    result->states = atomic_load(&s->stored);
    for (unsigned i = 0; i < opt->threads; i++) {
        result->edges += s->workers[i].edges;
        result->deadlocks += s->workers[i].deadlocks;
    }
    result->seconds = seconds;
    result->complete = code == 0;
    snprintf(result->stopped, sizeof result->stopped, "%s", code ? s->stopped : "");
    result->safe = !s->counters;
    result->marking_bytes = s->marking_bytes;
    size_t record_memory = 0;
    for (unsigned i = 0; i < opt->threads; i++) {
        if (s->workers[i].arena) {
            hh_arena_stats st;
            hh_arena_get_stats(s->workers[i].arena, &st);
            record_memory += st.allocated;
        }
    }
    if (opt->alloc == ALLOC_POOL) { /* what the pool holds, pages and all */
        hh_pool_stats st;
        hh_pool_get_stats(s->pool, &st);
        record_memory = st.pages * ((size_t)64 << 10);
    } else if (opt->alloc == ALLOC_MALLOC && result->states > 0) {
        /* What malloc rounds a record up to (its own headers not counted). */
        record *sample = malloc(s->record_bytes);
        record_memory = result->states * (sample ? malloc_usable_size(sample) : s->record_bytes);
        free(sample);
    }
    if (result->states) {
        size_t table_bytes = atomic_load(&s->table_slots) * sizeof(uint64_t);
        result->bytes_per_state = (double)(record_memory + table_bytes) / (double)result->states;
    }
    record *dead = atomic_load(&s->deadlock);
    if (dead != NULL) {
        result->found_deadlock = true;
        size_t len = 0;
        for (record *r = dead; r->parent; r = r->parent) len++;
        result->witness = malloc((len + 1) * sizeof *result->witness);
        if (result->witness == NULL) {
            fprintf(stderr, "pnexplore: out of memory for the deadlock's witness\n");
            exit(1);
        }
        result->witness_length = len;
        for (record *r = dead; r->parent; r = r->parent) result->witness[--len] = r->via;
    }
}

/* Frees whatever prepare and the run made (prepare may have stopped half
 * way: everything not made is NULL or not counted). */
static void give_back(shared *s) {
    const explore_options *opt = s->opt;
    table *tables = opt->store == STORE_SHARED ? &s->main : s->buckets;
    unsigned count = opt->store == STORE_SHARED ? (s->main.slots != NULL) : s->buckets_made;
    if (opt->alloc == ALLOC_MALLOC) {
        for (unsigned b = 0; b < count; b++) {
            for (uint64_t i = 0; i <= tables[b].mask; i++) {
                uint64_t v = atomic_load(&tables[b].slots[i]);
                if (v) free((void *)(uintptr_t)(v & PTR_MASK));
            }
        }
    }
    for (unsigned b = 0; b < count; b++) table_free(&tables[b]);
    free(s->buckets);
    for (unsigned i = 0; s->workers && i < opt->threads; i++) {
        free(s->workers[i].candidate);
        free(s->workers[i].own.items);
        free(s->workers[i].offered.items);
        hh_arena_destroy(s->workers[i].arena);
    }
    free(s->workers);
    if (s->pool) hh_pool_destroy(s->pool);
}

/* One attempt with a marking encoding: the stop code (0 complete, 1 stopped
 * early, 2 restart with counters), or -1 with `*outcome` when it could not
 * start.  `result` is zeroed first. */
static int attempt(const net *n, const explore_options *opt, bool counters,
                   explore_result *result, explore_outcome *outcome) {
    memset(result, 0, sizeof *result);
    shared s;
    memset(&s, 0, sizeof s);
    s.n = n;
    s.opt = opt;
    s.counters = counters;
    s.marking_bytes = counters ? (size_t)n->n_places * 2 : ((size_t)n->n_places + 7) / 8;
    s.header_bytes = opt->stop_at_deadlock ? sizeof(record) : 0;
    s.record_bytes = s.header_bytes + s.marking_bytes;
    /* Packed as tightly as the marking's reads allow: bytes, or 16-bit counters. */
    s.record_align = s.header_bytes ? _Alignof(record) : counters ? 2 : 1;
    pthread_mutex_init(&s.stop_lock, NULL);
    int code = -1;
    *outcome = prepare(&s, result);
    if (*outcome == EXPLORE_STARTED) {
        double start = now();
        code = run(&s, result, outcome);
        if (code >= 0) collect(&s, code, now() - start, result);
    }
    give_back(&s);
    return code;
}

explore_outcome explore(const net *n, const explore_options *options, explore_result *result) {
    /* One bit per place first; the first place with two tokens restarts it
     * with counters. */
    explore_outcome outcome;
    int code = attempt(n, options, false, result, &outcome);
    if (code == 2) {
        free(result->witness);
        attempt(n, options, true, result, &outcome);
    }
    return outcome;
}
