/* Regions and the page heap: where small pages and medium blocks get their
 * memory, and when memory goes back to the kernel.
 *
 * Address space: one PROT_NONE reservation at the first allocation (twice
 * RAM + swap, within RLIMIT_AS), taken 64 MiB region by region in address
 * order; a region that does not fit in it is mapped elsewhere and marked in
 * the granule map.  Regions are never unmapped: what goes back to the kernel
 * is memory, not address space.
 *
 * The reservation becomes writable only as far as the heap reaches: a
 * region's header when it is made, its pages up to the highest one handed
 * out (in steps of 256 KiB while the heap is small, of whole 2 MiB units
 * once it is huge, since a huge page needs its unit writable whole), and
 * the page descriptors; at least 4 MiB before the first region never are.
 * So a wild write past the top of the heap or before its start faults, as
 * it does past glibc's top of heap, instead of landing silently in memory
 * the kernel would hand out.
 *
 * The page heap hands out runs of 4 KiB pages by address-ordered first fit
 * (a 64 KiB page on a 64 KiB boundary, a medium block anywhere): the pages in
 * use stay packed at the bottom of the regions, holes are filled before new
 * memory is touched, and the free memory gathers at the top, in whole 2 MiB
 * units that can go back without splitting a huge page.
 *
 * What goes back, and when (the release policy): never what the program
 * will want again.  Each 2 MiB unit remembers when pages were last handed
 * out from it; the free memory of a unit nothing was taken from for the
 * release delay (HUGEHEAP_RELEASE_DELAY_MS, 10 s by default) goes back, from
 * the highest addresses down: units free as a whole where a unit may be a
 * huge page (never part of one), runs of free 4 KiB pages elsewhere.
 * A program that frees and allocates again within the delay (even blocks
 * that do not fit the holes they left, so that the heap keeps more than its
 * demand) faults nothing in twice; memory it stopped using goes back one
 * delay later.  The check runs on the page heap's own operations (a program
 * that stops calling the allocator keeps what it had: a timer thread inside
 * malloc would cost more than it saves). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "internal.h"
#include "kind.h"

/* The reserved range, set once at start-up (before anything is handed out);
 * a base of 2^63 keeps every pointer out until then. */
uintptr_t _hh_range_base = (uintptr_t)1 << 63;
uintptr_t _hh_range_size;

/* A region outside the range keeps its page descriptors in its header. */
#define HEADER_PAGES ((sizeof(hh_region) + HH_OS_PAGE - 1) / HH_OS_PAGE)
#define HEADER_PAGES_IN_RANGE ((offsetof(hh_region, pages) + HH_OS_PAGE - 1) / HH_OS_PAGE)
#define SMALL_HEADER_PAGES 4
#define RELEASE_CHECK_MS 50 /* the release policy looks at most this often */
#define OUTSIDE_FIRST ((size_t)4 << 20) /* a region outside the range starts this big */
#define PURGE_BATCH 16      /* runs given back per pass (outside the lock) */
#define OPEN_STEP_PAGES 64  /* a small heap's pages become writable 256 KiB at a time */
#define GUARD_BEFORE_HEAP ((size_t)4 << 20) /* never writable, right before the first region */

/* All below: guarded by the global lock. */
static char *range_next, *range_end;      /* the next region to commit, the range's end */
static _Atomic(uintptr_t) range_committed; /* regions below this address are in use */
static bool descriptors_each; /* every writable mapping is charged: descriptors region by region */
static hh_region *regions; /* address order */
static uint64_t demand_pages;     /* handed out by the page heap */
static _Atomic(int64_t) unwritten_pages; /* handed out, not written yet (small pages) */
static uint64_t dirty_free_pages; /* free and holding memory */
static uint64_t touched_units;    /* units holding memory (huge heap: resident whole) */
static uint64_t next_check_ms;
static uint64_t released_units_outstanding; /* given back, not yet needed again */
static uint64_t held_reported;              /* bytes last told to the statistics */
static atomic_bool dense_check_due;         /* units may have become dense (dense policy) */

/* ------------------------------------------------------------- bitmaps */

static inline bool bit(const uint64_t *bits, size_t i) { return bits[i >> 6] >> (i & 63) & 1; }

/* Sets (value true) or clears bits [from, to). */
static void set_bits(uint64_t *bits, size_t from, size_t to, bool value) {
    while (from < to) {
        size_t w = from >> 6, lo = from & 63;
        size_t n = to - from < 64 - lo ? to - from : 64 - lo;
        uint64_t mask = (n == 64 ? ~(uint64_t)0 : (((uint64_t)1 << n) - 1)) << lo;
        bits[w] = value ? bits[w] | mask : bits[w] & ~mask;
        from += n;
    }
}

static size_t count_bits(const uint64_t *bits, size_t from, size_t to) {
    size_t count = 0;
    while (from < to) {
        size_t w = from >> 6, lo = from & 63;
        size_t n = to - from < 64 - lo ? to - from : 64 - lo;
        uint64_t mask = (n == 64 ? ~(uint64_t)0 : (((uint64_t)1 << n) - 1)) << lo;
        count += (size_t)__builtin_popcountll(bits[w] & mask);
        from += n;
    }
    return count;
}

/* The first index in [from, to) whose bit is `value`, or `to`. */
static size_t find_bit(const uint64_t *bits, size_t from, size_t to, bool value) {
    while (from < to) {
        size_t w = from >> 6;
        uint64_t word = value ? bits[w] : ~bits[w];
        word &= ~(uint64_t)0 << (from & 63);
        if (word != 0) {
            size_t at = (w << 6) + (size_t)__builtin_ctzll(word);
            return at < to ? at : to;
        }
        from = (w + 1) << 6;
    }
    return to;
}

/* Whether unit u of r has no page in use (nor held). */
static bool unit_is_free(const hh_region *r, size_t u) {
    size_t from = u * HH_UNIT_PAGES, to = from + HH_UNIT_PAGES;
    return find_bit(r->used, from, to, true) == to;
}

/* The first run of n free pages starting at a multiple of align, or -1. */
static long find_run(const hh_region *r, size_t n, size_t align) {
    size_t i = _hh_align_up(r->first_free, align);
    while (i + n <= HH_REGION_PAGES) {
        size_t used_at = find_bit(r->used, i, i + n, true);
        if (used_at == i + n) return (long)i;
        size_t next_free = find_bit(r->used, used_at + 1, HH_REGION_PAGES, false);
        i = _hh_align_up(next_free, align);
    }
    return -1;
}

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
    int fd = open("/proc/sys/vm/overcommit_memory", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char c = 0;
    ssize_t n = read(fd, &c, 1);
    close(fd);
    return n == 1 && c == '2';
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
    hh_region **link = &regions;
    while (*link != NULL && *link < r) link = &(*link)->next;
    r->next = *link;
    *link = r;
}

static bool heap_is_huge(void) { return _hh_os_huge_now(0) && _hh_cfg.thp != HH_THP_OFF; }

/* The dense policy (HUGEHEAP_HUGE_UNITS=dense, the default): a huge heap's
 * regions stay advised NOHUGEPAGE, and each 2 MiB unit becomes a huge page
 * on its own once the program has written most of it (collapse_dense_units),
 * so memory handed out and never written stays out, as under glibc.
 * Otherwise (`all`) regions are advised huge whole and every unit is a huge
 * page from its first touch. */
static atomic_bool dense_policy_dropped; /* the heap proved dense: every unit is huge now */

static bool units_by_density(void) {
    return _hh_cfg.thp == HH_THP_ON && _hh_cfg.huge_units_dense &&
           !atomic_load_explicit(&dense_policy_dropped, memory_order_relaxed);
}

/* Whether memory of regions is advised huge before its first touch. */
static bool regions_huge_at_fault(void) { return _hh_os_huge_now(0) && !units_by_density(); }

bool _hh_region_every_unit_huge(void) { return heap_is_huge() && !units_by_density(); }

/* Whether units become huge pages one by one now, as they are found written. */
static bool dense_policy_in_force(void) { return units_by_density() && heap_is_huge(); }

/* Whether unit u of r can be a huge page, so its free memory goes back only
 * with the whole unit (never splitting a huge page). */
static bool unit_is_huge(const hh_region *r, size_t u) {
    return heap_is_huge() && (!units_by_density() || (r->huge_units >> u & 1));
}

/* Pages become writable this many at a time: whole units where a unit may
 * be a huge page. */
static size_t open_step(void) {
    return heap_is_huge() || _hh_cfg.thp == HH_THP_HUGETLB ? HH_UNIT_PAGES : OPEN_STEP_PAGES;
}

/* Pages [0, end) of r are writable, or false (the kernel refused). */
static bool open_to_locked(hh_region *r, size_t end) {
    if (HH_LIKELY(end <= r->open_pages)) return true;
    end = _hh_align_up(end, open_step());
    if (end > HH_REGION_PAGES) end = HH_REGION_PAGES;
    char *from = (char *)r + ((size_t)r->open_pages << HH_OS_PAGE_SHIFT);
    if (!_hh_os_open(from, (end - r->open_pages) << HH_OS_PAGE_SHIFT)) return false;
    r->open_pages = (uint32_t)end;
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
    _hh_os_advise(addr, HH_REGION, regions_huge_at_fault());
    *open_pages = _hh_align_up(HEADER_PAGES_IN_RANGE, open_step());
    if (!_hh_os_open(addr, *open_pages << HH_OS_PAGE_SHIFT)) return NULL;
    range_next += HH_REGION;
    return addr;
}

static hh_region *region_new_locked(void) {
    bool outside = false;
    size_t mapped = HH_REGION, open_pages = HH_REGION_PAGES;
    char *addr = commit_in_range_locked(&open_pages);
    if (addr == NULL) {
        /* Elsewhere: the whole region if the address space allows, else its
         * start (a small RLIMIT_AS), grown later where the space after it is
         * free. */
        bool no_hugetlb = false;
        addr = _hh_os_map_aligned(HH_REGION, HH_REGION, 0, &no_hugetlb, regions_huge_at_fault());
        if (addr == NULL) {
            mapped = OUTSIDE_FIRST;
            addr = _hh_os_map_aligned(mapped, HH_REGION, 0, &no_hugetlb, regions_huge_at_fault());
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
    set_bits(r->used, 0, header, true);
    set_bits(r->used, r->mapped_pages, HH_REGION_PAGES, true); /* not mapped: never free */
    set_bits(r->dirty, 0, header, true);
    r->touched_units = 1; /* the header's */
    touched_units++;
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

hh_region *_hh_region_first(void) { return regions; }

/* ------------------------------------------------------- accounting */

/* The memory the page heap holds, as the kernel counts it: whole touched
 * units once the heap is huge, written pages while it is small, and under
 * the dense policy (which leaves out the few unwritten pages of the units
 * made huge: at most a sixteenth of each). */
static uint64_t held_bytes_locked(void) {
    if (_hh_region_every_unit_huge()) return touched_units << HH_UNIT_SHIFT;
    /* A small heap's region headers are written where they are used: the
     * bitmaps, and the entries of the pages and blocks in use (estimated). */
    uint64_t headers = 0;
    for (hh_region *r = regions; r != NULL; r = r->next) headers += SMALL_HEADER_PAGES;
    int64_t unwritten = atomic_load_explicit(&unwritten_pages, memory_order_relaxed);
    uint64_t written = demand_pages - (uint64_t)(unwritten > 0 ? unwritten : 0);
    return (written + dirty_free_pages + headers) << HH_OS_PAGE_SHIFT;
}

static void held_changed_locked(void) {
    uint64_t held = held_bytes_locked();
    if (held != held_reported) {
        _hh_stats_count_mapped((intptr_t)(held - held_reported), true);
        held_reported = held;
    }
}

static void demand_changed_locked(int64_t pages) {
    demand_pages = (uint64_t)((int64_t)demand_pages + pages);
    _hh_os_count_demand((intptr_t)(pages * (int64_t)HH_OS_PAGE));
}

/* The units [idx, idx + n) overlaps hold memory from now on, and are in use
 * now (the release policy leaves them alone for the delay). */
static void touch_units_locked(hh_region *r, size_t idx, size_t n) {
    uint64_t now = _hh_clock_ms();
    for (size_t u = idx / HH_UNIT_PAGES; u <= (idx + n - 1) / HH_UNIT_PAGES; u++) {
        uint32_t mask = (uint32_t)1 << u;
        r->unit_used_ms[u] = now;
        if (r->touched_units & mask) continue;
        r->touched_units |= mask;
        touched_units++;
        /* The units below a new one are likely written by now. */
        if (dense_policy_in_force()) {
            atomic_store_explicit(&dense_check_due, true, memory_order_relaxed);
        }
        if (released_units_outstanding > 0) {
            released_units_outstanding--;
            atomic_fetch_add_explicit(&_hh_gstats.units_refaulted, 1, memory_order_relaxed);
        }
        if (_hh_cfg.thp == HH_THP_HUGETLB && !(r->hugetlb_units & mask)) {
            /* Untouched: nothing to lose by replacing it. */
            if (_hh_os_commit_hugetlb_unit((char *)r + ((size_t)u << HH_UNIT_SHIFT))) {
                r->hugetlb_units |= mask;
            } else {
                atomic_fetch_add_explicit(&_hh_gstats.hugetlb_fallbacks, 1, memory_order_relaxed);
            }
        }
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
    if (find_bit(r->used, 0, r->header_pages, false) != r->header_pages) return false;
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
    if (find_bit(r->used, open, r->mapped_pages, true) != r->mapped_pages ||
        find_bit(r->dirty, open, HH_REGION_PAGES, true) != HH_REGION_PAGES) {
        return false;
    }
    return free_pages == r->free_pages && dirty_free == r->dirty_free &&
           find_bit(r->used, 0, r->first_free, false) == r->first_free;
}

/* Every region valid, and their written free pages are the heap's count. */
static bool heap_is_valid_locked(void) {
    uint64_t dirty = 0;
    for (const hh_region *r = regions; r != NULL; r = r->next) {
        if (!region_is_valid(r)) return false;
        if (r->next != NULL && r->next <= r) return false; /* address order */
        dirty += r->dirty_free;
    }
    return dirty == dirty_free_pages;
}
#endif

/* Marks the free pages [idx, idx + n) of r used (handed out, or held while
 * they are given back outside the lock); the count of those that held
 * memory.  Their dirty bits stay as they were until they come back. */
static size_t mark_used_locked(hh_region *r, size_t idx, size_t n) {
    HH_ASSERT(find_bit(r->used, idx, idx + n, true) == idx + n);
    size_t dirty = count_bits(r->dirty, idx, idx + n);
    set_bits(r->used, idx, idx + n, true);
    r->free_pages -= (uint32_t)n;
    r->dirty_free -= (uint32_t)dirty;
    dirty_free_pages -= dirty;
    if (r->first_free == idx) {
        r->first_free = (uint32_t)find_bit(r->used, idx + n, HH_REGION_PAGES, false);
    }
    return dirty;
}

/* Under the dense policy, the units a run covers whole that hold no memory
 * yet are advised huge before the run is handed out: a block of 2 MiB or
 * more is an array the program fills, as a large block is, which is huge at
 * its first touch; looking at such units first would fault them twice. */
static void advise_whole_units_locked(hh_region *r, size_t idx, size_t n) {
    if (n < HH_UNIT_PAGES || !dense_policy_in_force()) return;
    for (size_t u = _hh_align_up(idx, HH_UNIT_PAGES) / HH_UNIT_PAGES;
         (u + 1) * HH_UNIT_PAGES <= idx + n; u++) {
        uint32_t mask = (uint32_t)1 << u;
        if ((r->touched_units | r->huge_units) & mask) continue;
        _hh_os_advise((char *)r + (u << HH_UNIT_SHIFT), HH_UNIT, true);
        r->huge_units |= mask;
    }
}

/* Hands out [idx, idx + n) of r; the count of those pages that held memory. */
static size_t take_locked(hh_region *r, size_t idx, size_t n) {
    size_t dirty = mark_used_locked(r, idx, n);
    advise_whole_units_locked(r, idx, n);
    touch_units_locked(r, idx, n);
    demand_changed_locked((int64_t)n);
    HH_ASSERT_EXPENSIVE(region_is_valid(r));
    return dirty;
}

/* A region outside the range that was mapped in part maps more of itself,
 * doubling, if the address space after it is free. */
static bool region_grow_locked(hh_region *r, size_t need) {
    while (r->mapped_pages < HH_REGION_PAGES) {
        size_t more = r->mapped_pages;
        if (more > HH_REGION_PAGES - r->mapped_pages) more = HH_REGION_PAGES - r->mapped_pages;
        char *at = (char *)r + ((size_t)r->mapped_pages << HH_OS_PAGE_SHIFT);
        if (_hh_os_map_at(at, more << HH_OS_PAGE_SHIFT) == NULL) break;
        _hh_os_advise(at, more << HH_OS_PAGE_SHIFT, regions_huge_at_fault());
        set_bits(r->used, r->mapped_pages, r->mapped_pages + more, false);
        r->free_pages += (uint32_t)more;
        if (r->first_free > r->mapped_pages) r->first_free = r->mapped_pages;
        r->mapped_pages += (uint32_t)more;
        if (more >= need) return true;
    }
    r->cannot_grow = r->mapped_pages < HH_REGION_PAGES;
    return r->mapped_pages == HH_REGION_PAGES;
}

static void *alloc_locked(size_t n, size_t align, size_t *dirty) {
    for (int pass = 0; pass < 2; pass++) {
        for (hh_region *r = regions; r != NULL; r = r->next) {
            if (pass == 1) { /* second pass: regions that can map more of themselves */
                if (r->mapped_pages == HH_REGION_PAGES || r->cannot_grow) continue;
                if (!region_grow_locked(r, n + align)) continue;
            }
            if (r->free_pages < n) continue;
            long idx = find_run(r, n, align);
            if (idx < 0 || !open_to_locked(r, (size_t)idx + n)) continue;
            *dirty = take_locked(r, (size_t)idx, n);
            return (char *)r + ((size_t)idx << HH_OS_PAGE_SHIFT);
        }
    }
    hh_region *r = region_new_locked();
    if (r == NULL) return NULL;
    long idx = find_run(r, n, align);
    if (idx < 0 && r->mapped_pages < HH_REGION_PAGES && region_grow_locked(r, n + align)) {
        idx = find_run(r, n, align);
    }
    if (idx < 0) return NULL; /* no room in a new region: no memory for it */
    if (!open_to_locked(r, (size_t)idx + n)) return NULL;
    *dirty = take_locked(r, (size_t)idx, n);
    return (char *)r + ((size_t)idx << HH_OS_PAGE_SHIFT);
}

static void free_locked(hh_region *r, size_t idx, size_t n, size_t written) {
    HH_ASSERT(idx >= r->header_pages && idx + n <= HH_REGION_PAGES && written <= n);
    HH_ASSERT(find_bit(r->used, idx, idx + n, false) == idx + n);
    set_bits(r->dirty, idx, idx + written, true);
    set_bits(r->used, idx, idx + n, false);
    size_t dirty = count_bits(r->dirty, idx, idx + n);
    r->free_pages += (uint32_t)n;
    r->dirty_free += (uint32_t)dirty;
    dirty_free_pages += dirty;
    if (idx < r->first_free) r->first_free = (uint32_t)idx;
    demand_changed_locked(-(int64_t)n);
    HH_ASSERT_EXPENSIVE(region_is_valid(r));
}

/* ------------------------------------------------- the release policy */

typedef struct purge_run {
    hh_region *region;
    size_t idx, n;
} purge_run;

/* Whether unit u of r has been quiet (nothing handed out from it) for the
 * release delay, or everything is to go. */
static bool quiet(const hh_region *r, size_t u, uint64_t now, bool everything) {
    return everything || now - r->unit_used_ms[u] >= _hh_cfg.release_delay_ms;
}

/* Picks the free memory to give back (at most PURGE_BATCH runs, from the top
 * down) and marks it used, so that nobody takes it while it is given back
 * outside the lock: the free pages of units that have been quiet for the
 * release delay (a huge heap: only units free as a whole). */
static size_t pick_purge_locked(uint64_t now, bool everything, purge_run *runs) {
    size_t count = 0;
    /* From the top: the last region first. */
    hh_region *order[64];
    size_t n_regions = 0;
    for (hh_region *r = regions; r != NULL; r = r->next) {
        if (n_regions == 64) memmove(order, order + 1, --n_regions * sizeof *order);
        order[n_regions++] = r;
    }
    for (size_t k = n_regions; k-- > 0 && count < PURGE_BATCH;) {
        hh_region *r = order[k];
        if (r->dirty_free == 0) continue;
        for (size_t u = HH_REGION_UNITS; u-- > 0 && count < PURGE_BATCH;) {
            if (!(r->touched_units & ((uint32_t)1 << u)) || !quiet(r, u, now, everything)) continue;
            size_t from = u * HH_UNIT_PAGES, to = from + HH_UNIT_PAGES;
            if (unit_is_huge(r, u)) {
                if (!unit_is_free(r, u)) continue;
                mark_used_locked(r, from, HH_UNIT_PAGES);
                runs[count++] = (purge_run){r, from, HH_UNIT_PAGES};
                continue;
            }
            /* 4 KiB pages: every free run of written pages in the unit, from its top. */
            size_t end = to;
            if (from < r->header_pages) from = r->header_pages;
            while (end > from && count < PURGE_BATCH) {
                size_t i = end;
                while (i > from && !(bit(r->dirty, i - 1) && !bit(r->used, i - 1))) i--;
                if (i == from) break;
                size_t start = i;
                while (start > from && bit(r->dirty, start - 1) && !bit(r->used, start - 1)) start--;
                mark_used_locked(r, start, i - start);
                runs[count++] = (purge_run){r, start, i - start};
                end = start;
            }
        }
    }
    return count;
}

/* The memory of the held pages [idx, idx + n) of r went back to the kernel
 * (`bytes` of it): they are clean, and the units left without memory are
 * counted given back.  A unit holds memory while a page of it is written
 * and free, or handed out (written or not: pages are marked written only
 * when they come back), other than the pages given back. */
static void note_given_back_locked(hh_region *r, size_t idx, size_t n, size_t bytes) {
    set_bits(r->dirty, idx, idx + n, false);
    atomic_fetch_add_explicit(&_hh_gstats.bytes_released, bytes, memory_order_relaxed);
    for (size_t u = idx / HH_UNIT_PAGES; u <= (idx + n - 1) / HH_UNIT_PAGES; u++) {
        uint32_t mask = (uint32_t)1 << u;
        size_t from = u * HH_UNIT_PAGES, to = from + HH_UNIT_PAGES;
        size_t run_from = idx > from ? idx : from, run_to = idx + n < to ? idx + n : to;
        if ((r->touched_units & mask) && find_bit(r->dirty, from, to, true) == to &&
            find_bit(r->used, from, run_from, true) == run_from &&
            find_bit(r->used, run_to, to, true) == to) {
            r->touched_units &= ~mask;
            r->hugetlb_units &= ~mask;
            touched_units--;
            released_units_outstanding++;
            atomic_fetch_add_explicit(&_hh_gstats.units_released, 1, memory_order_relaxed);
        }
    }
}

/* Held pages (marked used, clean) are free again. */
static void unhold_locked(hh_region *r, size_t idx, size_t n) {
    set_bits(r->used, idx, idx + n, false);
    r->free_pages += (uint32_t)n;
    if (idx < r->first_free) r->first_free = (uint32_t)idx;
}

/* The picked runs are given back: clean and free again. */
static void finish_purge_locked(const purge_run *runs, size_t count) {
    for (size_t k = 0; k < count; k++) {
        hh_region *r = runs[k].region;
        size_t dirty = count_bits(r->dirty, runs[k].idx, runs[k].idx + runs[k].n);
        note_given_back_locked(r, runs[k].idx, runs[k].n, dirty << HH_OS_PAGE_SHIFT);
        unhold_locked(runs[k].region, runs[k].idx, runs[k].n);
    }
}

/* Outside the lock: the kernel takes the memory (an explicit huge page goes
 * back to its pool by mapping plain memory over it). */
static void purge_runs(const purge_run *runs, size_t count) {
    for (size_t k = 0; k < count; k++) {
        char *addr = (char *)runs[k].region + (runs[k].idx << HH_OS_PAGE_SHIFT);
        size_t size = runs[k].n << HH_OS_PAGE_SHIFT;
        size_t unit = runs[k].idx / HH_UNIT_PAGES;
        if (runs[k].n == HH_UNIT_PAGES && (runs[k].region->hugetlb_units & ((uint32_t)1 << unit))) {
            if (_hh_os_commit(addr, size)) {
                _hh_os_advise(addr, size, true);
                continue;
            }
        }
        _hh_os_decommit(addr, size);
    }
}

/* The picked runs go back to the kernel.  With the lock held on entry;
 * returns with it held (it is let go while the kernel takes the memory). */
static void purge_locked(const purge_run *runs, size_t count) {
    _hh_unlock();
    purge_runs(runs, count);
    _hh_lock();
    finish_purge_locked(runs, count);
    HH_ASSERT_EXPENSIVE(heap_is_valid_locked());
}

/* With the lock held on entry; returns with it held.  Bytes given back. */
static size_t release_locked(bool everything) {
    size_t released = 0;
    uint64_t now = _hh_clock_ms();
    if (!everything) {
        if (now < next_check_ms || dirty_free_pages == 0) return 0;
        next_check_ms = now + RELEASE_CHECK_MS;
    }
    for (;;) {
        purge_run runs[PURGE_BATCH];
        size_t count = pick_purge_locked(now, everything, runs);
        if (count == 0) break;
        purge_locked(runs, count);
        for (size_t k = 0; k < count; k++) released += runs[k].n << HH_OS_PAGE_SHIFT;
        if (!everything) break; /* one batch per check: the rest at the next one */
    }
    held_changed_locked();
    return released;
}

size_t _hh_region_release(bool everything) {
    _hh_lock();
    size_t released = release_locked(everything);
    _hh_unlock();
    return released;
}

/* ------------------------------------ freed big blocks: glibc's threshold */

/* A freed medium block of glibc's mmap threshold (128 KiB) or more, and
 * larger than every such block freed before, gives its memory back at once,
 * as glibc unmaps a block it mapped on its own.  The bar rises as glibc's
 * mmap threshold does (to the size of the mapped block freed), so a program
 * that frees and allocates big blocks again gives memory back once per size
 * at most, not at every free: the system calls are rare enough to make
 * under the lock.  What the program then no longer holds is a growing
 * vector's old copies (a new one twice as large, the old one freed): they
 * never fit the next copy, and kept for the release delay they would add up
 * to the vector's size again.
 *
 * While the heap is small such a block is shut: its memory goes back, its
 * pages become PROT_NONE and are held out of the page heap (the last
 * SHUT_SLOTS such blocks; all of them at the promotion), so a use after
 * free of it faults and the next allocation gets other pages.  Once the
 * heap is huge, the block goes back into the page heap, and the 2 MiB units
 * it leaves free as a whole go back to the kernel (never part of a huge
 * page: that would split it), until the heap is seen to fault in again
 * what it gives back: a program that replaces big blocks by others of
 * about their size (not a vector's doubling copies) reuses the room at
 * once, and giving it back costs a huge-page fault per unit and lowers no
 * peak. */
#define BIG_FREE_MIN_PAGES 32 /* 128 KiB */
#define SHUT_SLOTS 8
#define CHURN_MIN_UNITS 16 /* given back before the refaults are judged */

static size_t big_free_min_pages = BIG_FREE_MIN_PAGES;
static purge_run shut[SHUT_SLOTS]; /* oldest first */
static size_t shut_count;

/* A unit marked touched that is free as a whole and clean holds no memory
 * (the shut blocks in it kept it marked while they were held): unmarked,
 * it is not made a huge page at the promotion. */
static void forget_unit_if_clean_locked(hh_region *r, size_t u) {
    uint32_t mask = (uint32_t)1 << u;
    size_t from = u * HH_UNIT_PAGES, to = from + HH_UNIT_PAGES;
    if (!(r->touched_units & mask) || !unit_is_free(r, u) ||
        find_bit(r->dirty, from, to, true) != to) {
        return;
    }
    r->touched_units &= ~mask;
    touched_units--;
}

/* The oldest shut block goes back into the page heap, writable and clean;
 * where the kernel will not make it writable it stays held (address space
 * lost, not memory). */
static void unshut_oldest_locked(void) {
    purge_run run = shut[0];
    memmove(shut, shut + 1, --shut_count * sizeof *shut);
    char *addr = (char *)run.region + (run.idx << HH_OS_PAGE_SHIFT);
    if (!_hh_os_open(addr, run.n << HH_OS_PAGE_SHIFT)) return;
    unhold_locked(run.region, run.idx, run.n);
    for (size_t u = run.idx / HH_UNIT_PAGES; u <= (run.idx + run.n - 1) / HH_UNIT_PAGES; u++) {
        forget_unit_if_clean_locked(run.region, u);
    }
}

/* Shuts the freed block [idx, idx + n) of r if the heap is small; false:
 * it is to be freed as usual. */
static bool shut_locked(hh_region *r, size_t idx, size_t n) {
    if (heap_is_huge() || _hh_cfg.thp == HH_THP_HUGETLB) return false;
    char *addr = (char *)r + (idx << HH_OS_PAGE_SHIFT);
    size_t size = n << HH_OS_PAGE_SHIFT;
    if (!_hh_os_close(addr, size)) {
        _hh_os_open(addr, size); /* part of it may be PROT_NONE now */
        return false;
    }
    if (shut_count == SHUT_SLOTS) unshut_oldest_locked();
    shut[shut_count++] = (purge_run){r, idx, n};
    atomic_fetch_add_explicit(&_hh_gstats.blocks_shut, 1, memory_order_relaxed);
    note_given_back_locked(r, idx, n, size); /* its pages stay marked used: held */
    demand_changed_locked(-(int64_t)n);
    held_changed_locked();
    return true;
}

/* The units that the freed pages [idx, idx + n) of r leave free as a whole
 * go back to the kernel now.  With the lock held on entry; returns with it
 * held (it is let go while the kernel takes the memory). */
static void give_back_free_units_locked(hh_region *r, size_t idx, size_t n) {
    purge_run runs[HH_REGION_UNITS];
    size_t count = 0;
    for (size_t u = idx / HH_UNIT_PAGES; u <= (idx + n - 1) / HH_UNIT_PAGES; u++) {
        if (!(r->touched_units & ((uint32_t)1 << u)) || !unit_is_free(r, u)) continue;
        mark_used_locked(r, u * HH_UNIT_PAGES, HH_UNIT_PAGES);
        runs[count++] = (purge_run){r, u * HH_UNIT_PAGES, HH_UNIT_PAGES};
    }
    if (count == 0) return;
    purge_locked(runs, count);
    held_changed_locked();
}

/* Whether the heap has faulted in again three in four of the 2 MiB units it
 * gave back (once it has given back CHURN_MIN_UNITS): giving back more would
 * be churn. */
static bool giving_back_churns(void) {
    uint64_t released = atomic_load_explicit(&_hh_gstats.units_released, memory_order_relaxed);
    uint64_t again = atomic_load_explicit(&_hh_gstats.units_refaulted, memory_order_relaxed);
    return released >= CHURN_MIN_UNITS && again * 4 >= released * 3;
}

/* A medium block the program frees: shut, or freed and its free units given
 * back, if it passes the bar; freed as usual otherwise.  With the lock held. */
static void free_block_locked(hh_region *r, size_t idx, size_t n) {
    if (n < big_free_min_pages) {
        free_locked(r, idx, n, n);
        return;
    }
    big_free_min_pages = n + 1;
    if (shut_locked(r, idx, n)) return;
    free_locked(r, idx, n, n);
    if (!giving_back_churns()) give_back_free_units_locked(r, idx, n);
}

/* ------------------------------------------------------------- the API */

void *_hh_pages_alloc(size_t pages, size_t align, bool *zero) {
    size_t dirty = 0;
    _hh_lock();
    void *p = alloc_locked(pages, align, &dirty);
    held_changed_locked();
    _hh_unlock();
    if (p == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    if (zero != NULL) *zero = dirty == 0;
    _hh_region_promote();
    return p;
}

void *_hh_pages_alloc_zeroed(size_t pages, size_t align) {
    bool zero = false;
    void *p = _hh_pages_alloc(pages, align, &zero);
    if (p != NULL && !zero) memset(p, 0, pages << HH_OS_PAGE_SHIFT);
    return p;
}

void _hh_region_count_unwritten(intptr_t pages) {
    atomic_fetch_add_explicit(&unwritten_pages, pages, memory_order_relaxed);
    if (HH_UNLIKELY(_hh_stats_on) && pages < 0 && !heap_is_huge()) {
        _hh_lock();
        held_changed_locked();
        _hh_unlock();
    }
}

static void pages_free(void *addr, size_t pages, size_t written, bool block) {
    hh_region *r = _hh_region_of(addr);
    size_t idx = _hh_page_index(r, addr);
    _hh_lock();
    if (block) {
        free_block_locked(r, idx, pages);
    } else {
        free_locked(r, idx, pages, written);
    }
    release_locked(false);
    _hh_unlock();
}

void _hh_pages_free(void *addr, size_t pages, size_t written) {
    pages_free(addr, pages, written, false);
}

void _hh_pages_free_block(void *addr, size_t pages) { pages_free(addr, pages, pages, true); }

bool _hh_pages_grow(void *addr, size_t pages, size_t new_pages) {
    hh_region *r = _hh_region_of(addr);
    size_t idx = _hh_page_index(r, addr);
    if (idx + new_pages > HH_REGION_PAGES) return false;
    _hh_lock();
    bool free_after = find_bit(r->used, idx + pages, idx + new_pages, true) == idx + new_pages &&
                      open_to_locked(r, idx + new_pages);
    if (free_after) take_locked(r, idx + pages, new_pages - pages);
    held_changed_locked();
    _hh_unlock();
    if (free_after) _hh_region_promote();
    return free_after;
}

void _hh_pages_shrink(void *addr, size_t pages, size_t new_pages) {
    _hh_pages_free((char *)addr + (new_pages << HH_OS_PAGE_SHIFT), pages - new_pages,
                   pages - new_pages);
}

void _hh_region_set_span(void *addr, size_t pages) {
    hh_region *r = _hh_region_of(addr);
    uint32_t entry = pages ? (uint32_t)(pages << HH_SPAN_SHIFT) | HH_SPAN_MEDIUM : 0;
    atomic_store_explicit((_Atomic(uint32_t) *)&r->span[_hh_page_index(r, addr)], entry,
                          memory_order_release);
}

/* ------------------------------------------------------------ promotion */

/* A unit is made a huge page once this many of its pages are handed out
 * and hold memory: a huge page then adds at most a sixteenth of unwritten
 * memory, where making every touched unit huge adds what a program
 * allocates and never writes (ABC's pdr: a third of its heap). */
#define DENSE_PAGES (HH_UNIT_PAGES - HH_UNIT_PAGES / 16)
#define DENSE_BATCH 32 /* units looked at per pass (outside the lock) */

/* A heap that reaches this many units (64 MiB) while the units seen sparse
 * twice hold less than 1/DENSE_SPARSE_SHARE of its pages unwritten writes
 * what it allocates: the dense policy, which faults every unit in 4 KiB
 * pages and then copies it into a huge page, is dropped there for huge pages
 * at the first touch.  Every heap has a few such units, where the current
 * small pages of its size classes are not carved yet: 1-5% of the pages of
 * the SAT and SMT runs of suites/huge-units.toml, 27-32% of ABC's pdr, whose
 * blocks are written a tenth, from 20 units on.  Deciding early bounds the
 * second touch of a dense heap to 64 MiB. */
#define DENSE_DECIDE_UNITS 32
#define DENSE_SPARSE_SHARE 8

static uint64_t sparse_pages; /* unwritten pages of the units seen sparse twice */
static bool dense_decided;

static void note_sparse_locked(hh_region *r, size_t u, size_t unwritten) {
    uint32_t mask = (uint32_t)1 << u;
    if (r->sparse_units & mask) return;
    r->sparse_units |= mask;
    sparse_pages += unwritten;
}

/* Whether unit u of r is to be looked at now: it holds memory in 4 KiB
 * pages, is writable whole, has enough pages handed out, and was not looked
 * at since the heap last grew by an eighth (a unit found sparse is looked
 * at again as the heap grows, not at every new unit). */
static bool dense_candidate_locked(const hh_region *r, size_t u) {
    uint32_t mask = (uint32_t)1 << u;
    if (!(r->touched_units & mask) || ((r->huge_units | r->hugetlb_units) & mask)) return false;
    size_t from = u * HH_UNIT_PAGES, to = from + HH_UNIT_PAGES;
    if (to > r->open_pages || to > r->mapped_pages) return false;
    uint64_t at = r->unit_checked_at[u];
    if (at != 0 && touched_units < at + (at / 8 > 1 ? at / 8 : 1)) return false;
    return count_bits(r->used, from, to) >= DENSE_PAGES;
}

typedef struct dense_look {
    hh_region *region;
    size_t unit;
    uint64_t used[HH_UNIT_PAGES / 64]; /* the unit's pages handed out when picked */
    bool again; /* looked at before */
    bool made_huge;
    size_t unwritten; /* pages handed out and not resident */
} dense_look;

/* Whether the heap has just proved dense (see DENSE_DECIDE_UNITS). */
static bool proved_dense_locked(void) {
    if (dense_decided || touched_units < DENSE_DECIDE_UNITS) return false;
    dense_decided = true;
    if (sparse_pages * DENSE_SPARSE_SHARE > touched_units * HH_UNIT_PAGES) return false;
    atomic_store_explicit(&dense_policy_dropped, true, memory_order_relaxed);
    return true;
}

static void make_every_unit_huge(void);

/* Under the dense policy: every unit of the regions that the program has
 * mostly written (pages handed out and resident, by mincore) is advised huge
 * and collapsed into a huge page now.  The lock is let go while the kernel
 * looks and collapses; what changes meanwhile is harmless (a page given back
 * in a unit being collapsed comes back as zeros, and one given back after
 * it splits the huge page). */
static void collapse_dense_units(void) {
    dense_look looks[DENSE_BATCH];
    unsigned char resident[HH_UNIT_PAGES];
    _hh_lock();
    hh_region *r = regions;
    size_t u = 0;
    while (r != NULL) {
        size_t n = 0;
        uint32_t now = (uint32_t)touched_units;
        while (r != NULL && n < DENSE_BATCH) {
            if (u == HH_REGION_UNITS) {
                r = r->next;
                u = 0;
                continue;
            }
            if (dense_candidate_locked(r, u)) {
                looks[n] = (dense_look){.region = r, .unit = u, .again = r->unit_checked_at[u] != 0};
                r->unit_checked_at[u] = now;
                memcpy(looks[n].used, &r->used[u * HH_UNIT_PAGES / 64], sizeof looks[n].used);
                n++;
            }
            u++;
        }
        _hh_unlock();
        for (size_t k = 0; k < n; k++) {
            char *addr = (char *)looks[k].region + (looks[k].unit << HH_UNIT_SHIFT);
            if (!_hh_os_resident(addr, HH_UNIT, resident)) continue;
            /* The region's header counts as written: it is the allocator's. */
            size_t header = looks[k].unit == 0 ? looks[k].region->header_pages : 0;
            size_t used = header, written = header;
            for (size_t i = header; i < HH_UNIT_PAGES; i++) {
                size_t handed_out = looks[k].used[i / 64] >> (i % 64) & 1;
                used += handed_out;
                written += (resident[i] & 1) & handed_out;
            }
            looks[k].unwritten = used - written;
            if (written < DENSE_PAGES) continue;
            _hh_os_advise(addr, HH_UNIT, true);
            _hh_os_collapse(addr, HH_UNIT);
            looks[k].made_huge = true;
            atomic_fetch_add_explicit(&_hh_gstats.units_promoted, 1, memory_order_relaxed);
        }
        _hh_lock();
        for (size_t k = 0; k < n; k++) {
            if (looks[k].made_huge) looks[k].region->huge_units |= (uint32_t)1 << looks[k].unit;
            if (looks[k].again && !looks[k].made_huge) {
                note_sparse_locked(looks[k].region, looks[k].unit, looks[k].unwritten);
            }
        }
    }
    bool dense = proved_dense_locked();
    held_changed_locked();
    _hh_unlock();
    if (dense) make_every_unit_huge();
}

/* Every region is advised huge and every unit holding memory is collapsed
 * into a huge page now (MADV_COLLAPSE, Linux 6.1+; older kernels leave them
 * to khugepaged, which follows the advice). */
static void make_every_unit_huge(void) {
    enum { MAX_UNITS = 512 };
    char *units[MAX_UNITS];
    size_t n_units = 0;
    hh_region *list[256];
    size_t n_regions = 0;
    _hh_lock();
    for (hh_region *r = regions; r != NULL && n_regions < 256; r = r->next) {
        list[n_regions++] = r;
        for (size_t u = 0; u < HH_REGION_UNITS && n_units < MAX_UNITS; u++) {
            uint32_t mask = (uint32_t)1 << u;
            if ((r->touched_units & mask) && !((r->hugetlb_units | r->huge_units) & mask)) {
                units[n_units++] = (char *)r + (u << HH_UNIT_SHIFT);
            }
        }
    }
    held_changed_locked();
    _hh_unlock();
    for (size_t i = 0; i < n_regions; i++) _hh_os_advise(list[i], HH_REGION, true);
    for (size_t i = 0; i < n_units; i++) {
        _hh_os_collapse(units[i], HH_UNIT);
        atomic_fetch_add_explicit(&_hh_gstats.units_promoted, 1, memory_order_relaxed);
    }
}

/* The heap passed the threshold: its pages become huge, at once (all
 * units) or as they fill (the dense policy), and so do the large blocks
 * mapped while it was small. */
static void promote_heap(void) {
    _hh_lock();
    while (shut_count > 0) unshut_oldest_locked(); /* a huge heap packs its pages */
    /* The top unit in use of each region becomes writable whole (a huge page
     * needs it); where the kernel refuses, it stays in 4 KiB pages. */
    for (hh_region *r = regions; r != NULL; r = r->next) {
        open_to_locked(r, _hh_align_up(r->open_pages, HH_UNIT_PAGES));
    }
    bool by_density = units_by_density();
    held_changed_locked();
    _hh_unlock();
    if (_hh_range_size != 0) {
        _hh_os_advise((void *)_hh_range_base, descriptor_area(_hh_range_size), true);
    }
    if (by_density) {
        atomic_store_explicit(&dense_check_due, true, memory_order_relaxed);
    } else {
        make_every_unit_huge();
    }
    _hh_large_promote();
}

void _hh_region_promote(void) {
    if (HH_UNLIKELY(_hh_os_take_promotion())) promote_heap();
    if (HH_UNLIKELY(atomic_load_explicit(&dense_check_due, memory_order_relaxed)) &&
        atomic_exchange_explicit(&dense_check_due, false, memory_order_relaxed)) {
        collapse_dense_units();
    }
}

/* ----------------------------------------------------------- statistics */

/* Pages of [from, to) that are free and hold memory. */
static size_t count_dirty_free(const hh_region *r, size_t from, size_t to) {
    size_t count = 0;
    for (size_t w = from >> 6; w < (to + 63) >> 6; w++) {
        count += (size_t)__builtin_popcountll(r->dirty[w] & ~r->used[w]);
    }
    return count; /* units are whole words */
}

void _hh_region_usage_locked(hh_region_usage *usage) {
    memset(usage, 0, sizeof *usage);
    for (hh_region *r = regions; r != NULL; r = r->next) {
        usage->regions++;
        usage->header_bytes += (uint64_t)r->header_pages << HH_OS_PAGE_SHIFT;
        for (size_t u = 0; u < HH_REGION_UNITS; u++) {
            size_t from = u * HH_UNIT_PAGES, to = from + HH_UNIT_PAGES;
            /* A huge page goes back whole only. */
            if (unit_is_huge(r, u) && !unit_is_free(r, u)) continue;
            usage->purgeable_bytes += (uint64_t)count_dirty_free(r, from, to) << HH_OS_PAGE_SHIFT;
        }
    }
    usage->used_bytes = demand_pages << HH_OS_PAGE_SHIFT;
    usage->dirty_free_bytes = dirty_free_pages << HH_OS_PAGE_SHIFT;
    usage->touched_unit_bytes = touched_units << HH_UNIT_SHIFT;
}
