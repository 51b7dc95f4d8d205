/* What a size or a pointer is: the one place that decides, in both
 * directions.
 *
 * size -> kind and class: a small block (up to HH_SMALL_MAX, one of the size
 * classes, or the growth heap's when realloc grows it), a medium block (a
 * run of pages, below HH_LARGE_MIN) or a large block (a mapping of its own).
 * The fast path of malloc (fastpath.h) takes its class from the inline
 * helpers here (the tables behind them are in kind.c) and writes the one
 * comparison of _hh_size_kind's small test out.
 *
 * pointer -> kind and owner: in the reserved range or in a region mapped
 * elsewhere, a small page's block, a growth heap's block or a medium block;
 * outside, what the granule map says (a large block, whose cookie is checked
 * here and nowhere else, a pool object, or nothing of ours).  free's fast
 * path recognises the common case (a pointer of the range into a small page)
 * by the same arithmetic, inline; every slow path, realloc,
 * malloc_usable_size and hh_owns ask _hh_pointer_kind. */
#ifndef HUGEHEAP_KIND_H
#define HUGEHEAP_KIND_H

#include "internal.h"

/* ----------------------------------------------------- size -> kind, class */

HH_INTERNAL extern uint32_t _hh_class_size[HH_CLASSES];
/* The class of every size up to HH_DIRECT_MAX, by [coarse][(size + 15) / 16]. */
HH_INTERNAL extern uint8_t _hh_class_table[2][HH_DIRECT_SLOTS];
/* The direct[] entries of each class: [coarse][class] first .. last (empty
 * when first > last). */
HH_INTERNAL extern uint8_t _hh_class_direct_first[2][HH_CLASSES];
HH_INTERNAL extern uint8_t _hh_class_direct_last[2][HH_CLASSES];
/* Fills the tables (at start-up). */
HH_INTERNAL void _hh_classes_init(void);

/* The arithmetic behind the table, for every size up to HH_SMALL_MAX;
 * coarse (0 or 1): the heap takes every other class above 128 bytes
 * (HH_CLASSES' comment). */
static inline unsigned _hh_size_class_computed(size_t size, unsigned coarse) {
    if (size <= HH_SMALL_STEP_MAX) return size == 0 ? 1 : (unsigned)((size + 15) >> 4);
    if (size <= HH_BINNED_MAX) {
        size_t w = size - 1;
        unsigned bit = 63u - (unsigned)__builtin_clzll(w); /* 7..12 */
        unsigned sub = ((unsigned)(w >> (bit - 3)) & 7u) | coarse;
        return 8u + ((bit - 7u) << 3) + sub + 1u;
    }
    if (size <= 9360) return 57;
    if (size <= 10912) return 58;
    if (size <= 13104) return 59;
    return 60;
}

static inline unsigned _hh_size_class(size_t size, unsigned coarse) {
    if (HH_LIKELY(size <= HH_DIRECT_MAX)) return _hh_class_table[coarse][(size + 15) >> 4];
    return _hh_size_class_computed(size, coarse);
}

/* Which kind of block a request of `size` bytes aligned to `alignment`
 * (malloc's: 16) gets. */
static inline hh_kind _hh_size_kind(size_t size, size_t alignment) {
    if (size <= HH_SMALL_MAX && alignment <= 16) return HH_KIND_SMALL;
    return size < HH_LARGE_MIN && alignment <= HH_UNIT ? HH_KIND_MEDIUM : HH_KIND_LARGE;
}

/* ------------------------------------------------ pointer -> kind, owner */

static inline hh_region *_hh_region_of(const void *p) {
    return (hh_region *)((uintptr_t)p & ~(uintptr_t)HH_REGION_MASK);
}

static inline bool _hh_in_range(const void *p) {
    return (uintptr_t)p - _hh_range_base < _hh_range_size;
}

/* The descriptor of the 64 KiB slot that holds p: in the range's descriptor
 * area, or (a region outside the range) in its header. */
static inline hh_page *_hh_page_of(const void *p) {
    uintptr_t offset = (uintptr_t)p - _hh_range_base;
    if (HH_LIKELY(offset < _hh_range_size)) {
        return (hh_page *)(_hh_range_base + (offset >> HH_SPAGE_SHIFT) * sizeof(hh_page));
    }
    return &_hh_region_of(p)->pages[((uintptr_t)p >> HH_SPAGE_SHIFT) & (HH_REGION_SLOTS - 1)];
}

static inline size_t _hh_page_index(const hh_region *region, const void *p) {
    return ((uintptr_t)p - (uintptr_t)region) >> HH_OS_PAGE_SHIFT;
}

static inline uintptr_t _hh_region_cookie(const hh_region *r) {
    return (uintptr_t)r ^ _hh_cookie_key;
}

/* The keyed cookie a live large block's header holds (cleared on free). */
static inline uintptr_t _hh_large_cookie(const void *user) {
    return ((uintptr_t)user ^ _hh_cookie_key) * 0x9E3779B97F4A7C15ull;
}

/* The header of the large block whose user pointer is p. */
static inline hh_large *_hh_large_of(const void *p) {
    return (hh_large *)((const char *)p - HH_LARGE_HEADER);
}

/* The one cookie check: whether the large block's granule at `user` holds a
 * live block starting there (its header's cookie is that of the pointer).
 * Only for a pointer the granule map marks HH_GRANULE_LARGE: its header page
 * is mapped then. */
static inline bool _hh_large_is_live(const void *user) {
    return _hh_large_of(user)->cookie == _hh_large_cookie(user);
}

/* What ptr is and who holds it (one lookup of the range, the region's
 * books or the granule map; a large block's cookie checked).  Any pointer,
 * NULL and wild ones included. */
static inline hh_pointer_kind _hh_pointer_kind(const void *ptr) {
    hh_pointer_kind what = {HH_KIND_FOREIGN, NULL, NULL, NULL};
    /* A region's pointer, in the range or mapped elsewhere; in the range,
     * none where no region is yet (no header to read there: PROT_NONE). */
    hh_region *region = _hh_region_find(ptr);
    if (region != NULL) {
        HH_ASSERT(region->cookie == _hh_region_cookie(region));
        what.region = region;
        what.page = _hh_page_of(ptr);
        if (HH_SHARED_LOAD(what.page->span) != 0) {
            what.kind = HH_KIND_SMALL;
        } else {
            what.kind = __atomic_load_n(&what.page->growth, __ATOMIC_ACQUIRE) ? HH_KIND_GROWTH
                                                                               : HH_KIND_MEDIUM;
        }
        return what;
    }
    switch (_hh_granule_kind(ptr)) {
    case HH_GRANULE_LARGE:
        if (!_hh_large_is_live(ptr)) {
            what.kind = HH_KIND_LARGE_FREED;
            return what;
        }
        what.kind = HH_KIND_LARGE;
        what.large = _hh_large_of(ptr);
        return what;
    case HH_GRANULE_POOL:
        what.kind = HH_KIND_POOL;
        return what;
    default:
        return what;
    }
}

/* Whether ptr is the start (or, on pages with aligned blocks, inside) of a
 * block the small page has carved: what hh_owns says of a small page. */
static inline bool _hh_page_holds(const hh_page *page, const void *ptr) {
    return (size_t)((const char *)ptr - page->area) < HH_SHARED_LOAD(page->carved_end);
}

#endif
