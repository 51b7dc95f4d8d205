/* Large blocks: a mapping each, starting on a 2 MiB boundary, with the header
 * in the 64 bytes before the user's pointer.
 *
 * A block that grows by realloc (MiniSat's region allocator, the clause
 * arenas of Kissat and CaDiCaL) grows in place when the address space after
 * it is free, and otherwise moves with mremap(MREMAP_MAYMOVE|MREMAP_FIXED) to
 * a 2 MiB-aligned place reserved beforehand: the kernel moves page tables, not
 * bytes, and huge pages stay huge because both ends are aligned. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

/* Freed blocks are unmapped at once, as glibc does, unless the program is
 * seen to churn blocks of that size (it allocated one of about the same size
 * soon after freeing one): only then do freed blocks of that size wait in a
 * small cache.  Keeping every freed block would raise the peak for the many
 * programs that free one big array and then allocate another. */
#define CACHE_BLOCK_MAX ((size_t)32 << 20)
#define CACHE_BYTES_MAX ((size_t)64 << 20)
#define CACHE_SLOTS 16
#define RECENT_FREES 8
#define CHURN_SIZES 4

typedef struct cached_mapping {
    char *base;
    size_t size;
    uint64_t freed_at_ms;
} cached_mapping;

/* Guarded by the global lock. */
static cached_mapping cache[CACHE_SLOTS];
static size_t cache_count, cache_bytes;
static cached_mapping recent_frees[RECENT_FREES]; /* base unused: sizes and times */
static unsigned recent_next;
static size_t churn_sizes[CHURN_SIZES];
static unsigned churn_next;

/* Within a quarter of each other. */
static bool about_the_same(size_t a, size_t b) {
    return a >= b ? a - b <= b / 4 : b - a <= a / 4;
}

static bool churning(size_t size) {
    for (unsigned i = 0; i < CHURN_SIZES; i++) {
        if (churn_sizes[i] && about_the_same(churn_sizes[i], size)) return true;
    }
    return false;
}

static void note_allocation_locked(size_t size) {
    uint64_t now = _hh_clock_ms();
    for (unsigned i = 0; i < RECENT_FREES; i++) {
        if (recent_frees[i].size && about_the_same(recent_frees[i].size, size) &&
            now - recent_frees[i].freed_at_ms < _hh_cfg.release_delay_ms && !churning(size)) {
            churn_sizes[churn_next++ % CHURN_SIZES] = size;
            return;
        }
    }
}

/* Rounds the mapping up to whole 2 MiB units when that costs at most a
 * sixteenth more; otherwise the tail stays in 4 KiB pages (the kernel backs
 * only whole aligned 2 MiB ranges of a mapping with huge pages).  A rounded
 * tail is resident in full as soon as any byte of it is touched. */
static size_t mapping_size(size_t need) {
    size_t pages = _hh_align_up(need, HH_OS_PAGE);
    size_t whole = _hh_align_up(pages, HH_SEGMENT_SIZE);
    return whole - pages <= pages / 16 ? whole : pages;
}

static size_t purge_cache_locked(bool everything) {
    size_t released = 0;
    uint64_t now = _hh_clock_ms();
    for (size_t i = 0; i < cache_count;) {
        if (everything || now - cache[i].freed_at_ms >= _hh_cfg.release_delay_ms) {
            _hh_os_unmap(cache[i].base, cache[i].size);
            released += cache[i].size;
            cache_bytes -= cache[i].size;
            cache[i] = cache[--cache_count];
        } else {
            i++;
        }
    }
    return released;
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
    if (base == NULL) note_allocation_locked(size);
    _hh_unlock();
    return base;
}

static bool cache_put(char *base, size_t size) {
    if (size > CACHE_BLOCK_MAX) return false;
    _hh_lock();
    purge_cache_locked(false);
    bool keep = churning(size);
    if (!keep) {
        recent_frees[recent_next++ % RECENT_FREES] = (cached_mapping){NULL, size, _hh_clock_ms()};
    }
    while (keep && cache_count > 0 &&
           (cache_count == CACHE_SLOTS || cache_bytes + size > CACHE_BYTES_MAX)) {
        size_t oldest = 0;
        for (size_t i = 1; i < cache_count; i++) {
            if (cache[i].freed_at_ms < cache[oldest].freed_at_ms) oldest = i;
        }
        _hh_os_unmap(cache[oldest].base, cache[oldest].size);
        cache_bytes -= cache[oldest].size;
        cache[oldest] = cache[--cache_count];
    }
    if (keep) {
        cache[cache_count++] = (cached_mapping){base, size, _hh_clock_ms()};
        cache_bytes += size;
    }
    _hh_unlock();
    return keep;
}

static void *install(char *base, size_t map_size, size_t lead, size_t alignment, bool hugetlb) {
    char *user = base + lead;
    hh_large *h = _hh_large_of(user);
    h->cookie = _hh_large_cookie(user);
    h->map_base = base;
    h->map_size = map_size;
    h->usable = map_size - lead;
    h->alignment = alignment;
    h->hugetlb = hugetlb;
    _hh_granule_set(user, HH_GRANULE_LARGE);
    return user;
}

void *_hh_large_alloc(size_t size, size_t alignment, bool zero) {
    if (size > HH_MAX_ALLOC || alignment > HH_MAX_ALLOC / 2) {
        errno = ENOMEM;
        return NULL;
    }
    _hh_init();
    size_t lead, map_alignment, offset;
    if (alignment < HH_SEGMENT_SIZE) {
        lead = alignment > HH_LARGE_HEADER ? alignment : HH_LARGE_HEADER;
        map_alignment = HH_SEGMENT_SIZE;
        offset = 0;
    } else { /* the header gets a 4 KiB page of its own before the block */
        lead = HH_OS_PAGE;
        map_alignment = alignment;
        offset = HH_OS_PAGE;
    }
    size_t size_needed = mapping_size(lead + size);
    void *user;
    size_t cached_size = 0;
    char *base = offset == 0 ? cache_take(size_needed, &cached_size) : NULL;
    if (base != NULL) {
        user = install(base, cached_size, lead, alignment, false);
        if (zero) memset(user, 0, size);
    } else {
        bool hugetlb = _hh_cfg.thp == HH_THP_HUGETLB && offset == 0 &&
                       (size_needed & HH_SEGMENT_MASK) == 0;
        base = _hh_os_map_aligned(size_needed, map_alignment, offset, &hugetlb);
        if (base == NULL) {
            errno = ENOMEM;
            return NULL;
        }
        user = install(base, size_needed, lead, alignment, hugetlb);
    }
    atomic_fetch_add_explicit(&_hh_gstats.large_allocs, 1, memory_order_relaxed);
    if (HH_UNLIKELY(_hh_stats_on)) _hh_stats_count_alloc(_hh_thread_heap, _hh_large_of(user)->usable);
    return user;
}

void _hh_large_free(hh_large *large, void *user) {
    if (HH_UNLIKELY(_hh_stats_on)) _hh_stats_in_use(-(int64_t)large->usable);
    char *base = large->map_base;
    size_t size = large->map_size;
    bool reusable = !large->hugetlb && ((uintptr_t)base & HH_SEGMENT_MASK) == 0;
    large->cookie = 0; /* a second free of this pointer is caught */
    _hh_granule_set(user, HH_GRANULE_FOREIGN);
    if (reusable && cache_put(base, size)) return;
    _hh_os_unmap(base, size);
}

/* Moves the block to a fresh 2 MiB-aligned range of `new_size` bytes by
 * remapping its pages; NULL if the kernel would not. */
static char *move_mapping(char *base, size_t old_size, size_t new_size) {
    bool hugetlb = false;
    char *target = _hh_os_map_aligned(new_size, HH_SEGMENT_SIZE, 0, &hugetlb);
    if (target == NULL) return NULL;
    void *moved = mremap(base, old_size, new_size, MREMAP_MAYMOVE | MREMAP_FIXED, target);
    if (moved == MAP_FAILED) {
        _hh_os_unmap(target, new_size);
        return NULL;
    }
    _hh_os_count_mapped(-(intptr_t)old_size); /* the old range is gone */
    _hh_os_advise(target, new_size);
    return target;
}

/* Returns the block, resized where it is or moved by remapping; NULL when
 * neither is possible, and the caller allocates, copies and frees. */
void *_hh_large_realloc(hh_large *large, void *user, size_t size) {
    size_t lead = (size_t)((char *)user - large->map_base);
    hh_heap *heap = _hh_thread_heap;
    if (size <= large->usable) {
        if (size <= HH_MEDIUM_MAX && size < large->usable / 2) return NULL; /* to a page */
        /* Shrink by whole 2 MiB units only, and only when that frees half. */
        size_t keep = _hh_align_up(lead + size, HH_SEGMENT_SIZE);
        if (!large->hugetlb && keep <= large->map_size / 2) {
            size_t cut = large->map_size - keep;
            _hh_os_unmap(large->map_base + keep, cut);
            large->map_size = keep;
            large->usable = keep - lead;
            if (HH_UNLIKELY(_hh_stats_on)) _hh_stats_in_use(-(int64_t)cut);
        }
        return user;
    }
    if (size > HH_MAX_ALLOC) return NULL;
    size_t new_size = mapping_size(lead + size);
    size_t old_usable = large->usable;
    if (large->hugetlb) return NULL; /* hugetlb mappings are not remapped */

    int saved = errno;
    void *grown = mremap(large->map_base, large->map_size, new_size, 0);
    errno = saved;
    if (grown != MAP_FAILED) {
        _hh_os_count_mapped((intptr_t)(new_size - large->map_size));
        _hh_os_advise(large->map_base, new_size);
        large->map_size = new_size;
        large->usable = new_size - lead;
        if (heap) heap->stats.mremap_in_place++;
    } else {
        size_t alignment = large->alignment; /* the header moves with the block */
        char *target = move_mapping(large->map_base, large->map_size, new_size);
        errno = saved;
        if (target == NULL) return NULL;
        _hh_granule_set(user, HH_GRANULE_FOREIGN);
        user = install(target, new_size, lead, alignment, false);
        if (heap) heap->stats.mremap_moves++;
    }
    if (HH_UNLIKELY(_hh_stats_on)) _hh_stats_in_use((int64_t)(_hh_large_of(user)->usable - old_usable));
    return user;
}
