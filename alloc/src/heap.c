/* Thread heaps and their pages: the design of the tabling paper's allocator,
 * generalised to many size classes.
 *
 * Each thread owns a heap; a heap owns segments and the pages in them, and
 * allocates and frees on them without locks.  A free by another thread goes
 * to the page with one atomic push (thread_free).  When the owner finds a page
 * exhausted it takes the page out of its queue and marks it FULL; the first
 * remote free into a FULL page also pushes the page on the owner's `pending`
 * stack, so the owner learns that the page has room again without scanning.
 * A thread that exits hands its segments, with every page still in use, to a
 * global pool of abandoned segments; the next thread that needs a page adopts
 * them.
 *
 * Page state protocol (low bits of thread_free):
 *   owner:  NORMAL -> FULL      when it takes an exhausted page out of its queue
 *   remote: FULL -> PENDING     with its push; then it pushes the page on the
 *                               owner's pending stack
 *   owner:  PENDING -> NORMAL   when it pops the page off its pending stack
 *   owner:  FULL -> NORMAL      when its own free puts the page back in its queue
 * A page is in the pending stack exactly while it is PENDING, so it is never
 * pushed twice; the owner does not retire or abandon a PENDING page.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "internal.h"
#include "pthread_compat.h"


hh_config _hh_cfg;
bool _hh_stats_on;
uint64_t _hh_cookie_key;
uintptr_t _hh_list_key;
uintptr_t _hh_free_mark;
#if defined(HH_TESTING)
_Atomic(_hh_test_hook_fn) _hh_test_hook;
#endif
__thread hh_heap *_hh_thread_heap __attribute__((tls_model("initial-exec")));
uint32_t _hh_class_size[HH_CLASSES];
uint8_t _hh_class_slices[HH_CLASSES];
uint8_t _hh_class_table[HH_CLASS_TABLE_MAX / 16 + 1];

/* Every queue of a new heap points here: its free list is always empty, so
 * the fast path needs no NULL check. */
hh_page _hh_empty_page;

/* How long a small heap's free slices wait before they go back to the kernel
 * (mimalloc's purge_delay is 10 ms too): long enough that a page retired and
 * needed again at once is not faulted in twice, short enough that the
 * resident memory follows the live data. */
#define SLICE_PURGE_MS 10

static atomic_int init_state; /* 0: not yet, 2: done */
/* late_init: 0 not started, 1 running (in the thread whose
 * in_late_init is set), 2 done. */
static atomic_int late_init_state;
static __thread bool in_late_init __attribute__((tls_model("initial-exec")));
static atomic_bool thread_key_ready;
static pthread_key_t thread_key;
static atomic_uint_fast64_t threads_seen;

/* Guarded by the global lock. */
static hh_heap *all_heaps, *free_heaps;
static char *meta_next, *meta_end;

/* ---------------------------------------------------------------- classes */

void _hh_classes_init(void) {
    for (unsigned c = 1; c <= 8; c++) _hh_class_size[c] = 16u * c;
    for (unsigned c = 9; c <= HH_BINNED_CLASSES; c++) {
        unsigned j = c - 9, bit = 7 + j / 8, sub = j % 8;
        _hh_class_size[c] = (9u + sub) << (bit - 3);
    }
    for (unsigned k = HH_SPAN_MIN_SLICES; k <= HH_SPAN_MAX_SLICES; k++) {
        _hh_class_size[HH_BINNED_CLASSES + 1 + k - HH_SPAN_MIN_SLICES] = (uint32_t)(k * HH_SLICE_SIZE);
    }
    for (unsigned c = 1; c < HH_CLASSES; c++) {
        size_t size = _hh_class_size[c];
        size_t slices;
        if (size <= 8192) {
            slices = 1;
        } else if (c <= HH_BINNED_CLASSES) {
            slices = (8 * size + HH_SLICE_SIZE - 1) / HH_SLICE_SIZE; /* room for 8 blocks */
        } else {
            slices = size / HH_SLICE_SIZE; /* one block, exactly */
        }
        _hh_class_slices[c] = (uint8_t)slices;
    }
    /* Every size in ((i - 1) * 16, i * 16] has the class of i * 16. */
    for (unsigned i = 0; i <= HH_CLASS_TABLE_MAX / 16; i++) {
        _hh_class_table[i] = (uint8_t)_hh_size_class_computed((size_t)i * 16);
    }
}

/* ------------------------------------------------------------------- init */

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

static void thread_exit(void *heap);
static void fork_prepare(void);
static void fork_parent(void);
static void fork_child(void);

/* Things that may call back into malloc: done once, outside the lock.  A
 * thread that made its heap while another thread runs this waits for the
 * thread key, so that its heap, too, is abandoned when it exits (a thread that
 * returned at once would never be).  The thread running it may allocate from
 * inside (pthread_atfork and pthread_key_create may): it does not wait on
 * itself. */
static void late_init(void) {
    int expected = 0;
    if (!atomic_compare_exchange_strong(&late_init_state, &expected, 1)) {
        if (in_late_init) return;
        HH_TEST_POINT("late_init_wait", NULL);
        while (atomic_load_explicit(&late_init_state, memory_order_acquire) != 2) sched_yield();
        hh_heap *heap = _hh_thread_heap;
        if (heap != NULL && atomic_load_explicit(&thread_key_ready, memory_order_acquire)) {
            pthread_setspecific(thread_key, heap);
        }
        return;
    }
    in_late_init = true;
    HH_TEST_POINT("late_init_running", NULL);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    bool have_keys = true;
#if defined(HH_SHARED_LIBRARY)
    have_keys = pthread_key_create != NULL; /* no libpthread: no other threads either */
#endif
    if (have_keys && pthread_key_create(&thread_key, thread_exit) == 0) {
        atomic_store_explicit(&thread_key_ready, true, memory_order_release);
        hh_heap *heap = _hh_thread_heap;
        if (heap != NULL) pthread_setspecific(thread_key, heap);
    }
    in_late_init = false;
    atomic_store_explicit(&late_init_state, 2, memory_order_release);
}

void _hh_init(void) {
    if (HH_LIKELY(atomic_load_explicit(&init_state, memory_order_acquire) == 2)) return;
    _hh_lock();
    if (atomic_load_explicit(&init_state, memory_order_relaxed) == 0) {
        _hh_config_read(&_hh_cfg);
        _hh_stats_on = _hh_cfg.stats_print || _hh_cfg.stats_json_path[0] != '\0';
        _hh_classes_init();
        const void *random = (const void *)getauxval(AT_RANDOM); /* 16 bytes, unaligned */
        uint64_t key[2] = {(uintptr_t)&_hh_cfg, _hh_clock_ms()};
        if (random != NULL) memcpy(key, random, sizeof key);
        _hh_cookie_key = key[0] ^ key[1];
        _hh_cookie_key |= 1;
        /* Two more keys from the first: links and marks must differ from it. */
        _hh_free_mark = (uintptr_t)((_hh_cookie_key * 0x9E3779B97F4A7C15ull) | 1);
        _hh_list_key = (uintptr_t)(_hh_free_mark * 0xBF58476D1CE4E5B9ull);
        atomic_store_explicit(&init_state, 2, memory_order_release);
    }
    _hh_unlock();
}

__attribute__((constructor)) static void init_at_load(void) {
    _hh_init();
    late_init();
}

hh_heap *_hh_heap_for_thread(void) {
    hh_heap *heap = _hh_thread_heap;
    if (heap != NULL) return heap;
    _hh_init();
    _hh_lock();
    heap = free_heaps;
    if (heap != NULL) {
        free_heaps = heap->next_free;
    } else {
        heap = _hh_meta_alloc_locked(sizeof *heap);
        if (heap != NULL) {
            memset(heap, 0, sizeof *heap);
            heap->next_all = all_heaps;
            all_heaps = heap;
        }
    }
    _hh_unlock();
    if (heap == NULL) return NULL;
    for (unsigned c = 0; c < HH_CLASSES; c++) heap->queue[c] = &_hh_empty_page;
    heap->space = heap->full = heap->cached = NULL;
    atomic_store_explicit(&heap->pending, NULL, memory_order_relaxed);
    heap->purge_due_ms = UINT64_MAX;
    heap->alive = true;
    atomic_fetch_add_explicit(&threads_seen, 1, memory_order_relaxed);
    _hh_thread_heap = heap;
    /* May allocate (keys past the first 32): the heap is in place already. */
    if (atomic_load_explicit(&thread_key_ready, memory_order_acquire)) {
        pthread_setspecific(thread_key, heap);
    } else {
        late_init();
    }
    return heap;
}

/* ------------------------------------------------------------------ pages */

static void queue_push_front(hh_heap *heap, hh_page *page) {
    unsigned c = page->class_index;
    page->prev = NULL;
    page->next = (heap->queue[c] == &_hh_empty_page) ? NULL : heap->queue[c];
    if (page->next) {
        page->next->prev = page;
    } else {
        heap->queue_tail[c] = page;
    }
    heap->queue[c] = page;
    page->in_queue = true;
}

/* Pages that regain room go last: they collect more frees before they are
 * used again, instead of bouncing between full and queued on every block. */
static void queue_push_back(hh_heap *heap, hh_page *page) {
    unsigned c = page->class_index;
    if (heap->queue[c] == &_hh_empty_page) {
        queue_push_front(heap, page);
        return;
    }
    page->next = NULL;
    page->prev = heap->queue_tail[c];
    page->prev->next = page;
    heap->queue_tail[c] = page;
    page->in_queue = true;
}

static void queue_remove(hh_heap *heap, hh_page *page) {
    unsigned c = page->class_index;
    if (page->prev) {
        page->prev->next = page->next;
    } else {
        heap->queue[c] = page->next ? page->next : &_hh_empty_page;
    }
    if (page->next) {
        page->next->prev = page->prev;
    } else {
        heap->queue_tail[c] = page->prev;
    }
    page->next = page->prev = NULL;
    page->in_queue = false;
}

static inline uint32_t slice_mask(unsigned start, unsigned count) {
    uint32_t bits = count >= 32 ? UINT32_MAX : ((1u << count) - 1u);
    return bits << start;
}

/* Whether p is the start of a block of the page's carved part. */
static bool block_in_page(const hh_page *page, const void *p) {
    size_t offset = (size_t)((const char *)p - page->area);
    return offset < (size_t)page->reserved * page->block_size &&
           _hh_page_block_index(page, offset) * page->block_size == offset;
}

/* Length of an encoded list, or UINT32_MAX if it is longer than the page's
 * capacity or leaves the page (for assertions and the double-free check). */
static uint32_t list_length(const hh_page *page, hh_block *list, const hh_block *find,
                            bool *found) {
    uint32_t n = 0;
    for (hh_block *b = list; b != NULL; b = _hh_decode(b->next)) {
        if (n++ >= page->capacity || !block_in_page(page, b)) return UINT32_MAX;
        if (b == find) *found = true;
    }
    return n;
}

/* The page's invariants (see hh_page in internal.h): the owner's view. */
static HH_NOINLINE __attribute__((unused)) bool page_is_valid(const hh_page *page) {
    if (page->reserved > page->capacity || page->used > page->reserved) return false;
    if (atomic_load_explicit(&page->span, memory_order_relaxed) !=
        page->capacity * page->block_size) {
        return false;
    }
    bool unused = false;
    uint32_t free_n = list_length(page, page->free, NULL, &unused);
    uint32_t local_n = list_length(page, page->local_free, NULL, &unused);
    if (free_n == UINT32_MAX || local_n == UINT32_MAX) return false;
    return page->used + free_n + local_n == page->reserved;
}

void _hh_free_list_corrupted(const void *where) {
    _hh_fatal("corrupted free list (a block was written after free?) at", where);
}

void _hh_free_check_double(hh_page *page, hh_block *block, bool owner) {
    bool found = false;
    if (owner) {
        list_length(page, page->free, block, &found);
        list_length(page, page->local_free, block, &found);
    }
    /* The thread-free list below its head only grows at the head while the
     * owner has not collected it; a bounded walk over blocks of this page. */
    uintptr_t tf = atomic_load_explicit(&page->thread_free, memory_order_acquire);
    list_length(page, (hh_block *)(tf & ~HH_PAGE_STATE_MASK), block, &found);
    if (found || !owner) _hh_fatal("free(): double free detected of", block);
}

void _hh_free_local_marked(hh_heap *heap, hh_page *page, hh_block *block) {
    _hh_free_check_double(page, block, true);
    _hh_free_local_unmarked(heap, page, block);
}

/* Moves the blocks other threads freed into the free list; true if any. */
static bool collect_thread_free(hh_page *page) {
    uintptr_t tf = atomic_load_explicit(&page->thread_free, memory_order_relaxed);
    if ((tf & ~HH_PAGE_STATE_MASK) == 0) return false;
    while (!atomic_compare_exchange_weak_explicit(&page->thread_free, &tf, tf & HH_PAGE_STATE_MASK,
                                                  memory_order_acquire, memory_order_relaxed)) {
    }
    hh_block *list = (hh_block *)(tf & ~HH_PAGE_STATE_MASK);
    hh_block *tail = list;
    uint32_t count = 1;
    /* At most `used` blocks can have come back: a longer list is a cycle or a
     * stray write, and walking on would loop or wander off the page. */
    for (hh_block *next; (next = _hh_decode(tail->next)) != NULL; tail = next) {
        if (HH_UNLIKELY(++count > page->used || !block_in_page(page, next))) {
            _hh_free_list_corrupted(next);
        }
    }
    tail->next = _hh_encode(page->free);
    page->free = list;
    page->free_is_zero = false;
    page->used -= count;
    HH_ASSERT_EXPENSIVE(page_is_valid(page));
    return true;
}

/* Carves not-yet-used blocks off the end of the page, a few KiB at a time so
 * that a page's memory is touched as it is needed. */
static void carve(hh_page *page) {
    uint32_t left = page->capacity - page->reserved;
    uint32_t batch = page->block_size >= 4096 ? 1 : 4096 / page->block_size;
    if (batch > left) batch = left;
    char *first = page->area + (size_t)page->reserved * page->block_size;
    char *p = first;
    for (uint32_t i = 1; i < batch; i++, p += page->block_size) {
        ((hh_block *)p)->next = _hh_encode((hh_block *)(p + page->block_size));
    }
    ((hh_block *)p)->next = _hh_encode(NULL);
    page->free = (hh_block *)first;
    page->free_is_zero = page->fresh;
    page->reserved += batch;
}

/* Refills an empty free list; false if the page has nothing left. */
static bool page_refill(hh_page *page) {
    if (page->local_free != NULL) {
        page->free = page->local_free;
        page->local_free = NULL;
        page->free_is_zero = false;
        return true;
    }
    if (collect_thread_free(page)) return true;
    if (page->reserved < page->capacity) {
        carve(page);
        return true;
    }
    return false;
}

static void segment_page_freed(hh_heap *heap, hh_segment *segment) {
    if (segment->list == HH_LIST_FULL) {
        _hh_segment_list_remove(&heap->full, segment);
        _hh_segment_list_push(&heap->space, segment, HH_LIST_SPACE);
    }
    if (--segment->used_pages == 0) {
        _hh_segment_list_remove(&heap->space, segment);
        _hh_segment_release(heap, segment);
    }
}

/* Gives an empty page's slices back to its segment. */
static void page_retire(hh_heap *heap, hh_page *page) {
    if (page->in_queue) queue_remove(heap, page);
    hh_segment *segment = _hh_segment_of(page);
    unsigned start = page->slice_index, count = page->slice_count;
    HH_ASSERT(page->used == 0);
    HH_ASSERT_EXPENSIVE(page_is_valid(page));
    atomic_store_explicit(&page->span, 0, memory_order_relaxed);
    atomic_store_explicit(&page->in_use, false, memory_order_relaxed);
    atomic_store_explicit(&page->heap, NULL, memory_order_relaxed);
    page->slice_count = 0; /* walks over a segment's pages step one slice here */
    for (unsigned j = start; j < start + count; j++) segment->slice_page[j] = &segment->pages[j];
    segment->free_slices |= slice_mask(start, count);
    _hh_os_count_committed(-(intptr_t)((size_t)count * HH_SLICE_SIZE));
    if (!segment->hugetlb && !_hh_os_huge_now(0)) {
        /* Small pages: the slices go back to the kernel soon, unless a new
         * page takes them first (a small heap should follow its live data,
         * as glibc's does). */
        segment->purge_slices |= slice_mask(start, count);
        if (heap->purge_due_ms == UINT64_MAX) heap->purge_due_ms = _hh_clock_ms() + SLICE_PURGE_MS;
    }
    segment_page_freed(heap, segment);
}

/* Sets up a page of `count` slices from `start` for a size class. */
static hh_page *page_init(hh_heap *heap, hh_segment *s, unsigned start, unsigned count,
                          unsigned class_index) {
    uint32_t mask = slice_mask(start, count);
    hh_page *page = &s->pages[start];
    size_t skip = start == 0 ? HH_SEGMENT_HEADER : 0;
    page->free = page->local_free = NULL;
    page->used = 0;
    page->block_size = _hh_class_size[class_index];
    page->capacity = (uint32_t)((count * HH_SLICE_SIZE - skip) / page->block_size);
    page->size_magic = (((uint64_t)1 << HH_SIZE_MAGIC_SHIFT) + page->block_size - 1) /
                       page->block_size;
    atomic_store_explicit(&page->span, page->capacity * page->block_size, memory_order_relaxed);
    page->reserved = 0;
    page->class_index = (uint8_t)class_index;
    page->slice_index = (uint8_t)start;
    page->slice_count = (uint8_t)count;
    atomic_store_explicit(&page->has_aligned, false, memory_order_relaxed);
    page->fresh = (s->dirty_slices & mask) == 0;
    page->free_is_zero = false;
    page->area = (char *)s + (size_t)start * HH_SLICE_SIZE + skip;
    atomic_store_explicit(&page->thread_free, HH_PAGE_NORMAL, memory_order_relaxed);
    atomic_store_explicit(&page->heap, heap, memory_order_relaxed);
    page->pending_next = NULL;
    atomic_store_explicit(&page->in_use, true, memory_order_relaxed);
    for (unsigned j = start; j < start + count; j++) s->slice_page[j] = page;
    s->dirty_slices |= mask;
    s->free_slices &= ~mask;
    s->purge_slices &= ~mask;
    _hh_os_count_committed((intptr_t)((size_t)count * HH_SLICE_SIZE));
    s->used_pages++;
    if (s->free_slices == 0) {
        _hh_segment_list_remove(&heap->space, s);
        _hh_segment_list_push(&heap->full, s, HH_LIST_FULL);
    }
    queue_push_front(heap, page);
    return page;
}

/* A new page for the class in the first owned segment with room for it. */
/* A new page for the class, in the fullest owned segment with room for it
 * (so that the others empty out and go back whole; TCMalloc's HugePageFiller
 * does the same). */
static hh_page *page_new(hh_heap *heap, unsigned class_index) {
    unsigned count = _hh_class_slices[class_index];
    for (;;) {
        hh_segment *best = NULL;
        uint32_t best_starts = 0;
        int best_free = HH_SLICES + 1;
        for (hh_segment *s = heap->space; s != NULL; s = s->next) {
            int free_count = __builtin_popcount(s->free_slices);
            if (free_count >= best_free || free_count < (int)count) continue;
            uint32_t starts = s->free_slices;
            if (count > 1) starts &= ~1u; /* slice 0 is short: it holds the header */
            for (unsigned i = 1; i < count && starts; i++) starts &= s->free_slices >> i;
            if (starts != 0) {
                best = s;
                best_starts = starts;
                best_free = free_count;
            }
        }
        if (best != NULL) {
            return page_init(heap, best, (unsigned)__builtin_ctz(best_starts), count, class_index);
        }
        if (_hh_segment_acquire(heap) == NULL) return NULL;
    }
}

/* The owner found the page exhausted: take it out of the queue.  Returns
 * false if other threads freed blocks into it meanwhile (then it stays). */
static bool page_take_out_full(hh_heap *heap, hh_page *page) {
    uintptr_t tf = atomic_load_explicit(&page->thread_free, memory_order_relaxed);
    for (;;) {
        if ((tf & HH_PAGE_STATE_MASK) == HH_PAGE_PENDING) break; /* the pending stack has it */
        if ((tf & ~HH_PAGE_STATE_MASK) != 0) return false;
        /* Release: the remote free that sees FULL then writes pending_next,
         * which this thread read when it last drained the page. */
        if (atomic_compare_exchange_weak_explicit(&page->thread_free, &tf, HH_PAGE_FULL,
                                                  memory_order_release, memory_order_relaxed)) {
            break;
        }
    }
    queue_remove(heap, page);
    return true;
}

static void page_set_normal(hh_page *page) {
    uintptr_t tf = atomic_load_explicit(&page->thread_free, memory_order_relaxed);
    while ((tf & HH_PAGE_STATE_MASK) != HH_PAGE_NORMAL &&
           !atomic_compare_exchange_weak_explicit(&page->thread_free, &tf,
                                                  tf & ~HH_PAGE_STATE_MASK, memory_order_relaxed,
                                                  memory_order_relaxed)) {
    }
}

/* An empty page stays while it is the only one of its class (a block freed
 * and allocated again must not set up a page each time), except a page of
 * several slices in a small heap: its memory goes back instead. */
static bool page_keeps_when_empty(hh_heap *heap, hh_page *page) {
    if (page->slice_count > 1 && !_hh_os_huge_now(0)) return false;
    return heap->queue[page->class_index] == page && page->next == NULL;
}

/* Takes back the pages that remote frees made non-full. */
static void drain_pending(hh_heap *heap) {
    if (atomic_load_explicit(&heap->pending, memory_order_relaxed) == NULL) return;
    hh_page *page = atomic_exchange_explicit(&heap->pending, NULL, memory_order_acquire);
    while (page != NULL) {
        hh_page *next = page->pending_next;
        page_set_normal(page);
        collect_thread_free(page);
        if (!page->in_queue) queue_push_back(heap, page);
        if (page->used == 0 && !page_keeps_when_empty(heap, page)) page_retire(heap, page);
        page = next;
    }
}

void _hh_page_after_local_free(hh_heap *heap, hh_page *page) {
    if (!page->in_queue) {
        uintptr_t tf = atomic_load_explicit(&page->thread_free, memory_order_relaxed);
        while ((tf & HH_PAGE_STATE_MASK) == HH_PAGE_FULL &&
               !atomic_compare_exchange_weak_explicit(&page->thread_free, &tf,
                                                      tf & ~HH_PAGE_STATE_MASK,
                                                      memory_order_relaxed, memory_order_relaxed)) {
        }
        queue_push_back(heap, page);
    }
    if (page->used == 0 && !page_keeps_when_empty(heap, page)) {
        uintptr_t tf = atomic_load_explicit(&page->thread_free, memory_order_relaxed);
        if ((tf & HH_PAGE_STATE_MASK) != HH_PAGE_PENDING) page_retire(heap, page);
    }
}

void _hh_free_remote(hh_page *page, hh_block *block) {
    if (HH_UNLIKELY(block->mark == _hh_free_mark)) _hh_free_check_double(page, block, false);
    block->mark = _hh_free_mark;
    /* Read before the block is published: from then on the owner may take it
     * back, retire the page and set it up for another size. */
    int64_t size = (int64_t)page->block_size;
    uintptr_t tf = atomic_load_explicit(&page->thread_free, memory_order_relaxed);
    uintptr_t state;
    do {
        state = tf & HH_PAGE_STATE_MASK;
        block->next = _hh_encode((hh_block *)(tf & ~HH_PAGE_STATE_MASK));
    } while (!atomic_compare_exchange_weak_explicit(
        &page->thread_free, &tf,
        (uintptr_t)block | (state == HH_PAGE_FULL ? HH_PAGE_PENDING : state),
        memory_order_acq_rel, memory_order_relaxed));
    HH_TEST_POINT("remote_free_published", page);
    if (state == HH_PAGE_FULL) {
        /* The owner cannot go away while the page is PENDING (see abandon). */
        hh_heap *owner = atomic_load_explicit(&page->heap, memory_order_relaxed);
        hh_page *head = atomic_load_explicit(&owner->pending, memory_order_relaxed);
        do {
            page->pending_next = head;
        } while (!atomic_compare_exchange_weak_explicit(&owner->pending, &head, page,
                                                        memory_order_release,
                                                        memory_order_relaxed));
    }
    hh_heap *self = _hh_thread_heap;
    if (HH_UNLIKELY(_hh_stats_on)) {
        _hh_stats_in_use(-size);
        if (self) self->stats.remote_frees++;
    }
}

/* -------------------------------------------------- abandoning, adopting */

#define FOR_EACH_PAGE_IN_USE(segment, page)                                                  \
    for (unsigned slice_ = 0; slice_ < HH_SLICES;                                             \
         slice_ += (segment)->pages[slice_].slice_count ? (segment)->pages[slice_].slice_count \
                                                        : 1)                                  \
        if (((page) = &(segment)->pages[slice_]),                                             \
            atomic_load_explicit(&(page)->in_use, memory_order_relaxed))

/* Takes a segment that a finished thread left behind into this heap. */
static void adopt(hh_heap *heap, hh_segment *segment) {
    segment->heap = heap;
    if (segment->free_slices == 0) {
        _hh_segment_list_push(&heap->full, segment, HH_LIST_FULL);
    } else {
        _hh_segment_list_push(&heap->space, segment, HH_LIST_SPACE);
    }
    hh_page *page;
    hh_page *retire[HH_SLICES];
    unsigned n_retire = 0;
    FOR_EACH_PAGE_IN_USE(segment, page) {
        atomic_store_explicit(&page->heap, heap, memory_order_release);
        page->in_queue = false;
        collect_thread_free(page);
        if (page->used == 0) {
            retire[n_retire++] = page;
        } else {
            queue_push_back(heap, page);
        }
    }
    /* Retire last: retiring the last page releases the segment. */
    for (unsigned i = 0; i < n_retire; i++) page_retire(heap, retire[i]);
}

static void abandon(hh_heap *heap) {
    hh_page *page;
    /* No remote free may start telling us about a page from now on ... */
    HH_FOR_EACH_OWNED_SEGMENT(heap, s) {
        FOR_EACH_PAGE_IN_USE(s, page) {
            uintptr_t tf = atomic_load_explicit(&page->thread_free, memory_order_relaxed);
            while ((tf & HH_PAGE_STATE_MASK) == HH_PAGE_FULL &&
                   !atomic_compare_exchange_weak_explicit(&page->thread_free, &tf,
                                                          tf & ~HH_PAGE_STATE_MASK,
                                                          memory_order_relaxed,
                                                          memory_order_relaxed)) {
            }
        }
    }
    /* ... and those that did have finished telling us. */
    for (;;) {
        drain_pending(heap);
        bool any_pending = false;
        for (unsigned l = 0; l < 2 && !any_pending; l++) {
            for (hh_segment *s = l == 0 ? heap->space : heap->full; s && !any_pending; s = s->next) {
                FOR_EACH_PAGE_IN_USE(s, page) {
                    uintptr_t tf = atomic_load_explicit(&page->thread_free, memory_order_relaxed);
                    if ((tf & HH_PAGE_STATE_MASK) == HH_PAGE_PENDING) any_pending = true;
                }
            }
        }
        if (!any_pending) break;
        sched_yield();
    }
    heap->alive = false; /* from here, empty segments go to the global pool */
    /* Give back what is empty; hand the rest over.  The full list goes first:
     * retiring a page there moves its segment to the space list. */
    for (unsigned l = 0; l < 2; l++) {
        hh_segment **list = l == 0 ? &heap->full : &heap->space;
        while (*list != NULL) {
            hh_segment *s = *list;
            hh_page *retire[HH_SLICES];
            unsigned n_retire = 0;
            FOR_EACH_PAGE_IN_USE(s, page) {
                collect_thread_free(page);
                if (page->in_queue) queue_remove(heap, page);
                if (page->used == 0) retire[n_retire++] = page;
            }
            unsigned left = s->used_pages - n_retire;
            for (unsigned i = 0; i < n_retire; i++) page_retire(heap, retire[i]);
            if (left == 0) continue; /* released by the last page_retire */
            _hh_segment_list_remove(s->list == HH_LIST_FULL ? &heap->full : &heap->space, s);
            FOR_EACH_PAGE_IN_USE(s, page) {
                atomic_store_explicit(&page->heap, NULL, memory_order_release);
            }
            _hh_segment_give_abandoned(s);
        }
    }
    if (heap->cached != NULL) {
        hh_segment *s = heap->cached;
        heap->cached = NULL;
        _hh_segment_to_pool(s);
    }
    for (unsigned c = 0; c < HH_CLASSES; c++) heap->queue[c] = &_hh_empty_page;
}

static void thread_exit(void *arg) {
    hh_heap *heap = arg;
    if (heap == NULL || heap != _hh_thread_heap) return;
    abandon(heap);
    _hh_thread_heap = NULL;
    _hh_lock();
    heap->next_free = free_heaps;
    free_heaps = heap;
    _hh_unlock();
}

/* ------------------------------------------------------------ allocation */

/* Gives the free slices of the heap's small-page segments back (whole runs
 * of slices; slice 0's header stays). */
static void purge_slices(hh_heap *heap) {
    heap->purge_due_ms = UINT64_MAX;
    for (hh_segment *s = heap->space; s != NULL; s = s->next) {
        uint32_t bits = s->purge_slices & s->free_slices;
        s->purge_slices = 0;
        while (bits != 0) {
            unsigned start = (unsigned)__builtin_ctz(bits), end = start;
            while (end < HH_SLICES && (bits >> end & 1u)) end++;
            char *from = (char *)s + (size_t)start * HH_SLICE_SIZE + (start == 0 ? HH_SEGMENT_HEADER : 0);
            _hh_os_decommit(from, (size_t)((char *)s + (size_t)end * HH_SLICE_SIZE - from));
            uint32_t run = slice_mask(start, end - start);
            s->dirty_slices &= ~run; /* zero again: calloc need not clear them */
            bits &= ~run;
        }
    }
}

/* Empty memory whose release delay has passed goes back: the heap's own
 * cached segment to the pool, the pool's and the large-block cache's to the
 * kernel, and a small heap's free slices. */
static void release_due(hh_heap *heap) {
    if (heap->purge_due_ms != UINT64_MAX && _hh_clock_ms() >= heap->purge_due_ms) {
        purge_slices(heap);
    }
    hh_segment *cached = heap->cached;
    if (cached != NULL && _hh_clock_ms() - cached->freed_at_ms >= _hh_cfg.release_delay_ms) {
        heap->cached = NULL;
        _hh_segment_to_pool(cached);
    }
    _hh_segment_release_due();
    _hh_large_release_due();
}

static bool adopt_one(hh_heap *heap) {
    hh_segment *s = _hh_segment_take_abandoned();
    if (s == NULL) return false;
    adopt(heap, s);
    return true;
}

void *_hh_alloc_slow(hh_heap *heap, size_t size, bool zero) {
    if (heap == NULL) {
        heap = _hh_heap_for_thread();
        if (heap == NULL) {
            errno = ENOMEM;
            return NULL;
        }
    }
    unsigned class_index = _hh_size_class(size);
    drain_pending(heap);
    release_due(heap);
    for (;;) {
        hh_page *page;
        while ((page = heap->queue[class_index]) != &_hh_empty_page) {
            if (page->free != NULL || page_refill(page)) return _hh_page_pop(heap, page, zero);
            page_take_out_full(heap, page);
        }
        if (adopt_one(heap)) continue; /* dead threads' memory first */
        if (page_new(heap, class_index) == NULL) {
            errno = ENOMEM;
            return NULL;
        }
    }
}

/* --------------------------------------------------------- fork, trim, stats */

/* The global lock first, then the pools' locks: the order every path takes. */
static void fork_prepare(void) {
    _hh_lock_before_fork();
    _hh_pools_before_fork();
}

static void fork_parent(void) {
    _hh_pools_after_fork();
    _hh_lock_after_fork_parent();
}

/* A thread of the parent may have been between the two steps of a remote
 * free when fork() copied the process: the page already PENDING, not yet on
 * the owner's pending stack.  That thread does not exist in the child, so the
 * child's thread rebuilds its own pending stack from the states of its pages
 * (it is the only thread: nothing else touches them now). */
static void rebuild_pending(hh_heap *heap) {
    hh_page *stack = NULL;
    hh_page *page;
    HH_FOR_EACH_OWNED_SEGMENT(heap, s) {
        FOR_EACH_PAGE_IN_USE(s, page) {
            uintptr_t tf = atomic_load_explicit(&page->thread_free, memory_order_relaxed);
            if ((tf & HH_PAGE_STATE_MASK) == HH_PAGE_PENDING) {
                page->pending_next = stack;
                stack = page;
            }
        }
    }
    atomic_store_explicit(&heap->pending, stack, memory_order_relaxed);
}

/* The child has one thread.  Heaps of the parent's other threads stay as
 * they were (they may have been mid-update when fork() happened, so they are
 * not touched): their blocks can still be freed, by the remote path. */
static void fork_child(void) {
    _hh_pools_after_fork();
    _hh_lock_after_fork_child();
    hh_heap *heap = _hh_thread_heap;
    if (heap != NULL) rebuild_pending(heap);
}

void _hh_heap_purge_local(hh_heap *heap) {
    if (heap == NULL) return;
    drain_pending(heap);
    if (heap->cached != NULL) {
        hh_segment *s = heap->cached;
        heap->cached = NULL;
        _hh_segment_to_pool(s);
    }
}

void _hh_heap_stats_sum(hh_heap_stats *sum, uint64_t *threads) {
    memset(sum, 0, sizeof *sum);
    _hh_lock();
    for (hh_heap *h = all_heaps; h != NULL; h = h->next_all) {
        sum->allocs += h->stats.allocs;
        sum->frees += h->stats.frees;
        sum->remote_frees += h->stats.remote_frees;
        sum->reallocs += h->stats.reallocs;
        sum->mremap_moves += h->stats.mremap_moves;
        sum->mremap_in_place += h->stats.mremap_in_place;
    }
    _hh_unlock();
    *threads = atomic_load_explicit(&threads_seen, memory_order_relaxed);
}
