/* Medium blocks (above 16 KiB, below 32 MiB): runs of whole 4 KiB pages from
 * the page heap, placed by address-ordered first fit, so that they pack
 * across 2 MiB boundaries instead of each wasting the rest of one, and a
 * freed block's pages serve any later request (glibc reuses its heap the
 * same way; a size-class allocator would keep them for one size).
 *
 * The block starts on its first page (page-aligned for free); the region
 * header's span[] entry of that page holds its length, set with release and
 * cleared with one atomic exchange on free, so that two frees of one block
 * cannot both succeed.  A block that grows by realloc below 2 MiB grows in
 * place when the pages after it are free; one that grows to 2 MiB or more
 * becomes a large block at once, which grows by remapping from then on: it is
 * copied once, while it is small, instead of growing in place until it must
 * be copied big (both copies held at once raise the peak). */
#include <errno.h>
#include <string.h>

#include "internal.h"
#include "kind.h"


static size_t pages_for(size_t size) { return (size + HH_OS_PAGE - 1) >> HH_OS_PAGE_SHIFT; }

static _Atomic(uint32_t) *span_entry(hh_region *region, const void *ptr) {
    return (_Atomic(uint32_t) *)&region->span[_hh_page_index(region, ptr)];
}

size_t _hh_medium_pages(hh_region *region, const void *ptr) {
    if (((uintptr_t)ptr & (HH_OS_PAGE - 1)) != 0) return 0;
    uint32_t entry = atomic_load_explicit(span_entry(region, ptr), memory_order_acquire);
    if ((entry & HH_SPAN_KIND_MASK) != HH_SPAN_MEDIUM) return 0;
    return entry >> HH_SPAN_SHIFT;
}

/* Whether ptr points inside a live medium block (for the message of a free
 * that is not a block's start): the nearest block start before it covers it. */
static bool inside_a_block(hh_region *region, const void *ptr) {
    size_t idx = _hh_page_index(region, ptr);
    for (size_t back = 0; back <= idx && back < HH_LARGE_MIN >> HH_OS_PAGE_SHIFT; back++) {
        uint32_t entry = atomic_load_explicit((_Atomic(uint32_t) *)&region->span[idx - back],
                                              memory_order_acquire);
        if ((entry & HH_SPAN_KIND_MASK) != HH_SPAN_MEDIUM) continue;
        return (entry >> HH_SPAN_SHIFT) > back;
    }
    return false;
}

static size_t checked_pages(hh_region *region, const void *ptr, const char *what) {
    size_t pages = _hh_medium_pages(region, ptr);
    if (HH_UNLIKELY(pages == 0)) _hh_fatal(inside_a_block(region, ptr) ? HH_INSIDE_BLOCK : what, ptr);
    return pages;
}

/* Whether the live medium block at ptr gives its memory back when freed. */
static bool gives_back(hh_region *region, const void *ptr) {
    return atomic_load_explicit(span_entry(region, ptr), memory_order_relaxed) &
           HH_SPAN_GIVES_BACK;
}

/* `back`: the block gives its memory back when freed whatever its size (it
 * replaces one that did). */
static void *alloc_block(size_t size, size_t alignment, bool zero, bool back) {
    size_t pages = pages_for(size);
    size_t align = alignment > HH_OS_PAGE ? alignment >> HH_OS_PAGE_SHIFT : 1;
    /* Counted first: the statistics may look at the heap inside the page
     * heap's call, and must see this block as a medium one. */
    _hh_stats_count_medium((intptr_t)(pages << HH_OS_PAGE_SHIFT));
    void *p = zero ? _hh_pages_alloc_zeroed(pages, align) : _hh_pages_alloc(pages, align, NULL);
    if (p == NULL) {
        _hh_stats_count_medium(-(intptr_t)(pages << HH_OS_PAGE_SHIFT));
        return NULL;
    }
    HH_ASSERT(((uintptr_t)p & ((align << HH_OS_PAGE_SHIFT) - 1)) == 0);
    _hh_pages_set_span(p, pages, back || _hh_policy_block_gives_back(pages));
    atomic_fetch_add_explicit(&_hh_gstats.medium_allocs, 1, memory_order_relaxed);
    return p;
}

void *_hh_medium_alloc(size_t size, size_t alignment, bool zero) {
    return alloc_block(size, alignment, zero, false);
}

/* `moved`: the old copy of a block realloc moved. */
static void free_block(hh_region *region, void *ptr, bool moved) {
    uint32_t entry = 0;
    if (((uintptr_t)ptr & (HH_OS_PAGE - 1)) == 0) {
        entry = atomic_exchange_explicit(span_entry(region, ptr), 0, memory_order_acq_rel);
    }
    if (HH_UNLIKELY((entry & HH_SPAN_KIND_MASK) != HH_SPAN_MEDIUM)) {
        _hh_fatal(inside_a_block(region, ptr) ? HH_INSIDE_BLOCK : HH_NOT_LIVE, ptr);
    }
    size_t pages = entry >> HH_SPAN_SHIFT;
    HH_ASSERT(pages > 0 && _hh_page_index(region, ptr) + pages <= HH_REGION_PAGES);
    _hh_pages_free_block(ptr, pages, entry & HH_SPAN_GIVES_BACK, moved);
    _hh_stats_count_medium(-(intptr_t)(pages << HH_OS_PAGE_SHIFT));
    atomic_fetch_add_explicit(&_hh_gstats.medium_frees, 1, memory_order_relaxed);
}

void _hh_medium_free(hh_region *region, void *ptr) { free_block(region, ptr, false); }

size_t _hh_medium_usable(hh_region *region, const void *ptr) {
    return checked_pages(region, ptr, "malloc_usable_size(): invalid pointer") << HH_OS_PAGE_SHIFT;
}

void *_hh_medium_realloc(hh_region *region, void *ptr, size_t size) {
    size_t pages = checked_pages(region, ptr, "realloc(): invalid pointer");
    if (_hh_size_kind(size, 16) == HH_KIND_SMALL) return NULL; /* to a small page */
    size_t new_pages = pages_for(size);
    if (new_pages == pages) return ptr;
    bool back = gives_back(region, ptr);
    if (new_pages < pages) {
        _hh_pages_set_span(ptr, new_pages, back);
        _hh_pages_shrink(ptr, pages, new_pages);
        _hh_stats_count_medium(-(intptr_t)((pages - new_pages) << HH_OS_PAGE_SHIFT));
        return ptr;
    }
    if (size < HH_UNIT) {
        intptr_t more = (intptr_t)((new_pages - pages) << HH_OS_PAGE_SHIFT);
        _hh_stats_count_medium(more);
        if (_hh_pages_grow(ptr, pages, new_pages)) {
            _hh_pages_set_span(ptr, new_pages, back);
            return ptr;
        }
        _hh_stats_count_medium(-more);
    }
    /* Moved: to another medium block, which gives its memory back when
     * freed if this one does (glibc remaps a block it mapped on its own);
     * or to a large block. */
    void *moved = size < HH_UNIT ? alloc_block(size, 16, false, back)
                                 : _hh_large_alloc(size, 16, false);
    if (moved == NULL) return NULL;
    memcpy(moved, ptr, pages << HH_OS_PAGE_SHIFT);
    free_block(region, ptr, true);
    return moved;
}
