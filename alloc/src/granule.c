/* The granule map: which 2 MiB granules of address space outside the reserved
 * range are ours, and as what (a region mapped elsewhere, a large block's
 * start, a pool region).  free() reads it on its slow path to tell our
 * pointers from foreign ones before it touches any header.
 *
 * Two levels (see internal.h): leaves are mapped on first use and installed
 * with one compare-and-swap, so marking needs no lock and a leaf that cannot
 * be mapped fails only the allocation that needed it. */
#include <errno.h>

#include "internal.h"

_Atomic(uint8_t *) _hh_granule_root[HH_GRANULE_ROOTS];

static bool leaf_ready(size_t root_index) {
    if (atomic_load_explicit(&_hh_granule_root[root_index], memory_order_acquire) != NULL) {
        return true;
    }
    uint8_t *leaf = _hh_os_map_metadata(HH_GRANULE_LEAF_SIZE);
    HH_TEST_POINT("granule_leaf_mapped", leaf);
    if (leaf == NULL) return false;
    uint8_t *expected = NULL;
    if (!atomic_compare_exchange_strong_explicit(&_hh_granule_root[root_index], &expected, leaf,
                                                 memory_order_acq_rel, memory_order_acquire)) {
        _hh_os_unmap(leaf, HH_GRANULE_LEAF_SIZE); /* another thread installed one first */
    }
    return true;
}

bool _hh_granule_reserve(const void *addr, size_t size) {
    uintptr_t first = (uintptr_t)addr, last = first + (size ? size - 1 : 0);
    if (last < first || last >= HH_GRANULE_LIMIT) {
        errno = ENOMEM;
        return false;
    }
    for (size_t r = first >> HH_GRANULE_LEAF_SHIFT; r <= last >> HH_GRANULE_LEAF_SHIFT; r++) {
        if (!leaf_ready(r)) {
            errno = ENOMEM;
            return false;
        }
    }
    return true;
}

void _hh_granule_set(const void *addr, uint8_t kind) {
    uintptr_t a = (uintptr_t)addr;
    HH_ASSERT(a < HH_GRANULE_LIMIT);
    uint8_t *leaf = atomic_load_explicit(&_hh_granule_root[a >> HH_GRANULE_LEAF_SHIFT],
                                         memory_order_acquire);
    HH_ASSERT(leaf != NULL); /* reserved before the memory was handed out */
    if (leaf == NULL) return;
    atomic_store_explicit((_Atomic(uint8_t) *)&leaf[(a >> HH_GRANULE_SHIFT) &
                                                   (HH_GRANULE_LEAF_SIZE - 1)],
                          kind, memory_order_relaxed);
}
