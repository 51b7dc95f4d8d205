/* The page heap: runs of 4 KiB pages from the regions, by address-ordered
 * first fit (a 64 KiB small page on a 64 KiB boundary, a medium block
 * anywhere).  The pages in use stay packed at the bottom of the regions,
 * holes are filled before new memory is touched, and the free memory gathers
 * at the top, in whole 2 MiB units that can go back without splitting a huge
 * page (release.c).  Everything here runs under the global lock; the page
 * heap's books are _hh_pageheap (types.h), the regions' their headers. */
#include <errno.h>
#include <string.h>

#include "internal.h"
#include "kind.h"

/* Guarded by the global lock. */
hh_pageheap _hh_pageheap;

/* The first run of n free pages starting at a multiple of align, or -1. */
static long find_run(const hh_region *r, size_t n, size_t align) {
    size_t i = _hh_align_up(r->first_free, align);
    while (i + n <= HH_REGION_PAGES) {
        size_t used_at = _hh_find_bit(r->used, i, i + n, true);
        if (used_at == i + n) return (long)i;
        size_t next_free = _hh_find_bit(r->used, used_at + 1, HH_REGION_PAGES, false);
        i = _hh_align_up(next_free, align);
    }
    return -1;
}

/* The units [idx, idx + n) overlaps hold memory from now on, and are in use
 * now (the release policy leaves them alone for the delay). */
static void touch_units_locked(hh_region *r, size_t idx, size_t n) {
    uint64_t now = _hh_clock_ms();
    for (uint32_t units = _hh_units_of_pages(idx, n); units != 0; units &= units - 1) {
        size_t u = _hh_lowest_unit(units);
        uint32_t mask = (uint32_t)1 << u;
        r->unit_used_ms[u] = now;
        if (r->touched_units & mask) continue;
        r->touched_units |= mask;
        _hh_pageheap.touched_units++;
        HH_ASSERT(!(r->hugetlb_units & mask)); /* a unit holding no memory is no huge page */
        if (_hh_pageheap.released_units_outstanding > 0) {
            _hh_pageheap.released_units_outstanding--;
            atomic_fetch_add_explicit(&_hh_gstats.units_refaulted, 1, memory_order_relaxed);
        }
        _hh_policy_unit_touched_locked(r, u);
    }
}

/* ----------------------------------------------------- the page heap */

#if defined(HH_DEBUG) && HH_DEBUG >= 2
/* The region's counts agree with its bitmaps (HH_ASSERT_EXPENSIVE: a walk of
 * both bitmaps): the header is in use, free_pages counts the clear bits of
 * used, dirty_free the free pages holding memory, no free page lies below
 * first_free, and a unit with a written free page is marked touched. */
static bool region_is_valid(const hh_region *r) {
    if (r->cookie != _hh_region_cookie(r)) return false;
    if (_hh_find_bit(r->used, 0, r->header_pages, false) != r->header_pages) return false;
    size_t free_pages = 0, dirty_free = 0;
    for (size_t w = 0; w < HH_REGION_WORDS; w++) {
        free_pages += (size_t)__builtin_popcountll(~r->used[w]);
        uint64_t dirty_and_free = r->dirty[w] & ~r->used[w];
        dirty_free += (size_t)__builtin_popcountll(dirty_and_free);
        for (; dirty_and_free != 0; dirty_and_free &= dirty_and_free - 1) {
            size_t page = w * 64 + (size_t)__builtin_ctzll(dirty_and_free);
            if (!(r->touched_units & ((uint32_t)1 << (page / HH_UNIT_PAGES)))) return false;
        }
    }
    /* Nothing beyond the writable pages is handed out or was written. */
    size_t open = r->open_pages;
    if (_hh_find_bit(r->used, open, r->mapped_pages, true) != r->mapped_pages ||
        _hh_find_bit(r->dirty, open, HH_REGION_PAGES, true) != HH_REGION_PAGES) {
        return false;
    }
    return free_pages == r->free_pages && dirty_free == r->dirty_free &&
           _hh_find_bit(r->used, 0, r->first_free, false) == r->first_free;
}

/* Every region valid, and the heap's counts the sums of theirs: written free
 * pages, and units holding memory (hugetlb units are among them). */
bool _hh_pages_valid_locked(void) {
    uint64_t dirty = 0, touched = 0;
    for (const hh_region *r = _hh_pageheap.regions; r != NULL; r = r->next) {
        if (!region_is_valid(r)) return false;
        if (r->next != NULL && r->next <= r) return false; /* address order */
        if (r->hugetlb_units & ~r->touched_units) return false;
        dirty += r->dirty_free;
        touched += (uint64_t)__builtin_popcount(r->touched_units);
    }
    return dirty == _hh_pageheap.dirty_free_pages && touched == _hh_pageheap.touched_units;
}
#endif

/* Marks the free pages [idx, idx + n) of r used (handed out, or held while
 * they are given back outside the lock); the count of those that held
 * memory.  Their dirty bits stay as they were until they come back. */
size_t _hh_pages_hold_locked(hh_region *r, size_t idx, size_t n) {
    HH_ASSERT(_hh_find_bit(r->used, idx, idx + n, true) == idx + n);
    HH_ASSERT(n > 0 && idx >= r->header_pages && idx + n <= r->mapped_pages && r->free_pages >= n);
    size_t dirty = _hh_count_bits(r->dirty, idx, idx + n);
    HH_ASSERT(r->dirty_free >= dirty && _hh_pageheap.dirty_free_pages >= dirty);
    _hh_set_bits(r->used, idx, idx + n, true);
    r->free_pages -= (uint32_t)n;
    r->dirty_free -= (uint32_t)dirty;
    _hh_pageheap.dirty_free_pages -= dirty;
    if (r->first_free == idx) {
        r->first_free = (uint32_t)_hh_find_bit(r->used, idx + n, HH_REGION_PAGES, false);
    }
    return dirty;
}

static size_t take_locked(hh_region *r, size_t idx, size_t n) {
    HH_ASSERT(idx + n <= r->open_pages); /* handed out only where writable */
    size_t dirty = _hh_pages_hold_locked(r, idx, n);
    _hh_policy_advise_whole_units_locked(r, idx, n);
    touch_units_locked(r, idx, n);
    _hh_usage_demand_locked((int64_t)n);
    HH_ASSERT_EXPENSIVE(region_is_valid(r));
    return dirty;
}

static void *alloc_locked(size_t n, size_t align, size_t *dirty) {
    for (int pass = 0; pass < 2; pass++) {
        for (hh_region *r = _hh_pageheap.regions; r != NULL; r = r->next) {
            if (pass == 1) { /* second pass: regions that can map more of themselves */
                if (r->mapped_pages == HH_REGION_PAGES || r->cannot_grow) continue;
                if (!_hh_region_grow_locked(r, n + align)) continue;
            }
            if (r->free_pages < n) continue;
            long idx = find_run(r, n, align);
            if (idx < 0 || !_hh_region_open_to_locked(r, (size_t)idx + n)) continue;
            *dirty = take_locked(r, (size_t)idx, n);
            return (char *)r + ((size_t)idx << HH_OS_PAGE_SHIFT);
        }
    }
    hh_region *r = _hh_region_new_locked();
    if (r == NULL) return NULL;
    long idx = find_run(r, n, align);
    if (idx < 0 && r->mapped_pages < HH_REGION_PAGES && _hh_region_grow_locked(r, n + align)) {
        idx = find_run(r, n, align);
    }
    if (idx < 0) return NULL; /* no room in a new region: no memory for it */
    if (!_hh_region_open_to_locked(r, (size_t)idx + n)) return NULL;
    *dirty = take_locked(r, (size_t)idx, n);
    return (char *)r + ((size_t)idx << HH_OS_PAGE_SHIFT);
}

void _hh_pages_free_locked(hh_region *r, size_t idx, size_t n, size_t written) {
    HH_ASSERT(idx >= r->header_pages && idx + n <= HH_REGION_PAGES && written <= n);
    HH_ASSERT(_hh_find_bit(r->used, idx, idx + n, false) == idx + n);
    _hh_set_bits(r->dirty, idx, idx + written, true);
    _hh_set_bits(r->used, idx, idx + n, false);
    size_t dirty = _hh_count_bits(r->dirty, idx, idx + n);
    r->free_pages += (uint32_t)n;
    r->dirty_free += (uint32_t)dirty;
    _hh_pageheap.dirty_free_pages += dirty;
    if (idx < r->first_free) r->first_free = (uint32_t)idx;
    HH_ASSERT(r->free_pages <= r->mapped_pages - r->header_pages && r->dirty_free <= r->free_pages);
    _hh_usage_demand_locked(-(int64_t)n);
    HH_ASSERT_EXPENSIVE(region_is_valid(r));
}

/* ------------------------------------------------------------- the API */

void *_hh_pages_alloc(size_t pages, size_t align, bool *zero) {
    HH_ASSERT(pages > 0 && align > 0 && (align & (align - 1)) == 0);
    size_t dirty = 0;
    _hh_lock();
    void *p = alloc_locked(pages, align, &dirty);
    /* A program that only allocates for a while (a solver reading its
     * input) may hold free memory beyond the release policy's bound. */
    if (p != NULL) _hh_release_locked(false);
    _hh_usage_changed_locked();
    _hh_unlock();
    if (p == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    HH_ASSERT(((uintptr_t)p & ((align << HH_OS_PAGE_SHIFT) - 1)) == 0);
    if (zero != NULL) *zero = dirty == 0;
    _hh_policy_promote();
    return p;
}

void *_hh_pages_alloc_zeroed(size_t pages, size_t align) {
    bool zero = false;
    void *p = _hh_pages_alloc(pages, align, &zero);
    if (p != NULL && !zero) memset(p, 0, pages << HH_OS_PAGE_SHIFT);
    return p;
}

static void pages_free(void *addr, size_t pages, size_t written, bool block, bool gives_back,
                       bool moved) {
    hh_region *r = _hh_region_of(addr);
    size_t idx = _hh_page_index(r, addr);
    HH_ASSERT(r->cookie == _hh_region_cookie(r) && ((uintptr_t)addr & (HH_OS_PAGE - 1)) == 0);
    _hh_lock();
    if (block) {
        _hh_release_block_locked(r, idx, pages, gives_back, moved);
    } else {
        _hh_pages_free_locked(r, idx, pages, written);
    }
    _hh_release_locked(false);
    _hh_unlock();
}

void _hh_pages_free(void *addr, size_t pages, size_t written) {
    pages_free(addr, pages, written, false, false, false);
}

void _hh_pages_free_block(void *addr, size_t pages, bool gives_back, bool moved) {
    pages_free(addr, pages, pages, true, gives_back, moved);
}

bool _hh_pages_grow(void *addr, size_t pages, size_t new_pages) {
    HH_ASSERT(new_pages > pages && pages > 0);
    hh_region *r = _hh_region_of(addr);
    size_t idx = _hh_page_index(r, addr);
    if (idx + new_pages > HH_REGION_PAGES) return false;
    _hh_lock();
    bool free_after = _hh_find_bit(r->used, idx + pages, idx + new_pages, true) == idx + new_pages &&
                      _hh_region_open_to_locked(r, idx + new_pages);
    if (free_after) take_locked(r, idx + pages, new_pages - pages);
    _hh_usage_changed_locked();
    _hh_unlock();
    if (free_after) _hh_policy_promote();
    return free_after;
}

void _hh_pages_shrink(void *addr, size_t pages, size_t new_pages) {
    HH_ASSERT(new_pages > 0 && new_pages < pages);
    _hh_pages_free((char *)addr + (new_pages << HH_OS_PAGE_SHIFT), pages - new_pages,
                   pages - new_pages);
}

void _hh_pages_set_span(void *addr, size_t pages, bool gives_back) {
    hh_region *r = _hh_region_of(addr);
    /* A medium block starts on a page and lies in its region (its pages'
     * bits are not read here: no lock is held). */
    HH_ASSERT(((uintptr_t)addr & (HH_OS_PAGE - 1)) == 0 &&
              _hh_page_index(r, addr) + pages <= HH_REGION_PAGES);
    uint32_t entry = 0;
    if (pages) {
        entry = (uint32_t)(pages << HH_SPAN_SHIFT) | HH_SPAN_MEDIUM |
                (gives_back ? HH_SPAN_GIVES_BACK : 0);
    }
    atomic_store_explicit((_Atomic(uint32_t) *)&r->span[_hh_page_index(r, addr)], entry,
                          memory_order_release);
}

