/* Metadata that lives as long as the process (thread heaps, the pools'
 * per-thread slots): carved in 64-byte steps from mappings of its own, never
 * given back. */
#include "internal.h"

/* Guarded by the global lock. */
static char *meta_next, *meta_end;

void *_hh_meta_alloc_locked(size_t size) {
    size = _hh_align_up(size, 64);
    if ((size_t)(meta_end - meta_next) < size) {
        size_t chunk = size > 65536 ? _hh_align_up(size, 65536) : 65536;
        char *m = _hh_os_map_metadata(chunk);
        if (m == NULL) return NULL;
        meta_next = m;
        meta_end = m + chunk;
    }
    void *p = meta_next;
    meta_next += size;
    return p;
}
