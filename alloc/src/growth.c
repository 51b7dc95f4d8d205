/* The growth heap: one coalescing heap, beside the size classes, for the
 * blocks whose sizes move.  Off by default; HUGEHEAP_GROWTH_HEAP=big gives
 * it the blocks of 1-16 KiB, and =on those and the smaller blocks realloc
 * grows or makes from NULL.
 *
 * Why: a class keeps the room its blocks had at their most (a block still
 * live pins its 64 KiB page), and that room serves only its own size again.
 * The classes of 1-16 KiB hold few blocks a page (64 to 4), so a program
 * whose vectors double through them (a C++ std::vector: cadical's watch
 * lists, clause arrays) leaves a page or more behind in each; in a process
 * of a few MiB that was 1.5 MiB of room beside 1.4 MiB of small blocks.
 * Here a freed block merges with its free neighbours and serves any size,
 * as glibc's heap does, and a block grows in place into a free neighbour.
 * Why it is off by default
 * (docs/notebook/2026-11-27-the-growth-heap-for-blocks-of-1-16-kib.md): a program that churns blocks of those sizes ran
 * 6.7x slower than in the size classes, at 0.91 of glibc's speed (mimalloc
 * and jemalloc ran at 3.8-4.3x glibc's), and the smaller blocks realloc
 * grows are hot (minisat's watch lists: 14% more instructions).
 * It is open while the heap is small and one thread uses it
 * (_hh_growth_open): there the classes' high-water marks are a large part
 * of a process's memory, while on large heaps the size classes' placement
 * ran minisat 8-10% faster for the same memory, and threads allocating at
 * once would wait on its lock (two threads ran 2.4-6.4x slower than with
 * the size classes, which scale).
 *
 * Layout: spans of 256 KiB from the page heap, aligned to their size (a
 * pointer's span is one mask away); the descriptors of their 64 KiB slots say
 * "growth" (pointer_kind.h), so a pointer's kind is still one lookup.  A
 * span's first 4 KiB hold its header and two bitmaps over its 16-byte granules: `start` (a
 * block begins here) and `free` (the block beginning here is free).  Blocks
 * carry no header: a block's size is the distance to the next start, so a
 * 16-byte request takes 16 bytes, and a free of a pointer that starts no live
 * block (inside one, or freed already) is caught by the bitmaps, never by
 * trusting the program's memory.
 *
 * Free blocks are on doubly linked lists by size (one per granule count up to
 * 4 KiB, then eight per doubling), with a bitmap of the non-empty lists: a
 * block of up to 4 KiB is found without looking at a free block that does not
 * fit (the first of its size, else of the next size that has one); a
 * free block's first words are its links (encoded, as small pages' are) and
 * its size.  No two free blocks are neighbours.  One lock guards it all; it is
 * taken after the global lock, never before it, so a span is got from and
 * given back to the page heap with it released. */
#include <errno.h>
#include <string.h>

#include "internal.h"
#include "kind.h"

#define GRANULE_SHIFT 4
#define GRANULE ((size_t)1 << GRANULE_SHIFT)
#define SPAN_PAGES (HH_GROWTH_SPAN >> HH_OS_PAGE_SHIFT)
#define HEADER_BYTES HH_OS_PAGE
#define GRANULES ((uint32_t)((HH_GROWTH_SPAN - HEADER_BYTES) >> GRANULE_SHIFT))
#define WORDS (GRANULES / 64)
#define EXACT_BINS 256u /* one list per size up to 256 granules (4 KiB) */
#define BINS 320u       /* then 8 per doubling up to a whole span (304 used) */


typedef struct growth_span {
    struct growth_span *next; /* spans emptied by a flush, to give back */
    uint32_t used;            /* granules in live blocks */
    uint32_t written_pages;   /* pages written from the span's start */
    uint64_t start[WORDS];
    uint64_t free[WORDS];
} growth_span;

_Static_assert(sizeof(growth_span) <= HEADER_BYTES, "a span's header fits its first page");
_Static_assert(GRANULES % 64 == 0, "the bitmaps are whole words");

/* A free block's first words. */
typedef struct free_block {
    struct free_block *next, *prev; /* encoded */
    uint64_t granules;              /* only in blocks of two granules or more */
} free_block;

static hh_sublock growth_lock;
static free_block *bins[BINS];
static uint64_t nonempty[BINS / 64];
/* The top: the free tail of the newest span, carved from its front and on
 * no list (its bits are set like any free block's); empty at GRANULES. */
static growth_span *top_span;
static uint32_t top_start;
static unsigned empty_spans; /* spans holding no live block: one is kept */
static _Atomic(uint64_t) live_bytes, written_bytes, span_count; /* for the statistics */
/* False once the heap grew large or a second thread came: no new blocks. */
_Atomic(bool) _hh_growth_taking;
static _Atomic(uintptr_t) user_thread; /* the one thread it serves (0: none yet) */

/* ------------------------------------------------------------- geometry */

static growth_span *span_of(const void *p) {
    return (growth_span *)((uintptr_t)p & ~(uintptr_t)(HH_GROWTH_SPAN - 1));
}

static char *granule_address(growth_span *span, uint32_t g) {
    return (char *)span + HEADER_BYTES + ((size_t)g << GRANULE_SHIFT);
}

static uint32_t granule_of(const growth_span *span, const void *p) {
    return (uint32_t)(((uintptr_t)p - (uintptr_t)span - HEADER_BYTES) >> GRANULE_SHIFT);
}

/* The bitmaps change under the lock only; a thread reads its own live
 * block's extent without it (the bits that say so are stable while the block
 * is live), so every access is atomic, relaxed. */
static uint64_t word_at(const uint64_t *map, uint32_t w) {
    return __atomic_load_n(&map[w], __ATOMIC_RELAXED);
}
static bool bit(const uint64_t *map, uint32_t i) { return (word_at(map, i >> 6) >> (i & 63)) & 1; }
static void set_bit(uint64_t *map, uint32_t i) {
    __atomic_store_n(&map[i >> 6], word_at(map, i >> 6) | (uint64_t)1 << (i & 63),
                     __ATOMIC_RELAXED);
}
static void clear_bit(uint64_t *map, uint32_t i) {
    __atomic_store_n(&map[i >> 6], word_at(map, i >> 6) & ~((uint64_t)1 << (i & 63)),
                     __ATOMIC_RELAXED);
}

/* The first block start at or after `from`; GRANULES if none. */
static uint32_t next_start(const growth_span *span, uint32_t from) {
    if (from >= GRANULES) return GRANULES;
    uint32_t w = from >> 6;
    uint64_t word = word_at(span->start, w) & (~(uint64_t)0 << (from & 63));
    while (word == 0) {
        if (++w == WORDS) return GRANULES;
        word = word_at(span->start, w);
    }
    return (w << 6) + (uint32_t)__builtin_ctzll(word);
}

/* The last block start before `before` (> 0: granule 0 always starts one). */
static uint32_t previous_start(const growth_span *span, uint32_t before) {
    uint32_t last = before - 1;
    uint32_t w = last >> 6;
    uint64_t word = word_at(span->start, w) & (~(uint64_t)0 >> (63 - (last & 63)));
    while (word == 0) {
        HH_ASSERT(w > 0);
        word = word_at(span->start, --w);
    }
    return (w << 6) + 63u - (uint32_t)__builtin_clzll(word);
}

/* --------------------------------------------------------------- bins */

/* A link as stored, or a stored link as a pointer (the same XOR). */
static free_block *coded(const free_block *p) {
    return (free_block *)_hh_encode((const hh_block *)p);
}

static unsigned bin_of(uint32_t granules) {
    if (granules <= EXACT_BINS) return granules - 1;
    uint32_t w = granules - 1;
    unsigned top = 31u - (unsigned)__builtin_clz(w); /* 8 .. 13 */
    unsigned sub = (w >> (top - 3)) & 7u;
    return EXACT_BINS + ((top - 8u) << 3) + sub;
}

static uint32_t free_granules(growth_span *span, free_block *block) {
    uint32_t g = granule_of(span, block);
    if (g + 1 == GRANULES || bit(span->start, g + 1)) return 1;
    return (uint32_t)block->granules;
}

static void bin_insert(growth_span *span, uint32_t g, uint32_t granules) {
    free_block *block = (free_block *)granule_address(span, g);
    unsigned b = bin_of(granules);
    set_bit(span->start, g);
    set_bit(span->free, g);
    if (granules > 1) block->granules = granules;
    block->prev = coded(NULL);
    block->next = coded(bins[b]);
    if (bins[b] != NULL) bins[b]->prev = coded(block);
    bins[b] = block;
    nonempty[b >> 6] |= (uint64_t)1 << (b & 63);
}

static void bin_remove(free_block *block, uint32_t granules) {
    unsigned b = bin_of(granules);
    free_block *next = coded(block->next);
    free_block *prev = coded(block->prev);
    if (HH_UNLIKELY(((uintptr_t)next | (uintptr_t)prev) & 15)) _hh_free_list_corrupted(block);
    if (prev != NULL) {
        prev->next = coded(next);
    } else {
        HH_ASSERT(bins[b] == block);
        bins[b] = next;
        if (next == NULL) nonempty[b >> 6] &= ~((uint64_t)1 << (b & 63));
    }
    if (next != NULL) next->prev = coded(prev);
}

/* The first non-empty list from b on; BINS if none. */
static unsigned nonempty_from(unsigned b) {
    for (unsigned w = b >> 6; w < BINS / 64; w++) {
        uint64_t word = nonempty[w];
        if (w == b >> 6) word &= ~(uint64_t)0 << (b & 63);
        if (word != 0) return (w << 6) + (unsigned)__builtin_ctzll(word);
    }
    return BINS;
}

/* ------------------------------------------------------------- blocks */

/* The span's pages up to granule `end` (and the next free block's words)
 * are written from now on: the page heap counts them as held. */
static void note_written(growth_span *span, uint32_t end) {
    size_t bytes = HEADER_BYTES + ((size_t)end << GRANULE_SHIFT) + sizeof(free_block);
    size_t pages = (bytes + HH_OS_PAGE - 1) >> HH_OS_PAGE_SHIFT;
    if (pages > SPAN_PAGES) pages = SPAN_PAGES;
    if (pages <= span->written_pages) return;
    _hh_usage_count_unwritten(-(intptr_t)(pages - span->written_pages));
    atomic_fetch_add_explicit(&written_bytes, (pages - span->written_pages) << HH_OS_PAGE_SHIFT,
                              memory_order_relaxed);
    span->written_pages = (uint32_t)pages;
}

/* A live block of `granules` at g from now on: the span's books. */
static void *hand_out(growth_span *span, uint32_t g, uint32_t granules) {
    clear_bit(span->free, g);
    if (span->used == 0) empty_spans--;
    span->used += granules;
    atomic_fetch_add_explicit(&live_bytes, (uint64_t)granules << GRANULE_SHIFT,
                              memory_order_relaxed);
    return granule_address(span, g);
}

/* The top's free block now starts at `from` (its bits set there). */
static void move_top(uint32_t from) {
    top_start = from;
    if (from == GRANULES) return;
    set_bit(top_span->start, from);
    set_bit(top_span->free, from);
    note_written(top_span, from);
}

static void *alloc_locked(uint32_t granules) {
    unsigned b = bin_of(granules);
    free_block *found = NULL;
    uint32_t have = 0;
    if (granules > EXACT_BINS) { /* this list holds smaller blocks too: first fit */
        for (free_block *f = bins[b]; f != NULL; f = coded(f->next)) {
            uint32_t n = free_granules(span_of(f), f);
            if (n >= granules) {
                found = f;
                have = n;
                break;
            }
        }
    } else if (bins[b] != NULL) {
        found = bins[b];
        have = granules;
    }
    if (found == NULL && top_span != NULL && GRANULES - top_start >= granules) {
        uint32_t g = top_start;
        move_top(g + granules);
        return hand_out(top_span, g, granules);
    }
    if (found == NULL) {
        unsigned larger = nonempty_from(b + 1);
        if (larger == BINS) return NULL;
        found = bins[larger];
        have = free_granules(span_of(found), found);
    }
    HH_ASSERT(have >= granules);
    bin_remove(found, have);
    growth_span *span = span_of(found);
    uint32_t g = granule_of(span, found);
    if (have > granules) bin_insert(span, g + granules, have - granules);
    return hand_out(span, g, granules);
}

/* The size of the live block at ptr, or a stop naming what ptr is not. */
static uint32_t live_granules(growth_span *span, const void *ptr, const char *what) {
    uintptr_t offset = (uintptr_t)ptr - (uintptr_t)span;
    if (HH_UNLIKELY(offset < HEADER_BYTES || (offset & (GRANULE - 1)) != 0)) {
        _hh_fatal(offset < HEADER_BYTES ? what : HH_INSIDE_BLOCK, ptr);
    }
    uint32_t g = granule_of(span, ptr);
    if (HH_UNLIKELY(!bit(span->start, g))) {
        uint32_t owner = previous_start(span, g);
        _hh_fatal(bit(span->free, owner) ? what : HH_INSIDE_BLOCK, ptr);
    }
    if (HH_UNLIKELY(bit(span->free, g))) _hh_fatal(what, ptr);
    return next_start(span, g + 1) - g;
}

/* Frees the live block at g of `granules`, merged with free neighbours; the
 * span, if it is now empty and another empty one is kept, is taken out and
 * returned (for the caller to give back once the lock is released). */
static growth_span *free_locked(growth_span *span, uint32_t g, uint32_t granules) {
    span->used -= granules;
    atomic_fetch_sub_explicit(&live_bytes, (uint64_t)granules << GRANULE_SHIFT,
                              memory_order_relaxed);
    uint32_t end = g + granules;
    bool into_top = span == top_span && end == top_start;
    if (!into_top && end < GRANULES && bit(span->free, end)) {
        free_block *after = (free_block *)granule_address(span, end);
        uint32_t n = free_granules(span, after);
        bin_remove(after, n);
        clear_bit(span->free, end);
        clear_bit(span->start, end);
        end += n;
    }
    if (g > 0) {
        uint32_t before = previous_start(span, g);
        if (bit(span->free, before)) {
            bin_remove((free_block *)granule_address(span, before), g - before);
            clear_bit(span->start, g);
            g = before;
        }
    }
    if (into_top) {
        if (top_start < GRANULES) {
            clear_bit(span->free, top_start);
            clear_bit(span->start, top_start);
        }
        move_top(g);
    } else {
        bin_insert(span, g, end - g);
    }
    if (span->used != 0) return NULL;
    HH_ASSERT(g == 0 && (into_top || end == GRANULES));
    if (empty_spans == 0 || span == top_span) { /* kept: the top's span always is */
        empty_spans++;
        return NULL;
    }
    bin_remove((free_block *)granule_address(span, 0), GRANULES);
    return span;
}

/* ------------------------------------------------------------- spans */

static void mark_slots(growth_span *span, uint8_t growth) {
    for (size_t off = 0; off < HH_GROWTH_SPAN; off += HH_SPAGE) {
        hh_page *page = _hh_page_of((char *)span + off);
        HH_ASSERT(HH_SHARED_LOAD(page->span) == 0 &&
                  atomic_load_explicit(&page->owner, memory_order_relaxed) == 0);
        __atomic_store_n(&page->growth, growth, __ATOMIC_RELEASE);
    }
}

static void give_back(growth_span *span) {
    mark_slots(span, 0);
    _hh_usage_count_unwritten((intptr_t)(SPAN_PAGES - span->written_pages));
    atomic_fetch_sub_explicit(&span_count, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&written_bytes, (uint64_t)span->written_pages << HH_OS_PAGE_SHIFT,
                              memory_order_relaxed);
    _hh_pages_free(span, SPAN_PAGES, span->written_pages);
}

/* A new span from the page heap (no lock held), its free block not yet on a
 * list; NULL if the page heap has no memory. */
static growth_span *new_span(void) {
    bool zero = false;
    growth_span *span = _hh_pages_alloc(SPAN_PAGES, SPAN_PAGES, &zero);
    if (span == NULL) return NULL;
    if (!zero) memset(span, 0, sizeof *span);
    span->written_pages = 1;
    _hh_usage_count_unwritten((intptr_t)(SPAN_PAGES - 1));
    atomic_fetch_add_explicit(&span_count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&written_bytes, HH_OS_PAGE, memory_order_relaxed);
    mark_slots(span, 1);
    return span;
}

/* The new span's area is the top; what was left of the old top goes on a
 * list. */
static void add_span_locked(growth_span *span) {
    empty_spans++;
    if (top_span != NULL && top_start < GRANULES) {
        bin_insert(top_span, top_start, GRANULES - top_start);
    }
    top_span = span;
    move_top(0);
}

/* ------------------------------------------------------ a thread's cache */

/* A thread keeps blocks it freed, up to HH_GROWTH_CACHE_DEPTH of each size up
 * to HH_GROWTH_CACHE_SIZES granules, for its next blocks of that size: a
 * vector that grows frees one size and asks for the next, and most of those
 * meet a block of the size another vector just left, without the lock.  A
 * kept block is live to the bitmaps and carries the free mark (as a free
 * small block does), so a second free or a realloc of it is looked for in the
 * list of its size.  Only a live heap keeps blocks (its thread's exit gives
 * them back). */

static bool cache_push(hh_heap *heap, void *ptr, uint32_t granules) {
    if (granules > HH_GROWTH_CACHE_SIZES || !heap->alive ||
        !atomic_load_explicit(&_hh_growth_taking, memory_order_relaxed)) {
        return false;
    }
    unsigned i = granules - 1;
    if (heap->growth_cached[i] == HH_GROWTH_CACHE_DEPTH) return false;
    hh_block *block = ptr;
    block->next = _hh_encode(heap->growth_cache[i]);
    block->mark = _hh_free_mark;
    heap->growth_cache[i] = block;
    heap->growth_cached[i]++;
    return true;
}

static void *cache_pop(hh_heap *heap, uint32_t granules) {
    if (granules > HH_GROWTH_CACHE_SIZES) return NULL;
    unsigned i = granules - 1;
    hh_block *block = heap->growth_cache[i];
    if (block == NULL) return NULL;
    hh_block *next = _hh_decode(block->next);
    if (HH_UNLIKELY((uintptr_t)next & 15)) _hh_free_list_corrupted(block);
    heap->growth_cache[i] = next;
    heap->growth_cached[i]--;
    block->mark = 0;
    return block;
}

/* Whether a block that carries the free mark is one the thread keeps (else
 * the mark is the program's data). */
static bool cached(const hh_heap *heap, const void *ptr, uint32_t granules) {
    if (granules > HH_GROWTH_CACHE_SIZES || !heap->alive) return false;
    const hh_block *b = heap->growth_cache[granules - 1];
    for (; b != NULL; b = _hh_decode(b->next)) {
        if (b == ptr) return true;
    }
    return false;
}

/* ------------------------------------------------------------- the API */

bool _hh_growth_open(void) {
    if (!atomic_load_explicit(&_hh_growth_taking, memory_order_relaxed)) return false;
    if (HH_LIKELY(_hh_policy_heap_small())) {
        uintptr_t me = _hh_thread_id();
        uintptr_t user = atomic_load_explicit(&user_thread, memory_order_relaxed);
        if (HH_LIKELY(user == me)) return true;
        if (user == 0 && atomic_compare_exchange_strong_explicit(&user_thread, &user, me,
                                                                 memory_order_relaxed,
                                                                 memory_order_relaxed)) {
            return true;
        }
    }
    atomic_store_explicit(&_hh_growth_taking, false, memory_order_relaxed);
    return false;
}

static uint32_t granules_for(size_t size) {
    return size == 0 ? 1 : (uint32_t)((size + GRANULE - 1) >> GRANULE_SHIFT);
}

/* The size of the block at ptr, looked at under the lock: a stop naming
 * what ptr is not, unless another thread made it live meanwhile. */
static HH_NOINLINE uint32_t granules_or_stop(growth_span *span, const void *ptr,
                                             const char *what) {
    _hh_sublock_take(&growth_lock);
    uint32_t granules = live_granules(span, ptr, what);
    _hh_sublock_give(&growth_lock);
    return granules;
}

static HH_NOINLINE void stop_if_kept(const hh_heap *heap, const void *ptr, uint32_t granules,
                                     const char *what) {
    if (cached(heap, ptr, granules)) _hh_fatal(what, ptr);
}

/* The size of the live block at ptr, read without the lock (the bits of a
 * live block do not change); or a stop naming what ptr is not.  A block the
 * thread keeps is not live. */
static inline uint32_t checked_granules(const hh_heap *heap, growth_span *span, const void *ptr,
                                        const char *what) {
    uintptr_t offset = (uintptr_t)ptr - (uintptr_t)span;
    uint32_t g = granule_of(span, ptr);
    uint32_t granules;
    if (HH_LIKELY(offset >= HEADER_BYTES && (offset & (GRANULE - 1)) == 0 &&
                  bit(span->start, g) && !bit(span->free, g))) {
        granules = next_start(span, g + 1) - g;
    } else {
        granules = granules_or_stop(span, ptr, what);
    }
    if (HH_UNLIKELY(((const hh_block *)ptr)->mark == _hh_free_mark)) {
        stop_if_kept(heap, ptr, granules, what);
    }
    return granules;
}

/* Counted in the thread's statistics (a live heap's: as realloc is). */
static void count(hh_heap *heap, _Atomic(uint64_t) *counter) {
    if (heap->alive) _hh_count(counter, 1);
}

/* The live block at g of `granules` is free: kept by the thread, or merged
 * into the growth heap (and its span given back if that emptied it). */
static void release(hh_heap *heap, growth_span *span, void *ptr, uint32_t granules) {
    count(heap, &heap->stats.growth_frees);
    if (cache_push(heap, ptr, granules)) return;
    _hh_sublock_take(&growth_lock);
    growth_span *empty = free_locked(span, granule_of(span, ptr), granules);
    _hh_sublock_give(&growth_lock);
    if (empty != NULL) give_back(empty);
}

/* A block from the thread's cache, the growth heap's lists or its top, or
 * a new span; NULL if the page heap has no memory. */
static void *alloc_block(hh_heap *heap, uint32_t granules) {
    void *p = cache_pop(heap, granules);
    if (p != NULL) return p;
    _hh_sublock_take(&growth_lock);
    p = alloc_locked(granules);
    _hh_sublock_give(&growth_lock);
    if (p != NULL) return p;
    growth_span *span = new_span();
    if (span == NULL) return NULL;
    _hh_sublock_take(&growth_lock);
    add_span_locked(span);
    p = alloc_locked(granules);
    _hh_sublock_give(&growth_lock);
    HH_ASSERT(p != NULL);
    return p;
}

void *_hh_growth_alloc(size_t size, bool zero) {
    HH_ASSERT(size <= HH_SMALL_MAX);
    hh_heap *heap = _hh_heap;
    void *p = alloc_block(heap, granules_for(size));
    if (p == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    count(heap, &heap->stats.growth_allocs);
    if (zero) memset(p, 0, size);
    return p;
}

void _hh_growth_free(void *ptr, size_t size) {
    hh_heap *heap = _hh_heap;
    growth_span *span = span_of(ptr);
    uint32_t granules = checked_granules(heap, span, ptr, HH_NOT_LIVE);
    if (HH_UNLIKELY(size > (size_t)granules << GRANULE_SHIFT)) _hh_free_size_mismatch(ptr);
    release(heap, span, ptr, granules);
}

size_t _hh_growth_usable(const void *ptr, const char *what) {
    return (size_t)checked_granules(_hh_heap, span_of(ptr), ptr, what) << GRANULE_SHIFT;
}

bool _hh_growth_owns(const void *ptr) {
    growth_span *span = span_of(ptr);
    uintptr_t offset = (uintptr_t)ptr - (uintptr_t)span;
    if (offset < HEADER_BYTES) return false;
    _hh_sublock_take(&growth_lock);
    uint32_t g = granule_of(span, ptr);
    uint32_t block = bit(span->start, g) ? g : previous_start(span, g);
    bool live = !bit(span->free, block);
    _hh_sublock_give(&growth_lock);
    return live;
}

/* Under the lock: the block at g of `have` granules resized in place to
 * `want` (its tail given back, or grown into the free block after it). */
static bool resize_in_place_locked(growth_span *span, uint32_t g, uint32_t have, uint32_t want) {
    if (want < have) { /* the tail goes back, merged with a free neighbour */
        set_bit(span->start, g + want);
        growth_span *empty = free_locked(span, g + want, have - want);
        HH_ASSERT(empty == NULL);
        (void)empty;
        return true;
    }
    uint32_t end = g + have;
    if (end == GRANULES || !bit(span->free, end)) return false;
    bool top = span == top_span && end == top_start;
    uint32_t n =
        top ? GRANULES - end : free_granules(span, (free_block *)granule_address(span, end));
    if (have + n < want) return false;
    uint32_t more = want - have;
    clear_bit(span->start, end);
    clear_bit(span->free, end);
    if (top) {
        move_top(g + want);
    } else {
        bin_remove((free_block *)granule_address(span, end), n);
        if (n > more) bin_insert(span, g + want, n - more);
    }
    span->used += more;
    atomic_fetch_add_explicit(&live_bytes, (uint64_t)more << GRANULE_SHIFT, memory_order_relaxed);
    return true;
}

void *_hh_growth_realloc(void *ptr, size_t size) {
    HH_ASSERT(size <= HH_SMALL_MAX);
    hh_heap *heap = _hh_heap;
    growth_span *span = span_of(ptr);
    uint32_t want = granules_for(size);
    uint32_t have = checked_granules(heap, span, ptr, "realloc(): invalid pointer");
    if (want == have) return ptr;
    void *moved = cache_pop(heap, want);
    if (moved == NULL) {
        _hh_sublock_take(&growth_lock);
        if (resize_in_place_locked(span, granule_of(span, ptr), have, want)) {
            _hh_sublock_give(&growth_lock);
            return ptr;
        }
        moved = alloc_locked(want);
        _hh_sublock_give(&growth_lock);
        if (moved == NULL) moved = alloc_block(heap, want); /* with a new span */
        if (moved == NULL) {
            errno = ENOMEM;
            return NULL;
        }
    }
    count(heap, &heap->stats.growth_allocs);
    memcpy(moved, ptr, (size_t)(want < have ? want : have) << GRANULE_SHIFT);
    release(heap, span, ptr, have);
    return moved;
}

void _hh_growth_flush(hh_heap *heap) {
    if (!_hh_cfg.growth_heap) return; /* no thread keeps a block: no lock at every exit */
    growth_span *empties = NULL;
    _hh_sublock_take(&growth_lock);
    for (uint32_t granules = 1; granules <= HH_GROWTH_CACHE_SIZES; granules++) {
        void *block;
        while ((block = cache_pop(heap, granules)) != NULL) {
            growth_span *span = span_of(block);
            growth_span *empty = free_locked(span, granule_of(span, block), granules);
            if (empty != NULL) {
                empty->next = empties;
                empties = empty;
            }
        }
    }
    _hh_sublock_give(&growth_lock);
    while (empties != NULL) {
        growth_span *next = empties->next;
        give_back(empties);
        empties = next;
    }
}

void _hh_growth_usage(uint64_t *live, uint64_t *written, uint64_t *held) {
    *live = atomic_load_explicit(&live_bytes, memory_order_relaxed);
    *written = atomic_load_explicit(&written_bytes, memory_order_relaxed);
    *held = atomic_load_explicit(&span_count, memory_order_relaxed) * HH_GROWTH_SPAN;
}

/* Around fork: taken after the global lock and the pools' locks, as every
 * path takes them. */
void _hh_growth_before_fork(void) { _hh_sublock_take_for_fork(&growth_lock); }

void _hh_growth_after_fork(bool child) { _hh_sublock_after_fork(&growth_lock, child); }
