/* What a pointer is and who holds it: in the reserved range or in a region
 * mapped elsewhere, a small page's block, a growth heap's block or a medium
 * block; outside, what the granule map says (a large block, whose cookie is
 * checked by kind.h's _hh_large_is_live and nowhere else, a pool object, or
 * nothing of ours).  free's fast path recognises the common case (a pointer
 * of the range into a small page) by kind.h's arithmetic, inline; every slow
 * path, realloc, malloc_usable_size and hh_owns ask _hh_pointer_kind.  Inline:
 * free's slow path is hot enough that a call and a returned record cost it a
 * tenth more.  Above kind.h because it asks the regions' books (range.c). */
#ifndef HUGEHEAP_POINTER_KIND_H
#define HUGEHEAP_POINTER_KIND_H

#include "internal.h"
#include "kind.h"

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
