/* Where states live, named by 32-bit references (what the table's 4-byte
 * slots hold).  A reference is a page and a place in it: with --alloc arena a
 * page is 64 KiB of records packed byte by byte, taken from the thread's
 * hugeheap arena; with --alloc pool or malloc it is 4,096 pointers to
 * records of their own (hugeheap pools by size, or malloc).  Each thread
 * fills pages of its own; page 0's first reference, 0, means none. */
#ifndef PNEXPLORE_STATES_H
#define PNEXPLORE_STATES_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hugeheap.h"

typedef enum { ALLOC_ARENA, ALLOC_POOL, ALLOC_MALLOC } alloc_kind;

typedef uint32_t state_ref;

#define POOL_LARGEST 16384 /* hugeheap pools' largest object */

typedef struct state_store {
    alloc_kind alloc;
    size_t header;                 /* bytes before each marking (a witness's parent and transition) */
    unsigned page_bits;            /* a reference's bits within its page */
    uint32_t max_pages;
    uint8_t **pages;               /* page number -> records (arena) or pointers */
    _Atomic(uint32_t) pages_used;
    pthread_mutex_t pools_lock;    /* making a pool of a size not met before */
    _Atomic(hh_pool *) pools[POOL_LARGEST / 16];
} state_store;

/* A thread's page being filled. */
typedef struct state_cursor {
    hh_arena *arena;               /* --alloc arena */
    uint32_t page, used;           /* page number, and bytes or pointers used in it */
    bool has_page;
    size_t pointer_pages;          /* --alloc pool or malloc: pages of pointers made */
    size_t object_bytes;           /* --alloc malloc: what malloc gave for records */
} state_cursor;

typedef enum {
    STATES_ADDED,
    STATES_NO_MEMORY,      /* the allocator gave nothing */
    STATES_NO_REFERENCES,  /* the 32-bit references are used up */
    STATES_TOO_LARGE,      /* a record too large for --alloc pool */
} states_outcome;

/* False (errno says why) if the page directory cannot be mapped. */
bool states_init(state_store *s, alloc_kind alloc, size_t header);
void states_free(state_store *s);
bool states_cursor_init(state_store *s, state_cursor *c);
void states_cursor_free(state_store *s, state_cursor *c);

/* Stores a marking record (after its header: `parent` and `via`, if the
 * store keeps them) and names it in *ref. */
states_outcome states_add(state_store *s, state_cursor *c, const uint8_t *marking, size_t length,
                          state_ref parent, uint32_t via, state_ref *ref);
/* Takes back the record the cursor stored last (a race for its slot lost). */
void states_take_back(state_store *s, state_cursor *c, state_ref ref, size_t length);

static inline uint8_t *states_record(const state_store *s, state_ref ref) {
    uint8_t *page = s->pages[ref >> s->page_bits];
    uint32_t at = ref & ((1u << s->page_bits) - 1);
    return s->alloc == ALLOC_ARENA ? page + at : ((uint8_t **)page)[at];
}

static inline const uint8_t *states_marking(const state_store *s, state_ref ref) {
    return states_record(s, ref) + s->header;
}

/* A witness's links: the state a state was reached from, and by which transition. */
state_ref states_parent(const state_store *s, state_ref ref, uint32_t *via);
/* The bytes the records take, with the page directory and the cursors'
 * pages (what a pool holds, pages and all; what malloc gave). */
size_t states_memory(const state_store *s, const state_cursor *cursors, unsigned count);

#endif
