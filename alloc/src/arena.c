/* Bump arenas.  Chunks are mappings of their own, 2 MiB-aligned and advised
 * for huge pages like the regions; the arena's own header lives at the
 * start of its first chunk, so creating one costs one mmap.  Chunks double in
 * size (2 MiB to 64 MiB) so that big arenas need few of them; reset keeps
 * them all and fills them again in order. */
#include <errno.h>
#include <string.h>

#include "hugeheap.h"
#include "internal.h"

#define FIRST_CHUNK HH_UNIT
#define MAX_GROWN_CHUNK ((size_t)64 << 20)

typedef struct arena_chunk {
    struct arena_chunk *next; /* the next chunk in allocation order */
    size_t size;
    bool hugetlb;
} arena_chunk;

/* The cursor first: hh_arena_alloc_inline (hugeheap.h) reads it through a
 * pointer to the arena, a pointer to its first member. */
struct hh_arena {
    hh_arena_cursor_ cursor;
    arena_chunk *first, *last; /* the current chunk: cursor.chunk_ */
    size_t reserved, chunks;
};
_Static_assert(offsetof(struct hh_arena, cursor) == 0, "hh_arena_alloc_inline reads the cursor "
               "at the arena's address");

#define CHUNK_HEADER _hh_align_up(sizeof(arena_chunk), 64)
#define ARENA_HEADER _hh_align_up(sizeof(struct hh_arena), 64)

static arena_chunk *chunk_map(size_t size) {
    bool hugetlb = _hh_cfg.thp == HH_THP_HUGETLB;
    arena_chunk *chunk = _hh_os_map_aligned(size, HH_UNIT, 0, &hugetlb,
                                             _hh_cfg.thp != HH_THP_OFF);
    if (chunk == NULL) return NULL;
    _hh_stats_count_api((intptr_t)size);
    chunk->next = NULL;
    chunk->size = size;
    chunk->hugetlb = hugetlb;
    return chunk;
}

static void chunk_unmap(arena_chunk *chunk) {
    size_t size = chunk->size;
    _hh_os_unmap_mapped(chunk, size, chunk->hugetlb);
    _hh_stats_count_api(-(intptr_t)size);
}

static char *chunk_start(const hh_arena *arena, arena_chunk *chunk) {
    char *start = (char *)chunk + CHUNK_HEADER;
    return chunk == arena->first ? start + ARENA_HEADER : start;
}

static void enter(hh_arena *arena, arena_chunk *chunk) {
    arena->cursor.chunk_ = chunk;
    arena->cursor.next_ = chunk_start(arena, chunk);
    arena->cursor.end_ = (char *)chunk + chunk->size;
}

HH_API hh_arena *hh_arena_create(void) {
    _hh_init();
    arena_chunk *chunk = chunk_map(FIRST_CHUNK);
    if (chunk == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    hh_arena *arena = (hh_arena *)((char *)chunk + CHUNK_HEADER);
    memset(arena, 0, sizeof *arena);
    arena->first = arena->last = chunk;
    arena->reserved = chunk->size;
    arena->chunks = 1;
    enter(arena, chunk);
    return arena;
}

/* Moves to the next chunk that can hold `need` bytes, reusing chunks kept by
 * reset before mapping a new one. */
static bool next_chunk(hh_arena *arena, size_t need) {
    const arena_chunk *current = arena->cursor.chunk_;
    for (arena_chunk *c = current->next; c != NULL; c = c->next) {
        if ((size_t)((char *)c + c->size - chunk_start(arena, c)) >= need) {
            enter(arena, c);
            return true;
        }
    }
    size_t size = arena->last->size * 2;
    if (size > MAX_GROWN_CHUNK) size = MAX_GROWN_CHUNK;
    if (need > SIZE_MAX - CHUNK_HEADER - HH_UNIT) return false;
    size_t at_least = _hh_align_up(need + CHUNK_HEADER, HH_UNIT);
    if (size < at_least) size = at_least;
    arena_chunk *chunk = chunk_map(size);
    if (chunk == NULL) return false;
    arena->last->next = chunk;
    arena->last = chunk;
    arena->reserved += size;
    arena->chunks++;
    enter(arena, chunk);
    return true;
}

HH_API void *hh_arena_alloc(hh_arena *arena, size_t size, size_t alignment) {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > HH_UNIT) {
        errno = EINVAL;
        return NULL;
    }
    if (size == 0) size = 1; /* distinct pointers, as malloc(0) gives */
    if (size > HH_MAX_ALLOC) {
        errno = ENOMEM;
        return NULL;
    }
    for (;;) {
        uintptr_t at = _hh_align_up((uintptr_t)arena->cursor.next_, alignment);
        if (at <= (uintptr_t)arena->cursor.end_ && size <= (uintptr_t)arena->cursor.end_ - at) {
            arena->cursor.next_ = (char *)(at + size);
            arena->cursor.allocated_ += size;
            return (void *)at;
        }
        if (!next_chunk(arena, size + alignment)) {
            errno = ENOMEM;
            return NULL;
        }
    }
}

HH_API void hh_arena_reset(hh_arena *arena) {
    arena->cursor.allocated_ = 0;
    enter(arena, arena->first);
}

HH_API void hh_arena_destroy(hh_arena *arena) {
    if (arena == NULL) return;
    arena_chunk *chunk = arena->first->next; /* the first holds the arena: last */
    while (chunk != NULL) {
        arena_chunk *next = chunk->next;
        chunk_unmap(chunk);
        chunk = next;
    }
    chunk_unmap(arena->first);
}

HH_API void hh_arena_get_stats(const hh_arena *arena, hh_arena_stats *stats) {
    stats->allocated = arena->cursor.allocated_;
    stats->reserved = arena->reserved;
    stats->chunks = arena->chunks;
}
