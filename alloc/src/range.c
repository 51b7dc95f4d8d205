/* The reserved range and its regions: where the page heap's memory lies.
 *
 * Address space: one PROT_NONE reservation at the first allocation (twice
 * RAM + swap, within RLIMIT_AS), taken 64 MiB region by region in address
 * order; a region that does not fit in it is mapped elsewhere and marked in
 * the granule map.  Regions are never unmapped: what goes back to the kernel
 * is memory, not address space (release.c).
 *
 * The reservation becomes writable only as far as the heap reaches: a
 * region's header when it is made, its pages up to the highest one handed
 * out (in steps of 256 KiB while the heap is small, of whole 2 MiB units
 * once it is huge, since a huge page needs its unit writable whole: policy.c
 * says which), and the page descriptors; at least 4 MiB before the first
 * region never are.  So a wild write past the top of the heap or before its
 * start faults, as it does past glibc's top of heap, instead of landing
 * silently in memory the kernel would hand out. */
#include <errno.h>
#include <string.h>
#include <sys/resource.h>

#include "internal.h"
#include "kind.h"

/* A region outside the range keeps its page descriptors in its header. */
#define HEADER_PAGES ((sizeof(hh_region) + HH_OS_PAGE - 1) / HH_OS_PAGE)
#define HEADER_PAGES_IN_RANGE ((offsetof(hh_region, pages) + HH_OS_PAGE - 1) / HH_OS_PAGE)
#define OUTSIDE_FIRST ((size_t)4 << 20) /* a region outside the range starts this big */
#define GUARD_BEFORE_HEAP ((size_t)4 << 20) /* never writable, right before the first region */

/* All below: guarded by the global lock. */
static char *range_next, *range_end;      /* the next region to commit, the range's end */
static _Atomic(uintptr_t) range_committed; /* regions below this address are in use */
static bool descriptors_each; /* every writable mapping is charged: descriptors region by region */

/* ------------------------------------------------------------- regions */

static size_t range_size_wanted(void) {
    uint64_t want = (uint64_t)_hh_cfg.memory_limit * 2;
    if (want < ((uint64_t)1 << 30)) want = (uint64_t)1 << 30;
    if (want > ((uint64_t)16 << 40)) want = (uint64_t)16 << 40;
    struct rlimit limit;
    if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
        want > limit.rlim_cur / 2) {
        want = limit.rlim_cur / 2; /* leave the program half its address space */
    }
    return (size_t)(want & ~(uint64_t)HH_REGION_MASK);
}

/* Whether the kernel charges every writable private mapping against a
 * commit limit (vm.overcommit_memory = 2, where MAP_NORESERVE is ignored). */
static bool strict_overcommit(void) {
    char c = 0;
    return _hh_os_read_small_file("/proc/sys/vm/overcommit_memory", &c, 1) == 1 && c == '2';
}

/* The page descriptors of a range of `size` bytes: one per 64 KiB of the
 * range, so that free() finds a small page's descriptor from the pointer by
 * arithmetic alone (its fast path reads the descriptor of any pointer into
 * the range: they are all writable, except where made so region by region,
 * and only the slow path tells a pointer of no region apart). */
static size_t descriptor_bytes(size_t size) {
    return _hh_align_up(size / (HH_SPAGE / sizeof(hh_page)), HH_OS_PAGE);
}

/* The descriptor area at the start of the range: the descriptors, then the
 * guard before the first region. */
static size_t descriptor_area(size_t size) {
    return _hh_align_up(descriptor_bytes(size) + GUARD_BEFORE_HEAP, HH_REGION);
}

/* Reserves the range: PROT_NONE address space, its descriptors writable
 * without memory (MAP_NORESERVE: the kernel gives memory where it is first
 * written), or region by region where every writable mapping is charged.
 * Without it (a small RLIMIT_AS), regions are mapped one by one elsewhere. */
void _hh_region_reserve_range(void) {
    descriptors_each = strict_overcommit();
    for (size_t size = range_size_wanted(); size >= 2 * HH_REGION; size /= 2) {
        size &= ~HH_REGION_MASK;
        size_t descriptors = descriptor_area(size);
        if (descriptors >= size) break;
        char *base = _hh_os_reserve(size, HH_REGION);
        if (base == NULL) continue;
        if ((uintptr_t)base + size > HH_GRANULE_LIMIT) { /* never: see the granule map */
            _hh_os_unmap(base, size);
            return;
        }
        if (!descriptors_each && !_hh_os_open(base, descriptor_bytes(size))) {
            _hh_os_unmap(base, size);
            continue;
        }
        /* The descriptors of a small heap stay in 4 KiB pages, as its
         * regions do (where THP is `always` the first write would make a
         * huge page of them); the promotion advises them huge. */
        _hh_os_advise(base, descriptors, false);
        range_next = base + descriptors;
        range_end = base + size;
        atomic_store_explicit(&range_committed, (uintptr_t)range_next, memory_order_relaxed);
        _hh_range_base = (uintptr_t)base;
        _hh_range_size = size;
        return;
    }
}

static void insert_in_order(hh_region *r) {
    hh_region **link = &_hh_pageheap.regions;
    while (*link != NULL && *link < r) link = &(*link)->next;
    r->next = *link;
    *link = r;
    HH_ASSERT(r->next == NULL || r->next > r); /* address order */
}

/* Pages [0, end) of r are writable, or false (the kernel refused). */
bool _hh_region_open_to_locked(hh_region *r, size_t end) {
    if (HH_LIKELY(end <= r->open_pages)) return true;
    end = _hh_align_up(end, _hh_policy_open_step());
    if (end > HH_REGION_PAGES) end = HH_REGION_PAGES;
    char *from = (char *)r + ((size_t)r->open_pages << HH_OS_PAGE_SHIFT);
    if (!_hh_os_open(from, (end - r->open_pages) << HH_OS_PAGE_SHIFT)) return false;
    r->open_pages = (uint32_t)end;
    HH_ASSERT(r->open_pages <= HH_REGION_PAGES);
    return true;
}

/* Takes the next region of the range: its header writable (and its
 * descriptors, where they are made writable region by region). */
static char *commit_in_range_locked(size_t *open_pages) {
    if (range_next == NULL || range_end - range_next < (ptrdiff_t)HH_REGION) return NULL;
    char *addr = range_next;
    if (descriptors_each &&
        !_hh_os_open(_hh_page_of(addr), HH_REGION_SLOTS * sizeof(hh_page))) {
        return NULL;
    }
    _hh_os_advise(addr, HH_REGION, _hh_policy_regions_huge_at_fault());
    *open_pages = _hh_align_up(HEADER_PAGES_IN_RANGE, _hh_policy_open_step());
    if (!_hh_os_open(addr, *open_pages << HH_OS_PAGE_SHIFT)) return NULL;
    range_next += HH_REGION;
    return addr;
}

hh_region *_hh_region_new_locked(void) {
    bool outside = false;
    size_t mapped = HH_REGION, open_pages = HH_REGION_PAGES;
    char *addr = commit_in_range_locked(&open_pages);
    if (addr == NULL) {
        /* Elsewhere: the whole region if the address space allows, else its
         * start (a small RLIMIT_AS), grown later where the space after it is
         * free. */
        bool no_hugetlb = false;
        bool huge = _hh_policy_regions_huge_at_fault();
        addr = _hh_os_map_aligned(HH_REGION, HH_REGION, 0, &no_hugetlb, huge);
        if (addr == NULL) {
            mapped = OUTSIDE_FIRST;
            addr = _hh_os_map_aligned(mapped, HH_REGION, 0, &no_hugetlb, huge);
        }
        if (addr == NULL) return NULL;
        if (!_hh_granule_reserve(addr, HH_REGION)) {
            _hh_os_unmap(addr, mapped);
            return NULL;
        }
        for (size_t g = 0; g < HH_REGION; g += (size_t)1 << HH_GRANULE_SHIFT) {
            _hh_granule_set(addr + g, HH_GRANULE_REGION);
        }
        outside = true;
    }
    hh_region *r = (hh_region *)addr; /* fresh memory: zero */
    r->cookie = _hh_region_cookie(r);
    size_t header = outside ? HEADER_PAGES : HEADER_PAGES_IN_RANGE;
    r->header_pages = (uint32_t)header;
    r->mapped_pages = (uint32_t)(mapped >> HH_OS_PAGE_SHIFT);
    r->open_pages = (uint32_t)open_pages;
    r->free_pages = r->mapped_pages - (uint32_t)header;
    r->first_free = (uint32_t)header;
    _hh_set_bits(r->used, 0, header, true);
    _hh_set_bits(r->used, r->mapped_pages, HH_REGION_PAGES, true); /* not mapped: never free */
    _hh_set_bits(r->dirty, 0, header, true);
    r->touched_units = 1; /* the header's */
    _hh_pageheap.touched_units++;
    /* On its 64 MiB boundary (free() finds the header by masking), the
     * header inside the writable and mapped part. */
    HH_ASSERT(((uintptr_t)r & HH_REGION_MASK) == 0 && r->header_pages < r->mapped_pages);
    HH_ASSERT(r->header_pages <= r->open_pages && r->open_pages <= HH_REGION_PAGES);
    insert_in_order(r);
    if (!outside) { /* _hh_region_find may give it out from here on */
        atomic_store_explicit(&range_committed, (uintptr_t)range_next, memory_order_release);
    }
    atomic_fetch_add_explicit(&_hh_gstats.regions_made, 1, memory_order_relaxed);
    return r;
}

hh_region *_hh_region_find(const void *p) {
    if (_hh_in_range(p)) {
        uintptr_t first = _hh_range_base + descriptor_area(_hh_range_size);
        uintptr_t end = atomic_load_explicit(&range_committed, memory_order_acquire);
        return (uintptr_t)p >= first && (uintptr_t)p < end ? _hh_region_of(p) : NULL;
    }
    return _hh_granule_kind(p) == HH_GRANULE_REGION ? _hh_region_of(p) : NULL;
}

hh_region *_hh_region_first(void) { return _hh_pageheap.regions; }

void _hh_range_advise_descriptors(bool huge) {
    if (_hh_range_size == 0) return;
    _hh_os_advise((void *)_hh_range_base, descriptor_area(_hh_range_size), huge);
}

/* A region outside the range that was mapped in part maps more of itself,
 * doubling, if the address space after it is free. */
bool _hh_region_grow_locked(hh_region *r, size_t need) {
    while (r->mapped_pages < HH_REGION_PAGES) {
        size_t more = r->mapped_pages;
        if (more > HH_REGION_PAGES - r->mapped_pages) more = HH_REGION_PAGES - r->mapped_pages;
        char *at = (char *)r + ((size_t)r->mapped_pages << HH_OS_PAGE_SHIFT);
        if (_hh_os_map_at(at, more << HH_OS_PAGE_SHIFT) == NULL) break;
        _hh_os_advise(at, more << HH_OS_PAGE_SHIFT, _hh_policy_regions_huge_at_fault());
        _hh_set_bits(r->used, r->mapped_pages, r->mapped_pages + more, false);
        r->free_pages += (uint32_t)more;
        if (r->first_free > r->mapped_pages) r->first_free = r->mapped_pages;
        r->mapped_pages += (uint32_t)more;
        HH_ASSERT(r->mapped_pages <= HH_REGION_PAGES);
        if (more >= need) return true;
    }
    r->cannot_grow = r->mapped_pages < HH_REGION_PAGES;
    return r->mapped_pages == HH_REGION_PAGES;
}

