/* Large blocks (32 MiB and more, and blocks that grew past 2 MiB by
 * realloc): a mapping each.  The user's pointer sits on a 2 MiB boundary
 * and the header (64 bytes, right before the pointer) in a 4 KiB page of its
 * own that the mapping starts with: that page lies in the 2 MiB range before
 * the block, which the mapping does not cover in full, so writing the header
 * never faults in a whole huge page; the block's own 2 MiB ranges get huge
 * pages when the program touches them.  In hugetlb mode the block's whole
 * 2 MiB units are pages of the pool from the start, and the header page and
 * the tail past the last whole unit stay in 4 KiB pages: a pool page is
 * resident whole, so a header or a short tail in one would cost up to 2 MiB.
 *
 * A block that grows by realloc (MiniSat's region allocator, the clause
 * arenas of Kissat and CaDiCaL) grows in place when the address space after
 * it is free, and otherwise moves with mremap(MREMAP_MAYMOVE|MREMAP_FIXED) to
 * a 2 MiB-aligned place reserved beforehand: the kernel moves page tables, not
 * bytes, and huge pages stay huge because both ends are aligned. */
#include <errno.h>
#include <string.h>

#include "internal.h"
#include "kind.h"

/* Freed blocks are unmapped at once, as glibc does, unless policy.c sees the
 * program churn blocks of that size: only then do freed blocks of that size
 * wait in a small cache, until policy.c says they are due.  The cache holds
 * at most a sixteenth of the memory in use (CACHE_SHARE): what it keeps
 * stays resident, and a program that grows its arrays by realloc on a small
 * heap (musx: 180,000 reallocs, 12 MiB in use) had twice its heap waiting
 * there at its peak. */
#define CACHE_BLOCK_MAX ((size_t)32 << 20)
#define CACHE_BYTES_MAX ((size_t)64 << 20)
#define CACHE_SHARE 16
#define CACHE_SLOTS 16

static void unmap_block(char *base, size_t size, size_t pool_bytes) {
    _hh_os_unmap_mapped(base, size, pool_bytes);
    _hh_stats_count_mapped(-(intptr_t)size, false);
}

/* The bytes of a block in pool pages: its whole 2 MiB units (the block
 * starts on one); the tail past them is in 4 KiB pages. */
static size_t pool_bytes(const hh_large *h) { return h->hugetlb ? h->usable & ~HH_UNIT_MASK : 0; }

/* Guarded by the global lock. */
static hh_cached_mapping cache[CACHE_SLOTS];
static size_t cache_count, cache_bytes;
static _Atomic(uint64_t) cached_bytes_seen; /* cache_bytes, for the statistics */

#if defined(HH_DEBUG) && HH_DEBUG >= 2
/* The cache's books: cache_bytes is the sum of its blocks, each no larger
 * than a cached block may be (HH_ASSERT_EXPENSIVE). */
static bool cache_is_valid_locked(void) {
    size_t sum = 0;
    for (size_t i = 0; i < cache_count; i++) {
        if (cache[i].size > HH_OS_PAGE + CACHE_BLOCK_MAX || cache[i].base == NULL) return false;
        sum += cache[i].size;
    }
    return sum == cache_bytes;
}
#endif

/* The cache changed: the statistics, and policy.c's time its oldest block
 * is due. */
static void cache_changed_locked(void) {
    HH_ASSERT(cache_count <= CACHE_SLOTS && cache_bytes <= CACHE_BYTES_MAX);
    HH_ASSERT_EXPENSIVE(cache_is_valid_locked());
    atomic_store_explicit(&cached_bytes_seen, cache_bytes, memory_order_relaxed);
    _hh_policy_cache_changed_locked(cache, cache_count);
}

/* Rounds the mapping up to whole 2 MiB units when that costs at most 1/64
 * more; otherwise the tail stays in 4 KiB pages (the kernel backs only whole
 * aligned 2 MiB ranges of a mapping with huge pages).  A rounded tail is
 * resident in full as soon as any byte of it is touched, so rounding is
 * memory the program never asked for: only a little of it is worth the
 * tail's TLB entries. */
static size_t block_span(size_t need) {
    size_t pages = _hh_align_up(need, HH_OS_PAGE);
    size_t whole = _hh_align_up(pages, HH_UNIT);
    return whole - pages <= pages / 64 ? whole : pages;
}

static size_t purge_cache_locked(bool everything) {
    size_t released = 0;
    uint64_t now = _hh_clock_ms();
    for (size_t i = 0; i < cache_count;) {
        if (_hh_policy_cached_block_due(cache[i].freed_at_ms, now, everything)) {
            unmap_block(cache[i].base, cache[i].size, 0);
            released += cache[i].size;
            cache_bytes -= cache[i].size;
            cache[i] = cache[--cache_count];
        } else {
            i++;
        }
    }
    cache_changed_locked();
    return released;
}

/* Unmaps the cached blocks policy.c says are due (their release delay has
 * passed). */
static void release_due(void) {
    if (HH_LIKELY(!_hh_policy_cache_due())) return;
    _hh_large_purge(false);
}

size_t _hh_large_purge(bool everything) {
    _hh_lock();
    size_t released = purge_cache_locked(everything);
    _hh_unlock();
    return released;
}

/* A cached mapping of at least `size` bytes and at most a quarter more. */
static char *cache_take(size_t size, size_t *taken_size) {
    char *base = NULL;
    _hh_lock();
    for (size_t i = 0; i < cache_count; i++) {
        if (cache[i].size >= size && cache[i].size - size <= size / 4) {
            base = cache[i].base;
            *taken_size = cache[i].size;
            cache_bytes -= cache[i].size;
            cache[i] = cache[--cache_count];
            break;
        }
    }
    cache_changed_locked();
    if (base == NULL) _hh_policy_large_mapped_locked(size);
    _hh_unlock();
    return base;
}

/* What the cache may hold now: a share of the memory in use. */
static size_t cache_limit(void) {
    size_t share = _hh_policy_demand() / CACHE_SHARE;
    return share < CACHE_BYTES_MAX ? share : CACHE_BYTES_MAX;
}

static bool cache_put(char *base, size_t size) {
    size_t limit = cache_limit();
    if (size > CACHE_BLOCK_MAX || size > limit) return false;
    _hh_lock();
    purge_cache_locked(false);
    bool keep = _hh_policy_large_free_cached_locked(size);
    while (keep && cache_count > 0 &&
           (cache_count == CACHE_SLOTS || cache_bytes + size > limit)) {
        size_t oldest = 0;
        for (size_t i = 1; i < cache_count; i++) {
            if (cache[i].freed_at_ms < cache[oldest].freed_at_ms) oldest = i;
        }
        unmap_block(cache[oldest].base, cache[oldest].size, 0);
        cache_bytes -= cache[oldest].size;
        cache[oldest] = cache[--cache_count];
    }
    if (keep) {
        cache[cache_count++] = (hh_cached_mapping){base, size, _hh_clock_ms()};
        cache_bytes += size;
    }
    cache_changed_locked();
    _hh_unlock();
    return keep;
}

/* Blocks in use and their bytes (statistics). */
static _Atomic(uint64_t) live_blocks, live_requested, live_mapped;

static void count_live(int64_t blocks, int64_t requested, int64_t mapped) {
    atomic_fetch_add_explicit(&live_blocks, (uint64_t)blocks, memory_order_relaxed);
    atomic_fetch_add_explicit(&live_requested, (uint64_t)requested, memory_order_relaxed);
    atomic_fetch_add_explicit(&live_mapped, (uint64_t)mapped, memory_order_relaxed);
}

void _hh_large_usage(hh_large_usage *usage) {
    usage->blocks = atomic_load_explicit(&live_blocks, memory_order_relaxed);
    usage->requested_bytes = atomic_load_explicit(&live_requested, memory_order_relaxed);
    usage->mapped_bytes = atomic_load_explicit(&live_mapped, memory_order_relaxed);
    usage->cached_bytes = atomic_load_explicit(&cached_bytes_seen, memory_order_relaxed);
}

/* A block's header agrees with itself (HH_ASSERT): the header of its
 * pointer and live (kind.h's cookie check), the pointer aligned as asked and
 * a page after the mapping's start at least, the mapping ending where the
 * usable bytes end, the request within them. */
static inline bool large_is_valid(const hh_large *h, const void *user) {
    uintptr_t u = (uintptr_t)user, base = (uintptr_t)h->map_base;
    return h == _hh_large_of(user) && _hh_large_is_live(user) && h->alignment >= 16 &&
           (h->alignment & (h->alignment - 1)) == 0 && (u & (h->alignment - 1)) == 0 &&
           u >= base + HH_OS_PAGE && (h->map_size & (HH_OS_PAGE - 1)) == 0 &&
           base + h->map_size == u + h->usable && h->requested <= h->usable;
}

static void *install(char *base, size_t map_size, size_t lead, size_t alignment, bool hugetlb,
                     bool small_pages, size_t requested) {
    char *user = base + lead;
    hh_large *h = _hh_large_of(user);
    atomic_store_explicit(&h->small_pages, small_pages, memory_order_relaxed);
    h->requested = requested;
    h->cookie = _hh_large_cookie(user);
    h->map_base = base;
    h->map_size = map_size;
    h->usable = map_size - lead;
    h->alignment = alignment;
    h->hugetlb = hugetlb;
    _hh_granule_set(user, HH_GRANULE_LARGE);
    return user;
}

/* A new mapping for a block of `span` bytes after a header page, the block
 * aligned to `alignment` (at least 2 MiB); NULL if the kernel refuses or the
 * granule map has no room for it. */
static char *map_block(size_t span, size_t alignment, bool huge) {
    bool hugetlb = false;
    char *base = _hh_os_map_aligned(HH_OS_PAGE + span, alignment, HH_OS_PAGE, &hugetlb, huge);
    if (base == NULL) return NULL;
    if (!_hh_granule_reserve(base + HH_OS_PAGE, 1)) {
        _hh_os_unmap(base, HH_OS_PAGE + span);
        return NULL;
    }
    return base; /* counted by the caller, once the block is in place */
}

/* A block whose whole 2 MiB units are pages of the pool (see the top); NULL
 * when the pool or HUGEHEAP_POOL_MAX_MB refuses them (a fallback, counted),
 * or the block has no whole unit. */
static void *alloc_hugetlb(size_t size, size_t alignment) {
    size_t span = block_span(size);
    size_t whole = span & ~HH_UNIT_MASK;
    if (whole == 0) return NULL;
    char *base = map_block(span, HH_UNIT, false);
    if (base == NULL) return NULL;
    if (!_hh_os_commit_hugetlb(base + HH_OS_PAGE, whole)) {
        atomic_fetch_add_explicit(&_hh_gstats.hugetlb_fallbacks, 1, memory_order_relaxed);
        _hh_os_unmap(base, HH_OS_PAGE + span);
        return NULL;
    }
    return install(base, HH_OS_PAGE + span, HH_OS_PAGE, alignment, true, false, size);
}

void *_hh_large_alloc(size_t size, size_t alignment, bool zero) {
    if (size > HH_MAX_ALLOC || alignment > HH_MAX_ALLOC / 2 || size > _hh_cfg.memory_limit) {
        errno = ENOMEM; /* more than the machine has: refuse now, not in the OOM killer */
        return NULL;
    }
    release_due();
    size_t map_alignment = alignment > HH_UNIT ? alignment : HH_UNIT;
    void *user = NULL;
    bool cached = false;
    if (_hh_cfg.thp == HH_THP_HUGETLB && alignment < HH_UNIT && _hh_policy_huge_now(size)) {
        user = alloc_hugetlb(size, alignment); /* a small heap's blocks: 4 KiB pages */
    }
    if (user == NULL) {
        size_t span = block_span(size);
        size_t cached_size = 0;
        char *base = map_alignment == HH_UNIT ? cache_take(HH_OS_PAGE + span, &cached_size)
                                                      : NULL;
        if (base != NULL) {
            cached = true;
            user = install(base, cached_size, HH_OS_PAGE, alignment, false,
                           !_hh_policy_huge_now(0), size);
            if (zero) memset(user, 0, size);
        } else {
            bool huge = _hh_policy_new_block_huge(span);
            base = map_block(span, map_alignment, huge);
            if (base == NULL) {
                errno = ENOMEM;
                return NULL;
            }
            user = install(base, HH_OS_PAGE + span, HH_OS_PAGE, alignment, false, !huge, size);
            if (huge && !_hh_policy_block_first_unit(user, span)) {
                atomic_store_explicit(&_hh_large_of(user)->small_pages, 1, memory_order_relaxed);
            }
        }
    }
    atomic_fetch_add_explicit(&_hh_gstats.large_allocs, 1, memory_order_relaxed);
    hh_large *large = _hh_large_of(user);
    HH_ASSERT(large_is_valid(large, user));
    if (atomic_load_explicit(&large->small_pages, memory_order_relaxed)) _hh_policy_list_small_block(large);
    _hh_policy_count_demand((intptr_t)large->usable);
    count_live(1, (int64_t)size, (int64_t)large->map_size);
    if (!cached) _hh_stats_count_mapped((intptr_t)large->map_size, false);
    _hh_policy_promote();
    return user;
}

void _hh_large_free(hh_large *large, void *user) {
    HH_ASSERT(large_is_valid(large, user));
    atomic_fetch_add_explicit(&_hh_gstats.large_frees, 1, memory_order_relaxed);
    _hh_policy_count_demand(-(intptr_t)large->usable);
    count_live(-1, -(int64_t)large->requested, -(int64_t)large->map_size);
    char *base = large->map_base;
    size_t size = large->map_size;
    bool reusable = !large->hugetlb && (size_t)((char *)user - base) == HH_OS_PAGE &&
                    ((uintptr_t)user & HH_UNIT_MASK) == 0;
    _hh_policy_unlist_small_block(large);
    large->cookie = 0; /* a second free of this pointer is caught */
    _hh_granule_set(user, HH_GRANULE_FOREIGN);
    if (reusable && cache_put(base, size)) return;
    unmap_block(base, size, pool_bytes(large));
}

/* Moves the block (its header page first) to a fresh place for `span` bytes by
 * remapping its pages; NULL if the kernel would not.  The old range stops
 * being ours inside mremap, so its granule is cleared before: another
 * thread's mapping may land there the moment mremap returns, and its mark
 * must not be wiped afterwards. */
static char *move_mapping(hh_large *large, void *user, size_t span, bool huge) {
    char *target = map_block(span, HH_UNIT, huge);
    if (target == NULL) return NULL;
    char *base = large->map_base;
    size_t old_size = large->map_size;
    _hh_granule_set(user, HH_GRANULE_FOREIGN);
    if (!_hh_os_move(base, old_size, target, HH_OS_PAGE + span)) {
        _hh_granule_set(user, HH_GRANULE_LARGE);
        _hh_os_unmap(target, HH_OS_PAGE + span);
        return NULL;
    }
    HH_TEST_POINT("large_moved", user);
    _hh_os_advise(target, HH_OS_PAGE + span, huge);
    return target;
}

static void *resize(hh_large *large, void *user, size_t size);

/* Returns the block, resized where it is or moved by remapping; NULL when
 * neither is possible, and the caller allocates, copies and frees.  A block
 * in small pages leaves the policy's list while its header changes (and
 * may move), and comes back if it is in small pages after (a growth the
 * budget for huge pages did not afford puts a huge block there too). */
void *_hh_large_realloc(hh_large *large, void *user, size_t size) {
    if (atomic_load_explicit(&large->small_pages, memory_order_relaxed)) {
        _hh_policy_unlist_small_block(large);
    }
    void *result = resize(large, user, size);
    hh_large *now = result != NULL ? _hh_large_of(result) : large;
    if (atomic_load_explicit(&now->small_pages, memory_order_relaxed)) {
        _hh_policy_list_small_block(now);
    }
    return result;
}

/* What a block that grew (where it was or moved) adds to the counts. */
static void count_growth(hh_large *large, void *user, size_t size, size_t old_usable,
                         size_t old_map_size, size_t old_requested) {
    large->requested = size;
    _hh_policy_count_demand((intptr_t)(large->usable - old_usable));
    count_live(0, (int64_t)size - (int64_t)old_requested,
               (int64_t)large->map_size - (int64_t)old_map_size);
    /* One change, moved or not: the pages moved with the block. */
    _hh_stats_count_mapped((intptr_t)large->map_size - (intptr_t)old_map_size, false);
    HH_ASSERT(large_is_valid(large, user) && large->usable >= size);
    (void)user; /* only the assert reads it */
    _hh_policy_promote();
}

/* The pool pages for the whole units a block in them gains growing past
 * old_usable bytes (gained_bytes of them), mapped elsewhere to be moved into
 * place, its old tail (4 KiB pages) copied to their start; NULL (a fallback,
 * counted) where the pool or the cap refuses them. */
static char *gained_pool_pages(const char *user, size_t old_usable, size_t gained_bytes) {
    size_t old_whole = old_usable & ~HH_UNIT_MASK;
    char *gained = _hh_os_map_hugetlb(gained_bytes);
    if (gained == NULL) {
        atomic_fetch_add_explicit(&_hh_gstats.hugetlb_fallbacks, 1, memory_order_relaxed);
        return NULL;
    }
    memcpy(gained, user + old_whole, old_usable - old_whole);
    return gained;
}

/* A block in pool pages grows to span bytes where it is: the addresses after
 * it are claimed (4 KiB pages), then the gained pool pages replace its old
 * tail and the claimed part up to the new whole units (gained: its
 * gained_bytes of pool pages, NULL where it gains none).  False, nothing
 * changed, where those addresses are taken. */
static bool grow_hugetlb_in_place(char *user, size_t old_usable, size_t span, char *gained,
                                  size_t gained_bytes) {
    size_t old_whole = old_usable & ~HH_UNIT_MASK;
    if (_hh_os_map_at(user + old_usable, span - old_usable) == NULL) return false;
    if (gained == NULL || _hh_os_move(gained, gained_bytes, user + old_whole, gained_bytes)) {
        return true;
    }
    _hh_os_unmap(user + old_usable, span - old_usable);
    return false;
}

/* A block in pool pages moves to a fresh range of span bytes: the gained
 * pool pages go into place first, then the block's own pool pages follow
 * by mremap (page tables, not bytes); the old tail (4 KiB pages) is copied.
 * The new header page is written by the caller (gained and gained_bytes
 * as grow_hugetlb_in_place's).  NULL, the block as it was and the gained
 * pages given back, where the kernel refuses. */
static char *move_hugetlb(hh_large *large, char *user, size_t span, char *gained,
                          size_t gained_bytes) {
    size_t old_usable = large->usable, old_whole = old_usable & ~HH_UNIT_MASK;
    HH_ASSERT(old_whole > 0); /* mapped with a whole unit, shrunk to whole units */
    HH_ASSERT((gained == NULL) == (gained_bytes == 0));
    char *base = map_block(span, HH_UNIT, false);
    if (base != NULL && gained != NULL &&
        !_hh_os_move(gained, gained_bytes, base + HH_OS_PAGE + old_whole, gained_bytes)) {
        _hh_os_unmap(base, HH_OS_PAGE + span);
        base = NULL;
    }
    if (base == NULL) {
        if (gained != NULL) _hh_os_unmap_mapped(gained, gained_bytes, gained_bytes);
        return NULL;
    }
    char *target = base + HH_OS_PAGE;
    /* The old place's granule is let go before the move: another thread's
     * mapping may land there the moment the pages leave. */
    _hh_granule_set(user, HH_GRANULE_FOREIGN);
    if (!_hh_os_move(user, old_whole, target, old_whole)) {
        _hh_granule_set(user, HH_GRANULE_LARGE);
        /* The gained pages, moved into the range, go with it. */
        _hh_os_unmap_mapped(base, HH_OS_PAGE + span, gained_bytes);
        return NULL;
    }
    HH_TEST_POINT("large_moved", user);
    if (gained == NULL) memcpy(target + old_whole, user + old_whole, old_usable - old_whole);
    _hh_os_unmap(large->map_base, HH_OS_PAGE);
    if (old_usable > old_whole) _hh_os_unmap(user + old_whole, old_usable - old_whole);
    return base;
}

/* A block in pool pages grows by pool pages for its new whole units and 4 KiB
 * pages for its new tail, where it is or moved to a fresh range; NULL when
 * the pool has too few or the kernel refuses, and the caller copies it into
 * a new block.  Copied whole, old and new would be held at once.  The kernel
 * will not grow a hugetlb mapping by mremap (nor split its reservation), but
 * moves one (Linux 5.16+: page tables, not bytes) where both places are
 * 2 MiB-aligned and the length stays; before 5.16 the move fails. */
static void *grow_hugetlb(hh_large *large, void *user, size_t size) {
    HH_ASSERT((char *)user - large->map_base == (ptrdiff_t)HH_OS_PAGE);
    size_t span = block_span(size);
    size_t old_usable = large->usable, old_map_size = large->map_size;
    size_t old_requested = large->requested, alignment = large->alignment;
    size_t gained_bytes = (span & ~HH_UNIT_MASK) - (old_usable & ~HH_UNIT_MASK);
    char *gained = gained_bytes != 0 ? gained_pool_pages(user, old_usable, gained_bytes) : NULL;
    if (gained_bytes != 0 && gained == NULL) return NULL;
    hh_heap *heap = _hh_heap;
    if (grow_hugetlb_in_place(user, old_usable, span, gained, gained_bytes)) {
        large->map_size = HH_OS_PAGE + span;
        large->usable = span;
        if (heap->alive) _hh_count(&heap->stats.mremap_in_place, 1);
    } else {
        char *base = move_hugetlb(large, user, span, gained, gained_bytes);
        if (base == NULL) return NULL;
        user = install(base, HH_OS_PAGE + span, HH_OS_PAGE, alignment, true, false,
                       old_requested);
        large = _hh_large_of(user);
        if (heap->alive) _hh_count(&heap->stats.mremap_moves, 1);
    }
    count_growth(large, user, size, old_usable, old_map_size, old_requested);
    return user;
}

static void *resize(hh_large *large, void *user, size_t size) {
    HH_ASSERT(large_is_valid(large, user));
    size_t lead = (size_t)((char *)user - large->map_base);
    hh_heap *heap = _hh_heap;
    if (size <= large->usable) {
        if (size < HH_UNIT && size < large->usable / 2) return NULL; /* to the page heap */
        count_live(0, (int64_t)size - (int64_t)large->requested, 0);
        large->requested = size;
        /* Shrink by whole 2 MiB units only, and only when that frees half
         * (a block in pool pages keeps whole pool pages: its tail goes). */
        size_t keep = lead + _hh_align_up(size, HH_UNIT);
        if (keep <= large->map_size / 2) {
            size_t cut = large->map_size - keep, pool_before = pool_bytes(large);
            large->map_size = keep;
            large->usable = keep - lead;
            HH_ASSERT(!large->hugetlb || pool_bytes(large) == large->usable);
            unmap_block(large->map_base + keep, cut, pool_before - pool_bytes(large));
            _hh_policy_count_demand(-(intptr_t)cut);
            count_live(0, 0, -(int64_t)cut);
        }
        return user;
    }
    if (size > HH_MAX_ALLOC || size > _hh_cfg.memory_limit) return NULL;
    if (large->hugetlb) return grow_hugetlb(large, user, size);
    /* Blocks aligned beyond 2 MiB are not remapped. */
    if (lead != HH_OS_PAGE || ((uintptr_t)user & HH_UNIT_MASK) != 0) return NULL;
    /* The tail a growth leaves in 4 KiB pages is collapsed by the next one
     * (below), once the block covers its whole unit. */
    bool small_pages = atomic_load_explicit(&large->small_pages, memory_order_relaxed);
    bool huge = _hh_policy_block_huge(size - large->usable, small_pages ? large->usable : 0);
    size_t span = block_span(size);
    size_t new_size = HH_OS_PAGE + span;
    size_t old_usable = large->usable, old_map_size = large->map_size, old_requested = large->requested;

    int saved = errno;
    if (_hh_os_grow(large->map_base, large->map_size, new_size)) {
        _hh_os_advise(large->map_base, new_size, huge);
        large->map_size = new_size;
        large->usable = new_size - lead;
        if (heap->alive) _hh_count(&heap->stats.mremap_in_place, 1);
    } else {
        /* The header moves with the block, to a place aligned to 2 MiB:
         * realloc keeps only malloc's alignment, and that is what it has. */
        size_t alignment = large->alignment < HH_UNIT ? large->alignment : HH_UNIT;
        char *target = move_mapping(large, user, span, huge);
        errno = saved;
        if (target == NULL) return NULL;
        user = install(target, new_size, lead, alignment, false, small_pages, size);
        large = _hh_large_of(user);
        if (heap->alive) _hh_count(&heap->stats.mremap_moves, 1);
    }
    if (huge && small_pages) {
        /* In 4 KiB pages (mapped while the heap was small, or not afforded
         * by the budget), growing now that huge pages are: what it holds so
         * far goes into huge pages too, once. */
        atomic_store_explicit(&large->small_pages, 0, memory_order_relaxed);
        _hh_policy_collapse(user, _hh_align_up(old_usable, HH_UNIT));
    } else if (huge && (old_usable & HH_UNIT_MASK) != 0) {
        /* The old end's 2 MiB unit was a tail in 4 KiB pages; whole now. */
        _hh_policy_collapse((char *)user + (old_usable & ~HH_UNIT_MASK), HH_UNIT);
    } else if (!huge && !small_pages && _hh_policy_heap_is_huge()) {
        /* A huge block whose growth the budget did not afford: its new part
         * is in 4 KiB pages, and the block waits on the list for a collapse. */
        atomic_store_explicit(&large->small_pages, 1, memory_order_relaxed);
    }
    count_growth(large, user, size, old_usable, old_map_size, old_requested);
    return user;
}
