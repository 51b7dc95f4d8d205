/* The page heap's accounting: the demand (pages handed out), the memory it
 * holds as the kernel counts it (told to the statistics as it changes), and
 * the books the statistics print. */
#include <string.h>

#include "internal.h"

#define SMALL_HEADER_PAGES 4
static uint64_t held_reported; /* bytes last told to the statistics (global lock) */

/* The memory the page heap holds, as the kernel counts it: whole touched
 * units once the heap is huge, written pages while it is small, and under
 * the dense policy (which leaves out the few unwritten pages of the units
 * made huge: at most a sixteenth of each; and of the pool's pages, those
 * not handed out yet: the top unit's rest). */
static uint64_t held_bytes_locked(void) {
    if (_hh_policy_every_unit_huge()) return _hh_pageheap.touched_units << HH_UNIT_SHIFT;
    /* A small heap's region headers are written where they are used: the
     * bitmaps, and the entries of the pages and blocks in use (estimated). */
    uint64_t headers = 0;
    for (hh_region *r = _hh_pageheap.regions; r != NULL; r = r->next) headers += SMALL_HEADER_PAGES;
    int64_t unwritten = atomic_load_explicit(&_hh_pageheap.unwritten_pages, memory_order_relaxed);
    uint64_t written = _hh_pageheap.demand_pages - (uint64_t)(unwritten > 0 ? unwritten : 0);
    return (written + _hh_pageheap.dirty_free_pages + headers) << HH_OS_PAGE_SHIFT;
}

void _hh_usage_changed_locked(void) {
    uint64_t held = held_bytes_locked();
    if (held != held_reported) {
        _hh_stats_count_mapped((intptr_t)(held - held_reported), true);
        held_reported = held;
    }
}

void _hh_usage_demand_locked(int64_t pages) {
    HH_ASSERT(pages >= 0 || _hh_pageheap.demand_pages >= (uint64_t)-pages);
    _hh_pageheap.demand_pages = (uint64_t)((int64_t)_hh_pageheap.demand_pages + pages);
    _hh_policy_count_demand((intptr_t)(pages * (int64_t)HH_OS_PAGE));
}

/* ----------------------------------------------------------- statistics */

void _hh_usage_regions_locked(hh_region_usage *usage) {
    memset(usage, 0, sizeof *usage);
    for (hh_region *r = _hh_pageheap.regions; r != NULL; r = r->next) {
        usage->regions++;
        usage->header_bytes += (uint64_t)r->header_pages << HH_OS_PAGE_SHIFT;
        for (size_t u = 0; u < HH_REGION_UNITS; u++) {
            size_t from = u * HH_UNIT_PAGES, to = from + HH_UNIT_PAGES;
            size_t used = _hh_count_bits(r->used, from, to);
            if (used != 0 || (r->touched_units & ((uint32_t)1 << u))) {
                size_t quarter = used * 4 / HH_UNIT_PAGES;
                usage->units_by_use[quarter < 3 ? quarter : 3]++;
            }
            /* A huge page goes back whole only. */
            if (_hh_policy_unit_whole_only(r, u) && !_hh_unit_is_free(r, u)) continue;
            usage->purgeable_bytes += (uint64_t)_hh_count_dirty_free(r, from, to) << HH_OS_PAGE_SHIFT;
        }
    }
    usage->used_bytes = _hh_pageheap.demand_pages << HH_OS_PAGE_SHIFT;
    usage->dirty_free_bytes = _hh_pageheap.dirty_free_pages << HH_OS_PAGE_SHIFT;
    usage->touched_unit_bytes = _hh_pageheap.touched_units << HH_UNIT_SHIFT;
    HH_ASSERT(usage->purgeable_bytes <= usage->dirty_free_bytes);
}

void _hh_usage_count_unwritten(intptr_t pages) {
    atomic_fetch_add_explicit(&_hh_pageheap.unwritten_pages, pages, memory_order_relaxed);
    if (HH_UNLIKELY(_hh_stats_on) && pages < 0 && !_hh_policy_heap_is_huge()) {
        _hh_lock();
        _hh_usage_changed_locked();
        _hh_unlock();
    }
}
