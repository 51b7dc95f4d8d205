/* The memory of the arena and pool APIs (hh_arena_*, hh_pool_*): mappings
 * of their own, 2 MiB-aligned, under the same policy as a large block of the
 * heap.  They count in the heap's demand, so a program whose heap is mostly
 * arenas or pools (hhtab's tables, pnexplore's states) passes the huge
 * threshold as one that mallocs the same memory would.  A mapping made while
 * the demand is under the threshold stays in 4 KiB pages, as a small heap's
 * blocks do: advised huge from its first byte, a pool's 2 MiB region made a
 * program of 4 MiB peak at 25 MiB and paid a fresh huge page (2-9 ms on a VM
 * whose host takes freed memory back) for each 64 KiB page it carved.  Past
 * the threshold a mapping takes pages of the hugetlb pool in hugetlb mode
 * (cheap: no budget), else THP as the budget for huge pages affords, timed
 * and charged by its first unit as a large block is.
 *
 * The mappings left in 4 KiB pages with THP on (made while the heap was
 * small, or when the budget did not afford them) are listed, and their
 * units made huge pages by MADV_COLLAPSE once written and once the heap is
 * huge and the budget affords it, as policy.c does with large blocks mapped
 * small and with a region's dense units: a chunk or a region never grows,
 * so nothing else would.  The collapse is tried again at each new
 * mapping (a program that uses only the APIs never runs malloc's paths,
 * where policy.c retries its own work).  The list takes no lock: pool.c maps
 * under a pool's lock, which ranks below the global lock (the fork handlers
 * take the global lock first).  Beyond SMALL_MAPPINGS, a mapping stays in
 * 4 KiB pages. */
#include "internal.h"

#define SMALL_MAPPINGS 64

/* A listed range: its start (2 MiB-aligned) with its size in 2 MiB units in
 * the low bits, one word, so that a slot is taken and emptied by one
 * compare-and-swap; 0 is an empty slot. */
static _Atomic(uintptr_t) small_mappings[SMALL_MAPPINGS];
static atomic_size_t small_listed; /* slots in use, so that an empty list costs one load */

static void list_small(char *start, size_t size) {
    size_t units = size >> HH_UNIT_SHIFT;
    if (units == 0 || units > HH_UNIT_MASK) return;
    uintptr_t entry = (uintptr_t)start | units;
    for (size_t i = 0; i < SMALL_MAPPINGS; i++) {
        uintptr_t empty = 0;
        if (atomic_compare_exchange_strong_explicit(&small_mappings[i], &empty, entry,
                                                    memory_order_relaxed, memory_order_relaxed)) {
            atomic_fetch_add_explicit(&small_listed, 1, memory_order_relaxed);
            return;
        }
    }
}

/* The mapping [base, base + size) is going: its entry, if listed, leaves. */
static void unlist_small(const char *base, size_t size) {
    if (atomic_load_explicit(&small_listed, memory_order_relaxed) == 0) return;
    for (size_t i = 0; i < SMALL_MAPPINGS; i++) {
        uintptr_t entry = atomic_load_explicit(&small_mappings[i], memory_order_relaxed);
        uintptr_t start = entry & ~(uintptr_t)HH_UNIT_MASK;
        if (entry == 0 || start < (uintptr_t)base || start >= (uintptr_t)base + size) continue;
        if (atomic_compare_exchange_strong_explicit(&small_mappings[i], &entry, 0,
                                                    memory_order_relaxed, memory_order_relaxed)) {
            atomic_fetch_sub_explicit(&small_listed, 1, memory_order_relaxed);
        }
    }
}

/* Whether the unit is dense (HH_DENSE_PAGES of its pages hold memory):
 * MADV_COLLAPSE would fault in the rest, and a chunk is written in order,
 * its tail last or never. */
static bool unit_written(char *unit) {
    unsigned char resident[HH_UNIT_PAGES];
    if (!_hh_os_resident(unit, HH_UNIT, resident)) return false;
    size_t pages = 0;
    for (size_t i = 0; i < HH_UNIT_PAGES; i++) pages += resident[i] & 1;
    return pages >= HH_DENSE_PAGES;
}

/* The written units at the start of each listed mapping become huge pages
 * while the heap is huge and the budget affords them; the rest stays
 * listed.  A mapping unmapped meanwhile makes madvise fail (ignored) or,
 * if its address was mapped again, collapses memory that is someone else's
 * but keeps its contents, as with large blocks. */
static void collapse_listed(void) {
    if (HH_LIKELY(atomic_load_explicit(&small_listed, memory_order_relaxed) == 0)) return;
    if (!_hh_policy_heap_is_huge()) return; /* no look at the pages before */
    for (size_t i = 0; i < SMALL_MAPPINGS; i++) {
        uintptr_t entry = atomic_load_explicit(&small_mappings[i], memory_order_relaxed);
        if (entry == 0) continue;
        char *start = (char *)(entry & ~(uintptr_t)HH_UNIT_MASK);
        size_t units = entry & HH_UNIT_MASK, written = 0;
        while (written < units && unit_written(start + (written << HH_UNIT_SHIFT))) written++;
        if (written == 0) continue;
        size_t size = written << HH_UNIT_SHIFT;
        if (!_hh_policy_block_huge(0, size)) return; /* small heap, or the budget: later */
        uintptr_t rest = written == units ? 0 : (uintptr_t)(start + size) | (units - written);
        if (!atomic_compare_exchange_strong_explicit(&small_mappings[i], &entry, rest,
                                                     memory_order_relaxed, memory_order_relaxed)) {
            continue;
        }
        if (rest == 0) atomic_fetch_sub_explicit(&small_listed, 1, memory_order_relaxed);
        _hh_os_advise(start, size, true);
        _hh_policy_collapse(start, size);
        atomic_fetch_add_explicit(&_hh_gstats.units_promoted, written, memory_order_relaxed);
    }
}

void *_hh_api_memory_map(size_t size, bool *hugetlb) {
    HH_ASSERT(size > 0 && (size & HH_UNIT_MASK) == 0);
    *hugetlb = _hh_cfg.thp == HH_THP_HUGETLB && _hh_policy_huge_now(size);
    char *base = _hh_os_map_aligned(size, HH_UNIT, 0, hugetlb, false);
    if (base == NULL) return NULL;
    _hh_policy_count_demand((intptr_t)size);
    _hh_stats_count_api((intptr_t)size);
    /* THP, or hugetlb's fallback to it (the pool empty or capped). */
    if (!*hugetlb && _hh_policy_new_block_huge(size)) {
        _hh_os_advise(base, size, true);
        if (!_hh_policy_block_first_unit(base, size)) list_small(base + HH_UNIT, size - HH_UNIT);
    } else if (!*hugetlb && _hh_cfg.thp == HH_THP_ON) {
        list_small(base, size);
    }
    collapse_listed();
    return base;
}

void _hh_api_memory_unmap(void *base, size_t size, bool hugetlb) {
    unlist_small(base, size);
    _hh_os_unmap_mapped(base, size, hugetlb ? size : 0);
    _hh_policy_count_demand(-(intptr_t)size);
    _hh_stats_count_api(-(intptr_t)size);
}
