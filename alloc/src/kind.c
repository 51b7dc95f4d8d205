/* What a size or a pointer is (kind.h): the size classes' tables, and the
 * lookup that tells any pointer's kind and owner for every path but free's
 * inline fast path. */
#include "kind.h"

/* ------------------------------------------------------------ size classes */

uint32_t _hh_class_size[HH_CLASSES];
uint8_t _hh_class_table[HH_DIRECT_SLOTS];
uint8_t _hh_class_direct_first[HH_CLASSES], _hh_class_direct_last[HH_CLASSES];

void _hh_classes_init(void) {
    for (unsigned c = 1; c <= 8; c++) _hh_class_size[c] = 16u * c;
    for (unsigned c = 9; c <= 56; c++) {
        unsigned j = c - 9, bit = 7 + j / 8, sub = j % 8;
        _hh_class_size[c] = (9u + sub) << (bit - 3);
    }
    /* A 64 KiB page in 7, 6, 5 and 4 blocks (multiples of 16). */
    _hh_class_size[57] = 9360;
    _hh_class_size[58] = 10912;
    _hh_class_size[59] = 13104;
    _hh_class_size[60] = 16384;
    for (unsigned c = 0; c < HH_CLASSES; c++) {
        _hh_class_direct_first[c] = 1;
        _hh_class_direct_last[c] = 0;
    }
    /* Every size in ((i - 1) * 16, i * 16] has the class of i * 16. */
    for (unsigned i = 0; i < HH_DIRECT_SLOTS; i++) {
        unsigned c = _hh_size_class_computed((size_t)i * 16);
        _hh_class_table[i] = (uint8_t)c;
        if (_hh_class_direct_first[c] > _hh_class_direct_last[c]) _hh_class_direct_first[c] = (uint8_t)i;
        _hh_class_direct_last[c] = (uint8_t)i;
    }
}

/* ----------------------------------------------------------------- pointers */

hh_pointer_kind _hh_pointer_kind(const void *ptr) {
    hh_pointer_kind what = {HH_KIND_FOREIGN, NULL, NULL, NULL};
    /* A region's pointer, in the range or mapped elsewhere; in the range,
     * none where no region is yet (no header to read there: PROT_NONE). */
    hh_region *region = _hh_region_find(ptr);
    if (region != NULL) {
        HH_ASSERT(region->cookie == _hh_region_cookie(region));
        what.region = region;
        what.page = _hh_page_of(ptr);
        what.kind = HH_SHARED_LOAD(what.page->span) != 0 ? HH_KIND_SMALL : HH_KIND_MEDIUM;
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
