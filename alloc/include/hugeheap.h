/* libhugeheap: a malloc that backs the heap with 2 MiB transparent huge pages
 * and scales across threads.
 *
 * Most programs need nothing from this header: preload the shared library
 * (LD_PRELOAD=libhugeheap.so) or link the static archive, and every malloc,
 * free, new and delete goes through hugeheap.  The functions below are the
 * same allocator under its own names, for programs that want to call it
 * explicitly next to another malloc, and for tests.
 *
 * Environment (read once, at the first allocation):
 *   HUGEHEAP_THP=on|off|hugetlb  huge pages: transparent (default), none, or
 *                                explicit pages from the kernel's pool,
 *                                falling back to transparent ones when it is
 *                                empty.  GLIBC_THP_ALWAYS=1 means on.
 *   HUGEHEAP_STATS=1             summary on stderr at exit
 *   HUGEHEAP_STATS=json:PATH     one JSON object per process appended to PATH
 *                                (%p in PATH becomes the process id)
 *   HUGEHEAP_RELEASE_DELAY_MS=N  free memory beyond the highest demand of the
 *                                last N to 2N ms goes back to the kernel
 *                                (default 10000)
 *   HUGEHEAP_HUGE_THRESHOLD_MB=N the heap stays in 4 KiB pages until N MiB
 *                                are mapped for it, then huge (default 32;
 *                                0: huge from the first byte)
 *   HUGEHEAP_POOL_MAX_MB=N       with hugetlb, at most N MiB of the kernel's
 *                                pool held at once (default: no cap); beyond
 *                                it, transparent huge pages as for an empty pool
 *
 * Frees are checked: a double free, a pointer into the middle of a block or
 * one that is not ours stops the program with one line naming the pointer.
 */
#ifndef HUGEHEAP_H
#define HUGEHEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HUGEHEAP_VERSION "0.1.0"

void *hh_malloc(size_t size);
void hh_free(void *ptr);
void *hh_calloc(size_t count, size_t size);
void *hh_realloc(void *ptr, size_t size);
void *hh_reallocarray(void *ptr, size_t count, size_t size);
void *hh_memalign(size_t alignment, size_t size);
int hh_posix_memalign(void **out, size_t alignment, size_t size);
void *hh_aligned_alloc(size_t alignment, size_t size);
void *hh_valloc(size_t size);
void *hh_pvalloc(size_t size);
size_t hh_usable_size(void *ptr);
/* C23's sized frees: size is what the block was allocated with (or 0, not
 * checked); a size larger than the block stops the program. */
void hh_free_sized(void *ptr, size_t size);
void hh_free_aligned_sized(void *ptr, size_t alignment, size_t size);
/* Gives every cached empty 2 MiB unit back to the kernel now; 1 if any. */
int hh_trim(size_t pad);
/* Writes the statistics summary (as HUGEHEAP_STATS=1 does at exit) to fd. */
void hh_print_stats(int fd);
/* True if ptr is a block that hugeheap handed out and has not taken back. */
bool hh_owns(const void *ptr);

/* Same layout as glibc's struct mallinfo2. */
struct hh_mallinfo2 {
    size_t arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks, uordblks, fordblks, keepcost;
};
struct hh_mallinfo2 hh_mallinfo2(void);

/* ---- Arenas: bump allocation for objects that die together ----
 *
 * The per-thread bump arenas of parallel state-space search ("mara"): an
 * object is a pointer increment, nothing is freed alone, and reset or destroy
 * frees everything at once.  Chunks are 2 MiB-aligned and huge-page backed
 * (HUGEHEAP_THP applies).  An arena is not locked: give each thread its own. */
typedef struct hh_arena hh_arena;

typedef struct hh_arena_stats {
    size_t allocated; /* bytes handed out since creation or the last reset */
    size_t reserved;  /* bytes of the chunks the arena holds */
    size_t chunks;
} hh_arena_stats;

/* NULL with errno ENOMEM if no memory. */
hh_arena *hh_arena_create(void);
/* alignment: a power of two (1 .. 2 MiB); NULL with errno EINVAL if it is not,
 * ENOMEM if no memory. size 0 gives a unique pointer. */
void *hh_arena_alloc(hh_arena *arena, size_t size, size_t alignment);
/* Where an arena's next object goes: the first member of every arena, read
 * and moved by hh_arena_alloc_inline.  Private: a program passes the arena
 * along and never touches it; its layout may change with the library's
 * major version. */
typedef struct hh_arena_cursor_ {
    char *next_, *end_; /* free space in the current chunk */
    size_t allocated_;  /* bytes handed out since creation or the last reset */
    void *chunk_;       /* the current chunk */
} hh_arena_cursor_;
/* hh_arena_alloc, the same in every respect, without a call while the
 * current chunk has room: for allocation loops where the call is a cost (a
 * term heap, say).  Anything else goes to hh_arena_alloc. */
static inline void *hh_arena_alloc_inline(hh_arena *arena, size_t size, size_t alignment) {
    hh_arena_cursor_ *cursor = (hh_arena_cursor_ *)(void *)arena;
    uintptr_t at = ((uintptr_t)cursor->next_ + alignment - 1) & ~(uintptr_t)(alignment - 1);
    if (size != 0 && alignment != 0 && (alignment & (alignment - 1)) == 0 &&
        alignment <= ((size_t)2 << 20) && at <= (uintptr_t)cursor->end_ &&
        size <= (uintptr_t)cursor->end_ - at) {
        cursor->next_ = (char *)at + size;
        cursor->allocated_ += size;
        return (void *)at;
    }
    return hh_arena_alloc(arena, size, alignment);
}
/* Forgets every object; keeps the chunks for the next objects. */
void hh_arena_reset(hh_arena *arena);
/* A point in an arena's allocations, to release back to: a stack of objects
 * that die together when the computation that made them returns (a
 * derivation step's terms), inside an arena that lives longer. */
typedef struct hh_arena_mark {
    hh_arena_cursor_ at_; /* private: the arena's cursor then */
} hh_arena_mark;
/* Both inline (the cursor is all they touch): a derivation step saves and
 * releases as often as it allocates. */
static inline hh_arena_mark hh_arena_save(const hh_arena *arena) {
    hh_arena_mark mark = {*(const hh_arena_cursor_ *)(const void *)arena};
    return mark;
}
/* Forgets the objects allocated since mark was saved (the mark must be from
 * this arena, since its last reset); keeps the chunks for the next objects.
 * Marks saved after this one become invalid. */
static inline void hh_arena_release(hh_arena *arena, hh_arena_mark mark) {
    *(hh_arena_cursor_ *)(void *)arena = mark.at_;
}
/* Forgets every object and gives all memory back. */
void hh_arena_destroy(hh_arena *arena);
void hh_arena_get_stats(const hh_arena *arena, hh_arena_stats *stats);

/* ---- Pools: fixed-size objects, any thread ----
 *
 * The tabling paper's allocator: each thread allocates from pages of its own
 * without locks; a free by another thread reaches the page with one atomic
 * push; a global list of pages with free room, under a lock, serves threads
 * whose pages are full; a thread that exits hands its pages to that list.
 * Objects are aligned to 16 bytes. */
typedef struct hh_pool hh_pool;

typedef struct hh_pool_stats {
    size_t object_size; /* after rounding up to a multiple of 16 */
    size_t in_use;      /* objects allocated and not freed */
    size_t pages;       /* 64 KiB pages the pool holds */
} hh_pool_stats;

/* object_size: 1 .. 16 KiB. NULL with errno EINVAL (size) or ENOMEM. */
hh_pool *hh_pool_create(size_t object_size);
/* NULL with errno ENOMEM if no memory. */
void *hh_pool_alloc(hh_pool *pool);
/* From any thread. An object of another pool stops the program with a message. */
void hh_pool_free(hh_pool *pool, void *object);
/* Frees every object and gives all memory back; no thread may use the pool
 * any more (threads that used it need not have exited). */
void hh_pool_destroy(hh_pool *pool);
void hh_pool_get_stats(const hh_pool *pool, hh_pool_stats *stats);

#ifdef __cplusplus
}
#endif

#endif
