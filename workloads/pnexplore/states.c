/* Where states live (see states.h). */
#include "states.h"

#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define ARENA_PAGE_BITS 16   /* 64 KiB of records */
#define POINTER_PAGE_BITS 12 /* 4,096 pointers */

static size_t directory_bytes(const state_store *s) {
    return (size_t)s->max_pages * sizeof *s->pages;
}

bool states_init(state_store *s, alloc_kind alloc, size_t header) {
    memset(s, 0, sizeof *s);
    s->alloc = alloc;
    s->header = header;
    s->page_bits = alloc == ALLOC_ARENA ? ARENA_PAGE_BITS : POINTER_PAGE_BITS;
    s->max_pages = (uint32_t)(((uint64_t)1 << 32) >> s->page_bits);
    /* Reserved, touched as pages are made. */
    void *mapped = mmap(NULL, directory_bytes(s), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mapped == MAP_FAILED) return false;
    s->pages = mapped;
    pthread_mutex_init(&s->pools_lock, NULL);
    return true;
}

void states_free(state_store *s) {
    uint32_t used = atomic_load(&s->pages_used);
    if (s->alloc != ALLOC_ARENA) {
        for (uint32_t p = 0; p < used; p++) {
            uint8_t **pointers = (uint8_t **)s->pages[p];
            for (uint32_t i = 0; pointers && s->alloc == ALLOC_MALLOC && i < 1u << s->page_bits; i++) {
                free(pointers[i]);
            }
            free(pointers);
        }
        for (size_t k = 0; k < POOL_LARGEST / 16; k++) {
            hh_pool *pool = atomic_load(&s->pools[k]);
            if (pool) hh_pool_destroy(pool);
        }
    }
    if (s->pages) munmap(s->pages, directory_bytes(s));
    s->pages = NULL;
}

bool states_cursor_init(state_store *s, state_cursor *c) {
    memset(c, 0, sizeof *c);
    if (s->alloc == ALLOC_ARENA) c->arena = hh_arena_create();
    return s->alloc != ALLOC_ARENA || c->arena != NULL;
}

void states_cursor_free(state_store *s, state_cursor *c) {
    (void)s;
    hh_arena_destroy(c->arena);
    c->arena = NULL;
}

/* `count` consecutive page numbers; false when the references run out. */
static bool claim_pages(state_store *s, uint32_t count, uint32_t *first) {
    uint32_t used = atomic_load_explicit(&s->pages_used, memory_order_relaxed);
    do {
        if (count > s->max_pages - used) return false;
    } while (!atomic_compare_exchange_weak(&s->pages_used, &used, used + count));
    *first = used;
    return true;
}

/* A fresh page of the cursor's own (pages of pointers for pool and malloc). */
static states_outcome new_page(state_store *s, state_cursor *c) {
    uint32_t page;
    if (!claim_pages(s, 1, &page)) return STATES_NO_REFERENCES;
    uint8_t *memory = s->alloc == ALLOC_ARENA
                          ? hh_arena_alloc(c->arena, (size_t)1 << s->page_bits, 16)
                          : calloc((size_t)1 << s->page_bits, sizeof(uint8_t *));
    if (memory == NULL) return STATES_NO_MEMORY;
    s->pages[page] = memory;
    c->pointer_pages += s->alloc != ALLOC_ARENA;
    c->page = page;
    c->used = page == 0; /* reference 0 means none */
    c->has_page = true;
    return STATES_ADDED;
}

/* A pool's object for `bytes` (one pool per 16-byte size, made when first asked). */
static void *pool_object(state_store *s, size_t bytes) {
    size_t k = (bytes + 15) / 16 - 1;
    hh_pool *pool = atomic_load_explicit(&s->pools[k], memory_order_acquire);
    if (pool == NULL) {
        pthread_mutex_lock(&s->pools_lock);
        pool = atomic_load(&s->pools[k]);
        if (pool == NULL) {
            pool = hh_pool_create((k + 1) * 16);
            atomic_store_explicit(&s->pools[k], pool, memory_order_release);
        }
        pthread_mutex_unlock(&s->pools_lock);
        if (pool == NULL) return NULL;
    }
    return hh_pool_alloc(pool);
}

/* Room for a record of `bytes` in arena pages: the cursor's page, a new one,
 * or (past a page) consecutive pages of its own. */
static states_outcome arena_room(state_store *s, state_cursor *c, size_t bytes, state_ref *ref,
                                 uint8_t **at) {
    size_t page_bytes = (size_t)1 << s->page_bits;
    if (bytes > page_bytes - 1) {
        uint32_t count = (uint32_t)((bytes + 1 + page_bytes - 1) / page_bytes), first;
        if (!claim_pages(s, count, &first)) return STATES_NO_REFERENCES;
        uint8_t *memory = hh_arena_alloc(c->arena, count * page_bytes, 16);
        if (memory == NULL) return STATES_NO_MEMORY;
        for (uint32_t i = 0; i < count; i++) s->pages[first + i] = memory + i * page_bytes;
        uint32_t skip = first == 0;
        *ref = first << s->page_bits | skip;
        *at = memory + skip;
        return STATES_ADDED;
    }
    if (!c->has_page || c->used + bytes > page_bytes) {
        states_outcome o = new_page(s, c);
        if (o != STATES_ADDED) return o;
    }
    *ref = c->page << s->page_bits | c->used;
    *at = s->pages[c->page] + c->used;
    c->used += (uint32_t)bytes;
    return STATES_ADDED;
}

states_outcome states_add(state_store *s, state_cursor *c, const uint8_t *marking, size_t length,
                          state_ref parent, uint32_t via, state_ref *ref) {
    size_t bytes = s->header + length;
    uint8_t *record;
    if (s->alloc == ALLOC_ARENA) {
        states_outcome o = arena_room(s, c, bytes, ref, &record);
        if (o != STATES_ADDED) return o;
    } else {
        if (s->alloc == ALLOC_POOL && bytes > POOL_LARGEST) return STATES_TOO_LARGE;
        if (!c->has_page || c->used == 1u << s->page_bits) {
            states_outcome o = new_page(s, c);
            if (o != STATES_ADDED) return o;
        }
        record = s->alloc == ALLOC_POOL ? pool_object(s, bytes) : malloc(bytes);
        if (record == NULL) return STATES_NO_MEMORY;
        if (s->alloc == ALLOC_MALLOC) c->object_bytes += malloc_usable_size(record);
        ((uint8_t **)s->pages[c->page])[c->used] = record;
        *ref = c->page << s->page_bits | c->used++;
    }
    if (s->header) {
        memcpy(record, &parent, sizeof parent);
        memcpy(record + sizeof parent, &via, sizeof via);
    }
    memcpy(record + s->header, marking, length);
    return STATES_ADDED;
}

void states_take_back(state_store *s, state_cursor *c, state_ref ref, size_t length) {
    if (!c->has_page || ref >> s->page_bits != c->page) return; /* a record of pages of its own stays */
    if (s->alloc == ALLOC_ARENA) {
        c->used -= (uint32_t)(s->header + length);
        return;
    }
    uint8_t **slot = &((uint8_t **)s->pages[c->page])[--c->used];
    if (s->alloc == ALLOC_POOL) {
        size_t k = (s->header + length + 15) / 16 - 1;
        hh_pool_free(atomic_load(&s->pools[k]), *slot);
    } else {
        c->object_bytes -= malloc_usable_size(*slot);
        free(*slot);
    }
    *slot = NULL;
}

state_ref states_parent(const state_store *s, state_ref ref, uint32_t *via) {
    const uint8_t *record = states_record(s, ref);
    state_ref parent;
    memcpy(&parent, record, sizeof parent);
    memcpy(via, record + sizeof parent, sizeof *via);
    return parent;
}

size_t states_memory(const state_store *s, const state_cursor *cursors, unsigned count) {
    size_t bytes = ((size_t)atomic_load(&s->pages_used) * sizeof *s->pages + 4095) / 4096 * 4096;
    for (unsigned i = 0; i < count; i++) {
        if (cursors[i].arena) {
            hh_arena_stats st;
            hh_arena_get_stats(cursors[i].arena, &st);
            bytes += st.allocated;
        }
        bytes += cursors[i].pointer_pages * ((size_t)sizeof(uint8_t *) << s->page_bits);
        bytes += cursors[i].object_bytes;
    }
    if (s->alloc == ALLOC_POOL) { /* what the pools hold, pages and all */
        for (size_t k = 0; k < POOL_LARGEST / 16; k++) {
            hh_pool *pool = atomic_load(&s->pools[k]);
            if (pool == NULL) continue;
            hh_pool_stats st;
            hh_pool_get_stats(pool, &st);
            bytes += st.pages * ((size_t)64 << 10);
        }
    }
    return bytes;
}
