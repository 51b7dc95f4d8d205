/* Bump arenas.  Chunks are mappings of their own, 2 MiB-aligned, in huge
 * pages once the heap is huge (api_memory.c); the arena's own header lives
 * at the start of its first chunk, so creating one costs one mmap.  Chunks
 * double in size (2 MiB to 64 MiB) so that big arenas need few of them;
 * reset keeps them all and fills them again in order.
 *
 * Invariants (_hh_arena_is_valid): the arena's header is at the start of its
 * first chunk; the chunks, linked in allocation order from `first`, end at
 * `last`, number `chunks` and add up to `reserved` bytes, each a whole
 * number of 2 MiB units on a 2 MiB boundary; the cursor's chunk is one of
 * them, and the cursor lies within it, past the chunk's headers; no more
 * bytes are handed out than the chunks hold.  The program moves the cursor
 * itself (hh_arena_alloc_inline, hh_arena_release: hugeheap.h), so every
 * call checks it again. */
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
    bool hugetlb = false;
    arena_chunk *chunk = _hh_api_memory_map(size, &hugetlb);
    if (chunk == NULL) return NULL;
    HH_ASSERT(((uintptr_t)chunk & HH_UNIT_MASK) == 0 && (size & HH_UNIT_MASK) == 0);
    chunk->next = NULL;
    chunk->size = size;
    chunk->hugetlb = hugetlb;
    return chunk;
}

static void chunk_unmap(arena_chunk *chunk) {
    _hh_api_memory_unmap(chunk, chunk->size, chunk->hugetlb);
}

static char *chunk_start(const hh_arena *arena, const arena_chunk *chunk) {
    char *start = (char *)chunk + CHUNK_HEADER;
    return chunk == arena->first ? start + ARENA_HEADER : start;
}

/* The cursor lies within its chunk (cheap: no walk). */
static bool cursor_in_chunk(const hh_arena *arena) {
    const arena_chunk *chunk = arena->cursor.chunk_;
    return chunk != NULL && arena->cursor.next_ >= chunk_start(arena, chunk) &&
           arena->cursor.next_ <= arena->cursor.end_ &&
           arena->cursor.end_ == (char *)chunk + chunk->size;
}

bool _hh_arena_is_valid(const hh_arena *arena) {
    const arena_chunk *first = arena->first;
    if (first == NULL || (const char *)arena != (const char *)first + CHUNK_HEADER) return false;
    size_t n = 0, bytes = 0;
    bool cursor_seen = false;
    const arena_chunk *c = first;
    for (;; c = c->next) {
        if (++n > arena->chunks || ((uintptr_t)c & HH_UNIT_MASK) || c->size < FIRST_CHUNK ||
            (c->size & HH_UNIT_MASK) || c->size > SIZE_MAX - bytes) {
            return false;
        }
        bytes += c->size;
        if (c == arena->cursor.chunk_) cursor_seen = true;
        if (c->next == NULL) break;
    }
    return c == arena->last && n == arena->chunks && bytes == arena->reserved && cursor_seen &&
           cursor_in_chunk(arena) && arena->cursor.allocated_ <= arena->reserved;
}

static void enter(hh_arena *arena, arena_chunk *chunk) {
    arena->cursor.chunk_ = chunk;
    arena->cursor.next_ = chunk_start(arena, chunk);
    arena->cursor.end_ = (char *)chunk + chunk->size;
    HH_ASSERT(cursor_in_chunk(arena));
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
    HH_ASSERT_EXPENSIVE(_hh_arena_is_valid(arena));
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
    HH_ASSERT(arena->last->next == NULL);
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
    HH_ASSERT((size_t)(arena->cursor.end_ - arena->cursor.next_) >= need);
    HH_ASSERT_EXPENSIVE(_hh_arena_is_valid(arena));
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
    HH_ASSERT(cursor_in_chunk(arena));
    HH_ASSERT_EXPENSIVE(_hh_arena_is_valid(arena));
    for (;;) {
        uintptr_t at = _hh_align_up((uintptr_t)arena->cursor.next_, alignment);
        if (at <= (uintptr_t)arena->cursor.end_ && size <= (uintptr_t)arena->cursor.end_ - at) {
            arena->cursor.next_ = (char *)(at + size);
            arena->cursor.allocated_ += size;
            /* Aligned, within the chunk, after what was handed out before. */
            HH_ASSERT((at & (alignment - 1)) == 0 && cursor_in_chunk(arena));
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
    HH_ASSERT_EXPENSIVE(_hh_arena_is_valid(arena));
}

HH_API void hh_arena_destroy(hh_arena *arena) {
    if (arena == NULL) return;
    HH_ASSERT_EXPENSIVE(_hh_arena_is_valid(arena));
    /* Every chunk is unmapped, and nothing else: as many as the arena
     * counts, as many bytes as it holds. */
    size_t chunks = arena->chunks, reserved = arena->reserved;
    arena_chunk *first = arena->first;
    arena_chunk *chunk = first->next; /* the first holds the arena: last */
    while (chunk != NULL) {
        arena_chunk *next = chunk->next;
        HH_ASSERT(chunks > 1 && chunk->size < reserved);
        chunks--;
        reserved -= chunk->size;
        chunk_unmap(chunk);
        chunk = next;
    }
    HH_ASSERT(chunks == 1 && reserved == first->size);
    chunk_unmap(first);
}

HH_API void hh_arena_get_stats(const hh_arena *arena, hh_arena_stats *stats) {
    HH_ASSERT_EXPENSIVE(_hh_arena_is_valid(arena));
    stats->allocated = arena->cursor.allocated_;
    stats->reserved = arena->reserved;
    stats->chunks = arena->chunks;
}
