/* What a size or an address is: the one place that decides.
 *
 * size -> kind and class: a small block (up to HH_SMALL_MAX, one of the size
 * classes, or the growth heap's when realloc grows it), a medium block (a
 * run of pages, below HH_LARGE_MIN) or a large block (a mapping of its own).
 * The fast path of malloc (fastpath.h) takes its class from the inline
 * helpers here (the tables behind them are in kind.c) and writes the one
 * comparison of _hh_size_kind's small test out.
 *
 * address -> where its books are: its region, its small page's descriptor,
 * a large block's header and the one check of its cookie, by arithmetic.
 * Which kind of block a pointer is, which needs the regions' books
 * (range.c), is pointer_kind.h's, a layer up. */
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
    if (size <= HH_SPLIT_SIZE(7)) return HH_SPLIT_CLASS(7);
    if (size <= HH_SPLIT_SIZE(6)) return HH_SPLIT_CLASS(6);
    if (size <= HH_SPLIT_SIZE(5)) return HH_SPLIT_CLASS(5);
    return HH_SPLIT_CLASS(4);
}
_Static_assert(HH_SPLIT_SIZE(4) == HH_SMALL_MAX && HH_SPLIT_CLASS(4) == HH_CLASSES - 1,
               "the last class is the largest small block");

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

/* ------------------------------------------------ address -> its books */

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

#endif
