/* The fast paths of malloc and free, inline: the common case reads top to
 * bottom in a few lines, everything rare is one call away (heap.c, and the
 * dispatch by kind in malloc_api.c).
 *
 * malloc: the thread's heap (the empty heap until its first allocation, so
 * there is no NULL check), the page of the size's class (for sizes up to
 * 1 KiB straight from heap->direct), the first block of its free list.
 * While the growth heap takes the larger sizes (growth.c), their classes
 * have no pages, so they find no block there and go to it by the slow path.
 *
 * free: a pointer in the reserved range is in a region; its small page's
 * descriptor is found by arithmetic; the owner's free of a well-formed
 * pointer pushes it on the page's local list.  Every check a misused free
 * needs is here and costs a few instructions: the block must start at a
 * multiple of the block size within the page's blocks, and must not carry
 * the free mark (a double free).  Anything else (another thread's page, a
 * full page, a medium block, a pointer outside the range) goes to the slow
 * path, which checks again in full. */
#ifndef HUGEHEAP_FASTPATH_H
#define HUGEHEAP_FASTPATH_H

#include "block_page.h"
#include "internal.h"
#include "kind.h"
#include "page_pop.h"

/* free() of anything the fast path does not handle, by the pointer's kind
 * (malloc_api.c, beside malloc's dispatch); size as in _hh_free_fast.  Not
 * inlined into free, whose fast path stays a few instructions. */
HH_INTERNAL HH_NOINLINE void _hh_free_slow(void *ptr, size_t size);

/* size <= HH_DIRECT_MAX; may_grow as in _hh_alloc_slow. */
static inline __attribute__((always_inline)) void *_hh_alloc_direct(size_t size, bool zero,
                                                                   bool may_grow) {
    hh_heap *heap = _hh_heap;
    hh_page *page = heap->direct[(size + 15) >> 4];
    hh_block *block = page->free;
    if (HH_LIKELY(block != NULL)) return _hh_page_pop(page, block, zero);
    return _hh_alloc_slow(heap, size, zero, may_grow);
}

/* HH_DIRECT_MAX < size <= HH_SMALL_MAX; may_grow as in _hh_alloc_slow. */
static inline __attribute__((always_inline)) void *_hh_alloc_binned(size_t size, bool zero,
                                                                   bool may_grow) {
    hh_heap *heap = _hh_heap;
    hh_page *page = heap->queue[_hh_size_class_computed(size, heap->coarse)];
    hh_block *block = page->free;
    if (HH_LIKELY(block != NULL)) return _hh_page_pop(page, block, zero);
    return _hh_alloc_slow(heap, size, zero, may_grow);
}

/* Medium and large blocks (malloc_api.c): a call away from the small fast
 * path. */
HH_INTERNAL HH_NOINLINE void *_hh_alloc_big(size_t size, size_t alignment, bool zero);

/* size <= HH_SMALL_MAX: a block of the size classes, never the growth
 * heap's (aligned allocations count on the pages' alignment). */
static inline __attribute__((always_inline)) void *_hh_alloc_small(size_t size, bool zero) {
    if (HH_LIKELY(size <= HH_DIRECT_MAX)) return _hh_alloc_direct(size, zero, false);
    return _hh_alloc_binned(size, zero, false);
}

/* malloc's and calloc's path, for every entry point that allocates. */
static inline __attribute__((always_inline)) void *_hh_alloc(size_t size, bool zero) {
    if (HH_LIKELY(size <= HH_DIRECT_MAX)) return _hh_alloc_direct(size, zero, true);
    /* _hh_size_kind(size, 16) == HH_KIND_SMALL, written out: through the
     * helper gcc lays the branches out otherwise. */
    if (HH_LIKELY(size <= HH_SMALL_MAX)) return _hh_alloc_binned(size, zero, true);
    return _hh_alloc_big(size, 16, zero);
}

/* Whether the owner of block's page may push it as it is: the start of a
 * block the page has carved (pages are 64 KiB-aligned: the pointer's low 16
 * bits are its offset), without the free mark (a double free, or the
 * program's data: the slow path tells).  The page has no aligned blocks. */
static inline __attribute__((always_inline)) bool _hh_page_takes_back(const hh_page *page,
                                                                     const hh_block *block) {
    uint32_t offset = (uint16_t)(uintptr_t)block;
    uint32_t magic = page->div_magic;
    return offset < page->carved_end && (uint32_t)(offset * magic) < magic &&
           block->mark != _hh_free_mark;
}

/* The owner's free into one of its pages that is out of its queue (the
 * page was exhausted): free's fast path saw the owner word as the thread's
 * identity | HH_PAGE_OUT_OF_QUEUE.  Defined beside _hh_free_slow, which it
 * spares the lookup of the pointer's kind. */
HH_INTERNAL HH_NOINLINE void _hh_free_out_of_queue(hh_page *page, void *ptr, size_t size);

/* size: what a sized free (free_sized, C++ sized delete) says the block was
 * allocated with, checked against the block; 0 where none was given (the
 * check then compiles away). */
static inline __attribute__((always_inline)) void _hh_free_fast(void *ptr, size_t size) {
    uintptr_t in_range = (uintptr_t)ptr - _hh_range_base;
    if (HH_LIKELY(in_range < _hh_range_size)) {
        hh_page *page = (hh_page *)(_hh_range_base + (in_range >> HH_SPAGE_SHIFT) * sizeof(hh_page));
        uintptr_t owner = atomic_load_explicit(&page->owner, memory_order_relaxed);
        uintptr_t self = _hh_thread_id();
        /* Mine, in its queue, no aligned blocks: one comparison. */
        if (HH_LIKELY(owner == self)) {
            hh_block *block = ptr;
            if (HH_LIKELY(_hh_page_takes_back(page, block))) {
                if (HH_UNLIKELY(size > page->block_size)) _hh_free_size_mismatch(ptr);
                _hh_blocks_push(&page->local_free, block);
                if (HH_LIKELY(--page->used != 0)) return;
                _hh_page_after_local_free(_hh_heap, page);
                return;
            }
        } else if (owner == (self | HH_PAGE_OUT_OF_QUEUE)) {
            _hh_free_out_of_queue(page, ptr, size);
            return;
        }
    }
    _hh_free_slow(ptr, size);
}

#endif
