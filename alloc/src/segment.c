/* Segments: where they come from and where they go when empty.
 *
 * An empty segment is kept by its heap (one), then goes to a global pool under
 * the lock, and is given back to the kernel (MADV_DONTNEED of the whole 2 MiB,
 * so no huge page is ever split) once it has sat there for the release delay.
 * The delay is checked on every slow path of the allocator (a page refill, a
 * new segment, a large block), so it holds as long as the program allocates
 * at all; a program that stops calling the allocator keeps what it had.
 * Given-back segments keep their addresses and are handed out again first.
 *
 * Regions mapped while the heap was small are advised MADV_NOHUGEPAGE (os.c);
 * they are remembered here, so that once the heap has become large they can
 * be advised huge and the segments in use collapsed into huge pages. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

#define REGION_SIZE ((size_t)32 << 20) /* address space reserved at once */
#define POOL_LIMIT 64               /* empty segments kept at most */
#define EARLY_REGIONS 16            /* regions remembered for promotion */

/* All below: guarded by the global lock. */
static char *region_next, *region_end;
static hh_segment *pool_head, *pool_tail; /* empty, committed; oldest first */
static size_t pool_count;
static hh_segment **decommitted; /* empty, given back, addresses kept */
static size_t decommitted_count, decommitted_cap;
static hh_segment *abandoned;
static atomic_size_t abandoned_count;
static struct {
    char *start;
    size_t size;
} early[EARLY_REGIONS]; /* regions mapped before the promotion */
static size_t early_count;
static bool promoted;
/* When the oldest pooled segment is due for release; UINT64_MAX: none pooled. */
static _Atomic(uint64_t) release_due_ms = UINT64_MAX;

void _hh_segment_list_push(hh_segment **list, hh_segment *segment, uint8_t which) {
    segment->prev = NULL;
    segment->next = *list;
    if (*list) (*list)->prev = segment;
    *list = segment;
    segment->list = which;
}

void _hh_segment_list_remove(hh_segment **list, hh_segment *segment) {
    if (segment->prev) {
        segment->prev->next = segment->next;
    } else {
        *list = segment->next;
    }
    if (segment->next) segment->next->prev = segment->prev;
    segment->next = segment->prev = NULL;
    segment->list = HH_LIST_NONE;
}

static bool decommitted_push(hh_segment *segment) {
    if (decommitted_count == decommitted_cap) {
        size_t cap = decommitted_cap ? decommitted_cap * 2 : 512;
        hh_segment **grown = _hh_os_map_metadata(cap * sizeof *grown);
        if (grown == NULL) return false;
        if (decommitted) {
            memcpy(grown, decommitted, decommitted_count * sizeof *grown);
            munmap(decommitted, decommitted_cap * sizeof *grown);
        }
        decommitted = grown;
        decommitted_cap = cap;
    }
    decommitted[decommitted_count++] = segment;
    return true;
}

/* Gives one pooled segment back to the kernel. */
static void release_segment(hh_segment *segment) {
    atomic_fetch_add_explicit(&_hh_gstats.segments_released, 1, memory_order_relaxed);
    if (segment->hugetlb || !decommitted_push(segment)) {
        _hh_granule_set(segment, HH_GRANULE_FOREIGN);
        _hh_os_unmap(segment, HH_SEGMENT_SIZE);
        return;
    }
    _hh_os_decommit(segment, HH_SEGMENT_SIZE);
    _hh_os_count_mapped(-(intptr_t)HH_SEGMENT_SIZE);
}

static hh_segment *pool_pop_locked(void) {
    hh_segment *s = pool_tail; /* the most recently used one: most likely still cached */
    if (s == NULL) return NULL;
    pool_tail = s->prev;
    if (pool_tail) {
        pool_tail->next = NULL;
    } else {
        pool_head = NULL;
    }
    pool_count--;
    s->next = s->prev = NULL;
    s->list = HH_LIST_NONE;
    return s;
}

static void pool_push_locked(hh_segment *s) {
    s->freed_at_ms = _hh_clock_ms();
    s->next = NULL;
    s->prev = pool_tail;
    if (pool_tail) {
        pool_tail->next = s;
    } else {
        pool_head = s;
    }
    pool_tail = s;
    pool_count++;
    s->list = HH_LIST_POOL;
}

static void set_release_due_locked(void) {
    uint64_t due = pool_head ? pool_head->freed_at_ms + _hh_cfg.release_delay_ms : UINT64_MAX;
    atomic_store_explicit(&release_due_ms, due, memory_order_relaxed);
}

static size_t purge_locked(bool everything) {
    size_t released = 0;
    uint64_t now = everything ? 0 : _hh_clock_ms();
    while (pool_head &&
           (everything || pool_count > POOL_LIMIT ||
            now - pool_head->freed_at_ms >= _hh_cfg.release_delay_ms)) {
        hh_segment *s = pool_head;
        pool_head = s->next;
        if (pool_head) {
            pool_head->prev = NULL;
        } else {
            pool_tail = NULL;
        }
        pool_count--;
        release_segment(s);
        released += HH_SEGMENT_SIZE;
    }
    set_release_due_locked();
    return released;
}

void _hh_segment_release_due(void) {
    uint64_t due = atomic_load_explicit(&release_due_ms, memory_order_relaxed);
    if (HH_LIKELY(due == UINT64_MAX) || _hh_clock_ms() < due) return;
    _hh_lock();
    purge_locked(false);
    _hh_unlock();
}

size_t _hh_segment_purge(bool everything) {
    _hh_lock();
    size_t released = purge_locked(everything);
    _hh_unlock();
    return released;
}

static hh_segment *fresh_segment_locked(bool *hugetlb) {
    if (*hugetlb) {
        /* Falls back to a THP-advised segment by itself when the pool is empty. */
        hh_segment *s = _hh_os_map_aligned(HH_SEGMENT_SIZE, HH_SEGMENT_SIZE, 0, hugetlb, true);
        if (s != NULL && _hh_granule_reserve(s, HH_SEGMENT_SIZE)) return s;
        if (s != NULL) _hh_os_unmap(s, HH_SEGMENT_SIZE);
        *hugetlb = false;
    }
    if (region_next == region_end) {
        bool no_hugetlb = false;
        bool huge = _hh_os_huge_now(HH_SEGMENT_SIZE); /* reserved is not mapped: one segment */
        /* Reserved address space is not memory: it is counted as segments are
         * handed out.  Taken off before the mapping counts it, so that it
         * never shows in the peak. */
        size_t size = REGION_SIZE;
        _hh_os_count_mapped(-(intptr_t)size);
        char *r = _hh_os_map_aligned(size, HH_SEGMENT_SIZE, 0, &no_hugetlb, huge);
        if (r == NULL) { /* short of address space: one segment at a time */
            _hh_os_count_mapped((intptr_t)(size - HH_SEGMENT_SIZE));
            size = HH_SEGMENT_SIZE;
            r = _hh_os_map_aligned(size, HH_SEGMENT_SIZE, 0, &no_hugetlb, huge);
        }
        if (r == NULL) {
            _hh_os_count_mapped((intptr_t)size);
            return NULL;
        }
        if (!_hh_granule_reserve(r, size)) { /* beyond the map, or no memory for it */
            _hh_os_unmap(r, size);
            _hh_os_count_mapped((intptr_t)size);
            return NULL;
        }
        if (!huge && !promoted && early_count < EARLY_REGIONS) {
            early[early_count].start = r;
            early[early_count].size = size;
            early_count++;
        }
        region_next = r;
        region_end = r + size;
    }
    hh_segment *s = (hh_segment *)region_next;
    region_next += HH_SEGMENT_SIZE;
    _hh_os_count_mapped((intptr_t)HH_SEGMENT_SIZE);
    return s;
}

hh_segment *_hh_segment_acquire(hh_heap *heap) {
    hh_segment *s = heap->cached;
    uint32_t dirty = 0;
    bool hugetlb = false;
    if (s != NULL) {
        heap->cached = NULL;
        dirty = s->dirty_slices;
        hugetlb = s->hugetlb;
    } else {
        _hh_lock();
        s = pool_pop_locked();
        if (s != NULL) {
            dirty = s->dirty_slices;
            hugetlb = s->hugetlb;
        } else if (decommitted_count > 0) {
            s = decommitted[--decommitted_count];
            _hh_os_count_mapped((intptr_t)HH_SEGMENT_SIZE);
        } else {
            hugetlb = _hh_cfg.thp == HH_THP_HUGETLB;
            s = fresh_segment_locked(&hugetlb);
            if (s != NULL) {
                atomic_fetch_add_explicit(&_hh_gstats.segments_made, 1, memory_order_relaxed);
                _hh_granule_set(s, HH_GRANULE_SEGMENT);
            }
        }
        _hh_unlock();
        if (s == NULL) return NULL;
        _hh_segment_promote_early();
    }
    memset(s, 0, sizeof *s);
    for (unsigned j = 0; j < HH_SLICES; j++) s->slice_page[j] = &s->pages[j]; /* span 0: no blocks */
    s->cookie = _hh_segment_cookie(s);
    s->heap = heap;
    s->free_slices = UINT32_MAX;
    s->dirty_slices = dirty;
    s->hugetlb = hugetlb;
    _hh_segment_list_push(&heap->space, s, HH_LIST_SPACE);
    return s;
}

/* The segment has no page in use and is in no list. */
void _hh_segment_to_pool(hh_segment *segment) {
    segment->heap = NULL;
    _hh_lock();
    pool_push_locked(segment);
    purge_locked(false);
    if (pool_count == 1) set_release_due_locked();
    _hh_unlock();
}

void _hh_segment_release(hh_heap *heap, hh_segment *segment) {
    if (heap->alive && heap->cached == NULL) {
        segment->heap = NULL;
        segment->freed_at_ms = _hh_clock_ms();
        heap->cached = segment;
        return;
    }
    _hh_segment_to_pool(segment);
}

void _hh_segment_give_abandoned(hh_segment *segment) {
    segment->heap = NULL;
    _hh_lock();
    _hh_segment_list_push(&abandoned, segment, HH_LIST_ABANDONED);
    atomic_fetch_add_explicit(&abandoned_count, 1, memory_order_relaxed);
    _hh_unlock();
}

hh_segment *_hh_segment_take_abandoned(void) {
    if (atomic_load_explicit(&abandoned_count, memory_order_relaxed) == 0) return NULL;
    _hh_lock();
    hh_segment *s = abandoned;
    if (s != NULL) {
        _hh_segment_list_remove(&abandoned, s);
        atomic_fetch_sub_explicit(&abandoned_count, 1, memory_order_relaxed);
    }
    _hh_unlock();
    return s;
}

void _hh_segment_promote_early(void) {
    if (HH_LIKELY(!_hh_os_take_promotion())) return;
    _hh_lock();
    promoted = true;
    size_t n = early_count;
    _hh_unlock();
    for (size_t i = 0; i < n; i++) _hh_os_advise(early[i].start, early[i].size, true);
    /* This thread's segments in use now get huge pages (the hot part of the
     * early heap); other threads' collapse in the background (khugepaged). */
    hh_heap *heap = _hh_thread_heap;
    if (heap == NULL) return;
    HH_FOR_EACH_OWNED_SEGMENT(heap, s) {
        if (s->hugetlb) continue;
        _hh_os_collapse(s, HH_SEGMENT_SIZE);
        atomic_fetch_add_explicit(&_hh_gstats.segments_promoted, 1, memory_order_relaxed);
    }
}
