/* The life of a thread heap: made on its thread's first allocation (or a
 * recycled one taken), abandoned at its thread's exit through a pthread key
 * (heap.c hands its pages on), and kept for the next thread; a heap whose
 * thread died without abandoning it is abandoned before a new heap takes the
 * same identity.  Every heap ever made stays on one list, for the
 * statistics. */
#include <pthread.h>
#include <string.h>

#include "internal.h"
#include "pthread_compat.h"

static atomic_bool thread_key_ready;
static pthread_key_t thread_key;
static atomic_uint_fast64_t threads_seen;

/* Guarded by the global lock. */
static hh_heap *all_heaps, *free_heaps;

static void thread_exit(void *heap);

void _hh_heap_watch_exits_start(void) {
    bool have_keys = true;
#if defined(HH_SHARED_LIBRARY)
    have_keys = pthread_key_create != NULL; /* no libpthread: no other threads either */
#endif
    if (have_keys && pthread_key_create(&thread_key, thread_exit) == 0) {
        atomic_store_explicit(&thread_key_ready, true, memory_order_release);
        _hh_heap_watch_exit();
    }
}

void _hh_heap_watch_exit(void) {
    hh_heap *heap = _hh_heap;
    if (heap->alive && atomic_load_explicit(&thread_key_ready, memory_order_acquire)) {
        pthread_setspecific(thread_key, heap);
    }
}

hh_heap *_hh_heap_for_thread(void) {
    hh_heap *heap = _hh_heap;
    if (heap->alive) return heap;
    _hh_init();
    uintptr_t id = _hh_thread_id();
    _hh_lock();
    /* A live heap with this thread's identity belongs to a thread that is
     * gone (identities are unique among live threads) and never abandoned
     * it: its pages must not look like this thread's. */
    hh_heap *orphan = NULL;
    for (hh_heap *h = all_heaps; h != NULL && orphan == NULL; h = h->next_all) {
        if (h->alive && h->thread_id == id) orphan = h;
    }
    _hh_unlock();
    if (orphan != NULL) {
        _hh_heap_abandon_orphan(orphan);
        _hh_lock();
        orphan->next_free = free_heaps;
        free_heaps = orphan;
        _hh_unlock();
    }
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
    if (heap != NULL) {
        /* A recycled heap was abandoned whole: it owns no page. */
        HH_ASSERT(heap->owned == NULL && !atomic_load_explicit(&heap->alive, memory_order_relaxed));
        /* A recycled heap keeps its counts (and its place in the list of all). */
        memset(heap, 0, offsetof(hh_heap, thread_id));
        for (unsigned i = 0; i < HH_DIRECT_SLOTS; i++) heap->direct[i] = &_hh_empty_page;
        for (unsigned c = 0; c < HH_CLASSES; c++) heap->queue[c] = &_hh_empty_page;
        heap->coarse = _hh_policy_heap_small();
        /* Lending's first window (heap.c) begins with the thread's blocks. */
        heap->window_allocs = atomic_load_explicit(&heap->stats.allocs, memory_order_relaxed);
        heap->first_thread = atomic_fetch_add_explicit(&threads_seen, 1, memory_order_relaxed) == 0;
        heap->lends = heap->first_thread;
        heap->thread_id = id;
        atomic_store_explicit(&heap->alive, true, memory_order_relaxed);
    }
    _hh_unlock();
    if (heap == NULL) return NULL;
    _hh_heap = heap;
    /* May allocate (keys past the first 32): the heap is in place already. */
    if (atomic_load_explicit(&thread_key_ready, memory_order_acquire)) {
        pthread_setspecific(thread_key, heap);
    } else {
        _hh_late_init();
    }
    return heap;
}

static void thread_exit(void *arg) {
    hh_heap *heap = arg;
    if (!_hh_heap_abandon(heap)) return;
    HH_ASSERT(heap->owned == NULL && !atomic_load_explicit(&heap->alive, memory_order_relaxed));
    _hh_heap = &_hh_empty_heap;
    _hh_lock();
    heap->next_free = free_heaps;
    free_heaps = heap;
    _hh_unlock();
}

void _hh_heaps_disown_vanished(const hh_heap *kept) {
    for (hh_heap *h = all_heaps; h != NULL; h = h->next_all) {
        if (h != kept && atomic_load_explicit(&h->alive, memory_order_relaxed)) {
            h->thread_id = HH_THREAD_VANISHED; /* never an orphan of a new thread */
        }
    }
}

void _hh_heap_leave(void) {
    hh_heap *heap = _hh_heap;
    if (!heap->alive) return;
    /* The key's destructor must not leave it again at the thread's exit. */
    if (atomic_load_explicit(&thread_key_ready, memory_order_acquire)) {
        pthread_setspecific(thread_key, NULL);
    }
    thread_exit(heap);
}

void _hh_heap_stats_sum(hh_heap_stats *sum, uint64_t *threads) {
    memset(sum, 0, sizeof *sum);
    _hh_lock();
    for (hh_heap *h = all_heaps; h != NULL; h = h->next_all) {
        _hh_count(&sum->allocs, atomic_load_explicit(&h->stats.allocs, memory_order_relaxed));
        _hh_count(&sum->remote_frees,
                  atomic_load_explicit(&h->stats.remote_frees, memory_order_relaxed));
        _hh_count(&sum->reallocs, atomic_load_explicit(&h->stats.reallocs, memory_order_relaxed));
        _hh_count(&sum->mremap_moves,
                  atomic_load_explicit(&h->stats.mremap_moves, memory_order_relaxed));
        _hh_count(&sum->mremap_in_place,
                  atomic_load_explicit(&h->stats.mremap_in_place, memory_order_relaxed));
        _hh_count(&sum->growth_allocs,
                  atomic_load_explicit(&h->stats.growth_allocs, memory_order_relaxed));
        _hh_count(&sum->growth_frees,
                  atomic_load_explicit(&h->stats.growth_frees, memory_order_relaxed));
        _hh_count(&sum->lent, atomic_load_explicit(&h->stats.lent, memory_order_relaxed));
    }
    _hh_unlock();
    *threads = atomic_load_explicit(&threads_seen, memory_order_relaxed);
}

