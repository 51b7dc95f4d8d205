/* Thread heaps and their small pages: the design of the tabling paper's
 * allocator, generalised to many size classes.
 *
 * Each thread owns a heap; a heap owns 64 KiB pages of one size class each
 * (taken from the page heap, pages.c) and allocates and frees on them
 * without locks.  A free by another thread goes to the page with one atomic
 * push (thread_free).  When the owner finds a page exhausted it takes the
 * page out of its queue and marks it FULL; the first remote free into a FULL
 * page also pushes the page on the owner's `pending` stack, so the owner
 * learns that the page has room again without scanning.  A thread that exits
 * hands its pages with live blocks to global per-class lists of abandoned
 * pages; the next thread that needs a page of that class adopts one.
 *
 * Page state protocol (low bits of thread_free):
 *   owner:  NORMAL -> FULL      when it takes an exhausted page out of its queue
 *   remote: FULL -> PENDING     with its push; then it pushes the page on the
 *                               owner's pending stack
 *   owner:  PENDING -> NORMAL   when it pops the page off its pending stack
 *   owner:  FULL -> NORMAL      when its own free puts the page back in its queue
 * A page is in the pending stack exactly while it is PENDING, so it is never
 * pushed twice; the owner does not retire or abandon a PENDING page.
 *
 * Empty pages: a page that empties goes to the heap's small cache of empty
 * pages, or back to the page heap; but the only page of its class stays in
 * its queue (a block freed and allocated again must not set up a page each
 * time) and is remembered on the heap's `kept` list, so that the heap takes
 * it for another class before it asks the page heap for more memory.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>

#include "block_page.h"
#include "internal.h"
#include "kind.h"
#include "page_pop.h"

/* Abandoned pages with live blocks, per class (global lock). */
static hh_page *abandoned[HH_CLASSES];
static _Atomic(size_t) abandoned_count;

/* ------------------------------------------------------------ queues */

/* direct[] entries of the class (sizes up to HH_DIRECT_MAX) follow the head
 * of its queue. */
static void direct_update(hh_heap *heap, unsigned c) {
    HH_ASSERT(c > 0 && c < HH_CLASSES);
    for (unsigned i = _hh_class_direct_first[heap->coarse][c];
         i <= _hh_class_direct_last[heap->coarse][c]; i++) {
        heap->direct[i] = heap->queue[c];
    }
}

/* The page's flags (the owner's own view) and their change (owner only). */
static uintptr_t page_flags(const hh_page *page) {
    return atomic_load_explicit(&page->owner, memory_order_relaxed) & HH_PAGE_FLAGS;
}

static void page_set_flag(hh_page *page, uintptr_t flag, bool on) {
    uintptr_t owner = atomic_load_explicit(&page->owner, memory_order_relaxed);
    atomic_store_explicit(&page->owner, on ? owner | flag : owner & ~flag, memory_order_relaxed);
}

static void queue_push_front(hh_heap *heap, hh_page *page) {
    unsigned c = page->class_index;
    HH_ASSERT(page_flags(page) & HH_PAGE_OUT_OF_QUEUE); /* never in a queue twice */
    HH_ASSERT(_hh_page_heap(page) == heap);
    page->prev = NULL;
    page->next = (heap->queue[c] == &_hh_empty_page) ? NULL : heap->queue[c];
    if (page->next) {
        page->next->prev = page;
    } else {
        heap->queue_tail[c] = page;
    }
    heap->queue[c] = page;
    page_set_flag(page, HH_PAGE_OUT_OF_QUEUE, false);
    direct_update(heap, c);
}

/* Pages that regain room go last: they collect more frees before they are
 * used again, instead of bouncing between full and queued on every block. */
static void queue_push_back(hh_heap *heap, hh_page *page) {
    unsigned c = page->class_index;
    if (heap->queue[c] == &_hh_empty_page) {
        queue_push_front(heap, page);
        return;
    }
    HH_ASSERT(page_flags(page) & HH_PAGE_OUT_OF_QUEUE);
    HH_ASSERT(_hh_page_heap(page) == heap && heap->queue_tail[c]->next == NULL);
    page->next = NULL;
    page->prev = heap->queue_tail[c];
    page->prev->next = page;
    heap->queue_tail[c] = page;
    page_set_flag(page, HH_PAGE_OUT_OF_QUEUE, false);
}

static void queue_remove(hh_heap *heap, hh_page *page) {
    unsigned c = page->class_index;
    HH_ASSERT(!(page_flags(page) & HH_PAGE_OUT_OF_QUEUE));
    /* Linked both ways: the head has no prev, the tail no next. */
    HH_ASSERT(page->prev != NULL || heap->queue[c] == page);
    HH_ASSERT(page->next != NULL || heap->queue_tail[c] == page);
    bool head = page->prev == NULL;
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
    page_set_flag(page, HH_PAGE_OUT_OF_QUEUE, true);
    if (head) direct_update(heap, c);
}

static bool in_queue(const hh_page *page) { return !(page_flags(page) & HH_PAGE_OUT_OF_QUEUE); }

static void owned_add(hh_heap *heap, hh_page *page) {
    page->owned_prev = NULL;
    page->owned_next = heap->owned;
    if (heap->owned) heap->owned->owned_prev = page;
    heap->owned = page;
}

static void owned_remove(hh_heap *heap, hh_page *page) {
    HH_ASSERT(page->owned_prev != NULL || heap->owned == page);
    if (page->owned_prev) {
        page->owned_prev->owned_next = page->owned_next;
    } else {
        heap->owned = page->owned_next;
    }
    if (page->owned_next) page->owned_next->owned_prev = page->owned_prev;
    page->owned_next = page->owned_prev = NULL;
}

/* ------------------------------------------------------- page checks */

/* The page's carved blocks, for the checks of block_page.h (any thread). */
static hh_block_area page_blocks(const hh_page *page) {
    return (hh_block_area){page->area, HH_SHARED_LOAD(page->carved_end), page->block_size};
}

/* The page's invariants (see hh_page in types.h): the owner's view. */
bool _hh_page_is_valid(const hh_page *page) {
    if (page->reserved > page->capacity || page->used > page->reserved) return false;
    if (HH_SHARED_LOAD(page->span) != (uint32_t)page->capacity * page->block_size) return false;
    if ((uintptr_t)page->area & (HH_SPAGE - 1)) return false;
    bool unused = false;
    uint32_t free_n = _hh_blocks_count(page_blocks(page), page->capacity, page->free, NULL, &unused);
    uint32_t local_n =
        _hh_blocks_count(page_blocks(page), page->capacity, page->local_free, NULL, &unused);
    if (free_n == UINT32_MAX || local_n == UINT32_MAX) return false;
    return page->used + free_n + local_n == page->reserved;
}

#if defined(HH_DEBUG) && HH_DEBUG >= 2
/* A heap's books agree with its pages (HH_ASSERT_EXPENSIVE; the owner's
 * view, walks bounded by the pages it owns): every owned page is this heap's
 * (each page's own invariants: _hh_page_is_valid); each class queue is
 * linked both ways, holds pages of its class marked in their queue, ends at
 * queue_tail, and direct[] points at its head; the caches hold no more than
 * they can. */
static bool heap_is_valid(const hh_heap *heap) {
    size_t owned = 0;
    for (const hh_page *p = heap->owned; p != NULL; p = p->owned_next) {
        if (++owned > ((size_t)1 << 24) || _hh_page_heap(p) != heap) return false;
        if (p->owned_next != NULL && p->owned_next->owned_prev != p) return false;
    }
    if (heap->empty_count > HH_EMPTY_CACHE || heap->kept_count > HH_CLASSES) return false;
    for (unsigned c = 1; c < HH_CLASSES; c++) {
        const hh_page *head = heap->queue[c];
        if (head == &_hh_empty_page) continue;
        size_t n = 0;
        const hh_page *last = NULL;
        for (const hh_page *p = head; p != NULL; last = p, p = p->next) {
            if (++n > owned || p->class_index != c || !in_queue(p) || p->prev != last) return false;
        }
        if (heap->queue_tail[c] != last) return false;
    }
    for (unsigned i = 0; i < HH_DIRECT_SLOTS; i++) {
        if (heap->direct[i] != heap->queue[_hh_class_table[heap->coarse][i]]) return false;
    }
    for (unsigned c = 1; c < HH_CLASSES; c++) {
        const hh_page *lender = heap->lender[c];
        if (lender == NULL) continue;
        if (!heap->coarse || _hh_page_heap(lender) != heap || lender->class_index <= c) return false;
    }
    return true;
}
#endif

hh_block *_hh_page_checked_block(hh_page *page, void *ptr, const char *what) {
    size_t offset = (size_t)((char *)ptr - page->area);
    if (HH_UNLIKELY(offset >= HH_SHARED_LOAD(page->carved_end))) _hh_fatal(what, ptr);
    size_t start = offset - offset % page->block_size;
    if (HH_UNLIKELY(start != offset) &&
        !atomic_load_explicit(&page->has_aligned, memory_order_relaxed)) {
        _hh_fatal(HH_INSIDE_BLOCK, ptr);
    }
    return (hh_block *)(page->area + start);
}

void _hh_free_check_double(hh_page *page, hh_block *block, bool owner) {
    _hh_blocks_check_double(page_blocks(page), page->capacity, page->free, page->local_free,
                            &page->thread_free, block, owner, "free(): double free detected of");
}

/* ----------------------------------------------------- free lists */

/* Moves the blocks other threads freed into the free list; true if any. */
static bool collect_thread_free(hh_page *page) {
    hh_block *head = _hh_blocks_take_remote(&page->thread_free);
    if (head == NULL) return false;
    /* At most `used` blocks can have come back. */
    uint32_t count = _hh_blocks_splice(head, page_blocks(page), page->used, &page->free);
    page->free_is_zero = false;
    page->used -= count;
    HH_ASSERT_EXPENSIVE(_hh_page_is_valid(page));
    return true;
}

/* Carves not-yet-used blocks off the end of the page, a few KiB at a time so
 * that a page's memory is touched as it is needed. */
static uint32_t carve(hh_page *page) {
    HH_ASSERT(page->free == NULL && page->reserved < page->capacity);
    uint32_t left = (uint32_t)page->capacity - page->reserved;
    uint32_t batch = page->block_size >= 4096 ? 1 : 4096 / page->block_size;
    if (batch > left) batch = left;
    page->free = _hh_blocks_carve(page->area + (size_t)page->reserved * page->block_size, batch,
                                  page->block_size);
    page->free_is_zero = page->fresh; /* but for link and mark, which the pop clears */
    page->reserved = (uint16_t)(page->reserved + batch);
    HH_SHARED_STORE(page->carved_end, (uint32_t)page->reserved * page->block_size);
    size_t written = ((size_t)page->reserved * page->block_size + HH_OS_PAGE - 1) >> HH_OS_PAGE_SHIFT;
    if (written > page->written_pages) {
        _hh_usage_count_unwritten(-(intptr_t)(written - page->written_pages));
        page->written_pages = (uint8_t)written;
    }
    HH_ASSERT(page->reserved <= page->capacity && page->written_pages <= HH_SPAGE_PAGES);
    return batch;
}

/* Refills an empty free list with blocks freed back into the page (memory
 * written before); false if there are none.  The heap's allocation count
 * grows by the blocks the list now holds: each of them is handed out before
 * the next refill (or the page is abandoned). */
static inline __attribute__((always_inline)) bool page_refill_freed(hh_heap *heap,
                                                                  hh_page *page) {
    HH_ASSERT(page->free == NULL && _hh_page_heap(page) == heap);
    if (page->local_free != NULL) {
        _hh_count(&heap->stats.allocs, page->reserved - page->used); /* |local_free| */
        page->free = page->local_free;
        page->local_free = NULL;
        page->free_is_zero = false;
        return true;
    }
    uint32_t before = page->used;
    if (collect_thread_free(page)) {
        _hh_count(&heap->stats.allocs, before - page->used);
        return true;
    }
    return false;
}

/* Refills an empty free list, with freed blocks or else by carving; false
 * if the page has nothing left. */
static bool page_refill(hh_heap *heap, hh_page *page) {
    if (page_refill_freed(heap, page)) return true;
    if (page->reserved < page->capacity) {
        _hh_count(&heap->stats.allocs, carve(page));
        return true;
    }
    return false;
}

/* ------------------------------------------------------------ pages */

/* Sets up the 64 KiB page at `area` for a size class. */
static hh_page *page_init(hh_heap *heap, char *area, unsigned class_index, bool fresh) {
    hh_page *page = _hh_page_of(area);
    HH_ASSERT(((uintptr_t)area & (HH_SPAGE - 1)) == 0);
    HH_ASSERT(class_index > 0 && class_index < HH_CLASSES);
    /* A retired page or never one: nobody may take it for a live page. */
    HH_ASSERT(HH_SHARED_LOAD(page->span) == 0 && _hh_page_heap(page) == NULL);
    page->free = page->local_free = NULL;
    page->used = 0;
    page->block_size = _hh_class_size[class_index];
    HH_SHARED_STORE(page->div_magic, UINT32_MAX / page->block_size + 1);
    page->capacity = (uint16_t)(HH_SPAGE / page->block_size);
    page->reserved = 0;
    HH_SHARED_STORE(page->carved_end, 0);
    page->class_index = (uint8_t)class_index;
    page->fresh = fresh;
    page->free_is_zero = false;
    page->area = area;
    page->pending_next = NULL;
    atomic_store_explicit(&page->has_aligned, false, memory_order_relaxed);
    atomic_store_explicit(&page->thread_free, HH_PAGE_NORMAL, memory_order_relaxed);
    HH_SHARED_STORE(page->span, (uint32_t)page->capacity * page->block_size);
    /* Release: a remote free that sees this heap sees the page set up. */
    atomic_store_explicit(&page->heap, heap, memory_order_release);
    atomic_store_explicit(&page->owner, heap->thread_id | HH_PAGE_OUT_OF_QUEUE,
                          memory_order_relaxed);
    owned_add(heap, page);
    queue_push_front(heap, page);
    HH_ASSERT_EXPENSIVE(_hh_page_is_valid(page));
    return page;
}

/* A page leaves the heap's books: no class may take blocks from it. */
static void forget_lender(hh_heap *heap, const hh_page *page) {
    for (unsigned c = 1; c < page->class_index; c++) {
        if (heap->lender[c] == page) heap->lender[c] = NULL;
    }
}

/* The page leaves its heap's books: no free may take it for a live page. */
static void kept_remove(hh_heap *heap, hh_page *page) {
    for (unsigned i = 0; i < heap->kept_count; i++) {
        if (heap->kept[i] != page) continue;
        memmove(&heap->kept[i], &heap->kept[i + 1], (heap->kept_count - i - 1) * sizeof *heap->kept);
        heap->kept_count--;
        break;
    }
    page->in_kept_list = false;
}

static void page_forget(hh_heap *heap, hh_page *page) {
    HH_ASSERT(page->used == 0);
    HH_ASSERT_EXPENSIVE(_hh_page_is_valid(page));
    if (in_queue(page)) queue_remove(heap, page);
    if (page->in_kept_list) kept_remove(heap, page);
    owned_remove(heap, page);
    forget_lender(heap, page);
    HH_SHARED_STORE(page->span, 0);
    HH_SHARED_STORE(page->carved_end, 0);
    atomic_store_explicit(&page->owner, 0, memory_order_relaxed);
    atomic_store_explicit(&page->heap, NULL, memory_order_relaxed);
    HH_SHARED_STORE(page->div_magic, 0);
}

/* A page that left its heap goes back to the page heap. */
static void page_give_back(hh_page *page) {
    HH_ASSERT(page->written_pages <= HH_SPAGE_PAGES && _hh_page_heap(page) == NULL);
    _hh_usage_count_unwritten(-(intptr_t)(HH_SPAGE_PAGES - page->written_pages));
    _hh_pages_free(page->area, HH_SPAGE_PAGES, page->written_pages);
}

/* An empty page leaves the heap: into the heap's cache of empty pages, or
 * back to the page heap. */
static void page_retire(hh_heap *heap, hh_page *page) {
    page_forget(heap, page);
    HH_ASSERT(heap->empty_count <= HH_EMPTY_CACHE);
    if (heap->alive && heap->empty_count < HH_EMPTY_CACHE) {
        heap->empty[heap->empty_count++] = page;
        return;
    }
    page_give_back(page);
}

/* An empty page stays while it is the only one of its class; it is
 * remembered so that the heap uses it for another class first. */
static bool page_keep_when_empty(hh_heap *heap, hh_page *page) {
    if (!heap->alive || heap->queue[page->class_index] != page || page->next != NULL) return false;
    HH_ASSERT(heap->kept_count <= HH_CLASSES);
    if (!page->in_kept_list && heap->kept_count < HH_CLASSES) {
        page->in_kept_list = true;
        heap->kept[heap->kept_count++] = page;
    }
    return true;
}

/* An empty page of another class that this heap kept, taken out of its
 * queue; NULL if none is still empty. */
static hh_page *take_kept(hh_heap *heap) {
    while (heap->kept_count > 0) {
        hh_page *page = heap->kept[0];
        kept_remove(heap, page);
        if (page->used != 0 || !in_queue(page) ||
            (atomic_load_explicit(&page->thread_free, memory_order_relaxed) & ~HH_PAGE_STATE_MASK)) {
            continue; /* in use again: it was put on the list when it was last empty */
        }
        page_forget(heap, page);
        return page;
    }
    return NULL;
}

/* Takes an abandoned page of the class with room into this heap. */
static hh_page *adopt(hh_heap *heap, unsigned class_index) {
    if (atomic_load_explicit(&abandoned_count, memory_order_relaxed) == 0) return NULL;
    _hh_lock();
    hh_page *page = abandoned[class_index];
    if (page != NULL) {
        abandoned[class_index] = page->next;
        if (page->next) page->next->prev = NULL;
        page->next = page->prev = NULL;
        atomic_fetch_sub_explicit(&abandoned_count, 1, memory_order_relaxed);
    }
    _hh_unlock();
    if (page == NULL) return NULL;
    /* Abandoned: ownerless, of the class of its list, blocks in use. */
    HH_ASSERT(_hh_page_heap(page) == NULL && page->class_index == class_index);
    uintptr_t aligned =
        atomic_load_explicit(&page->has_aligned, memory_order_relaxed) ? HH_PAGE_ALIGNED : 0;
    atomic_store_explicit(&page->heap, heap, memory_order_release);
    atomic_store_explicit(&page->owner, heap->thread_id | HH_PAGE_OUT_OF_QUEUE | aligned,
                          memory_order_relaxed);
    owned_add(heap, page);
    collect_thread_free(page);
    if (page->used == 0) {
        page_retire(heap, page);
        return NULL;
    }
    queue_push_back(heap, page);
    return page;
}

/* A new page for the class: a cached empty page, an abandoned one with room,
 * a kept empty page of another class, or fresh pages from the page heap. */
static hh_page *page_new(hh_heap *heap, unsigned class_index) {
    HH_ASSERT_EXPENSIVE(heap_is_valid(heap));
    if (heap->empty_count > 0) {
        hh_page *page = heap->empty[--heap->empty_count];
        return page_init(heap, page->area, class_index, false);
    }
    hh_page *adopted = adopt(heap, class_index);
    if (adopted != NULL) return adopted;
    hh_page *kept = take_kept(heap);
    if (kept != NULL) return page_init(heap, kept->area, class_index, false);
    bool zero = false;
    char *area = _hh_pages_alloc(HH_SPAGE_PAGES, HH_SPAGE_PAGES, &zero);
    if (area == NULL) return NULL;
    _hh_usage_count_unwritten((intptr_t)HH_SPAGE_PAGES);
    hh_page *page = page_init(heap, area, class_index, zero);
    page->written_pages = 0;
    return page;
}

/* The owner found the page exhausted: take it out of the queue.  Returns
 * false if other threads freed blocks into it meanwhile (then it stays). */
static bool page_take_out_full(hh_heap *heap, hh_page *page) {
    HH_ASSERT(page->free == NULL && page->local_free == NULL && page->reserved == page->capacity);
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

/* What a page that may have emptied becomes: kept, or retired. */
static void page_maybe_empty(hh_heap *heap, hh_page *page) {
    if (page->used != 0 || page_keep_when_empty(heap, page)) return;
    uintptr_t tf = atomic_load_explicit(&page->thread_free, memory_order_relaxed);
    if ((tf & HH_PAGE_STATE_MASK) != HH_PAGE_PENDING) page_retire(heap, page);
}

/* Takes back the pages that remote frees made non-full. */
static void drain_pending(hh_heap *heap) {
    if (atomic_load_explicit(&heap->pending, memory_order_relaxed) == NULL) return;
    hh_page *page = atomic_exchange_explicit(&heap->pending, NULL, memory_order_acquire);
    while (page != NULL) {
        hh_page *next = page->pending_next;
        /* On the pending stack exactly while PENDING (the protocol, top of file). */
        HH_ASSERT((atomic_load_explicit(&page->thread_free, memory_order_relaxed) &
                   HH_PAGE_STATE_MASK) == HH_PAGE_PENDING);
        HH_ASSERT(_hh_page_heap(page) == heap);
        page_set_normal(page);
        collect_thread_free(page);
        if (!in_queue(page)) queue_push_back(heap, page);
        page_maybe_empty(heap, page);
        page = next;
    }
}

void _hh_page_after_local_free(hh_heap *heap, hh_page *page) {
    HH_ASSERT(_hh_page_heap(page) == heap);
    if (!in_queue(page)) {
        uintptr_t tf = atomic_load_explicit(&page->thread_free, memory_order_relaxed);
        while ((tf & HH_PAGE_STATE_MASK) == HH_PAGE_FULL &&
               !atomic_compare_exchange_weak_explicit(&page->thread_free, &tf,
                                                      tf & ~HH_PAGE_STATE_MASK,
                                                      memory_order_relaxed, memory_order_relaxed)) {
        }
        queue_push_back(heap, page);
    }
    page_maybe_empty(heap, page);
}

/* ---------------------------------------------------------------- frees */

/* A free by the owner that the fast path did not take (a page with aligned
 * blocks, one out of its queue, a block whose mark is set). */
void _hh_free_local_slow(hh_heap *heap, hh_page *page, hh_block *block) {
    if (HH_UNLIKELY(block->mark == _hh_free_mark)) _hh_free_check_double(page, block, true);
    _hh_blocks_push(&page->local_free, block);
    if (--page->used == 0 || !in_queue(page)) _hh_page_after_local_free(heap, page);
}

static void free_remote(hh_page *page, hh_block *block) {
    if (HH_UNLIKELY(block->mark == _hh_free_mark)) _hh_free_check_double(page, block, false);
    uintptr_t before = _hh_blocks_push_remote(&page->thread_free, block);
    HH_TEST_POINT("remote_free_published", page);
    if ((before & HH_PAGE_STATE_MASK) == HH_PAGE_FULL) {
        /* The owner cannot go away while the page is PENDING (see abandon). */
        hh_heap *owner = _hh_page_heap(page);
        HH_ASSERT(owner != NULL);
        hh_page *head = atomic_load_explicit(&owner->pending, memory_order_relaxed);
        do {
            page->pending_next = head;
        } while (!atomic_compare_exchange_weak_explicit(&owner->pending, &head, page,
                                                        memory_order_release,
                                                        memory_order_relaxed));
    }
    hh_heap *self = _hh_heap;
    if (self->alive) _hh_count(&self->stats.remote_frees, 1);
}

void _hh_free_small_slow(hh_page *page, void *ptr, size_t size) {
    hh_block *block = _hh_page_checked_block(page, ptr, HH_NOT_LIVE);
    if (size != 0 && size > page->block_size - (size_t)((char *)ptr - (char *)block)) {
        _hh_free_size_mismatch(ptr); /* a sized free naming more than the block holds */
    }
    hh_heap *heap = _hh_heap;
    if (_hh_page_heap(page) == heap) {
        _hh_free_local_slow(heap, page, block);
        return;
    }
    /* Another thread's page, or an abandoned one: the owner (or adopter)
     * collects it.  The page cannot be retired meanwhile: the block is in use. */
    free_remote(page, block);
}

/* ------------------------------------------------------------ allocation */

/* The heap has grown past the huge threshold: from now on this thread's
 * blocks take every class (HH_CLASSES); those in the coarse ones stay. */
static void use_every_class(hh_heap *heap) {
    heap->coarse = 0;
    memset(heap->lender, 0, sizeof heap->lender);
    for (unsigned c = 1; c < HH_CLASSES; c++) direct_update(heap, c);
    HH_ASSERT_EXPENSIVE(heap_is_valid(heap));
}

/* While the heap is small, memory written before and freed serves before any
 * is written anew: a block freed in the size's own class, else in a larger
 * class up to twice the size.  glibc fills its holes with blocks of other
 * sizes; without this, each class kept the room its blocks had at their most
 * and a process of a few MiB held a third more than under glibc (cadical's
 * free room in small pages: 0.8 MiB beside 1.4 MiB of blocks).  A page is
 * carved from its front while pages further back in its queue hold freed
 * blocks, so the class's own queue is looked through too, a few pages deep
 * (queues are short while the heap is small).  The larger class's page found
 * is remembered as the class's lender: a class that lives on another's
 * blocks has no page of its own for the fast path, and each of its blocks
 * comes here.  That is the price: a block taken so costs the slow path, and
 * pages without slack refill a block or two at a time.  A thread that
 * allocates fast pays it on most of its blocks (churning small blocks from
 * four threads ran at 0.4 of the speed), so a thread lends only while it
 * allocates slowly: each window of LENDING_WINDOW blocks decides for the
 * next (HH_FAST_NS_PER_BLOCK).  And only the process's first thread, the
 * one of the small single-threaded processes lending is for: threads that
 * lent in their first window and then allocated fast left their classes'
 * blocks spread over others' pages while their own filled anew (a hundred
 * short threads churning blocks held 10% more than without lending). */
#define FREED_PAGES_LOOKED_AT 4
#define LENDING_WINDOW ((uint64_t)64 << 10)

static bool heap_lends(hh_heap *heap) {
    if (!heap->first_thread || !_hh_cfg.lending) return false;
    uint64_t allocs = atomic_load_explicit(&heap->stats.allocs, memory_order_relaxed);
    uint64_t blocks = allocs - heap->window_allocs;
    if (blocks < LENDING_WINDOW) return heap->lends;
    uint64_t cpu = _hh_clock_thread_cpu_ns();
    /* A forked child's thread starts its clock again: a new window. */
    if (cpu >= heap->window_cpu_ns) {
        heap->lends = cpu - heap->window_cpu_ns > blocks * HH_FAST_NS_PER_BLOCK;
    }
    heap->window_allocs = allocs;
    heap->window_cpu_ns = cpu;
    return heap->lends;
}

static bool page_has_freed(hh_heap *heap, hh_page *page) {
    return page->free != NULL || page_refill_freed(heap, page);
}

/* A block of a larger class's page: from its free list, else from the
 * blocks its owner freed, taken one by one so that the page's free list,
 * which its own class's fast path sees, stays as it was (a size the growth
 * heap takes while the list is empty goes on to it).  NULL if neither holds
 * one; blocks other threads freed wait for the page's own class. */
static void *lender_pop(hh_heap *heap, hh_page *page, bool zero) {
    if (page->free != NULL) return _hh_page_pop(page, page->free, zero);
    if (page->local_free == NULL) return NULL;
    _hh_count(&heap->stats.allocs, 1);
    return _hh_page_pop_list(page, &page->local_free, page->local_free, zero, false);
}

static void *alloc_freed(hh_heap *heap, unsigned class_index, size_t size, bool zero) {
    hh_page *own = heap->queue[class_index];
    if (own != &_hh_empty_page && page_has_freed(heap, own)) return _hh_page_pop(own, own->free, zero);
    /* An aligned request comes as a size the alignment divides, and its
     * class's blocks are aligned so (malloc_api.c's alloc_aligned): a lender's
     * block size must be a multiple of every power of two the size is. */
    size_t least = size < 16 ? 16 : size;
    size_t size_alignment = least & -least;
    hh_page *lender = heap->lender[class_index];
    if (lender != NULL && lender->block_size % size_alignment == 0) {
        void *block = lender_pop(heap, lender, zero);
        if (block != NULL) {
            _hh_count(&heap->stats.lent, 1);
            return block;
        }
    }
    unsigned looked = 0;
    for (hh_page *page = own == &_hh_empty_page ? NULL : own->next;
         page != NULL && ++looked < FREED_PAGES_LOOKED_AT; page = page->next) {
        if (page_has_freed(heap, page)) return _hh_page_pop(page, page->free, zero);
    }
    size_t largest = 2 * least;
    for (unsigned c = class_index + 1; c < HH_CLASSES && _hh_class_size[c] <= largest; c++) {
        if (_hh_class_size[c] % size_alignment != 0) continue;
        looked = 0;
        for (hh_page *page = heap->queue[c]; page != &_hh_empty_page && page != NULL &&
                                             looked++ < FREED_PAGES_LOOKED_AT;
             page = page->next) {
            void *block = lender_pop(heap, page, zero);
            if (block != NULL) {
                heap->lender[class_index] = page;
                _hh_count(&heap->stats.lent, 1);
                return block;
            }
        }
    }
    return NULL;
}

void *_hh_alloc_slow(hh_heap *heap, size_t size, bool zero, bool may_grow) {
    if (HH_UNLIKELY(!heap->alive)) {
        /* While glibc serves the small heap, threads make no heap of ours
         * and every malloc comes here (glibc_heap.c). */
        if (_hh_glibc_serves(size)) return _hh_glibc_alloc(size, 16, zero);
        heap = _hh_heap_for_thread();
        if (heap == NULL) {
            errno = ENOMEM;
            return NULL;
        }
    }
    if (may_grow && size > HH_GROWTH_MALLOC_MIN &&
        atomic_load_explicit(&_hh_growth_taking, memory_order_relaxed) && _hh_growth_open()) {
        return _hh_growth_alloc(size, zero);
    }
    if (HH_UNLIKELY(heap->coarse) && !_hh_policy_heap_small()) {
        use_every_class(heap);
    }
    unsigned class_index = _hh_size_class(size, heap->coarse);
    HH_ASSERT(class_index > 0 && class_index < HH_CLASSES && _hh_class_size[class_index] >= size);
    drain_pending(heap);
    if (heap->coarse && heap_lends(heap)) {
        void *block = alloc_freed(heap, class_index, size, zero);
        if (block != NULL) return block;
    }
    for (;;) {
        hh_page *page;
        while ((page = heap->queue[class_index]) != &_hh_empty_page) {
            if (page->free != NULL || page_refill(heap, page)) {
                return _hh_page_pop(page, page->free, zero);
            }
            page_take_out_full(heap, page);
        }
        if (page_new(heap, class_index) == NULL) {
            errno = ENOMEM;
            return NULL;
        }
    }
}

/* -------------------------------------------------- abandoning a heap */

static void give_abandoned(hh_page *page) {
    HH_ASSERT(page->used > 0 && _hh_page_heap(page) == NULL);
    _hh_lock();
    unsigned c = page->class_index;
    page->prev = NULL;
    page->next = abandoned[c];
    if (page->next) page->next->prev = page;
    abandoned[c] = page;
    atomic_fetch_add_explicit(&abandoned_count, 1, memory_order_relaxed);
    _hh_unlock();
}

/* A thread's exit: empty pages go back, the rest to the abandoned lists. */
static void abandon(hh_heap *heap) {
    _hh_growth_flush(heap);
    /* No remote free may start telling us about a page from now on ... */
    for (hh_page *page = heap->owned; page != NULL; page = page->owned_next) {
        uintptr_t tf = atomic_load_explicit(&page->thread_free, memory_order_relaxed);
        while ((tf & HH_PAGE_STATE_MASK) == HH_PAGE_FULL &&
               !atomic_compare_exchange_weak_explicit(&page->thread_free, &tf,
                                                      tf & ~HH_PAGE_STATE_MASK,
                                                      memory_order_relaxed, memory_order_relaxed)) {
        }
    }
    /* ... and those that did have finished telling us. */
    for (;;) {
        drain_pending(heap);
        bool any_pending = false;
        for (hh_page *page = heap->owned; page != NULL && !any_pending; page = page->owned_next) {
            uintptr_t tf = atomic_load_explicit(&page->thread_free, memory_order_relaxed);
            if ((tf & HH_PAGE_STATE_MASK) == HH_PAGE_PENDING) any_pending = true;
        }
        if (!any_pending) break;
        sched_yield();
    }
    heap->alive = false; /* from here, empty pages go back to the page heap */
    while (heap->owned != NULL) {
        hh_page *page = heap->owned;
        collect_thread_free(page);
        if (page->used == 0) {
            page_retire(heap, page);
            continue;
        }
        if (in_queue(page)) queue_remove(heap, page);
        if (page->in_kept_list) kept_remove(heap, page);
        owned_remove(heap, page);
        forget_lender(heap, page);
        atomic_store_explicit(&page->owner, 0, memory_order_relaxed);
        atomic_store_explicit(&page->heap, NULL, memory_order_release);
        give_abandoned(page);
    }
    for (unsigned i = 0; i < heap->empty_count; i++) page_give_back(heap->empty[i]);
    heap->empty_count = 0;
    HH_ASSERT(heap->owned == NULL && heap->kept_count == 0);
}

bool _hh_heap_abandon(hh_heap *heap) {
    if (heap == NULL || heap != _hh_heap || !heap->alive) return false;
    abandon(heap);
    return true;
}

void _hh_heap_abandon_orphan(hh_heap *heap) { abandon(heap); }

/* ------------------------------------------------------ fork, trim, stats */

/* fork() copies one thread.  The others' heaps may have been mid-update
 * (a list half linked, a block half freed), and a thread the child makes
 * takes the identity of one of them: glibc gives it the vanished thread's
 * stack, and so its thread pointer.  Were that heap then abandoned as an
 * orphan's is, its torn lists would be walked, and its pages would be the
 * new thread's own to free's fast path.  So every page another thread owns
 * gets an identity no thread has (its heap too: heap_life.c); found through
 * the descriptors of the regions' units that hold memory (a small page is in
 * use only there), not through the heaps' lists.  The child frees blocks of
 * those pages by the remote path and allocates from none of them: what they
 * hold stays unused for the child's life, intact. */
static void disown_vanished_pages(uintptr_t self) {
    enum { SLOTS_PER_UNIT = HH_UNIT / HH_SPAGE };
    for (hh_region *r = _hh_region_first(); r != NULL; r = r->next) {
        for (uint32_t units = r->touched_units; units != 0; units &= units - 1) {
            char *unit = (char *)r + (_hh_lowest_unit(units) << HH_UNIT_SHIFT);
            for (size_t slot = 0; slot < SLOTS_PER_UNIT; slot++) {
                hh_page *page = _hh_page_of(unit + (slot << HH_SPAGE_SHIFT));
                uintptr_t owner = atomic_load_explicit(&page->owner, memory_order_relaxed);
                uintptr_t id = owner & ~HH_PAGE_FLAGS;
                if (id == 0 || id == self) continue;
                atomic_store_explicit(&page->owner, HH_THREAD_VANISHED | (owner & HH_PAGE_FLAGS),
                                      memory_order_relaxed);
            }
        }
    }
}

/* The child's one thread (see disown_vanished_pages).  A thread of the
 * parent may also have been between the two steps of a remote free when
 * fork() copied the process: the page already PENDING, not yet on the
 * owner's pending stack.  So the child's thread rebuilds its own pending
 * stack from the states of its pages (nothing else touches them now). */
void _hh_heap_fork_child(void) {
    hh_heap *heap = _hh_heap;
    _hh_lock();
    disown_vanished_pages(heap->alive ? heap->thread_id : 0);
    _hh_heaps_disown_vanished(heap);
    _hh_unlock();
    if (!heap->alive) return;
    hh_page *stack = NULL;
    for (hh_page *page = heap->owned; page != NULL; page = page->owned_next) {
        uintptr_t tf = atomic_load_explicit(&page->thread_free, memory_order_relaxed);
        if ((tf & HH_PAGE_STATE_MASK) == HH_PAGE_PENDING) {
            page->pending_next = stack;
            stack = page;
        }
    }
    atomic_store_explicit(&heap->pending, stack, memory_order_relaxed);
}

/* malloc_trim: the heap's empty pages go back to the page heap. */
void _hh_heap_purge_local(hh_heap *heap) {
    if (!heap->alive) return;
    _hh_growth_flush(heap);
    HH_ASSERT_EXPENSIVE(heap_is_valid(heap));
    drain_pending(heap);
    while (heap->empty_count > 0) page_give_back(heap->empty[--heap->empty_count]);
    hh_page *page;
    while ((page = take_kept(heap)) != NULL) page_give_back(page);
}
